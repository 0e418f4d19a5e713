//! Command patterns: `git push * --force* * main`, compiled once and matched against invocations.

use crate::lazy::{LazyGlob, Separator};
use nightwatch_core::{Arg, Invocation};

/// One `command:` pattern as compiled.
#[derive(Clone, Debug)]
pub(crate) struct CommandPattern {
    name: NameMatcher,
    flags: Vec<RequiredFlag>,
    positionals: Vec<PositionalToken>,
    /// The pattern ended with `$`: no positional may follow the last token.
    anchored: bool,
}

#[derive(Clone, Debug)]
enum NameMatcher {
    /// `argv[0]` equals this exactly; such patterns are indexed by name.
    Literal(String),
    /// A glob over `argv[0]`.
    Glob(Box<WordGlob>),
    /// The first token contained `/`: a glob over the path the command was named by.
    Path(LazyGlob),
}

/// Text matched either literally (the fast, common case) or by a glob.
#[derive(Clone, Debug)]
enum TextMatcher {
    Literal(String),
    Glob(Box<WordGlob>),
}

impl TextMatcher {
    fn compile(text: &str) -> Result<TextMatcher, String> {
        match literal_text(text) {
            Some(literal) => Ok(TextMatcher::Literal(literal)),
            None => Ok(TextMatcher::Glob(Box::new(word_glob(text)?))),
        }
    }

    fn is_match(&self, text: &str) -> bool {
        match self {
            TextMatcher::Literal(literal) => literal == text,
            TextMatcher::Glob(glob) => glob.is_match(text),
        }
    }
}

#[derive(Clone, Debug)]
enum PositionalToken {
    /// Exactly one positional that matches.
    One(TextMatcher),
    /// `*` alone: any run of zero or more positionals.
    AnyRun,
}

/// A flag the invocation must carry (anywhere among its arguments).
#[derive(Clone, Debug)]
struct RequiredFlag {
    names: FlagNames,
    /// `--output=*.txt`: the flag's value must match.
    value: Option<TextMatcher>,
}

#[derive(Clone, Debug)]
enum FlagNames {
    /// One flag, by canonical name or glob. `also` is the canonical form of a glob's literal
    /// prefix when normalisation renames it (`--force*` also matches `-f` when `--force` is
    /// folded to `-f`), since a glob itself cannot be normalised.
    One {
        name: TextMatcher,
        also: Option<String>,
    },
    /// `-rf`: either one flag of exactly that name (the analyser did not split it, as for
    /// `find -delete`) or every letter as its own flag.
    Combined { whole: String, letters: Vec<String> },
}

impl CommandPattern {
    /// Compiles a pattern written as in the policy file.
    pub(crate) fn compile(text: &str) -> Result<CommandPattern, String> {
        let tokens = split_pattern(text)?;
        let mut tokens = tokens.into_iter();
        let Some(first) = tokens.next() else {
            return Err("empty command pattern".to_owned());
        };
        if first.text.is_empty() {
            return Err(format!(
                "command pattern {text:?} has an empty command name"
            ));
        }
        let (name, program) = compile_name(&first.text)?;

        let rest: Vec<PatternToken> = tokens.collect();
        let mut flags = Vec::new();
        let mut positionals = Vec::new();
        let mut anchored = false;
        for (index, token) in rest.iter().enumerate() {
            let is_last = index + 1 == rest.len();
            if !token.quoted && token.text == "$" {
                if !is_last {
                    return Err(format!(
                        "in command pattern {text:?}, `$` anchors the end and must be the last token"
                    ));
                }
                anchored = true;
            } else if !token.quoted && token.text == "*" {
                positionals.push(PositionalToken::AnyRun);
            } else if !token.quoted && is_flag_token(&token.text) {
                flags.push(compile_flag(&program, &token.text)?);
            } else {
                positionals.push(PositionalToken::One(TextMatcher::compile(&token.text)?));
            }
        }
        Ok(CommandPattern {
            name,
            flags,
            positionals,
            anchored,
        })
    }

