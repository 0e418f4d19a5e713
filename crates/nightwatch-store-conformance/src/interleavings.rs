//! Random interleavings of everything a daemon and its workers do, checked after every step.

use crate::Backend;
use nightwatch_store::{Answer, Offer, Offered, QueueOp, TaskError, TaskFilter};
use nightwatch_tasks::{Outcome, Policy, Status};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::collections::HashMap;

#[derive(Debug, Clone)]
enum Op {
    Offer(u8),
    Resolve(u8),
    Claim { worker: u8, lease_ms: i64 },
    Heartbeat { claim: usize, lease_ms: i64 },
    Complete { claim: usize, ok: bool },
    Tick(i64),
    TakeEscalations,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..3).prop_map(Op::Offer),
        1 => (0u8..3).prop_map(Op::Resolve),
        3 => (0u8..3, 100i64..2_000).prop_map(|(worker, lease_ms)| Op::Claim { worker, lease_ms }),
        1 => (0usize..16, 100i64..2_000)
            .prop_map(|(claim, lease_ms)| Op::Heartbeat { claim, lease_ms }),
        3 => (0usize..16, any::<bool>()).prop_map(|(claim, ok)| Op::Complete { claim, ok }),
        2 => (0i64..1_500).prop_map(Op::Tick),
        1 => Just(Op::TakeEscalations),
    ]
}

fn policy(resolve_delay_ms: i64) -> Policy {
    Policy {
        cooldown_ms: 1_000,
        resolve_delay_ms,
        max_attempts: 3,
        backoff_base_ms: 100,
        backoff_cap_ms: 800,
    }
}

