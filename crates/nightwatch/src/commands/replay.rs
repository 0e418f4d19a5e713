//! `nightwatch policy replay --policy NEW.yaml`: every recorded decision, decided again by a
//! candidate policy, and every call whose verdict would change. Relaxing a policy should rest on
//! what agents actually did, so the looser changes come first.

use crate::cli::{PolicyReplayArgs, PolicySource};
use crate::clock::Clock;
use crate::commands::trust::local_time;
use crate::commands::{load_policy, open_ledger};
use crate::timespec;
use nightwatch_core::{Action, Actor, ActorKind, Context, Tool, Verdict};
use nightwatch_ledger::{Filter, Record, event};
use nightwatch_policy::Policy;
use serde::Serialize;

/// Exit status when at least one verdict would change.
pub const EXIT_CHANGED: u8 = 3;

pub fn run(args: PolicyReplayArgs) -> anyhow::Result<u8> {
    let clock = Clock::from_environment()?;
    let (policy, origin) = load_policy(&PolicySource {
        policy: Some(args.policy.clone()),
    })?;
    let at = |text: &Option<String>, flag: &str| -> anyhow::Result<Option<i64>> {
        text.as_deref()
            .map(|t| {
                timespec::parse(t, clock.now(), clock.zone())
                    .map_err(|e| anyhow::anyhow!("{flag}: {e}"))
            })
            .transpose()
    };
    let since_ms = at(&args.since, "--since")?;
    let until_ms = at(&args.until, "--until")?;
    let ledger = open_ledger()?;
    let decisions = ledger.query(&Filter {
        event: Some(event::DECISION.to_owned()),
        since_ms,
        until_ms,
        ..Filter::default()
    })?;
    // Tiers as they stood at each decision, from every trust record (seq order).
    let trust = ledger.query(&Filter {
        event: Some(event::TRUST.to_owned()),
        ..Filter::default()
    })?;

    let mut replay = Replay::default();
    for record in &decisions {
        match rebuild(record, &trust, &policy, &clock) {
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

    if args.json {
        println!("{}", serde_json::to_string_pretty(&replay.json(&origin))?);
    } else {
        print!("{}", replay.text(&origin, &clock));
    }
    Ok(if replay.changes.is_empty() {
        0
    } else {
        EXIT_CHANGED
    })
}

/// The recorded verdict and the action as the hook or `exec` proposed it, or why the record
/// cannot be rebuilt.
fn rebuild(
    record: &Record,
    trust: &[Record],
    policy: &Policy,
    clock: &Clock,
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
            let local = t.to_zoned(clock.zone().clone());
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

#[derive(Default)]
struct Replay<'a> {
    replayed: usize,
    changes: Vec<Change<'a>>,
    unreadable: Vec<Unreadable<'a>>,
}

struct Change<'a> {
    record: &'a Record,
    tool: Tool,
    recorded: Verdict,
    verdict: Verdict,
    rule: Option<String>,
    reason: String,
    /// The recorded approval, check findings or failed backup that changed the candidate's
    /// verdict.
    applied: Vec<&'static str>,
}

impl Change<'_> {
    fn looser(&self) -> bool {
        self.verdict < self.recorded
    }
}

struct Unreadable<'a> {
    record: &'a Record,
    reason: String,
}

