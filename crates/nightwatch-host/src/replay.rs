//! A candidate policy replayed over recorded decisions: each decision rebuilt as the hook or
//! `exec` proposed it (actor, tool, context, the trust tier of the time), decided again, the
//! recorded safeguards (approval, checks, failed backup) applied in the gate's order, and every
//! verdict that would change. Pure: records and a policy in, a [`Replay`] out.

use nightwatch_core::{Action, Actor, ActorKind, Context, Tool, Verdict};
use nightwatch_ledger::Record;
use nightwatch_policy::Policy;

/// Decides every decision in `decisions` again under `policy`, with the trust tiers the
/// `trust` records (in seq order) gave at the time and the local time of day in `zone`, and
/// the recorded safeguards applied to the candidate's verdict.
pub fn replay<'a>(
    decisions: &'a [Record],
    trust: &[Record],
    policy: &Policy,
    zone: &jiff::tz::TimeZone,
) -> Replay<'a> {
    let mut replay = Replay::default();
    for record in decisions {
        match rebuild(record, trust, policy, zone) {
            Err(reason) => replay.unreadable.push(Unreadable { record, reason }),
            Ok((recorded, action)) => {
                replay.replayed += 1;
                let decision = policy.decide(&action);
                let (verdict, applied) = Safeguarded::read(record).apply(decision.verdict);
                if verdict != recorded {
                    replay.changes.push(Change {
                        record,
                        tool: action.tool,
                        recorded,
                        verdict,
                        rule: decision.rule,
                        reason: decision.reason,
                        applied,
                    });
                }
            }
        }
    }
    // Looser first: those are the calls a relaxed policy would newly let through.
    replay
        .changes
        .sort_by_key(|change| (!change.looser(), change.record.seq));
    replay
}

/// The recorded verdict and the action as the hook or `exec` proposed it, or why the record
/// cannot be rebuilt.
fn rebuild(
    record: &Record,
    trust: &[Record],
    policy: &Policy,
    zone: &jiff::tz::TimeZone,
) -> Result<(Verdict, Action), String> {
    let recorded = record
        .verdict
        .as_deref()
        .and_then(Verdict::parse)
        .ok_or_else(|| {
            format!(
                "its verdict {:?} is not allow, ask, halt or deny",
                record.verdict.as_deref().unwrap_or("")
            )
        })?;
    let kind = ActorKind::parse(&record.actor.kind)
        .ok_or_else(|| format!("its actor kind {:?} is unknown", record.actor.kind))?;
    let tool =
        nightwatch_agents::tool_from_record_in(&record.tool, &record.inputs, record.cwd.as_deref())
            .ok_or_else(|| {
                format!(
                    "its inputs do not say what {:?} would do",
                    clip(&record.tool)
                )
            })?;
    let placed_before = &trust[..trust.partition_point(|t| t.seq < record.seq)];
    let tier = nightwatch_trust::tier_from_trust_records(
        placed_before,
        &record.actor.id,
        &policy.safeguards().trust,
    );
    let minute_of_day = jiff::Timestamp::from_millisecond(record.timestamp_ms)
        .ok()
        .map(|t| {
            let local = t.to_zoned(zone.clone());
            u16::try_from(i32::from(local.hour()) * 60 + i32::from(local.minute())).unwrap_or(0)
        });
    let action = Action {
        actor: Actor {
            kind,
            id: record.actor.id.clone(),
            tier: Some(tier),
        },
        tool,
        context: Context {
            session: record.session_id.clone(),
            triggered_by: record.context.triggered_by.clone(),
            alert_id: record.context.alert_id.clone(),
            task: record.context.task.clone(),
            host: record.context.host.clone(),
            minute_of_day,
        },
    };
    Ok((recorded, action))
}

/// What the gate did to policy's verdict when the call was recorded: a human's approval of an
/// ask, pre-flight checks that raised it, a backup whose failure denied it. The record keeps
/// the final verdict, so the candidate's verdict goes through the same steps, with the same
/// outcomes (checks are not run again: they probed the world as it was then), before the two
/// are compared. A policy replayed under itself then changes nothing.
#[derive(Default)]
struct Safeguarded {
    approved: bool,
    check_effect: Option<Verdict>,
    backup_failed: bool,
}

