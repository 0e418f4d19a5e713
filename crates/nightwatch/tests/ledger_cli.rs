//! `exec`, `log`, `show`, `verify` and `install` through the real binary, on a real ledger.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch(name: &str) -> PathBuf {
    common::scratch("ledger-cli", name)
}

fn nightwatch(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nightwatch"));
    command
        .args(args)
        .env("NIGHTWATCH_HOME", home)
        .env_remove("NIGHTWATCH_POLICY")
        .env_remove("NIGHTWATCH_SESSION")
        .env_remove("NIGHTWATCH_NOW");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("nightwatch runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn exec_runs_what_is_allowed_and_records_its_result() {
    let home = scratch("exec-allow");
    let output = nightwatch(
        &home,
        &["exec", "--session", "s1", "--", "uname", "-s"],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout).trim(),
        "Linux",
        "the command's output still reaches the caller"
    );

    let log = nightwatch(&home, &["log", "--session", "s1", "--json"], &[]);
    let records: Vec<serde_json::Value> = text(&log.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["event"], "decision");
    assert_eq!(records[0]["verdict"], "allow");
    assert_eq!(
        records[1]["event"], "result",
        "joined to its decision, not unguarded"
    );
    assert_eq!(records[1]["call_id"], records[0]["call_id"]);
    assert_eq!(records[1]["outputs"]["exit_code"], 0);
    assert_eq!(records[1]["outputs"]["stdout"], "Linux\n");
    assert!(records[1]["duration_ms"].is_u64());
}

#[test]
fn exec_refuses_with_the_reason_and_runs_nothing() {
    let home = scratch("exec-deny");
    // Outside the data directory, where writes are refused outright.
    let marker = scratch("exec-deny-marker").join("ran");
    let script = format!("touch {}", marker.display());
    // `sh -c` with a literal script is judged inside; the default policy asks for touch.
    let output = nightwatch(&home, &["exec", "--", "sh", "-c", &script], &[]);
    assert_eq!(
        output.status.code(),
        Some(125),
        "ask: {}",
        text(&output.stderr)
    );
    assert!(
        text(&output.stderr).contains("ask"),
        "{}",
        text(&output.stderr)
    );
    assert!(!marker.exists(), "a refused command must not run");

    let denied = nightwatch(&home, &["exec", "--", "rm", "-rf", "/"], &[]);
    assert_eq!(denied.status.code(), Some(125));
    assert!(text(&denied.stderr).contains("nightwatch: deny ("));
    assert!(
        text(&denied.stderr).contains("instead"),
        "{}",
        text(&denied.stderr)
    );
    let log = nightwatch(&home, &["log", "--verdict", "deny"], &[]);
    assert!(
        text(&log.stdout).contains("rm -rf /"),
        "{}",
        text(&log.stdout)
    );
}

#[test]
fn exec_with_a_broken_policy_runs_nothing_and_records_why() {
    let home = scratch("exec-broken-policy");
    let marker = home.join("ran");
    let policy = home.join("bad.yaml");
    std::fs::write(&policy, "version: 1\nrules: [\n").expect("write");
    let touch = format!("{}", marker.display());
    let output = nightwatch(
        &home,
        &[
            "exec",
            "--policy",
            policy.to_str().unwrap_or_default(),
            "--",
            "touch",
            &touch,
        ],
        &[],
    );
    assert_eq!(
        output.status.code(),
        Some(125),
        "not run: never a command's status"
    );
    assert!(
        text(&output.stderr).contains("nothing was run"),
        "{}",
        text(&output.stderr)
    );
    assert!(!marker.exists());
    let log = nightwatch(&home, &["log", "--json"], &[]);
    let record: serde_json::Value =
        serde_json::from_str(text(&log.stdout).lines().next().expect("one record")).expect("json");
    assert_eq!(record["verdict"], "deny");
    assert!(
        record["reasons"][0]
            .as_str()
            .unwrap_or("")
            .contains("bad.yaml"),
        "{record}"
    );
}

#[test]
fn exec_passes_the_commands_exit_status_through() {
    let home = scratch("exec-status");
    let output = nightwatch(&home, &["exec", "--", "false"], &[]);
    assert_eq!(output.status.code(), Some(1));
    let show = nightwatch(&home, &["show", "r2", "--json"], &[]);
    let record: serde_json::Value = serde_json::from_slice(&show.stdout).expect("json");
    assert_eq!(record["outputs"]["exit_code"], 1);
}

