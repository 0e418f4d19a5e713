//! `alerts.db`: every alert that arrived, stored before the sender gets its reply, with what
//! the dispatcher did with it and why.
//!
//! A row is written in two steps: [`Inbox::receive`] stores the alert as it came (durable,
//! `synchronous=FULL`) before anything else happens, and [`Inbox::settle`] adds the
//! disposition once the task queue has answered. A row left unsettled by a crash or a storage
//! failure is found again by [`Inbox::unsettled`], so no arrival is ever without a record.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

/// What the dispatcher did with one arrival. Every arrival gets exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// A new task was queued for a route.
    Routed,
    /// A task for the same alert identity is still live; the arrival was counted on it.
    Deduplicated,
    /// A task for this identity ran recently (cooldown); no new task.
    Suppressed,
    /// The route reached its limit of tasks per hour; no new task.
    Throttled,
    /// No route matches the alert; nothing runs.
    NoRoute,
    /// The alert resolved and a task that had not started was cancelled.
    Cancelled,
    /// The alert resolved; nothing to cancel (no task, or one already running).
    Resolved,
    /// A test notification ("send test" button): acknowledged, never runs anything.
    Test,
}

impl Disposition {
    pub const ALL: [Disposition; 8] = [
        Disposition::Routed,
        Disposition::Deduplicated,
        Disposition::Suppressed,
        Disposition::Throttled,
        Disposition::NoRoute,
        Disposition::Cancelled,
        Disposition::Resolved,
        Disposition::Test,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Routed => "routed",
            Disposition::Deduplicated => "deduplicated",
            Disposition::Suppressed => "suppressed",
            Disposition::Throttled => "throttled",
            Disposition::NoRoute => "no_route",
            Disposition::Cancelled => "cancelled",
            Disposition::Resolved => "resolved",
            Disposition::Test => "test",
        }
    }

    pub fn parse(text: &str) -> Option<Disposition> {
        Disposition::ALL.into_iter().find(|d| d.as_str() == text)
    }
}

/// One arrival, as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AlertEvent {
    /// Arrival number, 1, 2, 3, ...
    pub id: i64,
    pub received_ms: i64,
    /// `uptime-kuma`, `alertmanager`, or the generic hook's name.
    pub source: String,
    /// The short id every record about this alert carries (`alert_88c2d1`): the same for the
    /// firing and the resolved notification of one problem.
    pub alert_id: String,
    /// `firing`, `resolved` or `test`.
    pub status: String,
    pub title: String,
    /// The host the alert is about, when its labels name one (`host`, `hostname`, `instance`).
    pub host: Option<String>,
    /// The whole [`nightwatch_intake::Alert`] as JSON, the sender's raw JSON inside it.
    pub alert: serde_json::Value,
    /// `None` until settled.
    pub disposition: Option<Disposition>,
    pub reason: Option<String>,
    pub route: Option<String>,
    pub task_id: Option<i64>,
    /// The ledger record of the disposition, once written.
    pub record: Option<String>,
}

/// Why the inbox failed. The caller replies 503: the sender should try again.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    #[error("cannot create data directory {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("alert store: {0}")]
    Database(#[from] rusqlite::Error),
    #[error("alert store: stored alert JSON is unreadable: {0}")]
    Json(#[from] serde_json::Error),
}

const SCHEMA: &str = "
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

const COLUMNS: &str = "id, received_ms, source, alert_id, status, title, host, alert_json, \
     disposition, reason, route, task_id, record";

/// What [`Inbox::receive`] stores.
pub struct Arrival<'a> {
    pub received_ms: i64,
    pub source: &'a str,
    pub alert_id: &'a str,
    pub status: &'a str,
    pub title: &'a str,
    pub host: Option<&'a str>,
    pub alert_json: &'a str,
}

