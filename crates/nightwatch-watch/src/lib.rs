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
pub mod changes;
pub mod drift;
pub mod hazards;
pub mod live;
pub mod schedule;
pub mod spec;
pub mod state;
pub mod touched;

pub use schedule::{Schedule, ScheduleError};
pub use spec::{HeartbeatSpec, JobSpec, SpecError, WatchFile, WatchSpec, WatcherKind, WatcherSpec};

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

/// What the daemon lends a watcher's run: the time, the ledger to read, and the parts of the
/// world reached through another crate (databases, the container engine), so this crate
/// names no database driver and no container engine.
pub struct Env<'a> {
    /// Now, Unix milliseconds, from the daemon's one clock.
    pub now_ms: i64,
    pub ledger: &'a dyn nightwatch_store::LedgerReader,
    pub databases: &'a dyn Databases,
    pub containers: &'a dyn Containers,
    /// How long the run may take (the watcher's `timeout`).
    pub timeout: Duration,
    /// The fleet database's clock, as it reads at `now_ms` (the host's clock is compared
    /// against it), when the host is in a fleet and it could be read.
    pub reference_clock_ms: Option<i64>,
}

/// Runs a query for the `query:` watcher.
pub trait Databases: Send + Sync {
    /// Whether `sql` returns at least one row from the database at `url` (`postgres://...`,
    /// or a SQLite file's path), within `timeout`.
    fn returns_row(&self, url: &str, sql: &str, timeout: Duration) -> Result<bool, String>;
}

/// A container as drift and state watchers see it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerFacts {
    /// `running`, `paused`, `exited`, ...
    pub state: String,
    pub env: BTreeMap<String, String>,
    pub labels: BTreeMap<String, String>,
}

/// Reads containers for the drift and state watchers.
pub trait Containers: Send + Sync {
    /// The container named `name`; `Ok(None)` when there is none.
    fn inspect(&self, name: &str) -> Result<Option<ContainerFacts>, String>;
}

/// For a daemon with no container engine: every look says why it cannot tell.
pub struct NoContainers;

impl Containers for NoContainers {
    fn inspect(&self, _name: &str) -> Result<Option<ContainerFacts>, String> {
        Err("no container engine is available to this daemon".into())
    }
}

impl spec::WatcherKind {
    /// One run: what it saw about each subject. Never panics; what cannot be looked at is
    /// an [`Seen::Unknown`] observation saying why.
    pub fn run(&self, env: &Env<'_>) -> Vec<Observation> {
        match self {
            spec::WatcherKind::Drift(k) => k.run(env),
            spec::WatcherKind::Fresh(k) => k.run(env),
            spec::WatcherKind::Command(k) => k.run(env),
            spec::WatcherKind::Http(k) => k.run(env),
            spec::WatcherKind::Query(k) => k.run(env),
            spec::WatcherKind::State(k) => k.run(env),
            spec::WatcherKind::Baselines(k) => k.run(env),
            spec::WatcherKind::Hazards(k) => k.run(env),
        }
    }
}

/// What a watcher's run made of one subject, in the hazards' words: `Ok` as declared (fresh,
/// in place, answering), `Found` something wrong (drifted, stale, silent, far above its
/// baseline), `Unknown` the probe could not tell, which is raised like a finding.
pub use nightwatch_hazards::Seen;

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
