//! An in-memory [`Ledger`] for tests in process: no files, nothing kept after drop.
//!
//! It chains, redacts and caps exactly as every store must, through the ledger crate's
//! [`PreparedEntry`] and canonical encoding, so [`crate::verify`] passes on it and a record it
//! returns is the record a durable store would return for the same entry.

use crate::{Ledger, LedgerReader, StoreError};
use nightwatch_ledger::{
    DEFAULT_OUTPUT_CAP, Entry, Filter, GENESIS_HASH, PreparedEntry, Record, event,
};
use std::sync::Mutex;

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
