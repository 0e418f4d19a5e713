//! The hook pipeline in process: a Claude Code call answered through a world with the
//! in-memory ledger, as the hook process and the resident gate answer it.

use nightwatch_agents::Agent;
use nightwatch_gate::LiveGuards;
use nightwatch_host::Environment;
use nightwatch_host::hook::{World, answer};
use nightwatch_ledger::{Filter, event};
use nightwatch_policy::Policy;
use nightwatch_store::memory::MemoryLedger;
use nightwatch_store::{Ledger, LedgerReader};
use serde_json::json;
use std::sync::Arc;

struct InMemory {
    ledger: MemoryLedger,
    policy: Arc<Policy>,
    guards: LiveGuards,
}

impl World for InMemory {
    fn ledger(&self) -> anyhow::Result<&dyn Ledger> {
        Ok(&self.ledger)
    }
    fn policy(&self, _: &Environment) -> anyhow::Result<Arc<Policy>> {
        Ok(Arc::clone(&self.policy))
    }
    fn guards(&self, _: &Environment) -> LiveGuards {
        self.guards.clone()
    }
    fn escalate(&self, _: &str, _: &Environment) {}
}

fn world(dir: &std::path::Path) -> InMemory {
    InMemory {
        ledger: MemoryLedger::new(),
        policy: Arc::new(
            Policy::compile(
                "rules:\n  - id: no-wiping\n    verdict: deny\n    command: [\"rm -rf *\"]\n",
                nightwatch_shell::analyse,
            )
            .unwrap(),
        ),
        guards: LiveGuards::new(dir),
    }
}

fn bash(event: &str, command: &str) -> Vec<u8> {
    json!({
        "session_id": "s1",
        "cwd": "/srv",
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": { "command": command },
        "tool_response": { "stdout": "", "stderr": "", "interrupted": false },
        "tool_use_id": "toolu_1",
    })
    .to_string()
    .into_bytes()
}

fn records(world: &InMemory, kind: &str) -> Vec<nightwatch_ledger::Record> {
    world
        .ledger
        .query(&Filter {
            event: Some(kind.to_owned()),
            ..Filter::default()
        })
        .unwrap()
}

#[test]
fn a_denied_call_is_decided_and_recorded_once() {
    let dir = tempfile::tempdir().unwrap();
    let world = world(dir.path());
    let env = Environment::default();
    answer(
        Agent::Claude,
        &bash("PreToolUse", "rm -rf /srv"),
        &env,
        &world,
    );
    let decisions = records(&world, event::DECISION);
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].verdict.as_deref(), Some("deny"));
    assert_eq!(decisions[0].rule.as_deref(), Some("no-wiping"));
    assert_eq!(decisions[0].session_id.as_deref(), Some("s1"));
}

#[test]
fn a_result_is_recorded_against_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let world = world(dir.path());
    let env = Environment::default();
    answer(Agent::Claude, &bash("PreToolUse", "ls /srv"), &env, &world);
    let reply = answer(Agent::Claude, &bash("PostToolUse", "ls /srv"), &env, &world);
    assert_eq!(reply.exit_code, 0);
    let results = records(&world, event::RESULT);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].call_id.as_deref(), Some("toolu_1"));
}

#[test]
fn an_unreadable_call_is_refused_and_the_refusal_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let world = world(dir.path());
    let reply = answer(Agent::Claude, b"{not json", &Environment::default(), &world);
    assert_eq!(
        reply.exit_code, 2,
        "a failure is a refusal, never a go-ahead"
    );
    // Recorded as a deny nightwatch made because it could not decide.
    let refusals = records(&world, event::DECISION);
    assert_eq!(refusals.len(), 1);
    assert_eq!(refusals[0].verdict.as_deref(), Some("deny"));
    assert_eq!(refusals[0].tool, "unknown");
    assert_eq!(refusals[0].rule, None);
}
