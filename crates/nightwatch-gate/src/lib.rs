//! The one pipeline.
//!
//! Every actor's proposal goes through [`Gate::propose`]: policy decides, and the decision is
//! durable in the ledger before the verdict is returned, so nothing is ever allowed without a
//! trace. What happened afterwards comes back through [`Gate::report`], joined to its decision by
//! the call id; a result with no decision is recorded as *unguarded* (the hook was bypassed or
//! missing). Lifecycle steps (a session starting or ending) go through [`Gate::note`].
//!
//! The gate reads no clock and no environment: the edge supplies the time and the context.
//! Pre-flight checks and safeguards (issue 4) will slot in between deciding and recording.

use nightwatch_core::{Action, Actor};
use nightwatch_ledger::{
    Entry, Ledger, LedgerError, Outputs, Record, RecordActor, RecordContext, event,
};
use nightwatch_policy::{Decision, Policy};
use serde_json::Value;

/// An actor's proposal, with what the ledger needs beside the action itself.
#[derive(Clone, Debug)]
pub struct Proposal {
    pub action: Action,
    /// The agent's id for this call (Claude's `tool_use_id`), when it has one.
    pub call_id: Option<String>,
    /// The tool's inputs as the agent gave them.
    pub inputs: Value,
    pub cwd: Option<String>,
    pub timestamp_ms: i64,
}

/// A decision and the record that holds it.
#[derive(Clone, Debug)]
pub struct Ruling {
    pub decision: Decision,
    pub record: Record,
}

/// What an action produced, reported after it ran.
#[derive(Clone, Debug)]
pub struct Report {
    pub actor: Actor,
    pub tool: String,
    pub session_id: Option<String>,
    pub call_id: Option<String>,
    pub inputs: Value,
    pub outputs: Outputs,
    pub duration_ms: Option<u64>,
    pub context: nightwatch_core::Context,
    pub cwd: Option<String>,
    pub timestamp_ms: i64,
}

pub struct Gate<'a> {
    policy: &'a Policy,
    ledger: &'a dyn Ledger,
}

impl<'a> Gate<'a> {
    pub fn new(policy: &'a Policy, ledger: &'a dyn Ledger) -> Gate<'a> {
        Gate { policy, ledger }
    }

    /// Decides the proposal and records the decision. An error means nothing was recorded:
    /// the caller must refuse the action.
    pub fn propose(&self, proposal: Proposal) -> Result<Ruling, LedgerError> {
        let decision = self.policy.decide(&proposal.action);
        let mut reasons = vec![decision.reason.clone()];
        if let Some(instead) = &decision.instead {
            reasons.push(format!("instead: {instead}"));
        }
        for judged in &decision.invocations {
            if let Some(why) = &judged.invocation.opaque {
                reasons.push(format!("opaque: {why}"));
            }
        }
        let action = &proposal.action;
        let mut entry = Entry::new(
            event::DECISION,
            proposal.timestamp_ms,
            RecordActor::from(&action.actor),
            action.tool.name(),
        );
        entry.session_id = action.context.session.clone();
        entry.inputs = proposal.inputs;
        entry.context = record_context(&action.context);
        entry.verdict = Some(decision.verdict.as_str().to_owned());
        entry.rule = decision.rule.clone();
        entry.reasons = reasons;
        entry.call_id = proposal.call_id;
        entry.cwd = proposal.cwd;
        let record = self.ledger.append(entry)?;
        Ok(Ruling { decision, record })
    }

    /// Records what an action produced: see [`report`].
    pub fn report(&self, report: Report) -> Result<Record, LedgerError> {
        self::report(self.ledger, report)
    }

    /// Records a lifecycle step: see [`note`].
    pub fn note(
        &self,
        step: &str,
        actor: &Actor,
        context: &nightwatch_core::Context,
        details: Value,
        timestamp_ms: i64,
    ) -> Result<Record, LedgerError> {
        self::note(self.ledger, step, actor, context, details, timestamp_ms)
    }
}

/// Records what an action produced, as a `result` joined to its decision, or as an
/// `unguarded-result` when no decision was ever recorded for the call. Needs no policy: what
/// ran is recorded whatever policy says now.
pub fn report(ledger: &dyn Ledger, report: Report) -> Result<Record, LedgerError> {
    let guarded = match &report.call_id {
        Some(call_id) => ledger.decision_for_call(call_id)?.is_some(),
        None => false,
    };
    let kind = if guarded {
        event::RESULT
    } else {
        event::UNGUARDED_RESULT
    };
    let actor = RecordActor::from(&report.actor);
    let mut entry = Entry::new(kind, report.timestamp_ms, actor, report.tool);
    entry.session_id = report.session_id;
    entry.inputs = report.inputs;
    entry.outputs = Some(report.outputs);
    entry.duration_ms = report.duration_ms;
    entry.context = record_context(&report.context);
    entry.call_id = report.call_id;
    entry.cwd = report.cwd;
    if !guarded {
        entry.reasons = vec![
            "no decision was recorded for this call: the hook was bypassed or missing".to_owned(),
        ];
    }
    ledger.append(entry)
}

/// What a refusal that policy did not make was about: the call, as far as it could be read.
#[derive(Clone, Debug)]
pub struct Failure {
    pub actor: Actor,
    /// The tool's name, or `unknown` when the input could not be read.
    pub tool: String,
    pub context: nightwatch_core::Context,
    pub call_id: Option<String>,
    pub inputs: Value,
    /// Why nightwatch could not decide (bad input, unreadable policy, a crash).
    pub reason: String,
    pub timestamp_ms: i64,
}

/// Records a refusal made because nightwatch itself could not decide, so that even that veto
/// is in the ledger with its reason (it is a `decision` with verdict `deny` and no rule).
pub fn refuse(ledger: &dyn Ledger, failure: Failure) -> Result<Record, LedgerError> {
    let actor = RecordActor::from(&failure.actor);
    let mut entry = Entry::new(event::DECISION, failure.timestamp_ms, actor, failure.tool);
    entry.session_id = failure.context.session.clone();
    entry.context = record_context(&failure.context);
    entry.call_id = failure.call_id;
    entry.inputs = failure.inputs;
    entry.verdict = Some(nightwatch_core::Verdict::Deny.as_str().to_owned());
    entry.reasons = vec![failure.reason];
    ledger.append(entry)
}

/// Records a lifecycle step (`session-start`, `stop`, `session-end`, ...).
pub fn note(
    ledger: &dyn Ledger,
    step: &str,
    actor: &Actor,
    context: &nightwatch_core::Context,
    details: Value,
    timestamp_ms: i64,
) -> Result<Record, LedgerError> {
    let mut entry = Entry::new(step, timestamp_ms, RecordActor::from(actor), "session");
    entry.session_id = context.session.clone();
    entry.inputs = details;
    entry.context = record_context(context);
    ledger.append(entry)
}

fn record_context(context: &nightwatch_core::Context) -> RecordContext {
    RecordContext {
        triggered_by: context.triggered_by.clone(),
        alert_id: context.alert_id.clone(),
        host: context.host.clone(),
        task: context.task.clone(),
    }
}
