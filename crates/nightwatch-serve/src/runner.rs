//! Workers: claim a task, put its runbook through the gate, run it with the alert, and record
//! how it went. Plus the housekeeping thread (escalations, unrecorded arrivals, the janitor)
//! and, in a fleet, the thread that ships the ledger to the fleet store.
//!
//! A runbook is an action like any other: the dispatcher proposes `runbook` with the route
//! and the command, policy decides, and the decision is in the ledger before anything runs.
//! Allowed, it runs in its own process group with the alert as JSON on stdin and as
//! `NIGHTWATCH_*` variables, so every tool call the agent makes through its hooks carries the
//! session, `triggered_by` and `alert_id`. The lease is renewed while it runs; a worker that
//! loses its lease kills the runbook and writes nothing, because its completion would be
//! refused (fenced) anyway.
//!
//! A runbook never runs twice at once, even across a crash: it is killed when the daemon
//! thread that started it dies (`PR_SET_PDEATHSIG`), where it runs is noted with its attempt,
//! and a daemon that starts after one died stops whatever is left of the dead one's runbooks
//! (their whole process group) before any worker claims a task, recording what it stopped and
//! ending the attempt as interrupted so the task runs again ([`stop_orphaned_runbooks`]).

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nightwatch_core::{Action, Actor, ActorKind, Context, Tool, Verdict};
use nightwatch_gate::{Dispatch, Event, Proposal, Report};
use nightwatch_intake::Alert;
use nightwatch_ledger::{Outputs, Record, RecordContext, event};
use nightwatch_store::{Claim, TaskError};
use nightwatch_tasks::{Outcome, Status};
use serde_json::{Value, json};

use crate::config::Route;
use crate::dispatch::task_name;
use crate::route::{alert_host, alert_id, triggered_by};
use crate::{Daemon, ServeError};

/// How long a running runbook may go on after shutdown begins before it is stopped (and
/// retried after the restart).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// Bytes of a runbook's stdout and of its stderr kept for the record.
const OUTPUT_CAP: usize = 64 * 1024;

/// How `host`'s workers' names begin (`<host>-worker-<n>`): a task's `worker` says which
/// host claimed it, and `/api/tasks?host=` keeps the tasks whose worker is one of `host`'s.
pub fn workers_of(host: &str) -> String {
    format!("{host}-worker-")
}

/// Starts the workers and the housekeeping thread, once what a dead daemon left running is
/// stopped.
pub fn start(daemon: &Arc<Daemon>) -> Vec<JoinHandle<()>> {
    stop_orphaned_runbooks(daemon);
    let mut threads = Vec::new();
    for n in 0..daemon.config.queue.workers {
        let d = daemon.clone();
        let name = format!(
            "{}{n}",
            workers_of(&d.edges.host().unwrap_or_else(|| "serve".into()))
        );
        threads.push(
            std::thread::Builder::new()
                .name(format!("worker-{n}"))
                .spawn(move || work(&d, &name))
                .expect("a worker thread starts"),
        );
    }
    let d = daemon.clone();
    threads.push(
        std::thread::Builder::new()
            .name("housekeeping".into())
            .spawn(move || housekeeping(&d))
            .expect("the housekeeping thread starts"),
    );
    match daemon.tasks.ready_signal() {
        Ok(Some(signal)) => {
            let d = daemon.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("listen".into())
                    .spawn(move || listen_for_ready(&d, signal))
                    .expect("the listening thread starts"),
            );
        }
        Ok(None) => {}
        Err(e) => tracing::warn!(
            "cannot hear other hosts' word of new tasks (the workers poll instead): {e}"
        ),
    }
    if daemon.fleet.is_some() {
        // Apart from housekeeping, whose queue work waits on the fleet's database too:
        // shipping goes on whatever else is slow.
        let d = daemon.clone();
        threads.push(
            std::thread::Builder::new()
                .name("ship".into())
                .spawn(move || crate::fleet::ship_while_running(&d))
                .expect("the shipping thread starts"),
        );
    }
    let d = daemon.clone();
    threads.push(
        std::thread::Builder::new()
            .name("activity".into())
            .spawn(move || follow_activity(&d))
            .expect("the activity thread starts"),
    );
    threads
}

/// Wakes the idle workers whenever another process sharing the queue (another host's daemon)
/// says tasks became claimable, instead of leaving them to their next poll. A lost connection
/// is logged once and listened for again; the workers poll meanwhile.
fn listen_for_ready(daemon: &Daemon, mut signal: Box<dyn nightwatch_store::ReadySignal>) {
    let mut failing = false;
    while !daemon.is_shutting_down() {
        match signal.wait(Duration::from_secs(1)) {
            Ok(true) => daemon.wake_workers(),
            Ok(false) => {}
            Err(e) => {
                if !failing {
                    tracing::warn!(
                        "lost the word of new tasks from other hosts (the workers poll meanwhile): {e}"
                    );
                    failing = true;
                }
                std::thread::sleep(Duration::from_secs(2));
                if let Ok(Some(again)) = daemon.tasks.ready_signal() {
                    tracing::info!("hearing other hosts' word of new tasks again");
                    signal = again;
                    failing = false;
                }
            }
        }
    }
}

