//! `nightwatch approve RECORD` and `nightwatch reject RECORD`: a human's answer to an ask,
//! recorded in the ledger. An approval lets the same actor's exact same call through once,
//! until it expires; a rejection voids it.

use crate::cli::{ApproveArgs, RejectArgs};
use crate::clock::Clock;
use crate::commands::open_ledger;
use crate::context;
use anyhow::{Context as _, bail};
use nightwatch_ledger::{Entry, Record, RecordActor, event};
use nightwatch_store::Ledger;
use serde_json::json;

pub fn approve(args: ApproveArgs) -> anyhow::Result<u8> {
    let clock = Clock::from_environment()?;
    let ledger = open_ledger()?;
    let asked = asked_decision(&ledger, &args.record)?;
    let valid_for_ms = parse_validity(&args.valid_for)?;
    let human = context::human(args.by);
    let expires_ms = clock.now_ms().saturating_add(valid_for_ms);
    let mut entry = answer(&asked, event::APPROVAL, &human, clock.now_ms());
    entry.inputs["expires_ms"] = json!(expires_ms);
    entry.inputs["why"] = json!(args.why.unwrap_or_default());
    entry.reasons = vec![format!(
        "{} approved {} for {} {}, once, until {}",
        human.id,
        asked.id,
        asked.actor.kind,
        asked.actor.id,
        nightwatch_ledger::rfc3339(expires_ms)
    )];
    let record = ledger.append(entry)?;
    println!("{} ({})", record.reasons[0], record.id);
    Ok(0)
}

pub fn reject(args: RejectArgs) -> anyhow::Result<u8> {
    let clock = Clock::from_environment()?;
    let ledger = open_ledger()?;
    let asked = asked_decision(&ledger, &args.record)?;
    let human = context::human(args.by);
    let mut entry = answer(&asked, event::REJECTION, &human, clock.now_ms());
    entry.inputs["why"] = json!(args.why.unwrap_or_default());
    entry.reasons = vec![format!(
        "{} rejected {}; any approval of it is void",
        human.id, asked.id
    )];
    let record = ledger.append(entry)?;
    println!("{} ({})", record.reasons[0], record.id);
    Ok(0)
}

/// The record, which must be a decision that asked.
fn asked_decision(ledger: &dyn Ledger, id: &str) -> anyhow::Result<Record> {
    let record = ledger.get(id)?.with_context(|| format!("no record {id}"))?;
    if record.event != event::DECISION {
        bail!("{} is a {} record, not a decision", record.id, record.event);
    }
    match record.verdict.as_deref() {
        Some("ask") => Ok(record),
        Some("halt") => bail!(
            "{} was halted, not asked: a halt stops for what a check found ({}); approve is for asks",
            record.id,
            record.reasons.join("; ")
        ),
        other => bail!(
            "{} was not asked (its verdict is {}); only an ask can be approved or rejected",
            record.id,
            other.unwrap_or("none")
        ),
    }
}

/// An approval or rejection, bound to the asking actor and the call's content.
fn answer(asked: &Record, kind: &str, human: &nightwatch_core::Actor, now_ms: i64) -> Entry {
    let mut entry = Entry::new(kind, now_ms, RecordActor::from(human), "approval");
    entry.session_id = asked.session_id.clone();
    entry.context = asked.context.clone();
    entry.inputs = json!({
        "record": asked.id,
        "actor_id": asked.actor.id,
        "fingerprint": nightwatch_checks::fingerprint(&asked.tool, &asked.inputs),
    });
    entry
}

fn parse_validity(text: &str) -> anyhow::Result<i64> {
    let days = text
        .trim()
        .strip_suffix('d')
        .and_then(|n| n.trim().parse::<i64>().ok());
    let ms = match days {
        Some(days) => days.saturating_mul(24 * 3600 * 1000),
        None => {
            let span: jiff::SignedDuration = text
                .trim()
                .parse()
                .map_err(|e| anyhow::anyhow!("--for {text:?}: {e} (write 30m, 2h or 1d)"))?;
            i64::try_from(span.as_millis()).unwrap_or(i64::MAX)
        }
    };
    if ms <= 0 {
        bail!("--for {text:?}: an approval must last longer than nothing");
    }
    if ms > nightwatch_gate::LONGEST_APPROVAL_MS {
        bail!("--for {text:?}: an approval lasts at most 7 days");
    }
    Ok(ms)
}
