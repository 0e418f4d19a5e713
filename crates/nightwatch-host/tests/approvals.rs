//! Approve and reject in process, with the in-memory ledger: an approved ask lets the same
//! call through the engine once; a rejection voids the approval.

use nightwatch_core::{Action, Actor, ActorKind, Tool, Verdict};
use nightwatch_gate::{Clock, Engine, LiveGuards, NoEscalator, Proposal, Ruling};
use nightwatch_host::approvals;
use nightwatch_ledger::event;
use nightwatch_policy::Policy;
use nightwatch_store::memory::MemoryLedger;
use serde_json::json;

struct Stopped(i64);

impl Clock for Stopped {
    fn now_ms(&self) -> i64 {
        self.0
    }
    fn zone(&self) -> &jiff::tz::TimeZone {
        const { &jiff::tz::TimeZone::UTC }
    }
}

/// 2026-02-14, mid-afternoon UTC.
const NOW: i64 = 1_771_080_000_000;

const POLICY: &str = r#"
version: 1
default: allow
rules:
  - id: restarts-are-asked
    verdict: ask
    command: ["systemctl restart *"]
"#;

fn restart(engine: &Engine<'_>, policy: &Policy, call: &str) -> Ruling {
    let action = Action::new(
        Actor::new(ActorKind::Agent, "claude"),
        Tool::Exec {
            line: "systemctl restart worker".to_owned(),
        },
    );
    engine
        .propose(
            policy,
            Proposal {
                action,
                call_id: Some(call.to_owned()),
                inputs: json!({ "command": "systemctl restart worker" }),
                cwd: None,
            },
        )
        .unwrap()
}

fn dana() -> Actor {
    Actor::new(ActorKind::Human, "dana")
}

#[test]
fn an_approved_ask_lets_the_same_call_through_once() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = MemoryLedger::new();
    let guards = LiveGuards::new(dir.path());
    let clock = Stopped(NOW);
    let engine = Engine::new(&ledger, &guards, &clock, &NoEscalator, None);
    let policy = Policy::compile(POLICY, nightwatch_shell::analyse).unwrap();

    let asked = restart(&engine, &policy, "call-1");
    assert_eq!(asked.decision.verdict, Verdict::Ask);
    let asked = approvals::asked(&ledger, &asked.record.id).unwrap();
    let approval =
        approvals::approve(&engine, asked, dana(), 3600 * 1000, "planned".to_owned()).unwrap();
    assert_eq!(approval.event, event::APPROVAL);

    let again = restart(&engine, &policy, "call-2");
    assert_eq!(
        again.decision.verdict,
        Verdict::Allow,
        "{:?}",
        again.decision
    );
    let third = restart(&engine, &policy, "call-3");
    assert_eq!(
        third.decision.verdict,
        Verdict::Ask,
        "an approval is good once"
    );
}

#[test]
fn a_rejection_voids_the_approval() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = MemoryLedger::new();
    let guards = LiveGuards::new(dir.path());
    let clock = Stopped(NOW);
    let engine = Engine::new(&ledger, &guards, &clock, &NoEscalator, None);
    let policy = Policy::compile(POLICY, nightwatch_shell::analyse).unwrap();

    let ruling = restart(&engine, &policy, "call-1");
    let asked = approvals::asked(&ledger, &ruling.record.id).unwrap();
    approvals::approve(&engine, asked.clone(), dana(), 3600 * 1000, String::new()).unwrap();
    let rejection = approvals::reject(&engine, asked, dana(), "not tonight".to_owned()).unwrap();
    assert_eq!(rejection.event, event::REJECTION);

    let again = restart(&engine, &policy, "call-2");
    assert_ne!(
        again.decision.verdict,
        Verdict::Allow,
        "{:?}",
        again.decision
    );
}

#[test]
fn only_an_ask_can_be_approved() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = MemoryLedger::new();
    let guards = LiveGuards::new(dir.path());
    let clock = Stopped(NOW);
    let engine = Engine::new(&ledger, &guards, &clock, &NoEscalator, None);
    let policy = Policy::compile(POLICY, nightwatch_shell::analyse).unwrap();
    let action = Action::exec("ls");
    let allowed = engine
        .propose(
            &policy,
            Proposal {
                action,
                call_id: None,
                inputs: json!({ "command": "ls" }),
                cwd: None,
            },
        )
        .unwrap();
    let refused = approvals::asked(&ledger, &allowed.record.id).unwrap_err();
    assert!(refused.to_string().contains("was not asked"), "{refused}");
}
