//! The embedded store: one SQLite file in WAL mode, append-only by trigger, safe for many
//! writer processes at once.

use crate::canonical::{self, Fields};
use crate::record::{Entry, Filter, Outputs, Record, RecordActor, RecordContext};
use crate::redact;
use crate::{ChainLink, GENESIS_HASH, Ledger, LedgerError};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, ToSql, TransactionBehavior};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
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
    safeguards   TEXT,           -- canonical JSON object, or NULL (schema 2)
    prev_hash    TEXT NOT NULL,
    hash         TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS records_no_update BEFORE UPDATE ON records
BEGIN SELECT RAISE(ABORT, 'the nightwatch ledger is append-only: records cannot be updated'); END;
CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records
BEGIN SELECT RAISE(ABORT, 'the nightwatch ledger is append-only: records cannot be deleted'); END;
CREATE INDEX IF NOT EXISTS records_timestamp ON records(timestamp_ms);
CREATE INDEX IF NOT EXISTS records_session ON records(session_id);
CREATE INDEX IF NOT EXISTS records_call ON records(call_id);
CREATE INDEX IF NOT EXISTS records_verdict ON records(verdict);
CREATE INDEX IF NOT EXISTS records_trust ON records(actor_id) WHERE event = 'trust';
CREATE INDEX IF NOT EXISTS records_approval ON records(seq) WHERE event = 'approval';
";

/// Events that a person makes now and then and that the hook looks up (placements in trust
/// tiers, approvals): each has a partial index, so finding them does not scan the ledger and
/// appending other records costs nothing more. Every index is parsed by every hook process
/// when SQLite reads the schema, so there are only these two.
const RARE_EVENTS: [&str; 2] = [crate::event::TRUST, crate::event::APPROVAL];

const COLUMNS: &str = "seq, id, event, timestamp_ms, session_id, actor_kind, actor_id, tool, \
    inputs, outputs, triggered_by, alert_id, host, task, duration_ms, verdict, rule, reasons, \
    call_id, redacted, cwd, safeguards, prev_hash, hash";

/// WAL size above which a closing handle checkpoints the WAL into the database and truncates
/// it. About 6 pages of 4 KiB go into the WAL per append, so this is every 10 or
/// so appends.
const WAL_CLOSE_CHECKPOINT_BYTES: u64 = 256 * 1024;

/// Settings of a [`SqliteLedger`].
#[derive(Clone, Debug)]
pub struct SqliteOptions {
    /// Bytes of `stdout` and of `stderr` kept per record; the rest is cut with a marker.
    pub output_cap: usize,
    /// How long SQLite itself waits for a lock before reporting busy.
    pub busy_timeout: Duration,
    /// How long an append keeps retrying a busy database before giving up.
    pub retry_deadline: Duration,
}

impl Default for SqliteOptions {
    fn default() -> SqliteOptions {
        SqliteOptions {
            output_cap: 64 * 1024,
            busy_timeout: Duration::from_secs(5),
            retry_deadline: Duration::from_secs(60),
        }
    }
}

/// The embedded ledger: `ledger.db` and `ledger.head` in a data directory.
///
/// Each handle owns one connection. Many handles (threads or processes) may append to the same
/// directory at once: every append runs in a `BEGIN IMMEDIATE` transaction that reads the tail
/// and inserts the next record, so seq stays 1, 2, 3, ... and the chain one line.
pub struct SqliteLedger {
    conn: Mutex<Connection>,
    db_path: PathBuf,
    head_path: PathBuf,
    /// The checkpoint file, opened on the first append and kept.
    head_file: Mutex<Option<std::fs::File>>,
    options: SqliteOptions,
}

impl SqliteLedger {
    /// Opens (creating if needed) the ledger in data directory `dir` with default options.
    pub fn open(dir: &Path) -> Result<SqliteLedger, LedgerError> {
        SqliteLedger::open_with(dir, SqliteOptions::default())
    }

