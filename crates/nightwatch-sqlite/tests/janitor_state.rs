//! `janitor.db` survives restarts and merges with an event watcher writing beside it.

use nightwatch_janitor::{
    BranchFacts, ContainerFacts, Facts, FailureRules, Item, JanitorState, Kind, PrState,
};
use nightwatch_sqlite::SqliteJanitorStore;
use nightwatch_store::JanitorStore;

fn container(id: &str, name: &str, edit: impl FnOnce(&mut ContainerFacts)) -> Item {
    let mut facts = ContainerFacts::default();
    edit(&mut facts);
    Item {
        id: id.into(),
        name: name.into(),
        facts: Facts::Container(facts),
    }
}

fn branch(name: &str, edit: impl FnOnce(&mut BranchFacts)) -> Item {
    let mut facts = BranchFacts {
        repo: "/src/app".into(),
        name: name.into(),
        tip: "abc123def4567890".into(),
        merged_commit: Some("abc123def4567890".into()),
        pr: PrState::NoPr,
        tip_time_ms: None,
        checked_out_in: None,
    };
    edit(&mut facts);
    Item {
        id: format!("/src/app#{name}"),
        name: name.into(),
        facts: Facts::Branch(facts),
    }
}

#[test]
fn state_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let rules = FailureRules::default();
    let mut state = JanitorState::new();
    state.observe(
        &[container("c1", "pg", |_| {}), branch("fix", |_| {})],
        1_000,
    );
    state.note_activity(Kind::Container, "c1", 5_000);
    for _ in 0..5 {
        state.record_failure(Kind::Container, "c1", 10_000, &rules, "remove: busy");
    }
    {
        let store = SqliteJanitorStore::open(dir.path()).unwrap();
        store.save(&mut state).unwrap();
        assert_eq!(store.path(), dir.path().join("janitor.db"));
    }
    let store = SqliteJanitorStore::open(dir.path()).unwrap();
    let loaded = store.load().unwrap();
    assert_eq!(loaded, state);
    let failures = loaded.failures(Kind::Container, "c1").unwrap();
    assert!(failures.quarantined);
    assert_eq!(failures.count, 5);
    assert_eq!(loaded.first_seen(Kind::Branch, "/src/app#fix"), Some(1_000));

    let conn = rusqlite::Connection::open(dir.path().join("janitor.db")).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_watcher_and_a_sweep_do_not_overwrite_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let sweep_store = SqliteJanitorStore::open(dir.path()).unwrap();
    let mut state = sweep_store.load().unwrap();
    state.note_activity(Kind::Container, "c1", 5_000);
    state.note_first_seen(Kind::Container, "c1", 9_000);

    // The event watcher, in another process, sees a newer exec and an earlier sighting.
    let watcher = SqliteJanitorStore::open(dir.path()).unwrap();
    watcher.note_activity(Kind::Container, "c1", 7_000).unwrap();
    watcher.note_activity(Kind::Container, "c1", 6_000).unwrap();

    sweep_store.save(&mut state).unwrap();
    assert_eq!(
        watcher.activity(Kind::Container, "c1").unwrap(),
        Some(7_000),
        "activity only moves later"
    );
    let mut earlier = JanitorState::new();
    earlier.note_first_seen(Kind::Container, "c1", 2_000);
    sweep_store.save(&mut earlier).unwrap();
    let loaded = sweep_store.load().unwrap();
    assert_eq!(loaded.first_seen(Kind::Container, "c1"), Some(2_000));
}

#[test]
fn removed_and_released_items_are_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteJanitorStore::open(dir.path()).unwrap();
    let rules = FailureRules::default();
    let mut state = JanitorState::new();
    state.note_first_seen(Kind::Container, "gone", 1);
    state.note_first_seen(Kind::Container, "stuck", 1);
    state.note_first_seen(Kind::Container, "listed", 1);
    state.record_failure(Kind::Container, "stuck", 10, &rules, "busy");
    store.save(&mut state).unwrap();

    state.forget(Kind::Container, "gone");
    assert!(state.release(Kind::Container, "stuck"));
    assert!(!state.release(Kind::Container, "stuck"));
    store.save(&mut state).unwrap();
    let loaded = store.load().unwrap();
    assert_eq!(loaded.first_seen(Kind::Container, "gone"), None);
    assert_eq!(loaded.first_seen(Kind::Container, "stuck"), Some(1));
    assert!(loaded.failures(Kind::Container, "stuck").is_none());

    // A complete listing without "stuck": it is gone, so its memory goes too.
    let mut state = loaded;
    state.retain_listed(Kind::Container, &[container("listed", "l", |_| {})]);
    store.save(&mut state).unwrap();
    let loaded = store.load().unwrap();
    assert_eq!(loaded.first_seen(Kind::Container, "stuck"), None);
    assert_eq!(loaded.first_seen(Kind::Container, "listed"), Some(1));
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(SqliteJanitorStore::open(dir.path()).unwrap());
    let conn = rusqlite::Connection::open(dir.path().join("janitor.db")).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let error = SqliteJanitorStore::open(dir.path())
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("schema version 99"), "{error}");
}
