//! Weekly time windows in local time: `Sat 02:00-06:00`, `Mon-Fri 22:00-06:00`, `12:00-13:00`,
//! `Sat-Sun`. Pure: the caller supplies the weekday and minute of day.

use super::error::WindowError;
use jiff::civil::Weekday;
use std::fmt;
use std::str::FromStr;

const DAY_MINUTES: u16 = 24 * 60;
const ALL_DAYS: u8 = 0b111_1111;

/// A window of local time, on some days of the week (every day when none are written).
///
/// A window whose end is not after its start crosses midnight: it begins on its days and runs
/// into the next morning, so `Fri 22:00-02:00` holds on Friday night and early Saturday.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Bit `n` is the weekday `n` days after Monday.
    days: u8,
    start: u16,
    /// Exclusive; `24:00` is written as 1440.
    end: u16,
    text: String,
}

impl Window {
    /// Whether minute `minute` (0-1439) of `weekday` falls in the window. A minute out of range is
    /// in no window.
    pub fn contains(&self, weekday: Weekday, minute: u16) -> bool {
        if minute >= DAY_MINUTES {
            return false;
        }
        let today = day_bit(weekday);
        let yesterday = day_bit(weekday.previous());
        if self.start < self.end {
            self.days & today != 0 && self.start <= minute && minute < self.end
        } else {
            (self.days & today != 0 && minute >= self.start)
                || (self.days & yesterday != 0 && minute < self.end)
        }
    }

    /// The window as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Start and end minute of day (end exclusive, up to 1440).
    pub fn minutes(&self) -> (u16, u16) {
        (self.start, self.end)
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Window {
    type Err = WindowError;

    fn from_str(text: &str) -> Result<Window, WindowError> {
        let text = text.trim();
        let bad = |reason: &'static str| WindowError {
            text: text.chars().take(80).collect(),
            reason,
        };
        if text.len() > 80 {
            return Err(bad("too long"));
        }
        let mut tokens = text.split_whitespace();
        let (days, times) = match (tokens.next(), tokens.next(), tokens.next()) {
            (Some(days), Some(times), None) => {
                (parse_days(days).ok_or_else(|| bad("bad day"))?, Some(times))
            }
            (Some(one), None, None) if one.contains(':') => (ALL_DAYS, Some(one)),
            (Some(one), None, None) => (parse_days(one).ok_or_else(|| bad("bad day"))?, None),
            (None, _, _) => return Err(bad("empty")),
            _ => return Err(bad("too many parts")),
        };
        let (start, end) = match times {
            None => (0, DAY_MINUTES),
            Some(times) => {
                let (start, end) = times.split_once('-').ok_or_else(|| bad("bad times"))?;
                let start = parse_clock(start, false).ok_or_else(|| bad("bad start time"))?;
                let end = parse_clock(end, true).ok_or_else(|| bad("bad end time"))?;
                if start == end {
                    return Err(bad("start equals end (write 00:00-24:00 for a whole day)"));
                }
                (start, end)
            }
        };
        Ok(Window {
            days,
            start,
            end,
            text: text.to_owned(),
        })
    }
}

fn day_bit(day: Weekday) -> u8 {
    // 0..=6 by construction.
    1 << (day.to_monday_zero_offset() as u8 % 7)
}

/// `Mon`, `Mon-Fri`, `Fri-Mon` (wrapping), `Sat,Sun`; three-letter or full English names in any
/// case.
fn parse_days(text: &str) -> Option<u8> {
    let mut bits = 0u8;
    for item in text.split(',') {
        match item.split_once('-') {
            None => bits |= day_bit(parse_day(item)?),
            Some((from, to)) => {
                let (mut day, to) = (parse_day(from)?, parse_day(to)?);
                loop {
                    bits |= day_bit(day);
                    if day == to {
                        break;
                    }
                    day = day.next();
                }
            }
        }
    }
    Some(bits)
}

fn parse_day(text: &str) -> Option<Weekday> {
    const NAMES: [(&str, &str, Weekday); 7] = [
        ("mon", "monday", Weekday::Monday),
        ("tue", "tuesday", Weekday::Tuesday),
        ("wed", "wednesday", Weekday::Wednesday),
        ("thu", "thursday", Weekday::Thursday),
        ("fri", "friday", Weekday::Friday),
        ("sat", "saturday", Weekday::Saturday),
        ("sun", "sunday", Weekday::Sunday),
    ];
    let lower = text.to_ascii_lowercase();
    NAMES
        .iter()
        .find(|(short, long, _)| lower == *short || lower == *long)
        .map(|(_, _, day)| *day)
}

/// `H:MM` or `HH:MM`; `24:00` only as an end.
fn parse_clock(text: &str, is_end: bool) -> Option<u16> {
    let (h, m) = text.split_once(':')?;
    let digits = |s: &str, max_len: usize| {
        !s.is_empty() && s.len() <= max_len && s.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(h, 2) || !digits(m, 2) || m.len() != 2 {
        return None;
    }
    let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
    if m >= 60 {
        return None;
    }
    match h {
        0..=23 => Some(h * 60 + m),
        24 if is_end && m == 0 => Some(DAY_MINUTES),
        _ => None,
    }
}
