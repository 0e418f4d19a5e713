//! The ledger: every decision and every result, durable, append-only and tamper-evident.
//!
//! A caller hands in an [`Entry`] (who, what tool, inputs, outputs, verdict, rule, reasons, call
//! id, context, a timestamp it took from its own clock). The store redacts secrets
//! ([`redact`]), caps captured output, gives the entry the next sequence number and the id
//! `r<seq>`, chains it to the previous record by hash, and commits it to disk before
//! `Ledger::append` returns the [`Record`]. Records are never updated: a result is a new record
//! joined to its decision by `call_id`.
//!
//! This crate is the record schema and everything a store must do alike, with no store in
//! it: the canonical encoding, redaction, the capping of outputs ([`PreparedEntry`]), reading
//! stored fields back ([`StoredFields::to_record`]) and walking a chain ([`verify_chain`]).
//! The stores sit behind the `Ledger` trait of `nightwatch-store`; the embedded one is in
//! `nightwatch-sqlite`.
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
//! The SQLite store takes the data directory (`$NIGHTWATCH_HOME`) and keeps there:
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
mod stored;
mod verify;

pub use canonical::encode_record;
pub use nightwatch_time::{parse_rfc3339, rfc3339};
pub use record::{Entry, Filter, Outputs, Record, RecordActor, RecordContext, event};
pub use schema::Safeguards;
pub use stored::{DEFAULT_OUTPUT_CAP, PreparedEntry, StoredFields, StoredRecord, Unreadable};
pub use verify::{BadRecord, Checkpoint, VerifyReport, verify_chain};

/// `prev_hash` of the first record.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

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
