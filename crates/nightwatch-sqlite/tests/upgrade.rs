//! A data directory written by the release before the shared stores opens, upgrades in place,
//! reads back, and its ledger still verifies. The fixture was made by that release's binary
//! (`nightwatch exec`, `check`, `sweep plan`, and `serve` with one alert posted); see
//! `tests/fixtures/previous-release/README.md`.

use nightwatch_janitor::Kind;
use nightwatch_ledger::{Entry, Filter, RecordActor, event};
use nightwatch_sqlite::{SqliteInbox, SqliteJanitorStore, SqliteLedger, SqliteTaskQueue};
use nightwatch_store::{
    AlertInbox, JanitorStore, Ledger, LedgerReader, StoreError, TaskFilter, TaskQueue, verify,
};
use nightwatch_tasks::Policy;
use std::path::Path;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/previous-release"
);

/// A copy of the fixture, so the test upgrades its own.
fn copy_of_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(FIXTURE).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    dir
}

fn user_version(dir: &Path, file: &str) -> i64 {
    rusqlite::Connection::open(dir.join(file))
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn the_previous_releases_data_directory_opens_upgrades_and_verifies() {
    let dir = copy_of_fixture();
    let home = dir.path();
    // What the release before left: the ledger and the janitor numbered, the queue and the
    // inbox not.
    assert_eq!(user_version(home, "ledger.db"), 2);
    assert_eq!(user_version(home, "janitor.db"), 1);
    assert_eq!(user_version(home, "tasks.db"), 0);
    assert_eq!(user_version(home, "alerts.db"), 0);

    let ledger = SqliteLedger::open(home).unwrap();
    let before = verify(&ledger).unwrap();
    assert!(before.is_intact(), "{before:?}");
    assert!(before.records >= 3, "{before:?}");
    assert_eq!(
        before.head_checkpoint.as_ref().map(|c| c.0),
        Some(before.records),
        "the old checkpoint names the old tail"
    );
    let records = ledger.query(&Filter::default()).unwrap();
    assert!(records.iter().any(|r| r.event == event::DECISION));
    assert!(records.iter().any(|r| r.event == event::DISPATCH));
    for r in &records {
        assert_eq!(r.hash, r.expected_hash(), "{}", r.id);
    }

    let tasks = SqliteTaskQueue::open(home, Policy::default()).unwrap();
    let stored = tasks.tasks(&TaskFilter::default()).unwrap();
    assert_eq!(stored.len(), 1, "the posted alert's task");
    assert!(!tasks.events(stored[0].id).unwrap().is_empty());
    // The kept counts start from the tasks the old file had.
    assert_eq!(tasks.counts().unwrap(), [(stored[0].lifecycle.status, 1)]);

    let inbox = SqliteInbox::open(home).unwrap();
    assert_eq!(inbox.count().unwrap(), 1);
    let arrival = inbox.get(1).unwrap().expect("the posted alert");
    assert!(arrival.disposition.is_some(), "{arrival:?}");
    assert!(arrival.record.is_some(), "{arrival:?}");

    let janitor = SqliteJanitorStore::open(home).unwrap();
    let state = janitor.load().unwrap();
    janitor.note_activity(Kind::Container, "c1", 5).unwrap();
    assert_eq!(janitor.activity(Kind::Container, "c1").unwrap(), Some(5));
    drop(state);

    // Upgraded in place: every file numbered now.
    for file in ["ledger.db", "tasks.db", "alerts.db", "janitor.db"] {
        assert!(user_version(home, file) >= 1, "{file}");
    }

    // The old chain takes new records and still verifies, before and after reopening.
    let next = ledger
        .append(Entry::new(
            event::SESSION_START,
            1_800_000_000_000,
            RecordActor {
                kind: "agent".into(),
                id: "claude-code".into(),
            },
            "session",
        ))
        .unwrap();
    assert_eq!(next.seq, before.records + 1);
    assert_eq!(next.prev_hash, records.last().unwrap().hash);
    drop(ledger);
    let reopened = SqliteLedger::open(home).unwrap();
    let after = verify(&reopened).unwrap();
    assert!(after.is_intact(), "{after:?}");
    assert_eq!(after.records, before.records + 1);
}

#[test]
fn a_file_from_a_newer_nightwatch_is_refused_by_every_store() {
    let dir = copy_of_fixture();
    let home = dir.path();
    for file in ["ledger.db", "tasks.db", "alerts.db", "janitor.db"] {
        rusqlite::Connection::open(home.join(file))
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
    }
    let refused = [
        SqliteLedger::open(home).err(),
        SqliteTaskQueue::open(home, Policy::default()).err(),
        SqliteInbox::open(home).err(),
        SqliteJanitorStore::open(home).err(),
    ];
    for error in refused {
        match error {
            Some(StoreError::SchemaTooNew { found: 99, .. }) => {}
            other => panic!("expected schema too new, got {other:?}"),
        }
    }
}
