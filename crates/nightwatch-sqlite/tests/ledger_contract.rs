//! What every `Ledger` must do, run against the SQLite ledger and the in-memory one: the same
//! entries make the same records (ids, redaction, caps, hashes), read back the same way, and
//! verify.

mod common;

use common::{T0, agent, decision, result};
use nightwatch_ledger::{Entry, Filter, GENESIS_HASH, Outputs, Record, event};
use nightwatch_sqlite::{LedgerOptions, SqliteLedger};
use nightwatch_store::memory::MemoryLedger;
use nightwatch_store::{Ledger, LedgerReader, StoreError, verify};
use serde_json::json;

const CAP: usize = 1000;

/// Runs `check` on a fresh store of each kind, both capping outputs at [`CAP`] bytes.
fn each_store(check: impl Fn(&str, &dyn Ledger)) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteLedger::open_with(
        dir.path(),
        LedgerOptions {
            output_cap: CAP,
            ..LedgerOptions::default()
        },
    )
    .unwrap();
    check("sqlite", &sqlite);
    check("memory", &MemoryLedger::with_output_cap(CAP));
}

/// A night's worth of entries: decisions and results, a secret in every field that takes
/// text, long output, safeguards, a trust placement, another actor.
fn night() -> Vec<Entry> {
    let mut secret = decision(3, "s1", "ignored", "ask");
    secret.inputs = json!({
        "command": "curl -H 'Authorization: Bearer abcdef123' https://api",
        "env": {"GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
    });
    secret.reasons = vec!["uses postgres://app:hunter2@db/app".into()];
    secret.safeguards = Some(json!({"backup": {"note": "postgres://u:hunter2@db/x"}}));
    let mut long = result(3, "s1", &"x".repeat(5000));
    if let Some(o) = long.outputs.as_mut() {
        o.stderr = "é".repeat(600);
    }
    let mut trust = Entry::new(event::TRUST, T0 + 9_000, agent(), "trust");
    trust.inputs = json!({"agent": "claude-code", "tier": "trusted", "why": "a week clean"});
    let mut janitor = Entry::new(
        event::SWEEP_KEEP,
        T0 + 10_000,
        nightwatch_ledger::RecordActor {
            kind: "janitor".into(),
            id: "sweep".into(),
        },
        "remove_container",
    );
    janitor.reasons = vec!["labelled to stay".into()];
    vec![
        decision(1, "s1", "df -h", "allow"),
        result(1, "s1", "/dev/sda1 91%"),
        decision(2, "s2", "du -sh /var/log", "allow"),
        secret,
        long,
        trust,
        janitor,
        // A second decision for call 1: the latest one is the one a result joins.
        decision(1, "s1", "df -h /", "allow"),
    ]
}

fn append_night(ledger: &dyn Ledger) -> Vec<Record> {
    night()
        .into_iter()
        .map(|e| ledger.append(e).unwrap())
        .collect()
}

#[test]
fn the_same_entries_make_the_same_records_in_every_store() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteLedger::open_with(
        dir.path(),
        LedgerOptions {
            output_cap: CAP,
            ..LedgerOptions::default()
        },
    )
    .unwrap();
    let memory = MemoryLedger::with_output_cap(CAP);
    let from_sqlite = append_night(&sqlite);
    let from_memory = append_night(&memory);
    assert_eq!(from_sqlite, from_memory);
    let all = Filter::default();
    assert_eq!(sqlite.query(&all).unwrap(), memory.query(&all).unwrap());
}

#[test]
fn records_are_numbered_and_chained_from_genesis() {
    each_store(|name, ledger| {
        let records = append_night(ledger);
        let mut prev = GENESIS_HASH.to_string();
        for (i, r) in records.iter().enumerate() {
            assert_eq!(r.seq, i as u64 + 1, "{name}");
            assert_eq!(r.id, format!("r{}", r.seq), "{name}");
            assert_eq!(r.prev_hash, prev, "{name}");
            assert_eq!(r.hash, r.expected_hash(), "{name}");
            prev = r.hash.clone();
        }
        let report = verify(ledger).unwrap();
        assert!(report.is_intact(), "{name}: {report:?}");
        assert_eq!(report.records, records.len() as u64, "{name}");
    });
}

