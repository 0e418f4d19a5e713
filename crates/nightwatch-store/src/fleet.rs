//! The fleet's copy of every host's ledger.
//!
//! A host decides and records on its own (its local ledger is durable before a verdict
//! leaves), so a fleet database that is down never lets a call through unrecorded nor stops
//! the host. Its records reach the fleet store afterwards, by [`ship`]: in order, exactly once
//! (a record is keyed by host and sequence number, and one already held is skipped when its
//! hash agrees), with the hash chain as the host wrote it. Shipping resumes from what the
//! fleet holds, so an outage leaves no gap and no duplicate; a fleet copy that disagrees with
//! the host's own chain stops shipping with the reason, and nothing is overwritten.

use crate::{LedgerReader, StoreError};
use nightwatch_ledger::{Filter, Record};
use std::sync::Arc;

/// What the fleet store knows of one host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetHost {
    pub host: String,
    /// The last record of the host the fleet holds: its sequence number and hash.
    pub shipped: Option<(u64, String)>,
    /// When that record was written (unix ms).
    pub shipped_record_ms: Option<i64>,
    /// The host's own ledger head as it last reported it while shipping: the fleet holds all
    /// of the host's chain when this equals `shipped`.
    pub local_head: Option<(u64, String)>,
    /// When the host last shipped (unix ms, the fleet's clock as the host read it).
    pub reported_ms: Option<i64>,
    /// How far the host's own clock was off the fleet database's when it last read that
    /// clock (ms, positive: ahead). Its records carry its own clock's times, so a host whose
    /// clock is wrong shows here why its records sit out of place in the fleet's order.
    pub clock_ahead_ms: Option<i64>,
}

impl FleetHost {
    /// Records the host had written that the fleet does not hold yet, as it last reported.
    pub fn lag(&self) -> u64 {
        let shipped = self.shipped.as_ref().map_or(0, |(seq, _)| *seq);
        let head = self.local_head.as_ref().map_or(0, |(seq, _)| *seq);
        head.saturating_sub(shipped)
    }
}

/// Every host's ledger, held together (in PostgreSQL for a fleet).
pub trait FleetLedger: Send + Sync {
    /// The last record of `host` the fleet holds (sequence number and hash).
    fn shipped(&self, host: &str) -> Result<Option<(u64, String)>, StoreError>;

    /// Adds `records` of `host`, which continue what the fleet holds (sequence numbers
    /// consecutive, each chained to the one before it); a record already held with the same
    /// hash is skipped, one held with another hash is [`StoreError::Corrupt`] and nothing is
    /// written. Notes `local_head` as the host's own head, reported at `now_ms`. Returns how
    /// many records were new.
    fn ship(
        &self,
        host: &str,
        records: &[Record],
        local_head: Option<(u64, String)>,
        now_ms: i64,
    ) -> Result<usize, StoreError>;

    /// The fleet database's own clock, Unix milliseconds, for the hosts to be compared
    /// against (a host whose clock disagrees with it is a hazard); `None` for a fleet with no
    /// clock of its own (in memory).
    fn clock_ms(&self) -> Result<Option<i64>, StoreError> {
        Ok(None)
    }

    /// Notes how far `host`'s own clock is off the fleet's ([`FleetHost::clock_ahead_ms`]),
    /// as the host last measured it; the fleet need hold none of its records yet.
    fn note_clock(&self, host: &str, ahead_ms: i64) -> Result<(), StoreError>;

    /// Every host the fleet holds records of or heard from, by name.
    fn hosts(&self) -> Result<Vec<FleetHost>, StoreError>;

    /// One host's chain as the fleet holds it. Its head checkpoint is the head the host last
    /// reported, so [`crate::verify`] on it checks the chain and that the fleet holds all of it.
    fn host_ledger(&self, host: &str) -> Result<Arc<dyn LedgerReader>, StoreError>;

    /// Records of every host (or of `host` only) that match `filter`, newest first in the
    /// fleet's order ([`FleetCursor`]), at most `filter.limit` of them; with `before`, only
    /// those after it in that order, so each page, read from the last record of the page
    /// before, goes on with no record skipped or repeated. `filter.after_seq` and
    /// `before_seq` compare each record's own host's sequence number.
    fn records(
        &self,
        host: Option<&str>,
        filter: &Filter,
        before: Option<&FleetCursor>,
    ) -> Result<Vec<FleetRecord>, StoreError>;
}

/// A record as the fleet holds it: with the host whose chain it is in.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetRecord {
    pub host: String,
    pub record: Record,
}