/// Follows container activity for the janitor while the daemon runs, in short spans so a
/// shutdown is not kept waiting. A failure is logged once per outage and retried with backoff.
fn follow_activity(daemon: &Daemon) {
    const SPAN: Duration = Duration::from_secs(5);
    let mut failures: u32 = 0;
    while !daemon.is_shutting_down() {
        match daemon.edges.follow_activity(SPAN) {
            None => return,
            Some(Ok(_)) => {
                if failures > 0 {
                    tracing::info!("following container activity again");
                }
                failures = 0;
            }
            Some(Err(why)) => {
                failures = failures.saturating_add(1);
                if failures == 1 {
                    tracing::warn!(
                        "container activity cannot be followed (the janitor may miss use of a container): {why}"
                    );
                }
                let wait = nightwatch_time::backoff(
                    Duration::from_secs(1),
                    Duration::from_secs(60),
                    failures,
                    0.0,
                );
                let until = std::time::Instant::now() + wait;
                while std::time::Instant::now() < until && !daemon.is_shutting_down() {
                    std::thread::sleep(Duration::from_millis(250));
                }
            }
        }
    }
}

fn work(daemon: &Daemon, worker: &str) {
    let _alive = Alive::count(&daemon.workers_alive);
    let lease_ms = ms(daemon.config.queue.lease);
    // In a fleet the queue holds every host's tasks: this host claims only the routes it has
    // and may run here. Alone, it claims everything (a route since removed still runs, or fails
    // with its reason, rather than waiting silently).
    let routes: Option<Vec<String>> = daemon.fleet.as_ref().map(|fleet| {
        daemon
            .config
            .routes
            .iter()
            .filter(|route| route.runs_on(&fleet.host))
            .map(|route| route.id.clone())
            .collect()
    });
    while !daemon.is_shutting_down() {
        match daemon
            .tasks
            .claim_for(worker, routes.as_deref(), daemon.now_ms(), lease_ms)
        {
            Ok(Some(claim)) => {
                daemon.metrics.claimed();
                run_claim_surviving_panics(daemon, worker, claim);
            }
            Ok(None) => daemon.wait_for_work(Duration::from_millis(500)),
            Err(e) => {
                tracing::error!("{worker} cannot claim: {e}");
                daemon.wait_for_work(Duration::from_secs(2));
            }
        }
    }
}

/// Counts a worker as alive until it ends, however it ends (a panic unwinds through it).
struct Alive<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Alive<'a> {
    fn count(alive: &'a std::sync::atomic::AtomicUsize) -> Alive<'a> {
        alive.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Alive(alive)
    }
}

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Runs one claim; a panic while handling it is caught, recorded, and ends the attempt as
/// failed (so the queue retries it or gives it up), and the worker goes on with the next task.
fn run_claim_surviving_panics(daemon: &Daemon, worker: &str, claim: Claim) {
    let (task, attempt) = (claim.task_id, claim.attempt);
    let handled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_claim(daemon, worker, claim)
    }));
    let Err(panic) = handled else {
        return;
    };
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic without a message".to_owned());
    let why = format!("{worker} panicked while handling task {task}: {message}");
    tracing::error!("{why}");
    let recorded = daemon.engine().record(Event::InternalError {
        actor: Actor::new(ActorKind::Dispatcher, "nightwatch-serve"),
        about: "runbook".into(),
        context: Context {
            task: Some(task_name(task)),
            ..Context::default()
        },
        why: why.clone(),
    });
    if let Err(e) = recorded {
        tracing::error!("task {task}: the panic could not be recorded: {e}");
    }
    finish(daemon, task, attempt, &Outcome::Failed { error: why }, None);
}

/// How often, at most, the housekeeping thread looks for tasks that gave up.
const ESCALATION_LOOK_EVERY: Duration = Duration::from_millis(250);

fn housekeeping(daemon: &Daemon) {
    let mut last_catch_up = Instant::now();
    let mut decisions = DecisionTail::new(daemon);
    let mut last_count = Instant::now();
    let mut next_sweep = daemon
        .config
        .janitor_every
        .map(|every| Instant::now() + every);
    let mut last_escalation_look: Option<Instant> = None;
    while !daemon.is_shutting_down() {
        // Every routed batch wakes this thread, yet only a worker's result or a lapsed lease
        // makes a task give up: looking four times a second at most keeps a fleet's shared
        // database from a transaction per batch, and a person hears within a second.
        if last_escalation_look.is_none_or(|at| at.elapsed() >= ESCALATION_LOOK_EVERY) {
            last_escalation_look = Some(Instant::now());
            if let Err(e) = escalate_gave_up(daemon) {
                tracing::error!("escalations: {e}");
            }
        }
        // Woken by every routed batch under load: the counter reads the ledger at most once a
        // second (it costs a statement compiled again for each new position).
        if last_count.elapsed() >= Duration::from_secs(1) {
            last_count = Instant::now();
            decisions.count_new(daemon);
        }
        if last_catch_up.elapsed() >= Duration::from_secs(5) {
            last_catch_up = Instant::now();
            let settle = 2 * ms(daemon.config.request_timeout);
            if let Err(e) = daemon.record_unrecorded(settle) {
                tracing::error!("recording interrupted arrivals: {e}");
            }
            // Another daemon on this data directory may have died since.
            stop_orphaned_runbooks(daemon);
        }
        // Intake writes failed and nothing has written since: check whether they work again.
        if let Some(failure) = daemon.write_check_due() {
            match daemon.check_writes(&failure) {
                Ok(()) => tracing::info!("intake writes work again (they failed: {failure})"),
                Err(e) => tracing::warn!("intake writes still fail: {e}"),
            }
        }
        if let (Some(at), Some(every)) = (next_sweep, daemon.config.janitor_every)
            && Instant::now() >= at
        {
            next_sweep = Some(Instant::now() + every);
            if daemon.config.janitor_singleton {
                let term = crate::singleton::Term::scheduled(every);
                let outcome = crate::singleton::run_once(
                    daemon,
                    crate::singleton::JANITOR_SWEEP,
                    term,
                    |fence| scheduled_sweep(daemon, Some(fence)),
                );
                // Standing down until another host's lease ends: try again as it does, so a
                // host that died mid-sweep is taken over then, not a whole period later.
                if let crate::singleton::Outcome::StoodDown {
                    until_ms: Some(until),
                    ..
                } = outcome
                {
                    let wait = u64::try_from(until.saturating_sub(daemon.now_ms())).unwrap_or(0);
                    let retry = Instant::now() + Duration::from_millis(wait);
                    next_sweep = next_sweep.map(|at| at.min(retry));
                }
            } else {
                scheduled_sweep(daemon, None);
            }
        }
        // Up to a second, or until the sweep is due (schedules shorter than a second, in tests).
        let wait = next_sweep
            .map(|at| at.saturating_duration_since(Instant::now()))
            .map_or(Duration::from_secs(1), |due| {
                due.min(Duration::from_secs(1))
            });
        daemon.wait_for_work(wait);
    }
}

