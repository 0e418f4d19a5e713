//! What every `Ledger` must do: the same entries make the same records (ids, redaction, caps,
//! hashes) as the in-memory ledger, read back the same way, verify, and stay one chain
//! however many handles append at once.

use crate::Backend;
use crate::fixtures::{HOSTILE, T0, agent, decision, result};
use nightwatch_ledger::{Entry, Filter, GENESIS_HASH, Outputs, Record, RecordActor, event};
use nightwatch_store::memory::MemoryLedger;
use nightwatch_store::{Ledger, LedgerReader, StoreError, verify};
use serde_json::json;
use std::sync::{Arc, Barrier};

const CAP: usize = 1000;

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
        RecordActor {
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

fn seqs(ledger: &dyn Ledger, filter: Filter) -> Vec<u64> {
    ledger
        .query(&filter)
        .unwrap()
        .iter()
        .map(|r| r.seq)
        .collect()
}

pub fn the_same_entries_make_the_same_records_as_the_memory_ledger(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
    let memory = MemoryLedger::with_output_cap(CAP);
    assert_eq!(append_night(&*ledger), append_night(&memory));
    let all = Filter::default();
    assert_eq!(ledger.query(&all).unwrap(), memory.query(&all).unwrap());
}

pub fn records_are_numbered_and_chained_from_genesis(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
    let records = append_night(&*ledger);
    let mut prev = GENESIS_HASH.to_string();
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.seq, i as u64 + 1);
        assert_eq!(r.id, format!("r{}", r.seq));
        assert_eq!(r.prev_hash, prev);
        assert_eq!(r.hash, r.expected_hash());
        prev = r.hash.clone();
    }
    let report = verify(&*ledger).unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.records, records.len() as u64);
}

pub fn secrets_are_redacted_and_outputs_capped_before_storage(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
    let records = append_night(&*ledger);
    let text = serde_json::to_string(&ledger.query(&Filter::default()).unwrap()).unwrap();
    for secret in ["abcdef123", "ghp_abcdef", "hunter2"] {
        assert!(!text.contains(secret), "{secret} leaked");
    }
    assert_eq!(
        records[3].redacted,
        ["authorization", "github-token", "url-password"]
    );
    assert_eq!(
        records[3].inputs["command"],
        "curl -H 'Authorization: Bearer [REDACTED:authorization]' https://api"
    );
    let out: &Outputs = records[4].outputs.as_ref().unwrap();
    assert!(out.stdout.starts_with(&"x".repeat(CAP)));
    assert!(out.stdout.ends_with("[... 4000 bytes cut by nightwatch]"));
    assert!(out.stderr.ends_with("bytes cut by nightwatch]"));
    assert_eq!(
        ledger.get(&records[3].id).unwrap().as_ref(),
        Some(&records[3])
    );
}

pub fn long_output_is_capped_at_a_char_boundary_with_a_marker(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
    let mut entry = result(1, "s", &"x".repeat(5000));
    if let Some(o) = entry.outputs.as_mut() {
        o.stderr = "é".repeat(600); // 1200 bytes; the cap falls on a char boundary
    }
    let out = ledger.append(entry).unwrap().outputs.unwrap();
    assert_eq!(
        out.stdout,
        format!("{}\n[... 4000 bytes cut by nightwatch]", "x".repeat(1000))
    );
    assert_eq!(
        out.stderr,
        format!("{}\n[... 200 bytes cut by nightwatch]", "é".repeat(500))
    );
    assert!(verify(&*ledger).unwrap().is_intact());
}