/// The store of arrivals.
pub struct Inbox {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl Inbox {
    /// Opens (creating if needed) `alerts.db` in `dir`.
    pub fn open(dir: &Path) -> Result<Inbox, InboxError> {
        std::fs::create_dir_all(dir).map_err(|source| InboxError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join("alerts.db");
        let conn = Connection::open(&path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL: "stored" in a 2xx reply means stored through a power loss.
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.execute_batch(SCHEMA)?;
        Ok(Inbox {
            conn: Mutex::new(conn),
            path,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite half-written; keep serving.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Stores one arrival, unsettled; returns its id.
    pub fn receive(&self, arrival: &Arrival<'_>) -> Result<i64, InboxError> {
        let conn = self.conn();
        conn.execute(
            "INSERT INTO alert_events (received_ms, source, alert_id, status, title, host, alert_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                arrival.received_ms,
                arrival.source,
                arrival.alert_id,
                arrival.status,
                arrival.title,
                arrival.host,
                arrival.alert_json
            ],
        )?;
        Ok(conn.last_insert_rowid())
    }

    /// Adds what the dispatcher did with arrival `id`.
    pub fn settle(
        &self,
        id: i64,
        disposition: Disposition,
        reason: &str,
        route: Option<&str>,
        task_id: Option<i64>,
    ) -> Result<(), InboxError> {
        relaxed(&self.conn(), |conn| {
            conn.execute(
                "UPDATE alert_events SET disposition = ?2, reason = ?3, route = ?4, task_id = ?5
                 WHERE id = ?1",
                params![id, disposition.as_str(), reason, route, task_id],
            )
        })?;
        Ok(())
    }

    /// Notes the ledger record that holds arrival `id`'s disposition.
    pub fn mark_recorded(&self, id: i64, record: &str) -> Result<(), InboxError> {
        relaxed(&self.conn(), |conn| {
            conn.execute(
                "UPDATE alert_events SET record = ?2 WHERE id = ?1",
                params![id, record],
            )
        })?;
        Ok(())
    }

    /// Arrivals without a ledger record (unsettled, or settled but not yet recorded), oldest
    /// first: what a crash or a storage failure interrupted.
    pub fn unrecorded(&self, limit: usize) -> Result<Vec<AlertEvent>, InboxError> {
        self.select(
            "WHERE record IS NULL ORDER BY id LIMIT ?1",
            params![limit as i64],
        )
    }

    /// One arrival.
    pub fn get(&self, id: i64) -> Result<Option<AlertEvent>, InboxError> {
        let conn = self.conn();
        let row = conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM alert_events WHERE id = ?1"),
                [id],
                |r| Ok(read_row(r)),
            )
            .optional()?;
        row.transpose()
    }

    /// Every arrival for one alert id, oldest first.
    pub fn for_alert(&self, alert_id: &str) -> Result<Vec<AlertEvent>, InboxError> {
        self.select("WHERE alert_id = ?1 ORDER BY id", params![alert_id])
    }

    /// Arrivals received in `[since_ms, until_ms)`, oldest first, at most `limit` (the newest).
    pub fn between(
        &self,
        since_ms: i64,
        until_ms: i64,
        limit: usize,
    ) -> Result<Vec<AlertEvent>, InboxError> {
        let mut rows = self.select(
            "WHERE received_ms >= ?1 AND received_ms < ?2 ORDER BY id DESC LIMIT ?3",
            params![since_ms, until_ms, limit as i64],
        )?;
        rows.reverse();
        Ok(rows)
    }

    /// How many arrivals are stored.
    pub fn count(&self) -> Result<i64, InboxError> {
        Ok(self
            .conn()
            .query_row("SELECT count(*) FROM alert_events", [], |r| r.get(0))?)
    }

    fn select(
        &self,
        clause: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<AlertEvent>, InboxError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM alert_events {clause}"))?;
        let rows = stmt.query_map(params, |r| Ok(read_row(r)))?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row??);
        }
        Ok(out)
    }
}

/// Runs a write without waiting for the disk. Only for notes that can be rebuilt: a settle or
/// a record mark lost to a power cut (never to a crash: WAL keeps committed writes) leaves the
/// arrival unrecorded, and [`Inbox::unrecorded`] brings it back to be decided and recorded.
/// The arrival itself is always written with a full sync.
fn relaxed<T>(
    conn: &Connection,
    write: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let result = write(conn);
    conn.pragma_update(None, "synchronous", "FULL")?;
    result
}

fn read_row(r: &Row<'_>) -> Result<AlertEvent, InboxError> {
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
        alert: serde_json::from_str(&alert_json)?,
        disposition: disposition.as_deref().and_then(Disposition::parse),
        reason: r.get(9)?,
        route: r.get(10)?,
        task_id: r.get(11)?,
        record: r.get(12)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival<'a>(alert_id: &'a str, at: i64) -> Arrival<'a> {
        Arrival {
            received_ms: at,
            source: "alertmanager",
            alert_id,
            status: "firing",
            title: "DiskFull",
            host: Some("db1"),
            alert_json: r#"{"identity":"x"}"#,
        }
    }

    #[test]
    fn an_arrival_is_stored_unsettled_then_settled_then_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = Inbox::open(dir.path()).unwrap();
        let id = inbox.receive(&arrival("alert_1", 10)).unwrap();
        assert_eq!(inbox.unrecorded(10).unwrap().len(), 1);
        let stored = inbox.get(id).unwrap().unwrap();
        assert_eq!(stored.disposition, None);
        inbox
            .settle(id, Disposition::Routed, "route disk", Some("disk"), Some(7))
            .unwrap();
        assert_eq!(
            inbox.unrecorded(10).unwrap().len(),
            1,
            "settled is not recorded"
        );
        inbox.mark_recorded(id, "r5").unwrap();
        assert!(inbox.unrecorded(10).unwrap().is_empty());
        let stored = inbox.get(id).unwrap().unwrap();
        assert_eq!(stored.disposition, Some(Disposition::Routed));
        assert_eq!(stored.task_id, Some(7));
        assert_eq!(stored.record.as_deref(), Some("r5"));
    }

    #[test]
    fn arrivals_survive_reopening_and_are_found_by_alert_and_time() {
        let dir = tempfile::tempdir().unwrap();
        {
            let inbox = Inbox::open(dir.path()).unwrap();
            inbox.receive(&arrival("alert_1", 10)).unwrap();
            inbox.receive(&arrival("alert_2", 20)).unwrap();
            inbox.receive(&arrival("alert_1", 30)).unwrap();
        }
        let inbox = Inbox::open(dir.path()).unwrap();
        assert_eq!(inbox.count().unwrap(), 3);
        let one: Vec<i64> = inbox
            .for_alert("alert_1")
            .unwrap()
            .iter()
            .map(|e| e.received_ms)
            .collect();
        assert_eq!(one, [10, 30]);
        let window: Vec<i64> = inbox
            .between(15, 31, 10)
            .unwrap()
            .iter()
            .map(|e| e.received_ms)
            .collect();
        assert_eq!(window, [20, 30]);
        let newest: Vec<i64> = inbox
            .between(0, 100, 2)
            .unwrap()
            .iter()
            .map(|e| e.received_ms)
            .collect();
        assert_eq!(newest, [20, 30], "a limit keeps the newest, in order");
    }

    #[test]
    fn disposition_names_round_trip() {
        for d in Disposition::ALL {
            assert_eq!(Disposition::parse(d.as_str()), Some(d));
        }
    }
}
