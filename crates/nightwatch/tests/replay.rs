//! `policy replay` through the real binary: a ledger written by real `nightwatch hook claude`
//! calls under one policy, decided again under a candidate.

mod common;

use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The policy the calls were decided by.
const RECORDED: &str = r#"
version: 1
default: ask
opaque: ask
rules:
  - id: inspection
    verdict: allow
    command: [ls, df]
  - id: no-docker-here
    verdict: deny
    command: ["docker *"]
    reason: this host runs no containers
"#;

/// A candidate that relaxes docker and tightens ls.
const CANDIDATE: &str = r#"
version: 1
default: ask
opaque: ask
rules:
  - id: inspection
    verdict: allow
    command: [df]
  - id: listing-is-asked
    verdict: ask
    command: [ls]
  - id: docker-read-only
    verdict: allow
    command: ["docker ps"]
"#;

struct Home {
    dir: PathBuf,
}

impl Home {
    fn new(name: &str) -> Home {
        let dir = common::scratch("replay", name);
        for (file, text) in [("recorded.yaml", RECORDED), ("candidate.yaml", CANDIDATE)] {
            std::fs::write(dir.join(file), text).expect("write policy");
        }
        Home { dir }
    }

    fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }

    fn run(&self, args: &[&str], stdin: &[u8], now: &str) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_nightwatch"));
        command
            .args(args)
            .env("NIGHTWATCH_HOME", &self.dir)
            .env("NIGHTWATCH_POLICY", self.path("recorded.yaml"))
            .env("NIGHTWATCH_NOW", now)
            .env("TZ", "UTC")
            .env_remove("NIGHTWATCH_SESSION")
            .env_remove("NIGHTWATCH_AGENT")
            .env_remove("NIGHTWATCH_TRIGGERED_BY")
            .env_remove("NIGHTWATCH_ALERT_ID")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("nightwatch runs");
        if let Some(mut input) = child.stdin.take() {
            let _ = input.write_all(stdin);
        }
        child.wait_with_output().expect("nightwatch finishes")
    }

    /// Claude Code proposes `command` at `now`; the verdict is recorded.
    fn claude_proposes(&self, call: &str, command: &str, now: &str) {
        let pre = json!({
            "session_id": "sess_2a9f3b",
            "cwd": "/opt/agent",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": { "command": command, "description": "look around" },
            "tool_use_id": call,
        });
        let output = self.run(&["hook", "claude"], pre.to_string().as_bytes(), now);
        assert!(
            matches!(output.status.code(), Some(0 | 2)),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn replay(&self, policy: &str, extra: &[&str]) -> Output {
        let policy = self.path(policy);
        let mut args = vec!["policy", "replay", "--policy", &policy];
        args.extend_from_slice(extra);
        self.run(&args, b"", LATER)
    }
}

const EARLY: &str = "2026-02-14T03:17:00Z";
const LATER: &str = "2026-02-14T09:00:00Z";

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// r1 docker ps (deny), r2 ls (allow), r3 df (allow), r4 cargo build (ask).
fn recorded(name: &str) -> Home {
    let home = Home::new(name);
    home.claude_proposes("toolu_1", "docker ps", EARLY);
    home.claude_proposes("toolu_2", "ls -la /srv", EARLY);
    home.claude_proposes("toolu_3", "df -h", EARLY);
    home.claude_proposes("toolu_4", "cargo build", EARLY);
    home
}

#[test]
fn a_looser_candidate_lists_the_call_first_with_both_verdicts_and_exits_3() {
    let home = recorded("looser");
    let output = home.replay("candidate.yaml", &[]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("LOOSER") && lines[0].contains("r1"),
        "{text}"
    );
    assert!(
        lines[0].contains("agent claude-code") && lines[0].contains("docker ps"),
        "{text}"
    );
    assert!(
        lines[1].contains("deny [no-docker-here] -> allow [docker-read-only]"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("stricter") && lines[2].contains("r2"),
        "{text}"
    );
    assert!(
        lines[3].contains("allow [inspection] -> ask [listing-is-asked]"),
        "{text}"
    );
    assert!(
        text.contains("4 decisions replayed under")
            && text.contains("2 would change: 1 looser, 1 stricter"),
        "{text}"
    );

    let json_output = home.replay("candidate.yaml", &["--json"]);
    assert_eq!(json_output.status.code(), Some(3));
    let replay: Value = serde_json::from_slice(&json_output.stdout).expect("one JSON object");
    assert_eq!(replay["replayed"], 4);
    assert_eq!(replay["changed"], 2);
    assert_eq!(replay["looser"], 1);
    let first = &replay["changes"][0];
    assert_eq!(first["record"], "r1");
    assert_eq!(first["direction"], "looser");
    assert_eq!(first["tool"], "exec");
    assert_eq!(first["what"], "docker ps");
    assert_eq!(
        first["actor"],
        json!({"kind": "agent", "id": "claude-code"})
    );
    assert_eq!(first["session"], "sess_2a9f3b");
    assert_eq!(first["recorded"]["verdict"], "deny");
    assert_eq!(first["recorded"]["rule"], "no-docker-here");
    assert_eq!(first["replayed"]["verdict"], "allow");
    assert_eq!(first["replayed"]["rule"], "docker-read-only");
    assert_eq!(replay["unreadable"], json!([]));
}

#[test]
fn the_recorded_policy_replays_with_no_change_and_exits_0() {
    let home = recorded("same");
    let output = home.replay("recorded.yaml", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("4 decisions replayed under")
            && stdout(&output).contains("0 would change"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn since_limits_the_window() {
    // The calls as a night left them: four at 03:17, df at 08:00. The binary writes records at
    // the real time, so this history is placed through the engine with the time it says.
    let home = Home::new("since");
    let recorded = nightwatch_policy::Policy::from_yaml(RECORDED, nightwatch_shell::analyse)
        .expect("the recorded policy");
    for (call, line, at) in [
        ("toolu_1", "docker ps", EARLY),
        ("toolu_2", "ls -la /srv", EARLY),
        ("toolu_3", "df -h", EARLY),
        ("toolu_4", "cargo build", EARLY),
        ("toolu_5", "df -h /var", "2026-02-14T08:00:00Z"),
    ] {
        let claude = nightwatch_core::Actor::new(nightwatch_core::ActorKind::Agent, "claude-code");
        let call = common::history::Call {
            actor: claude,
            session: Some("sess_2a9f3b"),
            call_id: call,
            line,
        };
        common::history::propose_at(&home.dir, at, &recorded, call);
    }
    // Only the 08:00 call is in the window; docker ps and ls at 03:17 are not.
    let output = home.replay("candidate.yaml", &["--since", "07:00"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).starts_with("1 decisions replayed"),
        "{}",
        stdout(&output)
    );
    let until = home.replay("candidate.yaml", &["--until", "07:00", "--json"]);
    assert_eq!(until.status.code(), Some(3));
    let replay: Value = serde_json::from_slice(&until.stdout).expect("one JSON object");
    assert_eq!(replay["replayed"], 4);
}

#[test]
fn a_record_that_cannot_be_rebuilt_is_counted_and_listed() {
    let home = recorded("unreadable");
    // Hook input that is not JSON: the hook refuses, and records the refusal as a decision
    // whose inputs are the raw text.
    let output = home.run(&["hook", "claude"], b"{not json", EARLY);
    assert_eq!(output.status.code(), Some(2));
    let output = home.replay("recorded.yaml", &[]);
    assert_eq!(output.status.code(), Some(0), "nothing replayed changed");
    let text = stdout(&output);
    assert!(text.contains("cannot rebuild r5"), "{text}");
    assert!(text.contains("4 decisions replayed"), "{text}");
    assert!(text.contains("1 could not be rebuilt"), "{text}");
    let json_output = home.replay("recorded.yaml", &["--json"]);
    let replay: Value = serde_json::from_slice(&json_output.stdout).expect("one JSON object");
    assert_eq!(replay["unreadable"][0]["record"], "r5");
    assert_eq!(replay["unreadable"][0]["tool"], "unknown");
}

#[test]
fn a_candidate_that_does_not_load_is_an_error_with_its_position() {
    let home = recorded("bad-candidate");
    std::fs::write(
        home.dir.join("bad.yaml"),
        "version: 1\nrules:\n  - id: x\n    verdict: maybe\n",
    )
    .expect("write");
    let output = home.replay("bad.yaml", &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("bad.yaml:4:"),
        "{}",
        stderr(&output)
    );
    let missing = home.replay("nowhere.yaml", &[]);
    assert_eq!(missing.status.code(), Some(1));
}

#[test]
fn help_says_what_replay_does_and_its_exit_statuses() {
    let home = Home::new("help");
    let output = home.run(&["policy", "replay", "--help"], b"", EARLY);
    let text = stdout(&output)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("Exit status: 0 no verdict would change, 3 some would, 1 error"),
        "{text}"
    );
}

#[test]
fn a_verdict_a_check_raised_is_not_taken_for_a_policy_change() {
    let home = Home::new("checked");
    let lock = home.dir.join("migration_batch_1.lock");
    std::fs::write(&lock, "").expect("write lock");
    let guarded = format!(
        r#"
version: 1
default: ask
checks:
  migration-lock:
    lock_file: {{ glob: "{}/migration_batch_*.lock", min_age: 0s }}
    on_match: halt
    message: a migration batch holds its lock
rules:
  - id: inspection
    verdict: allow
    command: [ls]
    checks: [migration-lock]
"#,
        home.dir.display()
    );
    std::fs::write(home.dir.join("recorded.yaml"), guarded).expect("write policy");
    home.claude_proposes("toolu_1", "ls /srv", EARLY);
    let export = home.run(&["export"], b"", LATER);
    let decision: Value =
        serde_json::from_str(stdout(&export).lines().next().expect("a record")).expect("JSON");
    assert_eq!(decision["verdict"], "halt", "the check raised the allow");

    let output = home.replay("recorded.yaml", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("0 would change"),
        "{}",
        stdout(&output)
    );
}