/// A record's place in the fleet's order, which [`FleetLedger::records`] reads newest first:
/// by time, then host name (compared byte by byte), then sequence number. Two records never
/// share a place (a host's sequence numbers are its own), so a page read from the place of
/// the last record of the page before neither skips nor repeats one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FleetCursor {
    pub timestamp_ms: i64,
    pub host: String,
    pub seq: u64,
}

impl FleetCursor {
    /// Before every record: a page read from it is empty (the end of the fleet's records).
    pub fn end() -> FleetCursor {
        FleetCursor {
            timestamp_ms: i64::MIN,
            host: String::new(),
            seq: 0,
        }
    }

    /// Where `record` is: the page after it starts with the record that comes next.
    pub fn of(record: &FleetRecord) -> FleetCursor {
        FleetCursor {
            timestamp_ms: record.record.timestamp_ms,
            host: record.host.clone(),
            seq: record.record.seq,
        }
    }
}

/// What one call of [`ship`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shipped {
    /// Records the fleet did not hold before.
    pub records: usize,
    /// The host's last record the fleet holds now (0: none).
    pub through: u64,
    /// The host's records still to ship after this call.
    pub behind: u64,
}

/// Why shipping stopped.
#[derive(Debug, thiserror::Error)]
pub enum ShipError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The fleet holds a record of this host that its own ledger does not: the host's ledger
    /// was replaced or reset, or another machine ships under its name. Nothing is shipped.
    #[error(
        "the fleet store's copy of host {host} disagrees with this host's ledger at record {seq}: \
         {why}; nothing was shipped (was the ledger replaced, or does another machine use the \
         host name {host}?)"
    )]
    Diverged { host: String, seq: u64, why: String },
}

/// Ships at most `batch` of `host`'s records that the fleet lacks, oldest first, from its own
/// ledger `local`; call again while [`Shipped::behind`] is not 0.
pub fn ship(
    local: &dyn LedgerReader,
    fleet: &dyn FleetLedger,
    host: &str,
    batch: usize,
    now_ms: i64,
) -> Result<Shipped, ShipError> {
    let head = last_record(local)?;
    let head_seq = head.as_ref().map_or(0, |(seq, _)| *seq);
    let diverged = |seq, why: String| ShipError::Diverged {
        host: host.to_owned(),
        seq,
        why,
    };
    let from = match fleet.shipped(host)? {
        None => 0,
        Some((seq, _)) if seq > head_seq => {
            return Err(diverged(
                seq,
                format!("the fleet holds up to record {seq}, this ledger ends at {head_seq}"),
            ));
        }
        Some((seq, hash)) => {
            let ours = local.get(&seq.to_string())?;
            match ours {
                Some(record) if record.hash == hash => seq,
                Some(record) => {
                    return Err(diverged(
                        seq,
                        format!(
                            "the fleet's hash is {hash}, this ledger's is {}",
                            record.hash
                        ),
                    ));
                }
                None => return Err(diverged(seq, "this ledger has no such record".into())),
            }
        }
    };
    let records = if from < head_seq {
        let upto = from.saturating_add(batch.max(1) as u64).min(head_seq);
        local.query(&Filter {
            after_seq: Some(from),
            before_seq: Some(upto + 1),
            ..Filter::default()
        })?
    } else {
        Vec::new()
    };
    if let Some(gap) = records
        .iter()
        .zip(from + 1..)
        .find(|(record, seq)| record.seq != *seq)
    {
        return Err(StoreError::Corrupt {
            store: crate::store_name::LEDGER,
            what: format!(
                "record {} follows record {} (a gap in this host's ledger)",
                gap.0.seq,
                gap.1 - 1
            ),
        }
        .into());
    }
    let new = fleet.ship(host, &records, head, now_ms)?;
    let through = records.last().map_or(from, |r| r.seq);
    Ok(Shipped {
        records: new,
        through,
        behind: head_seq - through,
    })
}

