//! The one pipeline.
//!
//! Every actor's proposal goes through [`Gate::propose`]:
//!
//! 1. policy decides, judging each path by every name it has here (the guards' path facts:
//!    absolute, through symlinks, a protected location's symbolic name);
//! 2. an ask that a human approved for this actor and this exact call goes through, once;
//! 3. the pre-flight checks the deciding rules attach run, unless the verdict is already deny,
//!    and can only make it stricter (a check that cannot tell counts as one that found);
//! 4. an allowed action that writes local files gets them backed up first; a backup that
//!    fails turns the verdict into deny, since the way back is part of the permission;
//! 5. the decision, with every check's finding, the backup and the approval, is durable in the
//!    ledger before the verdict is returned, so nothing is ever allowed without a trace;
//! 6. a halt or ask names the notifiers to tell ([`Ruling::notify`]); the edge sends them.
//!
//! What happened afterwards comes back through [`report`], joined to its decision by the call
//! id, with the state the action left its backed-up paths in (for undo); a result with no
//! decision is recorded as *unguarded* (the hook was bypassed or missing). Lifecycle steps go
//! through [`note`], refusals nightwatch makes because it cannot decide through [`refuse`].
//!
//! The gate reads no clock and no environment: the edge supplies the time and the context, and
//! the world is reached through [`Guards`].

mod approvals;
mod facts;
mod guards;
mod written;

pub use approvals::{LONGEST_APPROVAL_MS, usable_approval};
pub use facts::{LiveFacts, Named, Places};
pub use guards::{CheckSubject, Guards, LedgerHistory, LiveGuards};
pub use written::{Written, written_paths};

use nightwatch_core::{Action, Actor, Tool, Verdict};
use nightwatch_ledger::{Entry, Outputs, Record, RecordActor, RecordContext, event};
use nightwatch_policy::{Decision, Policy};
use nightwatch_store::{Ledger, StoreError as LedgerError};
use serde_json::{Value, json};
use std::path::PathBuf;

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

/// A decision and the record that holds it. `decision` is the final word: policy's verdict
/// as approvals, checks and backups left it.
#[derive(Clone, Debug)]
pub struct Ruling {
    pub decision: Decision,
    pub record: Record,
    /// Notifiers to tell, for a halt or an ask.
    pub notify: Vec<String>,
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
    guards: &'a dyn Guards,
}

