//! `nightwatch escalate RECORD`: tell the notifiers a halted or asked decision names, and
//! record each delivery with every attempt (nightwatch-host's `escalation`).

use crate::cli::EscalateArgs;
use crate::commands::load_policy;
use crate::host::Host;
use anyhow::Context as _;

pub fn run(args: EscalateArgs) -> anyhow::Result<u8> {
    let host = Host::open()?;
    let record = host
        .ledger()
        .get(&args.record)?
        .with_context(|| format!("no record {}", args.record))?;
    if !nightwatch_ledger::Safeguards::names_notifiers(record.safeguards.as_ref()) {
        println!("{} names no notifier; nothing to send", record.id);
        return Ok(0);
    }
    let (policy, origin) = load_policy(&args.source)?;
    let sleep = |pause: std::time::Duration| std::thread::sleep(pause);
    let sent = nightwatch_host::escalation::escalate(
        &host.engine(),
        &record,
        &policy,
        &origin,
        &crate::environment::configured_var,
        &sleep,
    )?;
    for one in &sent {
        println!("{}: {}", record.id, one.summary);
    }
    Ok(if sent.iter().all(|one| one.delivered) {
        0
    } else {
        1
    })
}
