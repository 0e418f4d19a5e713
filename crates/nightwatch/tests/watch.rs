//! The watchers, scheduled jobs and heartbeat of `nightwatch serve`, through the real binary:
//! seed 000's and 001's nights replayed.

mod common;

use std::path::Path;
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

fn wait_until(secs: u64, what: &str, done: impl Fn() -> bool) {
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
fn a_scheduled_job_runs_once_per_slot_across_a_restart() {
    let dir = scratch("watch", "job-restart");
    let home = dir.join("home");
    let runs = dir.join("runs.jsonl");
    // The runbook keeps the alert it was given: its slot says which run it was.
    let runbook = script(
        &dir,
        "tick.sh",
        &format!(
            "tr -d '\\n' >> {runs}; echo >> {runs}",
            runs = runs.display()
        ),
    );
    let config =
        format!("watch:\n  jobs:\n    tick:\n      every: 1h\n      run: [\"{runbook}\"]\n");
    let daemon = Daemon::start(&home, Some(&config), &[]);
    // This hour's slot had not run: it runs when the daemon starts.
    wait_until(20, "the job's first run", || slots_run(&runs).len() == 1);
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");

    // Restarted within the hour: the slot is in the inbox already, so it does not run again.
    let daemon = Daemon::start(&home, Some(&config), &[]);
    wait_until(10, "the restarted daemon to look at its slot", || {
        daemon.log().contains("fired already")
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(slots_run(&runs).len(), 1, "{}", daemon.log());
    // The one run went through the queue and the gate: a decision and a dispatch record.
    let runbooks = records(&daemon, "event=decision&tool=runbook");
    assert_eq!(runbooks.len(), 1, "{runbooks:#?}");
    assert_eq!(runbooks[0]["verdict"], "allow");
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
}

#[test]
fn a_short_period_job_never_runs_a_slot_twice_across_a_crash() {
    let dir = scratch("watch", "job-crash");
    let home = dir.join("home");
    let runs = dir.join("runs.jsonl");
    let runbook = script(
        &dir,
        "tick.sh",
        &format!(
            "tr -d '\\n' >> {runs}; echo >> {runs}",
            runs = runs.display()
        ),
    );
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
    // The push token in the URL's path and query is never written to the ledger.
    let text = serde_json::to_string(&watch).unwrap();
    assert!(!text.contains("status=up"), "{text}");
    daemon.stop();
}
