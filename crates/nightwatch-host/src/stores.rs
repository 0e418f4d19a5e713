//! The one place that chooses where nightwatch's data is kept: every store is opened here,
//! from the data directory (and, for a host in a fleet, the fleet's PostgreSQL database), and
//! handed on as a `nightwatch-store` trait object. Nothing else in the binary (or above the
//! traits) names the backend.
//!
//! A host's own ledger is always its SQLite file: a decision is durable on the host before
//! its verdict leaves, whether or not the fleet database answers. In a fleet
//! (`NIGHTWATCH_DATABASE_URL` set), the daemon's queue and inbox are the fleet's, shared by
//! every host's daemon, and the daemon ships the host's ledger to the fleet store. So are the
//! leases of jobs that run in one place only: the fleet's, so one host of the fleet runs them;
//! for a host alone, its data directory's `leases.db`.
//!
//! The databases a `query:` watcher asks are reached here too ([`HostDatabases`]): a
//! `postgres://` URL goes to PostgreSQL, anything else is a SQLite file.

use crate::environment::Environment;
use nightwatch_postgres::{PgOptions, PgStores};
use nightwatch_serve::{FleetStore, Stores};
use nightwatch_sqlite::{
    LedgerOptions, SqliteInbox, SqliteJanitorStore, SqliteLeases, SqliteLedger, SqliteTaskQueue,
};
use nightwatch_store::{
    AlertInbox, FleetLedger, JanitorStore, Leases, Ledger, StoreError, TaskQueue,
};
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

/// Where a fleet's shared stores are, and the name this host goes by there.
#[derive(Clone, Debug)]
pub struct Fleet {
    /// A PostgreSQL connection string (`postgres://user@host/db`, or `host=... dbname=...`).
    pub url: String,
    pub host: String,
}

/// The fleet this host is in: `NIGHTWATCH_DATABASE_URL` names its database, and the host goes
/// by its record name (`NIGHTWATCH_HOST`, else the machine's name). None: the host is alone.
pub fn fleet(env: &Environment) -> anyhow::Result<Option<Fleet>> {
    let Some(url) = env.var("NIGHTWATCH_DATABASE_URL") else {
        return Ok(None);
    };
    let host = crate::context::from_env(env).host.ok_or_else(|| {
        anyhow::anyhow!(
            "NIGHTWATCH_DATABASE_URL is set but this host has no name to use in the fleet: set NIGHTWATCH_HOST"
        )
    })?;
    Ok(Some(Fleet {
        url: url.to_owned(),
        host,
    }))
}

/// The fleet's stores, as `fleet.host`. A call waits a few seconds for the database, not a
/// minute: on the daemon's intake a database that is away is a 503 the sender retries, and
/// shipping waits for the next round.
fn fleet_stores(fleet: &Fleet) -> Result<PgStores, StoreError> {
    let options = PgOptions {
        patience: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(3),
        ..PgOptions::default()
    };
    PgStores::connect_with(&fleet.url, &fleet.host, options)
}

/// What the fleet holds, for reading (`verify --fleet`, `fleet status`).
pub struct FleetView {
    pub ledger: Arc<dyn FleetLedger>,
    pub tasks: Arc<dyn TaskQueue>,
    /// The fleet's leases and their last holders.
    pub leases: Arc<dyn Leases>,
}

pub fn fleet_view(fleet: &Fleet) -> Result<FleetView, StoreError> {
    let stores = fleet_stores(fleet)?;
    Ok(FleetView {
        ledger: stores.fleet(),
        tasks: stores.task_queue(nightwatch_tasks::Policy::default()),
        leases: stores.leases(),
    })
}

/// Everything `nightwatch serve` keeps: in data directory `dir`, and in the fleet's database
/// when the host is in one; its queue applies `policy`.
pub fn daemon(
    dir: &Path,
    policy: nightwatch_tasks::Policy,
    fleet: Option<&Fleet>,
) -> Result<Stores, StoreError> {
    type Shared = (Arc<dyn AlertInbox>, Arc<dyn TaskQueue>, Arc<dyn Leases>);
    let ((inbox, tasks, leases), fleet): (Shared, _) = match fleet {
        Some(at) => {
            let shared = fleet_stores(at)?;
            let fleet = FleetStore {
                host: at.host.clone(),
                ledger: shared.fleet(),
                inbox: shared.fleet_inbox(),
            };
            (
                (shared.inbox(), shared.task_queue(policy), shared.leases()),
                Some(fleet),
            )
        }
        // The daemon's commits are on its senders' path; the WAL checkpoints happen beside them.
        None => (
            (
                Arc::new(SqliteInbox::open(dir)?.checkpoint_apart()?),
                Arc::new(SqliteTaskQueue::open(dir, policy)?.checkpoint_apart()?),
                Arc::new(SqliteLeases::open(dir)?),
            ),
            None,
        ),
    };
    Ok(Stores {
        inbox,
        tasks,
        fleet,
        leases,
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

/// The databases `query:` watchers ask: `postgres://` and `postgresql://` URLs through
/// nightwatch-postgres, anything else as a SQLite file's path through nightwatch-sqlite; both
/// read-only and bounded by the watcher's timeout.
pub struct HostDatabases;

impl nightwatch_watch::Databases for HostDatabases {
    fn returns_row(&self, url: &str, sql: &str, timeout: Duration) -> Result<bool, String> {
        let answer = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            nightwatch_postgres::query_returns_row(url, sql, timeout)
        } else {
            nightwatch_sqlite::query_returns_row(Path::new(url), sql, timeout)
        };
        answer.map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nightwatch_ledger::{Entry, RecordActor, event};
    use nightwatch_watch::Databases;

    #[test]
    fn a_sqlite_path_and_a_postgres_url_each_reach_their_backend() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ledger = SqliteLedger::open(dir.path()).expect("ledger");
        let file = dir.path().join("ledger.db");
        let file = file.to_str().expect("utf-8 path");
        let second = Duration::from_secs(5);
        let sql = "SELECT 1 FROM records WHERE event = 'decision'";
        assert_eq!(HostDatabases.returns_row(file, sql, second), Ok(false));
        let actor = RecordActor {
            kind: "agent".into(),
            id: "a".into(),
        };
        ledger
            .append(Entry::new(event::DECISION, 1, actor, "exec"))
            .expect("append");
        assert_eq!(HostDatabases.returns_row(file, sql, second), Ok(true));
        // Nothing listens on port 1: the URL went to PostgreSQL, which says where it tried.
        let url = "postgres://watch@127.0.0.1:1/app?connect_timeout=2";
        let error = HostDatabases
            .returns_row(url, "SELECT 1", second)
            .expect_err("nothing listens");
        assert!(error.contains("cannot connect to PostgreSQL"), "{error}");
    }
}
