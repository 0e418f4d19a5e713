//! `nightwatch policy replay --policy NEW.yaml`: every recorded decision, decided again by a
//! candidate policy, and every call whose verdict would change. Relaxing a policy should rest on
//! what agents actually did, so the looser changes come first.

use crate::cli::PolicyReplayArgs;
use crate::clock::Clock;
use crate::commands::open_ledger;
use crate::commands::trust::local_time;
use crate::timespec;
use nightwatch_core::Tool;
use nightwatch_host::replay::{self, Replay, clip};
use nightwatch_ledger::{Filter, event};
use serde::Serialize;

/// Exit status when at least one verdict would change.
pub const EXIT_CHANGED: u8 = 3;

pub fn run(args: PolicyReplayArgs) -> anyhow::Result<u8> {
    let clock = Clock::from_environment()?;
    let (policy, origin) = nightwatch_host::policies::load(Some(&args.policy))?;
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

    let replay = replay::replay(&decisions, &trust, &policy, clock.zone());
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json(&replay, &origin))?);
    } else {
        print!("{}", text(&replay, &origin, &clock));
    }
    Ok(if replay.changes.is_empty() {
        0
    } else {
        EXIT_CHANGED
    })
}

fn summary(replay: &Replay<'_>, origin: &impl std::fmt::Display) -> String {
    let looser = replay.looser();
    let mut line = format!(
        "{} decisions replayed under {origin}, {} would change: {looser} looser, {} stricter",
        replay.replayed,
        replay.changes.len(),
        replay.changes.len() - looser
    );
    if !replay.unreadable.is_empty() {
        line.push_str(&format!(
            "; {} could not be rebuilt (listed above)",
            replay.unreadable.len()
        ));
    }
    line
}

fn text(replay: &Replay<'_>, origin: &impl std::fmt::Display, clock: &Clock) -> String {
    let mut out = String::new();
    for change in &replay.changes {
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
    for unreadable in &replay.unreadable {
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
    out.push_str(&summary(replay, origin));
    out.push('\n');
    out
}

fn json<'a>(replay: &'a Replay<'_>, origin: &impl std::fmt::Display) -> ReplayJson<'a> {
    let looser = replay.looser();
    ReplayJson {
        policy: origin.to_string(),
        replayed: replay.replayed,
        changed: replay.changes.len(),
        looser,
        stricter: replay.changes.len() - looser,
        changes: replay
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
        unreadable: replay
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
