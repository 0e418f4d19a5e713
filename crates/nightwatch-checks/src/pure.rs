//! The checks that need nothing but the probe: maintenance windows, the circuit breaker and
//! the rate.

use crate::spec::{CheckKind, CircuitBreakerCheck, RateCheck, WindowCheck, WindowMode};
use crate::{Outcome, Probe, human_ms, span_ms};
use jiff::civil::Weekday;

pub(crate) fn run(kind: &CheckKind, probe: &Probe) -> Outcome {
    match kind {
        CheckKind::MaintenanceWindow(c) => window(c, probe),
        CheckKind::CircuitBreaker(c) => breaker(c, probe),
        CheckKind::Rate(c) => rate(c, probe),
        // Not reached: the runner sends every other kind to a thread. Unknown keeps it total.
        other => Outcome::unknown(format!("{} is not a pure check", other.name())),
    }
}

fn window(check: &WindowCheck, probe: &Probe) -> Outcome {
    let minute = probe.local_minute_of_day;
    if minute >= 24 * 60 {
        return Outcome::unknown(format!("local minute of day {minute} is out of range"));
    }
    let now = describe_now(probe.local_weekday, minute);
    let inside = check
        .windows
        .iter()
        .find(|w| w.contains(probe.local_weekday, minute));
    let list = || {
        check
            .windows
            .iter()
            .map(|w| w.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (check.mode, inside) {
        (WindowMode::Outside, None) => Outcome::matched(format!(
            "now ({now}) is outside every change window ({})",
            list()
        )),
        (WindowMode::Outside, Some(w)) => {
            Outcome::clear(format!("now ({now}) is inside the change window {w}"))
        }
        (WindowMode::Inside, Some(w)) => {
            Outcome::matched(format!("now ({now}) is inside the freeze {w}"))
        }
        (WindowMode::Inside, None) => {
            Outcome::clear(format!("now ({now}) is outside every freeze ({})", list()))
        }
    }
}

fn breaker(check: &CircuitBreakerCheck, probe: &Probe) -> Outcome {
    let since = probe.now_ms.saturating_sub(span_ms(check.within));
    let within = human_ms(u64::try_from(span_ms(check.within)).unwrap_or(u64::MAX));
    match probe
        .history
        .failures_since(probe.actor_kind, probe.actor_id, probe.fingerprint, since)
    {
        Err(e) => Outcome::unknown(format!("could not read the failure history: {e}")),
        Ok(n) if n >= check.failures => Outcome::matched(format!(
            "{} {} failed this action {n} times in the last {within} (limit {})",
            probe.actor_kind, probe.actor_id, check.failures
        )),
        Ok(n) => Outcome::clear(format!(
            "{n} failures in the last {within} (limit {})",
            check.failures
        )),
    }
}

fn rate(check: &RateCheck, probe: &Probe) -> Outcome {
    let since = probe.now_ms.saturating_sub(span_ms(check.within));
    let within = human_ms(u64::try_from(span_ms(check.within)).unwrap_or(u64::MAX));
    match probe
        .history
        .allowed_since(probe.actor_kind, probe.actor_id, probe.tool, since)
    {
        Err(e) => Outcome::unknown(format!("could not count past actions: {e}")),
        Ok(n) if n >= check.max => Outcome::matched(format!(
            "{} {} was already allowed {} {n} times in the last {within} (at most {})",
            probe.actor_kind, probe.actor_id, probe.tool, check.max
        )),
        Ok(n) => Outcome::clear(format!(
            "{n} allowed {} in the last {within} (at most {})",
            probe.tool, check.max
        )),
    }
}

/// The weekday and minute of day a window is judged by, as `HH:MM` for details.
fn describe_now(weekday: Weekday, minute: u16) -> String {
    let name = match weekday {
        Weekday::Monday => "Mon",
        Weekday::Tuesday => "Tue",
        Weekday::Wednesday => "Wed",
        Weekday::Thursday => "Thu",
        Weekday::Friday => "Fri",
        Weekday::Saturday => "Sat",
        Weekday::Sunday => "Sun",
    };
    format!("{name} {:02}:{:02}", minute / 60, minute % 60)
}
