//! What one request to an app under idle control gets. The answer nightwatch gives in the app's
//! place is the app's readiness answer, kept from when it was awake: true of a health check
//! and of nothing else. So only a robot's GET or HEAD of a health path may get it; any other
//! request of a robot's while the app sleeps is refused with 503 and `Retry-After`, saying
//! why, and never gets a 2xx the app did not send (a client POSTing on a timer was once
//! classed a robot and told `200 ok` for writes that never reached the app).
//!
//! ```text
//!   awake                                    -> forward
//!   not awake, a person                      -> wake, then forward
//!   asleep (or suspending, waking), a robot:
//!     GET/HEAD of a health path              -> the kept answer (asleep_answer: last_ready)
//!     anything else                          -> 503, Retry-After, X-Nightwatch-Asleep, why
//!   half-awake, failed, quarantined, a robot -> 503, Retry-After, why
//! ```

use std::time::Duration;

use crate::classify::Traffic;
use crate::machine::Phase;
use crate::spec::{AppSpec, AsleepAnswer};

/// How long a refused robot is told to wait before it asks again.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);
/// The most of a request's method and path a reason shows.
const SHOWN_METHOD: usize = 16;
const SHOWN_PATH: usize = 120;

/// What the controller does with one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The app is awake: forward it.
    Forward,
    /// A person's request to an app that is not awake: wake it, then forward it.
    Wake,
    /// A robot's health check while the app sleeps: the readiness answer kept from when it was
    /// awake, marked as nightwatch's.
    Kept,
    /// Answered here, never forwarded: 503 with `Retry-After`, and why.
    Refused(Refusal),
}

/// A request answered with 503 instead of the app.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Why, for the client, the ledger and the log.
    pub why: String,
    /// The app sleeps (the answer says so with `X-Nightwatch-Asleep`), rather than failed.
    pub asleep: bool,
    pub retry_after: Duration,
}

impl Admission {
    pub fn as_str(&self) -> &'static str {
        match self {
            Admission::Forward => "forward",
            Admission::Wake => "wake",
            Admission::Kept => "kept",
            Admission::Refused(_) => "refused",
        }
    }
}

/// True for a GET or HEAD of one of `app`'s health paths: the one request the kept readiness
/// answer is true of.
pub fn is_health_check(app: &AppSpec, method: &str, path: &str) -> bool {
    matches!(method, "GET" | "HEAD") && app.is_health_path(path)
}