    /// The command name this pattern can only match, when it names one literally: the key
    /// under which the policy indexes it.
    pub(crate) fn literal_name(&self) -> Option<&str> {
        match &self.name {
            NameMatcher::Literal(name) => Some(name),
            NameMatcher::Glob(_) | NameMatcher::Path(_) => None,
        }
    }

    /// Whether the invocation matches. `positionals` are `invocation.positionals()`, collected
    /// once per invocation by the caller.
    pub(crate) fn is_match(&self, invocation: &Invocation, positionals: &[&str]) -> bool {
        let name_matches = match &self.name {
            NameMatcher::Literal(name) => invocation.name() == name,
            NameMatcher::Glob(glob) => glob.is_match(invocation.name()),
            NameMatcher::Path(glob) => invocation.path.as_deref().is_some_and(|p| glob.is_match(p)),
        };
        name_matches
            && self
                .flags
                .iter()
                .all(|flag| flag.is_present(&invocation.args))
            && positionals_match(&self.positionals, positionals, self.anchored)
    }
}

impl RequiredFlag {
    fn is_present(&self, args: &[Arg]) -> bool {
        match &self.names {
            FlagNames::One { name, also } => has_flag(args, self.value.as_ref(), |flag| {
                name.is_match(flag) || also.as_deref() == Some(flag)
            }),
            FlagNames::Combined { whole, letters } => {
                has_flag(args, self.value.as_ref(), |flag| flag == whole)
                    || letters.iter().enumerate().all(|(index, letter)| {
                        // A value written on a combined token belongs to its last letter.
                        let value = if index + 1 == letters.len() {
                            self.value.as_ref()
                        } else {
                            None
                        };
                        has_flag(args, value, |flag| flag == letter)
                    })
            }
        }
    }
}

fn has_flag(
    args: &[Arg],
    value: Option<&TextMatcher>,
    name_matches: impl Fn(&str) -> bool,
) -> bool {
    args.iter().any(|arg| match arg {
        Arg::Flag { name, value: given } => {
            name_matches(name)
                && match value {
                    None => true,
                    Some(wanted) => given.as_deref().is_some_and(|v| wanted.is_match(v)),
                }
        }
        Arg::Positional(_) => false,
    })
}

/// Wildcard matching over a sequence: `AnyRun` is a `*` over whole positionals. Without an
/// anchor the pattern only needs to match a prefix. Greedy with one backtrack point, so linear
/// in practice and never recursive.
fn positionals_match(pattern: &[PositionalToken], items: &[&str], anchored: bool) -> bool {
    let mut p = 0;
    let mut i = 0;
    // Where the last AnyRun was, and how many items it has swallowed so far.
    let mut backtrack: Option<(usize, usize)> = None;
    loop {
        if p == pattern.len() && (!anchored || i == items.len()) {
            return true;
        }
        match pattern.get(p) {
            Some(PositionalToken::AnyRun) => {
                backtrack = Some((p, i));
                p += 1;
                continue;
            }
            Some(PositionalToken::One(matcher)) => {
                if let Some(item) = items.get(i)
                    && matcher.is_match(item)
                {
                    p += 1;
                    i += 1;
                    continue;
                }
            }
            None => {}
        }
        match backtrack {
            Some((star, start)) if start < items.len() => {
                backtrack = Some((star, start + 1));
                p = star + 1;
                i = start + 1;
            }
            _ => return false,
        }
    }
}

fn compile_name(text: &str) -> Result<(NameMatcher, String), String> {
    if text.contains('/') {
        let program = text.rsplit('/').next().unwrap_or(text).to_owned();
        Ok((NameMatcher::Path(path_glob(text)?), program))
    } else {
        match literal_text(text) {
            Some(literal) => Ok((NameMatcher::Literal(literal.clone()), literal)),
            None => Ok((
                NameMatcher::Glob(Box::new(word_glob(text)?)),
                text.to_owned(),
            )),
        }
    }
}

