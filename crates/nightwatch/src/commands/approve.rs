//! `nightwatch approve RECORD` and `nightwatch reject RECORD`: a human's answer to an ask,
//! recorded through nightwatch-host's `approvals`. An approval lets the same actor's exact
//! same call through once, until it expires; a rejection voids it.

use crate::cli::{ApproveArgs, RejectArgs};
use crate::context;
use crate::host::Host;
use anyhow::bail;
use nightwatch_host::approvals;

pub fn approve(args: ApproveArgs) -> anyhow::Result<u8> {
    let host = Host::open()?;
    let engine = host.engine();
    let asked = approvals::asked(host.ledger(), &args.record)?;
    let valid_for_ms = parse_validity(&args.valid_for)?;
    let record = approvals::approve(
        &engine,
        asked,
        context::human(args.by, &host.env),
        valid_for_ms,
        args.why.unwrap_or_default(),
    )?;
    println!("{} ({})", record.reasons[0], record.id);
    Ok(0)
}

pub fn reject(args: RejectArgs) -> anyhow::Result<u8> {
    let host = Host::open()?;
    let engine = host.engine();
    let asked = approvals::asked(host.ledger(), &args.record)?;
    let record = approvals::reject(
        &engine,
        asked,
        context::human(args.by, &host.env),
        args.why.unwrap_or_default(),
    )?;
    println!("{} ({})", record.reasons[0], record.id);
    Ok(0)
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
