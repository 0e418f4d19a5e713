//! The fleet stores: every `nightwatch-store` trait in one PostgreSQL database that several
//! hosts share.
//!
//! | store | tables | key | type |
//! | --- | --- | --- | --- |
//! | ledger | `ledger_records`, `ledger_heads` | `(host, seq)`; `host` | [`PgLedger`] |
//! | task queue | `tasks`, `task_events`, `task_counts` | `id` (one queue for the fleet) | [`PgTaskQueue`] |
//! | alert inbox | `alert_events`, `alert_event_ids` | `(host, id)`; `host` | [`PgInbox`], [`PgFleetInbox`] |
//! | fleet hosts | `fleet_hosts` (+ the ledger's tables) | `host` | [`PgFleet`] |
//! | janitor state | `janitor_first_seen`, `janitor_activity`, `janitor_failures` | `(host, kind, id)` | [`PgJanitorStore`] |
//! | leases | `leases` | `name` (one per job, for the fleet) | [`PgLeases`] |
//!
//! Every table that holds a host's data has `host TEXT NOT NULL`, and a handle is opened for
//! one host: [`PgStores::connect`]`(url, host)`. Where a record or an alert names a host of
//! its own, that column is `context_host` (ledger) or `alert_host` (inbox).
//!
//! - **Ledger.** Each host has its own chain, computed exactly as the SQLite ledger does
//!   (`nightwatch_ledger::PreparedEntry`, so the same entries make byte-for-byte the same
//!   records). An append locks the host's row of `ledger_heads` (`FOR UPDATE`), reads the
//!   tail, inserts after it and moves the head, in one transaction: two processes of one
//!   host never fork its chain, and hosts never wait for each other. The head row is the
//!   head checkpoint `verify` compares the tail with; a trigger lets it only move forward,
//!   and triggers refuse `UPDATE`, `DELETE` and `TRUNCATE` of records. [`PgLedger::ship`]
//!   stores records a host chained elsewhere, idempotent by `(host, seq)`.
//! - **Task queue.** One queue for the fleet. A write locks the rows it decides on and asks
//!   `nightwatch_tasks::machine` what happens, as SQLite's queue does; a claim takes the
//!   oldest ready row `FOR UPDATE SKIP LOCKED`, so workers on any host claim different
//!   tasks without waiting; heartbeats and results are fenced by attempt. A unique partial
//!   index keeps one live task per identity across hosts: an offer inserts `ON CONFLICT DO
//!   NOTHING` and, when another host's daemon got there first, attaches to its task. A
//!   route's hourly limit is counted under a per-route advisory lock, so hosts do not both
//!   take the last place. A task that becomes claimable sends `NOTIFY nightwatch_tasks`
//!   ([`TASKS_CHANNEL`]). Counts per status are kept as `+1`/`-1` rows (no hot counter row),
//!   summed and folded by `counts`.
//! - **Inbox and janitor state**: a host's rows, as in SQLite. Inbox ids count 1, 2, 3, ...
//!   per host from a counter row each `receive` locks, so ids commit in order and the
//!   `after` cursor reads every arrival once.
//! - **Leases**: one row per name for the whole fleet (the holder is a column, not the key).
//!   Acquiring is one `INSERT ... ON CONFLICT (name) DO UPDATE ... WHERE` the lease expired
//!   or is already the holder's, so hosts acquiring at once get exactly one holder; every
//!   acquisition's token is the last one plus one, and renew and release are fenced by it.
//!
//! Transactions run at READ COMMITTED with explicit row locks; one aborted by a deadlock or a
//! serialization failure is run again, with backoff, for the handle's patience, then
//! `StoreError::Busy`. Each store's schema is a list of numbered migrations recorded in
//! `schema_migrations (store, version)` and applied under a transaction-scoped advisory lock,
//! so hosts opening one database at once migrate it exactly once; a database from a newer
//! nightwatch is refused with `StoreError::SchemaTooNew`.
//!
//! The driver is the synchronous `postgres` crate behind an `r2d2` pool whose connections
//! keep the stores' typed statements prepared (`db::Conn`, `db::Tx`). It runs its own
//! small runtime per connection, so the traits must be called from blocking threads (as
//! every caller of the store traits does), never directly on an async worker. Connections
//! use TLS when the connection string asks for it, always verifying the server (`tls`).
//!
//! Invariant: this is the only crate that names PostgreSQL's driver; no error leaving it
//! carries the driver's types (they become `StoreError`).

