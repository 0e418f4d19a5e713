//! When a watcher or a job runs: every fixed period, or on a cron expression in a time zone.
//!
//! Both are told as *slots*: the instants a run belongs to. A period's slots are multiples of
//! it since the Unix epoch, and a cron expression's are its fire times, so a daemon that
//! restarts finds the same slots again and can tell a slot already run from one still due.

use std::str::FromStr;
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// Why a schedule was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScheduleError {
    #[error("bad cron expression {expr:?}: {why} (write e.g. \"0 3 * * *\" or \"*/30 * * * * *\")")]
    Cron { expr: String, why: String },
    #[error("unknown time zone {0:?} (write e.g. Europe/Berlin or UTC)")]
    Zone(String),
    #[error("a period must be at least 1s")]
    TooShort,
}

/// A watcher's or job's schedule.
#[derive(Clone, Debug)]
pub enum Schedule {
    /// Slots at every multiple of the period since the epoch.
    Every(Duration),
    /// Slots at the expression's fire times in `zone` (daylight saving handled by jiff: a
    /// skipped local time fires once after the gap, a repeated one once).
    Cron {
        expr: String,
        schedule: Box<jiff_cron::Schedule>,
        zone: TimeZone,
        zone_name: String,
    },
}

impl Schedule {
    pub fn every(period: Duration) -> Result<Schedule, ScheduleError> {
        if period < Duration::from_secs(1) {
            return Err(ScheduleError::TooShort);
        }
        Ok(Schedule::Every(period))
    }

    /// A cron expression of five fields (minute hour day month weekday, as crontab), six
    /// (seconds first) or seven (a year last), or `@hourly`, `@daily`, `@weekly`, `@monthly`,
    /// `@yearly`; in `zone` (an IANA name), UTC when `None`.
    pub fn cron(expr: &str, zone: Option<&str>) -> Result<Schedule, ScheduleError> {
        let trimmed = expr.trim();
        let fields = trimmed.split_whitespace().count();
        let full = if !trimmed.starts_with('@') && fields == 5 {
            let mut parts: Vec<String> = trimmed.split_whitespace().map(str::to_owned).collect();
            parts[4] = crontab_weekdays(&parts[4]);
            format!("0 {}", parts.join(" "))
        } else {
            trimmed.to_owned()
        };
        let schedule = jiff_cron::Schedule::from_str(&full).map_err(|e| ScheduleError::Cron {
            expr: expr.to_owned(),
            why: e.to_string(),
        })?;
        let zone_name = zone.unwrap_or("UTC").to_owned();
        let tz = TimeZone::get(&zone_name).map_err(|_| ScheduleError::Zone(zone_name.clone()))?;
        let schedule = Schedule::Cron {
            expr: expr.to_owned(),
            schedule: Box::new(schedule),
            zone: tz,
            zone_name,
        };
        // An expression that never fires (`0 0 30 2 *`) is refused now, not found silent later.
        if schedule.next_after(0).is_none() {
            return Err(ScheduleError::Cron {
                expr: expr.to_owned(),
                why: "it never fires".into(),
            });
        }
        Ok(schedule)
    }

    /// The first slot strictly after `ms` (Unix milliseconds), if any.
    pub fn next_after(&self, ms: i64) -> Option<i64> {
        match self {
            Schedule::Every(period) => {
                let p = period_ms(*period);
                Some(ms.div_euclid(p).checked_add(1)?.checked_mul(p)?)
            }
            Schedule::Cron { schedule, zone, .. } => {
                let at = Timestamp::from_millisecond(ms).ok()?.to_zoned(zone.clone());
                // jiff-cron 0.3's first time after an instant can be on a weekday the
                // expression leaves out (`1-5` after Sunday 02:59 gives Sunday 03:00):
                // every time is checked against the whole expression.
                let next = schedule
                    .after(at)
                    .take(CANDIDATES)
                    .find(|t| schedule.includes(t.clone()))?;
                Some(next.timestamp().as_millisecond())
            }
        }
    }

