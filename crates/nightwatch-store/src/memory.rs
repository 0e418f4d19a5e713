//! An in-memory [`Ledger`] and [`FleetLedger`], and an in-memory fleet's inbox
//! ([`MemoryInboxes`]: each host's [`AlertInbox`], read together as a [`FleetInbox`]), for
//! tests in process: no files, nothing kept after drop.
//!
//! It chains, redacts and caps exactly as every store must, through the ledger crate's
//! [`PreparedEntry`] and canonical encoding, so [`crate::verify`] passes on it and a record it
//! returns is the record a durable store would return for the same entry.

use crate::{
    AlertEvent, AlertInbox, Arrival, ArrivalCursor, FleetArrival, FleetCursor, FleetHost,
    FleetInbox, FleetLedger, FleetRecord, Ledger, LedgerReader, Settlement, StoreError,
};
use nightwatch_ledger::{
    DEFAULT_OUTPUT_CAP, Entry, Filter, GENESIS_HASH, PreparedEntry, Record, event,
};
use std::sync::{Arc, Mutex};

/// Records in a vector behind a lock; appends are serialised by the lock as a durable store
/// serialises them by its write transaction.
pub struct MemoryLedger {
    records: Mutex<Vec<Record>>,
    output_cap: usize,
}

impl Default for MemoryLedger {
    fn default() -> MemoryLedger {
        MemoryLedger::new()
    }
}

impl MemoryLedger {
    pub fn new() -> MemoryLedger {
        MemoryLedger::with_output_cap(DEFAULT_OUTPUT_CAP)
    }

