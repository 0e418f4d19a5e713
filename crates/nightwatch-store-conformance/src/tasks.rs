//! What every `TaskQueue` must do, one story per case: dedup by identity, cooldown, resolve,
//! the resolve delay, backoff, giving up and escalating once, leases and fencing, batches,
//! arrivals offered again, counts, windows, paging; and, with several handles at once, one
//! claim per task, one task per identity, and a route's hourly limit kept.

use crate::{Backend, Place};
use nightwatch_store::{
    Answer, Offer, Offered, QueueOp, Resolved, RunbookProcess, Task, TaskError, TaskFilter,
    TaskQueue,
};
use nightwatch_tasks::{Outcome, Policy, Status, machine};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Barrier, Mutex};

const MIN: i64 = 60_000;

fn policy() -> Policy {
    Policy {
        cooldown_ms: 10 * MIN,
        resolve_delay_ms: 0,
        max_attempts: 3,
        backoff_base_ms: 1_000,
        backoff_cap_ms: 4_000,
    }
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

/// Every event chains: first from nothing, then each `from` is the previous `to`.
fn assert_event_chain(store: &dyn TaskQueue, id: i64) {
    let events = store.events(id).unwrap();
    assert!(!events.is_empty(), "task {id} has zero events");
    assert_eq!(events[0].from, None);
    for pair in events.windows(2) {
        assert_eq!(pair[1].from, Some(pair[0].to), "task {id}: {events:#?}");
    }
    let task = store.task(id).unwrap().unwrap();
    assert_eq!(events.last().unwrap().to, task.lifecycle.status);
}

pub fn repeats_of_a_live_alert_attach_and_are_counted(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let id = created(store.offer("disk/db1", "{\"n\":1}", "r", 0).unwrap());
    assert_eq!(
        store.offer("disk/db1", "{\"n\":2}", "r", 10).unwrap(),
        Offered::Attached(id)
    );
    let claim = store.claim("w", 20, MIN).unwrap().unwrap();
    // Still live while running: attaches, does not start a second fix.
    assert_eq!(
        store.offer("disk/db1", "{}", "r", 30).unwrap(),
        Offered::Attached(id)
    );
    let other = created(store.offer("disk/db2", "{}", "r", 30).unwrap());
    assert_ne!(other, id);
    let task = store.task(id).unwrap().unwrap();
    assert_eq!((task.repeats, task.last_seen), (2, 30));
    assert_eq!(claim.alert_json, "{\"n\":1}");
}

/// A host claims only the routes it may run: another route's task waits for a host that can,
/// ready or reclaimable after its lease ran out; no filter claims anything.
pub fn a_claim_for_some_routes_takes_only_their_tasks(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let db = created(store.offer("backup/db1", "{}", "db-backup", 0).unwrap());
    let disk = created(store.offer("disk/web1", "{}", "disk", 10).unwrap());
    let mine = ["disk".to_owned()];
    let claim = store
        .claim_for("web-1", Some(&mine), 20, MIN)
        .unwrap()
        .unwrap();
    assert_eq!(claim.task_id, disk, "the older task is another route's");
    assert_eq!(
        store.claim_for("web-1", Some(&mine), 20, MIN).unwrap(),
        None
    );
    assert_eq!(store.claim_for("web-1", Some(&[]), 20, MIN).unwrap(), None);
    // The disk task's lease runs out: it is reclaimable by its route's hosts only.
    let later = 20 + MIN + 1;
    let theirs = ["db-backup".to_owned()];
    let other = store
        .claim_for("db-1", Some(&theirs), later, MIN)
        .unwrap()
        .unwrap();
    assert_eq!(other.task_id, db);
    assert_eq!(
        store.claim_for("db-1", Some(&theirs), later, MIN).unwrap(),
        None
    );
    let again = store.claim_for("web-2", None, later, MIN).unwrap().unwrap();
    assert_eq!(
        (again.task_id, again.attempt),
        (disk, 2),
        "no filter takes any route"
    );
}

pub fn cooldown_after_a_run_suppresses_with_the_reason(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let id = created(store.offer("vm/7", "{}", "r", 0).unwrap());
    let c = store.claim("w", 0, MIN).unwrap().unwrap();
    store
        .complete(id, c.attempt, &Outcome::Succeeded, MIN)
        .unwrap();
    match store.offer("vm/7", "{}", "r", 2 * MIN).unwrap() {
        Offered::Suppressed { why } => {
            assert!(why.contains(&format!("task {id}")), "{why}");
            assert!(why.contains("done"), "{why}");
            let until = nightwatch_time::rfc3339(11 * MIN);
            assert!(why.contains(&format!("until {until}")), "{why}");
        }
        other => panic!("expected suppression, got {other:?}"),
    }
    let again = created(store.offer("vm/7", "{}", "r", 11 * MIN).unwrap());
    assert_ne!(again, id);
}

pub fn resolve_before_start_cancels(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let id = created(store.offer("a", "{}", "r", 0).unwrap());
    assert_eq!(
        store.resolve("a", 5).unwrap(),
        Resolved::CancelledBeforeStart(id)
    );
    assert_eq!(store.claim("w", 10, MIN).unwrap(), None);
    assert_eq!(store.resolve("a", 6).unwrap(), Resolved::NoTask);
    // A cancelled task never ran, so it starts no cooldown.
    assert!(matches!(
        store.offer("a", "{}", "r", 7).unwrap(),
        Offered::Created(_)
    ));
    assert_event_chain(&*store, id);
}

pub fn resolve_while_running_lets_it_finish(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let id = created(store.offer("a", "{}", "r", 0).unwrap());
    let c = store.claim("w", 0, MIN).unwrap().unwrap();
    assert_eq!(store.resolve("a", 5).unwrap(), Resolved::TooLate(id));
    assert_eq!(
        store
            .complete(id, c.attempt, &Outcome::Succeeded, 9)
            .unwrap(),
        Status::Done
    );
    let events = store.events(id).unwrap();
    assert!(events.iter().any(|e| e.why.contains("letting it finish")));
    assert_event_chain(&*store, id);
}

pub fn flap_that_resolves_within_the_delay_never_runs(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(Policy {
        resolve_delay_ms: 2 * MIN,
        ..policy()
    });
    let flap = created(store.offer("flap", "{}", "r", 0).unwrap());
    assert_eq!(
        store.claim("w", MIN, MIN).unwrap(),
        None,
        "not yet claimable"
    );
    assert_eq!(
        store.resolve("flap", MIN + 1).unwrap(),
        Resolved::CancelledBeforeStart(flap)
    );
    assert_eq!(store.claim("w", 10 * MIN, MIN).unwrap(), None);
    let t = store.task(flap).unwrap().unwrap();
    assert_eq!(
        (t.lifecycle.status, t.lifecycle.attempt),
        (Status::Cancelled, 0)
    );
    // One that stays firing becomes claimable once the delay passes.
    let real = created(store.offer("real", "{}", "r", 0).unwrap());
    assert_eq!(store.claim("w", 2 * MIN - 1, MIN).unwrap(), None);
    assert_eq!(
        store.claim("w", 2 * MIN, MIN).unwrap().unwrap().task_id,
        real
    );
}

pub fn failures_back_off_exponentially_with_cap_and_jitter(backend: &dyn Backend) {
    let p = Policy {
        max_attempts: 6,
        ..policy()
    };
    let place = backend.place();
    let store = place.queue(p.clone());
    let id = created(store.offer("wedged-vm", "{}", "r", 0).unwrap());
    let mut now = 0;
    for attempt in 1..=5 {
        let c = store.claim("w", now, MIN).unwrap().unwrap();
        assert_eq!(c.attempt, attempt);
        store
            .complete(id, attempt, &failed("pause timed out"), now)
            .unwrap();
        let ready = store.task(id).unwrap().unwrap().lifecycle.ready_at;
        let wait = ready - now;
        let full = (1_000i64 << (attempt - 1)).min(4_000);
        assert!(
            wait >= full - full / 2 && wait <= full,
            "attempt {attempt}: waited {wait}, want within [{}, {full}]",
            full - full / 2
        );
        assert_eq!(
            wait,
            machine::backoff(&p, attempt, machine::jitter_for(id, attempt))
        );
        // Not claimable a moment before the retry time: no hammering every 30 s.
        assert_eq!(store.claim("w", ready - 1, MIN).unwrap(), None);
        now = ready;
    }
}

pub fn gives_up_after_max_attempts_and_escalates_exactly_once(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let id = created(store.offer("wedged-vm", "{}", "runbook:vm", 0).unwrap());
    let mut now = 0;
    let mut last = Status::Pending;
    for attempt in 1..=3 {
        let c = store.claim("w", now, MIN).unwrap().unwrap();
        assert_eq!(c.attempt, attempt);
        last = store
            .complete(id, attempt, &failed("control socket hung"), now)
            .unwrap();
        now += 10 * MIN;
    }
    assert_eq!(last, Status::GaveUp);
    assert_eq!(
        store.claim("w", now, MIN).unwrap(),
        None,
        "no fourth attempt"
    );
    let escalations = store.take_escalations(now).unwrap();
    assert_eq!(escalations.len(), 1);
    assert_eq!(escalations[0].task_id, id);
    assert_eq!(escalations[0].attempts, 3);
    assert_eq!(escalations[0].route, "runbook:vm");
    assert_eq!(
        escalations[0].last_error.as_deref(),
        Some("control socket hung")
    );
    assert!(store.take_escalations(now).unwrap().is_empty());
    // A new handle does not escalate it again either.
    drop(store);
    let store = place.queue(policy());
    assert!(store.take_escalations(now).unwrap().is_empty());
    assert_event_chain(&*store, id);
}

pub fn worker_that_vanishes_loses_its_lease_and_the_task_is_reclaimed(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let id = created(store.offer("a", "{}", "r", 0).unwrap());
    let first = store.claim("crashed", 0, MIN).unwrap().unwrap();
    assert_eq!(
        store.claim("w2", MIN - 1, MIN).unwrap(),
        None,
        "lease still held"
    );
    let second = store.claim("w2", MIN, MIN).unwrap().unwrap();
    assert_eq!((second.task_id, second.attempt), (id, first.attempt + 1));
    let why = store.events(id).unwrap().last().unwrap().why.clone();
    assert!(why.contains("expired") && why.contains("crashed"), "{why}");
}

pub fn heartbeat_keeps_the_lease(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    created(store.offer("a", "{}", "r", 0).unwrap());
    let c = store.claim("w", 0, MIN).unwrap().unwrap();
    store.heartbeat(c.task_id, c.attempt, MIN - 1, MIN).unwrap();
    assert_eq!(store.claim("w2", MIN + 10, MIN).unwrap(), None);
    assert!(store.claim("w2", 2 * MIN - 1, MIN).unwrap().is_some());
    // The old worker's heartbeat is now fenced too.
    assert!(matches!(
        store.heartbeat(c.task_id, c.attempt, 2 * MIN, MIN),
        Err(TaskError::Stale { .. })
    ));
}

pub fn stale_completion_is_rejected_and_never_applied(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let id = created(store.offer("a", "{}", "r", 0).unwrap());
    let old = store.claim("slow", 0, MIN).unwrap().unwrap();
    let new = store.claim("w2", MIN, MIN).unwrap().unwrap();
    let before = store.task(id).unwrap().unwrap();
    let events_before = store.events(id).unwrap().len();
    let err = store
        .complete(id, old.attempt, &Outcome::Succeeded, MIN + 5)
        .unwrap_err();
    match &err {
        TaskError::Stale {
            attempt, current, ..
        } => assert_eq!((*attempt, *current), (1, 2)),
        other => panic!("expected Stale, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains("not applied"), "{message}");
    assert_eq!(store.task(id).unwrap().unwrap(), before);
    assert_eq!(store.events(id).unwrap().len(), events_before);
    store
        .complete(id, new.attempt, &Outcome::Succeeded, MIN + 6)
        .unwrap();
    // And after it finished, a duplicate completion is refused as well.
    assert!(matches!(
        store.complete(id, new.attempt, &Outcome::Succeeded, MIN + 7),
        Err(TaskError::Stale { .. })
    ));
    assert!(matches!(
        store.complete(999_999, 1, &Outcome::Succeeded, 0),
        Err(TaskError::NotFound(999_999))
    ));
}

pub fn last_attempt_lease_expiry_gives_up_instead_of_running_again(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(Policy {
        max_attempts: 1,
        ..policy()
    });
    let id = created(store.offer("a", "{}", "r", 0).unwrap());
    store.claim("crashed", 0, MIN).unwrap().unwrap();
    assert_eq!(store.claim("w2", MIN, MIN).unwrap(), None);
    let t = store.task(id).unwrap().unwrap();
    assert_eq!(t.lifecycle.status, Status::GaveUp);
    assert_eq!(store.take_escalations(MIN).unwrap().len(), 1);
}

pub fn reopening_the_store_keeps_tasks_leases_and_events(backend: &dyn Backend) {
    let place = backend.place();
    let (running, pending, done);
    {
        let store = place.queue(policy());
        running = created(store.offer("a", "{}", "r", 0).unwrap());
        pending = created(store.offer("b", "{}", "r", 1).unwrap());
        done = created(store.offer("c", "{}", "r", 2).unwrap());
        let c = store.claim("w", 3, MIN).unwrap().unwrap();
        assert_eq!(c.task_id, running);
        let d = store.claim("w", 3, MIN).unwrap().unwrap();
        assert_eq!(d.task_id, pending);
        store.complete(pending, 1, &failed("x"), 4).unwrap();
        let e = store.claim("w", 4, MIN).unwrap().unwrap();
        assert_eq!(e.task_id, done);
        store.complete(done, 1, &Outcome::Succeeded, 5).unwrap();
    }
    let store = place.queue(policy());
    let tasks = store.tasks(&TaskFilter::default()).unwrap();
    assert_eq!(tasks.len(), 3);
    assert_eq!(tasks[0].lifecycle.lease_until, Some(3 + MIN));
    assert_eq!(tasks[1].lifecycle.status, Status::Pending);
    assert_eq!(tasks[1].lifecycle.attempt, 1);
    assert_eq!(tasks[2].lifecycle.status, Status::Done);
    assert_eq!(store.events(done).unwrap().len(), 3);
    // The lease survives: not claimable until it expires, then reclaimed as attempt 2 (after
    // the retry of `pending`, which became ready earlier).
    assert_eq!(store.claim("w2", 10, MIN).unwrap().map(|c| c.task_id), None);
    let mut reclaimed = Vec::new();
    while let Some(c) = store.claim("w2", 3 + MIN, MIN).unwrap() {
        reclaimed.push((c.task_id, c.attempt));
    }
    assert_eq!(reclaimed, [(pending, 2), (running, 2)]);
    let filtered = store
        .tasks(&TaskFilter {
            status: Some(Status::Done),
            ..TaskFilter::default()
        })
        .unwrap();
    assert_eq!(filtered.iter().map(|t| t.id).collect::<Vec<_>>(), [done]);
}

pub fn every_transition_has_an_event(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let a = created(store.offer("a", "{}", "r", 0).unwrap());
    let b = created(store.offer("b", "{}", "r", 0).unwrap());
    let c = created(store.offer("c", "{}", "r", 0).unwrap());
    store.resolve("c", 1).unwrap();
    let mut now = 1;
    for _ in 0..3 {
        now += 10 * MIN;
        while let Some(claim) = store.claim("w", now, MIN).unwrap() {
            let outcome = if claim.task_id == a {
                Outcome::Succeeded
            } else {
                failed("nope")
            };
            store
                .complete(claim.task_id, claim.attempt, &outcome, now)
                .unwrap();
        }
    }
    store.take_escalations(now).unwrap();
    let tos = |id| {
        store
            .events(id)
            .unwrap()
            .iter()
            .map(|e| e.to)
            .collect::<Vec<_>>()
    };
    use Status::*;
    assert_eq!(tos(a), [Pending, Running, Done]);
    assert_eq!(
        tos(b),
        [
            Pending, Running, Pending, Running, Pending, Running, GaveUp, GaveUp
        ]
    );
    assert_eq!(tos(c), [Pending, Cancelled]);
    for id in [a, b, c] {
        assert_event_chain(&*store, id);
    }
}

fn process(pgid: i64) -> RunbookProcess {
    RunbookProcess {
        pgid,
        leader_started: 100,
        daemon_pid: 7,
        daemon_started: 50,
        boot: "b".into(),
    }
}

/// Where a runbook runs is noted for the attempt that runs it, fenced like a heartbeat, kept
/// across reopening, and forgotten when the task is claimed again or ends.
pub fn a_runbooks_process_is_noted_for_its_attempt_only(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let id = created(store.offer("kuma/1", "{}", "r", 0).unwrap());
    let first = store.claim("w1", 0, 1_000).unwrap().unwrap();
    store
        .note_runbook(id, first.attempt, &process(4242))
        .unwrap();
    let stale = store.note_runbook(id, first.attempt + 1, &process(1));
    assert!(matches!(stale, Err(TaskError::Stale { .. })), "{stale:?}");
    drop(store);

    let store = place.queue(policy());
    let noted = store.noted_runbooks().unwrap();
    assert_eq!(noted.len(), 1);
    assert_eq!((noted[0].task_id, noted[0].attempt), (id, first.attempt));
    assert_eq!(noted[0].process, process(4242));

    // The lease expires and another worker takes the task: the old note is the past.
    let second = store.claim("w2", 5_000, 1_000).unwrap().unwrap();
    assert_eq!(second.attempt, first.attempt + 1);
    assert!(store.noted_runbooks().unwrap().is_empty());
    store
        .note_runbook(id, second.attempt, &process(5151))
        .unwrap();
    store
        .complete(id, second.attempt, &Outcome::Succeeded, 5_100)
        .unwrap();
    assert!(
        store.noted_runbooks().unwrap().is_empty(),
        "a finished task has no runbook running"
    );
}

fn offer_op(identity: &str, max_per_hour: Option<u32>, arrival: i64) -> QueueOp<'_> {
    offer_of(identity, max_per_hour, arrival, false)
}

/// The same offer made again for its arrival (its first answer lost to a crash).
fn offer_again(identity: &str, arrival: i64) -> QueueOp<'_> {
    offer_of(identity, None, arrival, true)
}

fn offer_of(identity: &str, max_per_hour: Option<u32>, arrival: i64, again: bool) -> QueueOp<'_> {
    QueueOp::Offer(Offer {
        identity,
        alert_json: "{}",
        route: "disk",
        max_per_hour,
        arrival: Some(arrival),
        again,
    })
}

