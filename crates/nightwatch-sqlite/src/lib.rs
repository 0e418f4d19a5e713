//! The embedded stores: every `nightwatch-store` trait in SQLite, one file each in the data
//! directory.
//!
//! | store | file | type |
//! | --- | --- | --- |
//! | ledger | `ledger.db` (+ `ledger.head`) | [`SqliteLedger`] |
//! | task queue | `tasks.db` | [`SqliteTaskQueue`] |
//! | alert inbox | `alerts.db` | [`SqliteInbox`] |
//! | janitor state | `janitor.db` | [`SqliteJanitorStore`] |
//! | leases | `leases.db` | [`SqliteLeases`] |
//!
//! All of them are opened by one function (`db::Db::open`): create the directory, open the file,
//! WAL, `synchronous=FULL`, one busy timeout, and the directory synced when a file is new.
//! Every write is a `BEGIN IMMEDIATE` transaction retried by one loop with jittered backoff
//! while other writers hold the file, up to the handle's patience, then
//! `StoreError::Busy`. Every schema is a list of migrations numbered by
//! `PRAGMA user_version`, applied in one write transaction that reads the version itself (so
//! of several processes opening a new file at once, one migrates); a file from a newer
//! nightwatch is refused with `StoreError::SchemaTooNew`. Files written before the scheme
//! was shared open and upgrade in place: the ledger was numbered already (1, 2), the janitor's
//! file was at 1, the task queue's and the inbox's were unnumbered (0) and their first
//! migration is the schema they had, written idempotently.
//!
//! Invariant: this is the only crate that names SQLite; no error leaving it carries
//! `rusqlite`'s types (they become `StoreError`).
//!
//! ```
//! use nightwatch_sqlite::SqliteTaskQueue;
//! use nightwatch_store::{Offered, TaskQueue};
//! use nightwatch_tasks::{Outcome, Policy, Status};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let queue = SqliteTaskQueue::open(dir.path(), Policy::default()).unwrap();
//! let Offered::Created(id) = queue.offer("disk-full/db1", "{}", "runbook:disk", 0).unwrap()
//! else { unreachable!() };
//! let claim = queue.claim("worker-1", 0, 60_000).unwrap().unwrap();
//! assert_eq!(claim.task_id, id);
//! let status = queue.complete(id, claim.attempt, &Outcome::Succeeded, 1_000).unwrap();
//! assert_eq!(status, Status::Done);
//! assert_eq!(queue.events(id).unwrap().len(), 3); // offered, claimed, succeeded
//! ```

mod db;
mod inbox;
mod janitor;
mod leases;
mod ledger;
mod query;
mod tasks;

pub use db::DEFAULT_PATIENCE;
pub use inbox::SqliteInbox;
pub use janitor::SqliteJanitorStore;
pub use leases::SqliteLeases;
pub use ledger::{HEAD_FILE, LedgerOptions, SqliteLedger};
pub use query::query_returns_row;
pub use tasks::SqliteTaskQueue;
