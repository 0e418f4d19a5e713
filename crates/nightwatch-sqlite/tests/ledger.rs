//! Appending and reading back: what goes in comes out, redacted and capped, chained.

mod common;

use common::{T0, agent, decision, result};
use nightwatch_ledger::{Entry, Filter, GENESIS_HASH, Outputs, event};
use nightwatch_sqlite::{LedgerOptions, SqliteLedger};
use nightwatch_store::{Ledger, LedgerReader, verify};
use serde_json::json;

#[test]
fn appended_record_reads_back_by_id_and_seq() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    let first = ledger
        .append(decision(1, "sess_2a9f3b", "df -h", "allow"))
        .unwrap();
    assert_eq!((first.seq, first.id.as_str()), (1, "r1"));
    assert_eq!(first.prev_hash, GENESIS_HASH);
    assert_eq!(first.hash, first.expected_hash());
    let second = ledger
        .append(result(1, "sess_2a9f3b", "/dev/sda1 91%"))
        .unwrap();
    assert_eq!(second.seq, 2);
    assert_eq!(second.prev_hash, first.hash);

    assert_eq!(ledger.get("r1").unwrap(), Some(first.clone()));
    assert_eq!(ledger.get("1").unwrap(), Some(first.clone()));
    assert_eq!(ledger.get("r2").unwrap(), Some(second.clone()));
    assert_eq!(ledger.get("r3").unwrap(), None);
    assert_eq!(ledger.get("nonsense").unwrap(), None);
    assert_eq!(
        ledger.decision_for_call("toolu_1").unwrap().map(|r| r.seq),
        Some(1)
    );
    assert_eq!(ledger.decision_for_call("toolu_9").unwrap(), None);

    // Reopening sees the same records; the schema is created idempotently.
    drop(ledger);
    let again = SqliteLedger::open(dir.path()).unwrap();
    assert_eq!(again.get("r2").unwrap(), Some(second));
    assert!(dir.path().join("ledger.db").exists());
    assert!(dir.path().join("ledger.head").exists());
}

#[test]
fn json_export_uses_seed_004_field_names_and_rfc3339_time() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    let record = ledger.append(result(0, "sess_2a9f3b", "ok")).unwrap();
    let v = serde_json::to_value(&record).unwrap();
    assert_eq!(v["timestamp"], "2026-02-14T03:17:22.500Z");
    assert_eq!(v["session_id"], "sess_2a9f3b");
    assert_eq!(v["outputs"]["exit_code"], 0);
    assert_eq!(v["outputs"]["stdout"], "ok");
    assert_eq!(
        v["context"],
        json!({"triggered_by": null, "alert_id": null, "host": null, "task": null})
    );
    assert_eq!(v["duration_ms"], 12);
    let back: nightwatch_ledger::Record = serde_json::from_value(v).unwrap();
    assert_eq!(back, record);
}

#[test]
fn filters_select_by_time_session_actor_verdict_tool_alert_event() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    ledger.append(decision(0, "a", "ls", "allow")).unwrap();
    ledger.append(result(0, "a", "x")).unwrap();
    ledger
        .append(decision(10, "b", "rm -rf /", "deny"))
        .unwrap();
    let mut janitor = Entry::new(
        "sweep",
        T0 + 20_000,
        nightwatch_ledger::RecordActor {
            kind: "janitor".into(),
            id: "janitor".into(),
        },
        "remove_container",
    );
    janitor.verdict = Some("allow".into());
    ledger.append(janitor).unwrap();

    let seqs =
        |f: Filter| -> Vec<u64> { ledger.query(&f).unwrap().iter().map(|r| r.seq).collect() };
    assert_eq!(seqs(Filter::default()), [1, 2, 3, 4]);
    assert_eq!(
        seqs(Filter {
            session: Some("a".into()),
            ..Filter::default()
        }),
        [1, 2]
    );
    assert_eq!(
        seqs(Filter {
            verdict: Some("deny".into()),
            ..Filter::default()
        }),
        [3]
    );
    assert_eq!(
        seqs(Filter {
            actor: Some("janitor".into()),
            ..Filter::default()
        }),
        [4]
    );
    assert_eq!(
        seqs(Filter {
            actor: Some("agent".into()),
            ..Filter::default()
        }),
        [1, 2, 3]
    );
    assert_eq!(
        seqs(Filter {
            actor: Some("claude-code".into()),
            ..Filter::default()
        }),
        [1, 2, 3]
    );
    assert_eq!(
        seqs(Filter {
            tool: Some("remove_container".into()),
            ..Filter::default()
        }),
        [4]
    );
    assert_eq!(
        seqs(Filter {
            alert: Some("disk-full-web-1".into()),
            ..Filter::default()
        }),
        [1, 3]
    );
    assert_eq!(
        seqs(Filter {
            event: Some(event::RESULT.into()),
            ..Filter::default()
        }),
        [2]
    );
    assert_eq!(
        seqs(Filter {
            since_ms: Some(T0 + 10_000),
            ..Filter::default()
        }),
        [3, 4]
    );
    assert_eq!(
        seqs(Filter {
            until_ms: Some(T0 + 10_000),
            ..Filter::default()
        }),
        [1, 2]
    );
    assert_eq!(
        seqs(Filter {
            since_ms: Some(T0),
            until_ms: Some(T0 + 20_000),
            verdict: Some("allow".into()),
            ..Filter::default()
        }),
        [1]
    );
    assert_eq!(
        seqs(Filter {
            limit: Some(2),
            ..Filter::default()
        }),
        [3, 4]
    );
    assert_eq!(
        seqs(Filter {
            session: Some("zzz".into()),
            ..Filter::default()
        }),
        Vec::<u64>::new()
    );
}

