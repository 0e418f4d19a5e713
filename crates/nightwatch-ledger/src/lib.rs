//! The ledger: every decision and every result, durable, append-only and tamper-evident.
//!
//! A caller hands in an [`Entry`] (who, what tool, inputs, outputs, verdict, rule, reasons, call
//! id, context, a timestamp it took from its own clock). The store redacts secrets
//! ([`redact`]), caps captured output, gives the entry the next sequence number and the id
//! `r<seq>`, chains it to the previous record by hash, and commits it to disk before
//! [`Ledger::append`] returns the [`Record`]. Records are never updated: a result is a new record
//! joined to its decision by `call_id`.
//!
//! Stores sit behind the [`Ledger`] trait; [`SqliteLedger`] is the embedded default. [`verify`]
//! walks any store's chain and names the first bad record.
//!
//! # The hash chain and its canonical encoding
//!
//! `hash` is the SHA-256 (lowercase hex) of the record's *canonical encoding*: a JSON object of
//! every field except `hash` itself, written as follows.
//!
//! - Keys, at every level, in ascending byte order, every key always present (`null` when
//!   absent); no whitespace anywhere; UTF-8. The record's keys are: `actor` (`{"id","kind"}`),
//!   `call_id`, `context` (`{"alert_id","host","task","triggered_by"}`), `cwd`, `duration_ms`,
//!   `event`, `id`, `inputs`, `outputs` (`{"exit_code","stderr","stdout"}` or `null`),
//!   `prev_hash`, `reasons`, `redacted`, `rule`, `safeguards`, `seq`, `session_id`,
//!   `timestamp_ms`, `tool`, `verdict`. The one exception to "always present" is
//!   `safeguards` (any JSON object, encoded as `inputs` is): it was added in schema 2 and is
//!   written only when the record has one, so records chained before keep their hashes.
//! - `seq`, `timestamp_ms` (unix milliseconds), `duration_ms` and `exit_code` are integers in
//!   decimal with no leading zeros; `reasons` and `redacted` are arrays of strings in their
//!   stored order.
//! - Strings escape only `"` and `\` (as `\"`, `\\`), and the controls below U+0020:
//!   `\b \t \n \f \r` for those five, `\u00xx` with lowercase hex for the rest. All other
//!   characters are their raw UTF-8 bytes.
//! - `inputs` is any JSON value, encoded by the same rules: objects with keys sorted by bytes,
//!   arrays in order, numbers as serde_json writes them (integers in decimal, other numbers in
//!   their shortest round-trip form), `true`, `false`, `null`.
//!
//! For example (wrapped here; one line in reality):
//!
//! ```text
//! {"actor":{"id":"claude-code","kind":"agent"},"call_id":"toolu_01","context":{"alert_id":null,
//! "host":"web-1","task":null,"triggered_by":"alert"},"cwd":null,"duration_ms":null,
//! "event":"decision","id":"r1","inputs":{"command":"df -h"},"outputs":null,"prev_hash":"000…0",
//! "reasons":["read-only"],"redacted":[],"rule":"read-only","seq":1,"session_id":"sess_2a9f3b",
//! "timestamp_ms":1771039042000,"tool":"exec","verdict":"allow"}
//! ```
//!
//! The first record's `prev_hash` is 64 zeros ([`GENESIS_HASH`]); each later record's
//! `prev_hash` is the previous record's `hash`. Because `seq` and `prev_hash` are inside the
//! hashed bytes, a modified, deleted, inserted or reordered record breaks the chain at that
//! point. A truncated tail is caught by the head checkpoint kept outside the database.
//!
//! # The data directory
//!
//! [`SqliteLedger::open`] takes the data directory (`$NIGHTWATCH_HOME`) and keeps there:
//!
//! - `ledger.db` (with SQLite's `ledger.db-wal` and `ledger.db-shm`): the records, in WAL mode
//!   with `synchronous=FULL`; triggers refuse `UPDATE` and `DELETE`.
//! - `ledger.head`: the head checkpoint, one line `<seq> <hash>\n`, replaced atomically
//!   (write a temporary file, fsync, rename) after each append while holding the database's write
//!   lock, so it only ever moves forward.