mod db;
mod fleet;
mod inbox;
mod janitor;
mod leases;
mod ledger;
mod query;
mod tasks;
mod text;
pub mod tls;

pub use db::PgOptions;
pub use fleet::PgFleet;
pub use inbox::{PgFleetInbox, PgInbox};
pub use janitor::PgJanitorStore;
pub use leases::PgLeases;
pub use ledger::PgLedger;
pub use query::query_returns_row;
pub use tasks::{PgTaskQueue, TASKS_CHANNEL};

use db::{Db, Pool};
use nightwatch_store::{StoreError, store_name};
use nightwatch_tasks::Policy;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// The four stores of one host in a PostgreSQL database: connected, migrated, and sharing
/// one pool of connections.
#[derive(Clone)]
pub struct PgStores {
    pool: Pool,
    host: String,
    options: PgOptions,
    /// Queue writes through these stores (every handle), counted for folding the counts.
    task_writes: Arc<AtomicU64>,
}

impl PgStores {
    /// Connects to `url` (`postgres://user@host/db`, or `host=... dbname=...`) as `host`,
    /// with default options, and migrates every store. An unreachable server, a refused
    /// login or an unreadable URL is an error that says where it tried.
    pub fn connect(url: &str, host: &str) -> Result<PgStores, StoreError> {
        PgStores::connect_with(url, host, PgOptions::default())
    }

    pub fn connect_with(url: &str, host: &str, options: PgOptions) -> Result<PgStores, StoreError> {
        if host.is_empty() {
            return Err(StoreError::Backend {
                store: store_name::LEDGER,
                message: "a host name is needed to open the fleet's stores".into(),
            });
        }
        let config = db::config(url, &options, store_name::LEDGER)?;
        let mut client = db::connect_once(&config, store_name::LEDGER)?;
        for schema in [
            &ledger::SCHEMA,
            &tasks::SCHEMA,
            &inbox::SCHEMA,
            &janitor::SCHEMA,
            &fleet::SCHEMA,
            &leases::SCHEMA,
        ] {
            db::migrate(&mut client, schema)?;
        }
        Ok(PgStores {
            pool: db::pool(config, &options),
            host: host.to_string(),
            options,
            task_writes: Arc::default(),
        })
    }

    /// The host these stores read and write as.
    pub fn host(&self) -> &str {
        &self.host
    }

    fn db(&self, store: &'static str) -> Db {
        Db::new(self.pool.clone(), store, self.options.patience)
    }

    /// This host's ledger.
    pub fn ledger(&self) -> Arc<PgLedger> {
        Arc::new(PgLedger::new(
            self.db(store_name::LEDGER),
            &self.host,
            self.options.output_cap,
        ))
    }

    /// Another host's chain in the same database: for shipping that host's records, and
    /// for reading them.
    pub fn ledger_of(&self, host: &str) -> Arc<PgLedger> {
        Arc::new(PgLedger::new(
            self.db(store_name::LEDGER),
            host,
            self.options.output_cap,
        ))
    }

    /// The fleet's task queue, applying `policy`, offering and changing tasks as this host.
    pub fn task_queue(&self, policy: Policy) -> Arc<PgTaskQueue> {
        Arc::new(PgTaskQueue::new(
            self.db(store_name::TASKS),
            &self.host,
            policy,
            self.task_writes.clone(),
        ))
    }

    /// This host's alert inbox.
    pub fn inbox(&self) -> Arc<PgInbox> {
        Arc::new(PgInbox::new(self.db(store_name::INBOX), &self.host))
    }

    /// Every host's arrivals, read together.
    pub fn fleet_inbox(&self) -> Arc<PgFleetInbox> {
        Arc::new(PgFleetInbox::new(self.db(store_name::INBOX)))
    }

    /// Every host's chain, as the fleet holds it.
    pub fn fleet(&self) -> Arc<PgFleet> {
        Arc::new(PgFleet {
            db: self.db(store_name::FLEET),
            stores: self.clone(),
        })
    }

    /// The fleet's leases (shared by every host: the holder is named when acquiring).
    pub fn leases(&self) -> Arc<PgLeases> {
        Arc::new(PgLeases::new(self.db(store_name::LEASES)))
    }

    /// This host's janitor state.
    pub fn janitor(&self) -> Arc<PgJanitorStore> {
        Arc::new(PgJanitorStore::new(
            self.db(store_name::JANITOR),
            &self.host,
        ))
    }
}
