//! The ledger in PostgreSQL: each host's chain in `ledger_records`, keyed by `(host, seq)`,
//! append-only by trigger; its head, and the lock its appends take, in `ledger_heads`.

use crate::db::{Db, Failure, Schema, Tx, big};
use crate::text::{decode, encode, encode_opt};
use nightwatch_ledger::{
    ChainLink, Entry, Filter, GENESIS_HASH, PreparedEntry, Record, StoredFields, StoredRecord,
    event,
};
use nightwatch_store::{Ledger, LedgerReader, StoreError, store_name};
use postgres::Row;
use postgres::types::{ToSql, Type};
use std::borrow::Cow;

const SCHEMA_1: &str = "
CREATE OR REPLACE FUNCTION nightwatch_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the nightwatch % is append-only: rows cannot be %',
        TG_ARGV[0], lower(TG_OP) || 'd';
END $$;

CREATE TABLE ledger_records (
    host         TEXT NOT NULL,   -- the host whose chain this is
    seq          BIGINT NOT NULL,
    id           TEXT NOT NULL,
    event        TEXT NOT NULL,
    timestamp_ms BIGINT NOT NULL,
    session_id   TEXT,
    actor_kind   TEXT NOT NULL,
    actor_id     TEXT NOT NULL,
    tool         TEXT NOT NULL,
    inputs       TEXT NOT NULL,   -- canonical JSON
    outputs      TEXT,            -- canonical JSON object, or NULL
    triggered_by TEXT,
    alert_id     TEXT,
    context_host TEXT,            -- the record's own context.host
    task         TEXT,
    duration_ms  BIGINT,
    verdict      TEXT,
    rule         TEXT,
    reasons      TEXT NOT NULL,   -- canonical JSON array of strings
    call_id      TEXT,
    redacted     TEXT NOT NULL,   -- canonical JSON array of strings
    cwd          TEXT,
    safeguards   TEXT,            -- canonical JSON object, or NULL
    prev_hash    TEXT NOT NULL,
    hash         TEXT NOT NULL,
    PRIMARY KEY (host, seq),
    UNIQUE (host, id)
);
CREATE INDEX ledger_records_timestamp ON ledger_records (host, timestamp_ms);
CREATE INDEX ledger_records_session ON ledger_records (host, session_id)
    WHERE session_id IS NOT NULL;
CREATE INDEX ledger_records_call ON ledger_records (host, call_id) WHERE call_id IS NOT NULL;
CREATE INDEX ledger_records_verdict ON ledger_records (host, verdict) WHERE verdict IS NOT NULL;
CREATE INDEX ledger_records_trust ON ledger_records (host, actor_id) WHERE event = 'trust';
CREATE INDEX ledger_records_approval ON ledger_records (host, seq) WHERE event = 'approval';
CREATE TRIGGER ledger_records_append_only BEFORE UPDATE OR DELETE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION nightwatch_append_only('ledger');
CREATE TRIGGER ledger_records_no_truncate BEFORE TRUNCATE ON ledger_records
    FOR EACH STATEMENT EXECUTE FUNCTION nightwatch_append_only('ledger');

-- One row per host: the head checkpoint, and the row every append to that host's chain
-- locks first, so two processes of one host never fork it. It only moves forward.
CREATE TABLE ledger_heads (
    host TEXT PRIMARY KEY,
    seq  BIGINT NOT NULL,
    hash TEXT NOT NULL
);
CREATE OR REPLACE FUNCTION nightwatch_head_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'UPDATE' OR NEW.seq < OLD.seq OR NEW.host <> OLD.host THEN
        RAISE EXCEPTION 'the nightwatch ledger head of % only moves forward', OLD.host;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER ledger_heads_forward BEFORE UPDATE OR DELETE ON ledger_heads
    FOR EACH ROW EXECUTE FUNCTION nightwatch_head_forward();
CREATE TRIGGER ledger_heads_no_truncate BEFORE TRUNCATE ON ledger_heads
    FOR EACH STATEMENT EXECUTE FUNCTION nightwatch_append_only('ledger head');
";

pub(crate) const SCHEMA: Schema = Schema {
    store: store_name::LEDGER,
    migrations: &[SCHEMA_1],
};

