//! One app's state and what the controller should do next. Pure: time is an argument, and the
//! steps themselves (pause, start, readiness) are the caller's; this only says which step is
//! due and what a step's outcome makes of the state.
//!
//! ```text
//!   awake --idle, allowed--> suspending --done--> asleep --person--> waking --ready--> awake
//!     ^                          |  failed or timed out: undone (resumed, verified)      |
//!     '-------- undone ----------'                                      not ready: half-awake
//!   a step that cannot be undone: failed; failures back off, then quarantine (told once)
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::admission::Admission;
use crate::classify::{RobotKind, Traffic};
use crate::spec::AppSpec;

/// Where an app is. "Awake" means its readiness check passed, never only that it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Awake,
    Suspending,
    Asleep,
    Waking,
    /// Started, but its readiness check does not pass.
    HalfAwake,
    /// A step failed and could not be undone; retried with backoff.
    Failed,
    /// Too many failures in a row: left alone until a person looks (a person's request
    /// still tries to wake it).
    Quarantined,
}

impl Phase {
    pub const ALL: [Phase; 7] = [
        Phase::Awake,
        Phase::Suspending,
        Phase::Asleep,
        Phase::Waking,
        Phase::HalfAwake,
        Phase::Failed,
        Phase::Quarantined,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Awake => "awake",
            Phase::Suspending => "suspending",
            Phase::Asleep => "asleep",
            Phase::Waking => "waking",
            Phase::HalfAwake => "half-awake",
            Phase::Failed => "failed",
            Phase::Quarantined => "quarantined",
        }
    }
}

/// The last person's request: who, what, when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PersonSeen {
    /// Wall-clock milliseconds, for records.
    pub at_ms: i64,
    pub client: String,
    pub user_agent: String,
    pub path: String,
}

/// What was seen since the last state flip.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TrafficCounts {
    pub persons: u64,
    pub robots: BTreeMap<&'static str, u64>,
    /// A few robots by name with their counts (`Uptime Kuma`: 12), bounded.
    pub robots_by_name: BTreeMap<String, u64>,
    /// Robots' health checks given the kept readiness answer.
    pub kept: u64,
    /// Robots' requests refused with 503, by method and path (`POST /orders/sync`: 7),
    /// bounded: past it, under [`OTHER_REFUSALS`].
    pub refused: BTreeMap<String, u64>,
}

/// Robot names kept per app between flips; past it, robots are still counted by kind.
const MAX_ROBOT_NAMES: usize = 32;
/// Refused requests kept by method and path per app between flips.
const MAX_REFUSED: usize = 32;
/// Where refusals past [`MAX_REFUSED`] kinds are counted.
pub const OTHER_REFUSALS: &str = "(others)";

impl TrafficCounts {
    fn count(&mut self, traffic: &Traffic) {
        match traffic {
            Traffic::Person => self.persons += 1,
            Traffic::Robot { kind, why } => {
                *self.robots.entry(kind.as_str()).or_default() += 1;
                let name = match kind {
                    RobotKind::Monitor | RobotKind::Crawler => why.clone(),
                    other => other.as_str().to_owned(),
                };
                if let Some(n) = self.robots_by_name.get_mut(&name) {
                    *n += 1;
                } else if self.robots_by_name.len() < MAX_ROBOT_NAMES {
                    self.robots_by_name.insert(name, 1);
                }
            }
        }
    }
}

/// What the controller should do for this app now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Due {
    /// Nothing yet; look again by then (monotonic ms).
    Wait,
    /// Idle for `idle_after`: propose the suspend.
    Suspend { idle_for: Duration },
    /// Signals that count as activity are on: it stays awake.
    Held { by: Vec<String> },
    /// Failed or half-awake, and its backoff is over: try to bring it back.
    Recover,
}

/// One app's state. Monotonic times (`*_mono`) order events; wall times go into records.
#[derive(Clone, Debug)]
pub struct AppState {
    pub phase: Phase,
    /// Why it is in this phase, as the last record said.
    pub why: String,
    /// When the phase last changed (wall ms).
    pub since_ms: i64,
    /// The last activity that counts (a person's request, a signal), monotonic ms.
    pub active_mono: u64,
    pub last_person: Option<PersonSeen>,
    pub seen: TrafficCounts,
    /// Failed steps in a row.
    pub failures: u32,
    /// No step before this (monotonic ms): backoff after a failure or a veto.
    pub not_before_mono: u64,
    /// The quarantine has been told to a person.
    pub told: bool,
    /// The signals that held it at the last look, to record only changes.
    pub held_by: Vec<String>,
}

