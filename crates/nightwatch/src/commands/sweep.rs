//! `nightwatch sweep plan | apply` and `nightwatch why`: the janitor through the one pipeline.
//! Every removal is a janitor's action that policy decides and the ledger records, with its
//! result; every keep is recorded with its reasons; `why` reads them back.

use crate::cli::{SweepApplyArgs, SweepPlanArgs, WhyArgs};
use crate::commands::{load_policy, open_ledger};
use crate::host::Host;
use anyhow::{Context as _, bail};
use nightwatch_gate::Simulated;
use nightwatch_host::sweep::{SweepLock, apply_plan, finish_interrupted, plan_at, record_plan};
use nightwatch_janitor::{Decision, Plan};
use nightwatch_ledger::{Filter, event};
use serde_json::Value;
use std::io::Write as _;
use std::time::Duration;

/// "Now" for ages: `--now`, else the one clock. It moves what is judged only: records keep
/// the real time they were written at.
fn judged_ms(host: &Host, now: Option<&str>) -> anyhow::Result<i64> {
    match now {
        Some(text) => crate::timespec::parse(text, host.clock.now(), host.clock.zone())
            .map_err(|e| anyhow::anyhow!("--now {text:?}: {e}")),
        None => Ok(host.clock.now_ms()),
    }
}

pub fn plan_command(args: SweepPlanArgs) -> anyhow::Result<u8> {
    let host = Host::open()?;
    let now = judged_ms(&host, args.now.as_deref())?;
    let (policy, _) = load_policy(&args.source)?;
    let _lock = SweepLock::acquire(
        &host.data_dir,
        Duration::from_secs(args.wait),
        host.clock.written_ms(),
    )?;
    report_interrupted(&host, &policy)?;
    let planned = plan_and_record(
        &host,
        &policy,
        now,
        args.now.is_some(),
        args.session.as_deref(),
    )?;
    let incomplete = planned.incomplete();
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
    Ok(u8::from(incomplete))
}

/// Plans as of `now` (only `session`'s leftovers, when given) and records the plan, so `why`
/// can answer before anything is applied; `what_if` when `now` came from `--now`.
fn plan_and_record(
    host: &Host,
    policy: &nightwatch_policy::Policy,
    now: i64,
    what_if: bool,
    session: Option<&str>,
) -> anyhow::Result<nightwatch_host::sweep::Planned> {
    let planned = plan_at(
        &host.data_dir,
        &host.env,
        policy,
        now,
        host.clock.now_ms(),
        session,
    )?;
    record_plan(&host.engine(), &planned, what_if).context("the plan could not be recorded")?;
    Ok(planned)
}

