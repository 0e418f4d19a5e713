//! Words: from brush's raw word text to the fields a command would receive.
//!
//! A word is *literal* when its value is known from the text alone (quotes and escapes removed,
//! `$'...'` decoded, braces expanded). Anything needing runtime expansion (a parameter, a
//! substitution, an unquoted glob) keeps its source text and is marked non-literal. Command and
//! arithmetic substitutions found anywhere inside a word (in double quotes, in `${x:-...}`
//! defaults, in `$((...))`) are handed back as scripts so the walker judges them too.

use brush_parser::ParserOptions;
use brush_parser::word::{
    BraceExpressionMember, BraceExpressionOrText, ParameterExpr, WordPiece, WordPieceWithSource,
};

/// Most fields one word may brace-expand into before it is treated as hostile.
const MAX_BRACE_FIELDS: usize = 64;
/// Most `{` in one word handed to the brace-expansion grammar; more makes the word non-literal.
const MAX_BRACES: usize = 6;
/// Deepest nesting of expansions inside expansions that is followed.
const MAX_WORD_DEPTH: usize = 32;

/// One word as the command would receive it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Field {
    /// The value when literal, the source text otherwise.
    pub text: String,
    /// True when the value is known from the text.
    pub literal: bool,
    /// The variables whose values the word carries (`"$TOKEN"`, `${KEY:0:4}`), in order, each
    /// once; `*` when an indirect expansion (`${!X}`) may carry any. Not a length (`${#X}`),
    /// not quoted or escaped text, not positional or special parameters.
    pub names: Vec<String>,
    /// The word starts with a `~` that bash does not expand (`'~'`, `"~/x"`, `\~`): as a path
    /// it is a file named `~` here, not the home directory.
    pub quoted_tilde: bool,
}

impl Field {
    pub fn literal(text: impl Into<String>) -> Field {
        Field {
            text: text.into(),
            literal: true,
            names: Vec::new(),
            quoted_tilde: false,
        }
    }
}

/// A script found inside a word, to be analysed where the word is expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Substitution {
    pub script: String,
}

pub fn parser_options() -> ParserOptions {
    ParserOptions::default()
}

/// Resolves one raw word into fields, collecting the substitutions it contains.
pub fn resolve(raw: &str, found: &mut Vec<Substitution>) -> Vec<Field> {
    let options = parser_options();
    let expanded = expand_braces(raw, &options);
    match expanded {
        Some(raws) => raws
            .iter()
            .map(|raw| resolve_one(raw, &options, found))
            .collect(),
        None => {
            // Too many fields: still find what it would run, but the value is unknown.
            let mut field = resolve_one(raw, &options, found);
            field.literal = false;
            vec![field]
        }
    }
}

/// Finds substitutions in text that is expanded like the inside of double quotes (an expanding
/// here-document body). Returns whether the body is literal and the variables it expands.
pub fn substitutions_in_heredoc(body: &str, found: &mut Vec<Substitution>) -> (bool, Vec<String>) {
    match brush_parser::word::parse_heredoc(body, &parser_options()) {
        Ok(pieces) => {
            let mut value = Value::default();
            fold_pieces(&pieces, body, true, &mut value, found, 0);
            (value.literal, value.names)
        }
        Err(_) => {
            found_opaque_fallback(body, found);
            (false, vec!["*".to_owned()])
        }
    }
}

fn resolve_one(raw: &str, options: &ParserOptions, found: &mut Vec<Substitution>) -> Field {
    match brush_parser::word::parse(raw, options) {
        Ok(pieces) => {
            let mut value = Value::default();
            fold_pieces(&pieces, raw, false, &mut value, found, 0);
            Field {
                text: value.text,
                literal: value.literal,
                names: value.names,
                quoted_tilde: value.quoted_tilde,
            }
        }
        Err(_) => {
            found_opaque_fallback(raw, found);
            Field {
                text: raw.to_owned(),
                literal: false,
                names: names_unparsed(raw),
                quoted_tilde: false,
            }
        }
    }
}

/// When brush cannot parse a word, any `$(` or backtick in it still has to be judged: hand the
/// whole text over as a script so the walker parses (or fails to parse) it as one.
fn found_opaque_fallback(raw: &str, found: &mut Vec<Substitution>) {
    if raw.contains("$(") || raw.contains('`') {
        found.push(Substitution {
            script: raw.to_owned(),
        });
    }
}