    /// The latest slot at or before `ms`, looking back at most `horizon_ms`; `None` when no
    /// slot falls in that span.
    pub fn slot_at(&self, ms: i64, horizon_ms: i64) -> Option<i64> {
        match self {
            Schedule::Every(period) => {
                let p = period_ms(*period);
                let slot = ms.div_euclid(p).checked_mul(p)?;
                (ms - slot <= horizon_ms).then_some(slot)
            }
            Schedule::Cron { .. } => {
                let slot = self.last_before(ms.checked_add(1)?)?;
                (ms - slot <= horizon_ms).then_some(slot)
            }
        }
    }

    /// The latest slot strictly before `ms`, however long ago.
    pub fn last_before(&self, ms: i64) -> Option<i64> {
        match self {
            Schedule::Every(period) => {
                let p = period_ms(*period);
                ms.checked_sub(1)?.div_euclid(p).checked_mul(p)
            }
            Schedule::Cron { schedule, zone, .. } => {
                let at = Timestamp::from_millisecond(ms).ok()?.to_zoned(zone.clone());
                let slot = schedule
                    .after(at)
                    .rev()
                    .take(CANDIDATES)
                    .find(|t| schedule.includes(t.clone()))?;
                Some(slot.timestamp().as_millisecond())
            }
        }
    }

    /// How it reads in records and `--check`.
    pub fn describe(&self) -> String {
        match self {
            Schedule::Every(period) => {
                format!("every {}", nightwatch_time::format_duration(*period))
            }
            Schedule::Cron {
                expr, zone_name, ..
            } => format!("cron {expr:?} ({zone_name})"),
        }
    }

    /// A typical gap between slots: the period, or the gap after the first slot past `ms`.
    pub fn typical_gap_ms(&self, ms: i64) -> i64 {
        match self {
            Schedule::Every(period) => period_ms(*period),
            Schedule::Cron { .. } => {
                let first = self.next_after(ms).unwrap_or(ms);
                self.next_after(first)
                    .map_or(86_400_000, |second| second - first)
            }
        }
    }
}

