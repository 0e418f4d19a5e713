//! A watcher's query: a row or none, read-only, bounded in time.

use nightwatch_sqlite::query_returns_row;
use std::time::{Duration, Instant};

const SECOND: Duration = Duration::from_secs(1);

fn database() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE jobs (name TEXT, finished_at INTEGER);
         INSERT INTO jobs VALUES ('backup', 1000);",
    )
    .unwrap();
    (dir, path)
}

#[test]
fn a_query_returns_a_row_or_none() {
    let (_dir, path) = database();
    assert!(query_returns_row(&path, "SELECT 1 FROM jobs WHERE name = 'backup'", SECOND).unwrap());
    assert!(
        !query_returns_row(&path, "SELECT 1 FROM jobs WHERE finished_at > 5000", SECOND).unwrap()
    );
}

#[test]
fn a_query_cannot_write_or_create() {
    let (dir, path) = database();
    let err = query_returns_row(&path, "DELETE FROM jobs RETURNING name", SECOND).unwrap_err();
    assert!(
        err.to_string().contains("readonly") || err.to_string().contains("read"),
        "{err}"
    );
    assert!(
        query_returns_row(&path, "SELECT 1 FROM jobs", SECOND).unwrap(),
        "the row is still there"
    );
    let missing = dir.path().join("missing.db");
    let err = query_returns_row(&missing, "SELECT 1", SECOND).unwrap_err();
    assert!(err.to_string().contains("missing.db"), "{err}");
    assert!(
        !missing.exists(),
        "opening read-only never creates the file"
    );
}

#[test]
fn a_query_past_its_timeout_is_interrupted() {
    let (_dir, path) = database();
    let start = Instant::now();
    let endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) \
                   SELECT 1 FROM n WHERE i < 0";
    let err = query_returns_row(&path, endless, Duration::from_millis(200)).unwrap_err();
    assert!(err.to_string().contains("timeout"), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}