/// No task lost or invented, at most one live task per identity, attempts capped, every
/// task's last event its status, stale heartbeats and results change nothing, and every task
/// that gave up is escalated exactly once.
pub fn queue_invariants_hold_under_any_interleaving(backend: &dyn Backend) {
    let mut runner = TestRunner::new(Config {
        cases: backend.interleavings(),
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        prop_oneof![Just(0i64), Just(300i64)],
        proptest::collection::vec(op(), 1..60),
    );
    let outcome = runner.run(&strategy, |(delay, ops)| run(backend, delay, ops));
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

fn run(backend: &dyn Backend, delay: i64, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let place = backend.place();
    let store = place.queue(policy(delay));
    let mut now = 0i64;
    let mut created = 0usize;
    // Every claim ever handed out, newest last: (task id, attempt).
    let mut claims: Vec<(i64, u32)> = Vec::new();
    let mut last_attempt: HashMap<i64, u32> = HashMap::new();
    let mut escalated: HashMap<i64, usize> = HashMap::new();

    for op in ops {
        match op {
            Op::Offer(i) => {
                if let Offered::Created(_) = store.offer(&format!("id{i}"), "{}", "r", now).unwrap()
                {
                    created += 1;
                }
            }
            Op::Resolve(i) => {
                store.resolve(&format!("id{i}"), now).unwrap();
            }
            Op::Claim { worker, lease_ms } => {
                if let Some(c) = store.claim(&format!("w{worker}"), now, lease_ms).unwrap() {
                    let prev = last_attempt.insert(c.task_id, c.attempt).unwrap_or(0);
                    prop_assert_eq!(c.attempt, prev + 1, "attempts count up by one");
                    claims.push((c.task_id, c.attempt));
                }
            }
            Op::Heartbeat { claim, lease_ms } => {
                if let Some(&(id, attempt)) = claims.get(claim % claims.len().max(1)) {
                    let before = store.task(id).unwrap().unwrap();
                    let current = before.lifecycle.status == Status::Running
                        && before.lifecycle.attempt == attempt;
                    let result = store.heartbeat(id, attempt, now, lease_ms);
                    if current {
                        prop_assert!(result.is_ok());
                    } else {
                        prop_assert!(
                            matches!(result, Err(TaskError::Stale { .. })),
                            "{:?}",
                            result
                        );
                        prop_assert_eq!(store.task(id).unwrap().unwrap(), before);
                    }
                }
            }
            Op::Complete { claim, ok } => {
                if let Some(&(id, attempt)) = claims.get(claim % claims.len().max(1)) {
                    let before = store.task(id).unwrap().unwrap();
                    let events_before = store.events(id).unwrap().len();
                    let current = before.lifecycle.status == Status::Running
                        && before.lifecycle.attempt == attempt;
                    let outcome = if ok {
                        Outcome::Succeeded
                    } else {
                        Outcome::Failed {
                            error: "boom".into(),
                        }
                    };
                    let result = store.complete(id, attempt, &outcome, now);
                    if current {
                        prop_assert!(result.is_ok(), "{:?}", result);
                    } else {
                        // A stale completion changes nothing, not even the event log.
                        prop_assert!(
                            matches!(result, Err(TaskError::Stale { .. })),
                            "{:?}",
                            result
                        );
                        prop_assert_eq!(store.task(id).unwrap().unwrap(), before);
                        prop_assert_eq!(store.events(id).unwrap().len(), events_before);
                    }
                }
            }
            Op::Tick(dt) => now += dt,
            Op::TakeEscalations => {
                for e in store.take_escalations(now).unwrap() {
                    *escalated.entry(e.task_id).or_default() += 1;
                }
            }
        }

        let tasks = store.tasks(&TaskFilter::default()).unwrap();
        prop_assert_eq!(tasks.len(), created, "no task is lost or invented");
        let mut live: HashMap<&str, usize> = HashMap::new();
        for t in &tasks {
            if t.lifecycle.status.is_live() {
                *live.entry(t.identity.as_str()).or_default() += 1;
            }
            prop_assert!(
                t.lifecycle.attempt <= 3,
                "task {} ran {} times",
                t.id,
                t.lifecycle.attempt
            );
            let events = store.events(t.id).unwrap();
            prop_assert!(!events.is_empty(), "task {} has zero events", t.id);
            prop_assert_eq!(events.last().unwrap().to, t.lifecycle.status);
            if t.lifecycle.status == Status::GaveUp {
                prop_assert!(escalated.get(&t.id).copied().unwrap_or(0) <= 1);
            } else {
                prop_assert!(!escalated.contains_key(&t.id));
            }
        }
        prop_assert!(
            live.values().all(|n| *n <= 1),
            "two live tasks for one identity: {:?}",
            live
        );
    }

    // Every task that gave up is escalated exactly once, eventually.
    for e in store.take_escalations(now).unwrap() {
        *escalated.entry(e.task_id).or_default() += 1;
    }
    let gave_up = TaskFilter {
        status: Some(Status::GaveUp),
        ..TaskFilter::default()
    };
    for t in store.tasks(&gave_up).unwrap() {
        prop_assert_eq!(escalated.get(&t.id).copied(), Some(1));
    }
    Ok(())
}

/// One operation of a generated batch.
#[derive(Debug, Clone)]
enum BatchOp {
    Offer {
        identity: u8,
        max_per_hour: Option<u32>,
        with_arrival: bool,
    },
    Resolve(u8),
}

fn batch_op() -> impl Strategy<Value = BatchOp> {
    prop_oneof![
        5 => (0u8..6, prop_oneof![4 => Just(None), 1 => (1u32..4).prop_map(Some)], any::<bool>())
            .prop_map(|(identity, max_per_hour, with_arrival)| BatchOp::Offer {
                identity,
                max_per_hour,
                with_arrival,
            }),
        1 => (0u8..6).prop_map(BatchOp::Resolve),
    ]
}

/// A batch of queue operations (a store may look at and write a batch's offers together)
/// answers exactly as the same operations applied one at a time, and leaves the same tasks:
/// repeats of an identity within the batch, resolves between its offers, hourly limits, live
/// tasks and cooldowns from earlier rounds included.
pub fn a_batch_answers_as_its_ops_one_at_a_time(backend: &dyn Backend) {
    let mut runner = TestRunner::new(Config {
        cases: (backend.interleavings() / 4).max(8),
        failure_persistence: None,
        ..Config::default()
    });
    let rounds = proptest::collection::vec(
        (proptest::collection::vec(batch_op(), 1..12), any::<bool>()),
        1..6,
    );
    if let Err(e) = runner.run(&rounds, |rounds| batch_against_single(backend, rounds)) {
        panic!("{e}");
    }
}

fn batch_against_single(
    backend: &dyn Backend,
    rounds: Vec<(Vec<BatchOp>, bool)>,
) -> Result<(), TestCaseError> {
    let (batched_place, single_place) = (backend.place(), backend.place());
    let batched = batched_place.queue(policy(0));
    let single = single_place.queue(policy(0));
    let mut now = 0i64;
    let mut arrival = 0i64;
    for (ops, finish_one) in rounds {
        let identities: Vec<String> = (0..6).map(|i| format!("id{i}")).collect();
        let ops: Vec<QueueOp<'_>> = ops
            .iter()
            .map(|op| match op {
                BatchOp::Offer {
                    identity,
                    max_per_hour,
                    with_arrival,
                } => QueueOp::Offer(Offer {
                    identity: &identities[usize::from(*identity)],
                    alert_json: "{}",
                    route: "r",
                    max_per_hour: *max_per_hour,
                    arrival: with_arrival.then(|| {
                        arrival += 1;
                        arrival
                    }),
                    again: false,
                }),
                BatchOp::Resolve(identity) => QueueOp::Resolve {
                    identity: &identities[usize::from(*identity)],
                },
            })
            .collect();
        let together = batched.apply(&ops, now).unwrap();
        let one_by_one: Vec<Answer> = ops
            .iter()
            .flat_map(|op| single.apply(std::slice::from_ref(op), now).unwrap())
            .collect();
        prop_assert_eq!(&together, &one_by_one, "the answers, in order");
        prop_assert_eq!(
            batched.tasks(&TaskFilter::default()).unwrap(),
            single.tasks(&TaskFilter::default()).unwrap(),
            "the tasks left"
        );
        now += 700;
        // Between rounds a task may run and finish, so later offers meet a cooldown.
        if finish_one {
            for store in [&batched, &single] {
                if let Some(c) = store.claim("w", now, 1_000).unwrap() {
                    store
                        .complete(c.task_id, c.attempt, &Outcome::Succeeded, now)
                        .unwrap();
                }
            }
        }
        now += 700;
    }
    Ok(())
}