/// What a request (`method`, `path` without the query) classed as `traffic` gets from `app`
/// in `phase`. Total: any method and path is only text.
pub fn admission(
    app: &AppSpec,
    phase: Phase,
    traffic: &Traffic,
    method: &str,
    path: &str,
) -> Admission {
    if phase == Phase::Awake {
        return Admission::Forward;
    }
    let Traffic::Robot { kind, why: robot } = traffic else {
        return Admission::Wake;
    };
    let asleep = matches!(phase, Phase::Asleep | Phase::Suspending | Phase::Waking);
    let health_check = is_health_check(app, method, path);
    if asleep && health_check && app.asleep_answer == AsleepAnswer::LastReady {
        return Admission::Kept;
    }
    let asked = format!(
        "{} {}",
        crate::clipped(method, SHOWN_METHOD),
        crate::clipped(path, SHOWN_PATH)
    );
    let why = if !asleep {
        format!(
            "{} is {}; a robot's {asked} ({}: {robot}) does not wake it",
            app.name,
            phase.as_str(),
            kind.as_str()
        )
    } else if health_check {
        format!(
            "{} is asleep; its health checks are answered 503 while it sleeps (asleep_answer: unavailable)",
            app.name
        )
    } else {
        format!(
            "{} is asleep; a robot's {asked} ({}: {robot}) does not wake it and is not answered in its place; ask again later (only a GET or HEAD of a health path, {}, gets its kept answer)",
            app.name,
            kind.as_str(),
            app.health_paths_shown()
        )
    };
    Admission::Refused(Refusal {
        why,
        asleep,
        retry_after: RETRY_AFTER,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::RobotKind;
    use proptest::prelude::*;

    fn app(extra: &str) -> AppSpec {
        crate::test_app(extra)
    }

    fn polling() -> Traffic {
        Traffic::Robot {
            kind: RobotKind::Polling,
            why: "asks /orders/sync every 5s".into(),
        }
    }

    fn monitor() -> Traffic {
        Traffic::Robot {
            kind: RobotKind::Monitor,
            why: "Uptime Kuma".into(),
        }
    }

    /// (phase, traffic, method, path) -> what it gets, as a word.
    #[test]
    fn only_a_robots_health_check_gets_the_kept_answer() {
        let shop = app("");
        let cases = [
            (Phase::Awake, polling(), "POST", "/orders/sync", "forward"),
            (Phase::Awake, Traffic::Person, "GET", "/", "forward"),
            (
                Phase::Asleep,
                Traffic::Person,
                "POST",
                "/orders/sync",
                "wake",
            ),
            (Phase::Quarantined, Traffic::Person, "GET", "/", "wake"),
            (Phase::Asleep, monitor(), "GET", "/healthz", "kept"),
            (Phase::Asleep, monitor(), "HEAD", "/healthz", "kept"),
            (Phase::Suspending, monitor(), "GET", "/healthz", "kept"),
            (Phase::Waking, monitor(), "GET", "/healthz", "kept"),
            (Phase::Asleep, polling(), "POST", "/orders/sync", "refused"),
            (Phase::Asleep, polling(), "POST", "/healthz", "refused"),
            (Phase::Asleep, polling(), "PUT", "/healthz", "refused"),
            (Phase::Asleep, monitor(), "get", "/healthz", "refused"),
            (Phase::Asleep, monitor(), "GET", "/", "refused"),
            (Phase::Asleep, monitor(), "GET", "/healthz/deep", "refused"),
            (Phase::HalfAwake, monitor(), "GET", "/healthz", "refused"),
            (Phase::Failed, monitor(), "GET", "/healthz", "refused"),
        ];
        for (phase, traffic, method, path, expected) in cases {
            let got = admission(&shop, phase, &traffic, method, path);
            assert_eq!(
                got.as_str(),
                expected,
                "{phase:?} {traffic:?} {method} {path}: {got:?}"
            );
        }
    }

    #[test]
    fn a_refusal_says_why_and_marks_an_asleep_app() {
        let shop = app("");
        let Admission::Refused(refusal) =
            admission(&shop, Phase::Asleep, &polling(), "POST", "/orders/sync")
        else {
            panic!("a robot's POST to a sleeping app is refused");
        };
        assert!(refusal.asleep);
        assert_eq!(refusal.retry_after, RETRY_AFTER);
        assert_eq!(
            refusal.why,
            "shop is asleep; a robot's POST /orders/sync (polling: asks /orders/sync every 5s) does not wake it and is not answered in its place; ask again later (only a GET or HEAD of a health path, /healthz, gets its kept answer)"
        );
        let Admission::Refused(failed) =
            admission(&shop, Phase::Failed, &monitor(), "GET", "/healthz")
        else {
            panic!("a failed app is no robot's to answer for");
        };
        assert!(!failed.asleep);
        assert!(failed.why.starts_with("shop is failed"), "{}", failed.why);
    }

    #[test]
    fn asleep_answer_unavailable_refuses_health_checks_too() {
        let shop = app("    asleep_answer: unavailable\n");
        match admission(&shop, Phase::Asleep, &monitor(), "GET", "/healthz") {
            Admission::Refused(r) => {
                assert!(r.asleep);
                assert!(r.why.contains("asleep_answer: unavailable"), "{}", r.why);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn named_health_paths_are_the_ones_answered() {
        let shop = app("    health_paths: [/status, \"/api/health*\"]\n");
        for (path, expected) in [
            ("/status", "kept"),
            ("/api/healthz", "kept"),
            ("/healthz", "refused"),
        ] {
            let got = admission(&shop, Phase::Asleep, &monitor(), "GET", path);
            assert_eq!(got.as_str(), expected, "{path}");
        }
    }

    proptest! {
        #[test]
        fn any_request_text_is_admitted_without_panic_and_reasons_stay_short(
            method in ".{0,300}",
            path in ".{0,300}",
            why in ".{0,200}",
        ) {
            let shop = app("");
            let robot = Traffic::Robot { kind: RobotKind::Crawler, why };
            for phase in Phase::ALL {
                if let Admission::Refused(r) = admission(&shop, phase, &robot, &method, &path) {
                    prop_assert!(r.why.len() < 800);
                }
            }
        }
    }
}