/// One run of the janitor's sweep through the daemon's engine; a sweep that could not run at
/// all is recorded, so a silent schedule is impossible.
/// The janitor's sweep on its schedule; under `fence` when it runs as a singleton, so that it
/// removes nothing once its lease is lost.
fn scheduled_sweep(daemon: &Daemon, fence: Option<&dyn nightwatch_gate::Fence>) {
    let engine = daemon.engine();
    let engine = match fence {
        Some(fence) => engine.with_fence(fence),
        None => engine,
    };
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| daemon.edges.sweep(&engine)))
            .unwrap_or_else(|_| Err("the sweep panicked".to_owned()));
    daemon.metrics.sweep(outcome.is_ok());
    if let Err(e) = outcome {
        // The sweep records its own decisions.
        let why = format!("the scheduled sweep could not run: {e}");
        if let Err(le) = engine.record(Event::SweepFailed { why }) {
            tracing::error!("sweep failed ({e}) and could not be recorded: {le}");
        }
    }
}

/// Counts every decision the ledger gets while the daemon runs (the hooks', `exec`'s, the
/// janitor's and the runbooks'), by verdict, for `/metrics`: the daemon shares the ledger with
/// every gate on the host, so it can tell what all of them decided. It reads only the records
/// after the last one it saw, up to the head checkpoint: nothing when the ledger is quiet,
/// however long its history.
struct DecisionTail {
    last_seq: u64,
}

impl DecisionTail {
    /// Starts after the records already there.
    fn new(daemon: &Daemon) -> DecisionTail {
        DecisionTail {
            last_seq: head_seq(daemon).unwrap_or(0),
        }
    }

    fn count_new(&mut self, daemon: &Daemon) {
        // Up to the head: a record another process committed but has not yet checkpointed
        // is counted next time, once.
        let Some(head) = head_seq(daemon).filter(|head| *head > self.last_seq) else {
            return;
        };
        let filter = nightwatch_ledger::Filter {
            after_seq: Some(self.last_seq),
            event: Some(event::DECISION.to_owned()),
            ..nightwatch_ledger::Filter::default()
        };
        let Ok(records) = daemon.reader().query(&filter) else {
            return;
        };
        for r in records.iter().filter(|r| r.seq <= head) {
            if let Some(verdict) = &r.verdict {
                daemon.metrics.decision(verdict);
            }
        }
        self.last_seq = head;
    }
}

/// The ledger's last checkpointed sequence number.
fn head_seq(daemon: &Daemon) -> Option<u64> {
    daemon
        .reader()
        .head_checkpoint()
        .ok()
        .flatten()
        .map(|(seq, _)| seq)
}

/// Everything known about the claimed task's alert, for records and the runbook.
struct Job<'a> {
    claim: &'a Claim,
    alert: Alert,
    alert_id: String,
    session: String,
    context: Context,
    route: &'a Route,
    inputs: Value,
}