#[test]
fn secrets_are_redacted_before_storage_and_the_record_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    let mut entry = decision(1, "s", "mysql -u root -pS3cret! db", "ask");
    entry.inputs = json!({
        "command": "curl -H 'Authorization: Bearer abcdef123' https://api",
        "env": {"GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
    });
    entry.reasons = vec!["uses postgres://app:hunter2@db/app".into()];
    entry.outputs = Some(Outputs {
        exit_code: Some(0),
        stdout: "AKIAIOSFODNN7EXAMPLE".into(),
        stderr: String::new(),
    });
    let stored = ledger.append(entry).unwrap();
    let back = ledger.get(&stored.id).unwrap().unwrap();
    assert_eq!(back, stored);
    let text = serde_json::to_string(&back).unwrap();
    for secret in ["abcdef123", "ghp_abcdef", "hunter2", "AKIAIOSFODNN7EXAMPLE"] {
        assert!(!text.contains(secret), "{secret} leaked into {text}");
    }
    assert_eq!(
        back.inputs["command"],
        "curl -H 'Authorization: Bearer [REDACTED:authorization]' https://api"
    );
    assert_eq!(
        back.redacted,
        [
            "authorization",
            "aws-access-key",
            "github-token",
            "url-password"
        ]
    );
    assert!(verify(&ledger).unwrap().is_intact());
}

#[test]
fn long_output_is_capped_with_a_marker() {
    let dir = tempfile::tempdir().unwrap();
    let options = LedgerOptions {
        output_cap: 1000,
        ..LedgerOptions::default()
    };
    let ledger = SqliteLedger::open_with(dir.path(), options).unwrap();
    let mut entry = result(1, "s", &"x".repeat(5000));
    if let Some(o) = entry.outputs.as_mut() {
        o.stderr = "é".repeat(600); // 1200 bytes; the cap falls on a char boundary
    }
    let r = ledger.append(entry).unwrap();
    let out = r.outputs.unwrap();
    assert_eq!(
        out.stdout,
        format!("{}\n[... 4000 bytes cut by nightwatch]", "x".repeat(1000))
    );
    assert_eq!(
        out.stderr,
        format!("{}\n[... 200 bytes cut by nightwatch]", "é".repeat(500))
    );
    assert!(verify(&ledger).unwrap().is_intact());
}

#[test]
fn a_thousand_appends_verify_clean() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    for n in 0..500 {
        ledger
            .append(decision(n, "s", &format!("echo {n}"), "allow"))
            .unwrap();
        ledger.append(result(n, "s", &format!("{n}\n"))).unwrap();
    }
    let report = verify(&ledger).unwrap();
    assert_eq!(report.records, 1000);
    assert_eq!(report.first_bad, None);
    assert_eq!(report.head_checkpoint.as_ref().map(|c| c.0), Some(1000));
    assert!(report.is_intact());
    let mut seen = 0u64;
    ledger
        .scan(&mut |r| {
            seen += 1;
            assert_eq!(r.seq, seen);
            Ok(())
        })
        .unwrap();
    assert_eq!(seen, 1000);
}

/// Every hook is a process of its own: open, append once, close. SQLite forgets what such a
/// process checkpointed, so unless closing checkpoints a long WAL it grows by every append and
/// each later hook reads all of it when it opens.
#[test]
fn the_wal_stays_short_when_each_append_is_its_own_process() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..120 {
        let ledger = SqliteLedger::open(dir.path()).unwrap();
        ledger
            .append(decision(n, "s", &format!("echo {n}"), "allow"))
            .unwrap();
    }
    let wal = std::fs::metadata(dir.path().join("ledger.db-wal")).map_or(0, |m| m.len());
    // 120 appends write about 3 MiB of WAL frames; the bound is 256 KiB plus one append.
    assert!(wal < 512 * 1024, "the WAL grew to {wal} bytes");
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    let report = verify(&ledger).unwrap();
    assert_eq!(report.records, 120);
    assert!(report.is_intact());
}

