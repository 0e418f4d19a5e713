//! The one since/until grammar: points in time as operators type them, for the CLI's
//! `--since`, `--until` and `--now`, `NIGHTWATCH_NOW`, and the daemon's API and pages.

use crate::duration::parse_duration;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, ToSpan, Zoned, civil};

/// Longest stretch of the offending text an error repeats.
const SHOWN_CHARS: usize = 64;

/// Why a text is not a point in time.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InstantError {
    #[error(
        "{0:?} is neither a time (RFC 3339 like 2026-02-14T03:17:00Z, a date, a clock time like \
         2am or 14:30, now, today or yesterday) nor a span before now (90m, 2h, 3d, 2h ago) or \
         after it (+6d)"
    )]
    Unreadable(String),
    #[error("{text:?} is out of range: {reason}")]
    OutOfRange { text: String, reason: String },
}

/// A point in time, in unix milliseconds, from what an operator typed. `now` and `zone` are the
/// caller's: nothing here reads a clock or the system's zone.
///
/// - RFC 3339 (`2026-02-14T03:17:22Z`, `2026-02-14T03:17:22+01:00`);
/// - a local date and time without an offset (`2026-02-14T03:17`, `2026-02-14 03:17:22`) or a
///   date (`2026-02-14`, local midnight), in `zone`;
/// - a duration ago, in the [`parse_duration`](crate::parse_duration) grammar: `90m`, `2h`,
///   `1h30m`, `3d`, also written `2h ago` or `-2h`;
/// - a duration ahead: `+6d`, `+2h` (for a simulated `--now`);
/// - a clock time: `2am`, `2:30pm`, `14:00`, `14:00:05` (the latest such time not after now);
/// - `now`, `today` (local midnight), `yesterday` (the midnight before).
pub fn parse_instant(text: &str, now: Timestamp, zone: &TimeZone) -> Result<i64, InstantError> {
    let text = text.trim();
    let shown = || text.chars().take(SHOWN_CHARS).collect::<String>();
    let out_of_range = |e: &dyn std::fmt::Display| InstantError::OutOfRange {
        text: shown(),
        reason: e.to_string(),
    };
    let lower = text.to_ascii_lowercase();
    let local_now = now.to_zoned(zone.clone());
    let midnight = |zoned: &Zoned| -> Result<i64, InstantError> {
        zoned
            .date()
            .to_zoned(zone.clone())
            .map(|z| z.timestamp().as_millisecond())
            .map_err(|e| out_of_range(&e))
    };
    match lower.as_str() {
        "now" => return Ok(now.as_millisecond()),
        "today" => return midnight(&local_now),
        "yesterday" => {
            let day_before = local_now
                .checked_sub(1.day())
                .map_err(|e| out_of_range(&e))?;
            return midnight(&day_before);
        }
        _ => {}
    }
    if let Ok(timestamp) = text.parse::<Timestamp>() {
        return Ok(timestamp.as_millisecond());
    }
    if let Ok(datetime) = text.parse::<civil::DateTime>() {
        // A bare date parses as a date-time at midnight, which is what a date means here.
        return datetime
            .to_zoned(zone.clone())
            .map(|z| z.timestamp().as_millisecond())
            .map_err(|e| out_of_range(&e));
    }
    if let Some((sign, span)) = relative(&lower) {
        let duration = parse_duration(span).map_err(|e| match e.problem {
            crate::DurationProblem::TooLong => out_of_range(&e.problem),
            _ => InstantError::Unreadable(shown()),
        })?;
        let offset = SignedDuration::try_from(duration).map_err(|e| out_of_range(&e))?;
        let moved = if sign < 0 {
            now.checked_sub(offset)
        } else {
            now.checked_add(offset)
        };
        return moved
            .map(|t| t.as_millisecond())
            .map_err(|e| out_of_range(&e));
    }
    if let Some(time) = clock_time(&lower) {
        let today = local_now
            .date()
            .to_datetime(time)
            .to_zoned(zone.clone())
            .map_err(|e| out_of_range(&e))?;
        let at = if today.timestamp() > now {
            today.checked_sub(1.day()).map_err(|e| out_of_range(&e))?
        } else {
            today
        };
        return Ok(at.timestamp().as_millisecond());
    }
    Err(InstantError::Unreadable(shown()))
}

/// `+6d` ahead (1); `2h`, `2h ago`, `-2h` back (-1); with the duration's text. `None` when the
/// text cannot be a relative time (a clock time such as `2am` is tried next).
fn relative(lower: &str) -> Option<(i8, &str)> {
    let (sign, rest) = if let Some(rest) = lower.strip_prefix('+') {
        (1, rest)
    } else if let Some(rest) = lower.strip_prefix('-') {
        (-1, rest)
    } else {
        (-1, lower.strip_suffix("ago").map_or(lower, str::trim_end))
    };
    let rest = rest.trim_start();
    // A duration starts with a digit; `2am` and `14:00` are clock times, not spans.
    let starts_right = rest.starts_with(|c: char| c.is_ascii_digit());
    let is_clock = clock_time(lower).is_some();
    (starts_right && !is_clock).then_some((sign, rest))
}