impl<'a> Gate<'a> {
    pub fn new(policy: &'a Policy, ledger: &'a dyn Ledger, guards: &'a dyn Guards) -> Gate<'a> {
        Gate {
            policy,
            ledger,
            guards,
        }
    }

    /// Decides the proposal and records the decision. An error means nothing was recorded:
    /// the caller must refuse the action.
    pub fn propose(&self, proposal: Proposal) -> Result<Ruling, LedgerError> {
        let action = &proposal.action;
        let facts = self.guards.path_facts(proposal.cwd.as_deref());
        let mut decision = self.policy.decide_with(action, facts.as_ref());
        let mut safeguards = serde_json::Map::new();
        let mut reasons = vec![decision.reason.clone()];
        let fingerprint = nightwatch_checks::fingerprint(&action.tool.name(), &proposal.inputs);

        if decision.verdict == Verdict::Ask
            && let Some(approval) = usable_approval(
                self.ledger,
                &action.actor.id,
                &fingerprint,
                proposal.timestamp_ms,
            )?
        {
            let by = &approval.actor.id;
            decision.verdict = Verdict::Allow;
            decision.reason = format!(
                "approved by {by} ({}), once: {}",
                approval.id, decision.reason
            );
            reasons.insert(0, decision.reason.clone());
            safeguards.insert(
                "approval".into(),
                json!({ "record": approval.id, "by": by, "asked": approval.inputs.get("record") }),
            );
        }

        if decision.verdict < Verdict::Deny && !decision.checks.is_empty() {
            self.run_checks(
                &mut decision,
                &mut reasons,
                &mut safeguards,
                action,
                &fingerprint,
                proposal.timestamp_ms,
            );
        }

        if decision.verdict == Verdict::Allow {
            self.back_up(&mut decision, &mut reasons, &mut safeguards, &proposal);
        }

        let mut notify = Vec::new();
        if matches!(decision.verdict, Verdict::Halt | Verdict::Ask) {
            notify = decision.notify.clone();
        }
        for id in self
            .policy
            .safeguards()
            .escalate
            .for_verdict(decision.verdict)
        {
            if !notify.contains(id) {
                notify.push(id.clone());
            }
        }
        if !notify.is_empty() {
            safeguards.insert("notify".into(), json!(notify));
        }

        if let Some(instead) = &decision.instead {
            reasons.push(format!("instead: {instead}"));
        }
        for judged in &decision.invocations {
            if let Some(why) = &judged.invocation.opaque {
                reasons.push(format!("opaque: {why}"));
            }
        }
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
        entry.safeguards = (!safeguards.is_empty()).then_some(Value::Object(safeguards));
        let record = self.ledger.append(entry)?;
        Ok(Ruling {
            decision,
            record,
            notify,
        })
    }

    /// Records what an action produced: see [`report`].
    pub fn report(&self, report: Report) -> Result<Record, LedgerError> {
        self::report(self.ledger, self.guards, report)
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

    fn run_checks(
        &self,
        decision: &mut Decision,
        reasons: &mut Vec<String>,
        safeguards: &mut serde_json::Map<String, Value>,
        action: &Action,
        fingerprint: &str,
        now_ms: i64,
    ) {
        let declared = &self.policy.safeguards().checks;
        // Policy refuses a file naming an undeclared check, so every id is found here.
        let checks: Vec<(&str, &nightwatch_checks::CheckSpec)> = decision
            .checks
            .iter()
            .filter_map(|id| declared.get(id).map(|spec| (id.as_str(), spec)))
            .collect();
        let kind = action.actor.kind.as_str();
        let subject = CheckSubject {
            actor_kind: kind,
            actor_id: &action.actor.id,
            fingerprint,
            now_ms,
        };
        let history = LedgerHistory {
            ledger: self.ledger,
        };
        let findings = self.guards.run_checks(&checks, &subject, &history);
        for finding in &findings {
            let Some(effect) = finding.effect else {
                continue;
            };
            let said = finding_text(finding);
            reasons.push(format!("check {}: {said}", finding.check));
            if effect > decision.verdict {
                decision.verdict = effect;
                decision.reason = format!("check {}: {said}", finding.check);
                decision.instead = None;
            }
        }
        safeguards.insert(
            "checks".into(),
            serde_json::to_value(&findings).unwrap_or(Value::Null),
        );
    }

    fn back_up(
        &self,
        decision: &mut Decision,
        reasons: &mut Vec<String>,
        safeguards: &mut serde_json::Map<String, Value>,
        proposal: &Proposal,
    ) {
        let action = &proposal.action;
        // Policy judged every other name of each path too; the backup wants the paths as the
        // line names them, once each (an allowed line that writes nothing needs neither).
        let writes = |d: &Decision| {
            d.invocations.iter().any(|judged| {
                let effects = &judged.invocation.effects;
                !effects.writes.is_empty() || !effects.deletes.is_empty()
            })
        };
        let as_written;
        let judged = match &action.tool {
            Tool::Exec { .. } if writes(decision) => {
                as_written = self.policy.decide(action);
                &as_written
            }
            _ => &*decision,
        };
        let written = written_paths(action, judged, proposal.cwd.as_deref());
        if written.paths.is_empty() && written.not_backed_up.is_empty() {
            return;
        }
        let mut backup = serde_json::Map::new();
        if !written.paths.is_empty() {
            let limits = &self.policy.safeguards().backup.limits;
            match self
                .guards
                .back_up(&written.paths, limits, proposal.timestamp_ms)
            {
                Ok(snapshot) => {
                    backup.insert("snapshot".into(), json!(snapshot.id.as_str()));
                    backup.insert(
                        "limits".into(),
                        serde_json::to_value(snapshot.limits).unwrap_or(Value::Null),
                    );
                    backup.insert("paths".into(), json!(path_texts(&snapshot.paths())));
                    let skipped: Vec<String> = snapshot
                        .paths
                        .iter()
                        .filter_map(|c| match &c.state {
                            nightwatch_backup::PathState::Skipped { reason } => {
                                Some(format!("{}: {reason}", c.path.display()))
                            }
                            _ => None,
                        })
                        .collect();
                    if !skipped.is_empty() {
                        reasons.push(format!("not backed up: {}", skipped.join("; ")));
                        backup.insert("skipped".into(), json!(skipped));
                    }
                }
                Err(why) => {
                    decision.verdict = Verdict::Deny;
                    decision.reason =
                        format!("the backup before this write failed, so it is not allowed: {why}");
                    decision.instead = None;
                    reasons.insert(0, decision.reason.clone());
                    backup.insert("error".into(), json!(why));
                }
            }
        }
        if !written.not_backed_up.is_empty() {
            reasons.push(format!(
                "not backed up: {}",
                written.not_backed_up.join("; ")
            ));
            backup.insert("unlocated".into(), json!(written.not_backed_up));
        }
        safeguards.insert("backup".into(), Value::Object(backup));
    }
}

fn finding_text(finding: &nightwatch_checks::Finding) -> String {
    let found = match &finding.outcome {
        nightwatch_checks::Outcome::Matched { detail } => detail.clone(),
        nightwatch_checks::Outcome::Clear { detail } => detail.clone(),
        nightwatch_checks::Outcome::Unknown { reason } => format!("could not tell: {reason}"),
    };
    if finding.message.is_empty() {
        found
    } else {
        format!("{} ({found})", finding.message)
    }
}

fn path_texts(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

/// Records what an action produced, as a `result` joined to its decision, or as an
/// `unguarded-result` when no decision was ever recorded for the call. Needs no policy: what
/// ran is recorded whatever policy says now.
pub fn report(
    ledger: &dyn Ledger,
    guards: &dyn Guards,
    report: Report,
) -> Result<Record, LedgerError> {
    let decision = match &report.call_id {
        Some(call_id) => ledger.decision_for_call(call_id)?,
        None => None,
    };
    let guarded = decision.is_some();
    // The state the action left its backed-up paths in, so undo can tell later changes apart.
    let backup = decision
        .as_ref()
        .and_then(|d| d.safeguards.as_ref())
        .and_then(|s| s.get("backup"));
    let after = backup
        .and_then(|b| b.get("paths"))
        .and_then(Value::as_array)
        .map(|paths| {
            let paths: Vec<PathBuf> = paths
                .iter()
                .filter_map(Value::as_str)
                .map(PathBuf::from)
                .collect();
            // Observed with the limits the backup was taken with, so "too large to compare"
            // means the same before and after.
            let limits = backup
                .and_then(|b| b.get("limits"))
                .and_then(|l| serde_json::from_value(l.clone()).ok())
                .unwrap_or_default();
            guards.observe(&paths, &limits)
        });
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
    if let Some(after) = after {
        entry.safeguards = Some(json!({ "after": after }));
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

#[cfg(test)]
mod tests;
