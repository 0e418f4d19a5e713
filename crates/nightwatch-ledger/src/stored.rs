//! A record as every store keeps it: what an append does before a store writes anything
//! (redact, cap, encode canonically, chain, hash) and how stored fields become a [`Record`]
//! again. Stores only move these fields in and out of their medium, so every store chains,
//! redacts and hashes exactly alike, and [`crate::verify_chain`] passes on any of them.

use crate::canonical::{self, Fields};
use crate::record::{Entry, Outputs, Record, RecordActor, RecordContext};
use crate::redact;
use serde_json::Value;
use std::collections::BTreeSet;

/// Bytes of `stdout` and of `stderr` a record keeps unless its store is told otherwise.
pub const DEFAULT_OUTPUT_CAP: usize = 64 * 1024;

/// An entry made safe to store: redacted, capped, its JSON fields in canonical text. The
/// store gives it its place in the chain ([`PreparedEntry::fields`]) and hashes those fields.
pub struct PreparedEntry {
    entry: Entry,
    inputs: Vec<u8>,
    outputs: Option<Vec<u8>>,
    reasons: Vec<u8>,
    redacted: Vec<u8>,
    safeguards: Option<Vec<u8>>,
    duration_ms: Option<i64>,
}

impl PreparedEntry {
    /// Redacts secrets from `entry` (inputs, safeguards, outputs, reasons; their kinds join
    /// `redacted`) and cuts `stdout` and `stderr` to `output_cap` bytes each.
    pub fn new(mut entry: Entry, output_cap: usize) -> PreparedEntry {
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
                *text = cap_output(redacted, output_cap);
            }
        }
        for reason in entry.reasons.iter_mut() {
            if let std::borrow::Cow::Owned(s) = redact::redact_into(reason, &mut kinds) {
                *reason = s;
            }
        }
        entry.redacted = kinds.into_iter().collect();
        PreparedEntry {
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

    /// The fields to store for this entry at `seq` (with id `id`, see [`Record::id_for`])
    /// after the record whose hash is `prev_hash`.
    pub fn fields<'a>(&'a self, seq: u64, id: &'a str, prev_hash: &'a str) -> StoredFields<'a> {
        let e = &self.entry;
        StoredFields {
            id,
            seq,
            event: &e.event,
            timestamp_ms: e.timestamp_ms,
            session_id: e.session_id.as_deref(),
            actor_kind: &e.actor.kind,
            actor_id: &e.actor.id,
            tool: &e.tool,
            inputs: &self.inputs,
            outputs: self.outputs.as_deref(),
            triggered_by: e.context.triggered_by.as_deref(),
            alert_id: e.context.alert_id.as_deref(),
            host: e.context.host.as_deref(),
            task: e.context.task.as_deref(),
            duration_ms: self.duration_ms,
            verdict: e.verdict.as_deref(),
            rule: e.rule.as_deref(),
            reasons: &self.reasons,
            call_id: e.call_id.as_deref(),
            redacted: &self.redacted,
            cwd: e.cwd.as_deref(),
            safeguards: self.safeguards.as_deref(),
            prev_hash,
        }
    }

    /// The record the store now holds, once it stored [`PreparedEntry::fields`] with `hash`.
    pub fn into_record(self, seq: u64, id: String, prev_hash: String, hash: String) -> Record {
        let e = self.entry;
        Record {
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
            duration_ms: self.duration_ms.map(|d| u64::try_from(d).unwrap_or(0)),
            verdict: e.verdict,
            rule: e.rule,
            reasons: e.reasons,
            call_id: e.call_id,
            redacted: e.redacted,
            cwd: e.cwd,
            safeguards: e.safeguards,
            prev_hash,
            hash,
        }
    }
}

/// A record's fields as a store keeps them (see [`Fields`]).
pub type StoredFields<'a> = Fields<'a>;

/// A record some store already chained, in the form a store keeps it: for copying chained
/// records into another store as they are (one host's records shipped to the fleet's store),
/// where nothing is redacted, capped or chained again.
pub struct StoredRecord<'r> {
    record: &'r Record,
    inputs: Vec<u8>,
    outputs: Option<Vec<u8>>,
    reasons: Vec<u8>,
    redacted: Vec<u8>,
    safeguards: Option<Vec<u8>>,
}

impl<'r> StoredRecord<'r> {
    pub fn new(record: &'r Record) -> StoredRecord<'r> {
        StoredRecord {
            record,
            inputs: canonical::json_bytes(&record.inputs),
            outputs: record.outputs.as_ref().map(canonical::outputs_bytes),
            reasons: canonical::strings_bytes(&record.reasons),
            redacted: canonical::strings_bytes(&record.redacted),
            safeguards: record.safeguards.as_ref().map(canonical::json_bytes),
        }
    }

    /// The fields to store; `fields().hash(..)` is the hash the record should carry.
    pub fn fields(&self) -> StoredFields<'_> {
        let r = self.record;
        Fields {
            id: &r.id,
            seq: r.seq,
            event: &r.event,
            timestamp_ms: r.timestamp_ms,
            session_id: r.session_id.as_deref(),
            actor_kind: &r.actor.kind,
            actor_id: &r.actor.id,
            tool: &r.tool,
            inputs: &self.inputs,
            outputs: self.outputs.as_deref(),
            triggered_by: r.context.triggered_by.as_deref(),
            alert_id: r.context.alert_id.as_deref(),
            host: r.context.host.as_deref(),
            task: r.context.task.as_deref(),
            duration_ms: r.duration_ms.map(|d| i64::try_from(d).unwrap_or(i64::MAX)),
            verdict: r.verdict.as_deref(),
            rule: r.rule.as_deref(),
            reasons: &self.reasons,
            call_id: r.call_id.as_deref(),
            redacted: &self.redacted,
            cwd: r.cwd.as_deref(),
            safeguards: self.safeguards.as_deref(),
            prev_hash: &r.prev_hash,
        }
    }
}

/// Stored fields that do not read back as a record: the store is damaged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("record {seq} cannot be read back: {what}")]
pub struct Unreadable {
    pub seq: u64,
    pub what: String,
}

impl Fields<'_> {
    /// The canonical encoding of these fields (see the crate docs), written into `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        canonical::encode_fields(self, out);
    }

    /// The SHA-256 (lowercase hex) of these fields' canonical encoding; `buf` is scratch.
    pub fn hash(&self, buf: &mut Vec<u8>) -> String {
        canonical::encode_fields(self, buf);
        canonical::sha256_hex(buf)
    }

    /// The record these stored fields and their stored `hash` describe.
    pub fn to_record(&self, hash: &str) -> Result<Record, Unreadable> {
        let f = self;
        let corrupt = |what: &str, e: serde_json::Error| Unreadable {
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
    }
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
