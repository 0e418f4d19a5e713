//! `nightwatch sweep plan | apply` and `nightwatch why`: the janitor through the one pipeline.
//! Every removal is a janitor's action that policy decides and the ledger records, with its
//! result; every keep is recorded with its reasons; `why` reads them back.

use crate::cli::{SweepApplyArgs, SweepPlanArgs, WhyArgs};
use crate::clock::Clock;
use crate::commands::{live_guards, load_policy, open_ledger};
use crate::home;
use anyhow::{Context as _, bail};
use nightwatch_core::{Actor, ActorKind, Verdict};
use nightwatch_gate::{Gate, Proposal, Report};
use nightwatch_janitor::{
    Applied, Decision, Inventory, Item, Kind, Outcome, PathInventory, Plan, PlanEntry, SweepRules,
    list_all, plan, removal_action,
};
use nightwatch_ledger::{Entry, Filter, Outputs, RecordActor, event};
use nightwatch_store::{JanitorStore, Ledger};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::IsTerminal;

/// The inventories the sweep rules ask for: paths always, worktrees and branches of the
/// repositories `sweep.worktrees.repos` names.
fn inventories(rules: &SweepRules) -> Vec<Box<dyn Inventory>> {
    let mut all: Vec<Box<dyn Inventory>> = vec![Box::new(PathInventory::from_rules(rules))];
    match docker_here(rules) {
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
) -> Result<Option<nightwatch_docker::DockerInventory>, nightwatch_janitor::InventoryError> {
    let configured = std::env::var_os("DOCKER_HOST").is_some_and(|h| !h.is_empty());
    if !configured && !std::path::Path::new("/var/run/docker.sock").exists() {
        return Ok(None);
    }
    nightwatch_docker::DockerInventory::from_env(&rules.containers).map(Some)
}

/// Containers' exec and attach activity from the Engine's recent events, remembered in the
/// janitor's state (the Engine forgets them).
fn note_container_activity(store: &dyn JanitorStore, rules: &SweepRules, now: i64) {
    if let Ok(Some(docker)) = docker_here(rules) {
        let since = now.saturating_sub(24 * 3600 * 1000);
        if let Err(error) = docker.record_activity(store, since, now) {
            eprintln!("nightwatch: container activity not read: {error}");
        }
    }
}

/// "Now" for ages: `--now`, else the one clock.
fn now_ms(clock: &Clock, now: Option<&str>) -> anyhow::Result<i64> {
    match now {
        Some(text) => crate::timespec::parse(text, clock.now(), clock.zone())
            .map_err(|e| anyhow::anyhow!("--now {text:?}: {e}")),
        None => Ok(clock.now_ms()),
    }
}

fn progress(message: &str) {
    if std::io::stderr().is_terminal() {
        eprintln!("{message}");
    }
}

pub fn plan_command(args: SweepPlanArgs) -> anyhow::Result<u8> {
    let clock = Clock::from_environment()?;
    let now = now_ms(&clock, args.now.as_deref())?;
    let (policy, _) = load_policy(&args.source)?;
    let rules = policy.sweep();
    let store = crate::stores::janitor_state(&home::data_dir())
        .context("cannot open the janitor's state")?;
    let wall = clock.now_ms();
    note_container_activity(store.as_ref(), rules, wall);
    let mut state = store.load()?;
    let owned = inventories(rules);
    let inventories: Vec<&dyn Inventory> = owned.iter().map(|i| i.as_ref()).collect();
    progress("listing what agents left behind...");
    let listing = list_all(&inventories);
    for (kind, error) in &listing.errors {
        eprintln!("nightwatch: cannot list {kind}s, so none is planned: {error}");
    }
    state.observe(&listing.items, now);
    store.save(&mut state)?;
    let planned = plan(&listing.items, rules, now, &state);
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
    Ok(u8::from(!listing.errors.is_empty()))
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

/// Puts each removal through the gate: policy may forbid it, and its decision is recorded.
struct JanitorGate<'a> {
    gate: Gate<'a>,
    now_ms: i64,
    /// The call id of each item's decision, to join its result to it.
    calls: HashMap<String, String>,
}

impl nightwatch_janitor::Gate for JanitorGate<'_> {
    fn allow(&mut self, item: &Item, entry: &PlanEntry) -> Result<(), String> {
        let call_id = format!(
            "sweep-{}-{}",
            &entry.fingerprint[..entry.fingerprint.len().min(16)],
            self.now_ms
        );
        let ruling = self
            .gate
            .propose(Proposal {
                action: removal_action(item),
                call_id: Some(call_id.clone()),
                inputs: inputs_of(item.kind(), &item.id, &item.name, &entry.reasons),
                cwd: None,
                timestamp_ms: self.now_ms,
            })
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
    json!({ "kind": kind.as_str(), "id": id, "name": name, "reasons": reasons })
}

pub fn apply_command(args: SweepApplyArgs) -> anyhow::Result<u8> {
    let clock = Clock::from_environment()?;
    let now = now_ms(&clock, args.now.as_deref())?;
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
    let (policy, _) = load_policy(&args.source)?;
    let rules = policy.sweep();
    let ledger = open_ledger()?;
    let guards = live_guards();
    let store = crate::stores::janitor_state(&home::data_dir())
        .context("cannot open the janitor's state")?;
    let mut state = store.load()?;
    let owned = inventories(rules);
    let inventories: Vec<&dyn Inventory> = owned.iter().map(|i| i.as_ref()).collect();
    let mut gate = JanitorGate {
        gate: Gate::new(&policy, &ledger, &guards),
        now_ms: now,
        calls: HashMap::new(),
    };
    progress(&format!(
        "re-inspecting and removing {} item(s)...",
        planned.removals().count()
    ));
    let applied =
        nightwatch_janitor::apply(&planned, &inventories, rules, now, &mut state, &mut gate);
    store.save(&mut state)?;
    let janitor = Actor::new(ActorKind::Janitor, "janitor");
    let (mut kept, mut removed, mut failed, mut changed) = (0, 0, 0, 0);
    // The plan's keeps: "the decision gets logged either way".
    for entry in planned
        .entries
        .iter()
        .filter(|e| e.decision == Decision::Keep)
    {
        kept += 1;
        record_keep(
            &ledger,
            &janitor,
            entry.kind,
            &entry.id,
            &entry.name,
            &entry.reasons,
            now,
        )?;
    }
    for result in &applied {
        match &result.outcome {
            Outcome::Removed | Outcome::Failed { .. } => {
                let ok = matches!(result.outcome, Outcome::Removed);
                if ok {
                    removed += 1;
                } else {
                    failed += 1;
                }
                record_result(
                    &ledger,
                    &guards,
                    &janitor,
                    result,
                    gate.calls.get(&result.id),
                    now,
                )?;
                if result.newly_quarantined {
                    record_quarantine(&ledger, &policy, &janitor, result, now)?;
                }
            }
            other => {
                if matches!(other, Outcome::Changed { .. }) {
                    changed += 1;
                } else {
                    kept += 1;
                }
                let why = describe(other);
                record_keep(
                    &ledger,
                    &janitor,
                    result.kind,
                    &result.id,
                    &result.name,
                    &[why],
                    now,
                )?;
            }
        }
        println!(
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
        );
    }
    println!("kept {kept}, removed {removed}, failed {failed}, changed since the plan {changed}");
    Ok(u8::from(failed > 0))
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

fn record_keep(
    ledger: &dyn Ledger,
    janitor: &Actor,
    kind: Kind,
    id: &str,
    name: &str,
    reasons: &[String],
    now: i64,
) -> anyhow::Result<()> {
    let mut entry = Entry::new(
        event::SWEEP_KEEP,
        now,
        RecordActor::from(janitor),
        kind.tool_name(),
    );
    entry.inputs = inputs_of(kind, id, name, &[]);
    entry.reasons = reasons.to_vec();
    ledger.append(entry)?;
    Ok(())
}

fn record_result(
    ledger: &dyn Ledger,
    guards: &dyn nightwatch_gate::Guards,
    janitor: &Actor,
    result: &Applied,
    call_id: Option<&String>,
    now: i64,
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
    nightwatch_gate::report(
        ledger,
        guards,
        Report {
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
            timestamp_ms: now,
        },
    )?;
    Ok(())
}

fn record_quarantine(
    ledger: &dyn Ledger,
    policy: &nightwatch_policy::Policy,
    janitor: &Actor,
    result: &Applied,
    now: i64,
) -> anyhow::Result<()> {
    let notify = policy.safeguards().escalate.halt.clone();
    let mut entry = Entry::new(
        event::QUARANTINED,
        now,
        RecordActor::from(janitor),
        result.kind.tool_name(),
    );
    entry.inputs = inputs_of(result.kind, &result.id, &result.name, &[]);
    entry.verdict = Some(Verdict::Halt.as_str().to_owned());
    entry.reasons = vec![format!(
        "gave up removing {} {} after repeated failures; it stays until a human looks: {}",
        result.kind.as_str(),
        result.name,
        describe(&result.outcome)
    )];
    if !notify.is_empty() {
        entry.safeguards = Some(json!({ "notify": notify }));
    }
    let record = ledger.append(entry)?;
    if !notify.is_empty() {
        super::send_escalation_in_background(
            &record.id,
            &crate::environment::Environment::of_process(),
        );
    }
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