/// An intake batch is one `apply`: each op sees the ones before it, so two arrivals of one
/// alert in a batch make one task, and the hourly limit counts the tasks made earlier in it.
pub fn a_batch_of_ops_sees_its_own_earlier_ops_and_the_hourly_limit_counts_them(
    backend: &dyn Backend,
) {
    let place = backend.place();
    let store = place.queue(policy());
    let ops = [
        offer_op("a", Some(2), 1),
        offer_op("a", Some(2), 2),
        offer_op("b", Some(2), 3),
        offer_op("c", Some(2), 4),
        QueueOp::Resolve { identity: "b" },
    ];
    let answers = store.apply(&ops, 0).unwrap();
    let task_a = match answers[0] {
        Answer::Offered(Offered::Created(id)) => id,
        ref other => panic!("{other:?}"),
    };
    assert_eq!(answers[1], Answer::Offered(Offered::Attached(task_a)));
    let task_b = match answers[2] {
        Answer::Offered(Offered::Created(id)) => id,
        ref other => panic!("{other:?}"),
    };
    match &answers[3] {
        Answer::Offered(Offered::Throttled { why }) => {
            assert!(
                why.contains("started 2 task(s) in the last hour, its limit is 2"),
                "{why}"
            )
        }
        other => panic!("the third new task in the hour is throttled: {other:?}"),
    }
    assert_eq!(
        answers[4],
        Answer::Resolved(Resolved::CancelledBeforeStart(task_b))
    );
    // An hour later the limit has room again; a repeat of a live alert is never throttled.
    let later = store
        .apply(
            &[offer_op("c", Some(2), 5), offer_op("a", Some(0), 6)],
            61 * MIN,
        )
        .unwrap();
    assert!(
        matches!(later[0], Answer::Offered(Offered::Created(_))),
        "{later:?}"
    );
    assert_eq!(later[1], Answer::Offered(Offered::Attached(task_a)));
}

