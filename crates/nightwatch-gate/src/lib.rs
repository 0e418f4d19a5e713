//! The one pipeline.
//!
//! Every actor's proposal goes through [`Engine::propose`], which completes the action's context
//! and tier and then runs these steps:
//!
//! 1. policy decides, judging each path by every name it has here (the guards' path facts:
//!    absolute, through symlinks, a protected location's symbolic name);
//! 2. an ask that a human approved for this actor and this exact call goes through, once;
//! 3. the pre-flight checks the deciding rules attach run, unless the verdict is already deny,
//!    and can only make it stricter (a check that cannot tell counts as one that found);
//! 4. an allowed action that writes local files gets them backed up first; a backup that
//!    fails turns the verdict into deny, since the way back is part of the permission;
//! 5. the decision, with its fingerprint, every check's finding, the backup and the approval,
//!    is durable in the ledger before the verdict is returned, so nothing is ever allowed
//!    without a trace;
//! 6. a halt or ask is handed to the engine's escalator, which tells the notifiers it names.
//!
//! Everything else goes into the ledger through [`Engine::record`] as a typed [`Event`]: what
//! an action produced (joined to its decision by the call id, with the state it left its
//! backed-up paths in, for undo; *unguarded* when no decision exists), refusals nightwatch
//! makes because it cannot decide, lifecycle steps, and the records people and nightwatch
//! write about other records. Nothing else in nightwatch appends to the ledger.
//!
//! The gate reads no clock and no environment: the engine's [`Clock`] supplies the time, the
//! caller the context, and the world is reached through [`Guards`].

mod approvals;
mod engine;
mod facts;
mod guards;
mod written;

pub use approvals::{LONGEST_APPROVAL_MS, usable_approval};
pub use engine::{
    Clock, Dispatch, Engine, Escalator, Event, Fence, IDLE_CONTROLLER, NoEscalator, Simulated,
    WATCHER, dispatcher, local_time,
};
pub use facts::{LiveFacts, Named, Places};
pub use guards::{CheckSubject, Guards, LedgerHistory, LiveGuards};
pub use written::{Written, written_paths};

use nightwatch_core::{Action, Actor, Tool, Verdict};
use nightwatch_ledger::schema::{
    ApprovalUsed, Backup, BackupLimits, CheckFinding, CheckOutcome, Readable,
};
use nightwatch_ledger::{Entry, Outputs, Record, RecordActor, RecordContext, Safeguards, event};
use nightwatch_policy::{Decision, Policy};
use nightwatch_store::{Ledger, StoreError as LedgerError};
use serde_json::Value;
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
}

/// The pipeline's steps for one policy; only the [`Engine`] runs it.
pub(crate) struct Gate<'a> {
    policy: &'a Policy,
    ledger: &'a dyn Ledger,
    guards: &'a dyn Guards,
    fence: Option<&'a dyn Fence>,
}

