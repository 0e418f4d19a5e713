//! Robot baselines over a 1,000,000-record ledger (a plain `main`, no criterion).
//!
//! ```text
//! cargo bench -p nightwatch-watch --bench baseline
//! ```
//!
//! The ledger: 1,000,000 `decision` records over the 15 days before a fixed now, about 66,000
//! a day, from 200 actors of six kinds with 1-3 tools each (about 400 actor/tool pairs), the
//! busiest actors far busier than the rest, and a retry storm (robot:retrier `deploy`, one in
//! ten of the last day's records). Built once through the store's public API (`append_all` in
//! batches of 10,000, on tmpfs when there is one) and kept under the target directory
//! (`bench-baseline-1m`); delete it to rebuild. Each run copies it to a scratch directory,
//! so the warm run's appends never change the cached one.
//!
//! Timed: the machine's own limits on the same file (a full `scan`, the last 24 hours through
//! `query`), the watcher's first run (learning 14 days from nothing), a later run with nothing
//! new, and a later run after 1,000 new records.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nightwatch_ledger::{Entry, Filter, RecordActor, RecordContext, event};
use nightwatch_sqlite::SqliteLedger;
use nightwatch_store::{Ledger, LedgerReader};
use nightwatch_watch::baseline::BaselineSpec;
use nightwatch_watch::{Databases, Env, NoContainers, Seen};

/// 2026-02-14T03:30:00Z: the benchmark's now.
const NOW: i64 = 1_771_039_800_000;
const DAY: i64 = 86_400_000;
const RECORDS: u64 = 1_000_000;
const SPAN: i64 = 15 * DAY;
const BATCH: usize = 10_000;
const ACTORS: usize = 200;
const KINDS: [&str; 6] = [
    "agent",
    "script",
    "robot",
    "janitor",
    "dispatcher",
    "idle-controller",
];
const TOOLS: [&str; 9] = [
    "exec",
    "write",
    "read",
    "backup",
    "prune",
    "deploy",
    "remove_container",
    "runbook",
    "suspend_app",
];

struct NoDatabases;

impl Databases for NoDatabases {
    fn returns_row(&self, _: &str, _: &str, _: Duration) -> Result<bool, String> {
        Err("no databases in this benchmark".into())
    }
}

/// A small deterministic generator (SplitMix64): the same ledger every build.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Record `n` of the ledger.
fn entry(n: u64, mix: &mut Mix) -> Entry {
    let at = NOW - SPAN + (n as i64) * SPAN / RECORDS as i64;
    let storm = at >= NOW - DAY && n.is_multiple_of(10);
    let (kind, id, tool) = if storm {
        ("robot", "retrier".to_owned(), "deploy")
    } else {
        // Skewed: the first actors are far busier than the last.
        let u = mix.unit();
        let actor = ((u * u * u) * ACTORS as f64) as usize;
        let kind = KINDS[actor % KINDS.len()];
        let tools = 1 + actor % 3;
        let tool = TOOLS[(actor + (mix.next() as usize % tools)) % TOOLS.len()];
        (kind, format!("{kind}-{actor}"), tool)
    };
    let verdict = if mix.next().is_multiple_of(20) {
        "halt"
    } else {
        "allow"
    };
    Entry {
        inputs: serde_json::json!({
            "target": format!("db{}", n % 7),
            "details": { "attempt": n % 13, "reason": "nightly maintenance window" },
        }),
        context: RecordContext {
            triggered_by: Some("schedule".into()),
            alert_id: None,
            host: Some(format!("web-{}", n % 5)),
            task: None,
        },
        verdict: Some(verdict.into()),
        rule: Some("robots-report".into()),
        reasons: vec!["a robot reported what it is about to do".into()],
        ..Entry::new(
            event::DECISION,
            at,
            RecordActor {
                kind: kind.into(),
                id,
            },
            tool,
        )
    }
}

fn scratch_base() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for item in std::fs::read_dir(from).expect("read the cached ledger") {
        let item = item.expect("a file");
        if item.file_type().expect("its type").is_file() {
            std::fs::copy(item.path(), to.join(item.file_name())).expect("copy");
        }
    }
}