    pub fn open_with(dir: &Path, options: SqliteOptions) -> Result<SqliteLedger, LedgerError> {
        std::fs::create_dir_all(dir).map_err(|source| LedgerError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let db_path = dir.join("ledger.db");
        let head_path = dir.join("ledger.head");
        // SQLite is built not to sync the directory (see `.cargo/config.toml`), so a new
        // database or WAL file gets its directory entry synced here, after it is created.
        let creates = !db_path.exists() || !db_path.with_extension("db-wal").exists();
        let conn = Connection::open(&db_path)?;
        conn.busy_timeout(options.busy_timeout)?;
        // Each hook is a short process. Checkpointing the WAL into the database on every close
        // (and then recreating the WAL) cost three extra fsyncs per call; SQLite's automatic
        // checkpoints during commits keep the WAL bounded instead.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )?;
        let deadline = Instant::now() + options.retry_deadline;
        let mut attempt = 0;
        loop {
            match prepare(&conn) {
                Ok(()) => break,
                Err(LedgerError::Database(e)) if is_busy(&e) && Instant::now() < deadline => {
                    attempt += 1;
                    backoff(attempt);
                }
                Err(e) => return Err(e),
            }
        }
        if creates {
            sync_directory(dir)?;
        }
        Ok(SqliteLedger {
            conn: Mutex::new(conn),
            db_path,
            head_path,
            head_file: Mutex::new(None),
            options,
        })
    }

    /// The database file.
    pub fn db_path(&self) -> &Path {
        &self.db_path
    }

    /// The head checkpoint file.
    pub fn head_path(&self) -> &Path {
        &self.head_path
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves the connection usable: SQLite rolls back an
        // unfinished transaction, so the poison flag carries no information here.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Retries `op` (run inside a `BEGIN IMMEDIATE` transaction) while the database is busy.
    fn with_write<T>(
        &self,
        conn: &mut Connection,
        mut op: impl FnMut(&rusqlite::Transaction<'_>) -> Result<T, LedgerError>,
    ) -> Result<T, LedgerError> {
        let started = Instant::now();
        let mut attempt = 0u32;
        loop {
            let result = (|| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let value = op(&tx)?;
                tx.commit()?;
                Ok(value)
            })();
            match result {
                Err(LedgerError::Database(e)) if is_busy(&e) => {
                    if started.elapsed() >= self.options.retry_deadline {
                        return Err(LedgerError::Busy {
                            waited_ms: u64::try_from(started.elapsed().as_millis())
                                .unwrap_or(u64::MAX),
                        });
                    }
                    attempt += 1;
                    backoff(attempt);
                }
                other => return other,
            }
        }
    }

    /// Writes the head checkpoint in place, at a fixed width (`{seq:020} {hash}\n`, 86
    /// bytes, inside one disk sector), so every write covers the whole previous one and a
    /// crash leaves the old or the new checkpoint. It is not synced: it is written after the
    /// record's commit is on disk, so it can never name a record a crash would lose; after a
    /// power loss it can at worst be an older one, which hides a truncation of the last few
    /// records but never raises a false alarm. Writing in place, rather than a new file and a
    /// rename, keeps the directory out of every append.
    fn write_checkpoint(&self, seq: u64, hash: &str) -> Result<(), LedgerError> {
        use std::os::unix::fs::FileExt;
        let io = |source| LedgerError::Io {
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
}

impl Drop for SqliteLedger {
    /// Each hook process is the only connection while it runs, and SQLite rebuilds its WAL
    /// index by reading the whole WAL when the first connection opens; what a process
    /// checkpoints is forgotten with that index. So the WAL only shrinks when it is
    /// checkpointed and truncated, which a closing handle does once it is long (truncated,
    /// not deleted, so its directory entry stays put). When others hold the database it
    /// does not wait: a later handle will do it.
    fn drop(&mut self) {
        let wal = self.db_path.with_extension("db-wal");
        let long = std::fs::metadata(&wal).is_ok_and(|m| m.len() > WAL_CLOSE_CHECKPOINT_BYTES);
        if long {
            let conn = self.conn.get_mut().unwrap_or_else(|p| p.into_inner());
            let _ = conn.busy_timeout(Duration::ZERO);
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        }
    }
}

/// Makes the directory's entries (a newly created file's name) durable.
fn sync_directory(dir: &Path) -> Result<(), LedgerError> {
    let io = |source| LedgerError::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::File::open(dir).map_err(io)?.sync_all().map_err(io)
}

fn prepare(conn: &Connection) -> Result<(), LedgerError> {
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(LedgerError::Visit(format!(
            "the ledger database could not be put in WAL mode (it is in {mode} mode)"
        )));
    }
    // FULL in WAL mode: each commit is fsynced before it returns, so an appended record
    // survives power loss.
    conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;")?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(LedgerError::SchemaTooNew {
            found: version,
            known: SCHEMA_VERSION,
        });
    }
    if version < SCHEMA_VERSION {
        // Schema 1 ledgers gain the safeguards column; their records' hashes do not cover it.
        let upgrade = if version == 1 {
            "ALTER TABLE records ADD COLUMN safeguards TEXT;"
        } else {
            ""
        };
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {upgrade} {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))
        .inspect_err(|_| {
            let _ = conn.execute_batch("ROLLBACK");
        })?;
    }
    Ok(())
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

