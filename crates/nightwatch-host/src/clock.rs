//! The one clock. Every command takes "now" from here. `NIGHTWATCH_NOW` (any time
//! nightwatch-time reads: `2am`, `+6d`, RFC 3339, ...) moves the time actions are *judged* at,
//! so "at 2 AM" is tested without waiting for 2 AM; records are still *written* at the real
//! time, so the append-only ledger never holds a simulated date.

use crate::environment::Environment;
use jiff::Timestamp;
use jiff::tz::TimeZone;

#[derive(Clone, Debug)]
pub struct Clock {
    fixed: Option<Timestamp>,
    zone: TimeZone,
}

/// The local time zone from `TZ` or `/etc/localtime`, read directly: jiff's system lookup also
/// searches the zoneinfo tree for the zone's name, which costs the hook path half a millisecond.
fn local_zone(env: &Environment) -> TimeZone {
    if let Some(name) = env.var("TZ") {
        let name = name.trim_start_matches(':');
        if let Ok(zone) = TimeZone::get(name).or_else(|_| TimeZone::posix(name)) {
            return zone;
        }
    }
    // Read once per process: the resident gate asks for the zone on every call.
    static LOCALTIME: std::sync::OnceLock<TimeZone> = std::sync::OnceLock::new();
    LOCALTIME
        .get_or_init(|| {
            std::fs::read("/etc/localtime")
                .ok()
                .and_then(|data| TimeZone::tzif("localtime", &data).ok())
                .unwrap_or(TimeZone::UTC)
        })
        .clone()
}

impl Clock {
    /// The system clock, judged at the time `NIGHTWATCH_NOW` names when it is set. A value that
    /// cannot be read is an error rather than a silent fallback to the real time.
    pub fn from_environment() -> anyhow::Result<Clock> {
        Clock::from_env(&Environment::of_process())
    }

    /// As [`Clock::from_environment`], from captured variables.
    pub fn from_env(env: &Environment) -> anyhow::Result<Clock> {
        let zone = local_zone(env);
        let fixed = match env.var("NIGHTWATCH_NOW") {
            Some(text) => {
                let ms = nightwatch_time::parse_instant(text, Timestamp::now(), &zone)
                    .map_err(|e| anyhow::anyhow!("NIGHTWATCH_NOW: {e}"))?;
                Some(Timestamp::from_millisecond(ms)?)
            }
            _ => None,
        };
        Ok(Clock { fixed, zone })
    }

    /// The time actions are judged at.
    pub fn now(&self) -> Timestamp {
        self.fixed.unwrap_or_else(Timestamp::now)
    }

    /// The time a record is written at: always the system's.
    pub fn written_ms(&self) -> i64 {
        Timestamp::now().as_millisecond()
    }

    pub fn now_ms(&self) -> i64 {
        self.now().as_millisecond()
    }

    pub fn zone(&self) -> &TimeZone {
        &self.zone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::from_vars(pairs.iter().copied())
    }

    #[test]
    fn nightwatch_now_reads_the_one_grammar() {
        let utc = |now: &str| Clock::from_env(&env(&[("NIGHTWATCH_NOW", now), ("TZ", "UTC")]));
        let fixed = utc("2026-02-14T03:30:00Z").unwrap();
        assert_eq!(fixed.now().to_string(), "2026-02-14T03:30:00Z");
        // The future form, for a simulated week ahead.
        let ahead = utc("+6d").unwrap().now_ms() - Timestamp::now().as_millisecond();
        let six_days = 6 * 86_400_000;
        assert!((six_days - 60_000..=six_days).contains(&ahead), "{ahead}");
        // Judged at the fixed time, written at the real one.
        let written = fixed.written_ms() - Timestamp::now().as_millisecond();
        assert!((-60_000..=0).contains(&written), "{written}");
        let error = utc("soon").unwrap_err().to_string();
        assert!(error.starts_with("NIGHTWATCH_NOW:"), "{error}");
        assert!(error.contains("RFC 3339"), "{error}");
    }
}
