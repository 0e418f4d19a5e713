//! Secrets out before anything is stored. Pure: text in, text and the kinds removed out.
//!
//! Each secret becomes `[REDACTED:<kind>]`; a key or flag name in front of it is kept so the
//! record still says what was there (`--password=[REDACTED:password-flag]`).

use regex::{Captures, Regex};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// One kind of secret: a pattern, which capture group is the secret (0 = the whole match), and
/// literal hints of which at least one must occur for the pattern to be tried. The hints keep
/// the hook path from compiling (and running) patterns that cannot match: most text holds no
/// secret at all.
struct Rule {
    kind: &'static str,
    pattern: &'static str,
    group: usize,
    hints: &'static [&'static str],
    ignore_case: bool,
    compiled: OnceLock<Option<Regex>>,
}

impl Rule {
    fn may_match(&self, text: &str) -> bool {
        self.hints.iter().any(|hint| {
            if self.ignore_case {
                contains_ignore_ascii_case(text, hint)
            } else {
                text.contains(hint)
            }
        })
    }

    /// The compiled pattern. The patterns are constants tested below; a bad one is skipped
    /// rather than panicking.
    fn regex(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| Regex::new(self.pattern).ok())
            .as_ref()
    }
}

fn contains_ignore_ascii_case(text: &str, needle: &str) -> bool {
    let needle = needle.as_bytes();
    needle.is_empty()
        || text
            .as_bytes()
            .windows(needle.len())
            .any(|window| window.eq_ignore_ascii_case(needle))
}

// Ordered: whole blocks first, provider tokens before generic `NAME=value` shapes, so the kind
// recorded is the most specific one.
static RULES: [Rule; 16] = [
    Rule {
        kind: "private-key",
        pattern: r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
        group: 0,
        hints: &["-----BEGIN"],
        ignore_case: false,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "aws-access-key",
        pattern: r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        group: 0,
        hints: &["AKIA", "ASIA"],
        ignore_case: false,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "github-token",
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
        group: 0,
        hints: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        ignore_case: false,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "gitlab-token",
        pattern: r"\bglpat-[0-9A-Za-z_-]{20,}",
        group: 0,
        hints: &["glpat-"],
        ignore_case: false,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "slack-token",
        pattern: r"\bxox[baprs]-[0-9A-Za-z-]{10,}",
        group: 0,
        hints: &["xox"],
        ignore_case: false,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "anthropic-key",
        pattern: r"\bsk-ant-[0-9A-Za-z_-]{20,}",
        group: 0,
        hints: &["sk-ant-"],
        ignore_case: false,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "stripe-key",
        pattern: r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}",
        group: 0,
        hints: &["k_live_", "k_test_"],
        ignore_case: false,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "openai-key",
        pattern: r"\bsk-[0-9A-Za-z_-]{20,}",
        group: 0,
        hints: &["sk-"],
        ignore_case: false,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "google-api-key",
        pattern: r"\bAIza[0-9A-Za-z_-]{35}",
        group: 0,
        hints: &["AIza"],
        ignore_case: false,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "jwt",
        pattern: r"\beyJ[0-9A-Za-z_-]{6,}\.eyJ[0-9A-Za-z_-]{6,}\.[0-9A-Za-z_-]{6,}",
        group: 0,
        hints: &["eyJ"],
        ignore_case: false,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "url-password",
        pattern: r"\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@'\x22\[\]]+:([^@\s/'\x22]+)@",
        group: 1,
        hints: &["://"],
        ignore_case: false,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "authorization",
        pattern: r#"(?i)\bauthorization\s*[:=]\s*(?:(?:bearer|basic|token|digest)\s+)?([^\s'",;]+)"#,
        group: 1,
        hints: &["authorization"],
        ignore_case: true,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "api-key-header",
        pattern: r#"(?i)\b(?:x-api-key|api-key|x-auth-token|private-token)\s*:\s*([^\s'",;]+)"#,
        group: 1,
        hints: &["api-key", "auth-token", "private-token"],
        ignore_case: true,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "password-flag",
        pattern: r#"(?i)--(?:password|passwd|pass|token|secret|api-key|apikey|auth-token|access-token)(?:=|\s+)('[^']*'|"[^"]*"|[^\s'"-][^\s'"]*)"#,
        group: 1,
        hints: &[
            "--pass", "--token", "--secret", "--api", "--auth", "--access",
        ],
        ignore_case: true,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "password-flag",
        pattern: r"\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]*?\s-p([^\s]+)",
        group: 1,
        hints: &["mysql", "mariadb"],
        ignore_case: true,
        compiled: OnceLock::new(),
    },
    Rule {
        kind: "secret-assignment",
        pattern: r#"(?i)\b[A-Z0-9_]*(?:password|passwd|token|secret|_key|apikey)\s*=\s*('[^']*'|"[^"]*"|[^\s'"]+)"#,
        group: 1,
        hints: &["password", "passwd", "token", "secret", "_key", "apikey"],
        ignore_case: true,
        compiled: OnceLock::new(),
    },
];

