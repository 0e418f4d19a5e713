//! A small INI reader: enough for `app.ini`, `php.ini`, `my.cnf` and systemd-style files to
//! answer "what is `section.key`?". Pure and total: any text reads, and never panics.
//!
//! - `[section]` starts a section; keys before the first one are global. A header without
//!   its `]` is an error naming the line (the file is not the INI it claims to be).
//! - `key = value` and `key: value` (the first `=` or `:` splits); a line with neither is a
//!   bare key with an empty value (`skip-name-resolve` in `my.cnf`).
//! - Lines starting with `;` or `#` are comments; so is the rest of an unquoted value from a
//!   `;` or `#` that follows whitespace inside the value (`max = 5 ; five`; `color = #fff`
//!   keeps its `#`).
//! - A value wrapped in matching `"` or `'` is taken inside them, as written (no escapes).
//! - A later key of the same name in the same section wins, as most readers do.

use std::collections::BTreeMap;

/// An INI file read: `sections[""]` holds the keys before the first header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ini {
    pub sections: BTreeMap<String, BTreeMap<String, String>>,
}

/// Why a text is not INI.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct IniError {
    pub line: usize,
    pub problem: String,
}

impl Ini {
    /// Reads `text`.
    pub fn parse(text: &str) -> Result<Ini, IniError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut ini = Ini::default();
        let mut section = String::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let Some(end) = rest.find(']') else {
                    return Err(IniError {
                        line: n + 1,
                        problem: "a section header without its closing ]".to_owned(),
                    });
                };
                section = rest[..end].trim().to_owned();
                ini.sections.entry(section.clone()).or_default();
                continue;
            }
            let (key, value) = match line.find(['=', ':']) {
                Some(at) => (line[..at].trim(), value_of(line[at + 1..].trim())),
                None => (line, String::new()),
            };
            if key.is_empty() {
                return Err(IniError {
                    line: n + 1,
                    problem: "a value without a key".to_owned(),
                });
            }
            ini.sections
                .entry(section.clone())
                .or_default()
                .insert(key.to_owned(), value);
        }
        Ok(ini)
    }

    /// The value at a dotted path: `section.key`, or a global `key`. A section's name may hold
    /// dots itself (`[server.http]`), so every split is tried, the global key first.
    pub fn get(&self, path: &str) -> Option<&str> {
        if let Some(value) = self.sections.get("").and_then(|keys| keys.get(path)) {
            return Some(value);
        }
        path.match_indices('.').find_map(|(at, _)| {
            self.sections
                .get(&path[..at])
                .and_then(|keys| keys.get(&path[at + 1..]))
                .map(String::as_str)
        })
    }
}

/// A value as written: quotes removed, or a trailing comment cut.
fn value_of(raw: &str) -> String {
    for quote in ['"', '\''] {
        if let Some(inner) = raw.strip_prefix(quote)
            && let Some(end) = inner.find(quote)
        {
            return inner[..end].to_owned();
        }
    }
    let mut cut = raw.len();
    let bytes = raw.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if (*b == b';' || *b == b'#') && i > 0 && bytes[i - 1].is_ascii_whitespace() {
            cut = i;
            break;
        }
    }
    raw[..cut].trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const APP_INI: &str = "\u{feff}; app settings\nname = demo\n\n[server]\nmax_connections = 512 ; tuned\nhost: \"0.0.0.0\"\n# comment\nflag\n[server.http]\nport='8080'\r\n";

    #[test]
    fn reads_sections_keys_comments_and_quotes() {
        let ini = Ini::parse(APP_INI).expect("reads");
        assert_eq!(ini.get("name"), Some("demo"));
        assert_eq!(ini.get("server.max_connections"), Some("512"));
        assert_eq!(ini.get("server.host"), Some("0.0.0.0"));
        assert_eq!(ini.get("server.flag"), Some(""));
        assert_eq!(ini.get("server.http.port"), Some("8080"));
        assert_eq!(ini.get("server.missing"), None);
        assert_eq!(ini.get("max_connections"), None);
    }

    #[test]
    fn a_hash_inside_a_value_stays() {
        let ini = Ini::parse("[a]\ncolor = #fff\nurl = http://x/#frag\n").expect("reads");
        // A value may start with `#`; only one after whitespace inside the value is a comment.
        assert_eq!(ini.get("a.color"), Some("#fff"));
        assert_eq!(ini.get("a.url"), Some("http://x/#frag"));
    }

    #[test]
    fn broken_headers_and_keyless_values_are_errors_with_their_line() {
        assert_eq!(Ini::parse("a=1\n[open\n").unwrap_err().line, 2);
        assert_eq!(Ini::parse("= 5\n").unwrap_err().line, 1);
    }

    #[test]
    fn hostile_corpus_never_panics() {
        for text in [
            "",
            "[",
            "]",
            "[]",
            "=",
            ":",
            "\"",
            "k=\"",
            "k='unterminated",
            "k = ;",
            "[\u{0}]\n\u{0}=\u{0}",
            "[a]]\nk==v",
            "\u{feff}",
            "k = é ; ü",
            "[ü.ö]\nä = ß",
            "\r\n\r\n[x]\r\nk\r\n",
            &"[a]\n".repeat(10_000),
            &"k=v;".repeat(10_000),
        ] {
            if let Ok(ini) = Ini::parse(text) {
                let _ = ini.get("a.k");
                let _ = ini.get("");
                let _ = ini.get(".");
            }
        }
    }

    proptest! {
        #[test]
        fn any_text_reads_or_errs_without_panicking(text in "\\PC{0,200}", path in "[a-z.]{0,12}") {
            if let Ok(ini) = Ini::parse(&text) {
                let _ = ini.get(&path);
            }
        }

        #[test]
        fn a_written_key_reads_back(section in "[a-z]{1,8}", key in "[a-z_]{1,8}", value in "[a-zA-Z0-9_/.-]{0,16}") {
            let text = format!("[{section}]\n{key} = {value}\n");
            let ini = Ini::parse(&text).expect("reads");
            prop_assert_eq!(ini.get(&format!("{section}.{key}")), Some(value.as_str()));
        }
    }
}
