//! `ledger.db` and `ledger.head`: the records in one SQLite file in WAL mode, append-only by
//! trigger, safe for many writer processes at once; the head checkpoint beside it.

use crate::db::{Db, Failure, Migration, Schema};
use nightwatch_ledger::{
    ChainLink, DEFAULT_OUTPUT_CAP, Entry, Filter, GENESIS_HASH, PreparedEntry, Record,
    StoredFields, event,
};
use nightwatch_store::{Ledger, LedgerReader, StoreError, store_name};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, Row, ToSql, Transaction};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Schema 1: the records.
const SCHEMA_1: &str = "
CREATE TABLE IF NOT EXISTS records (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    event        TEXT NOT NULL,
    timestamp_ms INTEGER NOT NULL,
    session_id   TEXT,
    actor_kind   TEXT NOT NULL,
    actor_id     TEXT NOT NULL,
    tool         TEXT NOT NULL,
    inputs       TEXT NOT NULL,  -- canonical JSON
    outputs      TEXT,           -- canonical JSON object, or NULL
    triggered_by TEXT,
    alert_id     TEXT,
    host         TEXT,
    task         TEXT,
    duration_ms  INTEGER,
    verdict      TEXT,
    rule         TEXT,
    reasons      TEXT NOT NULL,  -- canonical JSON array of strings
    call_id      TEXT,
    redacted     TEXT NOT NULL,  -- canonical JSON array of strings
    cwd          TEXT,
    prev_hash    TEXT NOT NULL,
    hash         TEXT NOT NULL
);
";

/// The triggers that keep the ledger append-only and the indexes of schema 1. Every migration
/// (re)creates them, as a ledger whose table was rebuilt may have lost them. Session, call and
/// verdict are looked up by value only, so their indexes leave out the records without one
/// (the daemon's, the janitor's): appending those costs no entry there.
const GUARDS: &str = "
CREATE TRIGGER IF NOT EXISTS records_no_update BEFORE UPDATE ON records
BEGIN SELECT RAISE(ABORT, 'the nightwatch ledger is append-only: records cannot be updated'); END;
CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records
BEGIN SELECT RAISE(ABORT, 'the nightwatch ledger is append-only: records cannot be deleted'); END;
CREATE INDEX IF NOT EXISTS records_timestamp ON records(timestamp_ms);
CREATE INDEX IF NOT EXISTS records_session ON records(session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS records_call ON records(call_id) WHERE call_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS records_verdict ON records(verdict) WHERE verdict IS NOT NULL;
";

/// Schema 3: the session, call and verdict indexes of older files, rebuilt without the records
/// that have none (see [`GUARDS`]).
const SCHEMA_3: &str = "
DROP INDEX IF EXISTS records_session;
DROP INDEX IF EXISTS records_call;
DROP INDEX IF EXISTS records_verdict;
";

/// Schema 2: safeguards (canonical JSON object, or NULL; the hashes of records chained
/// before do not cover it), and the partial indexes of the rare events.
const SCHEMA_2: &str = "
ALTER TABLE records ADD COLUMN safeguards TEXT;
CREATE INDEX IF NOT EXISTS records_trust ON records(actor_id) WHERE event = 'trust';
CREATE INDEX IF NOT EXISTS records_approval ON records(seq) WHERE event = 'approval';
";

/// Schema 4: one alert's records found era by era, eras of 2^8 records. The daemon's records
/// all carry an alert id, a hash: one index over them all put each new entry on a random leaf of
/// a tree as large as the history (routed intake 12% slower at a million records), and eras of
/// 2^16, as `alerts.db` has, still gave each record of a batch a leaf of its own (nine more pages
/// a batch). A batch's records are consecutive, so in eras of 256 they share a leaf or two; the
/// price is one seek per 256 records when an alert's records are read (15 ms at a million).
const SCHEMA_4: &str = "
CREATE INDEX IF NOT EXISTS records_alert_era ON records(seq >> 8, alert_id) WHERE alert_id IS NOT NULL;
";

const MIGRATIONS: [Migration; 4] = [
    |tx| tx.execute_batch(&format!("{SCHEMA_1}{GUARDS}")),
    |tx| tx.execute_batch(&format!("{SCHEMA_2}{GUARDS}")),
    |tx| tx.execute_batch(&format!("{SCHEMA_3}{GUARDS}")),
    |tx| tx.execute_batch(&format!("{SCHEMA_4}{GUARDS}")),
];

/// The filter on an alert: the records of every era from the first to the newest, one seek of
/// `records_alert_era` each (`CROSS JOIN` keeps SQLite's planner from walking the records
/// instead; an index on an expression serves only that same expression, `seq >> 8`).
const ALERT_RECORDS: &str = "seq IN (
    WITH RECURSIVE era(n) AS (
        SELECT 0 UNION ALL SELECT n + 1 FROM era
        WHERE n < (SELECT coalesce(max(seq), 0) >> 8 FROM records))
    SELECT seq FROM era CROSS JOIN records ON (seq >> 8) = n AND alert_id = ?)";

