//! Several workers, each with its own handle on one data directory, never share a task.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use nightwatch_sqlite::SqliteTaskQueue;
use nightwatch_store::{Offered, TaskFilter, TaskQueue};
use nightwatch_tasks::{Outcome, Policy, Status};

const TASKS: usize = 500;
const WORKERS: usize = 8;

#[test]
fn eight_workers_claim_each_of_500_tasks_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteTaskQueue::open(dir.path(), Policy::default()).unwrap();
    for i in 0..TASKS {
        let offered = store.offer(&format!("alert/{i}"), "{}", "r", 0).unwrap();
        assert!(matches!(offered, Offered::Created(_)));
    }
    drop(store);

    // Held by someone right now, and every claim ever handed out.
    let held = Arc::new(Mutex::new(HashSet::new()));
    let claims = Arc::new(Mutex::new(Vec::new()));
    let start = Arc::new(std::sync::Barrier::new(WORKERS));
    let threads: Vec<_> = (0..WORKERS)
        .map(|w| {
            let dir = dir.path().to_path_buf();
            let held = Arc::clone(&held);
            let claims = Arc::clone(&claims);
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                let store = SqliteTaskQueue::open(&dir, Policy::default()).unwrap();
                start.wait();
                let worker = format!("w{w}");
                // The lease outlives the test, so nothing is reclaimed: one claim per task.
                while let Some(c) = store.claim(&worker, 1, 3_600_000).unwrap() {
                    assert!(
                        held.lock().unwrap().insert(c.task_id),
                        "task {} handed to {worker} while another worker held it",
                        c.task_id
                    );
                    claims.lock().unwrap().push((c.task_id, c.attempt, w));
                    // The work itself, outside any transaction, so other workers get a turn.
                    std::thread::sleep(std::time::Duration::from_micros(500));
                    let status = store
                        .complete(c.task_id, c.attempt, &Outcome::Succeeded, 2)
                        .unwrap();
                    assert_eq!(status, Status::Done);
                    held.lock().unwrap().remove(&c.task_id);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }

    let claims = claims.lock().unwrap();
    let mut per_task: HashMap<i64, usize> = HashMap::new();
    for (id, attempt, _) in claims.iter() {
        assert_eq!(*attempt, 1);
        *per_task.entry(*id).or_default() += 1;
    }
    assert_eq!(per_task.len(), TASKS);
    assert!(per_task.values().all(|n| *n == 1));
    let workers_used: HashSet<usize> = claims.iter().map(|c| c.2).collect();
    assert!(workers_used.len() > 1, "only one worker ever got a task");

    let store = SqliteTaskQueue::open(dir.path(), Policy::default()).unwrap();
    let tasks = store.tasks(&TaskFilter::default()).unwrap();
    assert_eq!(tasks.len(), TASKS);
    for t in &tasks {
        assert_eq!(t.lifecycle.status, Status::Done);
        let done_events = store
            .events(t.id)
            .unwrap()
            .iter()
            .filter(|e| e.to == Status::Done)
            .count();
        assert_eq!(
            done_events, 1,
            "task {} completed {done_events} times",
            t.id
        );
    }
}
