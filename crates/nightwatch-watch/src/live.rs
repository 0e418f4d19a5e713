//! Liveness, not existence: a backup directory whose files still exist but stopped being
//! refreshed, a test restore that no longer succeeds, an endpoint that answers the wrong thing,
//! a database that stopped holding the row it should.
//!
//! ```yaml
//! fresh:   { glob: "/var/backups/db/*.dump", younger_than: 26h, larger_than: 1MiB, min_files: 7 }
//! command: { argv: [/usr/local/bin/test-restore, db], expect_exit: 0, timeout: 10m, stdout_contains: "restored" }
//! http:    { url: "http://127.0.0.1:8080/healthz", expect_status: 200, body_matches: "\"db\":\\s*\"up\"" }
//! query:   { database: "postgres://monitor@db/app", sql: "SELECT 1 FROM jobs WHERE finished_at > now() - interval '1 day'" }
//! ```
//!
//! Probes reuse the pre-flight checks' machinery (nightwatch-checks): its glob walk, its
//! bounded child runner and its HTTP client, so a watcher and a check look at the world the
//! same way.

use std::process::Command;
use std::time::{Duration, Instant};

use nightwatch_checks::{ChildError, HttpFailure, PathGlob, human_ms};
use nightwatch_spec::backup::ByteSize;
use serde::Deserialize;
use serde_json::json;

use crate::{Env, Observation, Seen};

/// The longest `younger_than` or `timeout` these watchers take.
const MAX_SPAN: Duration = Duration::from_secs(366 * 24 * 3600);
/// How much stdout is searched for `stdout_contains`.
const STDOUT_CAP: usize = 1 << 20;
/// Enough stderr to say why a command failed.
const STDERR_CAP: usize = 1024;
/// How much body is searched for `body_contains` or `body_matches`.
const BODY_CAP: u64 = 1 << 20;

fn span(field: &str, text: &str) -> Result<Duration, String> {
    let d = nightwatch_time::parse_duration(text).map_err(|e| format!("{field}: {e}"))?;
    if d.is_zero() || d > MAX_SPAN {
        return Err(format!(
            "{field}: more than 0s and at most a year, not {text:?}"
        ));
    }
    Ok(d)
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn human(ms: i64) -> String {
    human_ms(u64::try_from(ms).unwrap_or_default())
}

// ---- fresh ----

/// The newest file matching a glob is young enough (and large enough).
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "RawFresh")]
pub struct FreshSpec {
    pub glob: PathGlob,
    pub younger_than: Duration,
    pub larger_than: Option<ByteSize>,
    pub min_files: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFresh {
    glob: PathGlob,
    younger_than: String,
    larger_than: Option<ByteSize>,
    min_files: Option<usize>,
}

impl TryFrom<RawFresh> for FreshSpec {
    type Error = String;

    fn try_from(raw: RawFresh) -> Result<FreshSpec, String> {
        if raw.min_files == Some(0) {
            return Err("min_files: at least 1 (leave it out for any number)".into());
        }
        Ok(FreshSpec {
            glob: raw.glob,
            younger_than: span("younger_than", &raw.younger_than)?,
            larger_than: raw.larger_than,
            min_files: raw.min_files,
        })
    }
}

/// The newest regular file the walk saw.
struct Newest {
    path: String,
    mtime_ms: i64,
    bytes: u64,
}

impl FreshSpec {
    /// One run: one observation of the glob.
    pub fn run(&self, env: &Env<'_>) -> Vec<Observation> {
        let deadline = Instant::now() + env.timeout;
        let glob = self.glob.as_str();
        let mut matched = 0usize;
        let mut newest: Option<Newest> = None;
        let walked = nightwatch_checks::walk_glob(&self.glob, deadline, &mut |path, meta| {
            if !meta.is_file() {
                return;
            }
            matched += 1;
            let mtime_ms = nightwatch_checks::mtime_ms(meta);
            if newest.as_ref().is_none_or(|n| mtime_ms > n.mtime_ms) {
                newest = Some(Newest {
                    path: path.to_owned(),
                    mtime_ms,
                    bytes: meta.len(),
                });
            }
        });
        let unreadable = match walked {
            Ok(walked) => walked.unreadable,
            Err(stop) => return vec![Observation::new(glob, Seen::Unknown, stop)],
        };
        vec![self.judge(env.now_ms, matched, newest, unreadable)]
    }