fn run_claim(daemon: &Daemon, worker: &str, claim: Claim) {
    let task = claim.task_id;
    let attempt = claim.attempt;
    let alert: Alert = match serde_json::from_str(&claim.alert_json) {
        Ok(alert) => alert,
        Err(e) => {
            let why = format!("the stored alert is unreadable: {e}");
            finish(
                daemon,
                task,
                attempt,
                &Outcome::Abandoned { error: why },
                None,
            );
            return;
        }
    };
    let Some(route) = daemon.config.routes.iter().find(|r| r.id == claim.route) else {
        let why = format!(
            "route {} is no longer in serve.yaml; nothing to run",
            claim.route
        );
        finish(
            daemon,
            task,
            attempt,
            &Outcome::Abandoned { error: why },
            None,
        );
        return;
    };
    let id = alert_id(&alert);
    let session = format!("sess_{}-{}", &id["alert_".len()..], task_name(task));
    let now = daemon.now_ms();
    let context = Context {
        session: Some(session.clone()),
        triggered_by: Some(triggered_by(&alert)),
        alert_id: Some(id.clone()),
        task: Some(task_name(task)),
        host: daemon.edges.host(),
        minute_of_day: None,
    };
    // Stable across attempts, so an approval given for one attempt lets the next run.
    let inputs = json!({
        "route": route.id,
        "command": route.run,
        "alert_id": id,
        "task": task_name(task),
    });
    let job = Job {
        claim: &claim,
        alert,
        alert_id: id,
        session,
        context,
        route,
        inputs,
    };

    // An earlier attempt asked a person: look for their answer before anything is proposed
    // again, so waiting adds no records (the ask stands) and uses up no tries.
    match waiting_for_a_person(daemon, &job, now) {
        Ok(Waiting::No) => {}
        Ok(Waiting::Still(why)) => {
            let wait_ms = ms(daemon.config.queue.approval_poll);
            finish(
                daemon,
                task,
                attempt,
                &Outcome::Deferred { why, wait_ms },
                None,
            );
            return;
        }
        Ok(Waiting::GaveUp(error)) => {
            drop_task(daemon, &job, error);
            return;
        }
        Err(e) => {
            let error = format!("cannot read the ledger for an approval: {e}");
            retry_later(daemon, &job, error);
            return;
        }
    }

    let policy = match daemon.edges.policy() {
        Ok(p) => p,
        Err(why) => {
            let error = format!("the policy cannot be read, so the runbook is not run: {why}");
            retry_later(daemon, &job, error);
            return;
        }
    };
    let call_id = format!("{}-a{attempt}", job.session);
    let engine = daemon.engine();
    let proposal = Proposal {
        action: Action {
            actor: Actor::new(ActorKind::Dispatcher, "nightwatch-serve"),
            tool: Tool::Named {
                name: "runbook".into(),
            },
            context: job.context.clone(),
        },
        call_id: Some(call_id.clone()),
        inputs: job.inputs.clone(),
        cwd: route.cwd.clone(),
    };
    let ruling = match engine.propose(&policy, proposal) {
        Ok(r) => r,
        Err(e) => {
            let error = format!("the decision could not be recorded, so nothing ran: {e}");
            retry_later(daemon, &job, error);
            return;
        }
    };
    match ruling.decision.verdict {
        Verdict::Allow => {}
        Verdict::Ask => {
            let why = format!(
                "awaiting approval: policy asks a person before this runbook runs ({}: {}); `nightwatch approve {}` lets it run, `nightwatch reject {}` drops it; it waits up to {}s",
                ruling.record.id,
                ruling.decision.reason,
                ruling.record.id,
                ruling.record.id,
                daemon.config.queue.approval_timeout.as_secs()
            );
            record_task(daemon, &job, "awaiting_approval", &why);
            let wait_ms = ms(daemon.config.queue.approval_poll);
            finish(
                daemon,
                task,
                attempt,
                &Outcome::Deferred { why, wait_ms },
                Some(&job),
            );
            return;
        }
        verdict => {
            let error = format!(
                "policy says {verdict} for this runbook ({}): {}",
                ruling.record.id, ruling.decision.reason
            );
            drop_task(daemon, &job, error);
            return;
        }
    }

    let started = Instant::now();
    let ran = run_runbook(daemon, worker, &job);
    let duration_ms = started.elapsed().as_millis() as u64;
    let (outputs, outcome) = match ran {
        Ran::Exited {
            code,
            stdout,
            stderr,
        } => {
            let outcome = if code == Some(0) {
                Outcome::Succeeded
            } else {
                let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
                Outcome::Failed {
                    error: match (code, last) {
                        (Some(c), Some(l)) => format!("the runbook exited {c}: {l}"),
                        (Some(c), None) => format!("the runbook exited {c}"),
                        (None, _) => "the runbook was killed by a signal".into(),
                    },
                }
            };
            (
                Outputs {
                    exit_code: code.map(i64::from),
                    stdout,
                    stderr,
                },
                outcome,
            )
        }
        Ran::Stopped {
            why,
            stdout,
            stderr,
        } => (
            Outputs {
                exit_code: None,
                stdout,
                stderr,
            },
            Outcome::Failed { error: why },
        ),
        Ran::LostLease { why } => {
            // Another worker holds the task now; its record will tell. Ours says why we stopped.
            record_task(daemon, &job, "interrupted", &why);
            return;
        }
        Ran::Refused { why } => {
            drop_task(daemon, &job, why);
            return;
        }
        Ran::NotStarted { why } => (
            Outputs {
                exit_code: None,
                stdout: String::new(),
                stderr: why.clone(),
            },
            Outcome::Failed { error: why },
        ),
    };
    let report = Report {
        actor: Actor::new(ActorKind::Dispatcher, "nightwatch-serve"),
        tool: "runbook".into(),
        session_id: Some(job.session.clone()),
        call_id: Some(call_id),
        inputs: job.inputs.clone(),
        outputs,
        duration_ms: Some(duration_ms),
        context: job.context.clone(),
        cwd: route.cwd.clone(),
    };
    if let Err(e) = engine.record(Event::Result(report)) {
        tracing::error!("task {task}: the runbook's result could not be recorded: {e}");
    }
    daemon
        .metrics
        .runbook(matches!(outcome, Outcome::Succeeded));
    finish(daemon, task, attempt, &outcome, Some(&job));
}

/// Gives the task up without running it (policy refused it, a person rejected it, or nobody
/// answered in time): a `refused` record, then escalation.
fn drop_task(daemon: &Daemon, job: &Job<'_>, error: String) {
    record_task(daemon, job, "refused", &error);
    let (task, attempt) = (job.claim.task_id, job.claim.attempt);
    finish(
        daemon,
        task,
        attempt,
        &Outcome::Abandoned { error },
        Some(job),
    );
}

