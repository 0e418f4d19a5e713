//! Ledger benchmarks (a plain `main`, no criterion):
//!
//! 1. durable appends per second with 1 writer and with 8 concurrent writers, each writer its
//!    own `SqliteLedger::open(dir)` handle on the same directory (as separate processes are);
//! 2. `verify` over 1,000,000 records.
//!
//! ```text
//! cargo bench -p nightwatch-sqlite --bench ledger
//! ```
//!
//! The 1,000,000-record ledger is built once through the public API (one writer, `append` in a
//! loop) in a temporary directory on tmpfs (`/dev/shm`, so the build does not wait on a
//! million fsyncs; the records are the same), then copied to `target/bench-ledger-1m` and
//! reused by later runs. Delete that directory to rebuild it. Environment knobs:
//! `BENCH_APPEND_SECS` (default 3), `BENCH_VERIFY_RECORDS` (default 1,000,000; a different
//! count uses its own cache directory), `BENCH_LEDGER_DIR` (where the append ledgers go;
//! default the system temp directory).

use nightwatch_ledger::{Entry, RecordActor, RecordContext, event};
use nightwatch_sqlite::SqliteLedger;
use nightwatch_store::{Ledger, verify};
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// 2026-02-14T03:17:22Z.
const T0: i64 = 1_771_039_042_000;

const COMMANDS: [&str; 8] = [
    "journalctl --vacuum-time=7d --unit=app-worker",
    "du -sh /var/log/nginx /var/log/app /var/lib/docker/containers",
    "systemctl status app-worker.service --no-pager --lines=20",
    "find /var/log -name '*.gz' -mtime +14 -size +10M -print",
    "docker ps --filter status=exited --format '{{.ID}} {{.Names}}'",
    "kubectl get pods -n payments -o wide --field-selector=status.phase",
    "tail -n 200 /var/log/app/worker.log | grep -i 'out of memory'",
    "df -h / /var /var/lib/docker && ls -la /var/lib/docker/overlay2",
];

/// A command of exactly 60 characters, different for every `n`.
fn command(n: u64) -> String {
    let mut line = format!("{} #{n}", COMMANDS[(n % 8) as usize]);
    while line.len() < 60 {
        line.push(' ');
        line.push_str("-v");
    }
    line.truncate(60);
    line
}

/// A decision as the Claude hook records it: a 60-character command, a rule, reasons, context.
fn entry(writer: usize, n: u64) -> Entry {
    let line = command(n);
    let i = i64::try_from(n).unwrap_or(0);
    Entry {
        session_id: Some(format!("sess_2a9f3b{writer:02}")),
        inputs: serde_json::json!({
            "command": line,
            "description": "Look at the disk and the logs for the disk-full alert",
            "timeout": 120_000,
        }),
        context: RecordContext {
            triggered_by: Some("alert".into()),
            alert_id: Some("disk-full-web-1".into()),
            host: Some("web-1".into()),
            task: Some("free disk space on web-1".into()),
        },
        verdict: Some("allow".into()),
        rule: Some("read-only".into()),
        reasons: vec![
            format!("`{}` only reads", line.split(' ').next().unwrap_or("")),
            "no writes, deletes or network".into(),
        ],
        call_id: Some(format!("toolu_01{writer:02}{n:010}")),
        cwd: Some("/opt/agent".into()),
        ..Entry::new(
            event::DECISION,
            T0 + i * 250,
            RecordActor {
                kind: "agent".into(),
                id: "claude-code".into(),
            },
            "exec",
        )
    }
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace(['_', ','], "").parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    // `cargo bench` passes `--bench`; a filter word runs only that part.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    let secs = env_num("BENCH_APPEND_SECS", 3);
    let base = std::env::var_os("BENCH_LEDGER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);

    if wanted("appends") {
        println!(
            "## Ledger: durable appends ({secs} s per row, ledgers under {})",
            base.display()
        );
        println!();
        println!(
            "| writers | appends | per writer (fewest–most) | appends/s | median ms | p99 ms | max ms |"
        );
        println!("|--------:|--------:|---:|----------:|----------:|-------:|-------:|");
        for writers in [1usize, 8] {
            appends(&base, writers, Duration::from_secs(secs));
        }
        println!();
    }
    if wanted("verify") {
        verify_bench(env_num("BENCH_VERIFY_RECORDS", 1_000_000));
    }
}

/// `writers` threads, each with its own handle on one fresh directory, append for `length`.
fn appends(base: &Path, writers: usize, length: Duration) {
    let dir = tempfile::Builder::new()
        .prefix("nightwatch-bench-appends-")
        .tempdir_in(base)
        .expect("a temporary directory");
    // Created (schema and all) before the clock starts.
    drop(SqliteLedger::open(dir.path()).expect("open the ledger"));
    let barrier = Barrier::new(writers + 1);
    let mut started = Instant::now();
    let mut finished = started;
    let per_writer: Vec<Vec<Duration>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let barrier = &barrier;
                let path = dir.path();
                s.spawn(move || {
                    let ledger = SqliteLedger::open(path).expect("open the ledger");
                    // One warm-up append per writer, untimed.
                    ledger
                        .append(entry(w, 1_000_000_000 + w as u64))
                        .expect("append");
                    let mut times = Vec::with_capacity(4096);
                    barrier.wait();
                    let deadline = Instant::now() + length;
                    let mut n = 0u64;
                    while Instant::now() < deadline {
                        let e = entry(w, n);
                        let t = Instant::now();
                        ledger.append(e).expect("append");
                        times.push(t.elapsed());
                        n += 1;
                    }
                    times
                })
            })
            .collect();
        barrier.wait();
        started = Instant::now();
        let all = handles
            .into_iter()
            .map(|h| h.join().expect("writer thread"))
            .collect();
        finished = Instant::now();
        all
    });
    let wall = finished - started;
    let fewest = per_writer.iter().map(Vec::len).min().unwrap_or(0);
    let most = per_writer.iter().map(Vec::len).max().unwrap_or(0);
    let mut times: Vec<Duration> = per_writer.into_iter().flatten().collect();
    times.sort();
    let count = times.len();
    // The chain the writers built together must be intact.
    let ledger = SqliteLedger::open(dir.path()).expect("open the ledger");
    let report = verify(&ledger).expect("verify");
    assert!(report.is_intact(), "broken chain: {:?}", report.first_bad);
    assert_eq!(report.records, (count + writers) as u64);
    println!(
        "| {writers} | {count} | {fewest}–{most} | {:.0} | {:.2} | {:.2} | {:.2} |",
        count as f64 / wall.as_secs_f64(),
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.99)),
        ms(times.last().copied().unwrap_or_default()),
    );
}

