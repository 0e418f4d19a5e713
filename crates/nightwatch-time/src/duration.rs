//! The one duration grammar.
//!
//! A duration is one or more groups of a whole number and a unit, largest unit first, each unit
//! at most once: `90s`, `15m`, `2h`, `7d`, `1h30m`, `500ms`, `1w2d`. Spaces may stand between a
//! number and its unit and between groups (`2 hours`, `1h 30m`), and units may be spelt out
//! (`ms`/`msec`/`millisecond(s)`, `s`/`sec(s)`/`second(s)`, `m`/`min(s)`/`minute(s)`,
//! `h`/`hr(s)`/`hour(s)`, `d`/`day(s)`, `w`/`wk(s)`/`week(s)`), in any case.
//!
//! Refused, each with its reason: an empty text, a sign (`-5m`; a future or past is the
//! instant grammar's business), a number without a unit (`30`), a unit without a number, a
//! fraction (`1.5h`: write `1h30m`), units out of order or repeated, anything else, and a total
//! over [`MAX_DURATION`]. Callers add their own bounds (a check's timeout is at most 60s).

use std::fmt;
use std::time::Duration;

/// The longest duration read: whole milliseconds that fit an `i64`, so a duration can always be
/// added to or taken from a millisecond timestamp without wrapping.
pub const MAX_DURATION: Duration = Duration::from_millis(i64::MAX as u64);

/// Longest stretch of the offending text an error repeats.
const SHOWN_CHARS: usize = 64;

/// Why a text is not a duration. Shows the text and the reason, and what to write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a duration: {problem} (write e.g. 90s, 15m, 1h30m, 7d or 500ms)")]
pub struct DurationError {
    /// The text as given, cut to 64 characters.
    pub text: String,
    pub problem: DurationProblem,
}

/// What is wrong with a duration's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationProblem {
    #[error("it is empty")]
    Empty,
    #[error("it must not be negative")]
    Negative,
    #[error("expected a number")]
    NoNumber,
    #[error("a number needs a unit designator (ms, s, m, h, d or w)")]
    NoUnit,
    #[error("the units are ms, s, m, h, d and w")]
    UnknownUnit,
    #[error("write whole numbers (1h30m, not 1.5h)")]
    Fraction,
    #[error("units go from the largest to the smallest, each once (1h30m, not 30m1h)")]
    Order,
    #[error("it is too long")]
    TooLong,
}

/// The units, largest first, with every spelling read.
const UNITS: [(&[&str], u64); 6] = [
    (&["w", "wk", "wks", "week", "weeks"], 7 * 86_400_000),
    (&["d", "day", "days"], 86_400_000),
    (&["h", "hr", "hrs", "hour", "hours"], 3_600_000),
    (&["m", "min", "mins", "minute", "minutes"], 60_000),
    (&["s", "sec", "secs", "second", "seconds"], 1_000),
    (&["ms", "msec", "msecs", "millisecond", "milliseconds"], 1),
];

/// Reads a duration in the one grammar (see the module documentation).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let bad = |problem| DurationError {
        text: text.chars().take(SHOWN_CHARS).collect(),
        problem,
    };
    let trimmed = text.trim();
    let bytes = trimmed.as_bytes();
    match bytes.first() {
        None => return Err(bad(DurationProblem::Empty)),
        Some(b'-') => return Err(bad(DurationProblem::Negative)),
        Some(_) => {}
    }
    let mut total: u64 = 0;
    // Index into UNITS of the last unit read: the next must be smaller.
    let mut last_unit: Option<usize> = None;
    let mut at = 0;
    while at < bytes.len() {
        let digits = run(bytes, at, |b| b.is_ascii_digit());
        if digits == 0 {
            return Err(bad(DurationProblem::NoNumber));
        }
        // Every byte of the run is an ASCII digit, so the slice is on char boundaries.
        let count: u64 = trimmed[at..at + digits]
            .parse()
            .map_err(|_| bad(DurationProblem::TooLong))?;
        at += digits;
        if matches!(bytes.get(at), Some(b'.' | b',')) {
            return Err(bad(DurationProblem::Fraction));
        }
        at += run(bytes, at, |b| b.is_ascii_whitespace());
        let letters = run(bytes, at, |b| b.is_ascii_alphabetic());
        if letters == 0 {
            return Err(bad(match bytes.get(at) {
                None => DurationProblem::NoUnit,
                Some(b) if b.is_ascii_digit() => DurationProblem::NoUnit,
                Some(_) => DurationProblem::UnknownUnit,
            }));
        }
        let unit = trimmed[at..at + letters].to_ascii_lowercase();
        at += letters;
        let index = UNITS
            .iter()
            .position(|(names, _)| names.contains(&unit.as_str()))
            .ok_or_else(|| bad(DurationProblem::UnknownUnit))?;
        if last_unit.is_some_and(|last| index <= last) {
            return Err(bad(DurationProblem::Order));
        }
        last_unit = Some(index);
        total = count
            .checked_mul(UNITS[index].1)
            .and_then(|ms| total.checked_add(ms))
            .filter(|&ms| ms <= MAX_DURATION.as_millis() as u64)
            .ok_or_else(|| bad(DurationProblem::TooLong))?;
        at += run(bytes, at, |b| b.is_ascii_whitespace());
    }
    Ok(Duration::from_millis(total))
}