/// Ends the attempt as failed without running the runbook (nightwatch could not read or
/// record what it needs): the queue's backoff retries it.
fn retry_later(daemon: &Daemon, job: &Job<'_>, error: String) {
    let (task, attempt) = (job.claim.task_id, job.claim.attempt);
    finish(daemon, task, attempt, &Outcome::Failed { error }, Some(job));
}

/// Completes the attempt (fenced) and records what became of the task.
fn finish(daemon: &Daemon, task: i64, attempt: u32, outcome: &Outcome, job: Option<&Job<'_>>) {
    let now = daemon.now_ms();
    let status = daemon.tasks.complete(task, attempt, outcome, now);
    let (disposition, why) = match (&status, outcome) {
        (Ok(Status::Done), _) => (
            "ran",
            format!("task {task}: attempt {attempt} ran and succeeded"),
        ),
        (Ok(Status::Pending), Outcome::Deferred { why, .. }) => ("awaiting_approval", why.clone()),
        (Ok(Status::Pending), Outcome::Failed { error }) => (
            "failed",
            format!(
                "task {task}: attempt {attempt} failed: {error}; it will be retried after a backoff"
            ),
        ),
        (Ok(Status::GaveUp), Outcome::Failed { error } | Outcome::Abandoned { error }) => {
            // Say who will be told only when someone will: with no notifier, nobody is.
            let notify = notifiers(daemon, job.map(|j| j.route.id.as_str()));
            let told = if notify.is_empty() {
                "no notifier is configured, so nobody will be told; it shows on the page and in the API".to_owned()
            } else {
                format!("it is escalated to {}", notify.join(", "))
            };
            (
                "failed",
                format!("task {task}: attempt {attempt} failed: {error}; no attempts left: {told}"),
            )
        }
        (Ok(other), _) => (
            "failed",
            format!("task {task}: attempt {attempt} left it {other}"),
        ),
        (Err(TaskError::Stale { .. }), _) => (
            "interrupted",
            format!(
                "task {task}: attempt {attempt}'s result was refused: {}",
                status
                    .as_ref()
                    .err()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            ),
        ),
        (Err(e), _) => (
            "failed",
            format!(
                "task {task}: attempt {attempt}'s result could not be stored: {e}; the lease will expire and it will be retried"
            ),
        ),
    };
    // A runbook that exited 0 after the gate refused one of its steps did not do what it set
    // out to: say so, and do not show it as a plain success.
    let (disposition, why) = match job {
        Some(job) if disposition == "ran" => match refused_steps(daemon, job) {
            Ok(refused) if !refused.is_empty() => (
                "ran_with_refusals",
                format!(
                    "task {task}: attempt {attempt}'s runbook exited 0, but the gate refused {} \
                     of its steps: {}",
                    refused.len(),
                    refused.join("; ")
                ),
            ),
            Ok(_) => (disposition, why),
            Err(e) => (
                disposition,
                format!("{why} (whether the gate refused any of its steps is unknown: {e})"),
            ),
        },
        _ => (disposition, why),
    };
    let waiting = matches!(outcome, Outcome::Deferred { .. }) && status.is_ok();
    match job {
        // The ask itself was recorded when it was made; looking again is in the task's
        // events only, so a night of waiting does not fill the ledger.
        _ if waiting => {}
        Some(job) => {
            record_task(daemon, job, disposition, &why);
        }
        None => {
            let recorded = daemon.engine().record(Event::Dispatch(Dispatch {
                route: None,
                session_id: None,
                inputs: json!({ "disposition": disposition, "task": task }),
                context: RecordContext {
                    task: Some(task_name(task)),
                    ..RecordContext::default()
                },
                why,
                notify: Vec::new(),
                tool: "runbook".into(),
            }));
            if let Err(e) = recorded {
                tracing::error!("task {task}: cannot record: {e}");
            }
        }
    }
    daemon.wake_workers();
}

/// The calls of this attempt's runbook that the gate refused (deny or halt), each as its
/// record and what it was: the decisions in the task's session after the attempt's own
/// runbook decision.
fn refused_steps(
    daemon: &Daemon,
    job: &Job<'_>,
) -> Result<Vec<String>, nightwatch_store::StoreError> {
    let decisions = daemon.reader().query(&nightwatch_ledger::Filter {
        session: Some(job.session.clone()),
        event: Some(event::DECISION.to_owned()),
        ..nightwatch_ledger::Filter::default()
    })?;
    let this_attempt = decisions
        .iter()
        .rposition(|d| d.tool == "runbook")
        .map_or(0, |at| at + 1);
    Ok(decisions[this_attempt..]
        .iter()
        .filter(|d| matches!(d.verdict.as_deref(), Some("deny" | "halt")))
        .map(|d| {
            let what = d
                .inputs
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or(d.tool.as_str());
            format!(
                "{} {} `{what}`",
                d.id,
                d.verdict.as_deref().unwrap_or_default()
            )
        })
        .collect())
}

enum Waiting {
    /// Nothing asked, or the last ask was answered by a run: propose as usual.
    No,
    /// Still waiting for a person's answer to the ask.
    Still(String),
    /// Rejected, or unanswered for too long.
    GaveUp(String),
}