/// An arrival offered again (its first answer lost to a crash) gets the same answer, and
/// changes nothing: no second task, no second count.
pub fn offering_the_same_arrival_again_answers_as_the_first_time_and_changes_nothing(
    backend: &dyn Backend,
) {
    let place = backend.place();
    let store = place.queue(policy());
    let first = store.apply(&[offer_op("a", None, 7)], 0).unwrap();
    let again = store.apply(&[offer_again("a", 7)], 1_000).unwrap();
    assert_eq!(first, again);
    let task = match first[0] {
        Answer::Offered(Offered::Created(id)) => id,
        ref other => panic!("{other:?}"),
    };
    let repeat = store.apply(&[offer_op("a", None, 8)], 2_000).unwrap();
    let repeat_again = store.apply(&[offer_again("a", 8)], 3_000).unwrap();
    assert_eq!(repeat, [Answer::Offered(Offered::Attached(task))]);
    assert_eq!(repeat_again, repeat);
    let stored = store.task(task).unwrap().unwrap();
    assert_eq!((stored.repeats, stored.last_seen), (1, 2_000));
    assert_eq!(store.tasks(&TaskFilter::default()).unwrap().len(), 1);
}

/// An identity's tasks are found whether live or finished (the stores may index the two
/// apart): by the filter, alone or with a status, and an arrival offered again after its task
/// finished still gets its first answer.
pub fn an_identitys_tasks_are_found_live_or_finished(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let first = store.apply(&[offer_op("vm/9", None, 1)], 0).unwrap();
    let finished = match first[0] {
        Answer::Offered(Offered::Created(id)) => id,
        ref other => panic!("{other:?}"),
    };
    created(store.offer("vm/10", "{}", "r", 0).unwrap());
    let c = store.claim("w", 0, MIN).unwrap().unwrap();
    assert_eq!(c.task_id, finished);
    store
        .complete(finished, c.attempt, &Outcome::Succeeded, MIN)
        .unwrap();
    assert_eq!(
        store.apply(&[offer_again("vm/9", 1)], 2 * MIN).unwrap(),
        first,
        "the finished task is still the arrival's answer"
    );
    let live = created(store.offer("vm/9", "{}", "r", 11 * MIN).unwrap());
    let of = |status: Option<Status>| -> Vec<i64> {
        store
            .tasks(&TaskFilter {
                identity: Some("vm/9".into()),
                status,
                ..TaskFilter::default()
            })
            .unwrap()
            .iter()
            .map(|t| t.id)
            .collect()
    };
    assert_eq!(of(None), [finished, live]);
    assert_eq!(of(Some(Status::Done)), [finished]);
    assert_eq!(of(Some(Status::Pending)), [live]);
    assert_eq!(of(Some(Status::Running)), Vec::<i64>::new());
}

