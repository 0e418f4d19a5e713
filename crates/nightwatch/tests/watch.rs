//! The watchers, scheduled jobs and heartbeat of `nightwatch serve`, through the real binary:
//! seed 000's and 001's nights replayed.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::daemon::Daemon;
use common::{Receiver, scratch};
use serde_json::Value;

fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// The slots a job's runbook was run for, in order, from the alerts it read on stdin.
fn slots_run(runs: &Path) -> Vec<String> {
    std::fs::read_to_string(runs)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let alert: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            alert["labels"]["slot"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// A test of a job `tick`, in a directory of its own: the daemon's data directory, the file the
/// job's runs append to, and the job's runbook, which appends each alert it reads on stdin
/// there as one line.
fn tick_job(name: &str) -> (PathBuf, PathBuf, String) {
    let dir = scratch("watch", name);
    let runs = dir.join("runs.jsonl");
    let runbook = script(
        &dir,
        "tick.sh",
        &format!(
            "tr -d '\\n' >> {runs}; echo >> {runs}",
            runs = runs.display()
        ),
    );
    (dir.join("home"), runs, runbook)
}

fn wait_until(secs: u64, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn records(daemon: &Daemon, query: &str) -> Vec<Value> {
    daemon.json(&format!("/api/records?{query}"))["records"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_new_job_waits_for_its_first_slot_even_across_a_restart() {
    let (home, runs, runbook) = tick_job("job-new");
    let config =
        format!("watch:\n  jobs:\n    tick:\n      every: 1h\n      run: [\"{runbook}\"]\n");
    let daemon = Daemon::start(&home, Some(&config), &[]);
    // This hour's slot passed before the job was declared: it does not run on start.
    wait_until(10, "the job to say it waits", || {
        daemon.log().contains("waits for its first slot")
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(slots_run(&runs).is_empty(), "{}", daemon.log());
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
    let daemon = Daemon::start(&home, Some(&config), &[]);
    wait_until(10, "the restarted job to say it waits", || {
        daemon.log().contains("waits for its first slot")
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(slots_run(&runs).is_empty(), "{}", daemon.log());
    assert!(records(&daemon, "event=decision&tool=runbook").is_empty());
    daemon.stop();
}

#[test]
fn a_slot_missed_while_the_daemon_was_down_runs_once_when_it_starts() {
    let (home, runs, runbook) = tick_job("job-missed");
    let config =
        format!("watch:\n  jobs:\n    tick:\n      every: 3s\n      run: [\"{runbook}\"]\n");
    let daemon = Daemon::start(&home, Some(&config), &[]);
    wait_until(20, "two slots", || slots_run(&runs).len() >= 2);
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
    let before = slots_run(&runs);
    // Down for more than two periods: at least two slots come and go.
    std::thread::sleep(Duration::from_secs(7));
    let daemon = Daemon::start(&home, Some(&config), &[]);
    // The jobs look at their slots before the daemon says it listens.
    let restarted_at = jiff::Timestamp::now();
    wait_until(20, "a run after the restart", || {
        slots_run(&runs).len() > before.len()
    });
    daemon.stop();
    let slots = slots_run(&runs);
    let caught_up: jiff::Timestamp = slots[before.len()].parse().unwrap();
    // The first run after the restart is a slot that came while it was down...
    assert!(caught_up < restarted_at, "{slots:#?}");
    let last_before: jiff::Timestamp = before.last().unwrap().parse().unwrap();
    assert!(caught_up > last_before, "{slots:#?}");
    // ... the latest of them only, once (not once per missed slot) ...
    let while_down = slots
        .iter()
        .map(|s| s.parse::<jiff::Timestamp>().unwrap())
        .filter(|t| *t > last_before && *t < restarted_at)
        .count();
    assert_eq!(while_down, 1, "{slots:#?}");
    // ... and no slot ran twice.
    let mut distinct = slots.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), slots.len(), "a slot ran twice: {slots:#?}");
}

#[test]
fn a_short_period_job_never_runs_a_slot_twice_across_a_crash() {
    let (home, runs, runbook) = tick_job("job-crash");
    let config = format!(
        "queue: {{ workers: 2 }}\nwatch:\n  jobs:\n    tick:\n      cron: \"*/2 * * * * *\"\n      run: [\"{runbook}\"]\n"
    );
    let daemon = Daemon::start(&home, Some(&config), &[]);
    wait_until(20, "three slots", || slots_run(&runs).len() >= 3);
    daemon.crash();
    let before = slots_run(&runs).len();
    let daemon = Daemon::start(&home, Some(&config), &[]);
    wait_until(20, "three more slots after the crash", || {
        slots_run(&runs).len() >= before + 3
    });
    daemon.stop();
    let slots = slots_run(&runs);
    let mut distinct = slots.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), slots.len(), "a slot ran twice: {slots:#?}");
}

#[test]
fn the_heartbeat_stops_while_the_ledger_cannot_be_written_and_resumes() {
    let dir = scratch("watch", "heartbeat");
    let home = dir.join("home");
    let monitor = Receiver::start(&[200]);
    let config = format!(
        "watch:\n  heartbeat:\n    url: \"{}?status=up&msg=OK\"\n    every: 1s\n",
        monitor.url
    );
    let daemon = Daemon::start(&home, Some(&config), &[]);
    let healthy = monitor.wait_for(3, Duration::from_secs(20)).len();
    assert!(
        healthy >= 3,
        "pushes while healthy: {healthy}\n{}",
        daemon.log()
    );

    // Another process holds the ledger's write lock: nightwatch is not healthy.
    let holder = rusqlite::Connection::open(home.join("ledger.db")).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    // A beat already past its record may still be sent; then none.
    std::thread::sleep(Duration::from_secs(2));
    let at_lock = monitor.wait_for(0, Duration::ZERO).len();
    std::thread::sleep(Duration::from_secs(15));
    let while_locked = monitor.wait_for(0, Duration::ZERO).len();
    assert_eq!(
        while_locked,
        at_lock,
        "pushes went on while the ledger could not be written\n{}",
        daemon.log()
    );
    assert!(
        daemon.log().contains("heartbeat withheld"),
        "{}",
        daemon.log()
    );

    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);
    let resumed = monitor
        .wait_for(while_locked + 2, Duration::from_secs(30))
        .len();
    assert!(resumed >= while_locked + 2, "{}", daemon.log());
    // The ledger tells the story: beats, then the resumption naming why it was withheld.
    let watch = records(&daemon, "event=watch");
    assert!(
        watch.iter().any(|r| r["reasons"][0]
            .as_str()
            .is_some_and(|s| s.contains("resumed") && s.contains("ledger cannot be written"))),
        "{watch:#?}"
    );
    // Sent and withheld beats are counted for Prometheus too.
    let metrics = daemon.get("/metrics").text();
    for outcome in ["sent", "withheld"] {
        assert!(
            metrics.contains(&format!(
                "nightwatch_heartbeats_total{{outcome=\"{outcome}\"}}"
            )),
            "{metrics}"
        );
    }
    // The push token in the URL's path and query is never written to the ledger.
    let text = serde_json::to_string(&watch).unwrap();
    assert!(!text.contains("status=up"), "{text}");
    daemon.stop();
}

/// The subject of `watcher` as `/api/watch` shows it, once `done` holds for it.
fn wait_subject(
    daemon: &Daemon,
    watcher: &str,
    secs: u64,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let v = daemon.wait_for("/api/watch", secs, what, |v| {
        v["subjects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["watcher"] == watcher && done(s))
    });
    v["subjects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["watcher"] == watcher && done(s))
        .unwrap()
        .clone()
}

#[test]
fn a_config_knob_an_agent_removed_is_drift_naming_the_agent_and_reaches_a_runbook() {
    let dir = scratch("watch", "drift");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let config_file = dir.join("app.ini");
    std::fs::write(&config_file, "[server]\nmax_connections = 512\nport = 80\n").unwrap();
    // The operator lets agents edit the app's config; nightwatch still keeps it as declared.
    std::fs::write(
        home.join("policy.yaml"),
        "extends: builtin\nrules:\n  - id: app-config-edits\n    verdict: allow\n    tool: write\n    writes: [\"**/app.ini\"]\n",
    )
    .unwrap();
    let pages = dir.join("pages.jsonl");
    let runbook = script(
        &dir,
        "page.sh",
        &format!("tr -d '\\n' >> {p}; echo >> {p}", p = pages.display()),
    );
    let config = format!(
        "watch:\n  watchers:\n    app-config:\n      every: 1h\n      drift: {{ file: \"{file}\", key: server.max_connections, equals: \"512\" }}\nroutes:\n  - id: drift-page\n    when: {{ source: watch, labels: {{ kind: drift }} }}\n    run: [\"{runbook}\"]\n",
        file = config_file.display()
    );
    let daemon = Daemon::start(&home, Some(&config), &[]);
    wait_subject(&daemon, "app-config", 20, "the knob as declared", |s| {
        s["seen"] == "ok"
    });

    // Claude Code writes the file without the knob, through its hook, as an agent would.
    let mut call: Value =
        serde_json::from_slice(&common::daemon::payload("claude/pre-write.json")).unwrap();
    call["cwd"] = dir.display().to_string().into();
    call["tool_input"] = serde_json::json!({
        "file_path": config_file.display().to_string(),
        "content": "[server]\nport = 80\n",
    });
    let decided = common::nightwatch(
        &["hook", "claude"],
        call.to_string().as_bytes(),
        &[("NIGHTWATCH_HOME", home.as_os_str())],
    );
    let reply = String::from_utf8_lossy(&decided.stdout);
    assert!(reply.contains("\"allow\""), "{reply}");
    std::fs::write(&config_file, "[server]\nport = 80\n").unwrap();

    // Not an hour later: the change itself makes the watcher look (inotify).
    let found = wait_subject(&daemon, "app-config", 20, "the drift", |s| {
        s["seen"] == "found"
    });
    let summary = found["summary"].as_str().unwrap();
    assert!(summary.contains("max_connections is missing"), "{summary}");
    assert!(
        summary.contains("last touched by agent:claude-code"),
        "{summary}"
    );

    // The finding is an alert like any other: its route's runbook ran with it.
    wait_until(20, "the drift's runbook", || {
        std::fs::read_to_string(&pages).is_ok_and(|p| p.contains("max_connections is missing"))
    });
    let watch = records(&daemon, "event=watch");
    assert!(
        watch.iter().any(|r| r["inputs"]["seen"] == "found"
            && r["inputs"]["touched_by"]["actor"] == "agent:claude-code"),
        "{watch:#?}"
    );

    // Put back, it clears: the record says so and the alert resolves.
    std::fs::write(&config_file, "[server]\nmax_connections = 512\nport = 80\n").unwrap();
    wait_subject(&daemon, "app-config", 20, "the knob restored", |s| {
        s["seen"] == "ok"
    });
    let resolved = records(&daemon, "event=dispatch");
    assert!(
        resolved.iter().any(|r| r["inputs"]["status"] == "resolved"),
        "{resolved:#?}"
    );
    daemon.stop();
}

#[test]
fn backups_that_exist_but_stopped_being_refreshed_are_stale_while_an_existence_check_passes() {
    let dir = scratch("watch", "fresh");
    let home = dir.join("home");
    let backups = dir.join("backups");
    std::fs::create_dir_all(&backups).unwrap();
    let three_days_ago = std::time::SystemTime::now() - Duration::from_secs(3 * 86_400);
    for day in 0..14 {
        let dump = backups.join(format!("db-{day:02}.dump"));
        std::fs::write(&dump, vec![b'x'; 4096]).unwrap();
        let file = std::fs::File::options().write(true).open(&dump).unwrap();
        file.set_modified(three_days_ago - Duration::from_secs(day * 86_400))
            .unwrap();
    }
    let glob = format!("{}/*.dump", backups.display());
    let config = format!(
        "watch:\n  watchers:\n    backups-exist:\n      every: 1s\n      command: {{ argv: [sh, -c, \"ls {glob}\"] }}\n    backups-fresh:\n      every: 1s\n      fresh: {{ glob: \"{glob}\", younger_than: 26h, larger_than: 1KiB }}\n"
    );
    let daemon = Daemon::start(&home, Some(&config), &[]);
    let exist = wait_subject(&daemon, "backups-exist", 20, "the existence check", |s| {
        s["seen"] != Value::Null
    });
    assert_eq!(exist["seen"], "ok", "{exist:#}");
    let stale = wait_subject(&daemon, "backups-fresh", 20, "the freshness check", |s| {
        s["seen"] != Value::Null
    });
    assert_eq!(stale["seen"], "found", "{stale:#}");
    let summary = stale["summary"].as_str().unwrap();
    assert!(summary.contains("14"), "{summary}");

    // Found, it is an alert (no route takes it: recorded as such) and a record.
    let dispatch = records(&daemon, "event=dispatch");
    assert!(
        dispatch.iter().any(|r| r["reasons"][0]
            .as_str()
            .is_some_and(|s| s.contains("no matching route"))
            && r["inputs"]["title"]
                .as_str()
                .is_some_and(|t| t.starts_with("backups-fresh"))),
        "{dispatch:#?}"
    );

    let metrics = daemon.get("/metrics").text();
    assert!(
        metrics.contains("nightwatch_watch_runs_total{watcher=\"backups-fresh\"}"),
        "{metrics}"
    );
    // A restart takes up what the ledger last said: the same finding is neither recorded nor
    // raised again.
    let found_records = |daemon: &Daemon| {
        records(daemon, "event=watch")
            .into_iter()
            .filter(|r| r["inputs"]["watcher"] == "backups-fresh" && r["inputs"]["seen"] == "found")
            .count()
    };
    let raised = |daemon: &Daemon| {
        records(daemon, "event=dispatch")
            .into_iter()
            .filter(|r| {
                r["inputs"]["title"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("backups-fresh"))
            })
            .count()
    };
    let (found_before, raised_before) = (found_records(&daemon), raised(&daemon));
    assert_eq!((found_before, raised_before), (1, 1));
    daemon.stop();
    let daemon = Daemon::start(&home, Some(&config), &[]);
    let restored = wait_subject(&daemon, "backups-fresh", 20, "the finding taken up", |s| {
        s["seen"] == "found"
    });
    assert_eq!(restored["since_ms"], stale["since_ms"], "{restored:#}");
    wait_until(20, "two runs after the restart", || {
        daemon
            .get("/metrics")
            .text()
            .contains("nightwatch_watch_runs_total{watcher=\"backups-fresh\"} 2")
    });
    assert_eq!(
        found_records(&daemon),
        1,
        "recorded again after the restart"
    );
    assert_eq!(raised(&daemon), 1, "raised again after the restart");

    // Tonight's backup lands: fresh again.
    std::fs::write(backups.join("db-new.dump"), vec![b'x'; 4096]).unwrap();
    wait_subject(&daemon, "backups-fresh", 20, "fresh again", |s| {
        s["seen"] == "ok"
    });
    daemon.stop();
}

#[test]
fn a_backup_job_reporting_46_backups_a_day_is_halted_by_the_breaker_and_reported() {
    let dir = scratch("watch", "robots");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("policy.yaml"),
        "extends: builtin
checks:
  once-a-day:
    rate: { max: 1, within: 1d }
    on_match: halt
    message: backup-job already backed up today
rules:
  - id: one-backup-a-day
    verdict: allow
    actor: { kind: [robot], id: [backup-job] }
    tool: backup
    checks: [once-a-day]
",
    )
    .unwrap();
    let config = "robots: {}
watch:
  watchers:
    robots:
      every: 1s
      baselines:
        expect: { backup-job: 1/day }
";
    let daemon = Daemon::start(&home, Some(config), &[]);
    let mut verdicts = Vec::new();
    for n in 0..46 {
        let body = format!(r#"{{"action":"backup","target":"db1","details":{{"run":{n}}}}}"#);
        let reply = daemon.post(
            "/api/robots/backup-job/actions",
            "application/json",
            body.as_bytes(),
        );
        assert_eq!(reply.status, 200, "{}", reply.text());
        verdicts.push(reply.json()["verdict"].as_str().unwrap().to_owned());
    }
    assert_eq!(verdicts[0], "allow");
    assert!(verdicts[1..].iter().all(|v| v == "halt"), "{verdicts:?}");
    let halts = records(&daemon, "event=decision&actor=backup-job&verdict=halt");
    assert_eq!(halts.len(), 45);

    // The baselines watcher reads the same ledger: 46 where 1 a day is right.
    let found = wait_subject(&daemon, "robots", 20, "the storm reported", |s| {
        s["seen"] == "found"
    });
    let summary = found["summary"].as_str().unwrap();
    assert!(summary.contains("46"), "{summary}");
    assert!(summary.contains("1/day"), "{summary}");
    let dispatch = records(&daemon, "event=dispatch");
    assert!(
        dispatch.iter().any(|r| r["inputs"]["title"]
            .as_str()
            .is_some_and(|t| t.starts_with("robots:"))),
        "{dispatch:#?}"
    );
    daemon.stop();
}

/// "nightwatch itself must be watched": a watcher that cannot get its run done on time (here,
/// sixteen slow test restores, each cut off at its 5 s timeout, queued on the daemon's four
/// watcher threads) is itself a finding: shown as late by `/api/watch`, recorded, and raised as
/// an alert into the routes like any other.
#[test]
fn a_watcher_that_cannot_run_on_time_is_reported_late_and_raised() {
    let dir = scratch("watch", "late");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let restore = script(&dir, "slow-restore.sh", "sleep 60");
    let mut config = String::from("watch:\n  watchers:\n");
    for n in 0..16 {
        config.push_str(&format!(
            "    restore-{n}:\n      every: 1s\n      timeout: 5s\n      command: {{ argv: [\"{restore}\"] }}\n"
        ));
    }
    let daemon = Daemon::start(&home, Some(&config), &[]);

    let mut late = Vec::new();
    wait_until(60, "a watcher shown late", || {
        late = daemon.json("/api/watch")["late"]
            .as_array()
            .unwrap()
            .clone();
        !late.is_empty()
    });
    assert!(
        late.iter().all(|l| l["watcher"]
            .as_str()
            .is_some_and(|w| w.starts_with("restore-"))
            && l["late_ms"].as_i64().is_some_and(|ms| ms > 0)),
        "{late:?}"
    );

    // On the record, naming what is late and why, and raised into the dispatcher.
    wait_until(30, "the lateness recorded and raised", || {
        let said_late = records(&daemon, "event=watch&limit=5000").iter().any(|r| {
            r["reasons"][0]
                .as_str()
                .is_some_and(|s| s.contains("is late"))
        });
        let raised = records(&daemon, "event=dispatch&limit=5000")
            .iter()
            .any(|r| {
                r["inputs"]["title"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("restore-") && t.contains("is late"))
            });
        said_late && raised
    });
    daemon.stop();
}
