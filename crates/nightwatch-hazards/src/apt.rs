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
//! at all, so a caller cannot tell what would happen. No recursion, and nesting is bounded,
//! so no input makes it panic or grow without bound.

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

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Open,
    Close,
    Semi,
}

/// Splits text into words and `{`, `}`, `;`, dropping comments. A word may mix plain and
/// quoted parts (`Foo"bar baz"` is `Foobar baz`), as APT's reader does.
fn tokens(text: &str) -> Result<Vec<(Token, usize)>, SyntaxError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let mut word: Option<(String, usize)> = None;
    let end_word = |word: &mut Option<(String, usize)>, out: &mut Vec<(Token, usize)>| {
        if let Some((w, at)) = word.take() {
            out.push((Token::Word(w), at));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\n' => {
                end_word(&mut word, &mut out);
                line += 1;
                i += 1;
            }
            '/' if next == Some('/') => {
                end_word(&mut word, &mut out);
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if next == Some('*') => {
                end_word(&mut word, &mut out);
                i += 2;
                // An unterminated comment runs to the end, as in APT.
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i += 2;
            }
            '#' if !starts_directive(&chars[i..]) => {
                end_word(&mut word, &mut out);
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '"' => {
                let start = line;
                i += 1;
                let mut quoted = String::new();
                loop {
                    match chars.get(i) {
                        None => return Err(refuse(start, "a quote is not closed")),
                        Some('"') => break,
                        Some('\n') => {
                            return Err(refuse(start, "a quote is not closed on its line"));
                        }
                        Some(&q) => quoted.push(q),
                    }
                    i += 1;
                }
                i += 1;
                word.get_or_insert_with(|| (String::new(), start))
                    .0
                    .push_str(&quoted);
            }
            '{' | '}' | ';' => {
                end_word(&mut word, &mut out);
                let token = match c {
                    '{' => Token::Open,
                    '}' => Token::Close,
                    _ => Token::Semi,
                };
                out.push((token, line));
                i += 1;
            }
            c if c.is_whitespace() => {
                end_word(&mut word, &mut out);
                i += 1;
            }
            c => {
                word.get_or_insert_with(|| (String::new(), line)).0.push(c);
                i += 1;
            }
        }
    }
    end_word(&mut word, &mut out);
    Ok(out)
}

/// `#clear` and `#include` are directives, every other `#` starts a comment.
fn starts_directive(rest: &[char]) -> bool {
    let is = |word: &str| {
        let n = word.chars().count();
        rest.len() >= n
            && rest[..n].iter().copied().eq(word.chars())
            && rest.get(n).is_none_or(|c| c.is_whitespace() || *c == '"')
    };
    is("#clear") || is("#include")
}

fn join(scope: &str, tag: &str) -> String {
    let tag = tag.to_lowercase();
    if scope.is_empty() {
        tag
    } else if tag.is_empty() {
        scope.to_owned()
    } else {
        format!("{scope}::{tag}")
    }
}

/// The statements of one file, in order.
pub fn parse(text: &str) -> Result<Vec<Statement>, SyntaxError> {
    let mut out = Vec::new();
    let mut scopes: Vec<String> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut line = 1;
    for (token, at) in tokens(text)? {
        line = at;
        let scope = scopes.last().map(String::as_str).unwrap_or("");
        match token {
            Token::Word(w) => words.push(w),
            Token::Semi => {
                statement(scope, std::mem::take(&mut words), at, &mut out)?;
            }
            Token::Close => {
                // `Name "value" }` ends the statement and the block, as in APT.
                statement(scope, std::mem::take(&mut words), at, &mut out)?;
                if scopes.pop().is_none() {
                    return Err(refuse(at, "'}' closes no block"));
                }
            }
            Token::Open => {
                let mut taken = std::mem::take(&mut words).into_iter();
                let (Some(tag), value, None) = (taken.next(), taken.next(), taken.next()) else {
                    return Err(refuse(
                        at,
                        "a block starts with its name and at most one value",
                    ));
                };
                if tag.starts_with('#') {
                    return Err(refuse(at, format!("{tag} does not open a block")));
                }
                if scopes.len() >= MAX_DEPTH {
                    return Err(refuse(at, format!("blocks nest deeper than {MAX_DEPTH}")));
                }
                let key = join(scope, tag.trim_end_matches("::"));
                if let Some(value) = value {
                    out.push(Statement::Set {
                        key: key.clone(),
                        value,
                    });
                }
                scopes.push(key);
            }
        }
    }
    if !words.is_empty() {
        return Err(refuse(line, "the last statement has no ';'"));
    }
    if !scopes.is_empty() {
        return Err(refuse(line, "a block is not closed with '}'"));
    }
    Ok(out)
}

fn statement(
    scope: &str,
    words: Vec<String>,
    line: usize,
    out: &mut Vec<Statement>,
) -> Result<(), SyntaxError> {
    let mut words = words.into_iter();
    let (first, second, third) = (words.next(), words.next(), words.next());
    if third.is_some() {
        return Err(refuse(line, "extra words after the value"));
    }
    match (first, second) {
        (None, _) => {}
        (Some(d), target) if d == "#clear" => match target {
            Some(key) => out.push(Statement::Clear {
                key: join(scope, &key),
            }),
            None => return Err(refuse(line, "#clear needs a name")),
        },
        (Some(d), target) if d == "#include" => match target {
            Some(path) => out.push(Statement::Include { path }),
            None => return Err(refuse(line, "#include needs a file")),
        },
        // A lone value is a list item of the block it is in.
        (Some(value), None) => out.push(Statement::Item {
            key: scope.to_owned(),
            value,
        }),
        (Some(tag), Some(value)) => match tag.strip_suffix("::") {
            Some(list) => out.push(Statement::Item {
                key: join(scope, list),
                value,
            }),
            None => out.push(Statement::Set {
                key: join(scope, &tag),
                value,
            }),
        },
    }
    Ok(())
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
            ("A {\n B \"1\";\n", 2),
            ("};", 1),
            ("A \"1\" \"2\";", 1),
            ("A \"open;\n", 1),
            ("{ A 1; };", 1),
        ] {
            let error = parse(text).expect_err(text);
            assert_eq!(error.line, line, "{text}: {error}");
        }
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