/// Hostile text in an identity, a route, an alert and a runbook's error (a NUL, the escape a
/// store may use for it) is kept exactly and found by it; identities that differ only there
/// stay apart.
pub fn hostile_text_in_identities_and_errors_is_kept_exactly(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let identity = format!("vm/{}", crate::fixtures::HOSTILE);
    let alert = serde_json::json!({ "title": crate::fixtures::HOSTILE }).to_string();
    let first = created(
        store
            .offer(&identity, &alert, crate::fixtures::HOSTILE, 0)
            .unwrap(),
    );
    let near = created(store.offer("vm/a\u{FFFF}0b", "{}", "r", 0).unwrap());
    let nul = created(store.offer("vm/a\0b", "{}", "r", 0).unwrap());
    assert_eq!(
        HashSet::from([first, near, nul]).len(),
        3,
        "identities that differ only in a NUL or the escape are different tasks"
    );
    match store.offer(&identity, "{}", "r", 1).unwrap() {
        Offered::Attached(id) => assert_eq!(id, first),
        other => panic!("a repeat attaches to its task: {other:?}"),
    }
    let task = store.task(first).unwrap().unwrap();
    assert_eq!(
        (
            task.identity.as_str(),
            task.alert_json.as_str(),
            task.route.as_str()
        ),
        (identity.as_str(), alert.as_str(), crate::fixtures::HOSTILE)
    );
    let worker = format!("w{}", crate::fixtures::HOSTILE);
    let claim = store
        .claim_for(
            &worker,
            Some(&[crate::fixtures::HOSTILE.to_string()]),
            2,
            MIN,
        )
        .unwrap()
        .unwrap();
    assert_eq!(claim.task_id, first);
    store
        .complete(first, claim.attempt, &failed(crate::fixtures::HOSTILE), 3)
        .unwrap();
    let task = store.task(first).unwrap().unwrap();
    assert_eq!(task.lifecycle.worker.as_deref(), Some(worker.as_str()));
    assert_eq!(
        task.lifecycle.last_error.as_deref(),
        Some(crate::fixtures::HOSTILE)
    );
    let found: Vec<i64> = store
        .tasks(&TaskFilter {
            identity: Some(identity.clone()),
            ..TaskFilter::default()
        })
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(found, [first]);
    assert!(
        store
            .events(first)
            .unwrap()
            .iter()
            .all(|e| !e.why.is_empty())
    );
    assert_eq!(
        store.resolve("vm/a\0b", 4).unwrap(),
        Resolved::CancelledBeforeStart(nul)
    );
}