pub(crate) const COLUMNS: &str = "seq, id, event, timestamp_ms, session_id, actor_kind, actor_id, tool, \
    inputs, outputs, triggered_by, alert_id, context_host, task, duration_ms, verdict, rule, \
    reasons, call_id, redacted, cwd, safeguards, prev_hash, hash";

/// Many records in one statement, each column an array: one round trip and one plan for a
/// batch, where a statement per record cost a parse and a round trip each.
const INSERT_ALL: &str = "INSERT INTO ledger_records (host, seq, id, event, timestamp_ms, \
    session_id, actor_kind, actor_id, tool, inputs, outputs, triggered_by, alert_id, context_host, \
    task, duration_ms, verdict, rule, reasons, call_id, redacted, cwd, safeguards, prev_hash, hash) \
    SELECT $1, r.* FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[], \
    $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], \
    $14::text[], $15::text[], $16::bigint[], $17::text[], $18::text[], $19::text[], $20::text[], \
    $21::text[], $22::text[], $23::text[], $24::text[], $25::text[]) AS r \
    ON CONFLICT (host, seq) DO NOTHING";

/// Records an [`INSERT_ALL`] statement carries at most, so one message stays a few megabytes.
const INSERT_CHUNK: usize = 500;

/// Rows a scan fetches at a time: memory stays bounded however long the chain is.
const SCAN_BATCH: i32 = 500;

/// One host's ledger in the fleet's database.
///
/// Appends to one host's chain lock that host's row of `ledger_heads` first, then read the
/// tail and insert after it: handles in any number of processes keep seq 1, 2, 3, ... and one
/// chain per host, and hosts never wait for each other.
pub struct PgLedger {
    db: Db,
    host: String,
    output_cap: usize,
}

impl PgLedger {
    pub(crate) fn new(db: Db, host: &str, output_cap: usize) -> PgLedger {
        PgLedger {
            db,
            host: host.to_string(),
            output_cap,
        }
    }

    /// The host whose chain this handle reads and appends to.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The highest seq this host's chain holds here (0 when it holds none): where a shipper
    /// resumes.
    pub fn last_seq(&self) -> Result<u64, StoreError> {
        self.db.run(|client| {
            let row = client.query_opt(
                "SELECT seq FROM ledger_records WHERE host = $1 ORDER BY seq DESC LIMIT 1",
                &[&self.host],
            )?;
            Ok::<_, Failure<StoreError>>(row.map_or(0, |r| seq_of(r.get(0))))
        })
    }

    /// Stores records this host already chained elsewhere (its own ledger), as they are:
    /// idempotent by `(host, seq)`, so shipping a record again changes nothing. Returns how
    /// many were new. A record whose hash is not the hash of its fields, a record already
    /// held with another hash ([`StoreError::Corrupt`]: two different chains claim this
    /// host), or a new record that does not follow the chain held here (a gap, or a
    /// `prev_hash` that is not the tail's) refuses the whole call: nothing is stored.
    pub fn ship(&self, records: &[Record]) -> Result<usize, StoreError> {
        if records.is_empty() {
            return Ok(0);
        }
        let stored: Vec<StoredRecord<'_>> = records.iter().map(StoredRecord::new).collect();
        let mut buf = Vec::with_capacity(1024);
        for (record, s) in records.iter().zip(&stored) {
            if s.fields().hash(&mut buf) != record.hash {
                return Err(self.corrupt(format!(
                    "record {} shipped for host {} does not hash to the hash it carries",
                    record.seq, self.host
                )));
            }
        }
        self.db.write(|tx| {
            let (mut tail_seq, mut tail_hash) = self.lock_chain(tx)?;
            let mut new = Vec::new();
            for (record, s) in records.iter().zip(&stored) {
                let f = s.fields();
                if f.seq <= tail_seq {
                    let held: Option<String> = tx
                        .query_opt(
                            "SELECT hash FROM ledger_records WHERE host = $1 AND seq = $2",
                            &[&self.host, &big(f.seq)],
                        )?
                        .map(|r| r.get(0));
                    match held {
                        Some(hash) if hash == record.hash => continue,
                        Some(hash) => {
                            return Err(Failure::Caller(self.corrupt(format!(
                                "record {} of host {} is held here with hash {hash}, shipped \
                                 with {}: two chains claim this host",
                                f.seq, self.host, record.hash
                            ))));
                        }
                        None => {
                            return Err(Failure::Caller(self.corrupt(format!(
                                "record {} of host {} is missing below the chain's tail {tail_seq}",
                                f.seq, self.host
                            ))));
                        }
                    }
                }
                if f.seq != tail_seq + 1 || f.prev_hash != tail_hash {
                    return Err(Failure::Caller(StoreError::Backend {
                        store: store_name::LEDGER,
                        message: format!(
                            "record {} shipped for host {} does not follow the chain held \
                             here, which ends at {tail_seq}: records must be shipped in order, \
                             from {}; nothing was stored",
                            f.seq,
                            self.host,
                            tail_seq + 1
                        ),
                    }));
                }
                tail_seq = f.seq;
                tail_hash.clone_from(&record.hash);
                new.push((f, record.hash.as_str()));
            }
            self.insert_locked(tx, &new)?;
            self.move_head(tx, tail_seq, &tail_hash)?;
            Ok(new.len())
        })
    }