    fn judge(
        &self,
        now_ms: i64,
        matched: usize,
        newest: Option<Newest>,
        unreadable: Option<String>,
    ) -> Observation {
        let glob = self.glob.as_str();
        let max_age = human(ms(self.younger_than));
        let Some(newest) = newest else {
            return match unreadable {
                Some(why) => Observation::new(glob, Seen::Unknown, why),
                None => Observation::new(
                    glob,
                    Seen::Found,
                    format!("no file matches {glob}; expected one younger than {max_age}"),
                )
                .with_details(json!({ "glob": glob, "matched": 0 })),
            };
        };
        let age_ms = now_ms.saturating_sub(newest.mtime_ms).max(0);
        let name = newest.path.rsplit('/').next().unwrap_or(&newest.path);
        let files = if matched == 1 {
            "1 file matches".to_owned()
        } else {
            format!("{matched} files match")
        };
        let mut problems = Vec::new();
        if age_ms >= ms(self.younger_than) {
            problems.push(format!(
                "the newest, {name}, is {} old; expected younger than {max_age}",
                human(age_ms)
            ));
        }
        if let Some(min) = self.larger_than
            && newest.bytes <= min.0
        {
            problems.push(format!(
                "the newest, {name}, is {}; expected larger than {min}",
                ByteSize(newest.bytes)
            ));
        }
        if let Some(min) = self.min_files
            && matched < min
        {
            problems.push(format!("expected at least {min} files"));
        }
        let details = json!({
            "glob": glob,
            "matched": matched,
            "newest": {
                "path": newest.path,
                "mtime_ms": newest.mtime_ms,
                "age_ms": age_ms,
                "bytes": newest.bytes,
            },
        });
        if problems.is_empty() {
            return Observation::new(
                glob,
                Seen::Ok,
                format!(
                    "{files}; the newest, {name}, is {} old and {}",
                    human(age_ms),
                    ByteSize(newest.bytes)
                ),
            )
            .with_details(details);
        }
        // A stale newest file is only known stale when every directory could be read.
        if let Some(why) = unreadable {
            return Observation::new(
                glob,
                Seen::Unknown,
                format!("{files}, but {}; and {why}", problems.join("; ")),
            )
            .with_details(details);
        }
        Observation::new(
            glob,
            Seen::Found,
            format!("{files}, but {}", problems.join("; ")),
        )
        .with_details(details)
    }
}

// ---- command ----

/// A command (a test restore) succeeds: run without a shell, killed at its timeout.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "RawCommand")]
pub struct CommandSpec {
    pub argv: Vec<String>,
    pub expect_exit: i32,
    /// At most the watcher's own timeout.
    pub timeout: Option<Duration>,
    pub stdout_contains: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCommand {
    argv: Vec<String>,
    #[serde(default)]
    expect_exit: u8,
    timeout: Option<String>,
    stdout_contains: Option<String>,
}

impl TryFrom<RawCommand> for CommandSpec {
    type Error = String;