/// The gauges' counts are kept as tasks change (not counted at each scrape): after a long
/// mixed run of offers, claims, results, resolves and escalations they equal a count of the
/// tasks themselves.
pub fn the_kept_counts_equal_a_count_of_the_tasks_after_any_run(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
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
    let mut counted: HashMap<Status, i64> = HashMap::new();
    for t in store.tasks(&TaskFilter::default()).unwrap() {
        *counted.entry(t.lifecycle.status).or_default() += 1;
    }
    let mut counted: Vec<(Status, i64)> = counted.into_iter().collect();
    counted.sort_by_key(|(s, _)| s.as_str());
    let mut kept = store.counts().unwrap();
    kept.sort_by_key(|(s, _)| s.as_str());
    assert_eq!(kept, counted);
    assert!(
        kept.len() >= 3,
        "the run reached several statuses: {kept:?}"
    );
}

/// A window's tasks: those created or finished in it and those live then, oldest first, at
/// most the newest `limit`; a task that ended before the window is left out.
pub fn a_windows_tasks_are_the_ones_active_in_it_newest_kept_under_the_limit(
    backend: &dyn Backend,
) {
    let place = backend.place();
    let store = place.queue(policy());
    // Ended before the window: created at 0, done at 10.
    let early = created(store.offer("early", "{}", "r", 0).unwrap());
    let claim = store.claim("w", 0, 5_000).unwrap().unwrap();
    store
        .complete(claim.task_id, claim.attempt, &Outcome::Succeeded, 10)
        .unwrap();
    // Live since before the window, then three created in it.
    let live = created(store.offer("live", "{}", "r", 50).unwrap());
    let inside: Vec<i64> = (0..3)
        .map(|i| {
            created(
                store
                    .offer(&format!("in{i}"), "{}", "r", 1_000 + i)
                    .unwrap(),
            )
        })
        .collect();
    let ids = |tasks: Vec<Task>| tasks.iter().map(|t| t.id).collect::<Vec<_>>();
    let all = ids(store.active_between(500, 2_000, None, 10).unwrap());
    assert_eq!(all, [live, inside[0], inside[1], inside[2]]);
    assert!(!all.contains(&early));
    assert_eq!(
        ids(store.active_between(500, 2_000, None, 2).unwrap()),
        [inside[1], inside[2]],
        "the newest two, oldest first"
    );
    assert_eq!(ids(store.active_between(0, 20, None, 10).unwrap()), [early]);
    // The page before the newest two: what is older than its oldest, each once.
    assert_eq!(
        ids(store
            .active_between(500, 2_000, Some(inside[1]), 2)
            .unwrap()),
        [live, inside[0]]
    );
    assert!(
        store
            .active_between(500, 2_000, Some(live), 2)
            .unwrap()
            .is_empty()
    );
}