/// How many bytes from `at` satisfy `keep`.
fn run(bytes: &[u8], at: usize, keep: impl Fn(u8) -> bool) -> usize {
    bytes[at..].iter().take_while(|&&b| keep(b)).count()
}

/// Writes a duration the way [`parse_duration`] reads it, compact and exact to the
/// millisecond: `1h30m`, `2d`, `1s500ms`, `0s`. Anything below a millisecond is left out.
pub fn format_duration(duration: Duration) -> String {
    Compact(duration).to_string()
}

struct Compact(Duration);

impl fmt::Display for Compact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0.as_millis();
        if rest == 0 {
            return f.write_str("0s");
        }
        // Weeks are left to days: `14d` reads more easily than `2w`.
        for (names, unit_ms) in &UNITS[1..] {
            let unit_ms = u128::from(*unit_ms);
            let count = rest / unit_ms;
            if count > 0 {
                write!(f, "{count}{}", names[0])?;
                rest -= count * unit_ms;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(text: &str) -> Result<u128, DurationProblem> {
        parse_duration(text)
            .map(|d| d.as_millis())
            .map_err(|e| e.problem)
    }

    #[test]
    fn the_documented_forms_are_read() {
        for (text, want) in [
            ("90s", 90_000),
            ("15m", 900_000),
            ("2h", 7_200_000),
            ("7d", 604_800_000),
            ("1h30m", 5_400_000),
            ("500ms", 500),
            ("0s", 0),
            ("1w", 604_800_000),
            ("1d12h", 129_600_000),
            ("1h 30m", 5_400_000),
            ("2 hours", 7_200_000),
            ("90minutes", 5_400_000),
            ("1 hour 30 min", 5_400_000),
            ("1500ms", 1_500),
            (" 5m ", 300_000),
            ("5M", 300_000),
            ("1s500ms", 1_500),
            ("007s", 7_000),
        ] {
            assert_eq!(ms(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn hostile_durations_are_refused_with_a_reason() {
        use DurationProblem::*;
        for (text, want) in [
            ("", Empty),
            ("   ", Empty),
            ("-5m", Negative),
            ("-0s", Negative),
            ("+5m", NoNumber),
            ("m", NoNumber),
            ("30", NoUnit),
            ("1h30", NoUnit),
            ("1 2h", NoUnit),
            ("5x", UnknownUnit),
            ("5 parsecs", UnknownUnit),
            ("soon", NoNumber),
            ("40 minutes ago", NoNumber),
            ("1.5h", Fraction),
            ("1,5h", Fraction),
            ("30m1h", Order),
            ("1h1h", Order),
            ("5s5ms5s", Order),
            ("99999999999999999999999h", TooLong),
            ("18446744073709551615ms", TooLong),
            ("9223372036854775808ms", TooLong),
            ("PT30M", NoNumber),
            ("5m\0", NoNumber),
            ("5mé", NoNumber),
            ("é", NoNumber),
            ("5 m ago", NoNumber),
            ("5\u{a0}m", UnknownUnit),
        ] {
            assert_eq!(ms(text), Err(want), "{text:?}");
        }
        assert_eq!(ms("9223372036854775807ms"), Ok(i64::MAX as u128));
    }

    #[test]
    fn an_error_names_the_text_and_what_to_write() {
        let e = parse_duration("30").unwrap_err().to_string();
        assert!(e.contains("\"30\""), "{e}");
        assert!(e.contains("needs a unit designator"), "{e}");
        assert!(e.contains("1h30m"), "{e}");
        let long = "9".repeat(500);
        assert!(parse_duration(&long).unwrap_err().text.len() <= SHOWN_CHARS);
    }

    #[test]
    fn formatting_is_compact() {
        for (ms, text) in [
            (0, "0s"),
            (500, "500ms"),
            (1_500, "1s500ms"),
            (5_400_000, "1h30m"),
            (1_209_600_000, "14d"),
            (86_400_001, "1d1ms"),
        ] {
            assert_eq!(format_duration(Duration::from_millis(ms)), text, "{ms}");
        }
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(ms in 0u64..=i64::MAX as u64) {
            let duration = Duration::from_millis(ms);
            prop_assert_eq!(parse_duration(&format_duration(duration)), Ok(duration));
        }

        #[test]
        fn the_parser_never_panics(text in "\\PC{0,40}") {
            let _ = parse_duration(&text);
        }

        #[test]
        fn the_parser_never_panics_on_near_misses(text in "[0-9 .,+-]{0,6}[a-zA-Z]{0,8}[0-9 ]{0,4}[a-z]{0,3}") {
            if let Ok(d) = parse_duration(&text) {
                prop_assert!(d <= MAX_DURATION);
            }
        }
    }
}
