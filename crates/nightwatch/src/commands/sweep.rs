//! `nightwatch sweep plan | apply` and `nightwatch why`: the janitor through the one pipeline.
//! Every removal is a janitor's action that policy decides and the ledger records, with its
//! result; every keep is recorded with its reasons; `why` reads them back.

use crate::cli::{SweepApplyArgs, SweepPlanArgs, WhyArgs};
use crate::commands::{load_policy, open_ledger};
use crate::environment::Environment;
use crate::host::Host;
use anyhow::{Context as _, bail};
use nightwatch_core::{Actor, ActorKind, Verdict};
use nightwatch_gate::{Engine, Event, Proposal, Report, Simulated};
use nightwatch_janitor::{
    Applied, Decision, Inventory, Item, Kind, Outcome, PathInventory, Plan, PlanEntry, SweepRules,
    list_all, plan, removal_action,
};
use nightwatch_ledger::schema::Swept;
use nightwatch_ledger::{Filter, Outputs, event};
use nightwatch_policy::Policy;
use nightwatch_store::{JanitorStore, LedgerReader};
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

/// "Now" for ages: `--now`, else the one clock. It moves what is judged only: records keep
/// the real time they were written at.
fn judged_ms(host: &Host, now: Option<&str>) -> anyhow::Result<i64> {
    match now {
        Some(text) => crate::timespec::parse(text, host.clock.now(), host.clock.zone())
            .map_err(|e| anyhow::anyhow!("--now {text:?}: {e}")),
        None => Ok(host.clock.now_ms()),
    }
}

fn progress(message: &str) {
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

pub fn plan_command(args: SweepPlanArgs) -> anyhow::Result<u8> {
    let host = Host::open()?;
    let now = judged_ms(&host, args.now.as_deref())?;
    let (policy, _) = load_policy(&args.source)?;
    let planned = plan_at(&host.data_dir, &host.env, &policy, now, host.clock.now_ms())?;
    let unlisted = !planned.unlisted.is_empty();
    let planned = planned.plan;
    if let Some(out) = &args.out {
        std::fs::write(out, planned.to_json())
            .with_context(|| format!("cannot write the plan to {}", out.display()))?;
    }
    if args.json {
        println!("{}", planned.to_json());
    } else {
        print!("{}", plan_table(&planned));
        if let Some(out) = &args.out {
            println!(
                "plan written to {}; `nightwatch sweep apply --plan {} --yes` carries it out",
                out.display(),
                out.display()
            );
        }
    }
    Ok(u8::from(unlisted))
}

fn plan_table(planned: &Plan) -> String {
    let mut out = String::new();
    for entry in &planned.entries {
        let decision = match entry.decision {
            Decision::Keep => "keep",
            Decision::Remove => "REMOVE",
        };
        out.push_str(&format!(
            "{decision:<7} {:<9} {}\n",
            entry.kind.as_str(),
            entry.name
        ));
        for reason in &entry.reasons {
            out.push_str(&format!("{:18}{reason}\n", ""));
        }
    }
    let removals = planned.removals().count();
    out.push_str(&format!(
        "{} to remove, {} to keep (dry run: nothing was changed)\n",
        removals,
        planned.entries.len() - removals
    ));
    out
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

pub fn apply_command(args: SweepApplyArgs) -> anyhow::Result<u8> {
    let text = std::fs::read_to_string(&args.plan)
        .with_context(|| format!("cannot read the plan {}", args.plan.display()))?;
    let planned = Plan::from_json(&text).with_context(|| {
        format!(
            "{} is not a plan `sweep plan --out` wrote",
            args.plan.display()
        )
    })?;
    if !args.yes {
        for entry in planned.removals() {
            println!("would remove {} {}", entry.kind.as_str(), entry.name);
        }
        println!(
            "dry run: {} to remove if still as planned; add --yes to remove them",
            planned.removals().count()
        );
        return Ok(0);
    }
    let host = Host::open()?;
    let now = judged_ms(&host, args.now.as_deref())?;
    let (policy, _) = load_policy(&args.source)?;
    let simulated = Simulated {
        real: &host.clock,
        now_ms: now,
    };
    let engine = host.engine();
    let engine = engine.with_clock(&simulated);
    let tally = apply_plan(&engine, &policy, &host.data_dir, &host.env, &planned)?;
    for line in &tally.lines {
        println!("{line}");
    }
    println!("{}", tally.summary());
    Ok(u8::from(tally.failed > 0))
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

fn describe(outcome: &Outcome) -> String {
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

/// `nightwatch why TARGET`: what the janitor decided about it, latest last.
pub fn why(args: WhyArgs) -> anyhow::Result<u8> {
    let ledger = open_ledger()?;
    let records = ledger.query(&Filter {
        actor: Some("janitor".to_owned()),
        ..Filter::default()
    })?;
    let about: Vec<_> = records
        .iter()
        .filter(|r| {
            ["id", "name"]
                .iter()
                .any(|key| r.inputs.get(key).and_then(Value::as_str) == Some(args.target.as_str()))
        })
        .collect();
    if about.is_empty() {
        bail!(
            "the janitor has no record of {:?}: it was never swept, or is not something the \
             sweep rules cover (containers, worktrees, branches, swept paths)",
            args.target
        );
    }
    for record in about.iter().rev().take(args.last).rev() {
        let what = match record.event.as_str() {
            event::SWEEP_KEEP => "kept".to_owned(),
            event::DECISION => format!("removal {}", record.verdict.as_deref().unwrap_or("?")),
            event::RESULT => match record.outputs.as_ref().and_then(|o| o.exit_code) {
                Some(0) => "removed".to_owned(),
                _ => "removal FAILED".to_owned(),
            },
            other => other.to_owned(),
        };
        println!("{}  {:>6}  {what}", record.timestamp_text(), record.id);
        for reason in &record.reasons {
            println!("{:30}{reason}", "");
        }
        if let Some(outputs) = &record.outputs {
            for line in outputs.stdout.lines().chain(outputs.stderr.lines()) {
                println!("{:30}{line}", "");
            }
        }
    }
    Ok(0)
}
