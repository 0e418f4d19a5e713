//! `alerts.db`: the alert inbox in SQLite. The arrival itself is written with a full sync
//! before its sender gets a reply; the settlement added later is not: lost to a power cut
//! (never to a crash: WAL keeps committed writes), it leaves the arrival unrecorded, and
//! [`AlertInbox::unrecorded`] brings it back to be decided and recorded.

use std::path::Path;

use nightwatch_store::{
    AlertEvent, AlertInbox, Arrival, Disposition, Settlement, StoreError, store_name,
};
use rusqlite::{OptionalExtension, Row, params};

use crate::db::{Db, Failure, Migration, Schema};

/// Schema 1, as files made before it was numbered have it.
const SCHEMA_1: &str = "
CREATE TABLE IF NOT EXISTS alert_events (
    id INTEGER PRIMARY KEY,
    received_ms INTEGER NOT NULL,
    source TEXT NOT NULL,
    alert_id TEXT NOT NULL,
    status TEXT NOT NULL,
    title TEXT NOT NULL,
    host TEXT,
    alert_json TEXT NOT NULL,
    disposition TEXT,
    reason TEXT,
    route TEXT,
    task_id INTEGER,
    record TEXT
);
CREATE INDEX IF NOT EXISTS alert_events_alert ON alert_events(alert_id, id);
CREATE INDEX IF NOT EXISTS alert_events_time ON alert_events(received_ms);
CREATE INDEX IF NOT EXISTS alert_events_unrecorded ON alert_events(id) WHERE record IS NULL;
";

const MIGRATIONS: [Migration; 1] = [|tx| tx.execute_batch(SCHEMA_1)];

const SCHEMA: Schema = Schema {
    file: "alerts.db",
    store: store_name::INBOX,
    migrations: &MIGRATIONS,
};

const COLUMNS: &str = "id, received_ms, source, alert_id, status, title, host, alert_json, \
     disposition, reason, route, task_id, record";

/// The store of arrivals in `alerts.db`.
pub struct SqliteInbox {
    db: Db,
}

impl SqliteInbox {
    /// Opens (creating if needed) `alerts.db` in `dir`.
    pub fn open(dir: &Path) -> Result<SqliteInbox, StoreError> {
        Ok(SqliteInbox {
            db: Db::open(dir, &SCHEMA, crate::db::DEFAULT_PATIENCE)?,
        })
    }

    /// Checkpoints the WAL on a thread of its own instead of in this handle's commits (for
    /// the daemon, whose intake waits on these commits).
    pub fn checkpoint_apart(mut self) -> Result<SqliteInbox, StoreError> {
        self.db.checkpoint_apart()?;
        Ok(self)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.db.path()
    }

    fn select(
        &self,
        clause: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<AlertEvent>, StoreError> {
        self.db.run(|conn| {
            let mut stmt =
                conn.prepare_cached(&format!("SELECT {COLUMNS} FROM alert_events {clause}"))?;
            let rows = stmt.query_map(params, |r| Ok(read_row(r)))?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row??);
            }
            Ok(out)
        })
    }
}

impl AlertInbox for SqliteInbox {
    fn receive(&self, arrivals: &[Arrival<'_>]) -> Result<Vec<i64>, StoreError> {
        if arrivals.is_empty() {
            return Ok(Vec::new());
        }
        self.db.write(|tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO alert_events (received_ms, source, alert_id, status, title, host, alert_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            arrivals
                .iter()
                .map(|arrival| {
                    insert.execute(params![
                        arrival.received_ms,
                        arrival.source,
                        arrival.alert_id,
                        arrival.status,
                        arrival.title,
                        arrival.host,
                        arrival.alert_json
                    ])?;
                    Ok(tx.last_insert_rowid())
                })
                .collect()
        })
    }

    fn settle(&self, settlements: &[Settlement<'_>]) -> Result<(), StoreError> {
        if settlements.is_empty() {
            return Ok(());
        }
        self.db.write_relaxed(|tx| {
            let mut update = tx.prepare_cached(
                "UPDATE alert_events
                     SET disposition = ?2, reason = ?3, route = ?4, task_id = ?5, record = ?6
                     WHERE id = ?1",
            )?;
            for s in settlements {
                update.execute(params![
                    s.arrival,
                    s.disposition.as_str(),
                    s.reason,
                    s.route,
                    s.task_id,
                    s.record
                ])?;
            }
            Ok(())
        })
    }

    fn unrecorded(&self, limit: usize) -> Result<Vec<AlertEvent>, StoreError> {
        self.select(
            "WHERE record IS NULL ORDER BY id LIMIT ?1",
            params![limit as i64],
        )
    }

    fn get(&self, id: i64) -> Result<Option<AlertEvent>, StoreError> {
        self.db.run(|conn| {
            let row = conn
                .query_row(
                    &format!("SELECT {COLUMNS} FROM alert_events WHERE id = ?1"),
                    [id],
                    |r| Ok(read_row(r)),
                )
                .optional()?;
            row.transpose()
        })
    }

    fn for_alert(&self, alert_id: &str) -> Result<Vec<AlertEvent>, StoreError> {
        self.select("WHERE alert_id = ?1 ORDER BY id", params![alert_id])
    }

    fn after(&self, after_id: i64, limit: usize) -> Result<Vec<AlertEvent>, StoreError> {
        self.select(
            "WHERE id > ?1 ORDER BY id LIMIT ?2",
            params![after_id, i64::try_from(limit).unwrap_or(i64::MAX)],
        )
    }

    fn between(
        &self,
        since_ms: i64,
        until_ms: i64,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AlertEvent>, StoreError> {
        let mut rows = self.select(
            "WHERE received_ms >= ?1 AND received_ms < ?2 AND id < ?4 ORDER BY id DESC LIMIT ?3",
            params![
                since_ms,
                until_ms,
                i64::try_from(limit).unwrap_or(i64::MAX),
                before.unwrap_or(i64::MAX)
            ],
        )?;
        rows.reverse();
        Ok(rows)
    }

    fn count(&self) -> Result<i64, StoreError> {
        self.db
            .run(|conn| Ok(conn.query_row("SELECT count(*) FROM alert_events", [], |r| r.get(0))?))
    }
}

fn read_row(r: &Row<'_>) -> Result<AlertEvent, Failure<StoreError>> {
    let alert_json: String = r.get(7)?;
    let disposition: Option<String> = r.get(8)?;
    Ok(AlertEvent {
        id: r.get(0)?,
        received_ms: r.get(1)?,
        source: r.get(2)?,
        alert_id: r.get(3)?,
        status: r.get(4)?,
        title: r.get(5)?,
        host: r.get(6)?,
        alert: serde_json::from_str(&alert_json).map_err(|e| StoreError::Corrupt {
            store: store_name::INBOX,
            what: format!(
                "the stored alert JSON of arrival {} is unreadable: {e}",
                r.get::<_, i64>(0).unwrap_or(0)
            ),
        })?,
        disposition: disposition.as_deref().and_then(Disposition::parse),
        reason: r.get(9)?,
        route: r.get(10)?,
        task_id: r.get(11)?,
        record: r.get(12)?,
    })
}