/// Whether this task's last runbook decision was an ask that still waits for a person.
/// An approval lets the proposal go ahead (the gate finds it and allows, once).
fn waiting_for_a_person(
    daemon: &Daemon,
    job: &Job<'_>,
    now: i64,
) -> Result<Waiting, nightwatch_store::StoreError> {
    let decisions = daemon.reader().query(&nightwatch_ledger::Filter {
        session: Some(job.session.clone()),
        event: Some(event::DECISION.to_owned()),
        tool: Some("runbook".into()),
        ..nightwatch_ledger::Filter::default()
    })?;
    let Some(asked) = decisions
        .last()
        .filter(|d| d.verdict.as_deref() == Some("ask"))
    else {
        return Ok(Waiting::No);
    };
    let rejections = daemon.reader().query(&nightwatch_ledger::Filter {
        since_ms: Some(asked.timestamp_ms),
        event: Some(event::REJECTION.to_owned()),
        ..nightwatch_ledger::Filter::default()
    })?;
    if let Some(no) = rejections
        .iter()
        .find(|r| r.inputs.get("record").and_then(Value::as_str) == Some(asked.id.as_str()))
    {
        let why = no.inputs.get("why").and_then(Value::as_str).unwrap_or("");
        return Ok(Waiting::GaveUp(format!(
            "{} rejected the runbook ({}, asked in {}): {why}",
            no.actor.id, no.id, asked.id
        )));
    }
    // The runbook's inputs hold no secret, but the stored fingerprint is the one to compare.
    let fingerprint = nightwatch_gate::fingerprint_of(asked);
    if nightwatch_gate::usable_approval(daemon.reader(), "nightwatch-serve", &fingerprint, now)?
        .is_some()
    {
        return Ok(Waiting::No);
    }
    let waited = now - asked.timestamp_ms;
    let timeout = ms(daemon.config.queue.approval_timeout);
    if waited >= timeout {
        return Ok(Waiting::GaveUp(format!(
            "nobody approved {} within {}s",
            asked.id,
            timeout / 1000
        )));
    }
    Ok(Waiting::Still(format!(
        "still awaiting approval of {} (asked {}s ago)",
        asked.id,
        waited / 1000
    )))
}

/// Stops what the runbooks of daemons that died left running (their whole process group), and
/// ends each such attempt as interrupted, recorded, so the task runs again: once, and never
/// beside the old run. A runbook whose daemon still runs is that daemon's.
pub fn stop_orphaned_runbooks(daemon: &Daemon) {
    let noted = match daemon.tasks.noted_runbooks() {
        Ok(noted) => noted,
        Err(e) => {
            tracing::error!("cannot read which runbooks are running: {e}");
            return;
        }
    };
    for orphan in noted {
        if crate::process::daemon_alive(&orphan.process) {
            continue;
        }
        let stopped = crate::process::stop(&orphan.process, Duration::from_secs(2));
        let (task, attempt) = (orphan.task_id, orphan.attempt);
        let left = if stopped > 0 {
            format!(
                "{stopped} process(es) of its runbook (process group {}) were still running and were stopped",
                orphan.process.pgid
            )
        } else {
            "its runbook had already ended".to_owned()
        };
        let why = format!(
            "interrupted: the daemon that ran attempt {attempt} (pid {}) stopped without finishing it; {left}; the task runs again",
            orphan.process.daemon_pid
        );
        tracing::warn!("task {task}: {why}");
        let disposition = if stopped > 0 {
            "stopped_after_crash"
        } else {
            "interrupted"
        };
        let recorded = daemon.engine().record(Event::Dispatch(Dispatch {
            route: Some(orphan.route.clone()),
            session_id: None,
            inputs: json!({
                "disposition": disposition,
                "route": orphan.route,
                "task": task,
                "attempt": attempt,
                "process_group": orphan.process.pgid,
                "stopped": stopped,
            }),
            context: RecordContext {
                task: Some(task_name(task)),
                host: daemon.edges.host(),
                ..RecordContext::default()
            },
            why: why.clone(),
            notify: Vec::new(),
            tool: "runbook".into(),
        }));
        if let Err(e) = recorded {
            tracing::error!("task {task}: cannot record {disposition}: {e}");
        }
        let ended = daemon.tasks.complete(
            task,
            attempt,
            &Outcome::Failed { error: why },
            daemon.now_ms(),
        );
        if let Err(e) = ended {
            tracing::error!("task {task}: attempt {attempt} could not be ended: {e}");
        }
    }
}

/// A `dispatch` record about a task's runbook.
fn record_task(daemon: &Daemon, job: &Job<'_>, disposition: &str, why: &str) -> Option<Record> {
    let inputs = json!({
        "disposition": disposition,
        "alert_id": job.alert_id,
        "route": job.route.id,
        "task": job.claim.task_id,
        "attempt": job.claim.attempt,
        "title": job.alert.title,
    });
    let context = RecordContext {
        triggered_by: job.context.triggered_by.clone(),
        alert_id: Some(job.alert_id.clone()),
        host: job.context.host.clone(),
        task: job.context.task.clone(),
    };
    let recorded = daemon.engine().record(Event::Dispatch(Dispatch {
        route: Some(job.route.id.clone()),
        session_id: Some(job.session.clone()),
        inputs,
        context,
        why: why.to_owned(),
        notify: Vec::new(),
        tool: "runbook".into(),
    }));
    match recorded {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::error!(
                "task {}: cannot record {disposition}: {e}",
                job.claim.task_id
            );
            None
        }
    }
}

/// Who is told when a task of `route` gives up: the route's `notify:`, else the policy's
/// halt notifiers; empty when neither names one.
fn notifiers(daemon: &Daemon, route: Option<&str>) -> Vec<String> {
    let route = daemon
        .config
        .routes
        .iter()
        .find(|r| Some(r.id.as_str()) == route);
    let notify: Vec<String> = route.map(|r| r.notify.clone()).unwrap_or_default();
    if !notify.is_empty() {
        return notify;
    }
    daemon
        .edges
        .policy()
        .map(|policy| {
            policy
                .safeguards()
                .escalate
                .for_verdict(Verdict::Halt)
                .to_vec()
        })
        .unwrap_or_default()
}

