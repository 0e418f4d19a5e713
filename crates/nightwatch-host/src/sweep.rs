//! The janitor's sweep through the engine: list what agents left behind, decide keep or
//! remove for each (`plan_at`), then carry out a plan (`apply_plan`): every removal
//! re-inspected and proposed as the janitor's action, every keep, result and quarantine
//! recorded. `sweep plan | apply` and the daemon's schedule (`sweep_once`) run the same code.

use crate::environment::Environment;
use anyhow::Context as _;
use nightwatch_core::{Actor, ActorKind, Verdict};
use nightwatch_gate::{Engine, Event, Proposal, Report};
use nightwatch_janitor::{
    Applied, Decision, Inventory, Item, Kind, Outcome, PathInventory, Plan, PlanEntry, SweepRules,
    list_all, plan, removal_action,
};
use nightwatch_ledger::Outputs;
use nightwatch_ledger::schema::Swept;
use nightwatch_policy::Policy;
use nightwatch_store::JanitorStore;
use serde_json::Value;
use std::collections::HashMap;
use std::io::IsTerminal;

/// The inventories the sweep rules ask for: paths always, worktrees and branches of the
/// repositories `sweep.worktrees.repos` names.
fn inventories(rules: &SweepRules, env: &Environment) -> Vec<Box<dyn Inventory>> {
    let mut all: Vec<Box<dyn Inventory>> = vec![Box::new(PathInventory::from_rules(rules))];
    match docker_here(rules, env) {
        Ok(Some(docker)) => all.push(Box::new(docker)),
        Ok(None) => progress(
            "no Docker Engine here (no DOCKER_HOST, no /var/run/docker.sock): containers not swept",
        ),
        Err(error) => eprintln!("nightwatch: containers not swept: {error}"),
    }
    if !rules.worktrees.repos.is_empty() {
        let git = nightwatch_git::GitInventory::new(
            rules.worktrees.repos.clone(),
            rules.worktrees.base.clone(),
            rules.worktrees.pr.clone(),
        );
        all.push(Box::new(git.worktrees()));
        all.push(Box::new(git.branches()));
    }
    all
}

/// The Docker Engine, when this host has one (`DOCKER_HOST`, or the default socket).
fn docker_here(
    rules: &SweepRules,
    env: &Environment,
) -> Result<Option<nightwatch_docker::DockerInventory>, nightwatch_janitor::InventoryError> {
    let configured = env.var("DOCKER_HOST").is_some_and(|h| !h.is_empty());
    if !configured && !std::path::Path::new("/var/run/docker.sock").exists() {
        return Ok(None);
    }
    nightwatch_docker::DockerInventory::from_docker_host(env.var("DOCKER_HOST"), &rules.containers)
        .map(Some)
}

/// Containers' exec and attach activity from the Engine's recent events, remembered in the
/// janitor's state (the Engine forgets them).
fn note_container_activity(
    store: &dyn JanitorStore,
    rules: &SweepRules,
    env: &Environment,
    now: i64,
) {
    if let Ok(Some(docker)) = docker_here(rules, env) {
        let since = now.saturating_sub(24 * 3600 * 1000);
        if let Err(error) = docker.record_activity(store, since, now) {
            eprintln!("nightwatch: container activity not read: {error}");
        }
    }
}

/// Progress for a person at a terminal.
pub fn progress(message: &str) {
    if std::io::stderr().is_terminal() {
        eprintln!("{message}");
    }
}

/// A plan, and the kinds that could not be listed (so none of them is planned).
pub struct Planned {
    pub plan: Plan,
    pub unlisted: Vec<String>,
}

/// Lists what agents left behind and decides keep or remove for each, as of `now`.
pub fn plan_at(
    data_dir: &std::path::Path,
    env: &Environment,
    policy: &Policy,
    now: i64,
    wall: i64,
) -> anyhow::Result<Planned> {
    let rules = policy.sweep();
    let store =
        crate::stores::janitor_state(data_dir).context("cannot open the janitor's state")?;
    note_container_activity(store.as_ref(), rules, env, wall);
    let mut state = store.load()?;
    let owned = inventories(rules, env);
    let inventories: Vec<&dyn Inventory> = owned.iter().map(|i| i.as_ref()).collect();
    progress("listing what agents left behind...");
    let listing = list_all(&inventories);
    let mut unlisted = Vec::new();
    for (kind, error) in &listing.errors {
        let line = format!("cannot list {kind}s, so none is planned: {error}");
        eprintln!("nightwatch: {line}");
        unlisted.push(line);
    }
    state.observe(&listing.items, now);
    store.save(&mut state)?;
    Ok(Planned {
        plan: plan(&listing.items, rules, now, &state),
        unlisted,
    })
}