impl AppState {
    /// An app as first found: `phase` from what the Engine and the readiness check say.
    pub fn found(phase: Phase, why: impl Into<String>, now_ms: i64, now_mono: u64) -> AppState {
        AppState {
            phase,
            why: why.into(),
            since_ms: now_ms,
            active_mono: now_mono,
            last_person: None,
            seen: TrafficCounts::default(),
            failures: 0,
            not_before_mono: 0,
            told: false,
            held_by: Vec::new(),
        }
    }

    /// Counts a request; a person's resets the idle timer.
    pub fn saw(&mut self, traffic: &Traffic, person: impl FnOnce() -> PersonSeen, now_mono: u64) {
        self.seen.count(traffic);
        if traffic.is_person() {
            self.active_mono = self.active_mono.max(now_mono);
            self.last_person = Some(person());
        }
    }

    /// Counts what a request was given (`method`, `path`: as asked). True for the first
    /// refusal of its method and path since the last flip: that one is recorded with why,
    /// the rest are counted.
    pub fn answered(&mut self, admission: &Admission, method: &str, path: &str) -> bool {
        match admission {
            Admission::Kept => {
                self.seen.kept += 1;
                false
            }
            Admission::Refused(_) => {
                let asked = format!(
                    "{} {}",
                    crate::clipped(method, 16),
                    crate::clipped(path, 120)
                );
                let refused = &mut self.seen.refused;
                if let Some(n) = refused.get_mut(&asked) {
                    *n += 1;
                    false
                } else if refused.len() < MAX_REFUSED {
                    refused.insert(asked, 1);
                    true
                } else {
                    *refused.entry(OTHER_REFUSALS.to_owned()).or_default() += 1;
                    false
                }
            }
            Admission::Forward | Admission::Wake => false,
        }
    }

    /// Moves to `phase`, with the reason the record carries; counts start over.
    pub fn flip(&mut self, phase: Phase, why: impl Into<String>, now_ms: i64) {
        self.phase = phase;
        self.why = why.into();
        self.since_ms = now_ms;
        self.seen = TrafficCounts::default();
        if phase == Phase::Awake {
            self.failures = 0;
            self.told = false;
        }
    }

    /// What is due now, given the signals on (`name`, counts as activity).
    pub fn due(&self, app: &AppSpec, signals_on: &[(String, bool)], now_mono: u64) -> Due {
        if now_mono < self.not_before_mono {
            return Due::Wait;
        }
        match self.phase {
            Phase::Awake => {
                let holding: Vec<String> = signals_on
                    .iter()
                    .filter(|(_, activity)| *activity)
                    .map(|(name, _)| name.clone())
                    .collect();
                if !holding.is_empty() {
                    return Due::Held { by: holding };
                }
                let idle_ms = now_mono.saturating_sub(self.active_mono);
                let idle_for = Duration::from_millis(idle_ms);
                if idle_for >= app.idle_after {
                    Due::Suspend { idle_for }
                } else {
                    Due::Wait
                }
            }
            Phase::HalfAwake | Phase::Failed => Due::Recover,
            Phase::Suspending | Phase::Asleep | Phase::Waking | Phase::Quarantined => Due::Wait,
        }
    }

    /// Marks a step's failure; returns true when this one quarantines the app (tell a person,
    /// once).
    pub fn failed(&mut self, app: &AppSpec, now_mono: u64) -> bool {
        self.failures = self.failures.saturating_add(1);
        let wait =
            nightwatch_time::backoff(app.failures.initial, app.failures.max, self.failures, 0.0);
        self.not_before_mono = now_mono.saturating_add(wait.as_millis() as u64);
        if self.failures >= app.failures.quarantine_after && self.phase != Phase::Quarantined {
            self.phase = Phase::Quarantined;
            let first = !self.told;
            self.told = true;
            return first;
        }
        false
    }

    /// A veto or refusal: no failure, but no new proposal before `wait`.
    pub fn declined(&mut self, wait: Duration, now_mono: u64) {
        self.not_before_mono = now_mono.saturating_add(wait.as_millis() as u64);
    }