/// A command's own 2 (or 3, or 4) is its own: the statuses that once meant deny, ask and halt
/// now pass through, and only 125 means nightwatch did not run it.
#[test]
fn a_commands_own_status_is_told_apart_from_a_refusal() {
    let home = scratch("exec-own-status");
    let policy = home.join("allow-sh.yaml");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        &policy,
        "rules:\n  - id: allow-sh\n    verdict: allow\n    command: \"sh *\"\n  - id: allow-exit\n    verdict: allow\n    command: \"exit *\"\n",
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    for code in [2, 3, 4] {
        let script = format!("exit {code}");
        let output = nightwatch(
            &home,
            &["exec", "--policy", policy, "--", "sh", "-c", &script],
            &[],
        );
        assert_eq!(output.status.code(), Some(code), "{}", text(&output.stderr));
        assert!(
            !text(&output.stderr).contains("nightwatch:"),
            "{}",
            text(&output.stderr)
        );
    }
    let refused = nightwatch(&home, &["exec", "--", "rm", "-rf", "/"], &[]);
    assert_eq!(refused.status.code(), Some(125));
    let usage = nightwatch(&home, &["exec", "--no-such-flag"], &[]);
    assert_eq!(usage.status.code(), Some(125), "{}", text(&usage.stderr));
}

#[test]
fn log_since_reads_operator_times() {
    let home = scratch("log-since");
    // History as a night left it; the commands below judge at 08:00 that day.
    common::history::exec_at(&home, "2026-02-14T01:00:00Z", "uname");
    common::history::exec_at(&home, "2026-02-14T03:17:22Z", "uptime");
    let env = [("NIGHTWATCH_NOW", "2026-02-14T08:00:00Z"), ("TZ", "UTC")];
    let after_two = nightwatch(&home, &["log", "--since", "2am", "--json"], &env);
    let lines = text(&after_two.stdout);
    assert_eq!(lines.lines().count(), 1, "only the 03:17 call: {lines}");
    assert!(lines.contains("uptime") && !lines.contains("uname"));
    let recent = nightwatch(&home, &["log", "--since", "90m", "--json"], &env);
    assert_eq!(text(&recent.stdout).lines().count(), 0);
    let bad = nightwatch(&home, &["log", "--since", "soonish"], &env);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad.stderr).contains("--since"),
        "{}",
        text(&bad.stderr)
    );
    let plain = nightwatch(&home, &["log", "--since", "yesterday"], &env);
    assert!(
        text(&plain.stdout).contains("2026-02-14 03:17:22"),
        "{}",
        text(&plain.stdout)
    );
}

#[test]
fn verify_names_the_first_tampered_record() {
    let home = scratch("tamper");
    for command in ["uname", "uptime", "true"] {
        nightwatch(&home, &["exec", "--", command], &[]);
    }
    let intact = nightwatch(&home, &["verify"], &[]);
    assert_eq!(intact.status.code(), Some(0), "{}", text(&intact.stdout));

    // An attacker with the database file: drop the guard, rewrite history.
    let db = std::fs::read_dir(&home)
        .expect("data directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "db"))
        .expect("a database file");
    let connection = rusqlite::Connection::open(&db).expect("open");
    let triggers: Vec<String> = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        .and_then(|mut s| s.query_map([], |row| row.get(0))?.collect())
        .expect("triggers");
    assert!(
        !triggers.is_empty(),
        "the ledger refuses UPDATE and DELETE with triggers"
    );
    assert!(
        connection
            .execute("UPDATE records SET verdict = 'deny' WHERE seq = 3", [])
            .is_err(),
        "the triggers hold"
    );
    for trigger in triggers {
        connection
            .execute(&format!("DROP TRIGGER {trigger}"), [])
            .expect("drop");
    }
    connection
        .execute("UPDATE records SET verdict = 'deny' WHERE seq = 3", [])
        .expect("tamper");
    drop(connection);
    let tampered = nightwatch(&home, &["verify"], &[]);
    assert_eq!(tampered.status.code(), Some(1));
    assert!(
        text(&tampered.stdout).contains("r3"),
        "{}",
        text(&tampered.stdout)
    );
}

#[test]
fn install_merges_idempotently_and_backs_up_first() {
    let project = scratch("install");
    let settings = project.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().expect("parent")).expect("mkdir");
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/payloads/claude/settings-example.json"
    );
    std::fs::copy(example, &settings).expect("copy the example settings");
    let original: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("read")).expect("json");

    let dir = project.display().to_string();
    let first = nightwatch(
        &project,
        &["install", "claude", "--shared", "--project", &dir],
        &[],
    );
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let installed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("read")).expect("json");
    assert_eq!(
        installed["permissions"], original["permissions"],
        "everything else is kept"
    );
    let pre = installed["hooks"]["PreToolUse"]
        .as_array()
        .expect("PreToolUse hooks");
    let commands: Vec<String> = pre
        .iter()
        .flat_map(|group| group["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|hook| hook["command"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        commands
            .iter()
            .filter(|c| c.contains("hook claude"))
            .count(),
        1,
        "{commands:?}"
    );
    let backup = project.join(".claude/settings.json.nightwatch-backup");
    assert!(
        backup.exists(),
        "the file is backed up before it is changed"
    );

    let second = nightwatch(
        &project,
        &["install", "claude", "--shared", "--project", &dir],
        &[],
    );
    assert_eq!(second.status.code(), Some(0));
    assert!(
        text(&second.stdout).contains("nothing to change"),
        "{}",
        text(&second.stdout)
    );
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("read")).expect("json");
    assert_eq!(again, installed, "installing twice changes nothing");
}
