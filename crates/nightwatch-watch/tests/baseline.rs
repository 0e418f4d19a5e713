//! The baselines watcher over a real (in-memory) ledger: seed 000's backup job that fired 46
//! times a day against `1/day`, the retrier's storm against its learned baseline, and the
//! counts a later run reads only from what is new.

use std::time::Duration;

use nightwatch_ledger::{Entry, RecordActor, event};
use nightwatch_store::Ledger;
use nightwatch_store::memory::MemoryLedger;
use nightwatch_watch::baseline::BaselineSpec;
use nightwatch_watch::{Databases, Env, NoContainers, Observation, Seen};

/// 2026-02-14T03:30:00Z.
const NOW: i64 = 1_771_039_800_000;
const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

struct NoDatabases;

impl Databases for NoDatabases {
    fn returns_row(&self, _: &str, _: &str, _: Duration) -> Result<bool, String> {
        Err("no databases in this test".into())
    }
}

fn decision(ledger: &MemoryLedger, at: i64, kind: &str, id: &str, tool: &str, verdict: &str) {
    let mut entry = Entry::new(
        event::DECISION,
        at,
        RecordActor {
            kind: kind.into(),
            id: id.into(),
        },
        tool,
    );
    entry.verdict = Some(verdict.into());
    entry.inputs = serde_json::json!({ "target": "db1", "n": at });
    ledger.append(entry).expect("append");
}

fn run_at(
    spec: &BaselineSpec,
    ledger: &MemoryLedger,
    now_ms: i64,
    timeout: Duration,
) -> Vec<Observation> {
    let env = Env {
        now_ms,
        ledger,
        databases: &NoDatabases,
        containers: &NoContainers,
        timeout,
        reference_clock_ms: None,
    };
    spec.run(&env)
}

fn run(spec: &BaselineSpec, ledger: &MemoryLedger, now_ms: i64) -> Vec<Observation> {
    run_at(spec, ledger, now_ms, Duration::from_secs(30))
}

fn spec(yaml: &str) -> BaselineSpec {
    yaml_serde::from_str(yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"))
}

fn about<'a>(observations: &'a [Observation], subject: &str) -> &'a Observation {
    observations
        .iter()
        .find(|o| o.subject == subject)
        .unwrap_or_else(|| panic!("no observation about {subject}: {observations:#?}"))
}

#[test]
fn forty_six_backups_against_one_a_day_is_found_and_clears_later() {
    let ledger = MemoryLedger::new();
    // Last week: once a day, as it should.
    for d in 1..7 {
        decision(
            &ledger,
            NOW - d * DAY - 2 * HOUR,
            "robot",
            "backup-job",
            "backup",
            "allow",
        );
    }
    // Today: 46, the first allowed and the rest halted by the breaker.
    for n in 0..46 {
        let verdict = if n == 0 { "allow" } else { "halt" };
        decision(
            &ledger,
            NOW - 20 * HOUR + n * 20 * 60_000,
            "robot",
            "backup-job",
            "backup",
            verdict,
        );
    }
    // Somebody else's watch records and other actors do not count for it.
    decision(&ledger, NOW - HOUR, "agent", "claude-code", "exec", "allow");
    let mut watch = Entry::new(
        event::WATCH,
        NOW - HOUR,
        RecordActor {
            kind: "watcher".into(),
            id: "robots".into(),
        },
        "baselines",
    );
    watch.inputs = serde_json::json!({ "subject": "actor robot:backup-job backup" });
    ledger.append(watch).unwrap();

    let spec = spec("expect: { backup-job: 1/day }\n");
    let seen = run(&spec, &ledger, NOW);
    let backup = about(&seen, "actor robot:backup-job backup");
    assert_eq!(backup.seen, Seen::Found, "{backup:?}");
    assert!(
        backup.summary.contains("46 times in the last 24h"),
        "{}",
        backup.summary
    );
    assert!(backup.summary.contains("(1 allowed)"), "{}", backup.summary);
    assert!(
        backup.summary.contains("expected at most 1/day"),
        "{}",
        backup.summary
    );
    assert_eq!(backup.details["count"], 46);
    // Only what a declaration names is judged when nothing is learned.
    assert_eq!(seen.len(), 1, "{seen:#?}");

    // A day and a half later, once again: the finding clears.
    decision(
        &ledger,
        NOW + 30 * HOUR,
        "robot",
        "backup-job",
        "backup",
        "allow",
    );
    let seen = run(&spec, &ledger, NOW + 36 * HOUR);
    let backup = about(&seen, "actor robot:backup-job backup");
    assert_eq!(backup.seen, Seen::Ok, "{backup:?}");
    assert!(
        backup.summary.contains("1 times in the last 24h"),
        "{}",
        backup.summary
    );
}