    /// Keeps at most `output_cap` bytes of each record's `stdout` and `stderr`.
    pub fn with_output_cap(output_cap: usize) -> MemoryLedger {
        MemoryLedger {
            records: Mutex::new(Vec::new()),
            output_cap,
        }
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Vec<Record>> {
        // Records are pushed whole, so a panic elsewhere cannot leave one half-written.
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether `record` matches every set field of `filter` (the limit aside).
fn matches(record: &Record, filter: &Filter) -> bool {
    let eq =
        |want: &Option<String>, have: Option<&str>| want.as_deref().is_none_or(|w| have == Some(w));
    filter.since_ms.is_none_or(|t| record.timestamp_ms >= t)
        && filter.until_ms.is_none_or(|t| record.timestamp_ms < t)
        && eq(&filter.session, record.session_id.as_deref())
        && filter
            .actor
            .as_deref()
            .is_none_or(|a| record.actor.kind == a || record.actor.id == a)
        && eq(&filter.verdict, record.verdict.as_deref())
        && eq(&filter.tool, Some(&record.tool))
        && eq(&filter.alert, record.context.alert_id.as_deref())
        && eq(&filter.event, Some(&record.event))
        && filter.after_seq.is_none_or(|seq| record.seq > seq)
        && filter.before_seq.is_none_or(|seq| record.seq < seq)
}

impl LedgerReader for MemoryLedger {
    fn get(&self, id_or_seq: &str) -> Result<Option<Record>, StoreError> {
        let digits = id_or_seq.strip_prefix('r').unwrap_or(id_or_seq);
        let records = self.records();
        let found = match digits.parse::<u64>() {
            Ok(seq) => records.iter().find(|r| r.seq == seq),
            Err(_) => records.iter().find(|r| r.id == id_or_seq),
        };
        Ok(found.cloned())
    }

    fn query(&self, filter: &Filter) -> Result<Vec<Record>, StoreError> {
        let records = self.records();
        let mut found: Vec<Record> = records
            .iter()
            .filter(|r| matches(r, filter))
            .cloned()
            .collect();
        if let Some(limit) = filter.limit {
            found.drain(..found.len().saturating_sub(limit));
        }
        Ok(found)
    }

    fn decision_for_call(&self, call_id: &str) -> Result<Option<Record>, StoreError> {
        Ok(self
            .records()
            .iter()
            .rev()
            .find(|r| r.event == event::DECISION && r.call_id.as_deref() == Some(call_id))
            .cloned())
    }

    fn scan(
        &self,
        visit: &mut dyn FnMut(&Record) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        // A snapshot, so the visitor may read the same store.
        let records = self.records().clone();
        records.iter().try_for_each(visit)
    }
}

impl Ledger for MemoryLedger {
    fn append(&self, entry: Entry) -> Result<Record, StoreError> {
        let prepared = PreparedEntry::new(entry, self.output_cap);
        let mut records = self.records();
        let (seq, prev_hash) = match records.last() {
            Some(last) => (last.seq + 1, last.hash.clone()),
            None => (1, GENESIS_HASH.to_string()),
        };
        let id = Record::id_for(seq);
        let hash = prepared
            .fields(seq, &id, &prev_hash)
            .hash(&mut Vec::with_capacity(1024));
        let record = prepared.into_record(seq, id, prev_hash, hash);
        records.push(record.clone());
        Ok(record)
    }
}

/// One host's chain as held by [`MemoryFleet`], read as a ledger whose head checkpoint is the
/// head the host last reported.
struct HeldChain {
    records: Vec<Record>,
    reported_head: Option<(u64, String)>,
}

impl LedgerReader for HeldChain {
    fn get(&self, id_or_seq: &str) -> Result<Option<Record>, StoreError> {
        let digits = id_or_seq.strip_prefix('r').unwrap_or(id_or_seq);
        Ok(digits
            .parse::<u64>()
            .ok()
            .and_then(|seq| self.records.iter().find(|r| r.seq == seq))
            .cloned())
    }

    fn query(&self, filter: &Filter) -> Result<Vec<Record>, StoreError> {
        let mut found: Vec<Record> = self
            .records
            .iter()
            .filter(|r| matches(r, filter))
            .cloned()
            .collect();
        if let Some(limit) = filter.limit {
            found.drain(..found.len().saturating_sub(limit));
        }
        Ok(found)
    }

    fn decision_for_call(&self, call_id: &str) -> Result<Option<Record>, StoreError> {
        Ok(self
            .records
            .iter()
            .rev()
            .find(|r| r.event == event::DECISION && r.call_id.as_deref() == Some(call_id))
            .cloned())
    }

    fn scan(
        &self,
        visit: &mut dyn FnMut(&Record) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.records.iter().try_for_each(visit)
    }

    fn head_checkpoint(&self) -> Result<Option<(u64, String)>, StoreError> {
        Ok(self.reported_head.clone())
    }
}

/// An in-memory [`FleetLedger`] for tests in process: it keeps each host's records and checks
/// what is shipped exactly as a durable fleet store must (in order, chained, once).
#[derive(Default)]
pub struct MemoryFleet {
    hosts: Mutex<std::collections::BTreeMap<String, (HeldChain, Option<i64>)>>,
    /// Each host's clock as it last noted it (ms ahead of the fleet's).
    clocks: Mutex<std::collections::BTreeMap<String, i64>>,
}

impl MemoryFleet {
    pub fn new() -> MemoryFleet {
        MemoryFleet::default()
    }
}

impl FleetLedger for MemoryFleet {
    fn shipped(&self, host: &str) -> Result<Option<(u64, String)>, StoreError> {
        let hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        Ok(hosts
            .get(host)
            .and_then(|(chain, _)| chain.records.last())
            .map(|r| (r.seq, r.hash.clone())))
    }

    fn ship(
        &self,
        host: &str,
        records: &[Record],
        local_head: Option<(u64, String)>,
        now_ms: i64,
    ) -> Result<usize, StoreError> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        let (chain, reported) = hosts.entry(host.to_owned()).or_insert_with(|| {
            (
                HeldChain {
                    records: Vec::new(),
                    reported_head: None,
                },
                None,
            )
        });
        let corrupt = |what: String| StoreError::Corrupt {
            store: crate::store_name::LEDGER,
            what,
        };
        // Checked whole before anything is kept: a bad batch writes nothing.
        let mut held = chain.records.len() as u64;
        let mut last_hash = chain.records.last().map(|r| r.hash.clone());
        let mut new = Vec::new();
        for record in records {
            if record.seq <= held {
                let ours = &chain.records[(record.seq - 1) as usize];
                if ours.hash != record.hash {
                    return Err(corrupt(format!(
                        "host {host} record {} is held with another hash",
                        record.seq
                    )));
                }
                continue;
            }
            let follows = last_hash
                .as_deref()
                .unwrap_or(nightwatch_ledger::GENESIS_HASH);
            if record.seq != held + 1 || record.prev_hash != follows {
                return Err(corrupt(format!(
                    "host {host} record {} does not follow record {held}",
                    record.seq
                )));
            }
            held = record.seq;
            last_hash = Some(record.hash.clone());
            new.push(record.clone());
        }
        let count = new.len();
        chain.records.extend(new);
        chain.reported_head = local_head;
        *reported = Some(now_ms);
        Ok(count)
    }

    fn note_clock(&self, host: &str, ahead_ms: i64) -> Result<(), StoreError> {
        let mut clocks = self.clocks.lock().unwrap_or_else(|p| p.into_inner());
        clocks.insert(host.to_owned(), ahead_ms);
        Ok(())
    }

    fn hosts(&self) -> Result<Vec<FleetHost>, StoreError> {
        let hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        let clocks = self.clocks.lock().unwrap_or_else(|p| p.into_inner());
        let names: std::collections::BTreeSet<&String> =
            hosts.keys().chain(clocks.keys()).collect();
        Ok(names
            .into_iter()
            .map(|host| {
                let held = hosts.get(host);
                let chain = held.map(|(chain, _)| chain);
                FleetHost {
                    host: host.clone(),
                    shipped: chain
                        .and_then(|c| c.records.last())
                        .map(|r| (r.seq, r.hash.clone())),
                    shipped_record_ms: chain.and_then(|c| c.records.last()).map(|r| r.timestamp_ms),
                    local_head: chain.and_then(|c| c.reported_head.clone()),
                    reported_ms: held.and_then(|(_, reported)| *reported),
                    clock_ahead_ms: clocks.get(host).copied(),
                }
            })
            .collect())
    }

    fn host_ledger(&self, host: &str) -> Result<std::sync::Arc<dyn LedgerReader>, StoreError> {
        let hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        let (records, reported_head) = hosts
            .get(host)
            .map(|(chain, _)| (chain.records.clone(), chain.reported_head.clone()))
            .unwrap_or_default();
        Ok(std::sync::Arc::new(HeldChain {
            records,
            reported_head,
        }))
    }

    fn records(
        &self,
        host: Option<&str>,
        filter: &Filter,
        before: Option<&FleetCursor>,
    ) -> Result<Vec<FleetRecord>, StoreError> {
        let hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        let mut found: Vec<(FleetCursor, &Record)> = hosts
            .iter()
            .filter(|(name, _)| host.is_none_or(|h| h == name.as_str()))
            .flat_map(|(name, (chain, _))| {
                chain.records.iter().map(move |r| {
                    let at = FleetCursor {
                        timestamp_ms: r.timestamp_ms,
                        host: name.clone(),
                        seq: r.seq,
                    };
                    (at, r)
                })
            })
            .filter(|(at, r)| matches(r, filter) && before.is_none_or(|b| at < b))
            .collect();
        found.sort_by(|a, b| b.0.cmp(&a.0));
        found.truncate(filter.limit.unwrap_or(usize::MAX));
        Ok(found
            .into_iter()
            .map(|(at, r)| FleetRecord {
                host: at.host,
                record: r.clone(),
            })
            .collect())
    }
}

/// A fleet's inbox in memory: every host's arrivals, each numbered 1, 2, 3, ... on its host
/// as PostgreSQL numbers them. [`MemoryInboxes::host`] is one host's [`AlertInbox`].
#[derive(Clone, Default)]
pub struct MemoryInboxes {
    arrivals: Arc<Mutex<Vec<FleetArrival>>>,
}

/// One host's inbox of a [`MemoryInboxes`].
pub struct MemoryInbox {
    fleet: MemoryInboxes,
    host: String,
}

impl MemoryInboxes {
    pub fn new() -> MemoryInboxes {
        MemoryInboxes::default()
    }

    /// The inbox `host`'s daemon receives into.
    pub fn host(&self, host: &str) -> MemoryInbox {
        MemoryInbox {
            fleet: self.clone(),
            host: host.to_owned(),
        }
    }

    fn all(&self) -> std::sync::MutexGuard<'_, Vec<FleetArrival>> {
        self.arrivals.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Those of `host` (or every host's) that `keep` keeps, in the fleet's order.
    fn sorted(
        &self,
        host: Option<&str>,
        keep: impl Fn(&FleetArrival) -> bool,
    ) -> Vec<FleetArrival> {
        let mut found: Vec<FleetArrival> = self
            .all()
            .iter()
            .filter(|a| host.is_none_or(|h| h == a.host) && keep(a))
            .cloned()
            .collect();
        found.sort_by_key(ArrivalCursor::of);
        found
    }
}

impl MemoryInbox {
    /// This host's arrivals that `keep` keeps, by id.
    fn own(&self, keep: impl Fn(&AlertEvent) -> bool) -> Vec<AlertEvent> {
        let mut found: Vec<AlertEvent> = self
            .fleet
            .all()
            .iter()
            .filter(|a| a.host == self.host && keep(&a.arrival))
            .map(|a| a.arrival.clone())
            .collect();
        found.sort_by_key(|a| a.id);
        found
    }
}

impl AlertInbox for MemoryInbox {
    fn receive(&self, arrivals: &[Arrival<'_>]) -> Result<Vec<i64>, StoreError> {
        let mut all = self.fleet.all();
        let mut last = all
            .iter()
            .filter(|a| a.host == self.host)
            .map(|a| a.arrival.id)
            .max()
            .unwrap_or(0);
        let mut ids = Vec::new();
        for a in arrivals {
            last += 1;
            let alert = serde_json::from_str(a.alert_json).map_err(|e| StoreError::Corrupt {
                store: crate::store_name::INBOX,
                what: format!("the alert JSON of arrival {last} is unreadable: {e}"),
            })?;
            all.push(FleetArrival {
                host: self.host.clone(),
                arrival: AlertEvent {
                    id: last,
                    received_ms: a.received_ms,
                    source: a.source.to_owned(),
                    alert_id: a.alert_id.to_owned(),
                    status: a.status.to_owned(),
                    title: a.title.to_owned(),
                    host: a.host.map(str::to_owned),
                    alert,
                    disposition: None,
                    reason: None,
                    route: None,
                    task_id: None,
                    record: None,
                },
            });
            ids.push(last);
        }
        Ok(ids)
    }

    fn settle(&self, settlements: &[Settlement<'_>]) -> Result<(), StoreError> {
        let mut all = self.fleet.all();
        for s in settlements {
            let held = all
                .iter_mut()
                .filter(|a| a.host == self.host && a.arrival.id == s.arrival);
            for a in held {
                let a = &mut a.arrival;
                a.disposition = Some(s.disposition);
                a.reason = Some(s.reason.to_owned());
                a.route = s.route.map(str::to_owned);
                a.task_id = s.task_id;
                a.record = Some(s.record.to_owned());
            }
        }
        Ok(())
    }

    fn unrecorded(&self, limit: usize) -> Result<Vec<AlertEvent>, StoreError> {
        let mut found = self.own(|a| a.record.is_none());
        found.truncate(limit);
        Ok(found)
    }

    fn get(&self, id: i64) -> Result<Option<AlertEvent>, StoreError> {
        Ok(self.own(|a| a.id == id).into_iter().next())
    }

    fn for_alert(&self, alert_id: &str) -> Result<Vec<AlertEvent>, StoreError> {
        Ok(self.own(|a| a.alert_id == alert_id))
    }

    fn after(&self, after_id: i64, limit: usize) -> Result<Vec<AlertEvent>, StoreError> {
        let mut found = self.own(|a| a.id > after_id);
        found.truncate(limit);
        Ok(found)
    }

    fn between(
        &self,
        since_ms: i64,
        until_ms: i64,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AlertEvent>, StoreError> {
        let found = self.own(|a| {
            a.received_ms >= since_ms && a.received_ms < until_ms && before.is_none_or(|b| a.id < b)
        });
        Ok(found[found.len().saturating_sub(limit)..].to_vec())
    }

    fn count(&self) -> Result<i64, StoreError> {
        Ok(self.own(|_| true).len() as i64)
    }
}

impl FleetInbox for MemoryInboxes {
    fn between(
        &self,
        host: Option<&str>,
        since_ms: i64,
        until_ms: i64,
        before: Option<&ArrivalCursor>,
        limit: usize,
    ) -> Result<Vec<FleetArrival>, StoreError> {
        let found = self.sorted(host, |a| {
            let at = a.arrival.received_ms;
            at >= since_ms && at < until_ms && before.is_none_or(|b| ArrivalCursor::of(a) < *b)
        });
        Ok(found[found.len().saturating_sub(limit)..].to_vec())
    }

    fn after(
        &self,
        host: Option<&str>,
        after: &ArrivalCursor,
        limit: usize,
    ) -> Result<Vec<FleetArrival>, StoreError> {
        let mut found = self.sorted(host, |a| ArrivalCursor::of(a) > *after);
        found.truncate(limit);
        Ok(found)
    }

    fn for_alert(&self, alert_id: &str) -> Result<Vec<FleetArrival>, StoreError> {
        Ok(self.sorted(None, |a| a.arrival.alert_id == alert_id))
    }
}