/// Hands every task that gave up to a person: an `escalated` record naming the notifiers,
/// then delivery in the background.
fn escalate_gave_up(daemon: &Daemon) -> Result<(), ServeError> {
    let now = daemon.now_ms();
    for gave_up in daemon.tasks.take_escalations(now)? {
        let notify = notifiers(daemon, Some(&gave_up.route));
        let task = daemon.tasks.task(gave_up.task_id)?;
        let alert: Option<Alert> = task
            .as_ref()
            .and_then(|t| serde_json::from_str(&t.alert_json).ok());
        let told = if notify.is_empty() {
            "no notifier is configured (route notify: or the policy's escalate: halt), so nobody was told; it shows on the page and in the API".to_string()
        } else {
            format!("telling {}", notify.join(", "))
        };
        let inputs = json!({
            "disposition": "escalated",
            "task": gave_up.task_id,
            "route": gave_up.route,
            "attempts": gave_up.attempts,
            "alert_id": alert.as_ref().map(alert_id),
            "title": alert.as_ref().map(|a| a.title.clone()),
        });
        let context = RecordContext {
            triggered_by: alert.as_ref().map(triggered_by),
            alert_id: alert.as_ref().map(alert_id),
            host: alert.as_ref().and_then(alert_host),
            task: Some(task_name(gave_up.task_id)),
        };
        let why = format!(
            "task {} gave up after {} attempt(s): {}; {told}",
            gave_up.task_id,
            gave_up.attempts,
            gave_up.last_error.as_deref().unwrap_or("no error recorded")
        );
        // The engine hands a record naming notifiers to the escalator.
        daemon.engine().record(Event::Dispatch(Dispatch {
            route: Some(gave_up.route.clone()),
            session_id: None,
            inputs,
            context,
            why,
            notify,
            tool: "runbook".into(),
        }))?;
        daemon.metrics.escalated();
    }
    Ok(())
}