/// Object keys whose string values are secrets whatever they look like (any ASCII case).
/// Compared directly: this runs on every key of every hook's input, where building a regex
/// would cost more than all the rest of the redaction.
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "api-key",
    "accesstoken",
    "access_token",
    "access-token",
    "clientsecret",
    "client_secret",
    "client-secret",
    "privatekey",
    "private_key",
    "private-key",
];

fn is_secret_key(key: &str) -> bool {
    SECRET_KEYS.iter().any(|k| k.eq_ignore_ascii_case(key))
}

fn marker(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

/// `text` with every secret replaced; the kinds found are added to `kinds`.
pub fn redact_into<'a>(text: &'a str, kinds: &mut BTreeSet<String>) -> Cow<'a, str> {
    let mut current: Cow<'a, str> = Cow::Borrowed(text);
    for rule in RULES.iter() {
        if !rule.may_match(&current) {
            continue;
        }
        let Some(re) = rule.regex() else {
            continue;
        };
        if !re.is_match(&current) {
            continue;
        }
        let mut found = false;
        let replaced = re.replace_all(&current, |caps: &Captures<'_>| {
            let whole = caps.get(0).map_or("", |m| m.as_str());
            let Some(secret) = caps.get(rule.group) else {
                return whole.to_string();
            };
            // Already redacted by a more specific rule: leave it.
            if secret
                .as_str()
                .trim_matches(['\'', '"'])
                .starts_with("[REDACTED:")
            {
                return whole.to_string();
            }
            found = true;
            let start = secret.start() - caps.get(0).map_or(0, |m| m.start());
            let end = start + secret.len();
            format!("{}{}{}", &whole[..start], marker(rule.kind), &whole[end..])
        });
        if found {
            kinds.insert(rule.kind.to_string());
            current = Cow::Owned(replaced.into_owned());
        }
    }
    current
}

/// `text` with every secret replaced, and the sorted kinds removed.
pub fn redact(text: &str) -> (Cow<'_, str>, Vec<String>) {
    let mut kinds = BTreeSet::new();
    let out = redact_into(text, &mut kinds);
    (out, kinds.into_iter().collect())
}

