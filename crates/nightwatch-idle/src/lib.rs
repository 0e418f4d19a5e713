//! Idle control's pure core. Seed 000: apps that should sleep after fifteen quiet minutes
//! were kept awake by uptime monitors, crawlers and a dashboard tab polling status, and the
//! sweeper that declined to suspend a database said nothing about why.
//!
//! - [`spec`]: the apps under idle control, as `serve.yaml`'s `idle:` section declares them.
//! - [`admission`]: what one request gets: forwarded, a wake, the kept readiness answer (a
//!   robot's health check while the app sleeps, and nothing else), or 503 saying why.
//! - [`classify`]: whether a request is a person's (or an agent's) or a robot's, and which
//!   kind; [`polling`] sees the fixed rhythm of a poller whatever it calls itself.
//! - [`machine`]: one app's state (awake, suspending, asleep, waking, half-awake, failed,
//!   quarantined), what is due next, and backoff to quarantine.
//! - [`runtime`]: what the controller asks of the container engine (a trait).
//! - [`sockets`]: reading `/proc/PID/net/tcp` text for connections into an app.
//!
//! Invariants: no I/O, no clock (times are arguments), no panics on any input (the request
//! text and `/proc` text are hostile until read). The daemon's idle controller
//! (`nightwatch-serve`, `idle/`) does the I/O and puts every suspend and wake through the
//! engine.

pub mod admission;
pub mod classify;
pub mod machine;
pub mod polling;
pub mod runtime;
pub mod sockets;
pub mod spec;

pub use admission::{Admission, Refusal, admission, is_health_check};
pub use classify::{Classifier, Request, RobotKind, Traffic};
pub use machine::{AppState, Due, PersonSeen, Phase, TrafficCounts};
pub use runtime::{Observed, Runtime, SignalSeen};
pub use spec::{
    AppSpec, AsleepAnswer, IdleFile, Readiness, SignalKind, SpecError, SuspendMode, Target,
};

/// `text` cut to at most `max` bytes at a character boundary, with `…` when cut: request text
/// (paths, user agents) as reasons and records keep it, so a hostile one cannot bloat them.
pub fn clipped(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The app the unit tests judge: `shop`, ready at `/healthz`, with `extra` lines of YAML.
#[cfg(test)]
pub(crate) fn test_app(extra: &str) -> AppSpec {
    let yaml = format!(
        "apps:\n  shop:\n    container: shop\n    listen: 127.0.0.1:8080\n    upstream: 127.0.0.1:18080\n    idle_after: 20s\n    ready: {{ http: /healthz }}\n{extra}"
    );
    let file: IdleFile = yaml_serde::from_str(&yaml).unwrap();
    file.check().unwrap().remove(0)
}