/// Puts each removal through the engine: policy may forbid it, its decision is recorded, and a
/// halt or an ask is escalated like any actor's.
struct JanitorGate<'a> {
    engine: &'a Engine<'a>,
    policy: &'a Policy,
    /// The call id of each item's decision, to join its result to it.
    calls: HashMap<String, String>,
}

impl nightwatch_janitor::Gate for JanitorGate<'_> {
    fn allow(&mut self, item: &Item, entry: &PlanEntry) -> Result<(), String> {
        let call_id = format!(
            "sweep-{}-{}",
            &entry.fingerprint[..entry.fingerprint.len().min(16)],
            self.engine.clock().written_ms()
        );
        let ruling = self
            .engine
            .propose(
                self.policy,
                Proposal {
                    action: removal_action(item),
                    call_id: Some(call_id.clone()),
                    inputs: inputs_of(item.kind(), &item.id, &item.name, &entry.reasons),
                    cwd: None,
                },
            )
            .map_err(|e| format!("the decision could not be recorded: {e}"))?;
        self.calls.insert(item.id.clone(), call_id);
        match ruling.decision.verdict {
            Verdict::Allow => Ok(()),
            verdict => Err(format!(
                "policy says {verdict} ({}): {}",
                ruling.record.id, ruling.decision.reason
            )),
        }
    }
}

fn inputs_of(kind: Kind, id: &str, name: &str, reasons: &[String]) -> Value {
    serde_json::to_value(swept(kind, id, name, reasons)).unwrap_or(Value::Null)
}

fn swept(kind: Kind, id: &str, name: &str, reasons: &[String]) -> Swept {
    Swept {
        kind: kind.as_str().to_owned(),
        id: id.to_owned(),
        name: name.to_owned(),
        reasons: reasons.to_vec(),
    }
}

/// How an apply went.
#[derive(Default)]
pub struct Tally {
    pub kept: usize,
    pub removed: usize,
    pub failed: usize,
    pub changed: usize,
    /// One line per item, as `sweep apply` prints them.
    pub lines: Vec<String>,
}

impl Tally {
    pub fn summary(&self) -> String {
        format!(
            "kept {}, removed {}, failed {}, changed since the plan {}",
            self.kept, self.removed, self.failed, self.changed
        )
    }
}

