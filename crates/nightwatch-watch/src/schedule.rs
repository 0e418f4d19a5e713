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
            format!("0 {trimmed}")
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
                let next = schedule.after(at).next()?;
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
                let start = ms.checked_sub(horizon_ms)?.checked_sub(1)?;
                let mut slot = None;
                let mut at = start;
                // Walk forward from the horizon; bounded, since slots are at least a second
                // apart and the horizon is a schedule's span at most.
                for _ in 0..100_000 {
                    match self.next_after(at) {
                        Some(next) if next <= ms => {
                            slot = Some(next);
                            at = next;
                        }
                        _ => break,
                    }
                }
                slot
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
}
