//! The resident gate in process, on a real socket and a real SQLite ledger: it gives the answer
//! the hook process would have given and writes the same records; a malformed call is refused;
//! a second gate cannot take the socket, and a dead gate's socket is replaced.

use nightwatch_agents::Agent;
use nightwatch_host::Environment;
use nightwatch_host::hook::{OneCall, answer};
use nightwatch_host::resident::{self, Resident};
use nightwatch_ledger::{Filter, event};
use serde_json::json;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;

const POLICY: &str = "rules:\n  - id: no-wiping\n    verdict: deny\n    command: [\"rm -rf *\"]\n    reason: not here\n  - id: looking\n    verdict: allow\n    command: [ls]\n";

fn env(dir: &Path) -> Environment {
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    Environment::from_vars([
        ("NIGHTWATCH_HOME", dir.to_str().unwrap()),
        ("NIGHTWATCH_POLICY", policy.to_str().unwrap()),
        ("NIGHTWATCH_SESSION", "s1"),
        ("TZ", "UTC"),
    ])
}

fn bash(command: &str, call: &str) -> Vec<u8> {
    json!({
        "session_id": "s1",
        "cwd": "/srv",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": { "command": command },
        "tool_use_id": call,
    })
    .to_string()
    .into_bytes()
}

/// A gate serving `dir` on a thread of its own.
fn start_gate(dir: &Path) {
    let listener = resident::bind(dir).unwrap();
    let world = Arc::new(Resident::open(dir).unwrap());
    std::thread::spawn(move || resident::serve(listener, world));
}

fn decisions(dir: &Path) -> Vec<nightwatch_ledger::Record> {
    let ledger = nightwatch_host::stores::ledger(dir).unwrap();
    ledger
        .query(&Filter {
            event: Some(event::DECISION.to_owned()),
            ..Filter::default()
        })
        .unwrap()
}

#[test]
fn the_gate_answers_as_the_hook_process_would_and_records_the_same() {
    let alone = tempfile::tempdir().unwrap();
    let served = tempfile::tempdir().unwrap();
    start_gate(served.path());
    for (command, call) in [("rm -rf /srv", "c1"), ("ls /srv", "c2"), ("$CMD", "c3")] {
        let input = bash(command, call);
        let by_itself = answer(
            Agent::Claude,
            &input,
            &env(alone.path()),
            &OneCall::new(&env(alone.path())),
        );
        let through_gate =
            resident::ask(Agent::Claude, &input, &env(served.path())).expect("the gate listens");
        assert_eq!(through_gate.exit_code, by_itself.exit_code, "{command}");
        assert_eq!(through_gate.stdout, by_itself.stdout, "{command}");
        assert_eq!(through_gate.stderr, by_itself.stderr, "{command}");
    }
    let verdicts = |dir: &Path| -> Vec<(Option<String>, Option<String>)> {
        decisions(dir)
            .into_iter()
            .map(|r| (r.verdict, r.rule))
            .collect()
    };
    assert_eq!(verdicts(alone.path()), verdicts(served.path()));
    assert_eq!(
        verdicts(served.path())[0],
        (Some("deny".to_owned()), Some("no-wiping".to_owned()))
    );
}

#[test]
fn a_malformed_call_is_refused_and_a_second_gate_cannot_take_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    start_gate(dir.path());
    let mut stream = UnixStream::connect(resident::socket_path(dir.path())).unwrap();
    stream.write_all(b"{not a header}\n").unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["exit_code"], 2, "{answer}");
    assert!(
        answer["stderr"].as_str().unwrap().contains("malformed"),
        "{answer}"
    );
    let second = resident::bind(dir.path()).unwrap_err().to_string();
    assert!(second.contains("already answers"), "{second}");
}

#[test]
fn a_dead_gates_socket_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    // A socket file nothing listens on, as a killed gate leaves it.
    drop(std::os::unix::net::UnixListener::bind(resident::socket_path(dir.path())).unwrap());
    assert!(resident::socket_path(dir.path()).exists());
    assert!(resident::connect(&env(dir.path())).is_none());
    start_gate(dir.path());
    let reply = resident::ask(Agent::Claude, &bash("ls /srv", "c1"), &env(dir.path()))
        .expect("the new gate listens");
    assert_eq!(reply.exit_code, 0, "{}", reply.stderr);
}