const SCHEMA: Schema = Schema {
    file: "ledger.db",
    store: store_name::LEDGER,
    migrations: &MIGRATIONS,
};

/// The head checkpoint's file name in the data directory.
pub const HEAD_FILE: &str = "ledger.head";

/// Events that a person makes now and then and that the hook looks up (placements in trust
/// tiers, approvals): each has a partial index, so finding them does not scan the ledger and
/// appending other records costs nothing more. Every index is parsed by every hook process
/// when SQLite reads the schema, so there are only these two.
const RARE_EVENTS: [&str; 2] = [event::TRUST, event::APPROVAL];

/// A [`Filter`] as SQL: its `WHERE` clause, parameters and order, kept apart from running it so
/// that tests can assert which indexes the statement a filter becomes searches.
struct FilterStatement {
    sql_where: String,
    params: Vec<rusqlite::types::Value>,
    order: String,
    /// The statement reads newest first (a limit keeps the most recent); the caller reverses.
    newest_first: bool,
}

impl FilterStatement {
    fn of(filter: &Filter) -> FilterStatement {
        use rusqlite::types::Value;
        let mut clauses: Vec<&str> = Vec::new();
        let mut params: Vec<Value> = Vec::new();
        let as_sql = |seq: u64| Value::Integer(i64::try_from(seq).unwrap_or(i64::MAX));
        let text = |v: &String| Value::Text(v.clone());
        if let Some(v) = filter.after_seq {
            clauses.push("seq > ?");
            params.push(as_sql(v));
        }
        if let Some(v) = filter.before_seq {
            clauses.push("seq < ?");
            params.push(as_sql(v));
        }
        if let Some(v) = filter.since_ms {
            clauses.push("timestamp_ms >= ?");
            params.push(Value::Integer(v));
        }
        if let Some(v) = filter.until_ms {
            clauses.push("timestamp_ms < ?");
            params.push(Value::Integer(v));
        }
        if let Some(v) = &filter.session {
            clauses.push("session_id = ?");
            params.push(text(v));
        }
        if let Some(v) = &filter.actor {
            clauses.push("(actor_kind = ? OR actor_id = ?)");
            params.push(text(v));
            params.push(text(v));
        }
        if let Some(v) = &filter.verdict {
            clauses.push("verdict = ?");
            params.push(text(v));
        }
        if let Some(v) = &filter.tool {
            clauses.push("tool = ?");
            params.push(text(v));
        }
        if let Some(v) = &filter.alert {
            clauses.push(ALERT_RECORDS);
            params.push(text(v));
        }
        if let Some(v) = &filter.event {
            // The rare human events have partial indexes, which SQLite only uses when the
            // query names the event literally; the names are our own constants.
            match RARE_EVENTS.iter().find(|rare| **rare == v.as_str()) {
                Some(rare) => clauses.push(match *rare {
                    event::TRUST => "event = 'trust'",
                    _ => "event = 'approval'",
                }),
                None => {
                    clauses.push("event = ?");
                    params.push(text(v));
                }
            }
        }
        let sql_where = if clauses.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", clauses.join(" AND "))
        };
        let (order, newest_first) = match filter.limit {
            Some(limit) => {
                let limit = i64::try_from(limit).unwrap_or(i64::MAX);
                (format!("ORDER BY seq DESC LIMIT {limit}"), true)
            }
            None => ("ORDER BY seq".to_string(), false),
        };
        FilterStatement {
            sql_where,
            params,
            order,
            newest_first,
        }
    }
}