#[derive(Default)]
struct Value {
    text: String,
    literal: bool,
    started: bool,
    names: Vec<String>,
    quoted_tilde: bool,
}

impl Value {
    /// Text bash takes as written; a leading `~` in it is not the home directory.
    fn push_quoted(&mut self, text: &str) {
        if self.text.is_empty() && text.starts_with('~') {
            self.quoted_tilde = true;
        }
        self.text.push_str(text);
    }

    fn name(&mut self, name: &str) {
        if !self.names.iter().any(|n| n == name) {
            self.names.push(name.to_owned());
        }
    }
}

/// A word brush cannot parse may still expand variables: assume any (fail safe) when it has a `$`.
fn names_unparsed(raw: &str) -> Vec<String> {
    if raw.contains('$') {
        vec!["*".to_owned()]
    } else {
        Vec::new()
    }
}

fn fold_pieces(
    pieces: &[WordPieceWithSource],
    source: &str,
    quoted: bool,
    value: &mut Value,
    found: &mut Vec<Substitution>,
    depth: usize,
) {
    if !value.started {
        value.literal = true;
        value.started = true;
    }
    if depth > MAX_WORD_DEPTH {
        value.literal = false;
        found_opaque_fallback(source, found);
        for name in names_unparsed(source) {
            value.name(&name);
        }
        return;
    }
    for piece in pieces {
        match &piece.piece {
            WordPiece::Text(text) => {
                if !quoted && has_glob(text) {
                    value.literal = false;
                }
                if quoted {
                    value.push_quoted(text);
                } else {
                    value.text.push_str(text);
                }
            }
            WordPiece::SingleQuotedText(text) => value.push_quoted(text),
            WordPiece::AnsiCQuotedText(text) => value.push_quoted(&decode_ansi_c(text)),
            WordPiece::EscapeSequence(text) => value.push_quoted(text.get(1..).unwrap_or("")),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                fold_pieces(inner, source, true, value, found, depth + 1)
            }
            WordPiece::TildeExpansion(tilde) => value.text.push_str(&tilde_text(tilde)),
            WordPiece::ParameterExpansion(expr) => {
                value.literal = false;
                value.text.push_str(source_of(piece, source));
                expanded_names(expr, value);
                if let Some(index) = parameter_index(expr) {
                    scan_nested(index, found, value, depth + 1);
                }
                for inner in parameter_words(expr) {
                    scan_nested(inner, found, value, depth + 1);
                }
            }
            WordPiece::CommandSubstitution(script) => {
                value.literal = false;
                value.text.push_str(source_of(piece, source));
                found.push(Substitution {
                    script: script.clone(),
                });
            }
            WordPiece::BackquotedCommandSubstitution(script) => {
                value.literal = false;
                value.text.push_str(source_of(piece, source));
                found.push(Substitution {
                    script: unescape_backquoted(script),
                });
            }
            WordPiece::ArithmeticExpression(expr) => {
                value.literal = false;
                value.text.push_str(source_of(piece, source));
                scan_nested(&expr.value, found, value, depth + 1);
            }
        }
    }
}

/// The script a backquoted substitution runs. Inside backquotes a backslash escapes only `$`,
/// `` ` `` and `\`; the parser undoes `` \` `` but leaves `\\` and `\$`, so a line quoted for a
/// nested `bash -c` inside backquotes would otherwise be judged as a different script
/// (`` echo `bash -c '\\''...` `` runs what the analysis must see).
fn unescape_backquoted(script: &str) -> String {
    let mut out = String::with_capacity(script.len());
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && matches!(next, '\\' | '$')
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// The source text of an expansion, kept where its value is unknown (`$HOME`, `$(id -u)`).
fn source_of<'a>(piece: &WordPieceWithSource, source: &'a str) -> &'a str {
    source
        .get(piece.start_index..piece.end_index)
        .unwrap_or("$?")
}