    fn try_from(raw: RawCommand) -> Result<CommandSpec, String> {
        match raw.argv.first() {
            Some(program) if !program.trim().is_empty() => {}
            _ => return Err("argv: name the program to run".into()),
        }
        if raw.argv.iter().any(|a| a.contains('\0')) {
            return Err("argv: a NUL byte cannot be passed to a program".into());
        }
        Ok(CommandSpec {
            argv: raw.argv,
            expect_exit: i32::from(raw.expect_exit),
            timeout: raw.timeout.map(|t| span("timeout", &t)).transpose()?,
            stdout_contains: raw.stdout_contains,
        })
    }
}

impl CommandSpec {
    /// One run: one observation of the command.
    pub fn run(&self, env: &Env<'_>) -> Vec<Observation> {
        let subject = clip(&self.argv.join(" "));
        let limit = self.timeout.map_or(env.timeout, |t| t.min(env.timeout));
        let deadline = Instant::now() + limit;
        let Some((program, args)) = self.argv.split_first() else {
            return vec![Observation::new(subject, Seen::Unknown, "argv is empty")];
        };
        let mut cmd = Command::new(program);
        cmd.args(args);
        let stdout_cap = self.stdout_contains.as_ref().map(|_| STDOUT_CAP);
        let started = Instant::now();
        let exited = match nightwatch_checks::run_bounded(cmd, deadline, stdout_cap, STDERR_CAP) {
            Ok(exited) => exited,
            Err(e @ ChildError::TimedOut) => {
                return vec![Observation::new(
                    subject,
                    Seen::Unknown,
                    format!("{program} {e} after {}", human(ms(limit))),
                )];
            }
            Err(e) => return vec![Observation::new(subject, Seen::Unknown, e.to_string())],
        };
        let took = human(ms(started.elapsed()));
        let stderr = exited
            .stderr
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
            .filter(|s| !s.is_empty());
        let details = json!({
            "argv": self.argv,
            "exit": exited.status.code(),
            "stderr": stderr,
        });
        let said = stderr
            .as_ref()
            .map(|s| format!("; stderr: {}", clip(s)))
            .unwrap_or_default();
        let Some(code) = exited.status.code() else {
            use std::os::unix::process::ExitStatusExt;
            let signal = exited.status.signal().unwrap_or_default();
            return vec![
                Observation::new(
                    subject,
                    Seen::Found,
                    format!("{program} was killed by signal {signal}{said}"),
                )
                .with_details(details),
            ];
        };
        if code != self.expect_exit {
            return vec![
                Observation::new(
                    subject,
                    Seen::Found,
                    format!(
                        "{program} exited with {code}; expected {}{said}",
                        self.expect_exit
                    ),
                )
                .with_details(details),
            ];
        }
        if let Some(needle) = &self.stdout_contains {
            let stdout = exited.stdout.unwrap_or_default();
            if !contains(&stdout, needle.as_bytes()) {
                return vec![
                    Observation::new(
                        subject,
                        Seen::Found,
                        format!("{program} exited with {code} but did not print {needle:?}"),
                    )
                    .with_details(details),
                ];
            }
        }
        vec![
            Observation::new(
                subject,
                Seen::Ok,
                format!("{program} exited with {code} in {took}"),
            )
            .with_details(details),
        ]
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

fn clip(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    if flat.chars().count() > 200 {
        format!("{}...", flat.chars().take(197).collect::<String>())
    } else {
        flat
    }
}

// ---- http ----

/// An HTTP endpoint answers, with a matching body.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "RawHttp")]
pub struct HttpSpec {
    pub url: String,
    /// `None`: any 2xx.
    pub expect_status: Option<u16>,
    pub body: Option<BodyCheck>,
}

/// What the body must hold.
#[derive(Clone, Debug)]
pub enum BodyCheck {
    Contains(String),
    Matches(regex::Regex),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    url: String,
    expect_status: Option<u16>,
    body_contains: Option<String>,
    body_matches: Option<String>,
}

impl TryFrom<RawHttp> for HttpSpec {
    type Error = String;

    fn try_from(raw: RawHttp) -> Result<HttpSpec, String> {
        let rest = raw
            .url
            .strip_prefix("http://")
            .or_else(|| raw.url.strip_prefix("https://"));
        if rest.is_none_or(|r| r.is_empty() || r.starts_with('/'))
            || raw.url.chars().any(char::is_whitespace)
        {
            return Err(format!(
                "url: an http:// or https:// URL with a host, not {:?}",
                raw.url
            ));
        }
        if let Some(status) = raw.expect_status
            && !(100..=599).contains(&status)
        {
            return Err(format!(
                "expect_status: an HTTP status (100-599), not {status}"
            ));
        }
        let body = match (raw.body_contains, raw.body_matches) {
            (Some(_), Some(_)) => {
                return Err("give body_contains or body_matches, not both".into());
            }
            (Some(text), None) => Some(BodyCheck::Contains(text)),
            (None, Some(pattern)) => Some(BodyCheck::Matches(
                regex::RegexBuilder::new(&pattern)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| format!("body_matches: {e}"))?,
            )),
            (None, None) => None,
        };
        Ok(HttpSpec {
            url: raw.url,
            expect_status: raw.expect_status,
            body,
        })
    }
}

impl HttpSpec {
    /// One run: one observation of the endpoint.
    pub fn run(&self, env: &Env<'_>) -> Vec<Observation> {
        let url = &self.url;
        let deadline = Instant::now() + env.timeout;
        let cap = if self.body.is_some() { BODY_CAP } else { 0 };
        let answer = match nightwatch_checks::get(url, deadline, cap) {
            Ok(answer) => answer,
            Err(HttpFailure::Down(why)) => {
                return vec![Observation::new(url, Seen::Found, why)];
            }
            Err(HttpFailure::Unknown(why)) => {
                return vec![Observation::new(url, Seen::Unknown, why)];
            }
        };
        let status = answer.status;
        let details = json!({ "url": url, "status": status });
        let status_ok = match self.expect_status {
            Some(wanted) => status == wanted,
            None => (200..300).contains(&status),
        };
        if !status_ok {
            let expected = self
                .expect_status
                .map_or_else(|| "a 2xx".to_owned(), |s| s.to_string());
            return vec![
                Observation::new(
                    url,
                    Seen::Found,
                    format!("GET {url} answered {status}; expected {expected}"),
                )
                .with_details(details),
            ];
        }
        let Some(check) = &self.body else {
            return vec![
                Observation::new(url, Seen::Ok, format!("GET {url} answered {status}"))
                    .with_details(details),
            ];
        };
        if let Some(e) = &answer.body_error {
            return vec![
                Observation::new(
                    url,
                    Seen::Found,
                    format!("GET {url} answered {status} but its body broke off: {e}"),
                )
                .with_details(details),
            ];
        }
        let (fine, wanted) = match check {
            BodyCheck::Contains(needle) => (
                contains(&answer.body, needle.as_bytes()),
                format!("{needle:?}"),
            ),
            BodyCheck::Matches(re) => (
                re.is_match(&String::from_utf8_lossy(&answer.body)),
                format!("a match for /{}/", re.as_str()),
            ),
        };
        if fine {
            vec![
                Observation::new(
                    url,
                    Seen::Ok,
                    format!("GET {url} answered {status} with {wanted} in the body"),
                )
                .with_details(details),
            ]
        } else {
            vec![
                Observation::new(
                    url,
                    Seen::Found,
                    format!("GET {url} answered {status} without {wanted} in the body"),
                )
                .with_details(details),
            ]
        }
    }
}

// ---- query ----

/// A database query returns a row.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "RawQuery")]
pub struct QuerySpec {
    /// `postgres://...` (or `postgresql://`), else a SQLite file's absolute path. Taken
    /// literally: a password in it is kept out of what the watcher says.
    pub database: String,
    pub sql: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuery {
    database: String,
    sql: String,
}

impl TryFrom<RawQuery> for QuerySpec {
    type Error = String;

