//! The resident gate (`nightwatch gate`): hooks hand it their calls and get the same answers
//! they would have given themselves; a gate that fails them is a refusal, never a pass.

mod common;

use common::gate::Gate;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PAYLOADS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/payloads");

fn payload(path: &str) -> Vec<u8> {
    std::fs::read(format!("{PAYLOADS}/{path}"))
        .unwrap_or_else(|e| panic!("{path}: {e} (CI keeps shared/ beside the clone)"))
}

fn hook(home: &Path, input: &[u8], env: &[(&str, &str)]) -> Output {
    let mut all = vec![("NIGHTWATCH_HOME", home.as_os_str())];
    all.extend(env.iter().map(|(k, v)| (*k, std::ffi::OsStr::new(*v))));
    common::nightwatch(&["hook", "claude"], input, &all)
}

fn decisions(home: &Path) -> Vec<serde_json::Value> {
    let output = Command::new(env!("CARGO_BIN_EXE_nightwatch"))
        .args(["export", "--format", "jsonl"])
        .env("NIGHTWATCH_HOME", home)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    common::scratch("resident", name)
}

#[test]
fn the_gate_answers_as_the_hook_would_and_records_the_same() {
    let alone = scratch("alone");
    let served = scratch("served");
    let _gate = Gate::start(&served);
    let calls = [
        payload("claude/pre-bash.json"),
        payload("claude/pre-bash-compound.json"),
        payload("claude/pre-read.json"),
        payload("claude/post-bash.json"),
        payload("claude/session-start.json"),
        b"{not json".to_vec(),
        Vec::new(),
    ];
    let env = [("NIGHTWATCH_NOW", "2026-02-14T03:17:22Z"), ("TZ", "UTC")];
    for input in &calls {
        let by_itself = hook(&alone, input, &env);
        let through_gate = hook(&served, input, &env);
        assert_eq!(
            (
                by_itself.status.code(),
                &by_itself.stdout,
                &by_itself.stderr
            ),
            (
                through_gate.status.code(),
                &through_gate.stdout,
                &through_gate.stderr
            ),
            "{}",
            String::from_utf8_lossy(input)
        );
    }
    let strip = |records: Vec<serde_json::Value>| -> Vec<serde_json::Value> {
        records
            .into_iter()
            .map(|mut r| {
                // Written at the real time, which differs between the two runs.
                for volatile in ["hash", "prev_hash", "timestamp"] {
                    r.as_object_mut().unwrap().remove(volatile);
                }
                // A backup's id names its content and time: the same paths backed up twice.
                if let Some(snapshot) = r.pointer_mut("/safeguards/backup/snapshot") {
                    *snapshot = serde_json::Value::String("(a snapshot)".to_owned());
                }
                r
            })
            .collect()
    };
    assert_eq!(strip(decisions(&alone)), strip(decisions(&served)));
}

#[test]
fn the_gate_decides_with_the_hooks_policy_and_rereads_it_when_it_changes() {
    let home = scratch("policy");
    let _gate = Gate::start(&home);
    let policy = home.join("mine.yaml");
    std::fs::write(
        &policy,
        "rules:\n  - id: vacuum\n    verdict: allow\n    command: [\"journalctl --vacuum-time=*\"]\n",
    )
    .unwrap();
    let policy_env = [("NIGHTWATCH_POLICY", policy.to_str().unwrap())];
    let allowed = hook(&home, &payload("claude/pre-bash.json"), &policy_env);
    assert!(String::from_utf8_lossy(&allowed.stdout).contains("\"allow\""));
    std::fs::write(
        &policy,
        "rules:\n  - id: vacuum-is-out\n    verdict: deny\n    command: [\"journalctl --vacuum-time=*\"]\n",
    )
    .unwrap();
    let denied = hook(&home, &payload("claude/pre-bash.json"), &policy_env);
    assert_eq!(denied.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&denied.stderr).contains("vacuum-is-out"));
}

#[test]
fn a_gate_that_hangs_up_is_a_refusal_not_a_pass() {
    let home = scratch("hang-up");
    let listener = UnixListener::bind(home.join("gate.sock")).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            drop(stream);
        }
    });
    let output = hook(&home, &payload("claude/pre-bash.json"), &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("resident gate did not answer"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_stopped_gate_leaves_the_hooks_working_on_their_own() {
    let home = scratch("stopped");
    drop(Gate::start(&home));
    assert!(home.join("gate.sock").exists(), "the socket is left behind");
    let output = hook(&home, &payload("claude/pre-bash.json"), &[]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(decisions(&home).len(), 1);
    // And a new gate replaces the stale socket.
    let _gate = Gate::start(&home);
    let again = hook(&home, &payload("claude/pre-bash.json"), &[]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(decisions(&home).len(), 2);
}