fn backoff(attempt: u32) {
    // Exponential from 1 ms to 50 ms, with jitter from the clock's nanoseconds so that
    // writers that collided once do not collide again in lockstep.
    let base = 1u64 << attempt.min(6);
    let jitter = u64::from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
            % 1000,
    );
    std::thread::sleep(Duration::from_micros((base * 1000).min(50_000) + jitter));
}

/// `text` cut to at most `cap` bytes at a char boundary, with a marker saying how much went.
pub(crate) fn cap_output(text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    let mut cut = cap;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let dropped = text.len() - cut;
    let mut out = text;
    out.truncate(cut);
    out.push_str(&format!("\n[... {dropped} bytes cut by nightwatch]"));
    out
}

/// An entry made safe to store: redacted, capped, its JSON fields in canonical text.
struct Prepared {
    entry: Entry,
    inputs: Vec<u8>,
    outputs: Option<Vec<u8>>,
    reasons: Vec<u8>,
    redacted: Vec<u8>,
    safeguards: Option<Vec<u8>>,
    duration_ms: Option<i64>,
}

fn prepare_entry(mut entry: Entry, cap: usize) -> Prepared {
    let mut kinds: BTreeSet<String> = entry.redacted.drain(..).collect();
    redact::redact_json(&mut entry.inputs, &mut kinds);
    if let Some(safeguards) = entry.safeguards.as_mut() {
        redact::redact_json(safeguards, &mut kinds);
    }
    if let Some(out) = entry.outputs.as_mut() {
        // Redacted before capping, so a secret straddling the cut is not left half-visible.
        for text in [&mut out.stdout, &mut out.stderr] {
            let owned = std::mem::take(text);
            let redacted = match redact::redact_into(&owned, &mut kinds) {
                std::borrow::Cow::Borrowed(_) => owned,
                std::borrow::Cow::Owned(s) => s,
            };
            *text = cap_output(redacted, cap);
        }
    }
    for reason in entry.reasons.iter_mut() {
        if let std::borrow::Cow::Owned(s) = redact::redact_into(reason, &mut kinds) {
            *reason = s;
        }
    }
    entry.redacted = kinds.into_iter().collect();
    Prepared {
        inputs: canonical::json_bytes(&entry.inputs),
        outputs: entry.outputs.as_ref().map(canonical::outputs_bytes),
        reasons: canonical::strings_bytes(&entry.reasons),
        redacted: canonical::strings_bytes(&entry.redacted),
        safeguards: entry.safeguards.as_ref().map(canonical::json_bytes),
        duration_ms: entry
            .duration_ms
            .map(|d| i64::try_from(d).unwrap_or(i64::MAX)),
        entry,
    }
}

