//! The rate check through the engine and the ledger's history: seed 000's backup job that fired
//! 46 times a day where once was right is let through once and halted after, whatever it
//! names as its target, and other robots and tools are not held back by it.

use nightwatch_core::{Action, Actor, ActorKind, Tool, Verdict};
use nightwatch_gate::{Clock, Engine, Escalator, LiveGuards, Proposal};
use nightwatch_ledger::{Filter, event};
use nightwatch_policy::Policy;
use nightwatch_store::LedgerReader;
use nightwatch_store::memory::MemoryLedger;
use serde_json::json;
use std::sync::Mutex;

/// 03:30 UTC on 2026-02-14.
const NIGHT: i64 = 1_771_039_800_000;
const HOUR: i64 = 3_600_000;

/// A clock the test moves.
struct Moving(Mutex<i64>);

impl Clock for Moving {
    fn now_ms(&self) -> i64 {
        *self.0.lock().unwrap()
    }
    fn zone(&self) -> &jiff::tz::TimeZone {
        const { &jiff::tz::TimeZone::UTC }
    }
}

#[derive(Default)]
struct Told(Mutex<Vec<String>>);

impl Escalator for Told {
    fn escalate(&self, record_id: &str) {
        self.0.lock().unwrap().push(record_id.to_owned());
    }
}

const POLICY: &str = r#"
version: 1
default: allow
notifiers:
  pager: { command: { argv: ["true"] } }
escalate: { halt: [pager] }
checks:
  once-a-day:
    rate: { max: 1, within: 1d }
    on_match: halt
    message: backup-job already backed up today
rules:
  - id: one-backup-a-day
    verdict: allow
    actor: { kind: [robot] }
    tool: backup
    checks: [once-a-day]
"#;

fn action(robot: &str, tool: &str) -> Action {
    Action::new(
        Actor::new(ActorKind::Robot, robot),
        Tool::Named {
            name: tool.to_owned(),
        },
    )
}

#[test]
fn the_second_backup_of_the_day_is_halted() {
    let policy = Policy::from_yaml(POLICY, nightwatch_shell::analyse).expect("policy");
    let ledger = MemoryLedger::new();
    let guards = LiveGuards::new(&std::env::temp_dir().join("nightwatch-gate-rate-unused"));
    let clock = Moving(Mutex::new(NIGHT));
    let told = Told::default();
    let engine = Engine::new(&ledger, &guards, &clock, &told, Some("db-1".into()));
    let propose = |robot: &str, tool: &str, n: usize| {
        engine
            .propose(
                &policy,
                Proposal {
                    action: action(robot, tool),
                    call_id: None,
                    // A different target and details each time: counted all the same.
                    inputs: json!({ "target": format!("db{n}"), "details": { "n": n } }),
                    cwd: None,
                },
            )
            .expect("recorded")
    };
    let mut verdicts = Vec::new();
    for n in 0..46 {
        *clock.0.lock().unwrap() = NIGHT + n as i64 * 20 * 60_000;
        verdicts.push(propose("backup-job", "backup", n).decision.verdict);
    }
    assert_eq!(verdicts[0], Verdict::Allow);
    assert!(
        verdicts[1..].iter().all(|v| *v == Verdict::Halt),
        "{verdicts:?}"
    );
    let halted = ledger
        .query(&Filter {
            verdict: Some("halt".into()),
            event: Some(event::DECISION.into()),
            ..Filter::default()
        })
        .expect("query");
    assert_eq!(halted.len(), 45);
    assert!(
        halted[0]
            .reasons
            .iter()
            .any(|r| r.contains("already backed up today")),
        "{:?}",
        halted[0].reasons
    );
    // Every halt goes to the notifiers.
    assert_eq!(told.0.lock().unwrap().len(), 45);

    // Another robot, and another tool of the same robot, are not held back by it.
    assert_eq!(
        propose("retrier", "backup", 99).decision.verdict,
        Verdict::Allow
    );
    assert_eq!(
        propose("backup-job", "prune", 99).decision.verdict,
        Verdict::Allow
    );

    // A day after the one allowed backup, the next is allowed again (halts do not count).
    *clock.0.lock().unwrap() = NIGHT + 24 * HOUR + 60_000;
    assert_eq!(
        propose("backup-job", "backup", 100).decision.verdict,
        Verdict::Allow
    );
    assert_eq!(
        propose("backup-job", "backup", 101).decision.verdict,
        Verdict::Halt
    );
}
