//! The memory guard in the daemon (serve.yaml's `memory_guard:`, crates/nightwatch-guard):
//! the runner places each runbook in a cgroup of its own (runner.rs), and this loop looks at
//! memory each `every`. A stop is one more action: the guard, a watcher with id
//! `memory-guard`, proposes `stop_job` through the daemon's engine; only an allowed stop
//! kills, and its result is recorded against the decision. A refusal leaves the job running,
//! and its decision record says why (the built-in rule `memory-guard` allows it; an
//! operator's rule may not). A reading that cannot be had is a `watch` record once, and once
//! more when it can be read again, never one a second.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nightwatch_core::{Action, Actor, ActorKind, Context, Tool, Verdict};
use nightwatch_gate::{Event, Proposal, Report};
use nightwatch_guard::{Cause, Cgroups, Guard, GuardConfig, GuardError, Killed, Notice, Stop};
use serde_json::{Value, json};

use crate::Daemon;

/// The guard's actor id, on its proposals and its `watch` records.
pub const MEMORY_GUARD: &str = "memory-guard";
/// The tool it proposes.
pub const STOP_JOB: &str = "stop_job";
/// What a runbook's failure says when the guard stopped it.
pub const STOPPED_BY_GUARD: &str = "stopped by the memory guard";

/// The guard for `config`, over the cgroups this process may use; the empty cgroups an
/// earlier daemon left are removed now, before any worker places a job.
pub fn new(config: GuardConfig) -> Arc<Guard> {
    let cgroups = Cgroups::detect();
    if let Ok(c) = &cgroups {
        c.remove_leftovers();
    }
    Arc::new(Guard::new(config, cgroups))
}

/// Starts the guard's loop, when the daemon has a guard.
pub fn start(daemon: &Arc<Daemon>) -> Option<JoinHandle<()>> {
    let guard = daemon.guard.clone()?;
    let daemon = daemon.clone();
    Some(
        std::thread::Builder::new()
            .name("memory-guard".into())
            .spawn(move || watch(&daemon, &guard))
            .expect("the memory guard's thread starts"),
    )
}

fn watch(daemon: &Arc<Daemon>, guard: &Guard) {
    announce(daemon, guard);
    let every = guard.config().every;
    let mut gate = EngineGate {
        daemon,
        pending: None,
    };
    while !daemon.is_shutting_down() {
        let began = Instant::now();
        guard.run(daemon.now_ms(), &mut gate);
        // In short slices, so a shutdown is not kept waiting.
        while began.elapsed() < every && !daemon.is_shutting_down() {
            std::thread::sleep(
                every
                    .saturating_sub(began.elapsed())
                    .min(Duration::from_millis(100)),
            );
        }
    }
}

/// Records where the guard's jobs go, or why nowhere (and so whether runbooks are refused or
/// run unguarded): a host without a guard is a hazard someone should hear of.
fn announce(daemon: &Daemon, guard: &Guard) {
    let (seen, summary, details) = match guard.cgroups() {
        Ok(c) => (
            "ok",
            format!("runbooks run in their own cgroups: {}", c.describe()),
            json!({ "notes": c.notes }),
        ),
        Err(why) if guard.config().required => (
            "found",
            format!("{why}; runbooks are refused until it can (memory_guard.required is true)"),
            json!({}),
        ),
        Err(why) => (
            "found",
            format!("{why}; runbooks run without limits (memory_guard.required is false)"),
            json!({}),
        ),
    };
    record_watch(daemon, "cgroups", seen, summary, details);
}

fn record_watch(daemon: &Daemon, subject: &str, seen: &str, summary: String, details: Value) {
    let recorded = daemon.engine().record(Event::Watch {
        watcher: MEMORY_GUARD.into(),
        kind: MEMORY_GUARD.into(),
        subject: subject.to_owned(),
        seen: seen.to_owned(),
        runs: 1,
        summary: summary.clone(),
        details,
        notify: Vec::new(),
    });
    if let Err(e) = recorded {
        tracing::error!("memory guard: cannot record {summary:?}: {e}");
    }
}

