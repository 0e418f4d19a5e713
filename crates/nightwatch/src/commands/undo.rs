//! `nightwatch undo RECORD | --session S`: put back what an action changed, from the backup
//! taken before it. An undo is a person's action like any other: policy decides it (the
//! built-in policy lets people undo), and the decision is recorded before anything is
//! written. It refuses over later changes unless forced; every undo, done or refused, is
//! recorded.

use crate::cli::UndoArgs;
use crate::commands::{load_policy, policy_source_in};
use crate::context;
use crate::host::Host;
use anyhow::{Context as _, bail};
use nightwatch_backup::{Observation, SnapshotId};
use nightwatch_core::{Action, Tool, Verdict};
use nightwatch_gate::{Event, Proposal};
use nightwatch_ledger::schema::Undone;
use nightwatch_ledger::{Filter, Record, Safeguards, event};
use nightwatch_store::LedgerReader;
use serde_json::{Value, json};

pub fn run(args: UndoArgs) -> anyhow::Result<u8> {
    let host = Host::open()?;
    let engine = host.engine();
    let ledger = host.ledger();
    let store = host.backups()?;
    let human = context::human(args.by.clone(), &host.env);
    let (policy, _) = load_policy(&policy_source_in(&host.env))?;
    let targets = match (&args.record, &args.session) {
        (Some(id), _) => vec![decision_of(ledger, id)?],
        (None, Some(session)) => session_decisions(ledger, session)?,
        (None, None) => bail!("name a record or --session"),
    };
    if targets.is_empty() {
        println!("nothing in that session was backed up, so there is nothing to undo");
        return Ok(0);
    }
    // Latest first: each undo expects the state the later actions' undos leave behind.
    for decision in &targets {
        let snapshot_id = snapshot_of(decision).with_context(|| {
            format!(
                "{} took no backup: it {}",
                decision.id,
                match decision.verdict.as_deref() {
                    Some("allow") => "wrote nothing nightwatch could locate",
                    _ => "was not allowed, so it changed nothing",
                }
            )
        })?;
        // Through the one pipeline first: policy may forbid restoring, and the decision is
        // on record before a file is touched.
        let call_id = format!("undo-{}-{}", decision.id, engine.clock().written_ms());
        let mut action = Action::new(
            human.clone(),
            Tool::Named {
                name: "undo".to_owned(),
            },
        );
        action.context.session = decision.session_id.clone();
        let ruling = engine.propose(
            &policy,
            Proposal {
            action,
            call_id: Some(call_id.clone()),
            inputs: json!({ "record": decision.id, "snapshot": snapshot_id, "force": args.force }),
            cwd: None,
        })?;
        if ruling.decision.verdict != Verdict::Allow {
            eprintln!(
                "nightwatch: policy says {} to undoing {} ({}): {}",
                ruling.decision.verdict, decision.id, ruling.record.id, ruling.decision.reason
            );
            return Ok(1);
        }
        let after = after_state(ledger, decision)?;
        let outcome = SnapshotId::parse(&snapshot_id)
            .map_err(anyhow::Error::msg)
            .and_then(|id| store.load(&id).map_err(anyhow::Error::from))
            .and_then(|snapshot| {
                store
                    .restore(&snapshot, after.as_ref(), args.force)
                    .map_err(anyhow::Error::from)
            });
        let undone = Undone {
            record: decision.id.clone(),
            snapshot: snapshot_id.clone(),
            force: args.force,
        };
        let outcome = outcome
            .map(|restored| restored.steps.iter().map(|s| s.to_string()).collect())
            .map_err(|error| format!("{error:#}"));
        let failed = outcome.as_ref().err().cloned();
        let record = engine.record(Event::Undo {
            by: human.clone(),
            decision: Box::new(decision.clone()),
            undone,
            call_id,
            outcome,
        })?;
        match failed {
            None => println!("{} ({})", record.reasons[0], record.id),
            Some(why) => {
                eprintln!(
                    "nightwatch: did not undo {} ({}): {why}",
                    decision.id, record.id
                );
                return Ok(1);
            }
        }
    }
    Ok(0)
}

/// The decision a record names: itself, or the decision of a result.
fn decision_of(ledger: &dyn LedgerReader, id: &str) -> anyhow::Result<Record> {
    let record = ledger.get(id)?.with_context(|| format!("no record {id}"))?;
    if record.event == event::DECISION {
        return Ok(record);
    }
    if record.event == event::RESULT
        && let Some(call_id) = &record.call_id
        && let Some(decision) = ledger.decision_for_call(call_id)?
    {
        return Ok(decision);
    }
    bail!(
        "{} is a {} record; undo takes a decision or its result",
        record.id,
        record.event
    )
}

/// The session's backed-up decisions not undone yet, latest first.
fn session_decisions(ledger: &dyn LedgerReader, session: &str) -> anyhow::Result<Vec<Record>> {
    let records = ledger.query(&Filter {
        session: Some(session.to_owned()),
        ..Filter::default()
    })?;
    let undone: Vec<&str> = records
        .iter()
        .filter(|r| {
            r.event == event::UNDO && r.outputs.as_ref().and_then(|o| o.exit_code) == Some(0)
        })
        .filter_map(|r| r.inputs.get("record").and_then(Value::as_str))
        .collect();
    Ok(records
        .iter()
        .rev()
        .filter(|r| r.event == event::DECISION && snapshot_of(r).is_some())
        .filter(|r| !undone.contains(&r.id.as_str()))
        .cloned()
        .collect())
}

fn snapshot_of(decision: &Record) -> Option<String> {
    Safeguards::of(decision.safeguards.as_ref())
        .backup?
        .snapshot
}

/// What the action left behind, from its result record.
fn after_state(
    ledger: &dyn LedgerReader,
    decision: &Record,
) -> anyhow::Result<Option<Observation>> {
    let Some(call_id) = &decision.call_id else {
        return Ok(None);
    };
    let results = ledger.query(&Filter {
        since_ms: Some(decision.timestamp_ms),
        session: decision.session_id.clone(),
        event: Some(event::RESULT.to_owned()),
        ..Filter::default()
    })?;
    let Some(result) = results
        .iter()
        .find(|r| r.call_id.as_deref() == Some(call_id.as_str()))
    else {
        return Ok(None);
    };
    let after = Safeguards::of(result.safeguards.as_ref())
        .after
        .map(serde_json::from_value)
        .transpose()
        .with_context(|| format!("{} holds an unreadable after-state", result.id))?;
    Ok(after)
}
