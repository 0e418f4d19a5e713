//! The agents' hooks through the real binary, driven by the payloads the real tools send
//! (`fixtures/payloads/`), and everything that must fail closed.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

const PAYLOADS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/payloads");
const AGENT_VM_POLICY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/agent-vm.yaml");

fn scratch(name: &str) -> PathBuf {
    common::scratch("hooks", name)
}

fn payload(path: &str) -> Vec<u8> {
    let full = format!("{PAYLOADS}/{path}");
    std::fs::read(&full)
        .unwrap_or_else(|e| panic!("{full}: {e} (CI keeps shared/ beside the clone)"))
}

/// Runs `nightwatch ARGS` with `stdin`, in data directory `home`, with extra environment.
fn run(home: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let mut all = vec![("NIGHTWATCH_HOME", home.as_os_str())];
    all.extend(env.iter().map(|(k, v)| (*k, std::ffi::OsStr::new(*v))));
    common::nightwatch(args, stdin, &all)
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {:?} / stderr {:?}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn export(home: &Path) -> Vec<serde_json::Value> {
    let output = run(home, &["export", "--format", "jsonl"], b"", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON record per line"))
        .collect()
}

#[test]
fn claude_pre_tool_use_gets_a_permission_decision_and_is_recorded() {
    let home = scratch("claude-pre");
    let output = run(
        &home,
        &["hook", "claude"],
        &payload("claude/pre-bash.json"),
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let reply = json(&output);
    let specific = &reply["hookSpecificOutput"];
    assert_eq!(specific["hookEventName"], "PreToolUse");
    assert_eq!(
        specific["permissionDecision"], "ask",
        "journalctl --vacuum changes things"
    );
    assert!(
        specific["permissionDecisionReason"]
            .as_str()
            .is_some_and(|r| !r.is_empty())
    );

    let records = export(&home);
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(record["event"], "decision");
    assert_eq!(record["session_id"], "sess_2a9f3b");
    assert_eq!(record["call_id"], "toolu_01ABC123");
    assert_eq!(record["tool"], "exec");
    assert_eq!(
        record["inputs"]["command"],
        "journalctl --vacuum-time=7d --unit=app-worker"
    );
    assert_eq!(record["verdict"], "ask");
    assert_eq!(record["actor"]["kind"], "agent");
    assert_eq!(record["cwd"], "/opt/agent");
    assert_eq!(record["prev_hash"], "0".repeat(64));
}

#[test]
fn claude_deny_exits_two_with_the_reason_on_stderr() {
    let home = scratch("claude-deny");
    let env = [("NIGHTWATCH_POLICY", AGENT_VM_POLICY)];
    let output = run(
        &home,
        &["hook", "claude"],
        &payload("claude/pre-bash-compound.json"),
        &env,
    );
    assert_eq!(output.status.code(), Some(2));
    let reason = stderr(&output);
    assert!(reason.contains("docker"), "{reason}");
    assert!(
        reason.contains("Instead: run it on the shared dev host"),
        "{reason}"
    );
    assert_eq!(
        json(&output)["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
}

#[test]
fn every_claude_payload_is_answered_and_recorded_in_one_chain() {
    let home = scratch("claude-all");
    let mut expected_events = Vec::new();
    for (file, event) in [
        ("session-start.json", "session-start"),
        ("pre-bash.json", "decision"),
        ("post-bash.json", "result"),
        ("pre-read.json", "decision"),
        ("pre-write.json", "decision"),
        ("pre-edit.json", "decision"),
        ("pre-mcp.json", "decision"),
        ("post-bash-failure.json", "unguarded-result"),
        ("stop.json", "stop"),
        ("session-end.json", "session-end"),
    ] {
        let output = run(
            &home,
            &["hook", "claude"],
            &payload(&format!("claude/{file}")),
            &[],
        );
        assert!(
            matches!(output.status.code(), Some(0 | 2)),
            "{file}: {:?} {}",
            output.status,
            stderr(&output)
        );
        expected_events.push(event);
    }
    let records = export(&home);
    let events: Vec<&str> = records
        .iter()
        .map(|r| r["event"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(events, expected_events);
    let result = &records[2];
    assert_eq!(
        result["call_id"], "toolu_01ABC123",
        "the result is joined to its decision"
    );
    assert_eq!(result["duration_ms"], 847);
    assert!(
        result["outputs"]["stdout"]
            .as_str()
            .unwrap_or("")
            .contains("freed 4.2G")
    );
    let tools: Vec<&str> = records
        .iter()
        .map(|r| r["tool"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        tools[3..7],
        ["read", "write", "edit", "mcp__postgres__query"]
    );

    let verify = run(&home, &["verify"], b"", &[]);
    let text = String::from_utf8_lossy(&verify.stdout).into_owned();
    assert_eq!(
        verify.status.code(),
        Some(2),
        "an unguarded result is reported: {text}"
    );
    // Words and status agree: not "intact" when it exits 2.
    assert!(
        text.starts_with("UNGUARDED: 10 records, hash chain unbroken"),
        "{text}"
    );
    assert!(!text.contains("intact"), "{text}");
    assert!(text.contains("r8"), "{text}");
}

#[test]
fn codex_gets_only_deny_or_silence() {
    let home = scratch("codex");
    // `bash -lc 'git status && git push --force origin main'`: the force push is denied.
    let output = run(
        &home,
        &["hook", "codex"],
        &payload("codex/pre-bash.json"),
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("force"), "{}", stderr(&output));

    // An ask becomes a deny: Codex has no ask.
    let ask = br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"make deploy"},"tool_use_id":"c1"}"#;
    let output = run(&home, &["hook", "codex"], ask, &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("approval"), "{}", stderr(&output));

    let allow = br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"},"tool_use_id":"c2"}"#;
    let output = run(&home, &["hook", "codex"], allow, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn gemini_before_and_after_tool() {
    let home = scratch("gemini");
    let output = run(
        &home,
        &["hook", "gemini"],
        &payload("gemini/before-tool.json"),
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        json(&output)["decision"],
        "allow",
        "df -h && du -sh /var/log/* only looks"
    );
    let output = run(
        &home,
        &["hook", "gemini"],
        &payload("gemini/after-tool.json"),
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let records = export(&home);
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["verdict"], "allow");
    assert!(
        records[1]["outputs"]["stdout"]
            .as_str()
            .unwrap_or("")
            .contains("86%")
    );

    let deny = br#"{"session_id":"g","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"sudo reboot"}}"#;
    let output = run(&home, &["hook", "gemini"], deny, &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(json(&output)["decision"], "deny");
}

#[test]
fn context_comes_from_whoever_launched_the_agent() {
    let home = scratch("context");
    let env = [
        ("NIGHTWATCH_SESSION", "incident-42"),
        ("NIGHTWATCH_AGENT", "oncall-claude"),
        ("NIGHTWATCH_TRIGGERED_BY", "uptime_kuma_alert"),
        ("NIGHTWATCH_ALERT_ID", "alert_88c2d1"),
        ("NIGHTWATCH_HOST", "prod-worker-01.tailnet"),
    ];
    let output = run(
        &home,
        &["hook", "claude"],
        &payload("claude/pre-bash.json"),
        &env,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let record = &export(&home)[0];
    assert_eq!(record["session_id"], "incident-42");
    assert_eq!(record["actor"]["id"], "oncall-claude");
    assert_eq!(record["context"]["triggered_by"], "uptime_kuma_alert");
    assert_eq!(record["context"]["alert_id"], "alert_88c2d1");
    assert_eq!(record["context"]["host"], "prod-worker-01.tailnet");
    let log = run(&home, &["log", "--alert", "alert_88c2d1"], b"", &[]);
    let text = String::from_utf8_lossy(&log.stdout).into_owned();
    assert!(text.contains("session incident-42 on prod-worker-01.tailnet, triggered by uptime_kuma_alert (alert alert_88c2d1)"), "{text}");
}

/// A name, the hook's stdin, extra environment, and the arguments.
type FailCase<'a> = (&'a str, Vec<u8>, Vec<(&'a str, String)>, Vec<&'a str>);

#[test]
fn hooks_fail_closed_never_exit_one() {
    let home = scratch("fail-closed");
    let good = payload("claude/pre-bash.json");
    let unwritable = home.join("not-a-directory");
    std::fs::write(&unwritable, "a file where the data directory should be").expect("write");
    let cases: Vec<FailCase> = vec![
        ("empty input", Vec::new(), vec![], vec!["hook", "claude"]),
        (
            "not JSON",
            b"{not json".to_vec(),
            vec![],
            vec!["hook", "claude"],
        ),
        (
            "JSON array",
            b"[1,2]".to_vec(),
            vec![],
            vec!["hook", "claude"],
        ),
        (
            "no tool input",
            br#"{"hook_event_name":"PreToolUse","tool_name":"Bash"}"#.to_vec(),
            vec![],
            vec!["hook", "claude"],
        ),
        (
            "unreadable policy",
            good.clone(),
            vec![("NIGHTWATCH_POLICY", "/nonexistent/policy.yaml".to_owned())],
            vec!["hook", "claude"],
        ),
        (
            "unwritable ledger",
            good.clone(),
            vec![("NIGHTWATCH_HOME", unwritable.display().to_string())],
            vec!["hook", "claude"],
        ),
        ("unknown agent", good.clone(), vec![], vec!["hook", "nope"]),
        (
            "bad clock",
            good.clone(),
            vec![("NIGHTWATCH_NOW", "whenever".to_owned())],
            vec!["hook", "claude"],
        ),
    ];
    for (name, input, env, args) in cases {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let output = run(&home, &args, &input, &env);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{name}: must refuse, got {:?}; stderr {}",
            output.status,
            stderr(&output)
        );
        assert!(
            !stderr(&output).trim().is_empty(),
            "{name}: a refusal says why"
        );
    }
}

#[test]
fn a_broken_policy_refuses_with_its_line() {
    let home = scratch("broken-policy");
    let policy = home.join("policy.yaml");
    std::fs::write(
        &policy,
        "version: 1\nrules:\n  - id: x\n    verdict: perhaps\n",
    )
    .expect("write");
    let output = run(
        &home,
        &["hook", "claude"],
        &payload("claude/pre-bash.json"),
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("policy.yaml:4:"),
        "{}",
        stderr(&output)
    );
}