/// Carries out `planned` through `engine`: each removal re-inspected and proposed, every keep,
/// result and quarantine recorded.
pub fn apply_plan(
    engine: &Engine<'_>,
    policy: &Policy,
    data_dir: &std::path::Path,
    env: &Environment,
    planned: &Plan,
) -> anyhow::Result<Tally> {
    let rules = policy.sweep();
    let now = engine.now_ms();
    let store =
        crate::stores::janitor_state(data_dir).context("cannot open the janitor's state")?;
    let mut state = store.load()?;
    let owned = inventories(rules, env);
    let inventories: Vec<&dyn Inventory> = owned.iter().map(|i| i.as_ref()).collect();
    let mut gate = JanitorGate {
        engine,
        policy,
        calls: HashMap::new(),
    };
    progress(&format!(
        "re-inspecting and removing {} item(s)...",
        planned.removals().count()
    ));
    let applied =
        nightwatch_janitor::apply(planned, &inventories, rules, now, &mut state, &mut gate);
    store.save(&mut state)?;
    let janitor = Actor::new(ActorKind::Janitor, "janitor");
    let mut tally = Tally::default();
    // The plan's keeps: "the decision gets logged either way".
    for entry in planned
        .entries
        .iter()
        .filter(|e| e.decision == Decision::Keep)
    {
        tally.kept += 1;
        engine.record(Event::SweepKeep {
            tool: entry.kind.tool_name().to_owned(),
            swept: swept(entry.kind, &entry.id, &entry.name, &[]),
            reasons: entry.reasons.clone(),
        })?;
    }
    for result in &applied {
        match &result.outcome {
            Outcome::Removed | Outcome::Failed { .. } => {
                if matches!(result.outcome, Outcome::Removed) {
                    tally.removed += 1;
                } else {
                    tally.failed += 1;
                }
                record_result(engine, &janitor, result, gate.calls.get(&result.id))?;
                if result.newly_quarantined {
                    engine.record(Event::Quarantine {
                        tool: result.kind.tool_name().to_owned(),
                        swept: swept(result.kind, &result.id, &result.name, &[]),
                        why: format!(
                            "gave up removing {} {} after repeated failures; it stays until a human looks: {}",
                            result.kind.as_str(),
                            result.name,
                            describe(&result.outcome)
                        ),
                        notify: policy.safeguards().escalate.halt.clone(),
                    })?;
                }
            }
            other => {
                if matches!(other, Outcome::Changed { .. }) {
                    tally.changed += 1;
                } else {
                    tally.kept += 1;
                }
                engine.record(Event::SweepKeep {
                    tool: result.kind.tool_name().to_owned(),
                    swept: swept(result.kind, &result.id, &result.name, &[]),
                    reasons: vec![describe(other)],
                })?;
            }
        }
        tally.lines.push(format!(
            "{:<8} {:<9} {}: {}",
            match result.outcome {
                Outcome::Removed => "removed",
                Outcome::Failed { .. } => "FAILED",
                Outcome::Changed { .. } => "changed",
                _ => "kept",
            },
            result.kind.as_str(),
            result.name,
            describe(&result.outcome)
        ));
    }
    Ok(tally)
}

/// One scheduled sweep of the daemon, in process: plan as of now, then apply it.
pub fn sweep_once(
    engine: &Engine<'_>,
    policy: &Policy,
    data_dir: &std::path::Path,
    env: &Environment,
) -> anyhow::Result<String> {
    let now = engine.now_ms();
    let planned = plan_at(data_dir, env, policy, now, now)?;
    let tally = apply_plan(engine, policy, data_dir, env, &planned.plan)?;
    let mut summary = tally.summary();
    if !planned.unlisted.is_empty() {
        summary.push_str(&format!("; {}", planned.unlisted.join("; ")));
    }
    Ok(summary)
}

/// What became of one planned item, in words.
pub fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Removed => "removed".to_owned(),
        Outcome::AlreadyGone => "already gone".to_owned(),
        Outcome::Changed { what } => {
            format!("changed since the plan ({}): left alone", what.join(", "))
        }
        Outcome::NowKept { reasons } => format!("kept now: {}", reasons.join("; ")),
        Outcome::Refused { why } => format!("refused: {why}"),
        Outcome::Failed {
            error,
            failures,
            quarantined,
            ..
        } => format!(
            "failed ({failures} time(s)){}: {error}",
            if *quarantined { ", quarantined" } else { "" }
        ),
        Outcome::Skipped { why } => format!("skipped: {why}"),
        Outcome::Uninspectable { error } => format!("could not be inspected: {error}"),
    }
}

fn record_result(
    engine: &Engine<'_>,
    janitor: &Actor,
    result: &Applied,
    call_id: Option<&String>,
) -> anyhow::Result<()> {
    let steps: Vec<String> = result
        .removal
        .as_ref()
        .map(|r| {
            r.steps
                .iter()
                .map(|s| {
                    format!(
                        "{}: {} {}",
                        s.what,
                        if s.ok { "ok" } else { "FAILED" },
                        s.detail
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let ok = matches!(result.outcome, Outcome::Removed);
    engine.record(Event::Result(Report {
        actor: janitor.clone(),
        tool: result.kind.tool_name().to_owned(),
        session_id: None,
        call_id: call_id.cloned(),
        inputs: inputs_of(result.kind, &result.id, &result.name, &[]),
        outputs: Outputs {
            exit_code: Some(i64::from(!ok)),
            stdout: steps.join("\n"),
            stderr: if ok {
                String::new()
            } else {
                describe(&result.outcome)
            },
        },
        duration_ms: None,
        context: nightwatch_core::Context::default(),
        cwd: None,
    }))?;
    Ok(())
}
