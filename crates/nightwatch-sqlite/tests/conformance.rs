//! The shared conformance suite (`nightwatch-store-conformance`) against the SQLite stores:
//! each place is a temp data directory, each handle a store opened on it afresh.

use nightwatch_sqlite::{
    LedgerOptions, SqliteInbox, SqliteJanitorStore, SqliteLeases, SqliteLedger, SqliteTaskQueue,
};
use nightwatch_store::{AlertInbox, JanitorStore, Leases, Ledger, TaskQueue};
use nightwatch_store_conformance::{Backend, Place};
use nightwatch_tasks::Policy;
use std::sync::Arc;

struct Sqlite;

struct DataDir(tempfile::TempDir);

impl Backend for Sqlite {
    fn place(&self) -> Box<dyn Place> {
        Box::new(DataDir(tempfile::tempdir().unwrap()))
    }

    fn interleavings(&self) -> u32 {
        128
    }
}

impl Place for DataDir {
    fn ledger(&self, output_cap: usize) -> Arc<dyn Ledger> {
        let options = LedgerOptions {
            output_cap,
            ..LedgerOptions::default()
        };
        Arc::new(SqliteLedger::open_with(self.0.path(), options).unwrap())
    }

    fn queue(&self, policy: Policy) -> Arc<dyn TaskQueue> {
        Arc::new(SqliteTaskQueue::open(self.0.path(), policy).unwrap())
    }

    fn inbox(&self) -> Arc<dyn AlertInbox> {
        Arc::new(SqliteInbox::open(self.0.path()).unwrap())
    }

    fn janitor(&self) -> Arc<dyn JanitorStore> {
        Arc::new(SqliteJanitorStore::open(self.0.path()).unwrap())
    }

    fn leases(&self) -> Arc<dyn Leases> {
        Arc::new(SqliteLeases::open(self.0.path()).unwrap())
    }
}

fn backend() -> Sqlite {
    Sqlite
}

nightwatch_store_conformance::conformance_tests!(backend);