impl<'a> Gate<'a> {
    pub(crate) fn new(
        policy: &'a Policy,
        ledger: &'a dyn Ledger,
        guards: &'a dyn Guards,
        fence: Option<&'a dyn Fence>,
    ) -> Gate<'a> {
        Gate {
            policy,
            ledger,
            guards,
            fence,
        }
    }

    /// Decides the proposal as of `judged_ms` (local time in `zone`) and records the decision
    /// stamped `written_ms`. An error means nothing was recorded: the caller must refuse.
    pub(crate) fn propose(
        &self,
        proposal: Proposal,
        judged_ms: i64,
        written_ms: i64,
        zone: &jiff::tz::TimeZone,
    ) -> Result<Ruling, LedgerError> {
        let action = &proposal.action;
        let facts = self.guards.path_facts(proposal.cwd.as_deref());
        let mut decision = self.policy.decide_with(action, facts.as_ref());
        let mut reasons = vec![decision.reason.clone()];
        // From the call as the actor made it, before the ledger redacts its secrets: what
        // approvals and the breaker compare is this stored value, never a re-computation.
        let fingerprint = nightwatch_checks::fingerprint(&action.tool.name(), &proposal.inputs);
        let mut safeguards = Safeguards {
            fingerprint: Some(fingerprint.clone()),
            ..Safeguards::default()
        };

        if decision.verdict == Verdict::Ask
            && let Some(approval) =
                usable_approval(self.ledger, &action.actor.id, &fingerprint, judged_ms)?
        {
            let by = &approval.actor.id;
            decision.verdict = Verdict::Allow;
            decision.reason = format!(
                "approved by {by} ({}), once: {}",
                approval.id, decision.reason
            );
            reasons.insert(0, decision.reason.clone());
            safeguards.approval = Some(ApprovalUsed {
                record: approval.id.clone(),
                by: by.clone(),
                asked: approval
                    .inputs
                    .get("record")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }

        if decision.verdict < Verdict::Deny && !decision.checks.is_empty() {
            self.run_checks(
                &mut decision,
                &mut reasons,
                &mut safeguards,
                action,
                &fingerprint,
                judged_ms,
                zone,
            );
        }

        // A job that lost its place (a singleton's lease) acts no more: it is asked last, just
        // before what would run, so a place lost during the checks still stops it.
        if decision.verdict < Verdict::Deny
            && let Some(fence) = self.fence
            && let Err(why) = fence.holds(judged_ms)
        {
            decision.verdict = Verdict::Deny;
            decision.reason = format!("fence: {why}");
            decision.instead = None;
            reasons.push(decision.reason.clone());
        }

        // Backups follow what may still run: an allowed call, and an asked one, which the
        // agent's own prompt can let through (Claude's does) without nightwatch seeing the
        // answer before the write.
        if decision.verdict <= Verdict::Ask {
            self.back_up(
                &mut decision,
                &mut reasons,
                &mut safeguards,
                &proposal,
                written_ms,
            );
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
            safeguards.notify = Some(notify.clone());
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
            written_ms,
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
        entry.safeguards = safeguards.into_value();
        let record = self.ledger.append(entry)?;
        Ok(Ruling {
            decision,
            record,
            notify,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn run_checks(
        &self,
        decision: &mut Decision,
        reasons: &mut Vec<String>,
        safeguards: &mut Safeguards,
        action: &Action,
        fingerprint: &str,
        now_ms: i64,
        zone: &jiff::tz::TimeZone,
    ) {
        let declared = &self.policy.safeguards().checks;
        // Policy refuses a file naming an undeclared check, so every id is found here.
        let checks: Vec<(&str, &nightwatch_checks::CheckSpec)> = decision
            .checks
            .iter()
            .filter_map(|id| declared.get(id).map(|spec| (id.as_str(), spec)))
            .collect();
        let kind = action.actor.kind.as_str();
        let tool = action.tool.name();
        let (local_minute_of_day, local_weekday) = local_time(now_ms, zone);
        let subject = CheckSubject {
            actor_kind: kind,
            actor_id: &action.actor.id,
            tool: &tool,
            fingerprint,
            now_ms,
            local_minute_of_day,
            local_weekday,
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
        safeguards.checks = Some(Readable::Read(
            findings.iter().map(finding_record).collect(),
        ));
    }

    fn back_up(
        &self,
        decision: &mut Decision,
        reasons: &mut Vec<String>,
        safeguards: &mut Safeguards,
        proposal: &Proposal,
        now_ms: i64,
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
        let mut backup = Backup::default();
        if !written.paths.is_empty() {
            let limits = &self.policy.safeguards().backup.limits;
            match self.guards.back_up(&written.paths, limits, now_ms) {
                Ok(snapshot) => {
                    backup.snapshot = Some(snapshot.id.as_str().to_owned());
                    backup.limits = Some(Readable::Read(limits_record(&snapshot.limits)));
                    backup.paths = Some(path_texts(&snapshot.paths()));
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
                        backup.skipped = Some(skipped);
                    }
                }
                Err(why) => {
                    decision.verdict = Verdict::Deny;
                    decision.reason =
                        format!("the backup before this write failed, so it is not allowed: {why}");
                    decision.instead = None;
                    reasons.insert(0, decision.reason.clone());
                    backup.error = Some(why);
                }
            }
        }
        if !written.not_backed_up.is_empty() {
            reasons.push(format!(
                "not backed up: {}",
                written.not_backed_up.join("; ")
            ));
            backup.unlocated = Some(written.not_backed_up);
        }
        safeguards.backup = Some(backup);
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

/// What an action produced, as a `result` joined to its decision, or as an `unguarded-result`
/// when no decision was ever recorded for the call. Needs no policy: what ran is recorded
/// whatever policy says now.
fn result_entry(
    ledger: &dyn Ledger,
    guards: &dyn Guards,
    report: Report,
    written_ms: i64,
) -> Result<Entry, LedgerError> {
    let decision = match &report.call_id {
        Some(call_id) => ledger.decision_for_call(call_id)?,
        None => None,
    };
    let guarded = decision.is_some();
    // The state the action left its backed-up paths in, so undo can tell later changes apart.
    let backup = decision
        .as_ref()
        .and_then(|d| Safeguards::of(d.safeguards.as_ref()).backup);
    let after = backup.as_ref().and_then(|backup| {
        let paths: Vec<PathBuf> = backup.paths.as_ref()?.iter().map(PathBuf::from).collect();
        // Observed with the limits the backup was taken with, so "too large to compare"
        // means the same before and after.
        let limits = backup
            .limits
            .as_ref()
            .and_then(Readable::read)
            .map(limits_of)
            .unwrap_or_default();
        Some(guards.observe(&paths, &limits))
    });
    // The call's identity, so the circuit breaker counts a failure by what was run, not by
    // its redacted record.
    let fingerprint = nightwatch_checks::fingerprint(&report.tool, &report.inputs);
    let kind = if guarded {
        event::RESULT
    } else {
        event::UNGUARDED_RESULT
    };
    let actor = RecordActor::from(&report.actor);
    let mut entry = Entry::new(kind, written_ms, actor, report.tool);
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
    entry.safeguards = Safeguards {
        fingerprint: Some(fingerprint),
        after: after.and_then(|a| serde_json::to_value(a).ok()),
        ..Safeguards::default()
    }
    .into_value();
    Ok(entry)
}

/// The identity of the call a decision or result record is about: the fingerprint stored when
/// it was recorded, or for a record from before fingerprints were stored, one computed from its
/// stored inputs (as was done then).
pub fn fingerprint_of(record: &Record) -> String {
    Safeguards::of(record.safeguards.as_ref())
        .fingerprint
        .unwrap_or_else(|| nightwatch_checks::fingerprint(&record.tool, &record.inputs))
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
}

/// A refusal made because nightwatch itself could not decide, so that even that veto is in
/// the ledger with its reason (a `decision` with verdict `deny` and no rule).
fn refusal_entry(failure: Failure, written_ms: i64) -> Entry {
    let mut entry = call_entry(event::DECISION, failure, written_ms);
    entry.verdict = Some(nightwatch_core::Verdict::Deny.as_str().to_owned());
    entry
}

/// A call the agent declined after asking: it closes without a result.
fn declined_entry(declined: Failure, written_ms: i64) -> Entry {
    call_entry(event::DECLINED, declined, written_ms)
}

/// The record of a call that ends without running, with its one reason.
fn call_entry(step: &str, call: Failure, written_ms: i64) -> Entry {
    let actor = RecordActor::from(&call.actor);
    let mut entry = Entry::new(step, written_ms, actor, call.tool);
    entry.session_id = call.context.session.clone();
    entry.context = record_context(&call.context);
    entry.call_id = call.call_id;
    entry.inputs = call.inputs;
    entry.reasons = vec![call.reason];
    entry
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

/// A check's finding as records keep it.
fn finding_record(finding: &nightwatch_checks::Finding) -> CheckFinding {
    use nightwatch_checks::Outcome;
    CheckFinding {
        check: finding.check.clone(),
        kind: finding.kind.clone(),
        outcome: match &finding.outcome {
            Outcome::Matched { detail } => CheckOutcome::Matched {
                detail: detail.clone(),
            },
            Outcome::Clear { detail } => CheckOutcome::Clear {
                detail: detail.clone(),
            },
            Outcome::Unknown { reason } => CheckOutcome::Unknown {
                reason: reason.clone(),
            },
        },
        effect: finding.effect,
        message: finding.message.clone(),
        elapsed_ms: finding.elapsed_ms,
    }
}

/// Backup limits as records keep them, and back.
fn limits_record(limits: &nightwatch_backup::Limits) -> BackupLimits {
    BackupLimits {
        max_file_bytes: limits.max_file_bytes.0,
        max_dir_bytes: limits.max_dir_bytes.0,
        max_dir_entries: limits.max_dir_entries,
    }
}

fn limits_of(limits: &BackupLimits) -> nightwatch_backup::Limits {
    nightwatch_backup::Limits {
        max_file_bytes: nightwatch_backup::ByteSize(limits.max_file_bytes),
        max_dir_bytes: nightwatch_backup::ByteSize(limits.max_dir_bytes),
        max_dir_entries: limits.max_dir_entries,
    }
}
