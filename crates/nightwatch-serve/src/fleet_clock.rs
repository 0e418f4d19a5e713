//! The fleet's one clock.
//!
//! Hosts that share a queue judge its leases, readiness and windows by time. If each used its
//! own clock, a host whose clock runs an hour ahead would see another host's lease on a running
//! task (or a singleton job) as long expired and take it over while it still runs. In a fleet
//! the daemon's "now" is therefore the fleet database's clock (PostgreSQL's
//! `clock_timestamp()`), read at start and every [`READ_EVERY`] after, and carried between
//! readings by this host's monotonic clock: a host clock that is wrong, or is set back or
//! forward, moves nothing the fleet shares. (The hazards watcher reports such a clock.)
//!
//! Until the first reading succeeds (the fleet database was down at start) the host's own clock
//! stands in, and the daemon says so once.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use nightwatch_store::FleetLedger;

/// How often the fleet's clock is read again once it has been read: often enough that the
/// monotonic clock's drift in between is far below a lease's length.
pub const READ_EVERY: Duration = Duration::from_secs(30);

/// The fleet's clock as last read, carried forward by the monotonic clock.
#[derive(Clone, Copy, Debug)]
struct Anchor {
    fleet_ms: i64,
    at: Instant,
}

impl Anchor {
    /// The fleet's time at `now`.
    fn at(&self, now: Instant) -> i64 {
        let elapsed =
            i64::try_from(now.saturating_duration_since(self.at).as_millis()).unwrap_or(i64::MAX);
        self.fleet_ms.saturating_add(elapsed)
    }
}

/// A reading of the fleet's clock taken between `sent` and `answered`: the database read it
/// somewhere in that span, so it is taken to belong to the span's middle (as NTP does).
fn anchor(fleet_ms: i64, sent: Instant, answered: Instant) -> Anchor {
    Anchor {
        fleet_ms,
        at: sent + answered.saturating_duration_since(sent) / 2,
    }
}

/// The daemon's view of the fleet's clock (see the module's documentation).
#[derive(Debug, Default)]
pub struct FleetClock {
    anchor: Mutex<Option<Anchor>>,
}

impl FleetClock {
    /// The fleet's time now, once its clock has been read.
    pub fn now_ms(&self) -> Option<i64> {
        let anchor = *self.anchor.lock().unwrap_or_else(|p| p.into_inner());
        anchor.map(|a| a.at(Instant::now()))
    }

    /// Whether a reading is due: none yet, or the last one [`READ_EVERY`] ago.
    pub fn due(&self) -> bool {
        let anchor = *self.anchor.lock().unwrap_or_else(|p| p.into_inner());
        anchor.is_none_or(|a| a.at.elapsed() >= READ_EVERY)
    }

    /// Reads the fleet's clock from `fleet`; how far this host's clock (`host_ms` reads it)
    /// is off from it, in milliseconds (positive: ahead). `Ok(None)` for a fleet with no
    /// clock of its own (in memory): the host's clock goes on standing in.
    pub fn read(
        &self,
        fleet: &dyn FleetLedger,
        host_ms: impl Fn() -> i64,
    ) -> Result<Option<i64>, String> {
        let sent = Instant::now();
        let read = fleet.clock_ms().map_err(|e| e.to_string())?;
        let answered = Instant::now();
        let host_now = host_ms();
        let Some(fleet_ms) = read else {
            return Ok(None);
        };
        let new = anchor(fleet_ms, sent, answered);
        *self.anchor.lock().unwrap_or_else(|p| p.into_inner()) = Some(new);
        Ok(Some(host_now - new.at(answered)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_belongs_to_the_middle_of_its_round_trip() {
        let sent = Instant::now();
        let answered = sent + Duration::from_millis(40);
        let a = anchor(1_000_000, sent, answered);
        assert_eq!(a.at(sent + Duration::from_millis(20)), 1_000_000);
        assert_eq!(a.at(answered), 1_000_020);
    }

    #[test]
    fn the_fleet_time_moves_with_the_monotonic_clock_between_readings() {
        let at = Instant::now();
        let a = Anchor {
            fleet_ms: 5_000,
            at,
        };
        assert_eq!(a.at(at + Duration::from_secs(3)), 8_000);
        // An instant before the reading (a caller that took it earlier) is the reading itself.
        assert_eq!(
            a.at(at.checked_sub(Duration::from_secs(1)).unwrap_or(at)),
            5_000
        );
    }

    #[test]
    fn an_unread_clock_tells_nothing_and_is_due() {
        let clock = FleetClock::default();
        assert_eq!(clock.now_ms(), None);
        assert!(clock.due());
    }
}