/// The head checkpoint is not synced, so after a power loss it can be empty: that is no
/// checkpoint, not a tampered one.
#[test]
fn an_empty_head_checkpoint_counts_as_none() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    ledger.append(decision(1, "s", "true", "allow")).unwrap();
    std::fs::write(ledger.head_path(), "").unwrap();
    let report = verify(&ledger).unwrap();
    assert_eq!(report.head_checkpoint, None);
    assert_eq!(report.checkpoint_problem, None);
    assert!(report.is_intact());
}

#[test]
fn unguarded_results_are_reported_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    ledger.append(decision(1, "s", "ls", "allow")).unwrap();
    let mut e = result(2, "s", "rm output");
    e.event = event::UNGUARDED_RESULT.into();
    ledger.append(e).unwrap();
    let report = verify(&ledger).unwrap();
    assert!(report.is_intact());
    assert_eq!(report.unguarded, [(2, "r2".to_string())]);
}

/// Checks, the backup and the approval travel with the decision, inside its hash, redacted
/// like everything else.
#[test]
fn safeguards_are_stored_chained_and_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    let mut entry = decision(1, "s", "systemctl restart app", "halt");
    entry.safeguards = Some(json!({
        "checks": [{"check": "active-migration", "outcome": "matched", "detail": "pid 42"}],
        "backup": {"snapshot": "ab12", "note": "postgres://u:hunter2@db/x"},
    }));
    let written = ledger.append(entry).unwrap();
    let read = ledger.get(&written.id).unwrap().unwrap();
    assert_eq!(read.safeguards, written.safeguards);
    let text = read.safeguards.clone().unwrap().to_string();
    assert!(text.contains("active-migration"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(read.redacted.contains(&"url-password".to_string()));
    assert_eq!(read.hash, read.expected_hash());
    assert!(verify(&ledger).unwrap().is_intact());
}

/// A ledger written before safeguards existed (schema 1) opens, keeps verifying, and takes
/// records with safeguards after it.
#[test]
fn a_schema_1_ledger_is_upgraded_and_still_verifies() {
    let dir = tempfile::tempdir().unwrap();
    {
        let ledger = SqliteLedger::open(dir.path()).unwrap();
        for n in 0..3 {
            ledger
                .append(decision(n, "s", &format!("echo {n}"), "allow"))
                .unwrap();
        }
    }
    // Rebuild the table as schema 1 had it: no safeguards column.
    let raw = rusqlite::Connection::open(dir.path().join("ledger.db")).unwrap();
    raw.execute_batch(
        "DROP TRIGGER records_no_update; DROP TRIGGER records_no_delete;
         CREATE TABLE old AS SELECT seq, id, event, timestamp_ms, session_id, actor_kind,
           actor_id, tool, inputs, outputs, triggered_by, alert_id, host, task, duration_ms,
           verdict, rule, reasons, call_id, redacted, cwd, prev_hash, hash FROM records;
         DROP TABLE records; ALTER TABLE old RENAME TO records;
         PRAGMA user_version = 1;",
    )
    .unwrap();
    drop(raw);
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    assert!(verify(&ledger).unwrap().is_intact());
    let mut entry = decision(9, "s", "rm /tmp/x", "allow");
    entry.safeguards = Some(json!({"backup": {"snapshot": "cd34"}}));
    ledger.append(entry).unwrap();
    let report = verify(&ledger).unwrap();
    assert_eq!(report.records, 4);
    assert!(report.is_intact());
    let raw = rusqlite::Connection::open(dir.path().join("ledger.db")).unwrap();
    let update = raw.execute("UPDATE records SET verdict = 'deny' WHERE seq = 1", []);
    assert!(update.is_err(), "the triggers are back after the upgrade");
}

#[test]
fn updates_and_deletes_through_sql_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    ledger.append(decision(1, "s", "ls", "allow")).unwrap();
    let raw = rusqlite::Connection::open(ledger.db_path()).unwrap();
    let update = raw.execute("UPDATE records SET verdict = 'deny' WHERE seq = 1", []);
    assert!(update.unwrap_err().to_string().contains("append-only"));
    let delete = raw.execute("DELETE FROM records WHERE seq = 1", []);
    assert!(delete.unwrap_err().to_string().contains("append-only"));
    assert_eq!(
        ledger.get("r1").unwrap().and_then(|r| r.verdict),
        Some("allow".into())
    );
    let _ = agent();
}
