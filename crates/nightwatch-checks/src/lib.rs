//! Pre-flight checks: probes of the world that run before an action is allowed and can veto it.
//!
//! Policy decides whether an action is the kind of thing an actor may do; a pre-flight check asks
//! whether *now* is a safe moment to do it. The seed story is a certificate renewal whose
//! post-renewal restart killed a database migration that had been running for hours: a check for
//! "a migration process older than 30 minutes" (or its lock file, or its unit) would have halted
//! the restart and told the operator. Policy rules declare checks by id; the gate runs them with
//! [`run_checks`] and writes every [`Finding`] to the ledger.
//!
//! The crate has two halves. [`CheckSpec`] and its kinds are pure values, validated while they
//! are deserialized so a bad policy file points at the bad value; they live in nightwatch-spec
//! (so policy can read them without this crate's I/O) and are re-exported here. The runners
//! do the I/O: they
//! scan `/proc`, walk a glob's directory, call `systemctl`, make an HTTP request, run a program,
//! or ask the ledger's [`History`] (failures for the circuit breaker, allowed actions for the
//! rate).
//!
//! One invariant runs through all of it: **a check that cannot tell is not a pass.** A probe
//! that errors, cannot start or overruns its timeout yields [`Outcome::Unknown`], and its effect
//! is the check's `on_match` verdict, exactly as if it had matched.
//!
//! # The policy form
//!
//! ```yaml
//! checks:
//!   active-migration:
//!     process: { command: "*migrate*", min_age: 30m }   # or `name:`; min_age defaults to 0s
//!     on_match: halt            # halt | ask | deny; default halt; allow is refused
//!     message: "a migration has been running for over 30 minutes; restarting would kill it"
//!     timeout: 2s               # default 2s, more than 0s, at most 60s
//!   migration-lock:
//!     lock_file: { glob: "/var/lib/app/migration_batch_*.lock", min_age: 30m }
//!   long-running-unit:
//!     systemd_unit: { unit: "app-migrate.service", active_longer_than: 30m }
//!   api-healthy:                # matches when the expectation is NOT met
//!     http: { url: "http://127.0.0.1:8080/healthz", expect_status: 200, body_contains: "ok" }
//!   safe-to-restart:
//!     command: { argv: ["/usr/local/bin/safe-to-restart", "app"], match_on: nonzero }
//!   change-window:              # `inside:` for a freeze
//!     maintenance_window: { outside: ["Sat 02:00-06:00", "Sun 02:00-06:00"] }
//!   retry-storm:
//!     circuit_breaker: { failures: 5, within: 10m }
//!   once-a-day:                 # the same actor allowed the same tool this often already
//!     rate: { max: 1, within: 1d }
//! ```

mod child;
mod command;
mod fingerprint;
mod http;
mod lock_file;
mod process;
mod pure;
mod run;
mod systemd;

use nightwatch_spec::checks as spec;

pub use child::{ChildError, Exited, run_bounded};
pub use fingerprint::fingerprint;
pub use http::{HttpAnswer, HttpFailure, get};
pub use lock_file::{MAX_ENTRIES, Walked, mtime_ms, walk_glob};
pub use run::run_checks;
pub use spec::{
    CheckKind, CheckSpec, CircuitBreakerCheck, CommandCheck, DEFAULT_TIMEOUT, ExitMatch, HttpCheck,
    LockFileCheck, MAX_SPAN, MAX_TIMEOUT, PathGlob, Pattern, ProcessCheck, ProcessPattern,
    RateCheck, SpecError, SystemdUnitCheck, Window, WindowCheck, WindowError, WindowMode,
    parse_duration,
};
pub use systemd::{active_state, show_property};

use jiff::civil::Weekday;
use nightwatch_core::Verdict;
use serde::{Deserialize, Serialize};

/// What the checks of one action see: the one clock, the actor and the action's identity.
pub struct Probe<'a> {
    /// Now, in milliseconds since the Unix epoch. Ages are measured against it.
    pub now_ms: i64,
    /// Local minute of day (0-1439) for maintenance windows, from the same clock.
    pub local_minute_of_day: u16,
    pub local_weekday: Weekday,
    pub actor_kind: &'a str,
    pub actor_id: &'a str,
    /// The tool's name (`exec`, `backup`, ...), which the rate counts by.
    pub tool: &'a str,
    /// The action's identity for the circuit breaker: see [`fingerprint`].
    pub fingerprint: &'a str,
    pub history: &'a dyn History,
}

/// Past actions, as the ledger remembers them. A trait so checks need no store and tests need
/// no database.
pub trait History {
    /// How many times this actor's action with this fingerprint failed at or after `since_ms`.
    fn failures_since(
        &self,
        actor_kind: &str,
        actor_id: &str,
        fingerprint: &str,
        since_ms: i64,
    ) -> Result<u32, String>;

    /// How many decisions allowed this actor's `tool` at or after `since_ms` (the rate check).
    /// A history that cannot count them says so, and the check holds the action.
    fn allowed_since(
        &self,
        actor_kind: &str,
        actor_id: &str,
        tool: &str,
        since_ms: i64,
    ) -> Result<u32, String> {
        let _ = (actor_kind, actor_id, tool, since_ms);
        Err("this history does not count allowed actions".to_owned())
    }
}

/// What one check found, as the ledger records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The check's id in policy.
    pub check: String,
    /// Its kind: `process`, `lock_file`, ...
    pub kind: String,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// What the finding does to the action: the check's `on_match` when it matched or could not
    /// tell, nothing when clear.
    pub effect: Option<Verdict>,
    /// What the operator reads.
    pub message: String,
    pub elapsed_ms: u64,
}

/// What a probe saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum Outcome {
    /// The thing the check guards against is there (or the expectation is not met).
    Matched { detail: String },
    /// Looked, and it is not there.
    Clear { detail: String },
    /// Could not tell: the probe failed, could not start or ran out of time.
    Unknown { reason: String },
}

impl Outcome {
    pub(crate) fn matched(detail: impl Into<String>) -> Outcome {
        Outcome::Matched {
            detail: detail.into(),
        }
    }

    pub(crate) fn clear(detail: impl Into<String>) -> Outcome {
        Outcome::Clear {
            detail: detail.into(),
        }
    }

    pub(crate) fn unknown(reason: impl Into<String>) -> Outcome {
        Outcome::Unknown {
            reason: reason.into(),
        }
    }

    pub fn is_matched(&self) -> bool {
        matches!(self, Outcome::Matched { .. })
    }

    pub fn is_clear(&self) -> bool {
        matches!(self, Outcome::Clear { .. })
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, Outcome::Unknown { .. })
    }
}

/// The strictest effect of a set of findings: what the checks, together, do to the action.
pub fn strictest_effect(findings: &[Finding]) -> Option<Verdict> {
    findings.iter().filter_map(|f| f.effect).max()
}

/// `41m12s`, `3h2m`, `5s`, `120ms`: ages in details, short and exact enough to act on.
pub fn human_ms(ms: u64) -> String {
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let s = ms / 1000;
    let (d, h, m, s) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    let mut out = String::new();
    for (n, unit) in [(d, "d"), (h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    out
}

/// Milliseconds of a spec's span. Spans are bounded by [`MAX_SPAN`], so this never saturates in
/// practice; saturating keeps it total.
pub(crate) fn span_ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
