//! `nightwatch hazards`: the host's hazards, each with its fix (nightwatch-hazards does the
//! looking; this is the command line and the exit status).

use std::path::Path;

use anyhow::Context;
use nightwatch_hazards::{Check, Hazard, Options, Seen};
use serde_json::json;

use crate::cli::HazardsArgs;
use crate::clock::Clock;

/// Exit status when a hazard is found.
pub const HAZARD_FOUND: u8 = 5;
/// Exit status when nothing was found but some check could not tell.
pub const HAZARD_UNKNOWN: u8 = 6;

pub fn run(args: HazardsArgs) -> anyhow::Result<u8> {
    let max_skew = nightwatch_time::parse_duration(&args.max_skew)
        .map_err(|e| anyhow::anyhow!("--max-skew {:?}: {e}", args.max_skew))?;
    let ignore = args
        .ignore
        .iter()
        .map(|id| id.parse::<Hazard>())
        .collect::<Result<Vec<_>, _>>()
        .context("--ignore")?;
    // The clock is this host's: under another root, timedatectl would answer for the wrong
    // one, so it is asked only when named.
    let timedatectl = match args.timedatectl {
        Some(program) => Some(program),
        None if args.root == Path::new("/") => Some("timedatectl".into()),
        None => None,
    };
    let options = Options {
        root: args.root,
        disk_full_percent: args.disk_full,
        max_skew,
        date_urls: args.date_urls,
        timedatectl,
        ignore,
        ..Options::default()
    };
    let now_ms = Clock::from_environment()?.now_ms();
    let checks = nightwatch_hazards::scan(&options, now_ms);
    let count = |seen| checks.iter().filter(|c| c.seen == seen).count();
    let (found, unknown, ok) = (count(Seen::Found), count(Seen::Unknown), count(Seen::Ok));
    if args.json {
        let checks: Vec<_> = checks.iter().map(check_json).collect();
        let out = json!({"found": found, "unknown": unknown, "ok": ok, "checks": checks});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for check in &checks {
            println!("{}", line(check));
        }
        println!("found: {found}, unknown: {unknown}, ok: {ok}");
    }
    Ok(if found > 0 {
        HAZARD_FOUND
    } else if unknown > 0 {
        HAZARD_UNKNOWN
    } else {
        0
    })
}

fn check_json(check: &Check) -> serde_json::Value {
    json!({
        "id": check.id(),
        "subject": check.subject,
        "seen": check.seen.as_str(),
        "what": check.what,
        "fix": check.fix,
        "evidence": check.evidence,
    })
}

/// `FOUND disk-near-full /: ... — fix: ...`; an ok check without its fix.
fn line(check: &Check) -> String {
    let label = match check.seen {
        Seen::Found => "FOUND  ",
        Seen::Unknown => "UNKNOWN",
        Seen::Ok => "ok     ",
    };
    let mut line = format!("{label} {} [{}]: {}", check.id(), check.subject, check.what);
    if check.seen != Seen::Ok && !check.fix.is_empty() {
        line.push_str(" — fix: ");
        line.push_str(&check.fix);
    }
    line
}