pub fn records_read_back_by_id_seq_call_and_filter(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
    let records = append_night(&*ledger);
    let ledger = &*ledger;
    assert_eq!(ledger.get("r2").unwrap().as_ref(), Some(&records[1]));
    assert_eq!(ledger.get("2").unwrap().as_ref(), Some(&records[1]));
    assert_eq!(ledger.get("r99").unwrap(), None);
    assert_eq!(ledger.get("nonsense").unwrap(), None);
    assert_eq!(
        ledger.decision_for_call("toolu_1").unwrap().map(|r| r.seq),
        Some(8),
        "the latest decision for the call"
    );
    assert_eq!(ledger.decision_for_call("toolu_9").unwrap(), None);
    let session = |s: &str| Some(s.to_string());
    assert_eq!(
        seqs(
            ledger,
            Filter {
                session: session("s1"),
                ..Filter::default()
            }
        ),
        [1, 2, 4, 5, 8]
    );
    assert_eq!(
        seqs(
            ledger,
            Filter {
                since_ms: Some(T0 + 2_000),
                until_ms: Some(T0 + 9_000),
                ..Filter::default()
            }
        ),
        [3, 4, 5]
    );
    assert_eq!(
        seqs(
            ledger,
            Filter {
                event: Some(event::TRUST.into()),
                ..Filter::default()
            }
        ),
        [6]
    );
    assert_eq!(
        seqs(
            ledger,
            Filter {
                event: Some(event::DECISION.into()),
                verdict: Some("allow".into()),
                tool: Some("exec".into()),
                alert: Some("disk-full-web-1".into()),
                limit: Some(2),
                ..Filter::default()
            }
        ),
        [3, 8],
        "the newest two, in order"
    );
    assert_eq!(
        seqs(
            ledger,
            Filter {
                after_seq: Some(5),
                session: session("s1"),
                ..Filter::default()
            }
        ),
        [8],
        "only what is after the cursor"
    );
    assert_eq!(
        seqs(
            ledger,
            Filter {
                before_seq: Some(8),
                session: session("s1"),
                limit: Some(1),
                ..Filter::default()
            }
        ),
        [5],
        "the newest one before the cursor"
    );
    assert!(
        seqs(
            ledger,
            Filter {
                after_seq: Some(1_000),
                ..Filter::default()
            }
        )
        .is_empty(),
        "nothing after the head"
    );
}

pub fn filters_select_by_time_session_actor_verdict_tool_alert_event(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
    ledger.append(decision(0, "a", "ls", "allow")).unwrap();
    ledger.append(result(0, "a", "x")).unwrap();
    ledger
        .append(decision(10, "b", "rm -rf /", "deny"))
        .unwrap();
    let mut janitor = Entry::new(
        "sweep",
        T0 + 20_000,
        RecordActor {
            kind: "janitor".into(),
            id: "janitor".into(),
        },
        "remove_container",
    );
    janitor.verdict = Some("allow".into());
    ledger.append(janitor).unwrap();
    let ledger = &*ledger;
    let text = |s: &str| Some(s.to_string());
    let rows: Vec<(Filter, Vec<u64>)> = vec![
        (Filter::default(), vec![1, 2, 3, 4]),
        (
            Filter {
                session: text("a"),
                ..Filter::default()
            },
            vec![1, 2],
        ),
        (
            Filter {
                verdict: text("deny"),
                ..Filter::default()
            },
            vec![3],
        ),
        (
            Filter {
                actor: text("janitor"),
                ..Filter::default()
            },
            vec![4],
        ),
        (
            Filter {
                actor: text("agent"),
                ..Filter::default()
            },
            vec![1, 2, 3],
        ),
        (
            Filter {
                actor: text("claude-code"),
                ..Filter::default()
            },
            vec![1, 2, 3],
        ),
        (
            Filter {
                tool: text("remove_container"),
                ..Filter::default()
            },
            vec![4],
        ),
        (
            Filter {
                alert: text("disk-full-web-1"),
                ..Filter::default()
            },
            vec![1, 3],
        ),
        (
            Filter {
                event: text(event::RESULT),
                ..Filter::default()
            },
            vec![2],
        ),
        (
            Filter {
                since_ms: Some(T0 + 10_000),
                ..Filter::default()
            },
            vec![3, 4],
        ),
        (
            Filter {
                until_ms: Some(T0 + 10_000),
                ..Filter::default()
            },
            vec![1, 2],
        ),
        (
            Filter {
                since_ms: Some(T0),
                until_ms: Some(T0 + 20_000),
                verdict: text("allow"),
                ..Filter::default()
            },
            vec![1],
        ),
        (
            Filter {
                limit: Some(2),
                ..Filter::default()
            },
            vec![3, 4],
        ),
        (
            Filter {
                session: text("zzz"),
                ..Filter::default()
            },
            vec![],
        ),
    ];
    for (filter, want) in rows {
        assert_eq!(seqs(ledger, filter.clone()), want, "{filter:?}");
    }
}