impl Replay<'_> {
    fn looser(&self) -> usize {
        self.changes.iter().filter(|c| c.looser()).count()
    }

    fn summary(&self, origin: &impl std::fmt::Display) -> String {
        let looser = self.looser();
        let mut line = format!(
            "{} decisions replayed under {origin}, {} would change: {looser} looser, {} stricter",
            self.replayed,
            self.changes.len(),
            self.changes.len() - looser
        );
        if !self.unreadable.is_empty() {
            line.push_str(&format!(
                "; {} could not be rebuilt (listed above)",
                self.unreadable.len()
            ));
        }
        line
    }

    fn text(&self, origin: &impl std::fmt::Display, clock: &Clock) -> String {
        let mut out = String::new();
        for change in &self.changes {
            let record = change.record;
            let mark = if change.looser() {
                "LOOSER  "
            } else {
                "stricter"
            };
            out.push_str(&format!(
                "{mark} {:>6}  {}  {} {}  {}\n",
                record.id,
                local_time(record.timestamp_ms, clock),
                record.actor.kind,
                record.actor.id,
                describe(&change.tool),
            ));
            let applied = if change.applied.is_empty() {
                String::new()
            } else {
                format!(" (with the recorded {})", change.applied.join(", "))
            };
            out.push_str(&format!(
                "{:17}{} [{}] -> {} [{}]{applied}: {}\n",
                "",
                change.recorded,
                record.rule.as_deref().unwrap_or("default"),
                change.verdict,
                change.rule.as_deref().unwrap_or("default"),
                change.reason
            ));
        }
        for unreadable in &self.unreadable {
            let record = unreadable.record;
            out.push_str(&format!(
                "cannot rebuild {}  {}  {} {}  {}: {}\n",
                record.id,
                local_time(record.timestamp_ms, clock),
                record.actor.kind,
                record.actor.id,
                clip(&record.tool),
                unreadable.reason
            ));
        }
        out.push_str(&self.summary(origin));
        out.push('\n');
        out
    }

    fn json(&self, origin: &impl std::fmt::Display) -> ReplayJson<'_> {
        let looser = self.looser();
        ReplayJson {
            policy: origin.to_string(),
            replayed: self.replayed,
            changed: self.changes.len(),
            looser,
            stricter: self.changes.len() - looser,
            changes: self
                .changes
                .iter()
                .map(|change| ChangeJson {
                    record: &change.record.id,
                    timestamp: change.record.timestamp_text(),
                    actor: ActorJson {
                        kind: &change.record.actor.kind,
                        id: &change.record.actor.id,
                    },
                    session: change.record.session_id.as_deref(),
                    tool: change.tool.name().into_owned(),
                    what: describe(&change.tool),
                    direction: if change.looser() {
                        "looser"
                    } else {
                        "stricter"
                    },
                    recorded: VerdictJson {
                        verdict: change.recorded.as_str(),
                        rule: change.record.rule.as_deref(),
                        reason: change.record.reasons.first().map(String::as_str),
                    },
                    replayed: VerdictJson {
                        verdict: change.verdict.as_str(),
                        rule: change.rule.as_deref(),
                        reason: Some(&change.reason),
                    },
                    applied: &change.applied,
                })
                .collect(),
            unreadable: self
                .unreadable
                .iter()
                .map(|u| UnreadableJson {
                    record: &u.record.id,
                    timestamp: u.record.timestamp_text(),
                    tool: &u.record.tool,
                    reason: &u.reason,
                })
                .collect(),
        }
    }
}

/// `policy replay --json`: one object, fields in this order, always present.
#[derive(Serialize)]
struct ReplayJson<'a> {
    policy: String,
    replayed: usize,
    changed: usize,
    looser: usize,
    stricter: usize,
    /// Looser first, then stricter, each in ledger order.
    changes: Vec<ChangeJson<'a>>,
    /// Decisions in the window that could not be rebuilt, so were not replayed.
    unreadable: Vec<UnreadableJson<'a>>,
}

#[derive(Serialize)]
struct ChangeJson<'a> {
    record: &'a str,
    timestamp: String,
    actor: ActorJson<'a>,
    session: Option<&'a str>,
    tool: String,
    what: String,
    /// `looser` or `stricter`.
    direction: &'static str,
    recorded: VerdictJson<'a>,
    replayed: VerdictJson<'a>,
    /// The recorded `approval`, `checks` or `failed backup` applied to the candidate's verdict.
    applied: &'a [&'static str],
}

#[derive(Serialize)]
struct ActorJson<'a> {
    kind: &'a str,
    id: &'a str,
}

#[derive(Serialize)]
struct VerdictJson<'a> {
    verdict: &'static str,
    rule: Option<&'a str>,
    reason: Option<&'a str>,
}

#[derive(Serialize)]
struct UnreadableJson<'a> {
    record: &'a str,
    timestamp: String,
    tool: &'a str,
    reason: &'a str,
}

/// The command line, or the tool and its target, on one line.
fn describe(tool: &Tool) -> String {
    let text = match tool {
        Tool::Exec { line } => line.clone(),
        Tool::Read { path } | Tool::Write { path } | Tool::Edit { path } => {
            format!("{} {path}", tool.name())
        }
        Tool::Fetch { url } => format!("fetch {url}"),
        other => other.name().into_owned(),
    };
    clip(&text.replace('\n', " "))
}

fn clip(text: &str) -> String {
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