const COLUMNS: &str = "seq, id, event, timestamp_ms, session_id, actor_kind, actor_id, tool, \
    inputs, outputs, triggered_by, alert_id, host, task, duration_ms, verdict, rule, reasons, \
    call_id, redacted, cwd, safeguards, prev_hash, hash";

/// Settings of a [`SqliteLedger`].
#[derive(Clone, Debug)]
pub struct LedgerOptions {
    /// Bytes of `stdout` and of `stderr` kept per record; the rest is cut with a marker.
    pub output_cap: usize,
    /// How long an append keeps waiting for a busy database before giving up.
    pub patience: Duration,
    /// Checkpoint the WAL on a thread of its own, not in the appends' commits (for a
    /// long-lived handle on a critical path: the daemon's).
    pub checkpoint_apart: bool,
}

impl Default for LedgerOptions {
    fn default() -> LedgerOptions {
        LedgerOptions {
            output_cap: DEFAULT_OUTPUT_CAP,
            patience: crate::db::DEFAULT_PATIENCE,
            checkpoint_apart: false,
        }
    }
}

/// The embedded ledger: `ledger.db` and `ledger.head` in a data directory.
///
/// Each handle owns one connection. Many handles (threads or processes) may append to the same
/// directory at once: every append runs in a `BEGIN IMMEDIATE` transaction that reads the tail
/// and inserts the next record, so seq stays 1, 2, 3, ... and the chain one line.
pub struct SqliteLedger {
    db: Db,
    head_path: PathBuf,
    /// The checkpoint file, opened on the first append and kept.
    head_file: Mutex<Option<std::fs::File>>,
    output_cap: usize,
}

impl SqliteLedger {
    /// Opens (creating if needed) the ledger in data directory `dir` with default options.
    pub fn open(dir: &Path) -> Result<SqliteLedger, StoreError> {
        SqliteLedger::open_with(dir, LedgerOptions::default())
    }

    pub fn open_with(dir: &Path, options: LedgerOptions) -> Result<SqliteLedger, StoreError> {
        let mut db = Db::open(dir, &SCHEMA, options.patience)?;
        if options.checkpoint_apart {
            db.checkpoint_apart()?;
        }
        Ok(SqliteLedger {
            db,
            head_path: dir.join(HEAD_FILE),
            head_file: Mutex::new(None),
            output_cap: options.output_cap,
        })
    }

    /// The database file.
    pub fn db_path(&self) -> &Path {
        self.db.path()
    }

    /// The head checkpoint file.
    pub fn head_path(&self) -> &Path {
        &self.head_path
    }

    /// Writes the head checkpoint in place, at a fixed width (`{seq:020} {hash}\n`, 86
    /// bytes, inside one disk sector), so every write covers the whole previous one and a
    /// crash leaves the old or the new checkpoint. It is not synced: it is written after the
    /// record's commit is on disk, so it can never name a record a crash would lose; after a
    /// power loss it can at worst be an older one, which hides a truncation of the last few
    /// records but never raises a false alarm. Writing in place, rather than a new file and a
    /// rename, keeps the directory out of every append.
    fn write_checkpoint(&self, seq: u64, hash: &str) -> Result<(), StoreError> {
        use std::os::unix::fs::FileExt;
        let io = |source| StoreError::Io {
            path: self.head_path.clone(),
            source,
        };
        let mut head = self.head_file.lock().unwrap_or_else(|p| p.into_inner());
        if head.is_none() {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.head_path)
                .map_err(io)?;
            *head = Some(file);
        }
        let line = format!("{seq:020} {hash}\n");
        match head.as_ref() {
            Some(file) => file.write_all_at(line.as_bytes(), 0).map_err(io),
            None => Ok(()),
        }
    }

    fn select(
        &self,
        sql_where: &str,
        params: &[&dyn ToSql],
        suffix: &str,
    ) -> Result<Vec<Record>, StoreError> {
        self.db.run(|conn| {
            let sql = format!("SELECT {COLUMNS} FROM records {sql_where} {suffix}");
            let mut stmt = conn.prepare_cached(&sql)?;
            let mut rows = stmt.query(params)?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                out.push(record_from_row(row)?);
            }
            Ok(out)
        })
    }

    fn scan_rows(
        &self,
        mut visit: impl FnMut(&Row<'_>) -> Result<(), Failure<StoreError>>,
    ) -> Result<(), StoreError> {
        self.db.run(|conn: &Connection| {
            let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM records ORDER BY seq"))?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                visit(row)?;
            }
            Ok(())
        })
    }
}