pub fn scan_visits_every_record_in_order_and_a_visitor_can_stop_it(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
    let records = append_night(&*ledger);
    let mut seen = Vec::new();
    ledger
        .scan(&mut |r| {
            seen.push(r.clone());
            Ok(())
        })
        .unwrap();
    assert_eq!(seen, records);
    let mut visits = 0;
    let stopped = ledger.scan(&mut |_| {
        visits += 1;
        Err(StoreError::Visit("enough".into()))
    });
    assert!(matches!(stopped, Err(StoreError::Visit(_))), "{stopped:?}");
    assert_eq!(visits, 1);
}

/// Hostile text in every field that takes text (a NUL, the escape a store may use for it) is
/// kept exactly, hashed as the memory ledger hashes it, found by it, and verifies.
pub fn hostile_text_is_kept_exactly_found_by_it_and_verifies(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
    let memory = MemoryLedger::with_output_cap(CAP);
    let session = format!("s{HOSTILE}");
    let mut asked = decision(1, &session, &format!("echo '{HOSTILE}'"), HOSTILE);
    asked.tool = HOSTILE.into();
    asked.actor.id = HOSTILE.into();
    asked.rule = Some(HOSTILE.into());
    asked.reasons = vec![HOSTILE.into()];
    asked.call_id = Some(HOSTILE.into());
    asked.cwd = Some(format!("/srv/{HOSTILE}"));
    asked.context.alert_id = Some(HOSTILE.into());
    asked.context.host = Some(HOSTILE.into());
    asked.context.task = Some(HOSTILE.into());
    asked.safeguards = Some(json!({ "note": HOSTILE }));
    let mut ran = result(1, &session, HOSTILE);
    ran.call_id = Some(HOSTILE.into());
    if let Some(o) = ran.outputs.as_mut() {
        o.stderr = HOSTILE.into();
    }
    let stored: Vec<Record> = [asked.clone(), ran.clone()]
        .into_iter()
        .map(|e| ledger.append(e).unwrap())
        .collect();
    let expected: Vec<Record> = [asked, ran]
        .into_iter()
        .map(|e| memory.append(e).unwrap())
        .collect();
    assert_eq!(stored, expected);
    assert_eq!(
        ledger.get(&stored[0].id).unwrap().as_ref(),
        Some(&stored[0])
    );
    assert_eq!(
        seqs(
            &*ledger,
            Filter {
                session: Some(session),
                ..Filter::default()
            }
        ),
        [1, 2]
    );
    for filter in [
        Filter {
            tool: Some(HOSTILE.into()),
            ..Filter::default()
        },
        Filter {
            verdict: Some(HOSTILE.into()),
            ..Filter::default()
        },
        Filter {
            alert: Some(HOSTILE.into()),
            ..Filter::default()
        },
        Filter {
            actor: Some(HOSTILE.into()),
            ..Filter::default()
        },
    ] {
        assert_eq!(seqs(&*ledger, filter), [1]);
    }
    assert_eq!(
        ledger.decision_for_call(HOSTILE).unwrap().map(|r| r.seq),
        Some(1)
    );
    assert!(verify(&*ledger).unwrap().is_intact());
}