pub fn tasks_page_by_cursor_and_filter(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let made: Vec<i64> = (0..7)
        .map(|i| created(store.offer(&format!("page/{i}"), "{}", "r", i).unwrap()))
        .collect();
    store.resolve("page/3", 10).unwrap();
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .tasks(&TaskFilter {
                after,
                limit: Some(3),
                ..TaskFilter::default()
            })
            .unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 3);
        after = page.last().map(|t| t.id);
        seen.extend(page.into_iter().map(|t| t.id));
    }
    assert_eq!(seen, made, "every task once, oldest first");
    let one = store
        .tasks(&TaskFilter {
            identity: Some("page/5".into()),
            ..TaskFilter::default()
        })
        .unwrap();
    assert_eq!(one.iter().map(|t| t.id).collect::<Vec<_>>(), [made[5]]);
    let cancelled = store
        .tasks(&TaskFilter {
            status: Some(Status::Cancelled),
            ..TaskFilter::default()
        })
        .unwrap();
    assert_eq!(
        cancelled.iter().map(|t| t.id).collect::<Vec<_>>(),
        [made[3]]
    );
    assert_eq!(store.oldest_ready(100).unwrap(), Some(0));
    assert_eq!(store.task(made[6] + 1_000).unwrap(), None);
    // By the host whose worker took them: db-1's are not db-10's, and a prefix is text, not
    // a pattern.
    for worker in ["db-1-worker-0", "db-10-worker-0", "db_1-worker-0"] {
        store.claim(worker, 100, 60_000).unwrap().unwrap();
    }
    let by = |prefix: &str| -> Vec<(i64, Option<String>)> {
        store
            .tasks(&TaskFilter {
                worker_prefix: Some(prefix.into()),
                ..TaskFilter::default()
            })
            .unwrap()
            .into_iter()
            .map(|t| (t.id, t.lifecycle.worker))
            .collect()
    };
    assert_eq!(
        by("db-1-worker-"),
        [(made[0], Some("db-1-worker-0".into()))]
    );
    assert_eq!(
        by("db-10-worker-"),
        [(made[1], Some("db-10-worker-0".into()))]
    );
    assert_eq!(
        by("db_1-worker-"),
        [(made[2], Some("db_1-worker-0".into()))]
    );
    assert_eq!(by("db%"), []);
    assert_eq!(by("db-").len(), 2);
}

