//! The one place that chooses where nightwatch's data is kept: every store is opened here,
//! from the data directory, and handed on as a `nightwatch-store` trait object. Nothing else in
//! the binary (or above the traits) names the backend.

use nightwatch_serve::Stores;
use nightwatch_sqlite::{
    LedgerOptions, SqliteInbox, SqliteJanitorStore, SqliteLedger, SqliteTaskQueue,
};
use nightwatch_store::{JanitorStore, Ledger, StoreError};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The ledger (`ledger.db`, `ledger.head`) in data directory `dir`.
pub fn ledger(dir: &Path) -> Result<Arc<dyn Ledger>, StoreError> {
    Ok(Arc::new(SqliteLedger::open(dir)?))
}

/// The janitor's state (`janitor.db`) in data directory `dir`.
pub fn janitor_state(dir: &Path) -> Result<Arc<dyn JanitorStore>, StoreError> {
    Ok(Arc::new(SqliteJanitorStore::open(dir)?))
}

/// Everything `nightwatch serve` keeps in data directory `dir`; its queue applies `policy`.
pub fn daemon(dir: &Path, policy: nightwatch_tasks::Policy) -> Result<Stores, StoreError> {
    Ok(Stores {
        // The daemon's commits are on its senders' path; the WAL checkpoints happen beside them.
        inbox: Arc::new(SqliteInbox::open(dir)?.checkpoint_apart()?),
        tasks: Arc::new(SqliteTaskQueue::open(dir, policy)?.checkpoint_apart()?),
        // Appends on the intake path give up after a few seconds: a 503 the sender retries.
        intake_ledger: Arc::new(SqliteLedger::open_with(
            dir,
            LedgerOptions {
                patience: Duration::from_secs(3),
                checkpoint_apart: true,
                ..LedgerOptions::default()
            },
        )?),
        ledger: Arc::new(SqliteLedger::open_with(
            dir,
            LedgerOptions {
                checkpoint_apart: true,
                ..LedgerOptions::default()
            },
        )?),
    })
}
