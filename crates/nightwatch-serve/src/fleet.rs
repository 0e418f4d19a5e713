//! Shipping this host's ledger to the fleet store, on a thread of the daemon's own.
//!
//! Every decision on the host is durable in its own ledger before its verdict leaves; the
//! fleet gets the records afterwards, in order and once ([`nightwatch_store::ship`]). The
//! daemon ships every few seconds and at once after records were written; a fleet store that
//! is down or refuses is logged (once per distinct reason, then when it recovers) and counted,
//! and shipping resumes from what the fleet holds, so an outage leaves no gap.

use std::time::{Duration, Instant};

use crate::{Daemon, FleetStore};

/// How often the daemon ships, at most.
pub const SHIP_EVERY: Duration = Duration::from_secs(2);

/// Records per call to the fleet store: one transaction each.
pub const SHIP_BATCH: usize = 1_000;

/// How long one round of shipping may take before housekeeping goes on with its other work.
const ROUND: Duration = Duration::from_secs(5);

/// Ships until the daemon shuts down, then once more, so what was recorded while it stopped
/// goes too when the fleet store answers.
pub fn ship_while_running(daemon: &Daemon) {
    let mut shipper = Shipper::default();
    while !daemon.is_shutting_down() {
        daemon.read_fleet_clock();
        shipper.tick(daemon);
        daemon.wait_for_work(SHIP_EVERY);
    }
    shipper.next_at = Instant::now();
    shipper.tick(daemon);
}

/// The shipper's memory between rounds.
pub struct Shipper {
    next_at: Instant,
    /// The last failure, logged once until shipping works again.
    failing: Option<String>,
}

impl Default for Shipper {
    fn default() -> Shipper {
        Shipper {
            next_at: Instant::now(),
            failing: None,
        }
    }
}

impl Shipper {
    /// Ships what the fleet lacks when a round is due; returns the records shipped.
    pub fn tick(&mut self, daemon: &Daemon) -> usize {
        let Some(fleet) = &daemon.fleet else {
            return 0;
        };
        if Instant::now() < self.next_at {
            return 0;
        }
        self.next_at = Instant::now() + SHIP_EVERY;
        match ship_round(daemon, fleet) {
            Ok((shipped, behind)) => {
                if let Some(why) = self.failing.take() {
                    tracing::info!(host = %fleet.host, "shipping to the fleet store works again (it failed: {why})");
                }
                daemon.metrics.shipped(shipped, behind);
                shipped
            }
            Err(why) => {
                daemon.metrics.ship_failed();
                if self.failing.as_deref() != Some(why.as_str()) {
                    tracing::error!(host = %fleet.host, "cannot ship this host's ledger to the fleet store (its records stay here and go when it can): {why}");
                    self.failing = Some(why);
                }
                0
            }
        }
    }
}

/// Ships batches until the fleet holds everything or the round's time is up: the records
/// shipped and how many are still behind.
fn ship_round(daemon: &Daemon, fleet: &FleetStore) -> Result<(usize, u64), String> {
    let started = Instant::now();
    let mut total = 0;
    loop {
        let shipped = nightwatch_store::ship(
            daemon.reader(),
            fleet.ledger.as_ref(),
            &fleet.host,
            SHIP_BATCH,
            daemon.now_ms(),
        )
        .map_err(|e| e.to_string())?;
        total += shipped.records;
        if shipped.behind == 0 || started.elapsed() >= ROUND || daemon.is_shutting_down() {
            return Ok((total, shipped.behind));
        }
    }
}