#[test]
fn a_retry_storm_is_far_above_its_learned_baseline() {
    let ledger = MemoryLedger::new();
    // Two weeks of a retrier that retries about 100 times a day, and a steady janitor.
    for d in 1..=14 {
        for n in 0..100 {
            decision(
                &ledger,
                NOW - d * DAY - n * 10 * 60_000 / 2,
                "robot",
                "retrier",
                "deploy",
                "allow",
            );
        }
        decision(
            &ledger,
            NOW - d * DAY,
            "janitor",
            "janitor",
            "remove_container",
            "allow",
        );
    }
    let spec = spec("learn: { days: 14, factor: 4, at_least: 20 }\n");
    // Today so far, like any other day: nothing is said about anyone.
    for n in 0..90 {
        decision(
            &ledger,
            NOW - 12 * HOUR + n * 60_000,
            "robot",
            "retrier",
            "deploy",
            "allow",
        );
    }
    let seen = run(&spec, &ledger, NOW);
    assert!(seen.is_empty(), "{seen:#?}");

    // Then it hits a wall: 6,483 more, read by the next run from what is new.
    for n in 0..6483 {
        decision(
            &ledger,
            NOW + n * 5_000,
            "robot",
            "retrier",
            "deploy",
            "deny",
        );
    }
    let later = NOW + 6483 * 5_000;
    let seen = run(&spec, &ledger, later);
    let retrier = about(&seen, "actor robot:retrier deploy");
    assert_eq!(retrier.seen, Seen::Found, "{retrier:?}");
    assert!(
        retrier.summary.contains("typical day is 100"),
        "{}",
        retrier.summary
    );
    assert_eq!(
        seen.len(),
        1,
        "the janitor is within its baseline: {seen:#?}"
    );

    // Two days on, the storm is out of the window: the finding clears, and only it speaks.
    let seen = run(&spec, &ledger, later + 2 * DAY);
    assert_eq!(
        about(&seen, "actor robot:retrier deploy").seen,
        Seen::Ok,
        "{seen:#?}"
    );
    assert_eq!(seen.len(), 1, "{seen:#?}");
    assert!(run(&spec, &ledger, later + 2 * DAY + HOUR).is_empty());
}

#[test]
fn a_first_read_past_its_timeout_goes_on_next_run() {
    let ledger = MemoryLedger::new();
    for n in 0..30 {
        decision(
            &ledger,
            NOW - HOUR + n * 1000,
            "script",
            "nightly-db",
            "backup",
            "allow",
        );
    }
    let spec = spec("expect: { \"script:nightly-*\": { backup: 2/day } }\nlearn: {}\n");
    let seen = run_at(&spec, &ledger, NOW, Duration::ZERO);
    assert_eq!(seen.len(), 1, "{seen:#?}");
    assert_eq!(seen[0].seen, Seen::Unknown);
    assert!(
        seen[0].summary.contains("still reading"),
        "{}",
        seen[0].summary
    );
    let seen = run(&spec, &ledger, NOW);
    let nightly = about(&seen, "actor script:nightly-db backup");
    assert_eq!(nightly.seen, Seen::Found, "{seen:#?}");
    assert_eq!(nightly.details["count"], 30);
    // The Unknown about the ledger clears.
    assert_eq!(about(&seen, "baselines: the ledger").seen, Seen::Ok);
}

#[test]
fn a_replaced_ledger_is_counted_again() {
    let spec = spec("expect: { backup-job: 1/day }\n");
    let first = MemoryLedger::new();
    for n in 0..5 {
        decision(
            &first,
            NOW - HOUR + n,
            "robot",
            "backup-job",
            "backup",
            "allow",
        );
    }
    assert_eq!(run(&spec, &first, NOW)[0].details["count"], 5);
    let second = MemoryLedger::new();
    decision(
        &second,
        NOW - HOUR,
        "robot",
        "backup-job",
        "backup",
        "allow",
    );
    let seen = run(&spec, &second, NOW);
    assert_eq!(
        about(&seen, "actor robot:backup-job backup").seen,
        Seen::Ok,
        "{seen:#?}"
    );
    assert_eq!(
        about(&seen, "actor robot:backup-job backup").details["count"],
        1
    );
}