fn tail(tx: &Transaction<'_>) -> rusqlite::Result<Option<(i64, String)>> {
    tx.prepare_cached("SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

fn str_at<'r>(row: &'r Row<'_>, i: usize) -> rusqlite::Result<&'r str> {
    row.get_ref(i)?.as_str().map_err(rusqlite::Error::from)
}

fn opt_str_at<'r>(row: &'r Row<'_>, i: usize) -> rusqlite::Result<Option<&'r str>> {
    row.get_ref(i)?
        .as_str_or_null()
        .map_err(rusqlite::Error::from)
}

fn opt_i64_at(row: &Row<'_>, i: usize) -> rusqlite::Result<Option<i64>> {
    match row.get_ref(i)? {
        ValueRef::Null => Ok(None),
        v => v.as_i64().map(Some).map_err(rusqlite::Error::from),
    }
}

/// Runs `visit` on the stored fields of one row (columns in [`COLUMNS`] order).
fn with_fields<T>(
    row: &Row<'_>,
    visit: impl FnOnce(&StoredFields<'_>, &str) -> Result<T, Failure<StoreError>>,
) -> Result<T, Failure<StoreError>> {
    let seq: i64 = row.get(0)?;
    let fields = StoredFields {
        seq: u64::try_from(seq).unwrap_or(0),
        id: str_at(row, 1)?,
        event: str_at(row, 2)?,
        timestamp_ms: row.get(3)?,
        session_id: opt_str_at(row, 4)?,
        actor_kind: str_at(row, 5)?,
        actor_id: str_at(row, 6)?,
        tool: str_at(row, 7)?,
        inputs: str_at(row, 8)?.as_bytes(),
        outputs: opt_str_at(row, 9)?.map(str::as_bytes),
        triggered_by: opt_str_at(row, 10)?,
        alert_id: opt_str_at(row, 11)?,
        host: opt_str_at(row, 12)?,
        task: opt_str_at(row, 13)?,
        duration_ms: opt_i64_at(row, 14)?,
        verdict: opt_str_at(row, 15)?,
        rule: opt_str_at(row, 16)?,
        reasons: str_at(row, 17)?.as_bytes(),
        call_id: opt_str_at(row, 18)?,
        redacted: str_at(row, 19)?.as_bytes(),
        cwd: opt_str_at(row, 20)?,
        safeguards: opt_str_at(row, 21)?.map(str::as_bytes),
        prev_hash: str_at(row, 22)?,
    };
    let hash = str_at(row, 23)?;
    visit(&fields, hash)
}

fn record_from_row(row: &Row<'_>) -> Result<Record, Failure<StoreError>> {
    with_fields(row, |f, hash| {
        f.to_record(hash).map_err(|e| {
            Failure::Caller(StoreError::Corrupt {
                store: store_name::LEDGER,
                what: e.to_string(),
            })
        })
    })
}

fn text(bytes: &[u8]) -> &str {
    // Canonical encodings are built from `str`s, so they are always UTF-8.
    std::str::from_utf8(bytes).unwrap_or_default()
}

impl LedgerReader for SqliteLedger {
    fn get(&self, id_or_seq: &str) -> Result<Option<Record>, StoreError> {
        let digits = id_or_seq.strip_prefix('r').unwrap_or(id_or_seq);
        let found = match digits.parse::<i64>() {
            Ok(seq) => self.select("WHERE seq = ?1", &[&seq], "")?,
            Err(_) => self.select("WHERE id = ?1", &[&id_or_seq], "")?,
        };
        Ok(found.into_iter().next())
    }

    fn query(&self, filter: &Filter) -> Result<Vec<Record>, StoreError> {
        let statement = FilterStatement::of(filter);
        let params: Vec<&dyn ToSql> = statement.params.iter().map(|v| v as &dyn ToSql).collect();
        let mut records = self.select(&statement.sql_where, &params, &statement.order)?;
        if statement.newest_first {
            records.reverse();
        }
        Ok(records)
    }

    fn decision_for_call(&self, call_id: &str) -> Result<Option<Record>, StoreError> {
        let found = self.select(
            "WHERE call_id = ?1 AND event = ?2",
            &[&call_id, &event::DECISION],
            "ORDER BY seq DESC LIMIT 1",
        )?;
        Ok(found.into_iter().next())
    }

    fn scan(
        &self,
        visit: &mut dyn FnMut(&Record) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.scan_rows(|row| visit(&record_from_row(row)?).map_err(Failure::Caller))
    }

    fn scan_chain(
        &self,
        visit: &mut dyn FnMut(&ChainLink<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut buf = Vec::with_capacity(1024);
        self.scan_rows(|row| {
            with_fields(row, |f, hash| {
                f.encode(&mut buf);
                visit(&ChainLink {
                    seq: f.seq,
                    id: f.id,
                    event: f.event,
                    prev_hash: f.prev_hash,
                    hash,
                    canonical: &buf,
                })
                .map_err(Failure::Caller)
            })
        })
    }

    fn head_checkpoint(&self) -> Result<Option<(u64, String)>, StoreError> {
        let content = match std::fs::read_to_string(&self.head_path) {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(StoreError::Io {
                    path: self.head_path.clone(),
                    source,
                });
            }
        };
        // Empty is what an unsynced checkpoint can be after a power loss: no checkpoint.
        if content.is_empty() {
            return Ok(None);
        }
        let bad = |reason: &str| StoreError::Corrupt {
            store: store_name::LEDGER,
            what: format!(
                "the head checkpoint {} is unreadable: {reason}",
                self.head_path.display()
            ),
        };
        let mut parts = content.split_whitespace();
        let seq = parts
            .next()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| bad("expected `<seq> <hash>`"))?;
        let hash = parts
            .next()
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| bad("expected a 64-digit hex hash after the seq"))?;
        if parts.next().is_some() {
            return Err(bad("unexpected text after `<seq> <hash>`"));
        }
        Ok(Some((seq, hash.to_string())))
    }
}

impl Ledger for SqliteLedger {
    fn append(&self, entry: Entry) -> Result<Record, StoreError> {
        let mut records = self.append_all(vec![entry])?;
        records.pop().ok_or_else(|| StoreError::Backend {
            store: store_name::LEDGER,
            message: "an append stored no record".into(),
        })
    }

    /// One transaction for all of `entries`: one synced commit however many there are.
    fn append_all(&self, entries: Vec<Entry>) -> Result<Vec<Record>, StoreError> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let prepared: Vec<PreparedEntry> = entries
            .into_iter()
            .map(|entry| PreparedEntry::new(entry, self.output_cap))
            .collect();
        let mut buf = Vec::with_capacity(1024);
        let chained = self.db.write(|tx| {
            // The tail is read inside the write transaction: no other writer can append
            // between this read and our inserts.
            let (mut last_seq, mut prev_hash) = match tail(tx)? {
                Some((s, h)) => (u64::try_from(s).unwrap_or(0), h),
                None => (0, GENESIS_HASH.to_string()),
            };
            let mut insert = tx.prepare_cached(&format!(
                "INSERT INTO records ({COLUMNS}) VALUES \
                 (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24)"
            ))?;
            let mut chained = Vec::with_capacity(prepared.len());
            for entry in &prepared {
                let seq = last_seq + 1;
                let id = Record::id_for(seq);
                let f = entry.fields(seq, &id, &prev_hash);
                let hash = f.hash(&mut buf);
                insert.execute(rusqlite::params![
                    i64::try_from(seq).unwrap_or(i64::MAX),
                    f.id,
                    f.event,
                    f.timestamp_ms,
                    f.session_id,
                    f.actor_kind,
                    f.actor_id,
                    f.tool,
                    text(f.inputs),
                    f.outputs.map(text),
                    f.triggered_by,
                    f.alert_id,
                    f.host,
                    f.task,
                    f.duration_ms,
                    f.verdict,
                    f.rule,
                    text(f.reasons),
                    f.call_id,
                    text(f.redacted),
                    f.cwd,
                    f.safeguards.map(text),
                    f.prev_hash,
                    hash,
                ])?;
                let link = (seq, id, std::mem::replace(&mut prev_hash, hash.clone()), hash);
                last_seq = seq;
                chained.push(link);
            }
            Ok(chained)
        })?;
        // The checkpoint is written under the write lock from the committed tail, so
        // concurrent writers can only move it forward, and it never names an uncommitted
        // record (which a crash would turn into a false "truncated").
        self.db.write(|tx| {
            if let Some((s, h)) = tail(tx)? {
                self.write_checkpoint(u64::try_from(s).unwrap_or(0), &h)
                    .map_err(Failure::Caller)?;
            }
            Ok(())
        })?;
        Ok(prepared
            .into_iter()
            .zip(chained)
            .map(|(entry, (seq, id, prev_hash, hash))| entry.into_record(seq, id, prev_hash, hash))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::query_plan;

    /// The lookups by session, call and verdict go through their (partial) indexes.
    #[test]
    fn lookups_by_session_call_and_verdict_search_their_index() {
        let dir = tempfile::tempdir().unwrap();
        drop(SqliteLedger::open(dir.path()).unwrap());
        let conn = Connection::open(dir.path().join("ledger.db")).unwrap();
        for (clause, index) in [
            ("session_id = ?1", "records_session"),
            ("call_id = ?1 AND event = 'decision'", "records_call"),
            ("verdict = ?1", "records_verdict"),
        ] {
            let plan = query_plan(
                &conn,
                &format!("SELECT seq FROM records WHERE {clause}"),
                "x",
            );
            assert!(
                plan.iter()
                    .any(|step| step.contains(&format!("INDEX {index}"))),
                "{clause}: {plan:?}"
            );
        }
    }

    fn insert_at(conn: &Connection, seq: i64, alert_id: Option<&str>) {
        conn.execute(
            "INSERT INTO records (seq, id, event, timestamp_ms, actor_kind, actor_id, tool, inputs,
                 alert_id, reasons, redacted, prev_hash, hash)
             VALUES (?1, 'r' || ?1, 'dispatch', ?1, 'daemon', 'd', 'alert', '{}', ?2, '[]', '[]',
                 'x', 'y')",
            rusqlite::params![seq, alert_id],
        )
        .unwrap();
    }

    /// The records an alert's filter finds, through the statement `query` runs for it.
    fn seqs_for(conn: &Connection, alert_id: &str) -> Vec<i64> {
        let statement = FilterStatement::of(&Filter {
            alert: Some(alert_id.into()),
            ..Filter::default()
        });
        conn.prepare(&format!(
            "SELECT seq FROM records {} {}",
            statement.sql_where, statement.order
        ))
        .unwrap()
        .query_map(rusqlite::params_from_iter(&statement.params), |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
    }

    /// An alert's records are found in every era, and by seeks of the era index, never by
    /// walking the records.
    #[test]
    fn an_alerts_records_are_found_era_by_era_through_the_index() {
        let dir = tempfile::tempdir().unwrap();
        drop(SqliteLedger::open(dir.path()).unwrap());
        let conn = Connection::open(dir.path().join("ledger.db")).unwrap();
        assert!(seqs_for(&conn, "a").is_empty());
        let seqs = [1, 255, 256, 257, 511, 3_000, 1 << 20];
        for (n, seq) in seqs.iter().enumerate() {
            insert_at(&conn, *seq, [Some("a"), Some("b"), None][n % 3]);
        }
        assert_eq!(seqs_for(&conn, "a"), [1, 257, 1 << 20]);
        assert_eq!(seqs_for(&conn, "b"), [255, 511]);
        assert!(seqs_for(&conn, "c").is_empty());
        // The statement `query` runs for an alert's page, with and without a limit.
        for limit in [Some(1000), None] {
            let filter = Filter {
                alert: Some("a".into()),
                limit,
                ..Filter::default()
            };
            let statement = FilterStatement::of(&filter);
            let plan = query_plan(
                &conn,
                &format!(
                    "SELECT seq FROM records {} {}",
                    statement.sql_where, statement.order
                ),
                "a",
            );
            assert!(
                plan.iter()
                    .any(|step| step.contains("INDEX records_alert_era")),
                "{plan:?}"
            );
            assert!(
                !plan.iter().any(|step| step.starts_with("SCAN records")),
                "{plan:?}"
            );
        }
    }
}
