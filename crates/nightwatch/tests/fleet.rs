//! A fleet through the real binary: daemons as hosts (own data directories and host names)
//! on one real PostgreSQL cluster. Heavy; its own test binary.

mod common;

use common::daemon::Daemon;
use common::postgres::Cluster;
use common::{nightwatch, scratch};
use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

fn env<'a>(home: &'a Path, url: &'a str, host: &'a str) -> Vec<(&'a str, &'a OsStr)> {
    vec![
        ("NIGHTWATCH_HOME", home.as_os_str()),
        ("NIGHTWATCH_DATABASE_URL", OsStr::new(url)),
        ("NIGHTWATCH_HOST", OsStr::new(host)),
    ]
}

/// One Claude Code PreToolUse call, distinct by `n`; its answer must be a decision.
fn hook_call(vars: &[(&str, &OsStr)], n: usize) {
    let call = serde_json::json!({
        "session_id": "sess_fleet",
        "cwd": "/srv/app",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": { "command": format!("ls /srv/app/releases/{n}") },
        "tool_use_id": format!("toolu_fleet_{n}"),
    });
    let out = nightwatch(&["hook", "claude"], call.to_string().as_bytes(), vars);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON answer");
    assert!(
        reply["hookSpecificOutput"]["permissionDecision"].is_string(),
        "{reply}"
    );
}

/// Runs `verify --fleet` until it exits 0 (every chain whole in the fleet) or `within` passes;
/// returns its last output and exit status.
fn verify_fleet_until_whole(vars: &[(&str, &OsStr)], within: Duration) -> (i32, String) {
    let deadline = Instant::now() + within;
    loop {
        let out = nightwatch(&["verify", "--fleet"], b"", vars);
        let code = out.status.code().unwrap_or(-1);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if code == 0 || Instant::now() > deadline {
            return (code, text);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn local_records(vars: &[(&str, &OsStr)]) -> usize {
    let out = nightwatch(&["export", "--format", "jsonl"], b"", vars);
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// Seed 000: the fleet's database goes away in the middle of the night. Every hook call on
/// the host is still decided and recorded there; the daemon says it cannot ship; once the
/// database is back, the fleet catches up with no gap and no duplicate, and `verify --fleet`
/// finds the host's chain whole.
#[test]
fn hook_calls_are_decided_with_the_fleet_database_down_and_reach_it_after() {
    let pg = Cluster::start("outage");
    let url = pg.url();
    let home = scratch("fleet", "outage");
    let vars = env(&home, &url, "web-1");
    let daemon = Daemon::start(
        &home,
        Some("queue: { resolve_delay: 10m }\n"),
        &[
            ("NIGHTWATCH_DATABASE_URL", url.as_str()),
            ("NIGHTWATCH_HOST", "web-1"),
        ],
    );
    for n in 0..20 {
        hook_call(&vars, n);
    }
    let (code, text) = verify_fleet_until_whole(&vars, Duration::from_secs(30));
    assert_eq!(code, 0, "the fleet caught up with the first calls: {text}");

    pg.down();
    let down = nightwatch(&["verify", "--fleet"], b"", &vars);
    assert!(
        !down.status.success(),
        "verify --fleet cannot pass with the fleet's database down"
    );
    for n in 20..60 {
        hook_call(&vars, n);
    }
    let recorded = local_records(&vars);
    assert!(
        recorded >= 60,
        "every call was recorded on the host ({recorded} records)"
    );
    // The daemon's shipping fails meanwhile, and says so.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !daemon.log().contains("cannot ship") {
        assert!(
            Instant::now() < deadline,
            "the daemon never said shipping failed:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    pg.up();
    let (code, text) = verify_fleet_until_whole(&vars, Duration::from_secs(60));
    assert_eq!(code, 0, "the fleet caught up after the outage: {text}");
    let recorded = local_records(&vars);
    let held = pg.query(
        "SELECT count(*) || ' ' || count(DISTINCT seq) || ' ' || max(seq) \
         FROM ledger_records WHERE host = 'web-1'",
    );
    let held: Vec<usize> = held
        .split(' ')
        .map(|n| n.parse().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(held[0], held[1], "no record held twice");
    assert_eq!(held[0], held[2], "no gap: seq 1 to {}", held[2]);
    assert!(
        held[0] >= recorded.min(held[2]) && held[0] >= 60,
        "the fleet holds the host's records ({held:?}, {recorded} here)"
    );
    assert!(
        daemon.log().contains("works again"),
        "the daemon said shipping recovered:\n{}",
        daemon.log()
    );
    let status = nightwatch(&["fleet", "status", "--json"], b"", &vars);
    assert!(status.status.success());
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["this_host"], "web-1");
    assert_eq!(status["hosts"][0]["host"], "web-1");
    drop(daemon);
}
