//! The `watch:` section of `serve.yaml`, checked while it is read.
//!
//! ```yaml
//! watch:
//!   record_every: 1h              # an unchanged result is recorded at most this often
//!   watchers:
//!     app-config:                 # a name of your choosing: the alert's and records' subject
//!       every: 5m                 # or  cron: "*/5 * * * *"  (zone: Europe/Berlin)
//!       notify: [oncall]          # notifiers (declared in the policy) told when it finds
//!       drift: { file: /etc/app/app.ini, key: server.max_connections, equals: "512" }
//!     backups:
//!       every: 15m
//!       fresh: { glob: "/var/backups/db/*.dump", younger_than: 26h, larger_than: 1MiB }
//!   jobs:
//!     overnight-triage:
//!       cron: "0 3 * * *"
//!       zone: Europe/Berlin
//!       run: [./runbooks/triage.sh]
//!       timeout: 30m
//!       singleton: true           # one host of all that share the daemon's leases
//!   heartbeat:
//!     url: http://127.0.0.1:3001/api/push/abc123?status=up&msg=OK
//!     every: 1m
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::schedule::{Schedule, ScheduleError};

/// The longest period, timeout or age the section may name.
const MAX_SPAN: Duration = Duration::from_secs(366 * 24 * 3600);

/// How often an unchanged result is recorded when `record_every` is not set: a change is
/// always recorded at once.
pub const DEFAULT_RECORD_EVERY: Duration = Duration::from_secs(3600);

/// Why the `watch:` section was refused, naming the field.
#[derive(Debug, thiserror::Error)]
#[error("watch.{field}: {message}")]
pub struct SpecError {
    pub field: String,
    pub message: String,
}

fn refuse(field: impl Into<String>, message: impl Into<String>) -> SpecError {
    SpecError {
        field: field.into(),
        message: message.into(),
    }
}

/// The section as checked.
#[derive(Clone, Debug, Default)]
pub struct WatchSpec {
    pub watchers: Vec<WatcherSpec>,
    pub jobs: Vec<JobSpec>,
    pub heartbeat: Option<HeartbeatSpec>,
    pub record_every: Duration,
}

impl WatchSpec {
    pub fn is_empty(&self) -> bool {
        self.watchers.is_empty() && self.jobs.is_empty() && self.heartbeat.is_none()
    }
}

/// One watcher.
#[derive(Clone, Debug)]
pub struct WatcherSpec {
    pub name: String,
    pub schedule: Schedule,
    /// Notifiers told when it finds (once per finding, not per run).
    pub notify: Vec<String>,
    pub kind: WatcherKind,
    /// How long one run may take; a run past it is `unknown`.
    pub timeout: Duration,
}

/// What a watcher looks at.
#[derive(Clone, Debug)]
pub enum WatcherKind {
    /// A file's content, a key inside an INI/YAML/JSON/TOML file, a sysctl, a systemd unit's
    /// property, a container's environment variable or label.
    Drift(crate::drift::DriftSpec),
    /// The newest file matching a glob is young enough and large enough.
    Fresh(crate::live::FreshSpec),
    /// A command (a test restore) succeeds.
    Command(crate::live::CommandSpec),
    /// An HTTP endpoint answers, with a matching body.
    Http(crate::live::HttpSpec),
    /// A database query returns a row.
    Query(crate::live::QuerySpec),
    /// A resource whose state flips with no record in the ledger.
    State(crate::state::StateSpec),
    /// Every actor's actions per hour and per day against its expectation or baseline.
    Baselines(crate::baseline::BaselineSpec),
    /// The host's hazards (`nightwatch hazards`).
    Hazards(crate::hazards::HazardSpec),
}

impl WatcherKind {
    /// The YAML key, also the `kind` label of its alerts.
    pub fn name(&self) -> &'static str {
        match self {
            WatcherKind::Drift(_) => "drift",
            WatcherKind::Fresh(_) => "fresh",
            WatcherKind::Command(_) => "command",
            WatcherKind::Http(_) => "http",
            WatcherKind::Query(_) => "query",
            WatcherKind::State(_) => "state",
            WatcherKind::Baselines(_) => "baselines",
            WatcherKind::Hazards(_) => "hazards",
        }
    }
}

/// A runbook run on a schedule, through the daemon's queue and gate like an alert's.
#[derive(Clone, Debug)]
pub struct JobSpec {
    pub name: String,
    pub schedule: Schedule,
    pub run: Vec<String>,
    pub cwd: Option<String>,
    pub timeout: Option<Duration>,
    pub notify: Vec<String>,
    /// Runs on one host of all that share the daemon's leases; the others record that they
    /// stood down.
    pub singleton: bool,
    /// In a fleet, the hosts (name globs) that may run it; empty: any.
    pub hosts: Vec<String>,
}

