//! APT's configuration syntax (apt.conf(5)), read the way APT reads it.
//!
//! ```text
//! // a comment; so is  # one  and  /* one */
//! APT::Periodic::Unattended-Upgrade "1";
//! Unattended-Upgrade {
//!     Automatic-Reboot "true";
//!     Origins-Pattern { "origin=Debian"; };   // list items: a value with no name
//! };
//! DPkg::Post-Invoke:: "run-this";             // `::` at the end appends to a list
//! #clear Unattended-Upgrade::Origins-Pattern;
//! ```
//!
//! Names are case-insensitive (APT compares them so) and kept lowercased here; a later
//! assignment replaces an earlier one. `#include` is noted, not followed (this parser reads
//! no file). A file APT would refuse is refused here with its line: APT then refuses to run
//! at all, so a caller cannot tell what would happen. What APT lets pass passes, read as
//! APT reads it: comments are dropped line by line, `//` and `#` before `/* */` (so
//! `/* a // b */` leaves a comment open); several quoted words make one value (`"a" "b"`
//! is `a b`); blocks still open at the end of a file are closed by it; a `}` that closes
//! nothing is passed over. `tests/apt_oracle.rs` holds this parser to `apt-config dump`.
//! Two differences, both on hostile input only: words longer than APT's 1 KiB buffer are
//! not cut, and blocks nested deeper than [`MAX_DEPTH`] are refused (APT has no limit).
//! No recursion, so no input makes it panic or grow without bound.

use std::collections::BTreeMap;

/// Blocks nest at most this deep: keys are rebuilt per level, so unbounded nesting would
/// cost quadratic memory on hostile input. Real files nest three or four levels.
pub const MAX_DEPTH: usize = 64;

/// Why a file does not read, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct SyntaxError {
    pub line: usize,
    pub message: String,
}

fn refuse(line: usize, message: impl Into<String>) -> SyntaxError {
    SyntaxError {
        line,
        message: message.into(),
    }
}

/// One statement of a file, names lowercased and joined with `::`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Statement {
    /// `Name "value";`
    Set { key: String, value: String },
    /// A list item: `"value";` inside a block, or `Name:: "value";`.
    Item { key: String, value: String },
    /// `#clear Name;`: the name and everything under it.
    Clear { key: String },
    /// `#include "file";` (not followed).
    Include { path: String },
}

/// C's `isspace`: what APT trims and splits words on.
fn c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// Whether `at` is inside quotes: an odd number of them before it on the line.
fn quoted_at(line: &str, at: usize) -> bool {
    !line[..at].matches('"').count().is_multiple_of(2)
}

/// Drops a `//` or `#` comment: the first one with an even number of quotes before it.
/// `#clear`, `#include` and `#x-apt-configure-index` are directives, not comments.
fn without_line_comment(mut line: &str) -> &str {
    let mut from = 0;
    while let Some(at) = line[from..].find("//").map(|p| p + from) {
        if !quoted_at(line, at) {
            line = &line[..at];
            break;
        }
        from = at + 1;
    }
    let mut from = 0;
    while let Some(at) = line[from..].find('#').map(|p| p + from) {
        let directive = ["clear", "include", "x-apt-configure-index"]
            .iter()
            .any(|d| line[at + 1..].starts_with(d));
        if !quoted_at(line, at) && !directive {
            line = &line[..at];
            break;
        }
        from = at + 1;
    }
    line
}

/// Drops `/* ... */` comments from a line; one left open swallows the lines up to its `*/`.
fn without_block_comments(mut line: &str, in_comment: &mut bool) -> String {
    let mut fragment = String::new();
    let mut from = 0;
    while let Some(at) = line[from..].find("/*").map(|p| p + from) {
        if quoted_at(line, at) {
            from = at + 2;
            continue;
        }
        fragment.push_str(&line[..at]);
        match line[at + 2..].find("*/") {
            Some(end) => {
                line = &line[at + 2 + end + 2..];
                from = 0;
            }
            None => {
                *in_comment = true;
                return fragment;
            }
        }
    }
    fragment.push_str(line);
    fragment
}