/// Crontab's weekday numbers (0 and 7 Sunday, 1 Monday) as names, since the cron crate
/// counts from 1 for Sunday: `1-5` is Monday to Friday in a crontab and must stay so. A range
/// up to 7 (`5-7`) becomes `FRI-SAT,SUN`; steps and names pass as written.
fn crontab_weekdays(field: &str) -> String {
    const NAMES: [&str; 8] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"];
    let name = |n: &str| match n.parse::<usize>() {
        Ok(i) if i < NAMES.len() => NAMES[i].to_owned(),
        _ => n.to_owned(),
    };
    field
        .split(',')
        .map(|item| {
            let (range, step) = match item.split_once('/') {
                Some((range, step)) => (range, Some(step)),
                None => (item, None),
            };
            let range = match range.split_once('-') {
                Some((from, "7")) if !matches!(from, "0" | "7") => {
                    format!("{}-SAT,SUN", name(from))
                }
                Some((from, to)) => format!("{}-{}", name(from), name(to)),
                None => name(range),
            };
            match step {
                Some(step) => format!("{range}/{step}"),
                None => range,
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// How many of jiff-cron's times are looked at for one that the whole expression includes.
const CANDIDATES: usize = 1_000;

fn period_ms(period: Duration) -> i64 {
    i64::try_from(period.as_millis())
        .unwrap_or(i64::MAX)
        .max(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    #[test]
    fn a_period_slots_on_multiples_of_itself() {
        let s = Schedule::every(Duration::from_secs(600)).unwrap();
        assert_eq!(s.next_after(0), Some(10 * MIN));
        assert_eq!(s.next_after(10 * MIN), Some(20 * MIN));
        assert_eq!(s.slot_at(25 * MIN, 10 * MIN), Some(20 * MIN));
        assert_eq!(s.slot_at(25 * MIN, 4 * MIN), None);
    }

    #[test]
    fn five_fields_read_as_crontab_in_the_zone_named() {
        let s = Schedule::cron("0 3 * * *", Some("Europe/Berlin")).unwrap();
        // 2026-12-03T00:00:00Z; 03:00 in Berlin (UTC+1 in winter) is 02:00Z.
        let midnight = 1_796_256_000_000;
        assert_eq!(s.next_after(midnight), Some(midnight + 120 * MIN));
        assert_eq!(
            s.slot_at(midnight + 121 * MIN, 86_400_000),
            Some(midnight + 120 * MIN)
        );
    }

    #[test]
    fn the_slot_before_is_found_however_far_back() {
        let weekdays = Schedule::cron("0 3 * * 1-5", None).unwrap();
        // Monday 2026-11-30T03:00Z; the slot before it is Friday's.
        let monday = 1_796_007_600_000;
        assert_eq!(weekdays.next_after(monday - 1), Some(monday));
        assert_eq!(weekdays.last_before(monday), Some(monday - 3 * 86_400_000));
        assert_eq!(weekdays.slot_at(monday, 0), Some(monday));
        let every = Schedule::every(Duration::from_secs(600)).unwrap();
        assert_eq!(every.last_before(20 * MIN), Some(10 * MIN));
        assert_eq!(every.last_before(20 * MIN + 1), Some(20 * MIN));
    }

    #[test]
    fn crontab_weekday_numbers_keep_their_crontab_meaning() {
        assert_eq!(crontab_weekdays("1-5"), "MON-FRI");
        assert_eq!(crontab_weekdays("0,6"), "SUN,SAT");
        assert_eq!(crontab_weekdays("7"), "SUN");
        assert_eq!(crontab_weekdays("5-7"), "FRI-SAT,SUN");
        assert_eq!(crontab_weekdays("*/2"), "*/2");
        assert_eq!(crontab_weekdays("Mon-Fri"), "Mon-Fri");
        // Sunday 2026-11-29T03:00Z is no weekday; Monday is.
        let weekdays = Schedule::cron("0 3 * * 1-5", None).unwrap();
        let sunday = 1_795_921_200_000;
        assert_eq!(weekdays.next_after(sunday - 1), Some(sunday + 86_400_000));
        let sundays = Schedule::cron("0 3 * * 0", None).unwrap();
        assert_eq!(sundays.next_after(sunday - 1), Some(sunday));
    }

    #[test]
    fn seconds_fields_and_shorthands_are_read() {
        let s = Schedule::cron("*/2 * * * * *", None).unwrap();
        assert_eq!(s.next_after(1_000), Some(2_000));
        assert!(Schedule::cron("@daily", None).is_ok());
    }

    #[test]
    fn bad_expressions_zones_and_silent_schedules_are_refused() {
        assert!(matches!(
            Schedule::cron("61 * * * *", None),
            Err(ScheduleError::Cron { .. })
        ));
        assert!(matches!(
            Schedule::cron("0 3 * * *", Some("Mars/Olympus")),
            Err(ScheduleError::Zone(_))
        ));
        assert!(Schedule::cron("0 0 30 2 *", None).is_err());
        assert_eq!(
            Schedule::every(Duration::from_millis(10)).unwrap_err(),
            ScheduleError::TooShort
        );
    }

    proptest::proptest! {
        /// Forward and back agree, and every slot is one the expression includes: after any
        /// instant, the next weekday 03:00 in Berlin is after it, on a weekday, at 03:00, and
        /// the slot before it leads back to it.
        #[test]
        fn slots_forward_and_back_agree(ms in 1_600_000_000_000i64..1_900_000_000_000i64) {
            let s = Schedule::cron("0 3 * * 1-5", Some("Europe/Berlin")).unwrap();
            let next = s.next_after(ms).unwrap();
            proptest::prop_assert!(next > ms);
            let zone = jiff::tz::TimeZone::get("Europe/Berlin").unwrap();
            let local = Timestamp::from_millisecond(next).unwrap().to_zoned(zone);
            proptest::prop_assert_eq!(local.hour(), 3);
            let weekday = local.weekday().to_monday_one_offset();
            proptest::prop_assert!((1..=5).contains(&weekday), "{}", local);
            let before = s.last_before(next).unwrap();
            proptest::prop_assert!(before <= ms);
            proptest::prop_assert_eq!(s.next_after(before), Some(next));
        }
    }
}
