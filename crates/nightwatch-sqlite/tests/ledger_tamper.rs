//! An attacker with write access to the database drops the triggers and edits records; verify
//! names the first record that is no longer what was written.

mod common;

use common::decision;
use nightwatch_sqlite::SqliteLedger;
use nightwatch_store::{Ledger, LedgerReader, verify};
use rusqlite::Connection;

/// A ledger of `n` records and a raw connection with the append-only triggers dropped.
fn tampered(n: i64) -> (tempfile::TempDir, SqliteLedger, Connection) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    for i in 1..=n {
        ledger
            .append(decision(i, "s", &format!("echo {i}"), "allow"))
            .unwrap();
    }
    assert!(verify(&ledger).unwrap().is_intact());
    let raw = Connection::open(ledger.db_path()).unwrap();
    raw.execute_batch("DROP TRIGGER records_no_update; DROP TRIGGER records_no_delete;")
        .unwrap();
    (dir, ledger, raw)
}

fn first_bad(ledger: &SqliteLedger) -> (u64, String) {
    let report = verify(ledger).unwrap();
    let bad = report.first_bad.expect("tampering must be detected");
    (bad.seq, bad.problem)
}

#[test]
fn modified_field_is_named() {
    let (_dir, ledger, raw) = tampered(20);
    raw.execute(
        "UPDATE records SET verdict = 'allow', inputs = '{\"command\":\"ls\"}' WHERE seq = 7",
        [],
    )
    .unwrap();
    let (seq, problem) = first_bad(&ledger);
    assert_eq!(seq, 7);
    assert!(problem.starts_with("modified"), "{problem}");
}

#[test]
fn modified_field_with_recomputed_hash_breaks_the_next_link() {
    let (_dir, ledger, raw) = tampered(20);
    let mut r = ledger.get("r7").unwrap().unwrap();
    r.reasons = vec!["nothing to see".into()];
    let forged = r.expected_hash();
    raw.execute(
        "UPDATE records SET reasons = '[\"nothing to see\"]', hash = ?1 WHERE seq = 7",
        [&forged],
    )
    .unwrap();
    let (seq, problem) = first_bad(&ledger);
    assert_eq!(seq, 8);
    assert!(problem.starts_with("out of place"), "{problem}");
}

#[test]
fn deleted_record_in_the_middle_is_named() {
    let (_dir, ledger, raw) = tampered(20);
    raw.execute("DELETE FROM records WHERE seq = 11", [])
        .unwrap();
    let (seq, problem) = first_bad(&ledger);
    assert_eq!(seq, 11);
    assert!(problem.starts_with("missing"), "{problem}");
}

#[test]
fn inserted_record_is_named() {
    let (_dir, ledger, raw) = tampered(20);
    // Make room at seq 5 and forge a record there with a correct hash over its own fields.
    for seq in (5..=20).rev() {
        raw.execute("UPDATE records SET seq = seq + 1 WHERE seq = ?1", [seq])
            .unwrap();
    }
    let before = ledger.get("4").unwrap().unwrap();
    let mut forged = ledger.get("6").unwrap().unwrap(); // the old r5, now at seq 6
    forged.seq = 5;
    forged.id = "r5-forged".into();
    forged.reasons = vec!["forged".into()];
    forged.prev_hash = before.hash.clone();
    forged.hash = forged.expected_hash();
    raw.execute(
        "INSERT INTO records (seq, id, event, timestamp_ms, session_id, actor_kind, actor_id, tool, \
         inputs, outputs, triggered_by, alert_id, host, task, duration_ms, verdict, rule, reasons, \
         call_id, redacted, cwd, prev_hash, hash) \
         SELECT 5, ?1, event, timestamp_ms, session_id, actor_kind, actor_id, tool, inputs, outputs, \
         triggered_by, alert_id, host, task, duration_ms, verdict, rule, '[\"forged\"]', call_id, \
         redacted, cwd, ?2, ?3 FROM records WHERE seq = 6",
        [&forged.id, &forged.prev_hash, &forged.hash],
    )
    .unwrap();
    // The forgery itself is self-consistent; the record after it no longer is.
    let (seq, _) = first_bad(&ledger);
    assert_eq!(seq, 6);
}

#[test]
fn swapped_records_are_named() {
    let (_dir, ledger, raw) = tampered(20);
    raw.execute_batch(
        "UPDATE records SET seq = -1 WHERE seq = 12;
         UPDATE records SET seq = 12 WHERE seq = 13;
         UPDATE records SET seq = 13 WHERE seq = -1;",
    )
    .unwrap();
    let (seq, _) = first_bad(&ledger);
    assert_eq!(seq, 12);
}

#[test]
fn truncated_tail_is_caught_by_the_head_checkpoint() {
    let (_dir, ledger, raw) = tampered(20);
    raw.execute("DELETE FROM records WHERE seq > 17", [])
        .unwrap();
    let report = verify(&ledger).unwrap();
    assert_eq!(report.records, 17);
    assert_eq!(report.head_checkpoint.as_ref().map(|c| c.0), Some(20));
    let bad = report.first_bad.expect("truncation must be detected");
    assert_eq!(bad.seq, 18);
    assert!(bad.problem.contains("truncated"), "{}", bad.problem);
}

#[test]
fn truncated_and_rewritten_tail_is_caught_by_the_head_checkpoint() {
    let (_dir, ledger, raw) = tampered(20);
    // Replace the last record by one with a valid hash: only the checkpoint can tell.
    let mut r = ledger.get("20").unwrap().unwrap();
    r.verdict = Some("deny".into());
    let forged = r.expected_hash();
    raw.execute(
        "UPDATE records SET verdict = 'deny', hash = ?1 WHERE seq = 20",
        [&forged],
    )
    .unwrap();
    let bad = verify(&ledger).unwrap().first_bad.expect("detected");
    assert_eq!(bad.seq, 20);
    assert!(bad.problem.contains("head checkpoint"), "{}", bad.problem);
}

#[test]
fn garbled_checkpoint_is_reported() {
    let (_dir, ledger, _raw) = tampered(3);
    std::fs::write(ledger.head_path(), "not a checkpoint").unwrap();
    let report = verify(&ledger).unwrap();
    assert_eq!(report.first_bad, None);
    assert!(report.checkpoint_problem.is_some());
    assert!(!report.is_intact());
}