/// One word as APT's `ParseQuoteWord` reads it: up to unquoted whitespace, quotes (and
/// `[...]`) grouping, quotes removed, `%xx` decoded; and the text after it. `None` when
/// there is no word or a quote is not closed.
fn quote_word(text: &str) -> Option<(String, &str)> {
    let text = text.trim_start_matches(' ');
    if text.is_empty() {
        return None;
    }
    let bytes = text.as_bytes();
    let mut end = 0;
    while end < bytes.len() && !c_space(char::from(bytes[end])) {
        for (open, close) in [(b'"', b'"'), (b'[', b']')] {
            if bytes[end] == open {
                end += 1 + bytes[end + 1..].iter().position(|b| *b == close)?;
            }
        }
        end += 1;
    }
    let end = end.min(bytes.len());
    let mut word = Vec::new();
    let mut i = 0;
    while i < end {
        let hex = (bytes[i] == b'%' && i + 2 < end)
            .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok())
            .flatten()
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(b) => {
                word.push(b);
                i += 3;
            }
            None => {
                if bytes[i] != b'"' {
                    word.push(bytes[i]);
                }
                i += 1;
            }
        }
    }
    let rest = text[end..].trim_start_matches(c_space);
    Some((String::from_utf8_lossy(&word).into_owned(), rest))
}

/// A value as APT's `ParseCWord` reads one: quoted strings only, the whitespace between
/// them a single space (`"a"  "b"` is `a b`). `None` for anything else.
fn c_word(text: &str) -> Option<String> {
    let trimmed = text.trim_start_matches(' ');
    if trimmed.is_empty() || text.len() >= 1024 {
        return None;
    }
    let mut word = String::new();
    let mut chars = trimmed.chars().peekable();
    let mut previous: Option<char> = None;
    while let Some(c) = chars.next() {
        if c == '"' {
            loop {
                match chars.next() {
                    None => return None,
                    Some('"') => break,
                    Some(q) => word.push(q),
                }
            }
            previous = Some('"');
            continue;
        }
        if !c_space(c) {
            return None;
        }
        if !previous.is_some_and(c_space) {
            word.push(' ');
        }
        previous = Some(c);
    }
    Some(word)
}

/// The statements of one file, in order, read as APT's `ReadConfigFile` reads them: line
/// by line, comments dropped first, then everything up to each unquoted `{`, `;` or `}`
/// (across lines) is one statement.
pub fn parse(text: &str) -> Result<Vec<Statement>, SyntaxError> {
    let mut out = Vec::new();
    let mut reader = Reader::default();
    let mut pending = String::new();
    let mut in_comment = false;
    let mut line_no = 0;
    for raw in text.split('\n') {
        line_no += 1;
        let expanded = raw.replace('\t', "        ");
        let mut line = expanded.trim_matches(c_space);
        if in_comment {
            match line.find("*/") {
                Some(end) => {
                    line = &line[end + 2..];
                    in_comment = false;
                }
                None => continue,
            }
        }
        let fragment = without_block_comments(without_line_comment(line), &mut in_comment);
        let mut in_quote = false;
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if c == '"' {
                in_quote = !in_quote;
            }
            if in_quote || !matches!(c, '{' | ';' | '}') {
                continue;
            }
            let piece = fragment[start..i].trim_matches(c_space);
            if !pending.is_empty() && !piece.is_empty() {
                pending.push(' ');
            }
            pending.push_str(piece);
            start = i + c.len_utf8();
            if c == '{' && pending.is_empty() {
                return Err(refuse(line_no, "a block starts with no name"));
            }
            if !pending.is_empty() {
                reader.statement(&pending, c, line_no, &mut out)?;
                pending.clear();
            }
            if c == '}' {
                reader.leave();
            }
        }
        let rest = fragment[start..].trim_matches(c_space);
        if !rest.is_empty() && !pending.is_empty() {
            pending.push(' ');
        }
        pending.push_str(rest);
    }
    // Blocks still open at the end are closed by it, as in APT; a statement is not.
    if !pending.is_empty() {
        return Err(refuse(line_no, "the last statement has no ';'"));
    }
    Ok(out)
}

/// Where the reader is: the block's full name, and the ones it is inside.
#[derive(Default)]
struct Reader {
    parent: String,
    outer: Vec<String>,
}

impl Reader {
    fn leave(&mut self) {
        self.parent = self.outer.pop().unwrap_or_default();
    }

