//! A tiny driver for process-level tests and benchmarks.
//!
//! ```text
//! cargo run --release -p nightwatch-sqlite --example ledger -- append DIR COUNT
//! cargo run --release -p nightwatch-sqlite --example ledger -- verify DIR
//! ```
//!
//! `append` writes COUNT decision records and prints the median and worst append time;
//! `verify` prints the report as JSON and exits 2 when the chain is broken.

use nightwatch_ledger::{Entry, RecordActor, event};
use nightwatch_sqlite::SqliteLedger;
use nightwatch_store::{Ledger, verify};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["append", dir, count] => append(Path::new(dir), count.parse().unwrap_or(0)),
        ["verify", dir] => check(Path::new(dir)),
        _ => Err("usage: ledger append DIR COUNT | ledger verify DIR".to_string()),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

fn append(dir: &Path, count: usize) -> Result<ExitCode, String> {
    let ledger = SqliteLedger::open(dir).map_err(|e| e.to_string())?;
    let actor = RecordActor {
        kind: "script".into(),
        id: format!("pid-{}", std::process::id()),
    };
    let mut times = Vec::with_capacity(count);
    for i in 0..count {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let mut entry = Entry::new(
            event::DECISION,
            i64::try_from(now).unwrap_or(0),
            actor.clone(),
            "exec",
        );
        entry.inputs = serde_json::json!({ "command": format!("echo {i}") });
        entry.verdict = Some("allow".into());
        let started = Instant::now();
        ledger.append(entry).map_err(|e| e.to_string())?;
        times.push(started.elapsed());
    }
    times.sort();
    if let (Some(median), Some(worst)) = (times.get(times.len() / 2), times.last()) {
        println!("appends: {count}, median {median:?}, worst {worst:?}");
    }
    Ok(ExitCode::SUCCESS)
}

fn check(dir: &Path) -> Result<ExitCode, String> {
    let ledger = SqliteLedger::open(dir).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let report = verify(&ledger).map_err(|e| e.to_string())?;
    eprintln!(
        "verified {} records in {:?}",
        report.records,
        started.elapsed()
    );
    println!(
        "{}",
        serde_json::to_string(&report).map_err(|e| e.to_string())?
    );
    Ok(if report.is_intact() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}