    /// The backoff wait before the next try, for records.
    pub fn retry_in(&self, now_mono: u64) -> Duration {
        Duration::from_millis(self.not_before_mono.saturating_sub(now_mono))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> AppSpec {
        crate::test_app("    failures: { initial: 1s, max: 4s, quarantine_after: 3 }\n")
    }

    fn person() -> PersonSeen {
        PersonSeen {
            at_ms: 0,
            client: "192.0.2.1".into(),
            user_agent: "Firefox".into(),
            path: "/".into(),
        }
    }

    #[test]
    fn only_a_persons_request_resets_the_idle_timer() {
        let app = app();
        let mut s = AppState::found(Phase::Awake, "found", 0, 0);
        let monitor = Traffic::Robot {
            kind: RobotKind::Monitor,
            why: "Uptime Kuma".into(),
        };
        for t in (0..25_000).step_by(5_000) {
            s.saw(&monitor, person, t);
        }
        assert!(matches!(s.due(&app, &[], 20_000), Due::Suspend { .. }));
        assert_eq!(s.seen.robots["monitor"], 5);
        assert_eq!(s.seen.robots_by_name["Uptime Kuma"], 5);
        s.saw(&Traffic::Person, person, 21_000);
        assert_eq!(s.due(&app, &[], 30_000), Due::Wait);
        assert!(matches!(s.due(&app, &[], 41_000), Due::Suspend { .. }));
        assert_eq!(s.last_person, Some(person()));
    }

    #[test]
    fn the_first_refusal_of_each_request_is_told_and_the_rest_counted() {
        let mut s = AppState::found(Phase::Asleep, "paused", 0, 0);
        let refused = Admission::Refused(crate::admission::Refusal {
            why: "asleep".into(),
            asleep: true,
            retry_after: Duration::from_secs(30),
        });
        assert!(s.answered(&refused, "POST", "/orders/sync"));
        assert!(!s.answered(&refused, "POST", "/orders/sync"));
        assert!(s.answered(&refused, "GET", "/orders/sync"));
        assert!(!s.answered(&Admission::Kept, "GET", "/healthz"));
        assert_eq!(s.seen.refused["POST /orders/sync"], 2);
        assert_eq!(s.seen.kept, 1);
        for i in 0..100 {
            s.answered(&refused, "GET", &format!("/scan/{i}"));
        }
        assert_eq!(s.seen.refused.len(), MAX_REFUSED + 1, "bounded");
        assert!(s.seen.refused[OTHER_REFUSALS] > 0);
        // A flip starts over: the next sleep's first refusal is told again.
        s.flip(Phase::Awake, "woken", 0);
        s.flip(Phase::Asleep, "paused", 0);
        assert!(s.answered(&refused, "POST", "/orders/sync"));
    }

    #[test]
    fn signals_hold_it_unless_they_are_not_activity() {
        let app = app();
        let s = AppState::found(Phase::Awake, "found", 0, 0);
        let exec = vec![("exec".to_owned(), true)];
        assert_eq!(
            s.due(&app, &exec, 60_000),
            Due::Held {
                by: vec!["exec".into()]
            }
        );
        let backup = vec![("replication".to_owned(), false)];
        assert!(matches!(s.due(&app, &backup, 60_000), Due::Suspend { .. }));
    }

    #[test]
    fn failures_back_off_then_quarantine_and_tell_once() {
        let app = app();
        let mut s = AppState::found(Phase::Failed, "pause timed out", 0, 0);
        assert_eq!(s.due(&app, &[], 0), Due::Recover);
        assert!(!s.failed(&app, 0));
        assert_eq!(s.retry_in(0), Duration::from_secs(1));
        assert_eq!(s.due(&app, &[], 500), Due::Wait);
        assert!(!s.failed(&app, 1_000));
        assert_eq!(s.retry_in(1_000), Duration::from_secs(2));
        assert!(s.failed(&app, 3_000), "the third failure quarantines");
        assert_eq!(s.phase, Phase::Quarantined);
        assert!(!s.failed(&app, 10_000), "told once");
        assert_eq!(s.retry_in(10_000), Duration::from_secs(4), "capped");
        assert_eq!(s.due(&app, &[], 100_000), Due::Wait);
        s.flip(Phase::Awake, "a person woke it", 0);
        assert_eq!(s.failures, 0);
    }
}