    /// One statement, ended by `term`: `Name value`, `Name` (before `{`), `value` (a list
    /// item), or a directive.
    fn statement(
        &mut self,
        text: &str,
        term: char,
        line: usize,
        out: &mut Vec<Statement>,
    ) -> Result<(), SyntaxError> {
        let (mut tag, rest) = quote_word(text).ok_or_else(|| refuse(line, "a malformed name"))?;
        let (word, rest) = match c_word(rest) {
            Some(word) => (Some(word), ""),
            None => match quote_word(rest) {
                Some((word, rest)) => (Some(word), rest),
                None => (None, rest),
            },
        };
        // A lone word before `;` or `}` is a value with no name (a list item).
        let word = match word {
            Some(word) => Some(word),
            None if term != '{' => Some(std::mem::take(&mut tag)),
            None => None,
        };
        if !rest.is_empty() {
            return Err(refuse(line, "extra words after the value"));
        }
        if term == '{' {
            if self.outer.len() >= MAX_DEPTH {
                return Err(refuse(line, format!("blocks nest deeper than {MAX_DEPTH}")));
            }
            self.outer.push(self.parent.clone());
            self.parent = if self.parent.is_empty() {
                std::mem::take(&mut tag)
            } else {
                format!("{}::{}", self.parent, std::mem::take(&mut tag))
            };
        }
        let item = if self.parent.is_empty() {
            tag.clone()
        } else if term != '{' || !tag.is_empty() {
            format!("{}::{tag}", self.parent)
        } else {
            self.parent.clone()
        };
        if let Some(directive) = tag.strip_prefix('#') {
            if !self.parent.is_empty() {
                return Err(refuse(line, "directives are only read outside blocks"));
            }
            let target = word.unwrap_or_default();
            match directive {
                "clear" => out.push(Statement::Clear {
                    key: target.to_lowercase(),
                }),
                "include" => out.push(Statement::Include { path: target }),
                // APT's own index of options: nothing to read here.
                "x-apt-configure-index" => {}
                other => return Err(refuse(line, format!("#{other} is not a directive"))),
            }
            return Ok(());
        }
        let Some(value) = word else {
            return Ok(());
        };
        if tag.is_empty() && value == "#clear" {
            return Err(refuse(line, "#clear needs a name"));
        }
        let key = item.to_lowercase();
        out.push(if key.is_empty() || key.ends_with("::") {
            Statement::Item {
                key: key.trim_end_matches("::").to_owned(),
                value,
            }
        } else {
            Statement::Set { key, value }
        });
        Ok(())
    }
}

/// Where a value was set: the file (as the caller names it) and the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub value: String,
    pub origin: String,
}

/// The configuration as the files read so far leave it.
#[derive(Clone, Debug, Default)]
pub struct AptConfig {
    values: BTreeMap<String, Setting>,
    lists: BTreeMap<String, Vec<String>>,
    /// `#include`s seen and not followed, with the file that named them.
    pub includes: Vec<(String, String)>,
}

impl AptConfig {
    pub fn new() -> AptConfig {
        AptConfig::default()
    }

    /// Reads one more file on top (files in APT's order). A file that does not parse
    /// changes nothing.
    pub fn read(&mut self, text: &str, origin: &str) -> Result<(), SyntaxError> {
        for statement in parse(text)? {
            match statement {
                Statement::Set { key, value } => {
                    self.values.insert(
                        key,
                        Setting {
                            value,
                            origin: origin.to_owned(),
                        },
                    );
                }
                Statement::Item { key, value } => self.lists.entry(key).or_default().push(value),
                Statement::Clear { key } => {
                    let under = format!("{key}::");
                    self.values
                        .retain(|k, _| k != &key && !k.starts_with(&under));
                    self.lists
                        .retain(|k, _| k != &key && !k.starts_with(&under));
                }
                Statement::Include { path } => self.includes.push((path, origin.to_owned())),
            }
        }
        Ok(())
    }

    /// A value by name (any case).
    pub fn get(&self, key: &str) -> Option<&Setting> {
        self.values.get(&key.to_lowercase())
    }

    /// Every value set, by lowercased name.
    pub fn values(&self) -> impl Iterator<Item = (&str, &Setting)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// A list's items by name (any case).
    pub fn list(&self, key: &str) -> &[String] {
        self.lists
            .get(&key.to_lowercase())
            .map_or(&[], Vec::as_slice)
    }
}

/// A value as APT's `FindB` reads it; `None` for anything else (APT then uses the default).
pub fn truth(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "yes" | "true" | "with" | "on" | "enable" => Some(true),
        "0" | "no" | "false" | "without" | "off" | "disable" => Some(false),
        _ => None,
    }
}

