//! What the daemon benchmarks share: the disk's own commit rate, and wrk's script of distinct
//! alerts.

pub mod cpu;
pub mod wrk;

use std::path::Path;
use std::time::{Duration, Instant};

/// One-row commits per second for `span`, each durable (WAL, `synchronous=FULL`), in a file
/// of its own in `dir`: what one synced write costs on this disk.
pub fn commit_rate(dir: &Path, span: Duration) -> f64 {
    let path = dir.join("commit-rate.db");
    let db = rusqlite::Connection::open(&path).expect("a scratch database");
    db.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (x INTEGER);",
    )
    .unwrap();
    let started = Instant::now();
    let mut commits = 0u64;
    while started.elapsed() < span {
        db.execute("INSERT INTO t VALUES (?1)", [commits as i64])
            .unwrap();
        commits += 1;
    }
    let rate = commits as f64 / started.elapsed().as_secs_f64();
    drop(db);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    rate
}

/// Each request a new alert: its fingerprint names the row (the script's first argument), the
/// wrk thread and a counter; the second argument is the alert's name (routed or not). Globals,
/// not locals: `thread:set` in `setup` writes a thread's globals.
pub const LUA: &str = r#"
row = "row"
alertname = "DiskFull"
id = 0
counter = 0
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end
function init(args)
  row = args[1] or row
  alertname = args[2] or alertname
end
function request()
  counter = counter + 1
  local fp = string.format("%s-%d-%d", row, id, counter)
  local body = '{"version":"4","groupKey":"{}:{alertname=\\"' .. alertname .. '\\"}","status":"firing","receiver":"nightwatch","groupLabels":{"alertname":"' .. alertname .. '"},"commonLabels":{},"commonAnnotations":{},"externalURL":"http://am","alerts":[{"status":"firing","labels":{"alertname":"' .. alertname .. '","instance":"' .. fp .. ':9100"},"annotations":{"summary":"disk above 90%"},"startsAt":"2026-02-14T03:16:30Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prom","fingerprint":"' .. fp .. '"}]}'
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
end
"#;
