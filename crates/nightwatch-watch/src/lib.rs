//! Watchers: what is quietly wrong before it breaks, and the jobs that keep the night running.
//!
//! Monitoring watches for failures; watchers look for what comes before one: a config knob
//! that drifted, a backup that still exists but stopped being refreshed, a robot acting 46
//! times where once is right, a host one reboot away from being re-provisioned. Each watcher
//! runs on a [`Schedule`] inside `nightwatch serve`, which records what every run saw and
//! raises what it found as an alert into the daemon's dispatcher.
//!
//! This crate is the `watch:` section of `serve.yaml` ([`spec`]), the schedules
//! ([`schedule`]), what one run saw ([`Observation`]) and the probes that look (drift,
//! freshness and liveness, robot baselines). The daemon's side (when each runs, recording,
//! alerting, the heartbeat, scheduled jobs) is `nightwatch-serve`'s `watch` module.

pub mod baseline;
pub mod drift;
pub mod hazards;
pub mod live;
pub mod schedule;
pub mod spec;
pub mod state;

pub use schedule::{Schedule, ScheduleError};
pub use spec::{HeartbeatSpec, JobSpec, SpecError, WatchFile, WatchSpec, WatcherKind, WatcherSpec};

use serde::Serialize;

/// What a watcher's run made of one subject.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Seen {
    /// As declared: fresh, in place, answering.
    Ok,
    /// Something is wrong: drifted, stale, silent, far above its baseline.
    Found,
    /// The probe could not tell (a file unreadable, a command that hung). Raised like a
    /// finding: a watcher that cannot look is not a pass.
    Unknown,
}

impl Seen {
    pub fn as_str(self) -> &'static str {
        match self {
            Seen::Ok => "ok",
            Seen::Found => "found",
            Seen::Unknown => "unknown",
        }
    }
}

/// What one run of a watcher saw about one subject.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Observation {
    /// What it is about, stable from run to run (`/etc/app/app.ini: server.max_connections`,
    /// `/var/backups/db/*.dump`, `actor backup-job`): a finding's alert identity.
    pub subject: String,
    pub seen: Seen,
    /// One line a person reads.
    pub summary: String,
    /// What was compared, as found.
    pub details: serde_json::Value,
    /// Local paths whose last writer the ledger may name (the drift's file).
    pub touched: Vec<String>,
}

impl Observation {
    pub fn new(subject: impl Into<String>, seen: Seen, summary: impl Into<String>) -> Observation {
        Observation {
            subject: subject.into(),
            seen,
            summary: summary.into(),
            details: serde_json::Value::Null,
            touched: Vec::new(),
        }
    }

    pub fn with_details(mut self, details: serde_json::Value) -> Observation {
        self.details = details;
        self
    }

    pub fn touching(mut self, path: impl Into<String>) -> Observation {
        self.touched.push(path.into());
        self
    }
}
