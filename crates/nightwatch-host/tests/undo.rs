//! Undo in process: the in-memory ledger, real guards taking real backups in a temporary
//! directory, and the engine deciding the undo like any action.

use nightwatch_core::{Action, Actor, ActorKind, Tool, Verdict};
use nightwatch_gate::{Clock, Engine, Event, LiveGuards, NoEscalator, Proposal, Report};
use nightwatch_host::undo::{Outcome, Target, Undo};
use nightwatch_ledger::{Filter, Outputs, event};
use nightwatch_policy::Policy;
use nightwatch_store::LedgerReader;
use nightwatch_store::memory::MemoryLedger;
use serde_json::json;
use std::path::Path;

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

fn policy(dir: &Path, undo: &str) -> Policy {
    Policy::compile(&format!(
        "rules:\n  - id: people-undo\n    verdict: {undo}\n    actor: {{ kind: [human] }}\n    tool: undo\n  - id: config-writes\n    verdict: allow\n    tool: [write]\n    paths: [\"{}/etc/**\"]\n",
        dir.display()
    ), nightwatch_shell::analyse)
    .unwrap()
}

/// An agent's write to `file`, backed up before and observed after, as a hook records it.
fn agent_writes(engine: &Engine<'_>, policy: &Policy, file: &Path, content: &str) -> String {
    let mut action = Action::new(
        Actor::new(ActorKind::Agent, "claude"),
        Tool::Write {
            path: file.display().to_string(),
        },
    );
    action.context.session = Some("tuning".to_owned());
    let inputs = json!({ "file_path": file, "content": content });
    let ruling = engine
        .propose(
            policy,
            Proposal {
                action: action.clone(),
                call_id: Some("toolu_write".to_owned()),
                inputs: inputs.clone(),
                cwd: None,
            },
        )
        .unwrap();
    assert_eq!(
        ruling.decision.verdict,
        Verdict::Allow,
        "{:?}",
        ruling.decision
    );
    std::fs::write(file, content).unwrap();
    engine
        .record(Event::Result(Report {
            actor: action.actor.clone(),
            tool: "write".to_owned(),
            session_id: Some("tuning".to_owned()),
            call_id: Some("toolu_write".to_owned()),
            inputs,
            outputs: Outputs {
                exit_code: Some(0),
                ..Outputs::default()
            },
            duration_ms: None,
            context: action.context.clone(),
            cwd: None,
        }))
        .unwrap();
    ruling.record.id
}

struct Scene {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    file: std::path::PathBuf,
    ledger: MemoryLedger,
    guards: LiveGuards,
}

fn scene() -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let file = root.join("etc/worker.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "workers: 4\n").unwrap();
    let guards = LiveGuards::new(&root.join("home"));
    Scene {
        _dir: dir,
        root,
        file,
        ledger: MemoryLedger::new(),
        guards,
    }
}

fn undos(ledger: &MemoryLedger) -> Vec<nightwatch_ledger::Record> {
    ledger
        .query(&Filter {
            event: Some(event::UNDO.to_owned()),
            ..Filter::default()
        })
        .unwrap()
}

#[test]
fn a_backed_up_write_is_undone_and_recorded() {
    let scene = scene();
    let clock = Stopped(NOW);
    let engine = Engine::new(&scene.ledger, &scene.guards, &clock, &NoEscalator, None);
    let policy = policy(&scene.root, "allow");
    let decision = agent_writes(&engine, &policy, &scene.file, "workers: 64\n");
    assert_eq!(
        std::fs::read_to_string(&scene.file).unwrap(),
        "workers: 64\n"
    );

    let undo = Undo {
        engine: &engine,
        ledger: &scene.ledger,
        store: scene.guards.store().unwrap(),
        policy: &policy,
        by: Actor::new(ActorKind::Human, "dana"),
        force: false,
    };
    let decisions = undo
        .decisions(&Target::Session("tuning".to_owned()))
        .unwrap();
    assert_eq!(decisions.len(), 1);
    let outcome = undo.one(&decisions[0]).unwrap();
    let Outcome::Done {
        decision: undone,
        record,
        steps,
        ..
    } = outcome
    else {
        panic!("not undone: {outcome:?}");
    };
    assert_eq!(undone, decision);
    assert!(!steps.is_empty());
    assert_eq!(
        std::fs::read_to_string(&scene.file).unwrap(),
        "workers: 4\n"
    );
    let undos = undos(&scene.ledger);
    assert_eq!(undos.len(), 1);
    assert_eq!(undos[0].id, record);
    assert_eq!(undos[0].outputs.as_ref().unwrap().exit_code, Some(0));
    assert_eq!(undos[0].actor.id, "dana");
    // Done once: the session has nothing left to undo.
    assert!(
        undo.decisions(&Target::Session("tuning".to_owned()))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn an_undo_policy_denies_restores_nothing() {
    let scene = scene();
    let clock = Stopped(NOW);
    let engine = Engine::new(&scene.ledger, &scene.guards, &clock, &NoEscalator, None);
    let policy = policy(&scene.root, "deny");
    let decision = agent_writes(&engine, &policy, &scene.file, "workers: 64\n");

    let undo = Undo {
        engine: &engine,
        ledger: &scene.ledger,
        store: scene.guards.store().unwrap(),
        policy: &policy,
        by: Actor::new(ActorKind::Human, "dana"),
        force: true,
    };
    let decisions = undo.decisions(&Target::Record(decision.clone())).unwrap();
    let outcome = undo.one(&decisions[0]).unwrap();
    let Outcome::Refused {
        decision: refused,
        record,
        verdict,
        ..
    } = outcome
    else {
        panic!("not refused: {outcome:?}");
    };
    assert_eq!(refused, decision);
    assert_eq!(verdict, Verdict::Deny);
    assert_eq!(
        std::fs::read_to_string(&scene.file).unwrap(),
        "workers: 64\n"
    );
    assert!(undos(&scene.ledger).is_empty(), "nothing was undone");
    let denial = scene.ledger.get(&record).unwrap().unwrap();
    assert_eq!(denial.event, event::DECISION);
    assert_eq!(denial.verdict.as_deref(), Some("deny"));
}