    fn try_from(raw: RawQuery) -> Result<QuerySpec, String> {
        let is_url =
            raw.database.starts_with("postgres://") || raw.database.starts_with("postgresql://");
        if !is_url && !raw.database.starts_with('/') {
            return Err("database: a postgres:// URL or a SQLite file's absolute path".into());
        }
        if raw.sql.trim().is_empty() || raw.sql.len() > 64 * 1024 {
            return Err("sql: one query, at most 64 KiB".into());
        }
        Ok(QuerySpec {
            database: raw.database,
            sql: raw.sql,
        })
    }
}

impl QuerySpec {
    /// What the watcher calls the database: its URL without a password.
    pub fn shown_database(&self) -> String {
        nightwatch_ledger::redact::redact(&self.database)
            .0
            .into_owned()
    }

    /// One run: one observation of the query.
    pub fn run(&self, env: &Env<'_>) -> Vec<Observation> {
        let db = self.shown_database();
        let subject = format!("{db}: {}", clip(&self.sql));
        let details = json!({ "database": db, "sql": self.sql });
        let seen = match env
            .databases
            .returns_row(&self.database, &self.sql, env.timeout)
        {
            Ok(true) => Observation::new(
                subject,
                Seen::Ok,
                format!("the query on {db} returned a row"),
            ),
            Ok(false) => Observation::new(
                subject,
                Seen::Found,
                format!("the query on {db} returned no row; expected at least one"),
            ),
            // The driver's message can quote the URL: say it without the password.
            Err(why) => Observation::new(
                subject,
                Seen::Unknown,
                format!(
                    "the query on {db} could not run: {}",
                    nightwatch_ledger::redact::redact(&why).0
                ),
            ),
        };
        vec![seen.with_details(details)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_read_and_mistakes_are_refused() {
        let fresh: FreshSpec = yaml_serde::from_str(
            "{ glob: \"/var/backups/db/*.dump\", younger_than: 26h, larger_than: 1MiB, min_files: 3 }",
        )
        .unwrap();
        assert_eq!(fresh.younger_than, Duration::from_secs(26 * 3600));
        assert_eq!(fresh.larger_than, Some(ByteSize(1 << 20)));
        for (yaml, says) in [
            ("{ glob: \"backups/*\", younger_than: 1h }", "absolute"),
            ("{ glob: \"/b/*\", younger_than: soon }", "younger_than"),
            ("{ glob: \"/b/*\", younger_than: 0s }", "more than 0s"),
            (
                "{ glob: \"/b/*\", younger_than: 1h, larger_than: lots }",
                "not a size",
            ),
            (
                "{ glob: \"/b/*\", younger_than: 1h, min_files: 0 }",
                "at least 1",
            ),
            (
                "{ glob: \"/b/*\", younger_than: 1h, older: 1 }",
                "unknown field",
            ),
        ] {
            let err = yaml_serde::from_str::<FreshSpec>(yaml)
                .expect_err(yaml)
                .to_string();
            assert!(err.contains(says), "{yaml}: {err}");
        }
        for (yaml, says) in [
            ("{ argv: [] }", "program"),
            ("{ argv: [x], timeout: forever }", "timeout"),
            ("{ argv: [x], expect_exit: 300 }", "expect_exit"),
        ] {
            let err = yaml_serde::from_str::<CommandSpec>(yaml)
                .expect_err(yaml)
                .to_string();
            assert!(err.contains(says), "{yaml}: {err}");
        }
        for (yaml, says) in [
            ("{ url: ftp://x }", "url"),
            ("{ url: \"http://\" }", "url"),
            ("{ url: http://x, expect_status: 42 }", "expect_status"),
            (
                "{ url: http://x, body_contains: a, body_matches: b }",
                "not both",
            ),
            ("{ url: http://x, body_matches: \"(\" }", "body_matches"),
        ] {
            let err = yaml_serde::from_str::<HttpSpec>(yaml)
                .expect_err(yaml)
                .to_string();
            assert!(err.contains(says), "{yaml}: {err}");
        }
        for (yaml, says) in [
            ("{ database: app.db, sql: SELECT 1 }", "database"),
            ("{ database: /app.db, sql: \" \" }", "sql"),
        ] {
            let err = yaml_serde::from_str::<QuerySpec>(yaml)
                .expect_err(yaml)
                .to_string();
            assert!(err.contains(says), "{yaml}: {err}");
        }
    }

    #[test]
    fn a_password_in_the_database_url_is_not_shown() {
        let q: QuerySpec = yaml_serde::from_str(
            "{ database: \"postgres://monitor:hunter2@db/app\", sql: SELECT 1 }",
        )
        .unwrap();
        assert!(
            !q.shown_database().contains("hunter2"),
            "{}",
            q.shown_database()
        );
    }
}