fn is_flag_token(text: &str) -> bool {
    text.len() > 1 && text.starts_with('-') && text != "--"
}

fn compile_flag(program: &str, text: &str) -> Result<RequiredFlag, String> {
    let (name, value) = match text.split_once('=') {
        Some((name, value)) => (name, Some(TextMatcher::compile(value)?)),
        None => (text, None),
    };
    if name.len() < 2 || name == "--" {
        return Err(format!("flag {text:?} has no name"));
    }
    let normalise = |flag: &str| nightwatch_core::normalise_flag(program, flag).into_owned();
    let names = if has_glob_syntax(name) {
        let prefix_end = name.find(is_glob_char).unwrap_or(name.len());
        let prefix = &name[..prefix_end];
        let also = if prefix.len() > 1 && prefix != "--" {
            let canonical = normalise(prefix);
            (canonical != prefix).then_some(canonical)
        } else {
            None
        };
        FlagNames::One {
            name: TextMatcher::Glob(Box::new(word_glob(name)?)),
            also,
        }
    } else if !name.starts_with("--") && name.len() > 2 {
        let letters = name[1..]
            .chars()
            .map(|letter| normalise(&format!("-{letter}")))
            .collect();
        FlagNames::Combined {
            whole: normalise(name),
            letters,
        }
    } else {
        FlagNames::One {
            name: TextMatcher::Literal(normalise(name)),
            also: None,
        }
    };
    Ok(RequiredFlag { names, value })
}

fn is_glob_char(c: char) -> bool {
    matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\')
}

fn has_glob_syntax(text: &str) -> bool {
    text.contains(is_glob_char)
}

/// The text a glob matches when it matches only one text: no glob syntax, or only escaped
/// glob characters (`\[` is the command `[`). Such tokens are compared, not run as globs.
fn literal_text(text: &str) -> Option<String> {
    let mut literal = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => literal.push(chars.next()?),
            c if is_glob_char(c) => return None,
            c => literal.push(c),
        }
    }
    Some(literal)
}

/// A glob over one word: `*` crosses `/`, since words are not paths (`*:main` must match
/// `HEAD:refs/heads/main`).
pub(crate) type WordGlob = LazyGlob;

fn word_glob(text: &str) -> Result<WordGlob, String> {
    LazyGlob::new(text, Separator::Crossed).map_err(|kind| format!("bad glob {text:?}: {kind}"))
}

fn path_glob(text: &str) -> Result<LazyGlob, String> {
    LazyGlob::new(text, Separator::Respected).map_err(|kind| format!("bad glob {text:?}: {kind}"))
}

struct PatternToken {
    text: String,
    /// The token began with a quote: it is a positional glob, never a flag, `*` run or `$`.
    quoted: bool,
}

