//! `trust set` and `trust report` through the real binary, on a ledger written by real
//! `nightwatch hook claude` and `nightwatch exec` calls.

mod common;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NOW: &str = "2026-02-14T03:17:00Z";

/// Low bounds so a handful of calls earn a promotion or a demotion.
const POLICY: &str = r#"
version: 1
default: ask
opaque: ask
trust:
  promote: { min_actions: 3, min_days_in_tier: 0, max_denials: 0, max_halts: 0, max_failure_rate: 0.5 }
  demote: { max_denials: 1 }
rules:
  - id: inspection
    verdict: allow
    command: [ls, df, uname]
  - id: no-docker-here
    verdict: deny
    command: ["docker *"]
    reason: this host runs no containers
"#;

struct Home {
    dir: PathBuf,
    policy: PathBuf,
}

impl Home {
    fn new(name: &str) -> Home {
        let dir = common::scratch("trust", name);
        let policy = dir.join("policy.yaml");
        std::fs::write(&policy, POLICY).expect("write policy");
        Home { dir, policy }
    }

    fn run(&self, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
        let mut all = vec![
            ("NIGHTWATCH_HOME", self.dir.as_os_str()),
            ("NIGHTWATCH_POLICY", self.policy.as_os_str()),
            ("NIGHTWATCH_NOW", std::ffi::OsStr::new(NOW)),
            ("TZ", std::ffi::OsStr::new("UTC")),
        ];
        all.extend(env.iter().map(|(k, v)| (*k, std::ffi::OsStr::new(*v))));
        common::nightwatch(args, stdin, &all)
    }