pub fn an_empty_ledger_verifies(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
    let report = verify(&*ledger).unwrap();
    assert!(report.is_intact());
    assert_eq!(report.records, 0);
    assert_eq!(ledger.head_checkpoint().unwrap(), None);
}

pub fn a_thousand_appends_verify_clean_up_to_the_head_checkpoint(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
    for n in 0..500 {
        ledger
            .append(decision(n, "s", &format!("echo {n}"), "allow"))
            .unwrap();
        ledger.append(result(n, "s", &format!("{n}\n"))).unwrap();
    }
    let report = verify(&*ledger).unwrap();
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

pub fn unguarded_results_are_reported_by_verify(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
    ledger.append(decision(1, "s", "ls", "allow")).unwrap();
    let mut e = result(2, "s", "rm output");
    e.event = event::UNGUARDED_RESULT.into();
    ledger.append(e).unwrap();
    let report = verify(&*ledger).unwrap();
    assert!(report.is_intact());
    assert_eq!(report.unguarded, [(2, "r2".to_string())]);
}

/// Checks, the backup and the approval travel with the decision, inside its hash, redacted
/// like everything else.
pub fn safeguards_are_stored_chained_and_redacted(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
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
    assert!(verify(&*ledger).unwrap().is_intact());
}

pub fn a_new_handle_reads_what_another_appended(backend: &dyn Backend) {
    let place = backend.place();
    let first = place.ledger(CAP);
    let one = first.append(decision(1, "s", "df -h", "allow")).unwrap();
    let two = first.append(result(1, "s", "/dev/sda1 91%")).unwrap();
    drop(first);
    let again = place.ledger(CAP);
    assert_eq!(again.get("r1").unwrap(), Some(one));
    assert_eq!(again.get("r2").unwrap(), Some(two.clone()));
    let three = again.append(decision(2, "s", "ls", "allow")).unwrap();
    assert_eq!((three.seq, three.prev_hash), (3, two.hash));
}

pub fn append_all_chains_entries_in_order(backend: &dyn Backend) {
    let place = backend.place();
    let ledger = place.ledger(CAP);
    ledger.append(decision(0, "s", "true", "allow")).unwrap();
    let batch = ledger.append_all(night()).unwrap();
    assert_eq!(
        batch.iter().map(|r| r.seq).collect::<Vec<_>>(),
        (2..=9).collect::<Vec<_>>()
    );
    assert_eq!(ledger.query(&Filter::default()).unwrap()[1..], batch[..]);
    assert!(ledger.append_all(Vec::new()).unwrap().is_empty());
    assert!(verify(&*ledger).unwrap().is_intact());
}

/// Parallel hooks: many handles, one store, one chain.
pub fn writers_with_their_own_handles_keep_one_chain(backend: &dyn Backend) {
    const WRITERS: usize = 8;
    const EACH: usize = 60;
    let place: Arc<dyn crate::Place> = Arc::from(backend.place());
    let barrier = Arc::new(Barrier::new(WRITERS));
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let place = Arc::clone(&place);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                // Each writer opens its own handle, as a separate hook process would.
                let ledger = place.ledger(CAP);
                barrier.wait();
                for i in 0..EACH {
                    let n = (w * EACH + i) as i64;
                    let line = format!("echo {i}");
                    ledger
                        .append(decision(n, &format!("sess-{w}"), &line, "allow"))
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let ledger = place.ledger(CAP);
    let report = verify(&*ledger).unwrap();
    assert_eq!(report.records, (WRITERS * EACH) as u64);
    assert_eq!(report.first_bad, None);
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(
        report.head_checkpoint.map(|c| c.0),
        Some((WRITERS * EACH) as u64)
    );
    for w in 0..WRITERS {
        let f = Filter {
            session: Some(format!("sess-{w}")),
            ..Filter::default()
        };
        assert_eq!(ledger.query(&f).unwrap().len(), EACH);
    }
}