impl Safeguarded {
    fn read(record: &Record) -> Safeguarded {
        let Some(safeguards) = &record.safeguards else {
            return Safeguarded::default();
        };
        let check_effect = safeguards
            .get("checks")
            .and_then(|checks| checks.as_array())
            .into_iter()
            .flatten()
            .filter_map(|finding| finding.get("effect")?.as_str().and_then(Verdict::parse))
            .max();
        Safeguarded {
            approved: safeguards.get("approval").is_some_and(|a| !a.is_null()),
            check_effect,
            backup_failed: safeguards
                .get("backup")
                .and_then(|backup| backup.get("error"))
                .is_some_and(|error| !error.is_null()),
        }
    }

    /// The candidate's verdict as the gate's steps, in the gate's order, would leave it, and
    /// which steps changed it.
    fn apply(&self, mut verdict: Verdict) -> (Verdict, Vec<&'static str>) {
        let mut applied = Vec::new();
        if verdict == Verdict::Ask && self.approved {
            verdict = Verdict::Allow;
            applied.push("approval");
        }
        if let Some(effect) = self.check_effect
            && verdict < Verdict::Deny
            && effect > verdict
        {
            verdict = effect;
            applied.push("checks");
        }
        if verdict == Verdict::Allow && self.backup_failed {
            verdict = Verdict::Deny;
            applied.push("failed backup");
        }
        (verdict, applied)
    }
}

/// A candidate policy's verdicts over recorded decisions.
#[derive(Default)]
pub struct Replay<'a> {
    /// Decisions rebuilt and decided again.
    pub replayed: usize,
    /// Those whose verdict would change: looser first, then stricter, each in ledger order.
    pub changes: Vec<Change<'a>>,
    /// Decisions that could not be rebuilt, so were not replayed.
    pub unreadable: Vec<Unreadable<'a>>,
}

/// A decision whose verdict the candidate would change.
pub struct Change<'a> {
    pub record: &'a Record,
    pub tool: Tool,
    pub recorded: Verdict,
    pub verdict: Verdict,
    pub rule: Option<String>,
    pub reason: String,
    /// The recorded approval, check findings or failed backup that changed the candidate's
    /// verdict.
    pub applied: Vec<&'static str>,
}

impl Change<'_> {
    /// The candidate would let through what was held.
    pub fn looser(&self) -> bool {
        self.verdict < self.recorded
    }
}

/// A decision that could not be rebuilt, and why.
pub struct Unreadable<'a> {
    pub record: &'a Record,
    pub reason: String,
}

impl Replay<'_> {
    /// How many changes are looser.
    pub fn looser(&self) -> usize {
        self.changes.iter().filter(|c| c.looser()).count()
    }
}

/// `text` on one line of at most 100 characters.
pub fn clip(text: &str) -> String {
    if text.chars().count() > 100 {
        format!("{}...", text.chars().take(97).collect::<String>())
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::Safeguarded;
    use nightwatch_core::Verdict::{self, Allow, Ask, Deny, Halt};

    #[test]
    fn the_recorded_safeguards_apply_to_the_candidates_verdict_in_the_gates_order() {
        let none = Safeguarded::default();
        let approved = Safeguarded {
            approved: true,
            ..Safeguarded::default()
        };
        let halted = Safeguarded {
            check_effect: Some(Halt),
            ..Safeguarded::default()
        };
        let no_backup = Safeguarded {
            backup_failed: true,
            ..Safeguarded::default()
        };
        let rows: [(&Safeguarded, Verdict, Verdict, &[&str]); 9] = [
            (&none, Ask, Ask, &[]),
            (&approved, Ask, Allow, &["approval"]),
            (&approved, Deny, Deny, &[]),
            (&halted, Allow, Halt, &["checks"]),
            (&halted, Deny, Deny, &[]),
            (&halted, Halt, Halt, &[]),
            (&no_backup, Allow, Deny, &["failed backup"]),
            (&no_backup, Ask, Ask, &[]),
            (
                &Safeguarded {
                    approved: true,
                    backup_failed: true,
                    ..Safeguarded::default()
                },
                Ask,
                Deny,
                &["approval", "failed backup"],
            ),
        ];
        for (recorded, candidate, expected, steps) in rows {
            let (verdict, applied) = recorded.apply(candidate);
            assert_eq!(
                (verdict, applied.as_slice()),
                (expected, steps),
                "{candidate}"
            );
        }
    }
}
