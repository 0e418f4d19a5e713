//! What the watchers' tests lend a run: a clock fixed by the test, a ledger, and small
//! implementations of the database and container seams.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use nightwatch_store::LedgerReader;
use nightwatch_watch::{ContainerFacts, Containers, Databases, Env, Observation, Seen};

/// 2026-12-01T00:00:00Z.
pub const NOW_MS: i64 = 1_796_083_200_000;

/// Answers every query with what the test set, remembering what was asked.
#[derive(Default)]
pub struct AnsweringDatabases {
    pub answer: Mutex<Option<Result<bool, String>>>,
    pub asked: Mutex<Vec<(String, String)>>,
}

impl Databases for AnsweringDatabases {
    fn returns_row(&self, url: &str, sql: &str, _timeout: Duration) -> Result<bool, String> {
        self.asked
            .lock()
            .unwrap()
            .push((url.to_owned(), sql.to_owned()));
        self.answer
            .lock()
            .unwrap()
            .clone()
            .unwrap_or_else(|| Err("no answer set".into()))
    }
}

/// Containers the test sets and changes.
#[derive(Default)]
pub struct TestContainers {
    pub by_name: Mutex<BTreeMap<String, ContainerFacts>>,
}

impl TestContainers {
    pub fn set(&self, name: &str, facts: ContainerFacts) {
        self.by_name.lock().unwrap().insert(name.to_owned(), facts);
    }

    pub fn set_state(&self, name: &str, state: &str) {
        self.by_name
            .lock()
            .unwrap()
            .entry(name.to_owned())
            .or_default()
            .state = state.to_owned();
    }
}

impl Containers for TestContainers {
    fn inspect(&self, name: &str) -> Result<Option<ContainerFacts>, String> {
        Ok(self.by_name.lock().unwrap().get(name).cloned())
    }
}

pub fn env<'a>(
    now_ms: i64,
    ledger: &'a dyn LedgerReader,
    databases: &'a dyn Databases,
    containers: &'a dyn Containers,
) -> Env<'a> {
    Env {
        now_ms,
        ledger,
        databases,
        containers,
        timeout: Duration::from_secs(5),
        reference_clock_ms: None,
    }
}

/// The one observation a run made, checked to be `seen`.
pub fn only(observations: Vec<Observation>, seen: Seen) -> Observation {
    assert_eq!(observations.len(), 1, "{observations:#?}");
    let o = observations.into_iter().next().unwrap();
    assert_eq!(o.seen, seen, "{o:#?}");
    o
}