/// The cached ledger's directory, built first if it is not there.
fn cached_ledger() -> PathBuf {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-baseline-1m");
    if cache.join("complete").exists() {
        return cache;
    }
    let build = tempfile::Builder::new()
        .prefix("nightwatch-bench-baseline-")
        .tempdir_in(scratch_base())
        .expect("a build directory");
    let started = Instant::now();
    let ledger = SqliteLedger::open(build.path()).expect("open the ledger");
    let mut mix = Mix(18);
    let mut n = 0;
    while n < RECORDS {
        let upto = (n + BATCH as u64).min(RECORDS);
        let batch: Vec<Entry> = (n..upto).map(|i| entry(i, &mut mix)).collect();
        ledger.append_all(batch).expect("append a batch");
        n = upto;
    }
    drop(ledger);
    let _ = std::fs::remove_dir_all(&cache);
    copy_dir(build.path(), &cache);
    std::fs::write(cache.join("complete"), b"").expect("mark the cache complete");
    eprintln!(
        "built the 1,000,000-record ledger in {:.1} s (cached in {})",
        started.elapsed().as_secs_f64(),
        cache.display()
    );
    cache
}

fn spec() -> BaselineSpec {
    yaml_serde::from_str(
        "expect:\n  \"robot:robot-2\": { backup: 1/day }\n  \"script:*\": { backup: 2/day }\n\
         learn: { days: 14, factor: 4, at_least: 20 }\n",
    )
    .expect("the watcher")
}

fn run(spec: &BaselineSpec, ledger: &dyn LedgerReader, now_ms: i64) -> (Duration, usize, usize) {
    let env = Env {
        now_ms,
        ledger,
        databases: &NoDatabases,
        containers: &NoContainers,
        timeout: Duration::from_secs(600),
        reference_clock_ms: None,
    };
    let started = Instant::now();
    let seen = spec.run(&env);
    let took = started.elapsed();
    assert!(
        seen.iter().all(|o| o.seen != Seen::Unknown),
        "the run could not tell: {seen:#?}"
    );
    let found = seen.iter().filter(|o| o.seen == Seen::Found).count();
    for o in seen.iter().filter(|o| o.seen == Seen::Found) {
        eprintln!("found: {}", o.summary);
    }
    (took, found, seen.len())
}

fn ms(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1000.0)
}

fn main() {
    let cache = cached_ledger();
    let dir = tempfile::Builder::new()
        .prefix("nightwatch-bench-baseline-run-")
        .tempdir_in(scratch_base())
        .expect("a scratch directory");
    copy_dir(&cache, dir.path());
    let ledger = SqliteLedger::open(dir.path()).expect("open the copy");

    println!("## Robot baselines over a 1,000,000-record ledger");
    println!();
    println!("| step | ms | records read | observations (found) |");
    println!("|---|---:|---:|---:|");

    let started = Instant::now();
    let mut all = 0u64;
    ledger
        .scan(&mut |_| {
            all += 1;
            Ok(())
        })
        .expect("scan");
    println!(
        "| limit: full `scan` of the ledger | {} | {all} | |",
        ms(started.elapsed())
    );
    let started = Instant::now();
    let day = ledger
        .query(&Filter {
            since_ms: Some(NOW - DAY),
            event: Some(event::DECISION.into()),
            ..Filter::default()
        })
        .expect("query")
        .len();
    println!(
        "| limit: `query` of the last 24 h | {} | {day} | |",
        ms(started.elapsed())
    );

    let spec = spec();
    let (took, found, seen) = run(&spec, &ledger, NOW);
    println!(
        "| first run: learn 14 days from nothing | {} | ~{} | {seen} ({found}) |",
        ms(took),
        all
    );
    let (took, found, seen) = run(&spec, &ledger, NOW + 600_000);
    println!(
        "| later run, nothing new | {} | 0 | {seen} ({found}) |",
        ms(took)
    );
    let mut mix = Mix(81);
    let fresh: Vec<Entry> = (0..1000)
        .map(|i| {
            let mut e = entry(RECORDS - 1 - i, &mut mix);
            e.timestamp_ms = NOW + 600_000 + i as i64 * 600;
            e
        })
        .collect();
    ledger.append_all(fresh).expect("append the new records");
    let (took, found, seen) = run(&spec, &ledger, NOW + 1_200_000);
    println!(
        "| later run, 1,000 new records | {} | 1000 | {seen} ({found}) |",
        ms(took)
    );
    println!();
}
