//! What only the SQLite queue has: its file refusing changes to the event log and a second
//! live task, a file from before `deferrals` upgraded in place, and the counts table its
//! triggers keep. The queue's behaviour is the shared conformance suite (`conformance.rs`).

use nightwatch_sqlite::SqliteTaskQueue;
use nightwatch_store::{Offered, TaskQueue};
use nightwatch_tasks::{Outcome, Policy, Status};

fn policy() -> Policy {
    Policy {
        cooldown_ms: 10 * 60_000,
        resolve_delay_ms: 0,
        max_attempts: 3,
        backoff_base_ms: 1_000,
        backoff_cap_ms: 4_000,
    }
}

fn open(dir: &tempfile::TempDir, policy: Policy) -> SqliteTaskQueue {
    SqliteTaskQueue::open(dir.path(), policy).unwrap()
}

fn created(o: Offered) -> i64 {
    match o {
        Offered::Created(id) => id,
        other => panic!("expected a new task, got {other:?}"),
    }
}

fn failed(e: &str) -> Outcome {
    Outcome::Failed { error: e.into() }
}

#[test]
fn events_are_append_only_in_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, policy());
    created(store.offer("a", "{}", "r", 0).unwrap());
    drop(store);
    let conn = rusqlite::Connection::open(dir.path().join("tasks.db")).unwrap();
    assert!(conn.execute("DELETE FROM task_events", []).is_err());
    assert!(
        conn.execute("UPDATE task_events SET why = 'x'", [])
            .is_err()
    );
    // And a second live task for one identity is refused by the schema itself.
    let dup = conn.execute(
        "INSERT INTO tasks (identity, alert_json, route, created_ms, last_seen_ms, status, attempt, ready_ms)
         VALUES ('a', '{}', 'r', 0, 0, 'pending', 0, 0)",
        [],
    );
    assert!(dup.is_err());
}

#[test]
fn a_file_from_before_deferrals_is_upgraded_and_keeps_its_tasks() {
    let dir = tempfile::tempdir().unwrap();
    {
        let old = rusqlite::Connection::open(dir.path().join("tasks.db")).unwrap();
        old.execute_batch(
            "CREATE TABLE tasks (
                id INTEGER PRIMARY KEY, identity TEXT NOT NULL, alert_json TEXT NOT NULL,
                route TEXT NOT NULL, created_ms INTEGER NOT NULL,
                repeats INTEGER NOT NULL DEFAULT 0, last_seen_ms INTEGER NOT NULL,
                status TEXT NOT NULL, attempt INTEGER NOT NULL, ready_ms INTEGER NOT NULL,
                lease_until_ms INTEGER, worker TEXT, last_error TEXT, finished_ms INTEGER,
                escalation INTEGER NOT NULL DEFAULT 0);
             INSERT INTO tasks (identity, alert_json, route, created_ms, last_seen_ms, status,
                 attempt, ready_ms)
             VALUES ('am/fp1', '{}', 'disk', 5, 5, 'pending', 0, 5);",
        )
        .unwrap();
    }
    let store = SqliteTaskQueue::open(dir.path(), Policy::default()).unwrap();
    let task = store.task(1).unwrap().expect("the old task is still there");
    assert_eq!(task.lifecycle.deferrals, 0);
    let claim = store.claim("w", 10, 1_000).unwrap().expect("and claimable");
    let status = store
        .complete(
            claim.task_id,
            claim.attempt,
            &Outcome::Deferred {
                why: "awaiting approval".into(),
                wait_ms: 100,
            },
            20,
        )
        .unwrap();
    assert_eq!(status, Status::Pending);
    assert_eq!(store.task(1).unwrap().unwrap().lifecycle.deferrals, 1);
}

/// The gauges' counts are kept as tasks change (not counted at each scrape): after a long
/// mixed run of offers, claims, results, resolves and escalations they equal a count of the
/// table itself.
#[test]
fn the_kept_counts_equal_a_count_of_the_tasks_after_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, policy());
    let mut seed = 7u64;
    let mut next = move |n: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) % n
    };
    let mut now = 0;
    for _ in 0..600 {
        now += 1_000 * (1 + next(30) as i64);
        let identity = format!("alert/{}", next(12));
        match next(5) {
            0 | 1 => {
                store.offer(&identity, "{}", "r", now).unwrap();
            }
            2 => {
                if let Some(claim) = store.claim("w", now, 5_000).unwrap() {
                    let outcome = if next(2) == 0 {
                        Outcome::Succeeded
                    } else {
                        failed("no")
                    };
                    let _ = store.complete(claim.task_id, claim.attempt, &outcome, now + 10);
                }
            }
            3 => {
                store.resolve(&identity, now).unwrap();
            }
            _ => {
                store.take_escalations(now).unwrap();
            }
        }
    }
    let conn = rusqlite::Connection::open(dir.path().join("tasks.db")).unwrap();
    let mut counted: Vec<(String, i64)> = conn
        .prepare("SELECT status, count(*) FROM tasks GROUP BY status ORDER BY status")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    counted.retain(|(_, n)| *n > 0);
    let kept: Vec<(String, i64)> = store
        .counts()
        .unwrap()
        .into_iter()
        .map(|(status, n)| (status.as_str().to_owned(), n))
        .collect();
    assert_eq!(kept, counted);
    assert!(
        kept.len() >= 3,
        "the run reached several statuses: {kept:?}"
    );
    // What the triggers wrote, read directly: the counts come from it, not from the table.
    let table: Vec<(String, i64)> = conn
        .prepare("SELECT status, n FROM task_counts WHERE n != 0 ORDER BY status")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(table, counted);
}