/// A push to an uptime monitor, sent only while nightwatch is healthy, so its silence is the
/// alarm.
#[derive(Clone, Debug)]
pub struct HeartbeatSpec {
    pub url: String,
    pub every: Duration,
    pub timeout: Duration,
    /// A watcher this much past its slot makes nightwatch unhealthy (and is itself an alert).
    pub late_after: Duration,
}

// ---- the section as written ----

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct WatchFile {
    record_every: Option<String>,
    #[serde(default)]
    watchers: BTreeMap<String, FileWatcher>,
    #[serde(default)]
    jobs: BTreeMap<String, FileJob>,
    heartbeat: Option<FileHeartbeat>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileWatcher {
    every: Option<String>,
    cron: Option<String>,
    zone: Option<String>,
    #[serde(default)]
    notify: Vec<String>,
    timeout: Option<String>,
    drift: Option<crate::drift::DriftSpec>,
    fresh: Option<crate::live::FreshSpec>,
    command: Option<crate::live::CommandSpec>,
    http: Option<crate::live::HttpSpec>,
    query: Option<crate::live::QuerySpec>,
    state: Option<crate::state::StateSpec>,
    baselines: Option<crate::baseline::BaselineSpec>,
    hazards: Option<crate::hazards::HazardSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJob {
    every: Option<String>,
    cron: Option<String>,
    zone: Option<String>,
    run: Vec<String>,
    cwd: Option<String>,
    timeout: Option<String>,
    #[serde(default)]
    notify: Vec<String>,
    #[serde(default)]
    singleton: bool,
    #[serde(default)]
    hosts: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHeartbeat {
    url: String,
    every: Option<String>,
    timeout: Option<String>,
    late_after: Option<String>,
}

fn duration(field: &str, text: &str) -> Result<Duration, SpecError> {
    let d = nightwatch_time::parse_duration(text).map_err(|why| refuse(field, why.to_string()))?;
    if d > MAX_SPAN {
        return Err(refuse(field, format!("{text:?} is longer than a year")));
    }
    Ok(d)
}

fn schedule(
    field: &str,
    every: Option<&str>,
    cron: Option<&str>,
    zone: Option<&str>,
    default: Option<Duration>,
) -> Result<Schedule, SpecError> {
    let bad = |e: ScheduleError| refuse(field, e.to_string());
    match (every, cron) {
        (Some(_), Some(_)) => Err(refuse(field, "give every or cron, not both")),
        (Some(every), None) => {
            if zone.is_some() {
                return Err(refuse(field, "zone goes with cron, not every"));
            }
            Schedule::every(duration(&format!("{field}.every"), every)?).map_err(bad)
        }
        (None, Some(cron)) => Schedule::cron(cron, zone).map_err(bad),
        (None, None) => match default {
            Some(d) => Schedule::every(d).map_err(bad),
            None => Err(refuse(
                field,
                "say when it runs: every: 1h or cron: \"0 3 * * *\"",
            )),
        },
    }
}

/// A name that can stand in an alert identity, a lease and a label.
fn check_name(field: &str, name: &str) -> Result<(), SpecError> {
    let fine = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fine {
        Ok(())
    } else {
        Err(refuse(
            field,
            "a name is 1-64 letters, digits, '-', '_' or '.'",
        ))
    }
}

/// How often a watcher runs when it says nothing.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(60);
/// How long one watcher's run may take when it says nothing.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

impl WatchFile {
    /// Checks the section; the first problem, by field.
    pub fn check(self) -> Result<WatchSpec, SpecError> {
        let record_every = match &self.record_every {
            Some(t) => duration("record_every", t)?,
            None => DEFAULT_RECORD_EVERY,
        };
        let mut watchers = Vec::new();
        for (name, w) in self.watchers {
            let field = format!("watchers.{name}");
            check_name(&field, &name)?;
            let mut kinds = Vec::new();
            if let Some(k) = w.drift {
                kinds.push(WatcherKind::Drift(k));
            }
            if let Some(k) = w.fresh {
                kinds.push(WatcherKind::Fresh(k));
            }
            if let Some(k) = w.command {
                kinds.push(WatcherKind::Command(k));
            }
            if let Some(k) = w.http {
                kinds.push(WatcherKind::Http(k));
            }
            if let Some(k) = w.query {
                kinds.push(WatcherKind::Query(k));
            }
            if let Some(k) = w.state {
                kinds.push(WatcherKind::State(k));
            }
            if let Some(k) = w.baselines {
                kinds.push(WatcherKind::Baselines(k));
            }
            if let Some(k) = w.hazards {
                kinds.push(WatcherKind::Hazards(k));
            }
            let kind = match kinds.len() {
                1 => kinds.remove(0),
                0 => {
                    return Err(refuse(
                        field,
                        "say what it watches: drift, fresh, command, http, query, state, \
                         baselines or hazards",
                    ));
                }
                _ => {
                    return Err(refuse(
                        field,
                        "one thing per watcher; name another for the rest",
                    ));
                }
            };
            let timeout = match &w.timeout {
                Some(t) => duration(&format!("{field}.timeout"), t)?,
                None => DEFAULT_TIMEOUT,
            };
            if timeout.is_zero() {
                return Err(refuse(format!("{field}.timeout"), "must be more than 0s"));
            }
            watchers.push(WatcherSpec {
                schedule: schedule(
                    &field,
                    w.every.as_deref(),
                    w.cron.as_deref(),
                    w.zone.as_deref(),
                    Some(DEFAULT_EVERY),
                )?,
                name,
                notify: w.notify,
                kind,
                timeout,
            });
        }
        let mut jobs = Vec::new();
        for (name, j) in self.jobs {
            let field = format!("jobs.{name}");
            check_name(&field, &name)?;
            if j.run.is_empty() || j.run[0].trim().is_empty() {
                return Err(refuse(format!("{field}.run"), "name the program to run"));
            }
            let timeout = match &j.timeout {
                Some(t) => Some(duration(&format!("{field}.timeout"), t)?),
                None => None,
            };
            jobs.push(JobSpec {
                schedule: schedule(
                    &field,
                    j.every.as_deref(),
                    j.cron.as_deref(),
                    j.zone.as_deref(),
                    None,
                )?,
                name,
                run: j.run,
                cwd: j.cwd,
                timeout,
                notify: j.notify,
                singleton: j.singleton,
                hosts: j.hosts,
            });
        }
        let heartbeat = match self.heartbeat {
            None => None,
            Some(h) => {
                let scheme_ok = h.url.starts_with("http://") || h.url.starts_with("https://");
                if !scheme_ok {
                    return Err(refuse("heartbeat.url", "an http:// or https:// URL"));
                }
                let every = match &h.every {
                    Some(t) => duration("heartbeat.every", t)?,
                    None => Duration::from_secs(60),
                };
                if every < Duration::from_secs(1) {
                    return Err(refuse("heartbeat.every", "at least 1s"));
                }
                let timeout = match &h.timeout {
                    Some(t) => duration("heartbeat.timeout", t)?,
                    None => Duration::from_secs(10).min(every),
                };
                let late_after = match &h.late_after {
                    Some(t) => duration("heartbeat.late_after", t)?,
                    None => Duration::from_secs(120),
                };
                Some(HeartbeatSpec {
                    url: h.url,
                    every,
                    timeout,
                    late_after,
                })
            }
        };
        Ok(WatchSpec {
            watchers,
            jobs,
            heartbeat,
            record_every,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<WatchSpec, SpecError> {
        let file: WatchFile = yaml_serde::from_str(text).map_err(|e| refuse("", e.to_string()))?;
        file.check()
    }

    #[test]
    fn a_job_reads_with_its_schedule_and_defaults() {
        let spec = check(
            "jobs:\n  triage:\n    cron: \"0 3 * * *\"\n    zone: Europe/Berlin\n    run: [./t.sh]\n    singleton: true\n",
        )
        .unwrap();
        assert_eq!(spec.jobs.len(), 1);
        assert!(spec.jobs[0].singleton);
        assert_eq!(spec.record_every, DEFAULT_RECORD_EVERY);
    }

    #[test]
    fn mistakes_are_refused_by_field() {
        for (text, field) in [
            ("jobs:\n  t:\n    run: [x]\n", "jobs.t"),
            (
                "jobs:\n  t:\n    every: 1h\n    cron: \"@daily\"\n    run: [x]\n",
                "jobs.t",
            ),
            ("jobs:\n  t:\n    every: 1h\n    run: []\n", "jobs.t.run"),
            (
                "jobs:\n  \"a b\":\n    every: 1h\n    run: [x]\n",
                "jobs.a b",
            ),
            (
                "jobs:\n  t:\n    cron: \"0 3 * * *\"\n    zone: Nowhere/Else\n    run: [x]\n",
                "jobs.t",
            ),
            ("heartbeat:\n  url: ftp://x\n", "heartbeat.url"),
            (
                "heartbeat:\n  url: http://x\n  every: 100ms\n",
                "heartbeat.every",
            ),
            ("watchers:\n  w:\n    every: 1m\n", "watchers.w"),
        ] {
            let err = check(text).expect_err(text);
            assert_eq!(err.field, field, "{text}: {err}");
        }
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(check("jobz: {}\n").is_err());
        assert!(check("jobs:\n  t:\n    every: 1h\n    run: [x]\n    singelton: true\n").is_err());
    }
}