enum Ran {
    Exited {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    /// Timed out or interrupted by shutdown: stopped, and retried later.
    Stopped {
        why: String,
        stdout: String,
        stderr: String,
    },
    LostLease {
        why: String,
    },
    NotStarted {
        why: String,
    },
    /// Not to be run here (no memory guard can be set up, and one is required).
    Refused {
        why: String,
    },
}

/// Runs the runbook, in a cgroup of its own when the daemon has a memory guard.
fn run_runbook(daemon: &Daemon, worker: &str, job: &Job<'_>) -> Ran {
    let Some(guard) = &daemon.guard else {
        return run_placed(daemon, worker, job, None);
    };
    let (route, task) = (job.route, job.claim.task_id);
    let kind = nightwatch_guard::JobKind::of_command(&route.run);
    let limits = guard.config().limits(kind, Some(&route.id));
    let name = format!("{}-{}-a{}", route.id, task_name(task), job.claim.attempt);
    let placement = match guard.start_for(&name, Some(task_name(task)), limits) {
        Ok(placement) => placement,
        Err(nightwatch_guard::GuardError::Unavailable(why)) => {
            return Ran::Refused {
                why: format!(
                    "not run: {why}; memory_guard.required is true, so no runbook runs unguarded"
                ),
            };
        }
        Err(e) => {
            return Ran::NotStarted {
                why: format!("the runbook's cgroup could not be made: {e}"),
            };
        }
    };
    if let Some(why) = &placement.unguarded {
        tracing::warn!("task {task}: the runbook runs without memory limits: {why}");
    }
    let ran = run_placed(daemon, worker, job, Some(&placement));
    let ended = guard.finish(placement);
    if let Some(left) = ended.left {
        tracing::warn!("task {task}: its cgroup is left in place: {left}");
    }
    match (ended.stopped, ran) {
        (Some(why), Ran::Exited { stdout, stderr, .. } | Ran::Stopped { stdout, stderr, .. }) => {
            Ran::Stopped {
                why: format!("{}: {why}", crate::guard::STOPPED_BY_GUARD),
                stdout,
                stderr,
            }
        }
        (_, ran) => ran,
    }
}

fn run_placed(
    daemon: &Daemon,
    worker: &str,
    job: &Job<'_>,
    placement: Option<&nightwatch_guard::Placement>,
) -> Ran {
    let route = job.route;
    let mut command = Command::new(&route.run[0]);
    command
        .args(&route.run[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cwd) = &route.cwd {
        command.current_dir(cwd);
    }
    for (k, v) in daemon.edges.runbook_env() {
        command.env(k, v);
    }
    for (k, v) in runbook_vars(job) {
        command.env(k, v);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group, so a timeout stops the agent and everything it started.
        command.process_group(0);
        let daemon_pid = std::process::id();
        // SAFETY: between fork and exec only async-signal-safe calls: prctl and getppid, and
        // the guard's getpid, open, write and close.
        unsafe {
            command.pre_exec(move || {
                // Killed when the daemon's thread that started it dies, crash or not; what it
                // started in turn is stopped by the next daemon (`stop_orphaned_runbooks`).
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The daemon died before the line above: do not run orphaned.
                if u32::try_from(libc::getppid()).ok() != Some(daemon_pid) {
                    return Err(std::io::Error::other("the daemon exited"));
                }
                Ok(())
            });
            // Into its cgroup before exec: it never runs a moment outside its limits.
            if let Some(enter) = placement.and_then(|p| p.enter_hook()) {
                command.pre_exec(enter);
            }
        }
    }
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Ran::NotStarted {
                why: format!("the runbook {:?} could not be started: {e}", route.run[0]),
            };
        }
    };
    match crate::process::runbook_process(child.id()) {
        Some(process) => {
            let noted = daemon
                .tasks
                .note_runbook(job.claim.task_id, job.claim.attempt, &process);
            if let Err(e) = noted {
                tracing::warn!(
                    "task {}: where its runbook runs could not be noted ({e}); a crash now would leave it for the next daemon to find only when its lease expires",
                    job.claim.task_id
                );
            }
        }
        None => tracing::warn!(
            "task {}: the runbook (pid {}) cannot be read in /proc, so it is not noted",
            job.claim.task_id,
            child.id()
        ),
    }
    let alert_text = serde_json::to_vec_pretty(&job.alert).unwrap_or_default();
    let stdin = child.stdin.take();
    let feeder = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            // A runbook that does not read its stdin closes the pipe: not an error.
            let _ = stdin.write_all(&alert_text);
        }
    });
    let out = capture(child.stdout.take());
    let err = capture(child.stderr.take());

    let lease = daemon.config.queue.lease;
    let renew_every = lease / 3;
    let started = Instant::now();
    let mut renewed = Instant::now();
    let mut shutdown_since: Option<Instant> = None;
    let stop: Option<String> = loop {
        match child.try_wait() {
            Ok(Some(_)) => break None,
            Ok(None) => {}
            Err(e) => break Some(format!("cannot wait for the runbook: {e}")),
        }
        if started.elapsed() >= route.timeout {
            break Some(format!(
                "the runbook ran longer than its timeout of {}s and was stopped",
                route.timeout.as_secs()
            ));
        }
        if daemon.is_shutting_down() {
            let since = *shutdown_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= SHUTDOWN_GRACE {
                break Some(
                    "interrupted: the daemon shut down while the runbook ran; it is retried after the restart"
                        .into(),
                );
            }
        }
        if renewed.elapsed() >= renew_every {
            renewed = Instant::now();
            let now = daemon.now_ms();
            if let Err(e) =
                daemon
                    .tasks
                    .heartbeat(job.claim.task_id, job.claim.attempt, now, ms(lease))
            {
                kill_group(&mut child);
                let _ = feeder.join();
                return Ran::LostLease {
                    why: format!(
                        "{worker} lost task {}: {e}; the runbook was stopped",
                        job.claim.task_id
                    ),
                };
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if stop.is_some() {
        kill_group(&mut child);
    }
    let status = child.wait();
    let _ = feeder.join();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    match (stop, status) {
        (Some(why), _) => Ran::Stopped {
            why,
            stdout,
            stderr,
        },
        (None, Ok(status)) => Ran::Exited {
            code: status.code(),
            stdout,
            stderr,
        },
        (None, Err(e)) => Ran::Stopped {
            why: format!("cannot wait for the runbook: {e}"),
            stdout,
            stderr,
        },
    }
}

/// The variables a runbook gets: who it is for, and the alert.
fn runbook_vars(job_alert: &Job<'_>) -> Vec<(String, String)> {
    let alert = &job_alert.alert;
    let mut vars = vec![
        ("NIGHTWATCH_SESSION".into(), job_alert.session.clone()),
        ("NIGHTWATCH_TRIGGERED_BY".into(), triggered_by(alert)),
        ("NIGHTWATCH_ALERT_ID".into(), job_alert.alert_id.clone()),
        ("NIGHTWATCH_TASK".into(), task_name(job_alert.claim.task_id)),
        ("NIGHTWATCH_ROUTE".into(), job_alert.route.id.clone()),
        (
            "NIGHTWATCH_ATTEMPT".into(),
            job_alert.claim.attempt.to_string(),
        ),
        ("NIGHTWATCH_ALERT_TITLE".into(), alert.title.clone()),
        (
            "NIGHTWATCH_ALERT_STATUS".into(),
            crate::dispatch::status_name(alert.status).into(),
        ),
    ];
    for (name, value) in &alert.labels {
        vars.push((
            format!("NIGHTWATCH_LABEL_{}", env_name(name)),
            value.clone(),
        ));
    }
    vars
}

/// A label name as a variable name: upper case, anything else than letters and digits `_`.
fn env_name(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// Reads a pipe to its end on a thread, keeping the first [`OUTPUT_CAP`] bytes.
fn capture<R: Read + Send + 'static>(pipe: Option<R>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let Some(mut pipe) = pipe else {
            return String::new();
        };
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        let mut dropped = 0usize;
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = OUTPUT_CAP.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    dropped += n.saturating_sub(room);
                }
            }
        }
        let mut text = String::from_utf8_lossy(&kept).into_owned();
        if dropped > 0 {
            text.push_str(&format!("\n[... {dropped} more bytes not kept]"));
        }
        text
    })
}

fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    {
        let pid = child.id() as libc::pid_t;
        // SAFETY: signalling the process group we created for this child (process_group(0)
        // made its pgid its pid); no memory is touched.
        unsafe {
            libc::kill(-pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_names_become_variable_names() {
        assert_eq!(env_name("alertname"), "ALERTNAME");
        assert_eq!(env_name("k8s.io/app-name"), "K8S_IO_APP_NAME");
    }
}
