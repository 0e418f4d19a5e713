//! The store interface: what nightwatch keeps, as traits, with no backend in them.
//!
//! - [`Ledger`] (and its read half, [`LedgerReader`]): the append-only, hash-chained record of
//!   every decision and result. The record schema, its canonical encoding and redaction are
//!   `nightwatch-ledger`'s; a store only keeps the fields it is handed.
//! - [`TaskQueue`]: the daemon's durable queue; the pure lifecycle is `nightwatch-tasks`'.
//! - [`AlertInbox`]: every alert that arrived, stored before its sender gets a reply;
//!   [`FleetInbox`], every host's arrivals read together.
//! - [`JanitorStore`]: the janitor's memory (first sightings, activity, failures).
//! - [`FleetLedger`]: every host's ledger held together, filled by [`ship`].
//! - [`Leases`]: named leases with fencing tokens, for jobs that run in exactly one place.
//!
//! Every call fails with one [`StoreError`] (or, for the queue, [`TaskError`], which wraps it),
//! which names no backend: a backend turns its own errors into it. The embedded backend is
//! `nightwatch-sqlite`; the fleet one, in PostgreSQL, is `nightwatch-postgres`, and both pass
//! `nightwatch-store-conformance`'s suite. [`memory`] holds an
//! in-memory ledger for tests in process, chaining and redacting exactly as every store must.
//!
//! Invariants: nothing here does I/O or names a database; every trait is object-safe and
//! `Send + Sync`, so callers hold `Arc<dyn ...>` and never know which backend is in use.

mod fleet;
mod inbox;
mod janitor;
mod leases;
mod ledger;
pub mod memory;
mod tasks;

pub use fleet::{FleetCursor, FleetHost, FleetLedger, FleetRecord, ShipError, Shipped, ship};
pub use inbox::{
    AlertEvent, AlertInbox, Arrival, ArrivalCursor, Disposition, FleetArrival, FleetInbox,
    Settlement,
};
pub use janitor::JanitorStore;
pub use leases::{Acquired, Lease, Leases};
pub use ledger::{Ledger, LedgerReader, verify};
pub use tasks::{
    Answer, Claim, Escalation, NotedRunbook, Offer, Offered, QueueOp, ReadySignal, Resolved,
    RunbookProcess, Task, TaskError, TaskEvent, TaskFilter, TaskQueue,
};

use std::path::PathBuf;

/// Why a store could not do what was asked. Nothing was written unless the variant says so.
///
/// `store` names which store failed, as a person would (`ledger`, `task queue`, `alert inbox`,
/// `janitor state`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The data directory (or a file in it) cannot be created, read or written.
    #[error("cannot use the data directory {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Other writers held the store for longer than this caller waits.
    #[error(
        "the {store} stayed busy for {waited_ms} ms (other writers held it); nothing was written"
    )]
    Busy { store: &'static str, waited_ms: u64 },
    /// What the store holds cannot be read back as what was written.
    #[error("the {store} is damaged: {what}")]
    Corrupt { store: &'static str, what: String },
    /// The store was written by a newer nightwatch; this one must not touch it.
    #[error(
        "the {store} has schema version {found}; this nightwatch knows up to {known}: upgrade nightwatch"
    )]
    SchemaTooNew {
        store: &'static str,
        found: i64,
        known: i64,
    },
    /// The backend failed; its own error, as text.
    #[error("{store}: {message}")]
    Backend {
        store: &'static str,
        message: String,
    },
    /// A caller's visitor (in [`LedgerReader::scan`]) stopped the walk with this message.
    #[error("{0}")]
    Visit(String),
}

/// The names [`StoreError`] uses for each store.
pub mod store_name {
    pub const LEDGER: &str = "ledger";
    pub const TASKS: &str = "task queue";
    pub const INBOX: &str = "alert inbox";
    pub const JANITOR: &str = "janitor state";
    pub const FLEET: &str = "fleet ledger";
    pub const LEASES: &str = "leases";
}
