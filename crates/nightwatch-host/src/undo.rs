//! Undo: put back what an action changed, from the backup taken before it. An undo is a
//! person's action like any other: policy decides it through the engine (the built-in policy
//! lets people undo), and the decision is recorded before anything is written. It refuses over
//! later changes unless forced; every undo, done or refused, is recorded.

use anyhow::{Context as _, bail};
use nightwatch_backup::{BackupStore, Observation, SnapshotId};
use nightwatch_core::{Action, Actor, Tool, Verdict};
use nightwatch_gate::{Engine, Event, Proposal};
use nightwatch_ledger::schema::Undone;
use nightwatch_ledger::{Filter, Record, Safeguards, event};
use nightwatch_policy::Policy;
use nightwatch_store::LedgerReader;
use serde_json::{Value, json};

/// What to undo.
pub enum Target {
    /// One record: a decision, or the result of one.
    Record(String),
    /// Every backed-up decision of a session not undone yet.
    Session(String),
}

/// How the undo of one decision went.
#[derive(Debug)]
pub enum Outcome {
    /// Restored: `summary` is the undo record's reason, `steps` what was put back.
    Done {
        decision: String,
        record: String,
        summary: String,
        steps: Vec<String>,
    },
    /// Policy did not allow it: nothing was restored; `record` holds that decision.
    Refused {
        decision: String,
        record: String,
        verdict: Verdict,
        reason: String,
    },
    /// Allowed, but the restore failed (a later change, a pruned backup, ...): `record` is the
    /// undo record saying so.
    Failed {
        decision: String,
        record: String,
        why: String,
        /// Forcing the undo would restore anyway (it refused over a later change).
        forcible: bool,
    },
}

impl Outcome {
    pub fn is_done(&self) -> bool {
        matches!(self, Outcome::Done { .. })
    }
}

/// A person's undo, with everything it goes through.
pub struct Undo<'a> {
    pub engine: &'a Engine<'a>,
    pub ledger: &'a dyn LedgerReader,
    pub store: &'a BackupStore,
    pub policy: &'a Policy,
    pub by: Actor,
    /// Restore even over changes made since the action.
    pub force: bool,
}

impl Undo<'_> {
    /// The decisions `target` names, latest first: each undo expects the state the later
    /// actions' undos leave behind, so a caller undoes them in this order and stops at the
    /// first one not done. Empty when nothing in a session was backed up.
    pub fn decisions(&self, target: &Target) -> anyhow::Result<Vec<Record>> {
        match target {
            Target::Record(id) => Ok(vec![decision_of(self.ledger, id)?]),
            Target::Session(session) => session_decisions(self.ledger, session),
        }
    }

    /// Undoes one decision: proposed first (policy may forbid restoring, and the decision is
    /// on record before a file is touched), then restored, then recorded either way. An error
    /// means the decision took no backup or the ledger could not be read or written.
    pub fn one(&self, decision: &Record) -> anyhow::Result<Outcome> {
        let snapshot_id = snapshot_of(decision).with_context(|| {
            format!(
                "{} took no backup: it {}",
                decision.id,
                match decision.verdict.as_deref() {
                    Some(verdict @ ("deny" | "halt")) => {
                        format!("was refused ({verdict}), so it did not run and changed nothing")
                    }
                    Some(_) => "wrote nothing nightwatch could locate".to_owned(),
                    None => "is not a decision about a call".to_owned(),
                }
            )
        })?;
        let call_id = format!("undo-{}-{}", decision.id, self.engine.clock().written_ms());
        let mut action = Action::new(
            self.by.clone(),
            Tool::Named {
                name: "undo".to_owned(),
            },
        );
        action.context.session = decision.session_id.clone();
        let inputs = json!({ "record": decision.id, "snapshot": snapshot_id, "force": self.force });
        let ruling = self.engine.propose(
            self.policy,
            Proposal {
                action,
                call_id: Some(call_id.clone()),
                inputs,
                cwd: None,
            },
        )?;
        if ruling.decision.verdict != Verdict::Allow {
            return Ok(Outcome::Refused {
                decision: decision.id.clone(),
                record: ruling.record.id,
                verdict: ruling.decision.verdict,
                reason: ruling.decision.reason,
            });
        }
        let after = after_state(self.ledger, decision)?;
        let mut forcible = false;
        let restored = SnapshotId::parse(&snapshot_id)
            .map_err(anyhow::Error::msg)
            .and_then(|id| self.store.load(&id).map_err(anyhow::Error::from))
            .and_then(|snapshot| {
                self.store
                    .restore(&snapshot, after.as_ref(), self.force)
                    .map_err(|e| {
                        forcible = e.force_would_restore();
                        anyhow::Error::from(e)
                    })
            })
            .map(|restored| restored.steps.iter().map(|s| s.to_string()).collect())
            .map_err(|error| format!("{error:#}"));
        let record = self.engine.record(Event::Undo {
            by: self.by.clone(),
            decision: Box::new(decision.clone()),
            undone: Undone {
                record: decision.id.clone(),
                snapshot: snapshot_id,
                force: self.force,
            },
            call_id,
            outcome: restored.clone(),
        })?;
        Ok(match restored {
            Ok(steps) => Outcome::Done {
                decision: decision.id.clone(),
                summary: record.reasons[0].clone(),
                record: record.id,
                steps,
            },
            Err(why) => Outcome::Failed {
                decision: decision.id.clone(),
                record: record.id,
                why,
                forcible,
            },
        })
    }
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