/// Whether APT reads a file of `apt.conf.d` by this name: only letters, digits, `-`, `_`
/// and `.`, and no extension or `.conf` (so `50unattended-upgrades.dpkg-old` is ignored).
pub fn read_by_apt(file_name: &str) -> bool {
    let allowed = !file_name.is_empty()
        && file_name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    allowed && (!file_name.contains('.') || file_name.ends_with(".conf"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(key: &str, value: &str) -> Statement {
        Statement::Set {
            key: key.into(),
            value: value.into(),
        }
    }

    #[test]
    fn flat_and_nested_names_are_the_same_name() {
        let flat = parse("Unattended-Upgrade::Automatic-Reboot \"true\";").unwrap();
        let nested = parse("Unattended-Upgrade {\n  Automatic-Reboot \"true\";\n};\n").unwrap();
        assert_eq!(
            flat,
            vec![set("unattended-upgrade::automatic-reboot", "true")]
        );
        assert_eq!(flat, nested);
    }

    #[test]
    fn every_comment_form_is_dropped_outside_quotes() {
        let text = "// Foo \"1\";\n# Bar \"1\";\n/* Baz \"1\";\n Qux \"1\"; */\nA \"x // y # z\"; # tail\nB c; // tail\n";
        assert_eq!(
            parse(text).unwrap(),
            vec![set("a", "x // y # z"), set("b", "c")]
        );
    }

    #[test]
    fn lists_clear_and_include() {
        let text = "Origins { \"a\"; \"b\"; };\nDPkg::Post-Invoke:: \"x\";\n#clear Origins;\n#include \"/etc/other\";\n";
        let parsed = parse(text).unwrap();
        assert_eq!(
            parsed,
            vec![
                Statement::Item {
                    key: "origins".into(),
                    value: "a".into()
                },
                Statement::Item {
                    key: "origins".into(),
                    value: "b".into()
                },
                Statement::Item {
                    key: "dpkg::post-invoke".into(),
                    value: "x".into()
                },
                Statement::Clear {
                    key: "origins".into()
                },
                Statement::Include {
                    path: "/etc/other".into()
                },
            ]
        );
    }

    #[test]
    fn later_files_override_and_clear_removes_the_subtree() {
        let mut config = AptConfig::new();
        config
            .read("Unattended-Upgrade::Automatic-Reboot \"true\";", "50")
            .unwrap();
        config
            .read("unattended-upgrade { automatic-reboot \"false\"; }", "99")
            .unwrap();
        let got = config.get("Unattended-Upgrade::Automatic-Reboot").unwrap();
        assert_eq!((got.value.as_str(), got.origin.as_str()), ("false", "99"));
        config.read("#clear Unattended-Upgrade;", "zz").unwrap();
        assert!(config.get("Unattended-Upgrade::Automatic-Reboot").is_none());
    }

    #[test]
    fn what_apt_refuses_is_refused_with_its_line() {
        for (text, line) in [
            ("A \"1\";\nB \"2\"", 2),
            ("A b c;", 1),
            ("A \"1\" b;", 1),
            ("A \"open;\n", 2),
            ("{ A 1; };", 1),
            ("#clear;", 1),
            ("#clear A B;", 1),
        ] {
            let error = parse(text).expect_err(text);
            assert_eq!(error.line, line, "{text}: {error}");
        }
    }

    #[test]
    fn what_apt_lets_pass_passes() {
        // Checked against apt-config 2.6: quoted words join; open blocks close at the end;
        // a stray '}' is passed over.
        assert_eq!(
            parse("A \"1\"  \"2\" \"\";").unwrap(),
            vec![set("a", "1 2 ")]
        );
        assert_eq!(parse("A {\n B \"1\";\n").unwrap(), vec![set("a::b", "1")]);
        assert_eq!(
            parse("A \"1\"; } } B \"2\";").unwrap(),
            vec![set("a", "1"), set("b", "2")]
        );
        assert_eq!(parse("A b\"c d\";").unwrap(), vec![set("a", "bc d")]);
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = "a{".repeat(MAX_DEPTH + 1);
        assert!(parse(&deep).unwrap_err().message.contains("deeper"));
        let fine = format!("{}x 1;{}", "a{".repeat(MAX_DEPTH), "};".repeat(MAX_DEPTH));
        assert_eq!(parse(&fine).unwrap().len(), 1);
    }

    #[test]
    fn file_names_apt_reads() {
        for name in [
            "50unattended-upgrades",
            "20auto-upgrades",
            "99local.conf",
            "a_b-c",
        ] {
            assert!(read_by_apt(name), "{name}");
        }
        for name in [
            "50unattended-upgrades.dpkg-old",
            "20auto-upgrades.ucf-dist",
            "x.disabled",
            "has space",
            "",
            "bad~",
        ] {
            assert!(!read_by_apt(name), "{name}");
        }
    }

    #[test]
    fn truth_as_findb_reads_it() {
        assert_eq!(truth("TRUE"), Some(true));
        assert_eq!(truth(" 0 "), Some(false));
        assert_eq!(truth("maybe"), None);
    }
}
