//! The clock: unsynchronised (`timedatectl`), skewed against another clock (HTTP `Date`
//! headers, a reference clock the caller read), and set back (against the monotonic clock).
//! A restored VM that wakes up in the past refuses a rotated certificate weeks later; a
//! clock set back replays schedules and reorders records.

use std::time::Duration;

use serde::Serialize;
use serde_json::json;

use crate::{Check, Hazard, Seen, millis};

/// What `timedatectl` said about time synchronisation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TimeSync {
    /// `NTPSynchronized` / `System clock synchronized` / `NTP synchronized`.
    pub synchronized: Option<bool>,
    /// NTP asked for: `NTP` / `NTP service: active` / `Network time on`.
    pub ntp: Option<bool>,
    /// An NTP service is there to ask: `CanNTP` / `NTP service` other than `n/a`.
    pub can_ntp: Option<bool>,
    pub timezone: Option<String>,
    /// The time it printed (`TimeUSec` / `Universal time`), as printed.
    pub time: Option<String>,
}

impl TimeSync {
    fn says_anything(&self) -> bool {
        self.synchronized.is_some() || self.ntp.is_some() || self.can_ntp.is_some()
    }
}

fn yes_no(value: &str) -> Option<bool> {
    match value.trim() {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

/// `timedatectl show`: `Key=value` lines. `None` when none of the keys that matter is there.
pub fn parse_show(text: &str) -> Option<TimeSync> {
    let mut sync = TimeSync::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match key.trim() {
            "NTPSynchronized" => sync.synchronized = yes_no(value),
            "NTP" => sync.ntp = yes_no(value),
            "CanNTP" => sync.can_ntp = yes_no(value),
            "Timezone" => sync.timezone = Some(value.trim().to_owned()),
            "TimeUSec" => sync.time = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    sync.says_anything().then_some(sync)
}

/// `timedatectl status` (or plain `timedatectl`): aligned `Name: value` lines, in the form
/// of systemd 239 and later (`System clock synchronized`, `NTP service`) or before it
/// (`NTP synchronized`, `Network time on`). `None` when none of them is there.
pub fn parse_status(text: &str) -> Option<TimeSync> {
    let mut sync = TimeSync::default();
    for line in text.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim() {
            "System clock synchronized" | "NTP synchronized" => sync.synchronized = yes_no(value),
            "NTP service" => {
                (sync.ntp, sync.can_ntp) = match value {
                    "active" => (Some(true), Some(true)),
                    "inactive" => (Some(false), Some(true)),
                    "n/a" => (Some(false), Some(false)),
                    _ => (None, None),
                }
            }
            "Network time on" => sync.ntp = yes_no(value),
            // The zone's line is `Etc/UTC (UTC, +0000)`.
            "Time zone" => sync.timezone = value.split_whitespace().next().map(str::to_owned),
            "Universal time" => sync.time = Some(value.to_owned()),
            _ => {}
        }
    }
    sync.says_anything().then_some(sync)
}

/// What a run of `timedatectl` printed, read: its answer, or why there is none (the first
/// lines of its stderr, bounded). `show` is tried first; the human form is read too, so
/// either verb's output (or an older systemd's) is understood.
pub fn interpret(stdout: &str, stderr: &str, succeeded: bool) -> Result<TimeSync, String> {
    if succeeded && let Some(sync) = parse_show(stdout).or_else(|| parse_status(stdout)) {
        return Ok(sync);
    }
    let said: String = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .collect::<Vec<_>>()
        .join("; ")
        .chars()
        .take(400)
        .collect();
    Err(match (succeeded, said.is_empty()) {
        (true, true) => "printed nothing about synchronisation".to_owned(),
        (true, false) => format!("printed nothing about synchronisation ({said})"),
        (false, true) => "failed without saying why".to_owned(),
        (false, false) => said,
    })
}

/// Judges what `timedatectl` said, or why it said nothing.
pub fn judge_timedatectl(answer: Result<TimeSync, String>) -> Check {
    let subject = "timedatectl";
    let sync = match answer {
        Ok(sync) => sync,
        Err(why) => {
            let what = if why.contains("not been booted with systemd") {
                format!(
                    "timedatectl cannot ask systemd here (it is not PID 1, a container?): {why}"
                )
            } else {
                format!("timedatectl could not tell: {why}")
            };
            return Check::new(
                Hazard::ClockUnsynchronised,
                subject,
                Seen::Unknown,
                what,
                "ask the time service itself (chronyc tracking, ntpq -p, timedatectl timesync-status), \
                 or watch the host's clock from where systemd runs",
            )
            .with(json!({"error": why}));
        }
    };
    let evidence = serde_json::to_value(&sync).unwrap_or_default();
    let check = |seen, what: &str, fix: &str| {
        Check::new(Hazard::ClockUnsynchronised, subject, seen, what, fix).with(evidence.clone())
    };
    match (sync.synchronized, sync.ntp, sync.can_ntp) {
        (Some(true), _, _) => check(Seen::Ok, "the system clock is synchronised", ""),
        (Some(false), _, Some(false)) => check(
            Seen::Found,
            "the system clock is not synchronised and no NTP service is installed",
            "install one (apt install systemd-timesyncd, or chrony) and timedatectl set-ntp true",
        ),
        (Some(false), Some(false), _) => check(
            Seen::Found,
            "the system clock is not synchronised: NTP is off",
            "timedatectl set-ntp true",
        ),
        (Some(false), _, _) => check(
            Seen::Found,
            "the system clock is not synchronised although NTP is on",
            "check that the NTP servers answer (timedatectl timesync-status, chronyc sources; \
             outbound UDP 123)",
        ),
        (None, _, _) => check(
            Seen::Unknown,
            "timedatectl did not say whether the clock is synchronised",
            "ask the time service itself (chronyc tracking, ntpq -p)",
        ),
    }
}

/// A `Date` header (RFC 9110's IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`), Unix ms.
pub fn parse_http_date(text: &str) -> Option<i64> {
    jiff::fmt::rfc2822::DateTimeParser::new()
        .parse_timestamp(text.trim())
        .ok()
        .map(|t| t.as_millisecond())
}

fn span(ms: i64) -> String {
    nightwatch_time::format_duration(Duration::from_millis(ms.unsigned_abs()))
}

/// The local clock against a server's `Date` header. The request left at `sent_ms` and its
/// answer came at `received_ms` (local clock); the server stamped it within that window, to
/// the second it printed (so within `[date, date + 1s)`). Skew is found only when no
/// reading in both windows is within `max_skew`: the round trip and the header's resolution
/// are never mistaken for skew.
pub fn judge_http_date(
    url: &str,
    sent_ms: i64,
    received_ms: i64,
    date: Option<&str>,
    max_skew: Duration,
) -> Check {
    let subject = format!("Date of {url}");
    let fix = "synchronise the clock (timedatectl set-ntp true; chronyc makestep), or, if this \
               host is right, the server's";
    let Some(header) = date else {
        return Check::new(
            Hazard::ClockSkew,
            subject,
            Seen::Unknown,
            format!("{url} answered without a Date header"),
            "name a URL whose server sends Date (most do)",
        );
    };
    let Some(server_ms) = parse_http_date(header) else {
        return Check::new(
            Hazard::ClockSkew,
            subject,
            Seen::Unknown,
            format!("{url} sent a Date header that does not read: {header:?}"),
            "name a URL whose server sends an RFC 9110 date",
        )
        .with(json!({"date": header}));
    };
    let max = millis(max_skew);
    // The local clock minus the server's lies in [least, most].
    let least = sent_ms.saturating_sub(server_ms.saturating_add(1000));
    let most = received_ms.saturating_sub(server_ms);
    let estimate = (sent_ms / 2 + received_ms / 2).saturating_sub(server_ms.saturating_add(500));
    let evidence = json!({
        "date": header,
        "sent_ms": sent_ms,
        "received_ms": received_ms,
        "server_ms": server_ms,
        "skew_ms": estimate,
        "bounds_ms": [least, most],
        "max_skew_ms": max,
    });
    let (seen, what) = if least > max {
        (
            Seen::Found,
            format!(
                "this host's clock is {} ahead of {url}'s (at least {}; allowed {})",
                span(estimate),
                span(least),
                span(max)
            ),
        )
    } else if most < -max {
        (
            Seen::Found,
            format!(
                "this host's clock is {} behind {url}'s (at least {}; allowed {})",
                span(estimate),
                span(most),
                span(max)
            ),
        )
    } else {
        (
            Seen::Ok,
            format!("this host's clock agrees with {url}'s within {}", span(max)),
        )
    };
    let fix = if seen == Seen::Found { fix } else { "" };
    Check::new(Hazard::ClockSkew, subject, seen, what, fix).with(evidence)
}

/// The local clock against a reference clock the caller read just before (the fleet
/// database's `now()`).
pub fn judge_reference(now_ms: i64, reference_ms: i64, max_skew: Duration) -> Check {
    let skew = now_ms.saturating_sub(reference_ms);
    let max = millis(max_skew);
    let evidence = json!({"now_ms": now_ms, "reference_ms": reference_ms, "skew_ms": skew, "max_skew_ms": max});
    let subject = "reference clock";
    if skew.unsigned_abs() > max.unsigned_abs() {
        let side = if skew > 0 { "ahead of" } else { "behind" };
        Check::new(
            Hazard::ClockSkew,
            subject,
            Seen::Found,
            format!(
                "this host's clock is {} {side} the reference clock (allowed {})",
                span(skew),
                span(max)
            ),
            "synchronise both to the same NTP servers (timedatectl set-ntp true; chronyc makestep)",
        )
    } else {
        Check::new(
            Hazard::ClockSkew,
            subject,
            Seen::Ok,
            format!(
                "this host's clock agrees with the reference clock within {}",
                span(max)
            ),
            "",
        )
    }
    .with(evidence)
}

/// The wall clock since the caller's last reading (`last_ms`), against the monotonic time
/// that passed (`elapsed`). Losing more than `max_skew` against it is a clock set back. Moving
/// further than the monotonic clock is not: Linux's monotonic clock stops while the host
/// is suspended or the VM paused, and the wall clock catches up on resume.
pub fn judge_jump(last_ms: i64, now_ms: i64, elapsed: Duration, max_skew: Duration) -> Check {
    let moved = now_ms.saturating_sub(last_ms);
    let passed = millis(elapsed);
    let lost = passed.saturating_sub(moved);
    let evidence = json!({"last_ms": last_ms, "now_ms": now_ms, "wall_moved_ms": moved, "monotonic_ms": passed});
    let subject = "wall clock";
    if lost > millis(max_skew) {
        let what = if moved < 0 {
            format!(
                "the wall clock went backwards by {} (in {} of monotonic time)",
                span(moved),
                span(passed)
            )
        } else {
            format!(
                "the wall clock moved {} while {} passed: it was set back by {}",
                span(moved),
                span(passed),
                span(lost)
            )
        };
        Check::new(
            Hazard::ClockJumpBackwards,
            subject,
            Seen::Found,
            what,
            "find what set it (a restored snapshot, a VM resumed without time sync, an NTP step: \
             journalctl -u systemd-timesyncd -u chrony) and keep NTP on; schedules and records \
             around the jump may repeat or disorder",
        )
    } else {
        Check::new(
            Hazard::ClockJumpBackwards,
            subject,
            Seen::Ok,
            format!(
                "the wall clock moved {} in {} of monotonic time",
                span(moved),
                span(passed)
            ),
            "",
        )
    }
    .with(evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(2);

    #[test]
    fn date_resolution_and_round_trip_are_not_skew() {
        let server = parse_http_date("Wed, 13 Mar 2024 10:15:42 GMT").unwrap();
        // Sent 0.9 s into the server's second, answered 0.3 s later: fine.
        let ok = judge_http_date(
            "u",
            server + 900,
            server + 1200,
            Some("Wed, 13 Mar 2024 10:15:42 GMT"),
            S,
        );
        assert_eq!(ok.seen, Seen::Ok, "{ok:?}");
        // A slow round trip of 10 s hides no skew either way.
        let slow = judge_http_date(
            "u",
            server - 5000,
            server + 5000,
            Some("Wed, 13 Mar 2024 10:15:42 GMT"),
            S,
        );
        assert_eq!(slow.seen, Seen::Ok);
        let ahead = judge_http_date(
            "u",
            server + 3100,
            server + 3150,
            Some("Wed, 13 Mar 2024 10:15:42 GMT"),
            S,
        );
        assert_eq!(ahead.seen, Seen::Found, "{ahead:?}");
        assert!(ahead.what.contains("ahead"));
        let behind = judge_http_date(
            "u",
            server - 2100,
            server - 2050,
            Some("Wed, 13 Mar 2024 10:15:42 GMT"),
            S,
        );
        assert_eq!(behind.seen, Seen::Found);
        assert!(behind.what.contains("behind"));
    }

    #[test]
    fn missing_or_bad_date_is_unknown() {
        assert_eq!(judge_http_date("u", 0, 1, None, S).seen, Seen::Unknown);
        assert_eq!(
            judge_http_date("u", 0, 1, Some("yesterday"), S).seen,
            Seen::Unknown
        );
    }

    #[test]
    fn reference_clock() {
        assert_eq!(judge_reference(10_000, 9_000, S).seen, Seen::Ok);
        assert_eq!(judge_reference(10_000, 13_000, S).seen, Seen::Found);
        assert_eq!(judge_reference(i64::MIN, i64::MAX, S).seen, Seen::Found);
    }

    #[test]
    fn set_back_is_found_and_suspend_is_not() {
        let minute = Duration::from_secs(60);
        assert_eq!(judge_jump(1_000_000, 1_060_000, minute, S).seen, Seen::Ok);
        let back = judge_jump(1_000_000, 900_000, minute, S);
        assert_eq!(back.seen, Seen::Found);
        assert!(back.what.contains("backwards"), "{}", back.what);
        // Moved 10 s in a minute: set back by 50 s.
        assert_eq!(
            judge_jump(1_000_000, 1_010_000, minute, S).seen,
            Seen::Found
        );
        // Moved an hour in a minute of monotonic time: a suspend.
        assert_eq!(judge_jump(1_000_000, 4_600_000, minute, S).seen, Seen::Ok);
    }

    #[test]
    fn failures_are_unknown_with_why() {
        let check = judge_timedatectl(interpret(
            "",
            "System has not been booted with systemd as init system (PID 1). Can't operate.\nFailed to connect to bus: Host is down\n",
            false,
        ));
        assert_eq!(check.seen, Seen::Unknown);
        assert!(check.what.contains("not PID 1"), "{}", check.what);
    }
}