    /// Inserts `rows` after the tail of the chain this transaction locked: every one is new.
    fn insert_locked(
        &self,
        tx: &mut Tx<'_>,
        rows: &[(StoredFields<'_>, &str)],
    ) -> Result<(), Failure<StoreError>> {
        let inserted = insert_all(tx, &self.host, rows)?;
        if inserted == rows.len() {
            return Ok(());
        }
        // Only a row under the lock we hold could conflict: none can.
        Err(Failure::Caller(self.corrupt(format!(
            "{} of {} records of host {} appeared while its chain was locked",
            rows.len() - inserted,
            rows.len(),
            self.host
        ))))
    }

    fn corrupt(&self, what: String) -> StoreError {
        StoreError::Corrupt {
            store: store_name::LEDGER,
            what,
        }
    }

    /// Locks this host's chain for the rest of `tx` and reads its tail (seq 0 and the genesis
    /// hash when it is empty).
    fn lock_chain(&self, tx: &mut Tx<'_>) -> Result<(u64, String), Failure<StoreError>> {
        tx.execute(
            "INSERT INTO ledger_heads (host, seq, hash) VALUES ($1, 0, $2)
             ON CONFLICT (host) DO NOTHING",
            &[&self.host, &GENESIS_HASH],
        )?;
        tx.execute(
            "SELECT 1 FROM ledger_heads WHERE host = $1 FOR UPDATE",
            &[&self.host],
        )?;
        // The tail is read from the records themselves, as SQLite's ledger does.
        let tail = tx.query_opt(
            "SELECT seq, hash FROM ledger_records WHERE host = $1 ORDER BY seq DESC LIMIT 1",
            &[&self.host],
        )?;
        Ok(match tail {
            Some(row) => (seq_of(row.get(0)), row.get(1)),
            None => (0, GENESIS_HASH.to_string()),
        })
    }

    fn move_head(&self, tx: &mut Tx<'_>, seq: u64, hash: &str) -> Result<(), Failure<StoreError>> {
        tx.execute(
            "UPDATE ledger_heads SET seq = $2, hash = $3 WHERE host = $1 AND seq <= $2",
            &[&self.host, &big(seq), &hash],
        )?;
        Ok(())
    }

    fn select(
        &self,
        sql_where: &str,
        params: &[&(dyn ToSql + Sync)],
        suffix: &str,
    ) -> Result<Vec<Record>, StoreError> {
        self.db.run(|client| {
            let sql = format!(
                "SELECT {COLUMNS} FROM ledger_records WHERE host = $1 {sql_where} {suffix}"
            );
            let mut all: Vec<&(dyn ToSql + Sync)> = vec![&self.host];
            all.extend_from_slice(params);
            let rows = client.query(&sql, &all)?;
            rows.iter().map(record_from_row).collect()
        })
    }

    /// Visits this host's rows in seq order, a batch at a time, in one snapshot.
    fn scan_rows(
        &self,
        mut visit: impl FnMut(&Row) -> Result<(), Failure<StoreError>>,
    ) -> Result<(), StoreError> {
        self.db.run(|client| {
            let mut tx = client
                .build_transaction()
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let portal = tx.bind(
                &format!("SELECT {COLUMNS} FROM ledger_records WHERE host = $1 ORDER BY seq"),
                &[&self.host],
            )?;
            loop {
                let rows = tx.query_portal(&portal, SCAN_BATCH)?;
                for row in &rows {
                    visit(row)?;
                }
                if rows.len() < SCAN_BATCH as usize {
                    break;
                }
            }
            tx.commit()?;
            Ok(())
        })
    }
}

fn seq_of(seq: i64) -> u64 {
    u64::try_from(seq).unwrap_or(0)
}

fn text(bytes: &[u8]) -> &str {
    // Canonical encodings are built from `str`s, so they are always UTF-8.
    std::str::from_utf8(bytes).unwrap_or_default()
}

/// Inserts `rows` (each record's stored fields and hash), in order; returns how many were new.
fn insert_all(
    tx: &mut Tx<'_>,
    host: &str,
    rows: &[(StoredFields<'_>, &str)],
) -> Result<usize, postgres::Error> {
    let mut inserted = 0;
    for chunk in rows.chunks(INSERT_CHUNK) {
        let c = Columns::of(chunk);
        let n = tx.execute_typed(
            INSERT_ALL,
            &[
                (&host, Type::TEXT),
                (&c.seq, Type::INT8_ARRAY),
                (&c.id, Type::TEXT_ARRAY),
                (&c.event, Type::TEXT_ARRAY),
                (&c.timestamp_ms, Type::INT8_ARRAY),
                (&c.session_id, Type::TEXT_ARRAY),
                (&c.actor_kind, Type::TEXT_ARRAY),
                (&c.actor_id, Type::TEXT_ARRAY),
                (&c.tool, Type::TEXT_ARRAY),
                (&c.inputs, Type::TEXT_ARRAY),
                (&c.outputs, Type::TEXT_ARRAY),
                (&c.triggered_by, Type::TEXT_ARRAY),
                (&c.alert_id, Type::TEXT_ARRAY),
                (&c.host, Type::TEXT_ARRAY),
                (&c.task, Type::TEXT_ARRAY),
                (&c.duration_ms, Type::INT8_ARRAY),
                (&c.verdict, Type::TEXT_ARRAY),
                (&c.rule, Type::TEXT_ARRAY),
                (&c.reasons, Type::TEXT_ARRAY),
                (&c.call_id, Type::TEXT_ARRAY),
                (&c.redacted, Type::TEXT_ARRAY),
                (&c.cwd, Type::TEXT_ARRAY),
                (&c.safeguards, Type::TEXT_ARRAY),
                (&c.prev_hash, Type::TEXT_ARRAY),
                (&c.hash, Type::TEXT_ARRAY),
            ],
        )?;
        inserted += usize::try_from(n).unwrap_or(usize::MAX);
    }
    Ok(inserted)
}

/// Records' stored fields a column at a time, as [`INSERT_ALL`] takes them.
#[derive(Default)]
struct Columns<'a> {
    seq: Vec<i64>,
    id: Vec<Cow<'a, str>>,
    event: Vec<Cow<'a, str>>,
    timestamp_ms: Vec<i64>,
    session_id: Vec<Option<Cow<'a, str>>>,
    actor_kind: Vec<Cow<'a, str>>,
    actor_id: Vec<Cow<'a, str>>,
    tool: Vec<Cow<'a, str>>,
    inputs: Vec<Cow<'a, str>>,
    outputs: Vec<Option<Cow<'a, str>>>,
    triggered_by: Vec<Option<Cow<'a, str>>>,
    alert_id: Vec<Option<Cow<'a, str>>>,
    host: Vec<Option<Cow<'a, str>>>,
    task: Vec<Option<Cow<'a, str>>>,
    duration_ms: Vec<Option<i64>>,
    verdict: Vec<Option<Cow<'a, str>>>,
    rule: Vec<Option<Cow<'a, str>>>,
    reasons: Vec<Cow<'a, str>>,
    call_id: Vec<Option<Cow<'a, str>>>,
    redacted: Vec<Cow<'a, str>>,
    cwd: Vec<Option<Cow<'a, str>>>,
    safeguards: Vec<Option<Cow<'a, str>>>,
    prev_hash: Vec<Cow<'a, str>>,
    hash: Vec<Cow<'a, str>>,
}

impl<'a> Columns<'a> {
    fn of(rows: &[(StoredFields<'a>, &'a str)]) -> Columns<'a> {
        let mut c = Columns::default();
        for (f, hash) in rows {
            let o = encode_opt;
            c.seq.push(big(f.seq));
            c.id.push(encode(f.id));
            c.event.push(encode(f.event));
            c.timestamp_ms.push(f.timestamp_ms);
            c.session_id.push(o(f.session_id));
            c.actor_kind.push(encode(f.actor_kind));
            c.actor_id.push(encode(f.actor_id));
            c.tool.push(encode(f.tool));
            c.inputs.push(encode(text(f.inputs)));
            c.outputs.push(o(f.outputs.map(text)));
            c.triggered_by.push(o(f.triggered_by));
            c.alert_id.push(o(f.alert_id));
            c.host.push(o(f.host));
            c.task.push(o(f.task));
            c.duration_ms.push(f.duration_ms);
            c.verdict.push(o(f.verdict));
            c.rule.push(o(f.rule));
            c.reasons.push(encode(text(f.reasons)));
            c.call_id.push(o(f.call_id));
            c.redacted.push(encode(text(f.redacted)));
            c.cwd.push(o(f.cwd));
            c.safeguards.push(o(f.safeguards.map(text)));
            c.prev_hash.push(encode(f.prev_hash));
            c.hash.push(encode(hash));
        }
        c
    }
}

/// Runs `visit` on the stored fields of one row (columns in [`COLUMNS`] order).
fn with_fields<T>(
    row: &Row,
    visit: impl FnOnce(&StoredFields<'_>, &str) -> Result<T, Failure<StoreError>>,
) -> Result<T, Failure<StoreError>> {
    let s = |i: usize| row.try_get::<_, &str>(i).map(decode);
    let o = |i: usize| row.try_get::<_, Option<&str>>(i).map(|v| v.map(decode));
    let (id, event, actor_kind, actor_id, tool) = (s(1)?, s(2)?, s(5)?, s(6)?, s(7)?);
    let (session_id, triggered_by, alert_id, host) = (o(4)?, o(10)?, o(11)?, o(12)?);
    let (task, verdict, rule, call_id, cwd) = (o(13)?, o(15)?, o(16)?, o(18)?, o(20)?);
    let (inputs, outputs, reasons, redacted) = (s(8)?, o(9)?, s(17)?, s(19)?);
    let (safeguards, prev_hash, hash) = (o(21)?, s(22)?, s(23)?);
    let fields = StoredFields {
        seq: seq_of(row.try_get(0)?),
        id: &id,
        event: &event,
        timestamp_ms: row.try_get(3)?,
        session_id: session_id.as_deref(),
        actor_kind: &actor_kind,
        actor_id: &actor_id,
        tool: &tool,
        inputs: inputs.as_bytes(),
        outputs: outputs.as_deref().map(str::as_bytes),
        triggered_by: triggered_by.as_deref(),
        alert_id: alert_id.as_deref(),
        host: host.as_deref(),
        task: task.as_deref(),
        duration_ms: row.try_get(14)?,
        verdict: verdict.as_deref(),
        rule: rule.as_deref(),
        reasons: reasons.as_bytes(),
        call_id: call_id.as_deref(),
        redacted: redacted.as_bytes(),
        cwd: cwd.as_deref(),
        safeguards: safeguards.as_deref().map(str::as_bytes),
        prev_hash: &prev_hash,
    };
    visit(&fields, &hash)
}

pub(crate) fn record_from_row(row: &Row) -> Result<Record, Failure<StoreError>> {
    with_fields(row, |f, hash| {
        f.to_record(hash).map_err(|e| {
            Failure::Caller(StoreError::Corrupt {
                store: store_name::LEDGER,
                what: e.to_string(),
            })
        })
    })
}

/// A value bound to a query.
pub(crate) type Param = Box<dyn ToSql + Sync>;

/// `filter`'s conditions (its limit aside) as ` AND ...` clauses on `ledger_records`, their
/// placeholders numbered from `$first`, and the values to bind to them, in order.
pub(crate) fn filter_sql(filter: &Filter, first: usize) -> (String, Vec<Param>) {
    let text = |v: &Option<String>| {
        v.as_deref()
            .map(|v| Box::new(encode(v).into_owned()) as Param)
    };
    let wanted: Vec<(&str, Vec<Param>)> = [
        (
            "seq > ?",
            filter.after_seq.map(|v| vec![Box::new(big(v)) as Param]),
        ),
        (
            "seq < ?",
            filter.before_seq.map(|v| vec![Box::new(big(v)) as Param]),
        ),
        (
            "timestamp_ms >= ?",
            filter.since_ms.map(|v| vec![Box::new(v) as Param]),
        ),
        (
            "timestamp_ms < ?",
            filter.until_ms.map(|v| vec![Box::new(v) as Param]),
        ),
        ("session_id = ?", text(&filter.session).map(|v| vec![v])),
        (
            "(actor_kind = ? OR actor_id = ?)",
            filter
                .actor
                .as_ref()
                .map(|v| encode(v).into_owned())
                .map(|v| vec![Box::new(v.clone()) as Param, Box::new(v)]),
        ),
        ("verdict = ?", text(&filter.verdict).map(|v| vec![v])),
        ("tool = ?", text(&filter.tool).map(|v| vec![v])),
        ("alert_id = ?", text(&filter.alert).map(|v| vec![v])),
        ("event = ?", text(&filter.event).map(|v| vec![v])),
    ]
    .into_iter()
    .filter_map(|(clause, values)| Some((clause, values?)))
    .collect();
    let mut sql = String::new();
    let mut params: Vec<Param> = Vec::new();
    for (clause, values) in wanted {
        let mut clause = clause.to_string();
        for v in values {
            clause = clause.replacen('?', &format!("${}", first + params.len()), 1);
            params.push(v);
        }
        sql.push_str(" AND ");
        sql.push_str(&clause);
    }
    (sql, params)
}

impl LedgerReader for PgLedger {
    fn get(&self, id_or_seq: &str) -> Result<Option<Record>, StoreError> {
        let digits = id_or_seq.strip_prefix('r').unwrap_or(id_or_seq);
        let found = match digits.parse::<i64>() {
            Ok(seq) => self.select("AND seq = $2", &[&seq], "")?,
            Err(_) => self.select("AND id = $2", &[&encode(id_or_seq)], "")?,
        };
        Ok(found.into_iter().next())
    }

    fn query(&self, filter: &Filter) -> Result<Vec<Record>, StoreError> {
        // `$1` is the host.
        let (sql_where, values) = filter_sql(filter, 2);
        let params: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v.as_ref()).collect();
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

    fn decision_for_call(&self, call_id: &str) -> Result<Option<Record>, StoreError> {
        let found = self.select(
            "AND call_id = $2 AND event = $3",
            &[&encode(call_id), &event::DECISION],
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

    /// The head kept in `ledger_heads`: it moves with every commit and never back, so a tail
    /// cut off the records (which takes disabling their trigger) shows against it.
    fn head_checkpoint(&self) -> Result<Option<(u64, String)>, StoreError> {
        self.db.run(|client| {
            let row = client.query_opt(
                "SELECT seq, hash FROM ledger_heads WHERE host = $1 AND seq > 0",
                &[&self.host],
            )?;
            Ok::<_, Failure<StoreError>>(row.map(|r| (seq_of(r.get(0)), r.get(1))))
        })
    }
}

impl Ledger for PgLedger {
    fn append(&self, entry: Entry) -> Result<Record, StoreError> {
        let mut records = self.append_all(vec![entry])?;
        records.pop().ok_or_else(|| StoreError::Backend {
            store: store_name::LEDGER,
            message: "an append stored no record".into(),
        })
    }

    /// One transaction for all of `entries`: one commit however many there are.
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
            let (last_seq, mut prev_hash) = self.lock_chain(tx)?;
            // Each record's (seq, id, prev_hash, hash), chained after the tail.
            let mut links = Vec::with_capacity(prepared.len());
            for (seq, entry) in (last_seq + 1..).zip(&prepared) {
                let id = Record::id_for(seq);
                let hash = entry.fields(seq, &id, &prev_hash).hash(&mut buf);
                let prev = std::mem::replace(&mut prev_hash, hash.clone());
                links.push((seq, id, prev, hash));
            }
            let rows: Vec<(StoredFields<'_>, &str)> = prepared
                .iter()
                .zip(&links)
                .map(|(entry, (seq, id, prev, hash))| (entry.fields(*seq, id, prev), hash.as_str()))
                .collect();
            self.insert_locked(tx, &rows)?;
            let tail = links.last().map_or(last_seq, |link| link.0);
            self.move_head(tx, tail, &prev_hash)?;
            Ok(links)
        })?;
        Ok(prepared
            .into_iter()
            .zip(chained)
            .map(|(entry, (seq, id, prev_hash, hash))| entry.into_record(seq, id, prev_hash, hash))
            .collect())
    }
}
