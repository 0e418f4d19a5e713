//! The engine in process, table-driven over actors: every kind of actor gets the same steps
//! (context completed, tier placed from the ledger, the verdict recorded, a halt or an ask
//! escalated), with made-up guards and the in-memory ledger.

use nightwatch_backup::{Limits, Observation, Snapshot};
use nightwatch_checks::{CheckSpec, Finding, History};
use nightwatch_core::{Action, Actor, ActorKind, Tool, Verdict};
use nightwatch_gate::{CheckSubject, Clock, Engine, Escalator, Event, Guards, Proposal};
use nightwatch_ledger::schema::Placement;
use nightwatch_ledger::{Filter, Safeguards, event};
use nightwatch_policy::Policy;
use nightwatch_store::LedgerReader;
use nightwatch_store::memory::MemoryLedger;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Mutex;

/// 03:30 UTC on 2026-02-14.
const NIGHT: i64 = 1_771_039_800_000;

struct Stopped(i64);

impl Clock for Stopped {
    fn now_ms(&self) -> i64 {
        self.0
    }
    fn zone(&self) -> &jiff::tz::TimeZone {
        const { &jiff::tz::TimeZone::UTC }
    }
}

/// Guards that find nothing and back nothing up.
struct Inert;

impl Guards for Inert {
    fn run_checks(
        &self,
        _: &[(&str, &CheckSpec)],
        _: &CheckSubject<'_>,
        _: &dyn History,
    ) -> Vec<Finding> {
        Vec::new()
    }
    fn back_up(&self, _: &[PathBuf], _: &Limits, _: i64) -> Result<Snapshot, String> {
        Err("no backups here".into())
    }
    fn observe(&self, _: &[PathBuf], _: &Limits) -> Observation {
        Observation::default()
    }
}

/// Remembers which records it was asked to escalate.
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
trust: { tiers: [observe, trusted], default: observe }
notifiers:
  pager: { command: { argv: ["true"] } }
escalate: { halt: [pager] }
rules:
  - id: night-work-is-held
    verdict: halt
    tool: [restart]
    time: "01:00-05:00"
  - id: observers-ask
    verdict: ask
    tool: [deploy]
    tier: [observe]
"#;

/// The in-memory ledger: it chains and redacts as the SQLite one does.
fn ledger(_name: &str) -> MemoryLedger {
    MemoryLedger::new()
}

fn named(actor: &Actor, tool: &str) -> Action {
    Action::new(
        actor.clone(),
        Tool::Named {
            name: tool.to_owned(),
        },
    )
}

#[test]
fn every_actor_gets_the_same_steps() {
    let policy = Policy::from_yaml(POLICY, nightwatch_shell::analyse).expect("policy");
    let actors = [
        Actor::new(ActorKind::Agent, "claude-code"),
        Actor::new(ActorKind::Script, "exec"),
        Actor::new(ActorKind::Janitor, "janitor"),
        Actor::new(ActorKind::Dispatcher, "nightwatch-serve"),
        Actor::new(ActorKind::Human, "alice"),
    ];
    for actor in &actors {
        let ledger = ledger(&actor.id);
        let told = Told::default();
        let clock = Stopped(NIGHT);
        let engine = Engine::new(&ledger, &Inert, &clock, &told, Some("web-1".into()));
        let propose = |tool: &str| {
            engine
                .propose(
                    &policy,
                    Proposal {
                        action: named(actor, tool),
                        call_id: None,
                        inputs: json!({ "tool": tool }),
                        cwd: None,
                    },
                )
                .expect("recorded")
        };

        // Time of day comes from the engine's clock for every actor: 03:30 is in the window.
        let restart = propose("restart");
        assert_eq!(restart.decision.verdict, Verdict::Halt, "{}", actor.id);
        assert_eq!(restart.record.context.host.as_deref(), Some("web-1"));
        assert_eq!(restart.record.timestamp_ms, NIGHT);
        // A halt is escalated, whoever proposed it.
        assert_eq!(
            *told.0.lock().unwrap(),
            std::slice::from_ref(&restart.record.id)
        );

        // The tier comes from the ledger: observers ask, a placement in `trusted` allows.
        assert_eq!(
            propose("deploy").decision.verdict,
            Verdict::Ask,
            "{}",
            actor.id
        );
        engine
            .record(Event::Trust {
                by: Actor::new(ActorKind::Human, "bob"),
                placement: Placement {
                    agent: actor.id.clone(),
                    tier: "trusted".into(),
                    why: "earned it".into(),
                },
                host: None,
            })
            .expect("recorded");
        let deploy = propose("deploy");
        assert_eq!(deploy.decision.verdict, Verdict::Allow, "{}", actor.id);

        // Every decision stores the call's fingerprint.
        let decisions = ledger
            .query(&Filter {
                event: Some(event::DECISION.to_owned()),
                ..Filter::default()
            })
            .unwrap();
        assert_eq!(decisions.len(), 3);
        for decision in &decisions {
            let safeguards = Safeguards::of(decision.safeguards.as_ref());
            assert!(safeguards.fingerprint.is_some(), "{decision:?}");
        }
    }
}

/// An actor cannot name its own tier: the engine replaces it with the ledger's.
#[test]
fn a_tier_the_actor_claims_is_replaced() {
    let policy = Policy::from_yaml(POLICY, nightwatch_shell::analyse).expect("policy");
    let ledger = ledger("claimed-tier");
    let clock = Stopped(NIGHT);
    let told = Told::default();
    let engine = Engine::new(&ledger, &Inert, &clock, &told, None);
    let mut actor = Actor::new(ActorKind::Agent, "claude-code");
    actor.tier = Some("trusted".into());
    let ruling = engine
        .propose(
            &policy,
            Proposal {
                action: named(&actor, "deploy"),
                call_id: None,
                inputs: json!({}),
                cwd: None,
            },
        )
        .unwrap();
    assert_eq!(ruling.decision.verdict, Verdict::Ask);
}
