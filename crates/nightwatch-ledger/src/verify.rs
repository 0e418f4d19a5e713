//! Walking the chain: every record's hash recomputed, every link checked, the tail compared
//! with the head checkpoint kept outside the store.

use crate::canonical::hash_matches;
use crate::record::{Record, event};
use crate::{ChainLink, GENESIS_HASH, Ledger, LedgerError};
use serde::Serialize;

/// The first record that breaks the chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BadRecord {
    pub seq: u64,
    pub id: String,
    /// What is wrong, for a person: modified, missing, out of place, ...
    pub problem: String,
}

/// What [`verify`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Records read.
    pub records: u64,
    /// The first bad record, if any.
    pub first_bad: Option<BadRecord>,
    /// The head checkpoint (`seq`, `hash`) the tail was compared with, if there was one.
    pub head_checkpoint: Option<(u64, String)>,
    /// Why the head checkpoint could not be used, if it exists but is unreadable.
    pub checkpoint_problem: Option<String>,
    /// `(seq, id)` of every `unguarded-result` record: results with no recorded decision.
    pub unguarded: Vec<(u64, String)>,
}

impl VerifyReport {
    /// The chain is intact and agrees with a readable checkpoint (or there is none).
    pub fn is_intact(&self) -> bool {
        self.first_bad.is_none() && self.checkpoint_problem.is_none()
    }
}

/// Walks `ledger`'s chain in `seq` order and compares its tail with the head checkpoint.
///
/// Detects a modified record (its hash no longer matches its fields), a deleted one (a gap in
/// `seq`), an inserted or reordered one (`seq` and `prev_hash` are hashed, so a record moved to
/// another place no longer matches), and a truncated tail (the checkpoint names a record that is
/// gone or differs). Errors only when the store cannot be read.
pub fn verify(ledger: &dyn Ledger) -> Result<VerifyReport, LedgerError> {
    let mut report = VerifyReport::default();
    match ledger.head_checkpoint() {
        Ok(c) => report.head_checkpoint = c,
        Err(e @ LedgerError::BadCheckpoint { .. }) => {
            report.checkpoint_problem = Some(e.to_string())
        }
        Err(e) => return Err(e),
    }
    let mut expected_seq = 1u64;
    let mut prev_hash = String::from(GENESIS_HASH);
    let mut checkpoint_seen = false;
    let mut bad: Option<BadRecord> = None;
    ledger.scan_chain(&mut |link: &ChainLink<'_>| {
        report.records += 1;
        if link.event == event::UNGUARDED_RESULT {
            report.unguarded.push((link.seq, link.id.to_string()));
        }
        if let Some((cseq, chash)) = &report.head_checkpoint
            && link.seq == *cseq
        {
            checkpoint_seen = true;
            if link.hash != chash && bad.is_none() {
                bad = Some(BadRecord {
                    seq: link.seq,
                    id: link.id.to_string(),
                    problem: format!(
                        "differs from the head checkpoint (hash {} there, {} here): the tail was rewritten",
                        short(chash),
                        short(link.hash)
                    ),
                });
            }
        }
        if bad.is_none() {
            bad = check_link(link, expected_seq, &prev_hash);
        }
        expected_seq = link.seq.saturating_add(1);
        prev_hash.clear();
        prev_hash.push_str(link.hash);
        Ok(())
    })?;
    if let Some((cseq, chash)) = &report.head_checkpoint {
        let last = expected_seq - 1;
        if !checkpoint_seen && *cseq > last && bad.is_none() {
            let seq = last + 1;
            bad = Some(BadRecord {
                seq,
                id: Record::id_for(seq),
                problem: format!(
                    "missing: the ledger ends at seq {last} but the head checkpoint records seq {cseq} (hash {}): the tail was truncated",
                    short(chash)
                ),
            });
        }
    }
    report.first_bad = bad;
    Ok(report)
}

fn check_link(link: &ChainLink<'_>, expected_seq: u64, prev_hash: &str) -> Option<BadRecord> {
    let bad = |seq: u64, id: String, problem: String| Some(BadRecord { seq, id, problem });
    if link.seq > expected_seq {
        let from = expected_seq.saturating_sub(1);
        return bad(
            expected_seq,
            Record::id_for(expected_seq),
            format!(
                "missing: seq jumps from {from} to {} (deleted record{})",
                link.seq,
                if link.seq - expected_seq > 1 { "s" } else { "" }
            ),
        );
    }
    if link.seq < expected_seq {
        return bad(
            link.seq,
            link.id.to_string(),
            format!(
                "out of order: seq {} after seq {}",
                link.seq,
                expected_seq - 1
            ),
        );
    }
    if !hash_matches(link.canonical, link.hash.as_bytes()) {
        return bad(
            link.seq,
            link.id.to_string(),
            "modified: its hash does not match its contents".to_string(),
        );
    }
    if link.prev_hash != prev_hash {
        return bad(
            link.seq,
            link.id.to_string(),
            format!(
                "out of place: prev_hash {} is not the hash of the record before it ({}): a record was inserted, removed or moved",
                short(link.prev_hash),
                short(prev_hash)
            ),
        );
    }
    None
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