/// One host's tasks (those its workers took, named by a shared prefix) page oldest first
/// across all of its workers, interleaved with other hosts' in id order, each once, alone or
/// with a status; a prefix is text (`%`, `_` and a backslash are themselves), and a prefix between
/// two hosts' names takes neither.
pub fn a_hosts_tasks_page_oldest_first_across_its_workers(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.queue(policy());
    let hosts = ["db-1", "db-10", "db%1", "db_1", "d\\b", "dé-1"];
    let mut took: Vec<(i64, String)> = Vec::new();
    for n in 0..48 {
        let identity = format!("host-page/{n}");
        created(store.offer(&identity, "{}", "r", 0).unwrap());
        // Hosts and their workers take turns, so each host's tasks are spread out by id.
        let worker = format!(
            "{}-worker-{}",
            hosts[n % hosts.len()],
            (n / hosts.len()) % 3
        );
        let claim = store.claim(&worker, 10, 60_000).unwrap().unwrap();
        if n % 4 == 0 {
            store
                .complete(claim.task_id, claim.attempt, &Outcome::Succeeded, 11)
                .unwrap();
        }
        took.push((claim.task_id, worker));
    }
    for host in hosts {
        let prefix = format!("{host}-worker-");
        let want: Vec<i64> = took
            .iter()
            .filter(|(_, w)| w.starts_with(&prefix))
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(want.len(), 8);
        for size in [1, 3, 100] {
            let mut seen = Vec::new();
            let mut after = None;
            loop {
                let page = store
                    .tasks(&TaskFilter {
                        worker_prefix: Some(prefix.clone()),
                        after,
                        limit: Some(size),
                        ..TaskFilter::default()
                    })
                    .unwrap();
                assert!(page.len() <= size);
                seen.extend(page.iter().map(|t| t.id));
                match page.last() {
                    Some(last) if page.len() == size => after = Some(last.id),
                    _ => break,
                }
                assert!(
                    seen.len() <= want.len(),
                    "{host}: pages of {size} repeat tasks"
                );
            }
            assert_eq!(seen, want, "{host}'s tasks in pages of {size}");
        }
        let succeeded: Vec<i64> = store
            .tasks(&TaskFilter {
                worker_prefix: Some(prefix.clone()),
                status: Some(Status::Done),
                ..TaskFilter::default()
            })
            .unwrap()
            .iter()
            .map(|t| t.id)
            .collect();
        let want_succeeded: Vec<i64> = took
            .iter()
            .enumerate()
            .filter(|(n, (_, w))| n % 4 == 0 && w.starts_with(&prefix))
            .map(|(_, (id, _))| *id)
            .collect();
        assert_eq!(succeeded, want_succeeded, "{host}'s finished tasks");
    }
    let by = |prefix: &str| {
        store
            .tasks(&TaskFilter {
                worker_prefix: Some(prefix.into()),
                ..TaskFilter::default()
            })
            .unwrap()
            .len()
    };
    assert_eq!(by("db-1-worker-1"), 3, "a whole worker's name");
    assert_eq!(by("db-1-worker-0"), 3);
    assert_eq!(by("db-1-"), 8, "db-1's only, not db-10's");
    assert_eq!(by("db-"), 16);
    assert_eq!(by("db-0"), 0, "between two hosts' names");
    assert_eq!(by("db"), 32);
    assert_eq!(by("dé"), 8);
    assert_eq!(by("e"), 0, "after every name");
}

