//! Times as operators type them: `2am`, `14:30`, `90m`, `3d`, `yesterday`, RFC 3339.
//!
//! Pure: `now` and the time zone come from the caller, so tests need no clock.

use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan, Zoned, civil};

/// A point in time, in unix milliseconds, from what an operator typed.
///
/// - RFC 3339 (`2026-02-14T03:17:22Z`, `2026-02-14T03:17:22+01:00`) or a date (`2026-02-14`,
///   local midnight);
/// - a duration ago: `90s`, `90m`, `2h`, `3d`, `1w`;
/// - a clock time: `2am`, `2:30pm`, `14:00` (the latest such time not after now);
/// - `now`, `today` (local midnight), `yesterday` (the midnight before).
pub fn parse(text: &str, now: Timestamp, zone: &TimeZone) -> Result<i64, String> {
    let text = text.trim();
    let lower = text.to_ascii_lowercase();
    let local_now = now.to_zoned(zone.clone());
    let midnight = |zoned: &Zoned| -> Result<i64, String> {
        zoned
            .date()
            .to_zoned(zone.clone())
            .map(|z| z.timestamp().as_millisecond())
            .map_err(|e| e.to_string())
    };
    match lower.as_str() {
        "" => return Err("an empty time".to_owned()),
        "now" => return Ok(now.as_millisecond()),
        "today" => return midnight(&local_now),
        "yesterday" => {
            let day_before = local_now.checked_sub(1.day()).map_err(|e| e.to_string())?;
            return midnight(&day_before);
        }
        _ => {}
    }
    if let Ok(timestamp) = text.parse::<Timestamp>() {
        return Ok(timestamp.as_millisecond());
    }
    if let Ok(date) = text.parse::<civil::Date>() {
        return date
            .to_zoned(zone.clone())
            .map(|z| z.timestamp().as_millisecond())
            .map_err(|e| e.to_string());
    }
    if let Some(ago) = duration_ago(&lower) {
        return Ok(now.as_millisecond().saturating_sub(ago));
    }
    if let Some(time) = clock_time(&lower) {
        let today = local_now
            .date()
            .to_datetime(time)
            .to_zoned(zone.clone())
            .map_err(|e| e.to_string())?;
        let at = if today.timestamp() > now {
            today.checked_sub(1.day()).map_err(|e| e.to_string())?
        } else {
            today
        };
        return Ok(at.timestamp().as_millisecond());
    }
    Err(format!(
        "cannot read the time {text:?}: use RFC 3339 (2026-02-14T03:17:00Z), a date, \
         a duration ago (90m, 2h, 3d), a clock time (2am, 14:30), today or yesterday"
    ))
}

/// `90s`, `90m`, `2h`, `3d`, `1w` in milliseconds.
fn duration_ago(text: &str) -> Option<i64> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = text.split_at(split);
    let count: i64 = digits.parse().ok()?;
    let unit_ms: i64 = match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        "w" | "week" | "weeks" => 604_800_000,
        _ => return None,
    };
    count.checked_mul(unit_ms)
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

    fn at(text: &str) -> Result<String, String> {
        // 2026-02-14 03:30 UTC, read in UTC.
        let now: Timestamp = "2026-02-14T03:30:00Z".parse().expect("valid");
        parse(text, now, &TimeZone::UTC).map(|ms| {
            Timestamp::from_millisecond(ms)
                .map(|t| t.to_string())
                .unwrap_or_default()
        })
    }

    #[test]
    fn operator_times_are_read() {
        let cases = [
            ("2am", "2026-02-14T02:00:00Z"),
            ("3:30am", "2026-02-14T03:30:00Z"),
            ("11pm", "2026-02-13T23:00:00Z"),
            ("12am", "2026-02-14T00:00:00Z"),
            ("14:00", "2026-02-13T14:00:00Z"),
            ("90m", "2026-02-14T02:00:00Z"),
            ("2h", "2026-02-14T01:30:00Z"),
            ("1d", "2026-02-13T03:30:00Z"),
            ("today", "2026-02-14T00:00:00Z"),
            ("yesterday", "2026-02-13T00:00:00Z"),
            ("2026-02-13T23:47:14Z", "2026-02-13T23:47:14Z"),
            ("2026-02-13T23:47:14+01:00", "2026-02-13T22:47:14Z"),
            ("2026-02-10", "2026-02-10T00:00:00Z"),
        ];
        for (text, expected) in cases {
            assert_eq!(at(text).as_deref(), Ok(expected), "{text}");
        }
    }

    #[test]
    fn nonsense_is_refused_with_the_forms_that_work() {
        for text in ["", "soon", "25:00", "13pm", "2x", "99999999999999999999m"] {
            let error = at(text).expect_err(text);
            assert!(!error.is_empty(), "{text}");
        }
        assert!(at("soon").unwrap_err().contains("RFC 3339"));
    }
}