    /// Claude Code asks before running `command`, then reports it ran.
    fn claude_runs(&self, call: &str, command: &str) {
        let pre = json!({
            "session_id": "sess_2a9f3b",
            "cwd": "/opt/agent",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": { "command": command, "description": "look around" },
            "tool_use_id": call,
        });
        let output = self.run(&["hook", "claude"], pre.to_string().as_bytes(), &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let post = json!({
            "session_id": "sess_2a9f3b",
            "cwd": "/opt/agent",
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": { "command": command },
            "tool_response": { "stdout": "ok\n", "stderr": "", "interrupted": false },
            "tool_use_id": call,
            "duration_ms": 12,
        });
        let output = self.run(&["hook", "claude"], post.to_string().as_bytes(), &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }

    fn report(&self) -> Vec<Value> {
        let output = self.run(&["trust", "report", "--json"], b"", &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON array");
        report.as_array().cloned().expect("a JSON array")
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn agent<'a>(report: &'a [Value], id: &str) -> &'a Value {
    report
        .iter()
        .find(|a| a["agent"] == id)
        .unwrap_or_else(|| panic!("{id} not in {report:?}"))
}

fn export(home: &Path) -> usize {
    let output = Command::new(env!("CARGO_BIN_EXE_nightwatch"))
        .args(["export"])
        .env("NIGHTWATCH_HOME", home)
        .output()
        .expect("nightwatch runs");
    stdout(&output).lines().count()
}

#[test]
fn set_refuses_a_tier_the_policy_does_not_name_and_records_nothing() {
    let home = Home::new("unknown-tier");
    let output = home.run(
        &["trust", "set", "claude-code", "root", "--why", "x"],
        b"",
        &[],
    );
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(message.contains("no trust tier \"root\""), "{message}");
    assert!(
        message.contains("observe, draft, nonprod, prod"),
        "names the tiers there are: {message}"
    );
    assert_eq!(export(&home.dir), 0, "a refusal records nothing");
}

#[test]
fn set_refuses_an_empty_why() {
    let home = Home::new("empty-why");
    for why in ["", "   "] {
        let output = home.run(
            &["trust", "set", "claude-code", "draft", "--why", why],
            b"",
            &[],
        );
        assert_eq!(output.status.code(), Some(1), "{why:?}");
        assert!(
            stderr(&output).contains("--why is empty"),
            "{}",
            stderr(&output)
        );
    }
    let missing = home.run(&["trust", "set", "claude-code", "draft"], b"", &[]);
    assert_eq!(missing.status.code(), Some(1), "--why is required");
    assert_eq!(export(&home.dir), 0);
}

#[test]
fn set_is_recorded_and_moves_the_agent() {
    let home = Home::new("set");
    home.claude_runs("toolu_1", "ls /srv");
    assert_eq!(agent(&home.report(), "claude-code")["tier"], "observe");

    let output = home.run(
        &[
            "trust",
            "set",
            "claude-code",
            "nonprod",
            "--why",
            "a month of clean log triage",
            "--by",
            "alice",
        ],
        b"",
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("claude-code is in nonprod (was observe)"),
        "{}",
        stdout(&output)
    );

    let log = home.run(&["log", "--json"], b"", &[]);
    let records: Vec<Value> = stdout(&log)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON record per line"))
        .collect();
    let trust = records.last().expect("the trust record");
    assert_eq!(trust["event"], "trust");
    assert_eq!(trust["tool"], "trust");
    assert_eq!(trust["actor"], json!({"kind": "human", "id": "alice"}));
    assert_eq!(
        trust["inputs"],
        json!({"agent": "claude-code", "tier": "nonprod", "why": "a month of clean log triage"})
    );
    assert_eq!(trust["verdict"], Value::Null);

    let report = home.report();
    let claude = agent(&report, "claude-code");
    assert_eq!(claude["tier"], "nonprod");
    assert_eq!(claude["placed_by"]["by"], "alice");
    assert_eq!(
        claude["actions"], 0,
        "the count starts again in the new tier"
    );

    let text = home.run(&["trust", "report"], b"", &[]);
    assert!(
        stdout(&text).contains("claude-code  nonprod"),
        "{}",
        stdout(&text)
    );
}

#[test]
fn a_clean_agent_past_the_bounds_is_recommended_for_promotion() {
    let home = Home::new("promote");
    for (call, command) in [
        ("toolu_1", "ls /srv"),
        ("toolu_2", "df -h"),
        ("toolu_3", "uname -a"),
    ] {
        home.claude_runs(call, command);
    }
    let report = home.report();
    let claude = agent(&report, "claude-code");
    assert_eq!(claude["tier"], "observe");
    assert_eq!(claude["actions"], 3);
    assert_eq!(claude["allows"], 3);
    assert_eq!(claude["results"], 3);
    assert_eq!(claude["failure_rate"], 0.0);
    assert_eq!(claude["recommendation"], "promote", "{claude}");
    assert_eq!(claude["to"], "draft");
    assert!(
        claude["promote"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["outcome"] == "holds")
    );

    let text = stdout(&home.run(&["trust", "report"], b"", &[]));
    assert!(text.contains("promote to draft"), "{text}");
    assert!(
        text.contains("why: every promotion bound holds: actions 3 >= 3"),
        "{text}"
    );
}

#[test]
fn an_agent_with_denials_past_the_bound_is_recommended_for_demotion() {
    let home = Home::new("demote");
    let robot = [("NIGHTWATCH_AGENT", "robot")];
    let output = home.run(
        &[
            "trust", "set", "robot", "draft", "--why", "trial", "--by", "bob",
        ],
        b"",
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let allowed = home.run(&["exec", "--", "uname", "-s"], b"", &robot);
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
    for _ in 0..2 {
        let denied = home.run(&["exec", "--", "docker", "ps"], b"", &robot);
        assert_eq!(denied.status.code(), Some(125), "{}", stderr(&denied));
        assert!(
            stderr(&denied).contains("nightwatch: deny ("),
            "{}",
            stderr(&denied)
        );
    }
    let report = home.report();
    let robot = agent(&report, "robot");
    assert_eq!(robot["kind"], "script");
    assert_eq!(robot["tier"], "draft");
    assert_eq!(robot["actions"], 3);
    assert_eq!(robot["denials"], 2);
    assert_eq!(robot["results"], 1);
    assert_eq!(robot["recommendation"], "demote", "{robot}");
    assert_eq!(robot["to"], "observe");
    assert_eq!(robot["reasons"][0], "demotion bound crossed: denials 2 > 1");

    let text = stdout(&home.run(&["trust", "report"], b"", &[]));
    assert!(text.contains("demote to observe"), "{text}");
}

#[test]
fn report_help_names_what_it_does_and_its_exit_statuses() {
    let home = Home::new("help");
    for command in [
        &["trust", "set", "--help"][..],
        &["trust", "report", "--help"],
    ] {
        let output = home.run(command, b"", &[]);
        assert_eq!(output.status.code(), Some(0));
        let text = stdout(&output)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(text.contains("Exit status: 0"), "{text}");
    }
}