fn text(bytes: &[u8]) -> &str {
    // Canonical encodings are built from `str`s, so they are always UTF-8.
    std::str::from_utf8(bytes).unwrap_or_default()
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
    visit: impl FnOnce(&Fields<'_>, &str) -> Result<T, LedgerError>,
) -> Result<T, LedgerError> {
    let seq: i64 = row.get(0)?;
    let fields = Fields {
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

fn record_from_row(row: &Row<'_>) -> Result<Record, LedgerError> {
    with_fields(row, |f, hash| {
        let corrupt = |what: &str, e: serde_json::Error| LedgerError::Corrupt {
            seq: f.seq,
            what: format!("{what}: {e}"),
        };
        let inputs: Value = serde_json::from_slice(f.inputs).map_err(|e| corrupt("inputs", e))?;
        let outputs: Option<Outputs> = f
            .outputs
            .map(serde_json::from_slice)
            .transpose()
            .map_err(|e| corrupt("outputs", e))?;
        let reasons: Vec<String> =
            serde_json::from_slice(f.reasons).map_err(|e| corrupt("reasons", e))?;
        let redacted: Vec<String> =
            serde_json::from_slice(f.redacted).map_err(|e| corrupt("redacted", e))?;
        let safeguards: Option<Value> = f
            .safeguards
            .map(serde_json::from_slice)
            .transpose()
            .map_err(|e| corrupt("safeguards", e))?;
        let own = |s: Option<&str>| s.map(str::to_string);
        Ok(Record {
            id: f.id.to_string(),
            seq: f.seq,
            event: f.event.to_string(),
            timestamp_ms: f.timestamp_ms,
            session_id: own(f.session_id),
            actor: RecordActor {
                kind: f.actor_kind.to_string(),
                id: f.actor_id.to_string(),
            },
            tool: f.tool.to_string(),
            inputs,
            outputs,
            context: RecordContext {
                triggered_by: own(f.triggered_by),
                alert_id: own(f.alert_id),
                host: own(f.host),
                task: own(f.task),
            },
            duration_ms: f.duration_ms.map(|d| u64::try_from(d).unwrap_or(0)),
            verdict: own(f.verdict),
            rule: own(f.rule),
            reasons,
            call_id: own(f.call_id),
            redacted,
            cwd: own(f.cwd),
            safeguards,
            prev_hash: f.prev_hash.to_string(),
            hash: hash.to_string(),
        })
    })
}

impl SqliteLedger {
    fn select(
        &self,
        sql_where: &str,
        params: &[&dyn ToSql],
        suffix: &str,
    ) -> Result<Vec<Record>, LedgerError> {
        let conn = self.conn();
        let sql = format!("SELECT {COLUMNS} FROM records {sql_where} {suffix}");
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query(params)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(record_from_row(row)?);
        }
        Ok(out)
    }
}

impl Ledger for SqliteLedger {
    fn append(&self, entry: Entry) -> Result<Record, LedgerError> {
        let p = prepare_entry(entry, self.options.output_cap);
        let mut conn = self.conn();
        let mut buf = Vec::with_capacity(1024);
        let (seq, id, prev_hash, hash) = self.with_write(&mut conn, |tx| {
            // The tail is read inside the write transaction: no other writer can append
            // between this read and our insert.
            let tail: Option<(i64, String)> = tx
                .query_row(
                    "SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let (last_seq, prev_hash) = match tail {
                Some((s, h)) => (u64::try_from(s).unwrap_or(0), h),
                None => (0, GENESIS_HASH.to_string()),
            };
            let seq = last_seq + 1;
            let id = Record::id_for(seq);
            let e = &p.entry;
            let fields = Fields {
                id: &id,
                seq,
                event: &e.event,
                timestamp_ms: e.timestamp_ms,
                session_id: e.session_id.as_deref(),
                actor_kind: &e.actor.kind,
                actor_id: &e.actor.id,
                tool: &e.tool,
                inputs: &p.inputs,
                outputs: p.outputs.as_deref(),
                triggered_by: e.context.triggered_by.as_deref(),
                alert_id: e.context.alert_id.as_deref(),
                host: e.context.host.as_deref(),
                task: e.context.task.as_deref(),
                duration_ms: p.duration_ms,
                verdict: e.verdict.as_deref(),
                rule: e.rule.as_deref(),
                reasons: &p.reasons,
                call_id: e.call_id.as_deref(),
                redacted: &p.redacted,
                cwd: e.cwd.as_deref(),
                safeguards: p.safeguards.as_deref(),
                prev_hash: &prev_hash,
            };
            canonical::encode_fields(&fields, &mut buf);
            let hash = canonical::sha256_hex(&buf);
            tx.prepare_cached(&format!(
                "INSERT INTO records ({COLUMNS}) VALUES \
                 (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24)"
            ))?
            .execute(rusqlite::params![
                i64::try_from(seq).unwrap_or(i64::MAX),
                id,
                e.event,
                e.timestamp_ms,
                e.session_id,
                e.actor.kind,
                e.actor.id,
                e.tool,
                text(&p.inputs),
                p.outputs.as_deref().map(text),
                e.context.triggered_by,
                e.context.alert_id,
                e.context.host,
                e.context.task,
                p.duration_ms,
                e.verdict,
                e.rule,
                text(&p.reasons),
                e.call_id,
                text(&p.redacted),
                e.cwd,
                p.safeguards.as_deref().map(text),
                prev_hash,
                hash,
            ])?;
            Ok((seq, id, prev_hash, hash.clone()))
        })?;
        // The checkpoint is written under the write lock from the committed tail, so
        // concurrent writers can only move it forward, and it never names an uncommitted
        // record (which a crash would turn into a false "truncated").
        self.with_write(&mut conn, |tx| {
            let tail: Option<(i64, String)> = tx
                .query_row(
                    "SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            if let Some((s, h)) = tail {
                self.write_checkpoint(u64::try_from(s).unwrap_or(0), &h)?;
            }
            Ok(())
        })?;
        drop(conn);
        let e = p.entry;
        Ok(Record {
            id,
            seq,
            event: e.event,
            timestamp_ms: e.timestamp_ms,
            session_id: e.session_id,
            actor: e.actor,
            tool: e.tool,
            inputs: e.inputs,
            outputs: e.outputs,
            context: e.context,
            duration_ms: p.duration_ms.map(|d| u64::try_from(d).unwrap_or(0)),
            verdict: e.verdict,
            rule: e.rule,
            reasons: e.reasons,
            call_id: e.call_id,
            redacted: e.redacted,
            cwd: e.cwd,
            safeguards: e.safeguards,
            prev_hash,
            hash,
        })
    }

    fn get(&self, id_or_seq: &str) -> Result<Option<Record>, LedgerError> {
        let digits = id_or_seq.strip_prefix('r').unwrap_or(id_or_seq);
        let found = match digits.parse::<i64>() {
            Ok(seq) => self.select("WHERE seq = ?1", &[&seq], "")?,
            Err(_) => self.select("WHERE id = ?1", &[&id_or_seq], "")?,
        };
        Ok(found.into_iter().next())
    }

    fn query(&self, filter: &Filter) -> Result<Vec<Record>, LedgerError> {
        let mut clauses: Vec<&str> = Vec::new();
        let mut params: Vec<&dyn ToSql> = Vec::new();
        if let Some(v) = &filter.since_ms {
            clauses.push("timestamp_ms >= ?");
            params.push(v);
        }
        if let Some(v) = &filter.until_ms {
            clauses.push("timestamp_ms < ?");
            params.push(v);
        }
        if let Some(v) = &filter.session {
            clauses.push("session_id = ?");
            params.push(v);
        }
        if let Some(v) = &filter.actor {
            clauses.push("(actor_kind = ? OR actor_id = ?)");
            params.push(v);
            params.push(v);
        }
        if let Some(v) = &filter.verdict {
            clauses.push("verdict = ?");
            params.push(v);
        }
        if let Some(v) = &filter.tool {
            clauses.push("tool = ?");
            params.push(v);
        }
        if let Some(v) = &filter.alert {
            clauses.push("alert_id = ?");
            params.push(v);
        }
        if let Some(v) = &filter.event {
            // The rare human events have partial indexes, which SQLite only uses when the
            // query names the event literally; the names are our own constants.
            match RARE_EVENTS.iter().find(|rare| **rare == v.as_str()) {
                Some(rare) => clauses.push(match *rare {
                    crate::event::TRUST => "event = 'trust'",
                    _ => "event = 'approval'",
                }),
                None => {
                    clauses.push("event = ?");
                    params.push(v);
                }
            }
        }
        let sql_where = if clauses.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", clauses.join(" AND "))
        };
        match filter.limit {
            Some(limit) => {
                let limit = i64::try_from(limit).unwrap_or(i64::MAX);
                let mut records = self.select(
                    &sql_where,
                    &params,
                    &format!("ORDER BY seq DESC LIMIT {limit}"),
                )?;
                records.reverse();
                Ok(records)
            }
            None => self.select(&sql_where, &params, "ORDER BY seq"),
        }
    }

    fn decision_for_call(&self, call_id: &str) -> Result<Option<Record>, LedgerError> {
        let found = self.select(
            "WHERE call_id = ?1 AND event = ?2",
            &[&call_id, &crate::event::DECISION],
            "ORDER BY seq DESC LIMIT 1",
        )?;
        Ok(found.into_iter().next())
    }

    fn scan(
        &self,
        visit: &mut dyn FnMut(&Record) -> Result<(), LedgerError>,
    ) -> Result<(), LedgerError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM records ORDER BY seq"))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            visit(&record_from_row(row)?)?;
        }
        Ok(())
    }

    fn scan_chain(
        &self,
        visit: &mut dyn FnMut(&ChainLink<'_>) -> Result<(), LedgerError>,
    ) -> Result<(), LedgerError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM records ORDER BY seq"))?;
        let mut rows = stmt.query([])?;
        let mut buf = Vec::with_capacity(1024);
        while let Some(row) = rows.next()? {
            with_fields(row, |f, hash| {
                canonical::encode_fields(f, &mut buf);
                visit(&ChainLink {
                    seq: f.seq,
                    id: f.id,
                    event: f.event,
                    prev_hash: f.prev_hash,
                    hash,
                    canonical: &buf,
                })
            })?;
        }
        Ok(())
    }

    fn head_checkpoint(&self) -> Result<Option<(u64, String)>, LedgerError> {
        let content = match std::fs::read_to_string(&self.head_path) {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(LedgerError::Io {
                    path: self.head_path.clone(),
                    source,
                });
            }
        };
        // Empty is what an unsynced checkpoint can be after a power loss: no checkpoint.
        if content.is_empty() {
            return Ok(None);
        }
        let bad = |reason: &str| LedgerError::BadCheckpoint {
            path: self.head_path.clone(),
            reason: reason.to_string(),
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

#[cfg(test)]
mod tests {
    use super::cap_output;

    #[test]
    fn output_is_cut_at_a_char_boundary_with_a_marker() {
        assert_eq!(cap_output("short".into(), 10), "short");
        // "é" is two bytes: a cap of 3 falls inside the second one.
        assert_eq!(
            cap_output("aéé".into(), 4),
            "aé\n[... 2 bytes cut by nightwatch]"
        );
        assert_eq!(
            cap_output("abcdef".into(), 3),
            "abc\n[... 3 bytes cut by nightwatch]"
        );
    }
}
