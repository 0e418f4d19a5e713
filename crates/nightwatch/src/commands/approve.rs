//! `nightwatch approve RECORD` and `nightwatch reject RECORD`: a human's answer to an ask,
//! recorded in the ledger. An approval lets the same actor's exact same call through once,
//! until it expires; a rejection voids it.

use crate::cli::{ApproveArgs, RejectArgs};
use crate::context;
use crate::host::Host;
use anyhow::{Context as _, bail};
use nightwatch_gate::Event;
use nightwatch_ledger::{Record, event};
use nightwatch_store::LedgerReader;

pub fn approve(args: ApproveArgs) -> anyhow::Result<u8> {
    let host = Host::open()?;
    let engine = host.engine();
    let asked = asked_decision(host.ledger(), &args.record)?;
    let valid_for_ms = parse_validity(&args.valid_for)?;
    let record = engine.record(Event::Approval {
        by: context::human(args.by, &host.env),
        asked: Box::new(asked),
        expires_ms: engine.now_ms().saturating_add(valid_for_ms),
        why: args.why.unwrap_or_default(),
    })?;
    println!("{} ({})", record.reasons[0], record.id);
    Ok(0)
}

pub fn reject(args: RejectArgs) -> anyhow::Result<u8> {
    let host = Host::open()?;
    let engine = host.engine();
    let asked = asked_decision(host.ledger(), &args.record)?;
    let record = engine.record(Event::Rejection {
        by: context::human(args.by, &host.env),
        asked: Box::new(asked),
        why: args.why.unwrap_or_default(),
    })?;
    println!("{} ({})", record.reasons[0], record.id);
    Ok(0)
}

/// The record, which must be a decision that asked.
fn asked_decision(ledger: &dyn LedgerReader, id: &str) -> anyhow::Result<Record> {
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
