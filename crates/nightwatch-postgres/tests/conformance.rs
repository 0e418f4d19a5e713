//! The shared conformance suite (`nightwatch-store-conformance`) against the PostgreSQL
//! stores: each place is a database of its own on the test server, each handle a fresh
//! connection (`PgStores::connect`) to it, as another process would make.

mod support;

use nightwatch_postgres::{PgOptions, PgStores};
use nightwatch_store::{AlertInbox, JanitorStore, Leases, Ledger, TaskQueue};
use nightwatch_store_conformance::{Backend, Place};
use nightwatch_tasks::Policy;
use std::sync::Arc;

struct Postgres;

struct Database(support::TestDatabase);

impl Backend for Postgres {
    fn place(&self) -> Box<dyn Place> {
        Box::new(Database(support::database()))
    }
}

impl Database {
    fn stores(&self, output_cap: usize) -> PgStores {
        let options = PgOptions {
            output_cap,
            ..PgOptions::default()
        };
        PgStores::connect_with(&self.0.url, "db1.example", options).unwrap()
    }
}

impl Place for Database {
    fn ledger(&self, output_cap: usize) -> Arc<dyn Ledger> {
        self.stores(output_cap).ledger()
    }

    fn queue(&self, policy: Policy) -> Arc<dyn TaskQueue> {
        self.stores(0).task_queue(policy)
    }

    fn inbox(&self) -> Arc<dyn AlertInbox> {
        self.stores(0).inbox()
    }

    fn janitor(&self) -> Arc<dyn JanitorStore> {
        self.stores(0).janitor()
    }

    fn leases(&self) -> Arc<dyn Leases> {
        self.stores(0).leases()
    }
}

fn backend() -> Postgres {
    Postgres
}

nightwatch_store_conformance::conformance_tests!(backend);
