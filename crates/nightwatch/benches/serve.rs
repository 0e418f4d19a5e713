//! Webhook intake under load: `cargo build --release && cargo bench -p nightwatch --bench serve`.
//!
//! Starts the release `nightwatch serve` on 127.0.0.1 with the embedded (SQLite) stores in a
//! fresh data directory and one route (whose tasks wait an hour, so the workers stay idle and
//! what is measured is intake: store the arrival, offer the task, write the ledger record, all
//! durable before the reply). Debian's `wrk` posts Alertmanager notifications, each with a
//! fresh fingerprint (a new alert, so a new task), at a fixed number of connections for a
//! fixed time. Reports events stored per second and reply latency percentiles, then checks
//! that every 200 is stored once: the daemon's count of arrivals equals wrk's count of replies.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const SECONDS: u32 = 10;
const CONNECTIONS: [u32; 3] = [1, 4, 16];

fn main() {
    if Command::new("wrk").arg("--version").output().is_err() {
        eprintln!("wrk is not installed (Debian: apt-get install wrk); nothing measured");
        std::process::exit(1);
    }
    let dir = std::env::temp_dir().join(format!("nightwatch-bench-serve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("serve.yaml"),
        "queue: { resolve_delay: 1h }\nroutes:\n  - id: all\n    run: [\"true\"]\n",
    )
    .unwrap();
    let script = dir.join("post.lua");
    std::fs::write(&script, LUA).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_nightwatch"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("NIGHTWATCH_HOME", &dir)
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

    println!("webhook intake, {SECONDS} s per row, durable SQLite stores, 1 alert per request");
    println!(
        "{:>11} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "connections", "events/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "non-2xx"
    );
    let mut replies = 0u64;
    for connections in CONNECTIONS {
        let out = Command::new("wrk")
            .args([
                "-t",
                &connections.min(2).to_string(),
                "-c",
                &connections.to_string(),
                "-d",
                &format!("{SECONDS}s"),
                "--latency",
                "-s",
            ])
            .arg(&script)
            .arg(format!("{url}/hooks/alertmanager"))
            .output()
            .expect("wrk runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let w = Wrk::parse(&text);
        replies += w.requests;
        println!(
            "{connections:>11} {:>10.0} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>7}",
            w.rate, w.p50, w.p90, w.p99, w.max, w.non_2xx
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let stored = count_arrivals(&dir);
    println!("stored arrivals: {stored}; replies wrk counted: {replies}");
    // wrk counts only replies it read in time; a request in flight at the end may be stored
    // without its reply counted, never the other way round.
    assert!(
        stored >= replies,
        "a reply was sent for an arrival that is not stored"
    );
    unsafe { kill(child.id() as i32, 15) };
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
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

#[derive(Default)]
struct Wrk {
    rate: f64,
    requests: u64,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
    non_2xx: u64,
}

impl Wrk {
    fn parse(text: &str) -> Wrk {
        let mut w = Wrk::default();
        for line in text.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                ["Requests/sec:", rate] => w.rate = rate.parse().unwrap_or(0.0),
                ["50%", v] => w.p50 = ms(v),
                ["90%", v] => w.p90 = ms(v),
                ["99%", v] => w.p99 = ms(v),
                ["Latency", _avg, _stdev, max, ..] => w.max = ms(max),
                [n, "requests", "in", ..] => w.requests = n.parse().unwrap_or(0),
                ["Non-2xx", "or", "3xx", "responses:", n] => w.non_2xx = n.parse().unwrap_or(0),
                _ => {}
            }
        }
        w
    }
}

/// wrk's `1.23ms`, `456.00us`, `1.02s` as milliseconds.
fn ms(text: &str) -> f64 {
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (text, 1.0)
    };
    number.parse::<f64>().unwrap_or(f64::NAN) * scale
}

/// Each request a new alert: the fingerprint counts up per wrk thread.
const LUA: &str = r#"
local counter = 0
local thread_id = 0
local threads = {}
function setup(thread)
  thread:set("thread_id", #threads + 1)
  table.insert(threads, thread)
end
function request()
  counter = counter + 1
  local fp = string.format("bench%02d%010d", thread_id, counter)
  local body = '{"version":"4","groupKey":"{}:{alertname=\\"DiskFull\\"}","status":"firing","receiver":"nightwatch","groupLabels":{"alertname":"DiskFull"},"commonLabels":{},"commonAnnotations":{},"externalURL":"http://am","alerts":[{"status":"firing","labels":{"alertname":"DiskFull","instance":"db' .. fp .. ':9100"},"annotations":{"summary":"disk above 90%"},"startsAt":"2026-02-14T03:16:30Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prom","fingerprint":"' .. fp .. '"}]}'
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
end
"#;
