//! One read-only query for a watcher: "does this database still hold the row it should?"

use crate::db::{PgOptions, backend, config, connect_once};
use nightwatch_store::StoreError;
use std::time::Duration;

/// What [`StoreError`] calls a watched database.
const STORE: &str = "watched database";

/// Whether `sql` returns at least one row from the PostgreSQL database at `url`, within
/// `timeout`: one connection (opened within `timeout` unless the URL says otherwise), the
/// statement run in a `READ ONLY` transaction with `statement_timeout`, only the first row
/// read, then rolled back. Errors name the server, never the URL's password.
pub fn query_returns_row(url: &str, sql: &str, timeout: Duration) -> Result<bool, StoreError> {
    let options = PgOptions {
        connect_timeout: timeout,
        ..PgOptions::default()
    };
    let config = config(url, &options, STORE)?;
    let mut client = connect_once(&config, STORE)?;
    let millis = timeout.as_millis().clamp(1, i32::MAX as u128);
    client
        .batch_execute(&format!("SET statement_timeout = {millis}"))
        .map_err(|e| backend(STORE, e))?;
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .start()
        .map_err(|e| backend(STORE, e))?;
    let none: [&(dyn postgres::types::ToSql + Sync); 0] = [];
    let first = {
        let mut rows = tx.query_raw(sql, none).map_err(|e| backend(STORE, e))?;
        postgres::fallible_iterator::FallibleIterator::next(&mut rows)
            .map_err(|e| backend(STORE, e))?
            .is_some()
    };
    // Nothing was written; rolling back ends the transaction without a commit.
    let _ = tx.rollback();
    Ok(first)
}
