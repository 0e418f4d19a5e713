//! Nothing changes state silently: containers that flip, with and without a record in a real
//! ledger of someone acting on them.

mod support;

use nightwatch_ledger::{Entry, RecordActor, event};
use nightwatch_store::Ledger;
use nightwatch_store::memory::MemoryLedger;
use nightwatch_watch::state::StateSpec;
use nightwatch_watch::{NoContainers, Seen};
use serde_json::json;
use support::{AnsweringDatabases, NOW_MS, TestContainers, env, only};

const MINUTE_MS: i64 = 60_000;

fn spec(yaml: &str) -> StateSpec {
    yaml_serde::from_str(yaml).unwrap()
}

#[test]
fn a_database_that_flips_to_failed_with_no_record_is_found() {
    let ledger = MemoryLedger::new();
    let dbs = AnsweringDatabases::default();
    let containers = TestContainers::default();
    containers.set_state("db-7", "running");
    let watcher = spec("{ container: db-7 }");
    let seen = only(
        watcher.run(&env(NOW_MS, &ledger, &dbs, &containers)),
        Seen::Ok,
    );
    assert!(seen.summary.contains("first look"), "{}", seen.summary);
    only(
        watcher.run(&env(NOW_MS + MINUTE_MS, &ledger, &dbs, &containers)),
        Seen::Ok,
    );

    // Someone acted on another container; nobody on this one.
    let mut other = Entry::new(
        event::DECISION,
        NOW_MS + 90_000,
        RecordActor {
            kind: "agent".into(),
            id: "claude-code".into(),
        },
        "exec",
    );
    other.verdict = Some("allow".into());
    other.inputs = json!({ "command": "docker restart db-70" });
    ledger.append(other).unwrap();
    containers.set_state("db-7", "exited");
    let seen = only(
        watcher.run(&env(NOW_MS + 2 * MINUTE_MS, &ledger, &dbs, &containers)),
        Seen::Found,
    );
    assert_eq!(
        seen.summary,
        "container db-7 went running -> exited with no record of anyone acting on it"
    );
    assert_eq!(seen.details["from"], "running");
    assert_eq!(seen.details["to"], "exited");
    // The flip is told once: the next run compares against the new state.
    only(
        watcher.run(&env(NOW_MS + 3 * MINUTE_MS, &ledger, &dbs, &containers)),
        Seen::Ok,
    );
}

#[test]
fn a_flip_with_a_record_of_someone_acting_is_not_silent() {
    let ledger = MemoryLedger::new();
    let dbs = AnsweringDatabases::default();
    let containers = TestContainers::default();
    containers.set_state("web", "running");
    let watcher = spec("{ container: web }");
    // A clone is the same watcher: it shares what the last run saw.
    let same = watcher.clone();
    only(
        watcher.run(&env(NOW_MS, &ledger, &dbs, &containers)),
        Seen::Ok,
    );

    let mut stop = Entry::new(
        event::RESULT,
        NOW_MS + 30_000,
        RecordActor {
            kind: "janitor".into(),
            id: "janitor".into(),
        },
        "stop_container",
    );
    stop.inputs = json!({ "name": "web" });
    ledger.append(stop).unwrap();
    containers.set_state("web", "exited");
    let seen = only(
        same.run(&env(NOW_MS + MINUTE_MS, &ledger, &dbs, &containers)),
        Seen::Ok,
    );
    assert_eq!(
        seen.summary,
        "container web went running -> exited; r1 (janitor:janitor) acted on it: stop_container web"
    );

    // A record from before the last look (less its slack) does not explain a later flip.
    only(
        watcher.run(&env(NOW_MS + 5 * MINUTE_MS, &ledger, &dbs, &containers)),
        Seen::Ok,
    );
    containers.set_state("web", "running");
    let seen = only(
        watcher.run(&env(NOW_MS + 10 * MINUTE_MS, &ledger, &dbs, &containers)),
        Seen::Found,
    );
    assert!(
        seen.summary.contains("exited -> running"),
        "{}",
        seen.summary
    );
}

#[test]
fn a_container_that_disappears_flips_to_absent_and_an_engine_that_cannot_tell_is_unknown() {
    let ledger = MemoryLedger::new();
    let dbs = AnsweringDatabases::default();
    let containers = TestContainers::default();
    containers.set_state("cache", "running");
    let watcher = spec("{ container: cache }");
    only(
        watcher.run(&env(NOW_MS, &ledger, &dbs, &containers)),
        Seen::Ok,
    );
    containers.by_name.lock().unwrap().clear();
    let seen = only(
        watcher.run(&env(NOW_MS + MINUTE_MS, &ledger, &dbs, &containers)),
        Seen::Found,
    );
    assert!(
        seen.summary.contains("running -> absent"),
        "{}",
        seen.summary
    );
    only(
        watcher.run(&env(NOW_MS + 2 * MINUTE_MS, &ledger, &dbs, &NoContainers)),
        Seen::Unknown,
    );
}

#[test]
fn a_unit_is_looked_at_through_systemctl_and_an_unusable_one_is_unknown() {
    let ledger = MemoryLedger::new();
    let dbs = AnsweringDatabases::default();
    let watcher = spec("{ unit: app.service }");
    let observations = watcher.run(&env(NOW_MS, &ledger, &dbs, &NoContainers));
    assert_eq!(observations.len(), 1);
    let o = &observations[0];
    assert_eq!(o.subject, "app.service");
    // Booted with systemd, the first look notes the state; otherwise systemctl says why not.
    if std::path::Path::new("/run/systemd/system").is_dir() {
        assert_eq!(o.seen, Seen::Ok, "{o:#?}");
    } else {
        assert_eq!(o.seen, Seen::Unknown, "{o:#?}");
        assert!(o.summary.contains("systemctl"), "{}", o.summary);
    }
}
