//! Webhook intake under load: `cargo build --release && cargo bench -p nightwatch --bench serve`.
//!
//! Starts the release `nightwatch serve` on 127.0.0.1 with the embedded (SQLite) stores in a
//! fresh data directory and one route for `alertname=DiskFull` (whose tasks wait a year, so
//! the workers stay idle and what is measured is intake: store the arrival, offer the task,
//! write the ledger record, all durable before the reply; a year, not an hour, so a cached
//! history's tasks do not come due and run during a later run). Debian's `wrk` posts Alertmanager
//! notifications at 1, 4 and 16 connections for a fixed time, first routed (each a new
//! DiskFull alert, so a new task), then unrouted (an alert no route takes).
//!
//! Honest by construction and checked: every request is a distinct alert (its fingerprint
//! names the run, the row, the wrk thread and a counter), and after each row the daemon's own
//! stores say what became of that row's arrivals; a routed row with a deduplicated arrival
//! fails the run. Beside the figures, the same run measures the disk's own limit: one-row
//! commits per second (WAL, `synchronous=FULL`) in the same directory.
//!
//! `BENCH_HISTORY=N` first stores N distinct routed alerts (in groups, through the daemon), so
//! the rows run against a history of that size, every one of its tasks still waiting (the
//! harshest history: all of them live). With `BENCH_HISTORY_RESOLVED=1` the history is N
//! arrivals of which half are resolutions, so its tasks were cancelled before they ran, as a
//! night of problems that cleared leaves them. `BENCH_SECONDS` sets each row's length.
//! `BENCH_HISTORY_CACHE=DIR` keeps the filled history in DIR and starts later runs from a
//! copy of it (delete DIR when the history's kind or size changes, or the schema does).
//! `BENCH_SERVE_BINARY=PATH` measures another build (an earlier commit's) the same way.

mod support;

use support::wrk::Wrk;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{LUA, commit_rate};

const CONNECTIONS: [u32; 3] = [1, 4, 16];