/// Splits on whitespace; `'...'` and `"..."` group a token (`-c='*DROP DATABASE*'`).
/// Backslashes are kept for the glob to read as escapes, except `\"` inside double quotes.
fn split_pattern(text: &str) -> Result<Vec<PatternToken>, String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut started = false;
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                if !started {
                    quoted = true;
                }
                started = true;
                let mut closed = false;
                while let Some(inner) = chars.next() {
                    if inner == c {
                        closed = true;
                        break;
                    }
                    if c == '"' && inner == '\\' && chars.peek() == Some(&'"') {
                        chars.next();
                        current.push('"');
                        continue;
                    }
                    current.push(inner);
                }
                if !closed {
                    return Err(format!(
                        "command pattern {text:?} has an unterminated quote"
                    ));
                }
            }
            c if c.is_whitespace() => {
                if started {
                    tokens.push(PatternToken {
                        text: std::mem::take(&mut current),
                        quoted,
                    });
                    started = false;
                    quoted = false;
                }
            }
            c => {
                started = true;
                current.push(c);
            }
        }
    }
    if started {
        tokens.push(PatternToken {
            text: current,
            quoted,
        });
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag(name: &str) -> Arg {
        match name.split_once('=') {
            Some((name, value)) => Arg::Flag {
                name: name.into(),
                value: Some(value.into()),
            },
            None => Arg::Flag {
                name: name.into(),
                value: None,
            },
        }
    }

    /// Builds an invocation the way the analyser would: words starting with `-` are flags
    /// (already split and normalised by the test's author), `FLAG=VALUE` carries a value, and
    /// a `path:` prefix on the first word sets the path.
    fn invocation(words: &[&str]) -> Invocation {
        let mut invocation = Invocation::default();
        for (index, word) in words.iter().enumerate() {
            if index == 0 {
                match word.strip_prefix("path:") {
                    Some(path) => {
                        invocation.path = Some(path.into());
                        invocation
                            .argv
                            .push(path.rsplit('/').next().unwrap_or(path).into());
                    }
                    None => invocation.argv.push((*word).into()),
                }
                continue;
            }
            invocation.argv.push((*word).into());
            if word.len() > 1 && word.starts_with('-') {
                invocation.args.push(flag(word));
            } else {
                invocation.args.push(Arg::Positional((*word).into()));
            }
        }
        invocation
    }

    fn check(pattern: &str, words: &[&str], expect: bool) {
        let compiled = match CommandPattern::compile(pattern) {
            Ok(compiled) => compiled,
            Err(err) => panic!("pattern {pattern:?} did not compile: {err}"),
        };
        let invocation = invocation(words);
        let positionals: Vec<&str> = invocation.positionals().collect();
        assert_eq!(
            compiled.is_match(&invocation, &positionals),
            expect,
            "pattern {pattern:?} against {words:?}"
        );
    }

    #[test]
    fn command_patterns_match_as_documented() {
        let table: &[(&str, &[&str], bool)] = &[
            // The command name.
            ("ls", &["ls"], true),
            ("ls", &["ls", "-l", "-a", "/tmp"], true),
            ("ls", &["lsof"], false),
            ("mkfs*", &["mkfs.ext4", "/dev/sda1"], true),
            ("mkfs*", &["mke2fs"], false),
            ("/usr/bin/*", &["path:/usr/bin/rm", "x"], true),
            ("/usr/bin/*", &["rm", "x"], false),
            ("/usr/bin/*", &["path:/usr/local/bin/rm"], false),
            // Positionals are a prefix unless anchored.
            ("git status", &["git", "status", "-s"], true),
            ("git status", &["git", "status", "."], true),
            ("git status", &["git", "log"], false),
            ("git status", &["git"], false),
            ("git branch $", &["git", "branch", "-a"], true),
            ("git branch $", &["git", "branch", "new-feature"], false),
            ("git tag $", &["git", "tag"], true),
            // `*` alone is any run of positionals, including none.
            ("kill * 1", &["kill", "-9", "1"], true),
            ("kill * 1", &["kill", "5", "1"], true),
            ("kill * 1", &["kill", "1"], true),
            ("kill * 1", &["kill", "12"], false),
            ("kill * 1", &["kill", "1", "5"], true),
            ("kill * 1 $", &["kill", "1", "5"], false),
            ("a * b * c $", &["a", "x", "b", "y", "b", "c"], true),
            ("a * b * c $", &["a", "x", "b", "y", "c", "z"], false),
            // Required flags, anywhere, combined short flags meaning each.
            ("rm -r /", &["rm", "-r", "-f", "/"], true),
            ("rm -r /", &["rm", "-f", "-r", "/", "tmp"], true),
            ("rm -rf /", &["rm", "-r", "-f", "/"], true),
            ("rm -rf /", &["rm", "-r", "/"], false),
            ("rm -r /", &["rm", "-f", "/"], false),
            ("rm -r /", &["rm", "-r", "/tmp"], false),
            ("find -delete", &["find", ".", "-delete"], true),
            ("find -delete", &["find", ".", "-name", "x"], false),
            // Flag globs and values.
            (
                "git push * --force* * main",
                &["git", "push", "--force", "origin", "main"],
                true,
            ),
            (
                "git push * --force* * main",
                &["git", "push", "--force-with-lease", "origin", "main"],
                true,
            ),
            (
                "git push * --force* * main",
                &["git", "push", "origin", "main"],
                false,
            ),
            (
                "git push * --force* * main",
                &["git", "push", "--force", "origin", "dev"],
                false,
            ),
            (
                "report --output=*.txt",
                &["report", "--output=out.txt"],
                true,
            ),
            (
                "report --output=*.txt",
                &["report", "--output=out.csv"],
                false,
            ),
            ("report --output=*.txt", &["report", "--output"], false),
            // Normalised like the analyser: sort's --output is -o.
            ("sort --output=*.txt", &["sort", "-o=out.txt"], true),
            (
                "psql -c='*[Dd][Rr][Oo][Pp] *[Dd][Aa][Tt][Aa][Bb][Aa][Ss][Ee]*'",
                &["psql", "-c=drop   database prod"],
                true,
            ),
            (
                "psql -c='*[Dd][Rr][Oo][Pp] *[Dd][Aa][Tt][Aa][Bb][Aa][Ss][Ee]*'",
                &["psql", "-c=select 1"],
                false,
            ),
            // Quoting: a quoted token is always one positional.
            ("kill * '-1'", &["kill", "-9", "--", "-1"], false),
            ("echo '*'", &["echo"], false),
            ("echo '*'", &["echo", ""], true),
            ("echo '$'", &["echo", "$"], true),
            ("echo \"a b\"", &["echo", "a b"], true),
            // Positional globs cross `/`: they are words, not paths.
            (
                "git push * *:main",
                &["git", "push", "origin", "HEAD:main"],
                true,
            ),
            (
                "git push * {+main,*[:/+]main}",
                &["git", "push", "o", "+refs/heads/main"],
                true,
            ),
            (
                "git push * {+main,*[:/+]main}",
                &["git", "push", "o", "main:feature"],
                false,
            ),
            ("systemctl {status,show}", &["systemctl", "show", "x"], true),
            (
                "systemctl {status,show}",
                &["systemctl", "stop", "x"],
                false,
            ),
            ("\\[", &["[", "-f", "x", "]"], true),
            ("echo \\*", &["echo", "*"], true),
            ("echo \\*", &["echo", "x"], false),
        ];
        for (pattern, words, expect) in table {
            check(pattern, words, *expect);
        }
    }

    #[test]
    fn positional_quoted_dash_matches_a_positional_dash_word() {
        let mut invocation = invocation(&["kill", "-9"]);
        invocation.args.push(Arg::Positional("-1".into()));
        let positionals: Vec<&str> = invocation.positionals().collect();
        let pattern = CommandPattern::compile("kill * '-1'").unwrap_or_else(|e| panic!("{e}"));
        assert!(pattern.is_match(&invocation, &positionals));
    }

    #[test]
    fn bad_patterns_are_refused_with_a_reason() {
        let table: &[(&str, &str)] = &[
            ("", "empty command pattern"),
            ("   ", "empty command pattern"),
            ("ls $ -l", "must be the last token"),
            ("echo 'unterminated", "unterminated quote"),
            ("ls [abc", "bad glob"),
            ("ls --x=[", "bad glob"),
            ("'' x", "empty command name"),
        ];
        for (pattern, expect) in table {
            match CommandPattern::compile(pattern) {
                Ok(_) => panic!("pattern {pattern:?} should not compile"),
                Err(err) => assert!(err.contains(expect), "{pattern:?}: {err}"),
            }
        }
    }

    #[test]
    fn literal_names_are_indexable_and_globs_are_not() {
        let literal = |p: &str| {
            CommandPattern::compile(p)
                .map(|c| c.literal_name().map(str::to_owned))
                .unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(literal("git push"), Some("git".to_owned()));
        assert_eq!(literal("mkfs*"), None);
        assert_eq!(literal("/sbin/reboot"), None);
        assert_eq!(literal("\\["), Some("[".to_owned()));
    }
}