/// Removals an earlier run was killed in the middle of: re-inspected, and what became of each
/// recorded against its decision, before anything new is planned.
fn report_interrupted(host: &Host, policy: &nightwatch_policy::Policy) -> anyhow::Result<()> {
    let lines = finish_interrupted(&host.engine(), policy.sweep(), &host.env)
        .context("the removals an earlier run left unfinished could not be checked")?;
    for line in lines {
        eprintln!("nightwatch: {line}");
    }
    Ok(())
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

pub fn apply_command(args: SweepApplyArgs) -> anyhow::Result<u8> {
    let planned = match &args.plan {
        Some(file) => Some(read_plan(file)?),
        None => None,
    };
    if !args.yes
        && let Some(planned) = &planned
    {
        print_dry_run(planned);
        return Ok(0);
    }
    let host = Host::open()?;
    let now = judged_ms(&host, args.now.as_deref())?;
    let (policy, _) = load_policy(&args.source)?;
    let simulated = Simulated {
        real: &host.clock,
        now_ms: now,
    };
    let _lock = SweepLock::acquire(
        &host.data_dir,
        Duration::from_secs(args.wait),
        host.clock.written_ms(),
    )?;
    report_interrupted(&host, &policy)?;
    let engine = host.engine();
    let engine = engine.with_clock(&simulated);
    // `--session`: the session's leftovers, planned now (and recorded as a plan is).
    let (planned, unlisted) = match planned {
        Some(planned) => (planned, false),
        None => {
            let reaped = plan_and_record(
                &host,
                &policy,
                now,
                args.now.is_some(),
                args.session.as_deref(),
            )?;
            if !args.yes {
                print_dry_run(&reaped.plan);
                return Ok(u8::from(reaped.incomplete()));
            }
            let incomplete = reaped.incomplete();
            (reaped.plan, incomplete)
        }
    };
    let mut print = |line: &str| {
        // Each line as its item finishes, so a long run shows where it is.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    };
    let tally = apply_plan(
        &engine,
        &policy,
        &host.data_dir,
        &host.env,
        &planned,
        &mut print,
    )?;
    println!("{}", tally.summary());
    Ok(u8::from(tally.incomplete() || unlisted))
}

fn read_plan(file: &std::path::Path) -> anyhow::Result<Plan> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the plan {}", file.display()))?;
    Plan::from_json(&text)
        .with_context(|| format!("{} is not a plan `sweep plan --out` wrote", file.display()))
}

fn print_dry_run(planned: &Plan) {
    for entry in planned.removals() {
        println!("would remove {} {}", entry.kind.as_str(), entry.name);
    }
    println!(
        "dry run: {} to remove if still as planned; add --yes to remove them",
        planned.removals().count()
    );
}

/// `nightwatch why TARGET`: what the janitor decided about it, latest last.
pub fn why(args: WhyArgs) -> anyhow::Result<u8> {
    let ledger = open_ledger()?;
    // An app under idle control answers first: its name is its own, not a container's.
    let idle = ledger.query(&Filter {
        actor: Some(nightwatch_gate::IDLE_CONTROLLER.to_owned()),
        ..Filter::default()
    })?;
    let about_app = crate::commands::idle::about(&args.target, &idle);
    if !about_app.is_empty() {
        for line in crate::commands::idle::explain(&args.target, &about_app, args.last) {
            println!("{line}");
        }
        return Ok(0);
    }
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
            "neither the janitor nor the idle controller has a record of {:?}: it was never \
             swept, is not something the sweep rules cover (containers, worktrees, branches, \
             swept paths), and is no app under idle control (serve.yaml: idle.apps)",
            args.target
        );
    }
    for record in about.iter().rev().take(args.last).rev() {
        let what = match record.event.as_str() {
            event::SWEEP_KEEP => "kept".to_owned(),
            event::SWEEP_PLAN => {
                let what_if = record
                    .inputs
                    .get("what_if_ms")
                    .and_then(Value::as_i64)
                    .map(|at| {
                        format!(
                            "WHAT-IF as of {}, ",
                            jiff::Timestamp::from_millisecond(at).unwrap_or_default()
                        )
                    })
                    .unwrap_or_default();
                match record.inputs.get("decision").and_then(Value::as_str) {
                    Some("remove") => {
                        format!("planned: REMOVE ({what_if}sweep plan; nothing done yet)")
                    }
                    _ => format!("planned: keep ({what_if}sweep plan)"),
                }
            }
            event::DECISION => format!("removal {}", record.verdict.as_deref().unwrap_or("?")),
            event::RESULT => match record.outputs.as_ref() {
                Some(o) if o.exit_code == Some(0) => "removed".to_owned(),
                Some(o) if o.stderr.starts_with("interrupted:") => {
                    "removal INTERRUPTED (found at a later run)".to_owned()
                }
                _ => "removal FAILED".to_owned(),
            },
            other => other.to_owned(),
        };
        println!("{}  {:>6}  {what}", record.timestamp_text(), record.id);
        for reason in &record.reasons {
            println!("{:30}{reason}", "");
        }
        // A removal's decision carries the janitor's own reasons: the rule and the facts.
        if record.event == event::DECISION {
            let facts = record.inputs.get("reasons").and_then(Value::as_array);
            for reason in facts.into_iter().flatten().filter_map(Value::as_str) {
                println!("{:30}because: {reason}", "");
            }
        }
        if let Some(outputs) = &record.outputs {
            for line in outputs.stdout.lines().chain(outputs.stderr.lines()) {
                println!("{:30}{line}", "");
            }
        }
    }
    Ok(0)
}
