//! A person's answer to an ask, through the engine. An approval lets the same actor's exact
//! same call through once, until it expires; a rejection voids it.

use anyhow::{Context as _, bail};
use nightwatch_core::Actor;
use nightwatch_gate::{Engine, Event};
use nightwatch_ledger::{Record, event};
use nightwatch_store::LedgerReader;

/// The record `id`, which must be a decision that asked.
pub fn asked(ledger: &dyn LedgerReader, id: &str) -> anyhow::Result<Record> {
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

/// Approves `asked` for `valid_for_ms` from the engine's now; the approval's record.
pub fn approve(
    engine: &Engine<'_>,
    asked: Record,
    by: Actor,
    valid_for_ms: i64,
    why: String,
) -> anyhow::Result<Record> {
    Ok(engine.record(Event::Approval {
        by,
        asked: Box::new(asked),
        expires_ms: engine.now_ms().saturating_add(valid_for_ms),
        why,
    })?)
}

/// Rejects `asked` for good; the rejection's record.
pub fn reject(
    engine: &Engine<'_>,
    asked: Record,
    by: Actor,
    why: String,
) -> anyhow::Result<Record> {
    Ok(engine.record(Event::Rejection {
        by,
        asked: Box::new(asked),
        why,
    })?)
}
