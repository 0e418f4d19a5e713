//! The ledger's traits: reading ([`LedgerReader`]) apart from appending ([`Ledger`]), so a
//! caller that only reads can be handed a reader and never write.

use crate::StoreError;
use nightwatch_ledger::{
    ChainLink, Checkpoint, Entry, Filter, Record, VerifyReport, encode_record, verify_chain,
};
use std::sync::Arc;

/// Reading a ledger store.
pub trait LedgerReader: Send + Sync {
    /// A record by id (`r42`) or by sequence number (`42`).
    fn get(&self, id_or_seq: &str) -> Result<Option<Record>, StoreError>;

    /// Records matching `filter`, in `seq` order.
    fn query(&self, filter: &Filter) -> Result<Vec<Record>, StoreError>;

    /// The latest `decision` record for the agent's call id, if any.
    fn decision_for_call(&self, call_id: &str) -> Result<Option<Record>, StoreError>;

    /// Visits every record in `seq` order, one at a time (never all in memory). The visitor must
    /// not call back into the same store.
    fn scan(
        &self,
        visit: &mut dyn FnMut(&Record) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;

    /// Visits every record's chain link in `seq` order. The default builds each [`Record`] and
    /// re-encodes it; stores keeping canonical text override it to verify fast.
    fn scan_chain(
        &self,
        visit: &mut dyn FnMut(&ChainLink<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut buf = Vec::with_capacity(1024);
        self.scan(&mut |r: &Record| {
            encode_record(r, &mut buf);
            visit(&ChainLink {
                seq: r.seq,
                id: &r.id,
                event: &r.event,
                prev_hash: &r.prev_hash,
                hash: &r.hash,
                canonical: &buf,
            })
        })
    }

    /// The head checkpoint kept outside the store (`seq`, `hash`), if there is one. A
    /// checkpoint that exists but cannot be read is [`StoreError::Corrupt`].
    fn head_checkpoint(&self) -> Result<Option<(u64, String)>, StoreError> {
        Ok(None)
    }
}

/// A ledger store that can also append. Every store chains, redacts and caps through
/// `nightwatch_ledger::PreparedEntry`, so records are the same whichever store wrote them.
pub trait Ledger: LedgerReader {
    /// Redacts, caps, chains and durably commits `entry`; returns the stored record.
    fn append(&self, entry: Entry) -> Result<Record, StoreError>;

    /// Appends `entries` in order, one after the other on the chain. A store that can commits
    /// them together, once (the default appends one at a time); either way each is durable
    /// when this returns.
    fn append_all(&self, entries: Vec<Entry>) -> Result<Vec<Record>, StoreError> {
        entries.into_iter().map(|e| self.append(e)).collect()
    }
}

/// Walks `ledger`'s chain and compares its tail with the head checkpoint; see
/// [`nightwatch_ledger::verify_chain`] for what it detects. Errors only when the store cannot
/// be read.
pub fn verify(ledger: &dyn LedgerReader) -> Result<VerifyReport, StoreError> {
    let checkpoint = match ledger.head_checkpoint() {
        Ok(None) => Checkpoint::None,
        Ok(Some((seq, hash))) => Checkpoint::At(seq, hash),
        Err(e @ StoreError::Corrupt { .. }) => Checkpoint::Unreadable(e.to_string()),
        Err(e) => return Err(e),
    };
    verify_chain(checkpoint, |visit| ledger.scan_chain(visit))
}

// A shared handle is a store: `&Arc<dyn Ledger>` goes wherever `&dyn Ledger` does.
impl<T: LedgerReader + ?Sized> LedgerReader for Arc<T> {
    fn get(&self, id_or_seq: &str) -> Result<Option<Record>, StoreError> {
        (**self).get(id_or_seq)
    }
    fn query(&self, filter: &Filter) -> Result<Vec<Record>, StoreError> {
        (**self).query(filter)
    }
    fn decision_for_call(&self, call_id: &str) -> Result<Option<Record>, StoreError> {
        (**self).decision_for_call(call_id)
    }
    fn scan(
        &self,
        visit: &mut dyn FnMut(&Record) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        (**self).scan(visit)
    }
    fn scan_chain(
        &self,
        visit: &mut dyn FnMut(&ChainLink<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        (**self).scan_chain(visit)
    }
    fn head_checkpoint(&self) -> Result<Option<(u64, String)>, StoreError> {
        (**self).head_checkpoint()
    }
}

impl<T: Ledger + ?Sized> Ledger for Arc<T> {
    fn append(&self, entry: Entry) -> Result<Record, StoreError> {
        (**self).append(entry)
    }
    fn append_all(&self, entries: Vec<Entry>) -> Result<Vec<Record>, StoreError> {
        (**self).append_all(entries)
    }
}