/// The daemon's engine as the guard's gate.
struct EngineGate<'a> {
    daemon: &'a Daemon,
    /// The allowed stop's call id, inputs and context, for its result.
    pending: Option<(String, Value, Context, Instant)>,
}

fn actor() -> Actor {
    Actor::new(ActorKind::Watcher, MEMORY_GUARD)
}

fn cause_name(cause: &Cause) -> &'static str {
    match cause {
        Cause::NearItsLimit { .. } => "near_its_limit",
        Cause::LowMemory { .. } => "low_memory",
        Cause::Pressure { .. } => "pressure",
    }
}

impl nightwatch_guard::StopGate for EngineGate<'_> {
    fn notice(&mut self, notice: &Notice) {
        let seen = if notice.readable { "ok" } else { "unknown" };
        record_watch(
            self.daemon,
            &notice.source,
            seen,
            notice.summary.clone(),
            json!({}),
        );
    }

    fn allow(&mut self, stop: &Stop) -> Result<(), String> {
        let job = &stop.job;
        let now = self.daemon.now_ms();
        let call_id = format!("memory-guard-{}-{now}", job.name);
        let inputs = json!({
            "job": job.name,
            "task": job.owner,
            "priority": job.priority,
            "usage_bytes": job.usage,
            "limit_bytes": job.limit,
            "cause": cause_name(&stop.cause),
            "why": stop.reason(),
        });
        let context = Context {
            task: job.owner.clone(),
            triggered_by: Some(MEMORY_GUARD.into()),
            host: self.daemon.edges.host(),
            ..Context::default()
        };
        let policy = self.daemon.edges.policy().map_err(|why| {
            tracing::error!(
                "memory guard: {} not stopped: the policy cannot be read: {why}",
                job.name
            );
            format!("the policy cannot be read: {why}")
        })?;
        let proposal = Proposal {
            action: Action {
                actor: actor(),
                tool: Tool::Named {
                    name: STOP_JOB.into(),
                },
                context: context.clone(),
            },
            call_id: Some(call_id.clone()),
            inputs: inputs.clone(),
            cwd: None,
        };
        let ruling = self
            .daemon
            .engine()
            .propose(&policy, proposal)
            .map_err(|e| {
                // Nothing was recorded, so nothing may be done.
                tracing::error!(
                    "memory guard: {} not stopped: the decision could not be recorded: {e}",
                    job.name
                );
                format!("the decision could not be recorded: {e}")
            })?;
        if ruling.decision.verdict != Verdict::Allow {
            // The decision record says why; the job is left out of the choice for a while.
            return Err(format!(
                "policy says {} ({}): {}",
                ruling.decision.verdict, ruling.record.id, ruling.decision.reason
            ));
        }
        self.pending = Some((call_id, inputs, context, Instant::now()));
        Ok(())
    }

    fn done(&mut self, stop: &Stop, result: &Result<Killed, GuardError>) {
        let Some((call_id, inputs, context, began)) = self.pending.take() else {
            return;
        };
        let (exit_code, stdout, stderr) = match result {
            Ok(killed) => (
                0,
                format!(
                    "stopped {}: {} process(es) killed; {}{}",
                    stop.job.name,
                    killed.processes,
                    stop.reason(),
                    match killed.oom_kills {
                        Some(0) => "; the kernel's OOM killer had not killed in it".to_owned(),
                        Some(n) =>
                            format!("; the kernel's OOM killer had killed {n} time(s) in it"),
                        None => String::new(),
                    }
                ),
                String::new(),
            ),
            Err(e) => (1, String::new(), format!("the stop failed: {e}")),
        };
        let report = Report {
            actor: actor(),
            tool: STOP_JOB.into(),
            session_id: None,
            call_id: Some(call_id),
            inputs,
            outputs: nightwatch_ledger::Outputs {
                exit_code: Some(exit_code),
                stdout,
                stderr,
            },
            duration_ms: Some(began.elapsed().as_millis() as u64),
            context,
            cwd: None,
        };
        if let Err(e) = self.daemon.engine().record(Event::Result(report)) {
            tracing::error!(
                "memory guard: the stop of {} could not be recorded: {e}",
                stop.job.name
            );
        }
    }
}