fn main() {
    if Command::new("wrk").arg("--version").output().is_err() {
        eprintln!("wrk is not installed (Debian: apt-get install wrk); nothing measured");
        std::process::exit(1);
    }
    let seconds: u32 = env_number("BENCH_SECONDS", 10);
    let history: u64 = env_number("BENCH_HISTORY", 0);
    let resolved = env_number::<u8>("BENCH_HISTORY_RESOLVED", 0) == 1;
    let run = std::process::id();
    let dir = std::env::temp_dir().join(format!("nightwatch-bench-serve-{run}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("serve.yaml"),
        "queue: { resolve_delay: 52w }\nroutes:\n  - id: disk\n    when: { labels: { alertname: DiskFull } }\n    run: [\"true\"]\n",
    )
    .unwrap();
    let script = dir.join("post.lua");
    std::fs::write(&script, LUA).unwrap();

    let cache = std::env::var_os("BENCH_HISTORY_CACHE").map(std::path::PathBuf::from);
    let cached = cache
        .as_ref()
        .filter(|c| history > 0 && c.join("alerts.db").exists());
    if let Some(cache) = cached {
        copy_data(cache, &dir);
        println!(
            "history: {history} arrivals copied from {}",
            cache.display()
        );
    }
    let (mut child, mut url) = start_daemon(&dir);
    if history > 0 && cached.is_none() {
        let started = Instant::now();
        fill_history(url.trim_start_matches("http://"), history, run, resolved);
        let kind = if resolved {
            "arrivals (alerts that fired, then resolved)"
        } else {
            "routed alerts, their tasks all waiting,"
        };
        println!(
            "history: {history} {kind} stored first, in {:.0} s",
            started.elapsed().as_secs_f64()
        );
        if let Some(cache) = &cache {
            // Copied with the daemon stopped, so the files are whole.
            stop(&mut child);
            copy_data(&dir, cache);
            (child, url) = start_daemon(&dir);
        }
    }
    let disk = commit_rate(&dir, Duration::from_secs(2));
    println!("the disk's own limit: {disk:.0} one-row durable commits/s (WAL, synchronous=FULL)");
    println!(
        "webhook intake, {seconds} s per row, durable SQLite stores, 1 distinct alert per request"
    );
    println!(
        "{:>9} {:>11} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>6} {:>8} {:>10}",
        "alerts",
        "connections",
        "events/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "non-2xx",
        "routed",
        "dedup",
        "unrouted",
        "cpu ms/ev"
    );
    let mut replies = 0u64;
    for (kind, alertname) in [("routed", "DiskFull"), ("unrouted", "NoRouteForThis")] {
        for connections in CONNECTIONS {
            let before = last_arrival(&dir);
            let row = format!("r{run}-{kind}-{connections}");
            let cpu_before = support::cpu::process(child.id());
            let out = Command::new("wrk")
                .args([
                    "-t",
                    &connections.min(2).to_string(),
                    "-c",
                    &connections.to_string(),
                    "-d",
                    &format!("{seconds}s"),
                    "--latency",
                    "-s",
                ])
                .arg(&script)
                .arg(format!("{url}/hooks/alertmanager"))
                .args(["--", &row, alertname])
                .output()
                .expect("wrk runs");
            let text = String::from_utf8_lossy(&out.stdout);
            let w = Wrk::parse(&text);
            // The daemon's own CPU time per reply, read before the pause below.
            let cpu_per_event = 1000.0
                * support::cpu::process(child.id())
                    .saturating_sub(cpu_before)
                    .as_secs_f64()
                / w.requests.max(1) as f64;
            replies += w.requests;
            std::thread::sleep(Duration::from_millis(500));
            let became = dispositions_after(&dir, before);
            let count = |d: &str| became.iter().find(|(k, _)| k == d).map_or(0, |(_, n)| *n);
            println!(
                "{kind:>9} {connections:>11} {:>10.0} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>7} {:>7} {:>6} {:>8} {cpu_per_event:>10.3}",
                w.rate,
                w.p50,
                w.p90,
                w.p99,
                w.max,
                w.non_2xx,
                count("routed"),
                count("deduplicated"),
                count("no_route"),
            );
            assert_eq!(
                count("deduplicated"),
                0,
                "every request was meant to be a new alert: {became:?}"
            );
        }
    }
    let stored = count_arrivals(&dir);
    println!("stored arrivals: {stored} (history {history}); replies wrk counted: {replies}");
    // wrk counts only replies it read in time; a request in flight at the end may be stored
    // without its reply counted, never the other way round.
    assert!(
        stored >= replies + history,
        "a reply was sent for an arrival that is not stored"
    );
    stop(&mut child);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts the release daemon on `dir`; the child and the URL it says it listens on.
fn start_daemon(dir: &Path) -> (std::process::Child, String) {
    let binary = std::env::var_os("BENCH_SERVE_BINARY")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_nightwatch").into());
    let mut child = Command::new(binary)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("NIGHTWATCH_HOME", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("nightwatch serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("nightwatch serve: listening on ")
        .expect("the daemon says where it listens")
        .to_owned();
    (child, url)
}

fn stop(child: &mut std::process::Child) {
    unsafe { kill(child.id() as i32, 15) };
    let _ = child.wait();
}

/// Copies the stores (and the config) of one data directory into another.
fn copy_data(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            copy_by_pages(&entry.path(), &to.join(entry.file_name()));
        }
    }
    // The copy's dirty pages would otherwise be written back during the rows, slowing
    // their commits.
    unsafe { sync() };
}

/// Copies a file 4 KiB at a time, as SQLite writes its pages. A whole-file copy fills the
/// page cache with large folios, and every 4 KiB page the daemon then writes dirties a whole
/// folio: measured, the copy wrote back about 110 KB a routed alert against 35 KB for the
/// same history copied this way (or written by the daemon itself).
fn copy_by_pages(from: &Path, to: &Path) {
    let mut source = std::fs::File::open(from).unwrap();
    let mut target = std::fs::File::create(to).unwrap();
    let mut page = [0u8; 4096];
    loop {
        let n = source.read(&mut page).unwrap();
        if n == 0 {
            break;
        }
        target.write_all(&page[..n]).unwrap();
    }
}

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
    fn sync();
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Stores `n` distinct routed alerts through the daemon, 500 to a notification (as a large
/// Alertmanager group arrives), on four connections at once.
/// Stores `n` arrivals of history in 500-alert groups from four senders: all firing, or (with
/// `resolved`) each group firing and then the same group resolved.
fn fill_history(addr: &str, n: u64, run: u32, resolved: bool) {
    const GROUP: u64 = 500;
    let alerts_total = if resolved { n / 2 } else { n };
    let groups: Vec<u64> = (0..alerts_total.div_ceil(GROUP)).collect();
    std::thread::scope(|scope| {
        for share in groups.chunks(groups.len().div_ceil(4).max(1)) {
            scope.spawn(move || {
                for &g in share {
                    let size = GROUP.min(alerts_total - g * GROUP);
                    let fingerprints: Vec<String> = (0..size)
                        .map(|i| format!("h{run}-{}", g * GROUP + i))
                        .collect();
                    let statuses: &[&str] = if resolved {
                        &["firing", "resolved"]
                    } else {
                        &["firing"]
                    };
                    for status in statuses {
                        let alerts: Vec<String> = fingerprints
                            .iter()
                            .map(|f| alert_json(f, "DiskFull", status))
                            .collect();
                        let body = notification(&alerts.join(","));
                        let reply = post(addr, "/hooks/alertmanager", &body);
                        assert_eq!(reply, 200, "history group {g} ({status}) was not stored");
                    }
                }
            });
        }
    });
}

fn alert_json(fingerprint: &str, alertname: &str, status: &str) -> String {
    let ends = if status == "resolved" {
        "2026-02-14T03:46:30Z"
    } else {
        "0001-01-01T00:00:00Z"
    };
    format!(
        r#"{{"status":"{status}","labels":{{"alertname":"{alertname}","instance":"{fingerprint}:9100"}},"annotations":{{"summary":"disk above 90%"}},"startsAt":"2026-02-14T03:16:30Z","endsAt":"{ends}","generatorURL":"http://prom","fingerprint":"{fingerprint}"}}"#
    )
}

fn notification(alerts: &str) -> String {
    format!(
        r#"{{"version":"4","groupKey":"{{}}:{{alertname=\"DiskFull\"}}","status":"firing","receiver":"nightwatch","groupLabels":{{"alertname":"DiskFull"}},"commonLabels":{{}},"commonAnnotations":{{}},"externalURL":"http://am","alerts":[{alerts}]}}"#
    )
}

/// A blocking POST; the reply's status.
fn post(addr: &str, path: &str, body: &str) -> u16 {
    let mut stream = std::net::TcpStream::connect(addr).expect("the daemon listens");
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn last_arrival(dir: &Path) -> i64 {
    let db = rusqlite::Connection::open(dir.join("alerts.db")).expect("alerts.db opens");
    db.query_row("SELECT coalesce(max(id), 0) FROM alert_events", [], |r| {
        r.get(0)
    })
    .expect("the last arrival is read")
}

/// What became of the arrivals after `after`, by disposition.
fn dispositions_after(dir: &Path, after: i64) -> Vec<(String, u64)> {
    let db = rusqlite::Connection::open(dir.join("alerts.db")).expect("alerts.db opens");
    let mut stmt = db
        .prepare(
            "SELECT coalesce(disposition, 'undecided'), count(*) FROM alert_events
             WHERE id > ?1 GROUP BY 1",
        )
        .unwrap();
    stmt.query_map([after], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Arrivals stored with their ledger record.
fn count_arrivals(dir: &Path) -> u64 {
    let db = rusqlite::Connection::open(dir.join("alerts.db")).expect("alerts.db opens");
    db.query_row(
        "SELECT count(*) FROM alert_events WHERE record IS NOT NULL",
        [],
        |r| r.get::<_, i64>(0),
    )
    .expect("arrivals are counted") as u64
}
