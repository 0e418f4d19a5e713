//! Escalation in process: a halt's notifiers are told (a real program, reading the escalation
//! on stdin) and every delivery is recorded through the engine with its attempts, typed; a
//! notifier the policy no longer declares is a recorded failure, never a silent skip.

use nightwatch_core::{Action, Actor, ActorKind, Tool};
use nightwatch_gate::{Clock, Engine, LiveGuards, NoEscalator, Proposal};
use nightwatch_host::Origin;
use nightwatch_host::escalation::escalate;
use nightwatch_ledger::schema::{AttemptOutcome, Readable};
use nightwatch_ledger::{Filter, Safeguards, event};
use nightwatch_policy::Policy;
use nightwatch_store::LedgerReader;
use nightwatch_store::memory::MemoryLedger;
use serde_json::json;

struct Stopped;

impl Clock for Stopped {
    fn now_ms(&self) -> i64 {
        1_771_080_000_000
    }
    fn zone(&self) -> &jiff::tz::TimeZone {
        const { &jiff::tz::TimeZone::UTC }
    }
}

/// A policy that halts restarts and tells `notify`, declaring the pager (a program that keeps
/// what it is told in `told`) and, when `with_gone`, a second notifier.
fn policy(told: &std::path::Path, notify: &str, with_gone: bool) -> Policy {
    let gone = if with_gone {
        "  gone:\n    command: { argv: [\"true\"] }\n"
    } else {
        ""
    };
    let yaml = format!(
        r#"
notifiers:
  pager:
    command: {{ argv: ["sh", "-c", "cat > {told}"] }}
{gone}rules:
  - id: restarts-halt
    verdict: halt
    command: ["systemctl restart *"]
    notify: [{notify}]
"#,
        told = told.display()
    );
    Policy::compile(&yaml, nightwatch_shell::analyse).unwrap()
}

#[test]
fn a_halt_is_delivered_and_every_delivery_recorded_typed() {
    let dir = tempfile::tempdir().unwrap();
    let told = dir.path().join("told.json");
    let ledger = MemoryLedger::new();
    let guards = LiveGuards::new(dir.path());
    let engine = Engine::new(&ledger, &guards, &Stopped, &NoEscalator, None);
    // The policy at the time of the halt named two notifiers; the one in force now declares
    // only the pager.
    let at_the_time = policy(&told, "pager, gone", true);
    let halted = engine
        .propose(
            &at_the_time,
            Proposal {
                action: Action::new(
                    Actor::new(ActorKind::Agent, "claude"),
                    Tool::Exec {
                        line: "systemctl restart worker".to_owned(),
                    },
                ),
                call_id: Some("c1".to_owned()),
                inputs: json!({ "command": "systemctl restart worker" }),
                cwd: None,
            },
        )
        .unwrap();
    let now = policy(&told, "pager", false);
    let no_wait = |_: std::time::Duration| {};
    let sent = escalate(
        &engine,
        &halted.record,
        &now,
        &Origin::Builtin,
        &|_: &str| None,
        &no_wait,
    )
    .unwrap();
    let outcomes: Vec<(&str, bool)> = sent
        .iter()
        .map(|s| (s.notifier.as_str(), s.delivered))
        .collect();
    assert_eq!(outcomes, [("pager", true), ("gone", false)]);
    let escalation: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&told).unwrap()).unwrap();
    assert_eq!(escalation["verdict"], "halt");
    assert_eq!(escalation["what"], "exec: systemctl restart worker");

    let notifications = ledger
        .query(&Filter {
            event: Some(event::NOTIFICATION.to_owned()),
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(notifications.len(), 2);
    let gone = Safeguards::of(notifications[1].safeguards.as_ref());
    let delivery = gone.delivery.as_ref().and_then(Readable::read).unwrap();
    assert!(!delivery.delivered);
    match &delivery.attempts[0].outcome {
        AttemptOutcome::Failed { reason, retryable } => {
            assert!(reason.contains("declares no notifier \"gone\""), "{reason}");
            assert!(!retryable);
        }
        other => panic!("{other:?}"),
    }
}
