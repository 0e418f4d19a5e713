//! `nightwatch verify --fleet` and `nightwatch fleet status`: the fleet store's view of every
//! host, read from the database `NIGHTWATCH_DATABASE_URL` names.

use anyhow::Context as _;
use nightwatch_host::stores::FleetView;
use nightwatch_store::{FleetHost, LedgerReader, verify as verify_chain};

use crate::cli::FleetStatusArgs;
use crate::environment::Environment;

/// The fleet's stores, as this host; an error that says how to join one when there is none.
fn connect() -> anyhow::Result<(FleetView, String)> {
    let env = Environment::of_process();
    let fleet = crate::stores::fleet(&env)?.ok_or_else(|| {
        anyhow::anyhow!(
            "this host is in no fleet: set NIGHTWATCH_DATABASE_URL to the fleet's PostgreSQL database \
             (postgres://user@host/db)"
        )
    })?;
    let view = crate::stores::fleet_view(&fleet)
        .context("cannot open the fleet's database (NIGHTWATCH_DATABASE_URL)")?;
    Ok((view, fleet.host))
}

/// The last record of this host's own ledger (sequence number).
fn own_head() -> anyhow::Result<u64> {
    let ledger = super::open_ledger()?;
    let last = ledger.query(&nightwatch_ledger::Filter {
        limit: Some(1),
        ..Default::default()
    })?;
    Ok(last.first().map_or(0, |r| r.seq))
}

/// A host clock this far off the fleet's is worth a warning: records a second apart on two
/// hosts may then show in the wrong order.
const CLOCK_TOLERANCE_MS: i64 = 1_000;

/// `ms` as seconds with a sign: `+3600.0 s`.
fn clock_offset(ms: i64) -> String {
    format!("{:+.1} s", ms as f64 / 1000.0)
}

fn held(host: &FleetHost) -> u64 {
    host.shipped.as_ref().map_or(0, |(seq, _)| *seq)
}

/// Every host's chain in the fleet store: intact, and whole up to what the host reported
/// (for this host, up to its own ledger's end).
pub fn verify() -> anyhow::Result<u8> {
    let (view, me) = connect()?;
    let fleet = view.ledger;
    let mut hosts = fleet.hosts()?;
    if !hosts.iter().any(|h| h.host == me) {
        hosts.push(FleetHost {
            host: me.clone(),
            shipped: None,
            shipped_record_ms: None,
            local_head: None,
            reported_ms: None,
            clock_ahead_ms: None,
        });
    }
    let (mut tampered, mut incomplete) = (0, 0);
    for host in &hosts {
        let report = verify_chain(fleet.host_ledger(&host.host)?.as_ref())?;
        let name = if host.host == me {
            format!("{} (this host)", host.host)
        } else {
            host.host.clone()
        };
        if let Some(bad) = &report.first_bad {
            tampered += 1;
            println!(
                "{name}: TAMPERED: {} records read; the first bad record is {} (seq {}): {}",
                report.records, bad.id, bad.seq, bad.problem
            );
            continue;
        }
        let behind = if host.host == me {
            own_head()?.saturating_sub(held(host))
        } else {
            host.lag()
        };
        if report.checkpoint_problem.is_some() || behind > 0 {
            incomplete += 1;
            println!(
                "{name}: INCOMPLETE: chain unbroken, {} records held, {behind} not shipped yet{}",
                report.records,
                report
                    .checkpoint_problem
                    .as_ref()
                    .map(|p| format!(" ({p})"))
                    .unwrap_or_default()
            );
            continue;
        }
        println!(
            "{name}: intact: {} records, hash chain unbroken, all of the host's ledger held",
            report.records
        );
    }
    println!(
        "{} host(s): {} intact and whole, {incomplete} incomplete, {tampered} tampered",
        hosts.len(),
        hosts.len() - incomplete - tampered
    );
    Ok(if tampered > 0 {
        1
    } else if incomplete > 0 {
        3
    } else {
        0
    })
}

/// The hosts and the fleet's queue.
pub fn status(args: FleetStatusArgs) -> anyhow::Result<u8> {
    let (view, me) = connect()?;
    let hosts = view.ledger.hosts()?;
    let counts = view.tasks.counts()?;
    let leases = view.leases.list()?;
    if args.json {
        let hosts: Vec<_> = hosts
            .iter()
            .map(|h| {
                serde_json::json!({
                    "host": h.host,
                    "records_held": held(h),
                    "last_record": h.shipped_record_ms.map(nightwatch_time::rfc3339),
                    "reported_head": h.local_head.as_ref().map(|(seq, _)| seq),
                    "behind": h.lag(),
                    "reported": h.reported_ms.map(nightwatch_time::rfc3339),
                    "clock_ahead_ms": h.clock_ahead_ms,
                })
            })
            .collect();
        let queue: serde_json::Map<String, serde_json::Value> = counts
            .iter()
            .map(|(status, n)| (status.as_str().to_owned(), (*n).into()))
            .collect();
        let leases: Vec<_> = leases
            .iter()
            .map(|l| {
                serde_json::json!({
                    "name": l.name,
                    "holder": l.holder,
                    "token": l.token,
                    "until": nightwatch_time::rfc3339(l.until_ms),
                })
            })
            .collect();
        let out = serde_json::json!({
            "this_host": me, "hosts": hosts, "tasks": queue, "leases": leases,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(0);
    }
    println!("fleet: {} host(s); this host is {me}", hosts.len());
    println!(
        "{:<24} {:>10} {:>8} {:<25} {:<25} {:>10}",
        "HOST", "HELD", "BEHIND", "LAST RECORD", "LAST SHIPPED", "CLOCK"
    );
    for h in &hosts {
        let time = |ms: Option<i64>| ms.map_or("-".to_owned(), nightwatch_time::rfc3339);
        println!(
            "{:<24} {:>10} {:>8} {:<25} {:<25} {:>10}",
            h.host,
            held(h),
            h.lag(),
            time(h.shipped_record_ms),
            time(h.reported_ms),
            h.clock_ahead_ms.map_or("-".to_owned(), clock_offset)
        );
    }
    // Records carry their host's own clock's times: a host whose clock is off shows its
    // records out of place in the fleet's order, and the operator should know why.
    for h in &hosts {
        if let Some(ahead) = h.clock_ahead_ms.filter(|ms| ms.abs() >= CLOCK_TOLERANCE_MS) {
            println!(
                "warning: {}'s clock is {:.1} s {} the fleet database's; its records' times are its own clock's",
                h.host,
                ahead.abs() as f64 / 1000.0,
                if ahead > 0 { "ahead of" } else { "behind" }
            );
        }
    }
    let queue: Vec<String> = counts
        .iter()
        .map(|(status, n)| format!("{} {n}", status.as_str()))
        .collect();
    println!("queue: {}", queue.join(", "));
    for l in &leases {
        println!(
            "lease {}: {} (token {}) until {}",
            l.name,
            l.holder,
            l.token,
            nightwatch_time::rfc3339(l.until_ms)
        );
    }
    Ok(0)
}
