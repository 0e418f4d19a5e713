//! Walking the chain: every record's hash recomputed, every link checked, the tail compared
//! with the head checkpoint kept outside the store.

use crate::canonical::hash_matches;
use crate::record::{Record, event};
use crate::{ChainLink, GENESIS_HASH};
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

/// Where a store's head checkpoint stands, as [`verify_chain`] compares the tail with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checkpoint {
    /// The store keeps none, or none was written yet.
    None,
    /// `seq` and `hash` of the last record the store knew it had committed.
    At(u64, String),
    /// It exists but cannot be read; why, for a person.
    Unreadable(String),
}

/// Walks a store's chain in `seq` order and compares its tail with the head checkpoint.
///
/// `scan_chain` visits every record's [`ChainLink`] in `seq` order (a store's
/// `scan_chain`); its error type is the store's, returned as is. Detects a modified record
/// (its hash no longer matches its fields), a deleted one (a gap in `seq`), an inserted or
/// reordered one (`seq` and `prev_hash` are hashed, so a record moved to another place no
/// longer matches), and a truncated tail (the checkpoint names a record that is gone or
/// differs). Errors only when the store cannot be read.
pub fn verify_chain<E>(
    checkpoint: Checkpoint,
    scan_chain: impl FnOnce(&mut dyn FnMut(&ChainLink<'_>) -> Result<(), E>) -> Result<(), E>,
) -> Result<VerifyReport, E> {
    let mut report = VerifyReport::default();
    match checkpoint {
        Checkpoint::None => {}
        Checkpoint::At(seq, hash) => report.head_checkpoint = Some((seq, hash)),
        Checkpoint::Unreadable(why) => report.checkpoint_problem = Some(why),
    }
    // Reading rows and hashing them are the two costs; they run on two threads. The reader
    // checks the order of the chain as it goes and hands each record's bytes to the hasher in
    // batches; the first problem is the one earliest in the chain, whichever thread found it.
    let (batches, hasher_input) = std::sync::mpsc::sync_channel::<HashBatch>(4);
    let mut expected_seq = 1u64;
    let mut prev_hash = String::from(GENESIS_HASH);
    let mut checkpoint_seen = false;
    let mut found: Option<Found> = None;
    let mut position = 0u64;
    let hash_found = std::thread::scope(|scope| -> Result<Option<Found>, E> {
        let hasher = scope.spawn(move || first_hash_mismatch(hasher_input));
        let mut batch = HashBatch::default();
        let scanned = scan_chain(&mut |link: &ChainLink<'_>| {
            report.records += 1;
            if link.event == event::UNGUARDED_RESULT {
                report.unguarded.push((link.seq, link.id.to_string()));
            }
            if let Some((cseq, chash)) = &report.head_checkpoint
                && link.seq == *cseq
            {
                checkpoint_seen = true;
                if link.hash != chash {
                    note(&mut found, position, 0, || BadRecord {
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
            if found.is_none() {
                if let Some(bad) = check_order(link, expected_seq) {
                    note(&mut found, position, 1, || bad);
                } else if link.prev_hash != prev_hash {
                    note(&mut found, position, 3, || BadRecord {
                        seq: link.seq,
                        id: link.id.to_string(),
                        problem: format!(
                            "out of place: prev_hash {} is not the hash of the record before it ({}): a record was inserted, removed or moved",
                            short(link.prev_hash),
                            short(&prev_hash)
                        ),
                    });
                }
                batch.push(position, link);
                if batch.items.len() >= HashBatch::SIZE {
                    let full = std::mem::take(&mut batch);
                    // A closed channel means the hasher already found a mismatch.
                    let _ = batches.send(full);
                }
            }
            expected_seq = link.seq.saturating_add(1);
            prev_hash.clear();
            prev_hash.push_str(link.hash);
            position += 1;
            Ok(())
        });
        if !batch.items.is_empty() {
            let _ = batches.send(batch);
        }
        drop(batches);
        // The hasher only fails by panicking; that panic is this call's.
        let hashed = hasher
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        scanned.map(|()| hashed)
    })?;
    if let Some(hash_found) = hash_found
        && found.as_ref().is_none_or(|f| hash_found.rank() < f.rank())
    {
        found = Some(hash_found);
    }
    let mut bad = found.map(|f| f.bad);
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

/// A problem and where it is: its position in the chain, then which check found it (the
/// checkpoint 0, order 1, hash 2, link 3), so that the earliest wins as a single pass would.
struct Found {
    position: u64,
    check: u8,
    bad: BadRecord,
}

impl Found {
    fn rank(&self) -> (u64, u8) {
        (self.position, self.check)
    }
}

fn note(found: &mut Option<Found>, position: u64, check: u8, bad: impl FnOnce() -> BadRecord) {
    if found.as_ref().is_none_or(|f| (position, check) < f.rank()) {
        *found = Some(Found {
            position,
            check,
            bad: bad(),
        });
    }
}

/// Records' canonical bytes and stored hashes, handed from the reader to the hasher.
#[derive(Default)]
struct HashBatch {
    bytes: Vec<u8>,
    /// Position, seq, id, the end of its bytes in `bytes`, and its stored hash.
    items: Vec<(u64, u64, String, usize, String)>,
}

impl HashBatch {
    const SIZE: usize = 2048;

    fn push(&mut self, position: u64, link: &ChainLink<'_>) {
        self.bytes.extend_from_slice(link.canonical);
        self.items.push((
            position,
            link.seq,
            link.id.to_string(),
            self.bytes.len(),
            link.hash.to_string(),
        ));
    }
}

fn first_hash_mismatch(batches: std::sync::mpsc::Receiver<HashBatch>) -> Option<Found> {
    for batch in batches {
        let mut start = 0;
        for (position, seq, id, end, hash) in batch.items {
            if !hash_matches(&batch.bytes[start..end], hash.as_bytes()) {
                return Some(Found {
                    position,
                    check: 2,
                    bad: BadRecord {
                        seq,
                        id,
                        problem: "modified: its hash does not match its contents".to_string(),
                    },
                });
            }
            start = end;
        }
    }
    None
}

/// A gap or a step back in `seq`.
fn check_order(link: &ChainLink<'_>, expected_seq: u64) -> Option<BadRecord> {
    if link.seq > expected_seq {
        let from = expected_seq.saturating_sub(1);
        return Some(BadRecord {
            seq: expected_seq,
            id: Record::id_for(expected_seq),
            problem: format!(
                "missing: seq jumps from {from} to {} (deleted record{})",
                link.seq,
                if link.seq - expected_seq > 1 { "s" } else { "" }
            ),
        });
    }
    if link.seq < expected_seq {
        return Some(BadRecord {
            seq: link.seq,
            id: link.id.to_string(),
            problem: format!(
                "out of order: seq {} after seq {}",
                link.seq,
                expected_seq - 1
            ),
        });
    }
    None
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