fn verify_bench(records: u64) {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let cache = if records == 1_000_000 {
        target.join("bench-ledger-1m")
    } else {
        target.join(format!("bench-ledger-{records}"))
    };
    let done = cache.join("bench-complete");
    println!("## Ledger: verify {records} records");
    println!();
    if std::fs::read_to_string(&done).ok().as_deref() != Some(&format!("{records}\n")) {
        build(&cache, records);
        std::fs::write(&done, format!("{records}\n")).expect("write the marker");
    } else {
        println!("reusing the ledger in {}", cache.display());
    }
    let db_bytes = std::fs::metadata(cache.join("ledger.db"))
        .map(|m| m.len())
        .unwrap_or(0);
    println!(
        "ledger.db: {:.0} MiB, {:.0} bytes per record",
        db_bytes as f64 / 1048576.0,
        db_bytes as f64 / records as f64
    );
    let ledger = SqliteLedger::open(&cache).expect("open the ledger");
    println!();
    println!("| run | records | seconds | records/s |");
    println!("|----:|--------:|--------:|----------:|");
    for run in 1..=3 {
        let t = Instant::now();
        let report = verify(&ledger).expect("verify");
        let took = t.elapsed();
        assert!(report.is_intact(), "broken chain: {:?}", report.first_bad);
        assert_eq!(report.records, records);
        println!(
            "| {run} | {} | {:.3} | {:.0} |",
            report.records,
            took.as_secs_f64(),
            report.records as f64 / took.as_secs_f64()
        );
    }
    println!();
}

/// Builds a ledger of `records` decisions through the public API (one writer) on tmpfs when
/// there is one, then copies it to `cache`.
fn build(cache: &Path, records: u64) {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = tempfile::Builder::new()
        .prefix("nightwatch-bench-build-")
        .tempdir_in(&base)
        .expect("a temporary directory");
    println!(
        "building {records} records with `append` (one writer) in {}",
        dir.path().display()
    );
    let t = Instant::now();
    {
        let ledger = SqliteLedger::open(dir.path()).expect("open the ledger");
        let mut last = Instant::now();
        for n in 0..records {
            ledger.append(entry((n % 8) as usize, n)).expect("append");
            if last.elapsed() > Duration::from_secs(30) {
                eprintln!("  ... {n} records, {:.0} s", t.elapsed().as_secs_f64());
                last = Instant::now();
            }
        }
        // Dropping the last connection checkpoints the WAL into ledger.db.
    }
    let took = t.elapsed();
    println!(
        "built in {:.1} s ({:.0} appends/s, {:.1} µs per append, on {})",
        took.as_secs_f64(),
        records as f64 / took.as_secs_f64(),
        took.as_secs_f64() * 1e6 / records as f64,
        base.display()
    );
    let _ = std::fs::remove_dir_all(cache);
    std::fs::create_dir_all(cache).expect("create the cache directory");
    for entry in std::fs::read_dir(dir.path()).expect("list the build directory") {
        let entry = entry.expect("a directory entry");
        std::fs::copy(entry.path(), cache.join(entry.file_name())).expect("copy the ledger");
    }
    println!("copied to {}", cache.display());
}