/// A reader following new tasks by id (`after` the last it saw) while several handles create
/// tasks at once (hosts, in a fleet) never passes a task that commits later: every task is read
/// exactly once.
pub fn a_reader_following_new_tasks_by_cursor_misses_none(backend: &dyn Backend) {
    const WRITERS: usize = 4;
    const BATCHES: usize = 25;
    let place: Arc<dyn Place> = Arc::from(backend.place());
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let place = place.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let store = place.queue(Policy::default());
                for b in 0..BATCHES {
                    let identities: Vec<String> =
                        (0..3).map(|i| format!("follow/{w}/{b}/{i}")).collect();
                    let ops: Vec<QueueOp<'_>> = identities
                        .iter()
                        .map(|identity| QueueOp::Offer(Offer::plain(identity, "{}", "r")))
                        .collect();
                    store.apply(&ops, 0).unwrap();
                }
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            })
        })
        .collect();
    let reader = place.queue(Policy::default());
    let mut seen: Vec<i64> = Vec::new();
    let mut after = None;
    loop {
        let finished = done.load(std::sync::atomic::Ordering::SeqCst) == WRITERS;
        let page = reader
            .tasks(&TaskFilter {
                after,
                limit: Some(7),
                ..TaskFilter::default()
            })
            .unwrap();
        if let Some(last) = page.last() {
            after = Some(last.id);
        }
        let empty = page.is_empty();
        seen.extend(page.iter().map(|t| t.id));
        if finished && empty {
            break;
        }
    }
    for w in writers {
        w.join().unwrap();
    }
    let all: Vec<i64> = reader
        .tasks(&TaskFilter::default())
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(all.len(), WRITERS * BATCHES * 3);
    assert_eq!(
        seen, all,
        "the reader saw every task once, in id order, though they were created at once"
    );
}

/// Several workers, each with its own handle, never share a task.
pub fn workers_with_their_own_handles_claim_each_task_exactly_once(backend: &dyn Backend) {
    const TASKS: usize = 120;
    const WORKERS: usize = 6;
    let place: Arc<dyn Place> = Arc::from(backend.place());
    let store = place.queue(Policy::default());
    for i in 0..TASKS {
        created(store.offer(&format!("alert/{i}"), "{}", "r", 0).unwrap());
    }
    // Held by someone right now, and every claim ever handed out.
    let held = Arc::new(Mutex::new(HashSet::new()));
    let claims = Arc::new(Mutex::new(Vec::new()));
    let start = Arc::new(Barrier::new(WORKERS));
    let threads: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (place, held, claims, start) = (
                Arc::clone(&place),
                Arc::clone(&held),
                Arc::clone(&claims),
                Arc::clone(&start),
            );
            std::thread::spawn(move || {
                let store = place.queue(Policy::default());
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
    for t in store.tasks(&TaskFilter::default()).unwrap() {
        assert_eq!(t.lifecycle.status, Status::Done);
        let done = store.events(t.id).unwrap();
        let done = done.iter().filter(|e| e.to == Status::Done).count();
        assert_eq!(done, 1, "task {} completed {done} times", t.id);
    }
}

/// Daemons offering the same alert at the same moment, each with its own handle: one task,
/// every other offer counted on it.
pub fn offers_of_one_identity_at_once_make_exactly_one_task(backend: &dyn Backend) {
    const DAEMONS: usize = 8;
    let place: Arc<dyn Place> = Arc::from(backend.place());
    let start = Arc::new(Barrier::new(DAEMONS));
    let threads: Vec<_> = (0..DAEMONS)
        .map(|_| {
            let (place, start) = (Arc::clone(&place), Arc::clone(&start));
            std::thread::spawn(move || {
                let store = place.queue(policy());
                start.wait();
                store.offer("disk-full/db1", "{}", "r", 0).unwrap()
            })
        })
        .collect();
    let answers: Vec<Offered> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let made: Vec<i64> = answers
        .iter()
        .filter_map(|a| match a {
            Offered::Created(id) => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(made.len(), 1, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|a| matches!(a, Offered::Created(_)) || *a == Offered::Attached(made[0])),
        "{answers:?}"
    );
    let store = place.queue(policy());
    let tasks = store.tasks(&TaskFilter::default()).unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].repeats, DAEMONS as u32 - 1);
}

/// Daemons creating tasks for one route at the same moment together stay within the route's
/// hourly limit.
pub fn offers_at_once_never_pass_a_routes_hourly_limit(backend: &dyn Backend) {
    const DAEMONS: usize = 8;
    const LIMIT: u32 = 3;
    let place: Arc<dyn Place> = Arc::from(backend.place());
    let start = Arc::new(Barrier::new(DAEMONS));
    let threads: Vec<_> = (0..DAEMONS)
        .map(|d| {
            let (place, start) = (Arc::clone(&place), Arc::clone(&start));
            std::thread::spawn(move || {
                let store = place.queue(policy());
                let identity = format!("host/{d}");
                let op = QueueOp::Offer(Offer {
                    identity: &identity,
                    alert_json: "{}",
                    route: "disk",
                    max_per_hour: Some(LIMIT),
                    arrival: None,
                    again: false,
                });
                start.wait();
                store.apply(&[op], 0).unwrap()
            })
        })
        .collect();
    let answers: Vec<Answer> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let made = answers
        .iter()
        .filter(|a| matches!(a, Answer::Offered(Offered::Created(_))))
        .count();
    let throttled = answers
        .iter()
        .filter(|a| matches!(a, Answer::Offered(Offered::Throttled { .. })))
        .count();
    assert_eq!(
        (made, throttled),
        (LIMIT as usize, DAEMONS - LIMIT as usize)
    );
    let store = place.queue(policy());
    assert_eq!(
        store.tasks(&TaskFilter::default()).unwrap().len(),
        LIMIT as usize
    );
}

pub use crate::interleavings::{
    a_batch_answers_as_its_ops_one_at_a_time, queue_invariants_hold_under_any_interleaving,
};
