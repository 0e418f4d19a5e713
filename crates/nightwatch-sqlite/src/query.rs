//! One read-only query for a watcher: "does this database still hold the row it should?"

use crate::db::backend;
use nightwatch_store::StoreError;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::time::{Duration, Instant};

/// What [`StoreError`] calls a watched database.
const STORE: &str = "watched database";

/// Whether `sql` returns at least one row from the SQLite file at `path`, within `timeout`.
///
/// The file is opened read-only (never created), with `query_only` on, so a statement that
/// would write is refused by SQLite itself; a busy writer is waited for at most `timeout`, and
/// a statement still running at the deadline is interrupted. Only the first row is read.
pub fn query_returns_row(path: &Path, sql: &str, timeout: Duration) -> Result<bool, StoreError> {
    let deadline = Instant::now() + timeout;
    let fail = |e: rusqlite::Error| match backend(STORE, e) {
        StoreError::Backend { store, message } => StoreError::Backend {
            store,
            message: format!("{}: {message}", path.display()),
        },
        other => other,
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(fail)?;
    conn.busy_timeout(timeout).map_err(fail)?;
    conn.pragma_update(None, "query_only", true).map_err(fail)?;
    // A statement still running at the deadline is interrupted from a timer thread, which the
    // query's end (this sender dropped) releases early.
    let interrupt = conn.get_interrupt_handle();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let timer = std::thread::Builder::new()
        .name("nightwatch-query-timer".to_owned())
        .spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(timeout)
            {
                interrupt.interrupt();
            }
        })
        .map_err(|e| StoreError::Backend {
            store: STORE,
            message: format!("cannot time the query: {e}"),
        })?;
    let answer = first_row(&conn, sql, deadline, &fail, path);
    drop(done);
    let _ = timer.join();
    answer
}

fn first_row(
    conn: &Connection,
    sql: &str,
    deadline: Instant,
    fail: &dyn Fn(rusqlite::Error) -> StoreError,
    path: &Path,
) -> Result<bool, StoreError> {
    // An interrupted statement fails like any other: past the deadline, it was the timer.
    let failed = |e: rusqlite::Error| {
        if Instant::now() >= deadline {
            StoreError::Backend {
                store: STORE,
                message: format!("{}: the query ran past its timeout", path.display()),
            }
        } else {
            fail(e)
        }
    };
    let mut statement = conn.prepare(sql).map_err(fail)?;
    let mut rows = statement.query([]).map_err(failed)?;
    let first = rows.next().map_err(failed)?;
    Ok(first.is_some())
}
