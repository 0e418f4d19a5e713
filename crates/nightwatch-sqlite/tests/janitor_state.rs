//! What only SQLite's `janitor.db` has: where it lives, WAL, and refusing a newer schema. The
//! store's behaviour is the shared conformance suite (`conformance.rs`).

use nightwatch_janitor::{JanitorState, Kind};
use nightwatch_sqlite::SqliteJanitorStore;
use nightwatch_store::JanitorStore;

#[test]
fn the_state_is_kept_in_janitor_db_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteJanitorStore::open(dir.path()).unwrap();
    let mut state = JanitorState::new();
    state.note_first_seen(Kind::Container, "c1", 1_000);
    store.save(&mut state).unwrap();
    assert_eq!(store.path(), dir.path().join("janitor.db"));
    let conn = rusqlite::Connection::open(dir.path().join("janitor.db")).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let kept: i64 = conn
        .query_row("SELECT at_ms FROM first_seen WHERE id = 'c1'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(kept, 1_000);
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