mod canonical;
mod record;
pub mod redact;
pub mod schema;
mod sqlite;
mod time;
mod verify;

pub use record::{Entry, Filter, Outputs, Record, RecordActor, RecordContext, event};
pub use schema::Safeguards;
pub use sqlite::{SqliteLedger, SqliteOptions};
pub use time::{parse_rfc3339, rfc3339};
pub use verify::{BadRecord, VerifyReport, verify};

use std::path::PathBuf;

/// `prev_hash` of the first record.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Why a ledger operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("cannot use the ledger's data directory {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("ledger database error: {0}")]
    Database(#[from] rusqlite::Error),
    #[error(
        "the ledger stayed busy for {waited_ms} ms (other writers held it); nothing was written"
    )]
    Busy { waited_ms: u64 },
    #[error("record {seq} cannot be read back: {what}")]
    Corrupt { seq: u64, what: String },
    #[error("the head checkpoint {path} is unreadable: {reason}")]
    BadCheckpoint { path: PathBuf, reason: String },
    #[error("the ledger database has schema version {found}; this nightwatch knows up to {known}")]
    SchemaTooNew { found: i64, known: i64 },
    #[error("{0}")]
    Visit(String),
}

/// One record's place in the chain, as [`verify`] needs it: the stored hash, and the canonical
/// bytes it should be the hash of.
pub struct ChainLink<'a> {
    pub seq: u64,
    pub id: &'a str,
    pub event: &'a str,
    pub prev_hash: &'a str,
    pub hash: &'a str,
    /// The canonical encoding of the stored fields (see the crate docs).
    pub canonical: &'a [u8],
}

/// A ledger store. Implementations: [`SqliteLedger`] (embedded); PostgreSQL later, behind the
/// same trait, so callers never know which is in use.
pub trait Ledger: Send + Sync {
    /// Redacts, caps, chains and durably commits `entry`; returns the stored record.
    fn append(&self, entry: Entry) -> Result<Record, LedgerError>;

    /// A record by id (`r42`) or by sequence number (`42`).
    fn get(&self, id_or_seq: &str) -> Result<Option<Record>, LedgerError>;

    /// Records matching `filter`, in `seq` order.
    fn query(&self, filter: &Filter) -> Result<Vec<Record>, LedgerError>;

    /// The latest `decision` record for the agent's call id, if any.
    fn decision_for_call(&self, call_id: &str) -> Result<Option<Record>, LedgerError>;

    /// Visits every record in `seq` order, one at a time (never all in memory). The visitor must
    /// not call back into the same store.
    fn scan(
        &self,
        visit: &mut dyn FnMut(&Record) -> Result<(), LedgerError>,
    ) -> Result<(), LedgerError>;

    /// Visits every record's chain link in `seq` order. The default builds each [`Record`] and
    /// re-encodes it; stores keeping canonical text override it to verify fast.
    fn scan_chain(
        &self,
        visit: &mut dyn FnMut(&ChainLink<'_>) -> Result<(), LedgerError>,
    ) -> Result<(), LedgerError> {
        let mut buf = Vec::with_capacity(1024);
        self.scan(&mut |r: &Record| {
            canonical::encode_record(r, &mut buf);
            visit(&ChainLink {
                seq: r.seq,
                id: &r.id,
                event: &r.event,
                prev_hash: &r.prev_hash,
                hash: &r.hash,
                canonical: &buf,
            })
        })
    }

    /// The head checkpoint kept outside the store (`seq`, `hash`), if there is one.
    fn head_checkpoint(&self) -> Result<Option<(u64, String)>, LedgerError> {
        Ok(None)
    }
}