/// Finds substitutions and expanded variables inside text that is itself expanded (a
/// `${x:-...}` default, an arithmetic expression); the variables are added to `outer`.
fn scan_nested(text: &str, found: &mut Vec<Substitution>, outer: &mut Value, depth: usize) {
    if !text.contains('$') && !text.contains('`') {
        return;
    }
    match brush_parser::word::parse(text, &parser_options()) {
        Ok(pieces) => {
            let mut value = Value::default();
            fold_pieces(&pieces, text, false, &mut value, found, depth);
            for name in &value.names {
                outer.name(name);
            }
        }
        Err(_) => {
            found_opaque_fallback(text, found);
            for name in names_unparsed(text) {
                outer.name(&name);
            }
        }
    }
}

/// The variable whose value an expansion yields: `$X`, `${X:-d}`, `${X%.*}`, `${X:0:4}`,
/// `${X/a/b}`, `${X[0]}`, and `*` besides for `${!X}`, whose value names another variable.
/// A length (`${#X}`), an alternative (`${X:+set}`) and the names listed by `${!PREFIX*}` or
/// `${!A[@]}` carry no value.
fn expanded_names(expr: &ParameterExpr, value: &mut Value) {
    use brush_parser::word::Parameter;
    let (parameter, indirect) = match expr {
        ParameterExpr::Parameter {
            parameter,
            indirect,
        }
        | ParameterExpr::UseDefaultValues {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::AssignDefaultValues {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::RemoveSmallestSuffixPattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::RemoveLargestSuffixPattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::RemoveSmallestPrefixPattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::RemoveLargestPrefixPattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::Substring {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::Transform {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::UppercaseFirstChar {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::UppercasePattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::LowercaseFirstChar {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::LowercasePattern {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::ReplaceSubstring {
            parameter,
            indirect,
            ..
        } => (parameter, *indirect),
        // `${X:+word}` yields `word`, never X's value.
        ParameterExpr::ParameterLength { .. }
        | ParameterExpr::UseAlternativeValue { .. }
        | ParameterExpr::VariableNames { .. }
        | ParameterExpr::MemberKeys { .. } => return,
    };
    let name = match parameter {
        Parameter::Named(name)
        | Parameter::NamedWithIndex { name, .. }
        | Parameter::NamedWithAllIndices { name, .. } => Some(name.as_str()),
        Parameter::Positional(_) | Parameter::Special(_) => None,
    };
    if let Some(name) = name {
        value.name(name);
    }
    if indirect {
        value.name("*");
    }
}

/// The subscript of `${name[index]}` in any expansion form: it is expanded like arithmetic.
fn parameter_index(expr: &ParameterExpr) -> Option<&str> {
    use brush_parser::word::Parameter;
    let parameter = match expr {
        ParameterExpr::Parameter { parameter, .. }
        | ParameterExpr::UseDefaultValues { parameter, .. }
        | ParameterExpr::AssignDefaultValues { parameter, .. }
        | ParameterExpr::IndicateErrorIfNullOrUnset { parameter, .. }
        | ParameterExpr::UseAlternativeValue { parameter, .. }
        | ParameterExpr::ParameterLength { parameter, .. }
        | ParameterExpr::RemoveSmallestSuffixPattern { parameter, .. }
        | ParameterExpr::RemoveLargestSuffixPattern { parameter, .. }
        | ParameterExpr::RemoveSmallestPrefixPattern { parameter, .. }
        | ParameterExpr::RemoveLargestPrefixPattern { parameter, .. }
        | ParameterExpr::Substring { parameter, .. }
        | ParameterExpr::Transform { parameter, .. }
        | ParameterExpr::UppercaseFirstChar { parameter, .. }
        | ParameterExpr::UppercasePattern { parameter, .. }
        | ParameterExpr::LowercaseFirstChar { parameter, .. }
        | ParameterExpr::LowercasePattern { parameter, .. }
        | ParameterExpr::ReplaceSubstring { parameter, .. } => parameter,
        ParameterExpr::VariableNames { .. } | ParameterExpr::MemberKeys { .. } => return None,
    };
    match parameter {
        Parameter::NamedWithIndex { index, .. } => Some(index),
        _ => None,
    }
}

fn parameter_words(expr: &ParameterExpr) -> Vec<&str> {
    let mut words: Vec<&str> = Vec::new();
    match expr {
        ParameterExpr::UseDefaultValues { default_value, .. }
        | ParameterExpr::AssignDefaultValues { default_value, .. } => {
            words.extend(default_value.as_deref())
        }
        ParameterExpr::IndicateErrorIfNullOrUnset { error_message, .. } => {
            words.extend(error_message.as_deref())
        }
        ParameterExpr::UseAlternativeValue {
            alternative_value, ..
        } => words.extend(alternative_value.as_deref()),
        ParameterExpr::RemoveSmallestSuffixPattern { pattern, .. }
        | ParameterExpr::RemoveLargestSuffixPattern { pattern, .. }
        | ParameterExpr::RemoveSmallestPrefixPattern { pattern, .. }
        | ParameterExpr::RemoveLargestPrefixPattern { pattern, .. }
        | ParameterExpr::UppercaseFirstChar { pattern, .. }
        | ParameterExpr::UppercasePattern { pattern, .. }
        | ParameterExpr::LowercaseFirstChar { pattern, .. }
        | ParameterExpr::LowercasePattern { pattern, .. } => words.extend(pattern.as_deref()),
        ParameterExpr::ReplaceSubstring {
            pattern,
            replacement,
            ..
        } => {
            words.push(pattern);
            words.extend(replacement.as_deref());
        }
        ParameterExpr::Substring { offset, length, .. } => {
            words.push(&offset.value);
            words.extend(length.as_ref().map(|l| l.value.as_str()));
        }
        ParameterExpr::Parameter { .. }
        | ParameterExpr::ParameterLength { .. }
        | ParameterExpr::Transform { .. }
        | ParameterExpr::VariableNames { .. }
        | ParameterExpr::MemberKeys { .. } => {}
    }
    words
}

fn tilde_text(tilde: &brush_parser::word::TildeExpr) -> String {
    use brush_parser::word::TildeExpr;
    match tilde {
        TildeExpr::Home => "~".to_owned(),
        TildeExpr::UserHome(user) => format!("~{user}"),
        TildeExpr::WorkingDir => "~+".to_owned(),
        TildeExpr::OldWorkingDir => "~-".to_owned(),
        TildeExpr::NthDirFromTopOfDirStack { n, plus_used } => {
            format!("~{}{n}", if *plus_used { "+" } else { "" })
        }
        TildeExpr::NthDirFromBottomOfDirStack { n } => format!("~-{n}"),
    }
}

/// Unquoted `*` and `?` always glob; `[` only when a `]` closes it (`[ -f x ]` is a command).
fn has_glob(text: &str) -> bool {
    text.contains(['*', '?'])
        || text
            .find('[')
            .is_some_and(|open| text[open + 1..].contains(']'))
}

/// Brace-expands a raw word. `None` when it would give more than [`MAX_BRACE_FIELDS`] fields.
fn expand_braces(raw: &str, options: &ParserOptions) -> Option<Vec<String>> {
    if !raw.contains('{') || !(raw.contains(',') || raw.contains("..")) {
        return Some(vec![raw.to_owned()]);
    }
    // brush-parser's brace grammar backtracks in time exponential in the number of `{`
    // (14 take 0.1 s, 20 take 37 s). Real words have one or two.
    if raw.bytes().filter(|&b| b == b'{').count() > MAX_BRACES {
        return None;
    }
    match brush_parser::word::parse_brace_expansions(raw, options) {
        Ok(Some(parts)) => expand_sequence(&parts, 0),
        _ => Some(vec![raw.to_owned()]),
    }
}

fn expand_sequence(parts: &[BraceExpressionOrText], depth: usize) -> Option<Vec<String>> {
    if depth > MAX_WORD_DEPTH {
        return None;
    }
    let mut results = vec![String::new()];
    for part in parts {
        let alternatives: Vec<String> = match part {
            BraceExpressionOrText::Text(text) => vec![text.clone()],
            BraceExpressionOrText::Expr(members) => {
                let mut alternatives = Vec::new();
                for member in members {
                    alternatives.extend(expand_member(member, depth)?);
                    if alternatives.len() > MAX_BRACE_FIELDS {
                        return None;
                    }
                }
                alternatives
            }
        };
        if results.len().saturating_mul(alternatives.len()) > MAX_BRACE_FIELDS {
            return None;
        }
        results = results
            .iter()
            .flat_map(|prefix| alternatives.iter().map(move |alt| format!("{prefix}{alt}")))
            .collect();
    }
    Some(results)
}

fn expand_member(member: &BraceExpressionMember, depth: usize) -> Option<Vec<String>> {
    match member {
        BraceExpressionMember::Child(parts) => expand_sequence(parts, depth + 1),
        BraceExpressionMember::NumberSequence {
            start,
            end,
            increment,
        } => {
            let step = increment.unsigned_abs().max(1);
            let count = start.abs_diff(*end) / step + 1;
            if count > MAX_BRACE_FIELDS as u64 {
                return None;
            }
            let mut values = Vec::new();
            let mut current = *start;
            for _ in 0..count {
                values.push(current.to_string());
                current = if start <= end {
                    current.saturating_add(step as i64)
                } else {
                    current.saturating_sub(step as i64)
                };
            }
            Some(values)
        }
        BraceExpressionMember::CharSequence {
            start,
            end,
            increment,
        } => {
            let (low, high) = (*start as u32, *end as u32);
            let step = increment.unsigned_abs().max(1);
            let count = u64::from(low.abs_diff(high)) / step + 1;
            if count > MAX_BRACE_FIELDS as u64 {
                return None;
            }
            let values = (0..count)
                .filter_map(|i| {
                    let offset = u32::try_from(i * step).ok()?;
                    let code = if low <= high {
                        low.checked_add(offset)?
                    } else {
                        low.checked_sub(offset)?
                    };
                    char::from_u32(code).map(String::from)
                })
                .collect();
            Some(values)
        }
    }
}

/// Decodes the inside of `$'...'` the way bash does.
pub fn decode_ansi_c(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(escape) = chars.next() else {
            out.push('\\');
            break;
        };
        match escape {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(escape),
            'c' => {
                if let Some(control) = chars.next() {
                    out.push(char::from((control as u32 & 0x1f) as u8));
                }
            }
            '0'..='7' => {
                let mut code = escape.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(digit) => {
                            code = code * 8 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(code & 0xff).unwrap_or('\u{fffd}'));
            }
            'x' | 'u' | 'U' => {
                let max_digits = match escape {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut code: u32 = 0;
                let mut digits = 0;
                while digits < max_digits {
                    match chars.peek().and_then(|d| d.to_digit(16)) {
                        Some(digit) => {
                            code = code.wrapping_mul(16).wrapping_add(digit);
                            chars.next();
                            digits += 1;
                        }
                        None => break,
                    }
                }
                if digits == 0 {
                    out.push('\\');
                    out.push(escape);
                } else {
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(raw: &str) -> (Vec<Field>, Vec<String>) {
        let mut found = Vec::new();
        let fields = resolve(raw, &mut found);
        (fields, found.into_iter().map(|s| s.script).collect())
    }

    #[test]
    fn quoting_and_escapes_are_removed() {
        for raw in [
            r#""rm""#,
            "r''m",
            r"\rm",
            r"$'\x72\x6d'",
            r"$'\162\155'",
            "'r'm",
        ] {
            assert_eq!(fields(raw).0, vec![Field::literal("rm")], "{raw}");
        }
    }

    #[test]
    fn expansions_are_not_literal_and_substitutions_are_found() {
        let (f, scripts) = fields(r#""a $(rm x) ${y:-$(reboot)}""#);
        assert!(!f[0].literal);
        assert_eq!(scripts, vec!["rm x", "reboot"]);
        let (_, scripts) = fields("$((1 + $(id -u)))");
        assert_eq!(scripts, vec!["id -u"]);
        let (f, _) = fields("*.log");
        assert!(!f[0].literal);
        let (f, _) = fields("'*.log'");
        assert!(f[0].literal);
    }

    #[test]
    fn braces_expand_into_fields() {
        let (f, _) = fields("{rm,-rf,/}");
        let texts: Vec<_> = f.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, vec!["rm", "-rf", "/"]);
        let (f, _) = fields("{1..3}");
        assert_eq!(f.len(), 3);
        let (f, _) = fields("{1..100000}");
        assert_eq!(f.len(), 1);
        assert!(!f[0].literal);
    }
}