/// `2am`, `2:30pm`, `12am` (midnight), `14:00`, `14:00:05`.
fn clock_time(text: &str) -> Option<civil::Time> {
    let (body, meridiem) = if let Some(body) = text.strip_suffix("am") {
        (body.trim(), Some(false))
    } else if let Some(body) = text.strip_suffix("pm") {
        (body.trim(), Some(true))
    } else {
        (text, None)
    };
    let mut parts = body.split(':');
    let hour: i8 = parts.next()?.parse().ok()?;
    let minute: i8 = parts.next().map_or(Some(0), |m| m.parse().ok())?;
    let second: i8 = parts.next().map_or(Some(0), |s| s.parse().ok())?;
    if parts.next().is_some() || (meridiem.is_none() && !body.contains(':')) {
        return None;
    }
    let hour = match meridiem {
        Some(pm) if (1..=12).contains(&hour) => (hour % 12) + if pm { 12 } else { 0 },
        Some(_) => return None,
        None => hour,
    };
    civil::Time::new(hour, minute, second, 0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn now() -> Timestamp {
        // 2026-02-14 03:30 UTC.
        "2026-02-14T03:30:00Z".parse().expect("valid")
    }

    fn at_in(text: &str, zone: &TimeZone) -> Result<String, InstantError> {
        parse_instant(text, now(), zone).map(|ms| {
            Timestamp::from_millisecond(ms)
                .map(|t| t.to_string())
                .unwrap_or_default()
        })
    }

    fn at(text: &str) -> Result<String, InstantError> {
        at_in(text, &TimeZone::UTC)
    }

    #[test]
    fn operator_times_are_read() {
        let cases = [
            ("2am", "2026-02-14T02:00:00Z"),
            ("3:30am", "2026-02-14T03:30:00Z"),
            ("11pm", "2026-02-13T23:00:00Z"),
            ("12am", "2026-02-14T00:00:00Z"),
            ("2 AM", "2026-02-14T02:00:00Z"),
            ("14:00", "2026-02-13T14:00:00Z"),
            ("90m", "2026-02-14T02:00:00Z"),
            ("2h", "2026-02-14T01:30:00Z"),
            ("1h30m", "2026-02-14T02:00:00Z"),
            ("1d", "2026-02-13T03:30:00Z"),
            ("90minutes", "2026-02-14T02:00:00Z"),
            ("2h ago", "2026-02-14T01:30:00Z"),
            ("-1h", "2026-02-14T02:30:00Z"),
            ("+6d", "2026-02-20T03:30:00Z"),
            ("+2h", "2026-02-14T05:30:00Z"),
            ("now", "2026-02-14T03:30:00Z"),
            ("today", "2026-02-14T00:00:00Z"),
            ("yesterday", "2026-02-13T00:00:00Z"),
            ("Yesterday", "2026-02-13T00:00:00Z"),
            ("2026-02-13T23:47:14Z", "2026-02-13T23:47:14Z"),
            ("2026-02-13T23:47:14+01:00", "2026-02-13T22:47:14Z"),
            ("2026-02-10", "2026-02-10T00:00:00Z"),
            ("2026-02-14T01:30", "2026-02-14T01:30:00Z"),
            ("2026-02-14 01:30:05", "2026-02-14T01:30:05Z"),
        ];
        for (text, expected) in cases {
            assert_eq!(at(text).as_deref(), Ok(expected), "{text}");
        }
    }

    #[test]
    fn the_zone_is_the_callers() {
        let paris = TimeZone::get("Europe/Paris").expect("tzdb");
        for (text, expected) in [
            // 03:30 UTC is 04:30 in Paris: 2am there is 01:00 UTC today.
            ("2am", "2026-02-14T01:00:00Z"),
            ("today", "2026-02-13T23:00:00Z"),
            ("yesterday", "2026-02-12T23:00:00Z"),
            ("2026-02-10", "2026-02-09T23:00:00Z"),
            ("2026-02-14T01:30", "2026-02-14T00:30:00Z"),
            // Offsets and spans do not depend on the zone.
            ("2026-02-13T23:47:14Z", "2026-02-13T23:47:14Z"),
            ("90m", "2026-02-14T02:00:00Z"),
        ] {
            assert_eq!(at_in(text, &paris).as_deref(), Ok(expected), "{text}");
        }
    }

    #[test]
    fn nonsense_is_refused_with_the_forms_that_work() {
        for text in [
            "",
            "soon",
            "25:00",
            "13pm",
            "2x",
            "+",
            "+soon",
            "in 2h",
            "2h from now",
            "1.5h",
            "+-2h",
            "12",
        ] {
            let error = at(text).expect_err(text);
            assert!(
                matches!(error, InstantError::Unreadable(_)),
                "{text}: {error}"
            );
            assert!(error.to_string().contains("RFC 3339"), "{text}");
        }
        for text in [
            "99999999999999999999m",
            "+9223372036854775807ms",
            "-9999999w",
        ] {
            let error = at(text).expect_err(text);
            assert!(
                matches!(error, InstantError::OutOfRange { .. }),
                "{text}: {error}"
            );
        }
    }

    proptest! {
        #[test]
        fn never_panics(text in "\\PC{0,30}") {
            let _ = parse_instant(&text, now(), &TimeZone::UTC);
        }

        #[test]
        fn a_span_ago_and_ahead_mirror_each_other(minutes in 0i64..10_000_000) {
            let back = parse_instant(&format!("{minutes}m"), now(), &TimeZone::UTC).unwrap();
            let ahead = parse_instant(&format!("+{minutes}m"), now(), &TimeZone::UTC).unwrap();
            prop_assert_eq!(ahead - now().as_millisecond(), now().as_millisecond() - back);
        }
    }
}
