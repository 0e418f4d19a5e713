//! A whole daemon in process for the tests: the real clock in UTC, and the SQLite stores in a
//! directory, opened as the binary opens them.

use std::path::Path;
use std::sync::Arc;

use nightwatch_gate::Clock;
use nightwatch_serve::{Config, Stores};
use nightwatch_sqlite::{SqliteInbox, SqliteLeases, SqliteLedger, SqliteTaskQueue};

/// The real time, judged in UTC.
pub struct Utc(pub jiff::tz::TimeZone);

impl Utc {
    pub fn new() -> Utc {
        Utc(jiff::tz::TimeZone::UTC)
    }
}

impl Clock for Utc {
    fn now_ms(&self) -> i64 {
        jiff::Timestamp::now().as_millisecond()
    }
    fn zone(&self) -> &jiff::tz::TimeZone {
        &self.0
    }
}

/// SQLite stores in `dir`, with the queue's policy from `config`.
pub fn sqlite_stores(config: &Config, dir: &Path) -> Stores {
    Stores {
        inbox: Arc::new(SqliteInbox::open(dir).expect("inbox")),
        tasks: Arc::new(SqliteTaskQueue::open(dir, config.queue.policy.clone()).expect("queue")),
        intake_ledger: Arc::new(SqliteLedger::open(dir).expect("ledger")),
        ledger: Arc::new(SqliteLedger::open(dir).expect("ledger")),
        fleet: None,
        leases: Arc::new(SqliteLeases::open(dir).expect("leases")),
    }
}