#[test]
fn secrets_are_redacted_and_outputs_capped_before_storage() {
    each_store(|name, ledger| {
        let records = append_night(ledger);
        let text = serde_json::to_string(&ledger.query(&Filter::default()).unwrap()).unwrap();
        for secret in ["abcdef123", "ghp_abcdef", "hunter2"] {
            assert!(!text.contains(secret), "{name}: {secret} leaked");
        }
        assert_eq!(
            records[3].redacted,
            ["authorization", "github-token", "url-password"],
            "{name}"
        );
        let out: &Outputs = records[4].outputs.as_ref().unwrap();
        assert!(out.stdout.starts_with(&"x".repeat(CAP)), "{name}");
        assert!(
            out.stdout.ends_with("[... 4000 bytes cut by nightwatch]"),
            "{name}"
        );
        assert!(out.stderr.ends_with("bytes cut by nightwatch]"), "{name}");
    });
}

#[test]
fn records_read_back_by_id_seq_call_and_filter() {
    each_store(|name, ledger| {
        let records = append_night(ledger);
        assert_eq!(
            ledger.get("r2").unwrap().as_ref(),
            Some(&records[1]),
            "{name}"
        );
        assert_eq!(
            ledger.get("2").unwrap().as_ref(),
            Some(&records[1]),
            "{name}"
        );
        assert_eq!(ledger.get("r99").unwrap(), None, "{name}");
        assert_eq!(ledger.get("nonsense").unwrap(), None, "{name}");
        assert_eq!(
            ledger.decision_for_call("toolu_1").unwrap().map(|r| r.seq),
            Some(8),
            "{name}: the latest decision for the call"
        );
        assert_eq!(ledger.decision_for_call("toolu_9").unwrap(), None, "{name}");
        let seqs = |filter: Filter| -> Vec<u64> {
            ledger
                .query(&filter)
                .unwrap()
                .iter()
                .map(|r| r.seq)
                .collect()
        };
        assert_eq!(
            seqs(Filter {
                session: Some("s1".into()),
                ..Filter::default()
            }),
            [1, 2, 4, 5, 8],
            "{name}"
        );
        assert_eq!(
            seqs(Filter {
                since_ms: Some(T0 + 2_000),
                until_ms: Some(T0 + 9_000),
                ..Filter::default()
            }),
            [3, 4, 5],
            "{name}"
        );
        assert_eq!(
            seqs(Filter {
                actor: Some("janitor".into()),
                ..Filter::default()
            }),
            [7],
            "{name}: by actor kind"
        );
        assert_eq!(
            seqs(Filter {
                event: Some(event::TRUST.into()),
                ..Filter::default()
            }),
            [6],
            "{name}"
        );
        assert_eq!(
            seqs(Filter {
                event: Some(event::DECISION.into()),
                verdict: Some("allow".into()),
                tool: Some("exec".into()),
                alert: Some("disk-full-web-1".into()),
                limit: Some(2),
                ..Filter::default()
            }),
            [3, 8],
            "{name}: the newest two, in order"
        );
        assert_eq!(
            seqs(Filter {
                after_seq: Some(5),
                session: Some("s1".into()),
                ..Filter::default()
            }),
            [8],
            "{name}: only what is after the cursor"
        );
        assert_eq!(
            seqs(Filter {
                before_seq: Some(8),
                session: Some("s1".into()),
                limit: Some(1),
                ..Filter::default()
            }),
            [5],
            "{name}: the newest one before the cursor"
        );
        assert!(
            seqs(Filter {
                after_seq: Some(1_000),
                ..Filter::default()
            })
            .is_empty(),
            "{name}: nothing after the head"
        );
    });
}

#[test]
fn scan_visits_every_record_in_order_and_a_visitor_can_stop_it() {
    each_store(|name, ledger| {
        let records = append_night(ledger);
        let mut seen = Vec::new();
        ledger
            .scan(&mut |r| {
                seen.push(r.clone());
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, records, "{name}");
        let mut visits = 0;
        let stopped = ledger.scan(&mut |_| {
            visits += 1;
            Err(StoreError::Visit("enough".into()))
        });
        assert!(matches!(stopped, Err(StoreError::Visit(_))), "{name}");
        assert_eq!(visits, 1, "{name}");
    });
}

#[test]
fn an_empty_store_verifies() {
    each_store(|name, ledger| {
        let report = verify(ledger).unwrap();
        assert!(report.is_intact(), "{name}");
        assert_eq!(report.records, 0, "{name}");
    });
}