/// The ledger's last record: its sequence number and hash.
fn last_record(ledger: &dyn LedgerReader) -> Result<Option<(u64, String)>, StoreError> {
    let last = ledger.query(&Filter {
        limit: Some(1),
        ..Filter::default()
    })?;
    Ok(last.into_iter().next().map(|r| (r.seq, r.hash)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ledger;
    use crate::memory::{MemoryFleet, MemoryLedger};
    use nightwatch_ledger::{Entry, RecordActor};

    fn ledger_of(n: u64, tool: &str) -> MemoryLedger {
        let ledger = MemoryLedger::new();
        for i in 0..n {
            let actor = RecordActor {
                kind: "agent".into(),
                id: "claude".into(),
            };
            ledger
                .append(Entry::new("decision", 1_000 + i as i64, actor, tool))
                .unwrap();
        }
        ledger
    }

    fn ship_all(local: &MemoryLedger, fleet: &MemoryFleet, host: &str, batch: usize) -> usize {
        let mut calls = 0;
        loop {
            calls += 1;
            let shipped = ship(local, fleet, host, batch, 5_000).unwrap();
            if shipped.behind == 0 {
                return calls;
            }
        }
    }

    #[test]
    fn every_record_reaches_the_fleet_in_order_once_and_the_copy_verifies_whole() {
        let local = ledger_of(25, "exec");
        let fleet = MemoryFleet::new();
        let first = ship(&local, &fleet, "db1", 10, 5_000).unwrap();
        assert_eq!(
            first,
            Shipped {
                records: 10,
                through: 10,
                behind: 15
            }
        );
        let copy = fleet.host_ledger("db1").unwrap();
        let partial = crate::verify(copy.as_ref()).unwrap();
        assert!(
            !partial.is_intact(),
            "a copy short of the host's reported head does not verify whole"
        );
        assert_eq!(ship_all(&local, &fleet, "db1", 10), 2);
        let copy = fleet.host_ledger("db1").unwrap();
        let report = crate::verify(copy.as_ref()).unwrap();
        assert!(report.is_intact(), "{report:?}");
        assert_eq!(report.records, 25);
        assert_eq!(
            copy.query(&Filter::default()).unwrap(),
            local.query(&Filter::default()).unwrap(),
            "the fleet holds the host's records as written"
        );
        let hosts = fleet.hosts().unwrap();
        assert_eq!(hosts.len(), 1);
        assert_eq!((hosts[0].lag(), hosts[0].reported_ms), (0, Some(5_000)));
    }

    #[test]
    fn shipping_again_after_an_outage_or_a_crash_adds_nothing_twice() {
        let local = ledger_of(8, "exec");
        let fleet = MemoryFleet::new();
        ship_all(&local, &fleet, "web1", 100);
        // The same records sent again (a reply lost before the shipper heard it): skipped.
        let all = local.query(&Filter::default()).unwrap();
        assert_eq!(fleet.ship("web1", &all, None, 6_000).unwrap(), 0);
        // More records while the fleet was away: only those go.
        for i in 0..4 {
            let actor = RecordActor {
                kind: "agent".into(),
                id: "codex".into(),
            };
            local
                .append(Entry::new("decision", 9_000 + i, actor, "exec"))
                .unwrap();
        }
        let shipped = ship(&local, &fleet, "web1", 100, 7_000).unwrap();
        assert_eq!(
            (shipped.records, shipped.through, shipped.behind),
            (4, 12, 0)
        );
        let report = crate::verify(fleet.host_ledger("web1").unwrap().as_ref()).unwrap();
        assert!(report.is_intact(), "{report:?}");
        assert_eq!(report.records, 12);
    }

    #[test]
    fn a_fleet_copy_that_disagrees_with_the_host_stops_shipping_and_keeps_what_it_holds() {
        let fleet = MemoryFleet::new();
        ship_all(&ledger_of(5, "exec"), &fleet, "db1", 100);
        // Another machine under the same name (or a reset ledger) with a different chain.
        let impostor = ledger_of(7, "write");
        let err = ship(&impostor, &fleet, "db1", 100, 5_000).unwrap_err();
        assert!(matches!(err, ShipError::Diverged { seq: 5, .. }), "{err}");
        assert!(err.to_string().contains("host name db1"), "{err}");
        // A host whose ledger is shorter than what the fleet holds (its ledger was replaced).
        let reset = ledger_of(2, "exec");
        let err = ship(&reset, &fleet, "db1", 100, 5_000).unwrap_err();
        assert!(err.to_string().contains("ends at 2"), "{err}");
        assert_eq!(fleet.shipped("db1").unwrap().map(|(seq, _)| seq), Some(5));
    }

    #[test]
    fn the_fleet_store_refuses_records_that_skip_or_break_the_chain() {
        let local = ledger_of(6, "exec");
        let all = local.query(&Filter::default()).unwrap();
        let fleet = MemoryFleet::new();
        let err = fleet.ship("db1", &all[1..], None, 0).unwrap_err();
        assert!(err.to_string().contains("does not follow"), "{err}");
        let mut forged = all.clone();
        forged[3].prev_hash = "0".repeat(64);
        assert!(fleet.ship("db1", &forged, None, 0).is_err());
        assert_eq!(
            fleet.shipped("db1").unwrap(),
            None,
            "a bad batch writes nothing"
        );
    }
}