/// Redacts every string inside `value` (object values, array items; keys are kept), and the
/// whole string value of keys named like a secret (`password`, `token`, `api_key`, ...).
pub fn redact_json(value: &mut Value, kinds: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => {
            if let Cow::Owned(new) = redact_into(s, kinds) {
                *s = new;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_json(v, kinds)),
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                let secret_key = is_secret_key(key);
                match v {
                    Value::String(s)
                        if secret_key && !s.is_empty() && !s.starts_with("[REDACTED:") =>
                    {
                        *s = marker("secret-field");
                        kinds.insert("secret-field".to_string());
                    }
                    _ => redact_json(v, kinds),
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (input, expected output, expected kinds)
    fn check(input: &str, expected: &str, kinds: &[&str]) {
        let (out, found) = redact(input);
        assert_eq!(out, expected, "redacting {input:?}");
        assert_eq!(found, kinds, "kinds for {input:?}");
    }

    #[test]
    fn every_rule_compiles() {
        assert_eq!(RULES.len(), 16);
    }

    #[test]
    fn provider_tokens() {
        check(
            "aws AKIAIOSFODNN7EXAMPLE here",
            "aws [REDACTED:aws-access-key] here",
            &["aws-access-key"],
        );
        check(
            "git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x",
            "git clone https://[REDACTED:github-token]@github.com/x",
            &["github-token"],
        );
        check(
            "token gho_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
            "token [REDACTED:github-token]",
            &["github-token"],
        );
        check(
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "[REDACTED:github-token]",
            &["github-token"],
        );
        check(
            "slack xoxb-123456789012-abcdefABCDEF",
            "slack [REDACTED:slack-token]",
            &["slack-token"],
        );
        check(
            "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
            "[REDACTED:openai-key]",
            &["openai-key"],
        );
        check(
            "key sk-ant-api03-abcdefghijklmnopqrstuvwxyz-0123",
            "key [REDACTED:anthropic-key]",
            &["anthropic-key"],
        );
        check(
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "[REDACTED:google-api-key]",
            &["google-api-key"],
        );
        check(
            "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "stripe [REDACTED:stripe-key]",
            &["stripe-key"],
        );
        check(
            "rk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "[REDACTED:stripe-key]",
            &["stripe-key"],
        );
        check(
            "glpat-abcdefghijklmnopqrstuv",
            "[REDACTED:gitlab-token]",
            &["gitlab-token"],
        );
        check(
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok",
            "jwt [REDACTED:jwt] ok",
            &["jwt"],
        );
    }

    #[test]
    fn passwords_in_urls_headers_and_flags() {
        check(
            "psql postgres://admin:hunter2@db:5432/app",
            "psql postgres://admin:[REDACTED:url-password]@db:5432/app",
            &["url-password"],
        );
        check(
            "curl -H 'Authorization: Bearer abc.def.ghi' https://x",
            "curl -H 'Authorization: Bearer [REDACTED:authorization]' https://x",
            &["authorization"],
        );
        check(
            "Authorization: Basic dXNlcjpwYXNz",
            "Authorization: Basic [REDACTED:authorization]",
            &["authorization"],
        );
        check(
            "curl -H \"X-Api-Key: 1234abcd\" x",
            "curl -H \"X-Api-Key: [REDACTED:api-key-header]\" x",
            &["api-key-header"],
        );
        check(
            "mysql --password=s3cret -u root",
            "mysql --password=[REDACTED:password-flag] -u root",
            &["password-flag"],
        );
        check(
            "tool --password s3cret --verbose",
            "tool --password [REDACTED:password-flag] --verbose",
            &["password-flag"],
        );
        check(
            "mysql -u root -pS3cret! mydb",
            "mysql -u root -p[REDACTED:password-flag] mydb",
            &["password-flag"],
        );
        check(
            "PGPASSWORD=hunter2 psql -h db",
            "PGPASSWORD=[REDACTED:secret-assignment] psql -h db",
            &["secret-assignment"],
        );
        check(
            "export API_TOKEN=abc123 CLIENT_SECRET='x y' AWS_SECRET_ACCESS_KEY=zzz",
            "export API_TOKEN=[REDACTED:secret-assignment] CLIENT_SECRET=[REDACTED:secret-assignment] AWS_SECRET_ACCESS_KEY=[REDACTED:secret-assignment]",
            &["secret-assignment"],
        );
        check(
            "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789 gh pr list",
            "GITHUB_TOKEN=[REDACTED:github-token] gh pr list",
            &["github-token"],
        );
    }

    #[test]
    fn private_key_blocks() {
        check(
            "cat key\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAA\n-----END OPENSSH PRIVATE KEY-----\ndone",
            "cat key\n[REDACTED:private-key]\ndone",
            &["private-key"],
        );
        check(
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE...cut",
            "[REDACTED:private-key]",
            &["private-key"],
        );
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for text in [
            "ls -la /var/log && df -h",
            "git push origin main",
            "mysql -u root -p mydb",
            "mysql -P 3306 -h db",
            "tool --password --verbose",
            "max_tokens=5 tokens=3 monkey=banana",
            "see https://example.com/a:b@c is not a url password? no: https://example.com/path",
            "skip-this-line and sk-short",
            "ssh-keygen -t ed25519 -f ~/.ssh/id",
            "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
            "Verdict: allow (rule default)",
        ] {
            let (out, kinds) = redact(text);
            assert_eq!(out, text);
            assert!(kinds.is_empty(), "{text:?} gave {kinds:?}");
            assert!(matches!(out, Cow::Borrowed(_)));
        }
    }

    #[test]
    fn json_strings_and_secret_keys_are_redacted() {
        let mut v = serde_json::json!({
            "command": "curl -u x https://bob:pw@host/",
            "nested": [{"password": "plain"}, 5, null],
            "description": "list files",
            "Client-Secret": "abc",
            "API_KEY": "def",
            "tokens": 3,
            "token_count": "7",
        });
        let mut kinds = BTreeSet::new();
        redact_json(&mut v, &mut kinds);
        assert_eq!(
            v,
            serde_json::json!({
                "command": "curl -u x https://bob:[REDACTED:url-password]@host/",
                "nested": [{"password": "[REDACTED:secret-field]"}, 5, null],
                "description": "list files",
                "Client-Secret": "[REDACTED:secret-field]",
                "API_KEY": "[REDACTED:secret-field]",
                "tokens": 3,
                "token_count": "7",
            })
        );
        assert_eq!(
            kinds.into_iter().collect::<Vec<_>>(),
            ["secret-field", "url-password"]
        );
    }
}
