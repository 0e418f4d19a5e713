//! Seed 004's and seed 000's stories against real processes, files and HTTP servers, through
//! the real binary: pre-flight checks, backups and undo, escalation, approvals.

mod common;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, SystemTime};

fn scratch(name: &str) -> PathBuf {
    common::scratch("safeguards", name)
}

/// A scratch place for one story: its data directory, a work directory the actions touch, and
/// its policy file written from `policy` (None: no file, for the built-in policy).
struct Story {
    home: PathBuf,
    work: PathBuf,
    policy: PathBuf,
}

fn story(name: &str, policy: Option<&str>) -> Story {
    let dir = scratch(name);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let policy_file = dir.join("policy.yaml");
    if let Some(text) = policy {
        std::fs::write(&policy_file, text).unwrap();
    }
    Story {
        home: dir.join("home"),
        work,
        policy: policy_file,
    }
}

/// Runs `nightwatch ARGS` in data directory `home` with policy `policy`.
fn run(home: &Path, policy: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let mut all = vec![
        ("NIGHTWATCH_HOME", home.as_os_str()),
        ("NIGHTWATCH_POLICY", policy.as_os_str()),
        ("TZ", std::ffi::OsStr::new("UTC")),
    ];
    all.extend(env.iter().map(|(k, v)| (*k, std::ffi::OsStr::new(*v))));
    common::nightwatch(args, stdin, &all)
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Claude Code's PreToolUse or PostToolUse for a Bash call.
fn bash(event: &str, session: &str, call: &str, command: &str, exit_code: Option<i64>) -> Vec<u8> {
    let mut payload = json!({
        "session_id": session,
        "cwd": "/tmp",
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": { "command": command, "description": "" },
        "tool_use_id": call,
    });
    if let Some(code) = exit_code {
        payload["tool_response"] = json!({ "stdout": "done\n", "stderr": "", "exit_code": code });
    }
    payload.to_string().into_bytes()
}

fn records(home: &Path, policy: &Path) -> Vec<Value> {
    let output = run(home, policy, &["export", "--format", "jsonl"], b"", &[]);
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("export is JSON lines"))
        .collect()
}

/// A real process whose command line contains `name`, killed when dropped.
struct Running(Child);

impl Running {
    fn start(dir: &Path, name: &str) -> Running {
        let program = dir.join(name);
        std::fs::copy("/bin/sleep", &program).expect("copy sleep");
        // A freshly written executable can be briefly busy while another test forks.
        for _ in 0..50 {
            match Command::new(&program).arg("300").spawn() {
                Ok(child) => return Running(child),
                Err(e) if e.raw_os_error() == Some(26) => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => panic!("start {name}: {e}"),
            }
        }
        panic!("{name} stayed busy");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn age(path: &Path, by: Duration) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - by).unwrap();
}

/// 23:47: an agent renewed a certificate and restarted the service, killing a migration that
/// had run since 21:00. With the pre-flight checks the restart is halted, the operator is
/// notified with who, what and why, and the ledger says what was found.
#[test]
fn restart_waits_for_running_migration() {
    let dir = scratch("migration");
    let home = dir.join("home");
    let locks = dir.join("locks");
    std::fs::create_dir_all(&locks).unwrap();
    let receiver = common::Receiver::start(&[200]);
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            r#"
checks:
  active-migration:
    process: {{ command: "*fake-migrate*", min_age: 0s }}
    on_match: halt
    message: a migration is running; restarting would kill it
  migration-lock:
    lock_file: {{ glob: "{locks}/migration_batch_*.lock", min_age: 30m }}
    on_match: halt
    message: a migration batch holds its lock
notifiers:
  oncall:
    webhook: {{ url: "{url}" }}
rules:
  - id: service-restarts
    verdict: allow
    command: ["systemctl restart *"]
    checks: [active-migration, migration-lock]
    notify: [oncall]
"#,
            locks = locks.display(),
            url = receiver.url
        ),
    )
    .unwrap();
    let migration = Running::start(&dir, "fake-migrate");
    let lock = locks.join("migration_batch_7.lock");
    std::fs::write(&lock, "pid 4242\n").unwrap();
    age(&lock, Duration::from_secs(2 * 3600 + 47 * 60));

    let restart = bash(
        "PreToolUse",
        "cert-renewal",
        "toolu_restart",
        "systemctl restart app",
        None,
    );
    let halted = run(&home, &policy, &["hook", "claude"], &restart, &[]);
    assert_eq!(halted.status.code(), Some(2), "{}", text(&halted));
    assert!(
        text(&halted).contains("a migration is running"),
        "{}",
        text(&halted)
    );

    let decision = records(&home, &policy).remove(0);
    assert_eq!(decision["verdict"], "halt");
    let checks = decision["safeguards"]["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2);
    assert!(
        checks.iter().all(|c| c["outcome"] == "matched"),
        "{checks:?}"
    );
    assert_eq!(decision["safeguards"]["notify"], json!(["oncall"]));

    // The escalation reaches the operator, and its delivery is recorded.
    let bodies = receiver.wait_for(1, Duration::from_secs(20));
    assert_eq!(bodies.len(), 1, "no escalation arrived");
    let escalation: Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(escalation["verdict"], "halt");
    assert!(escalation["who"].as_str().unwrap().contains("claude-code"));
    assert!(
        escalation["what"]
            .as_str()
            .unwrap()
            .contains("systemctl restart app")
    );
    assert!(escalation["why"].as_str().unwrap().contains("migration"));
    assert_eq!(escalation["inspect"], "nightwatch show r1");
    let mut notified = false;
    for _ in 0..100 {
        notified = records(&home, &policy)
            .iter()
            .any(|r| r["event"] == "notification" && r["outputs"]["exit_code"] == 0);
        if notified {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(notified, "the delivery was not recorded");

    // Once the migration has finished, the same restart goes through, and says what was clear.
    drop(migration);
    std::fs::remove_file(&lock).unwrap();
    let again = bash(
        "PreToolUse",
        "cert-renewal",
        "toolu_restart_2",
        "systemctl restart app",
        None,
    );
    let allowed = run(&home, &policy, &["hook", "claude"], &again, &[]);
    assert_eq!(allowed.status.code(), Some(0), "{}", text(&allowed));
    let log = text(&run(
        &home,
        &policy,
        &["log", "--session", "cert-renewal"],
        b"",
        &[],
    ));
    assert!(log.contains("checked active-migration: FOUND"), "{log}");
    assert!(log.contains("checked active-migration: clear"), "{log}");
    assert!(log.contains("checked migration-lock: clear"), "{log}");
}

/// 03:17: an agent cleaned the journal and fixed a disk alert in four minutes with a clean log.
/// The same session, replayed through the hooks, reads as a runbook: what was checked, found,
/// done and verified.
#[test]
fn three_am_journal_cleanup_reads_as_a_runbook() {
    let dir = scratch("journal");
    let home = dir.join("home");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        r#"
checks:
  active-migration:
    process: { command: "*fake-migrate-never*", min_age: 0s }
rules:
  - id: inspect-disk
    verdict: allow
    command: ["df *", "du *"]
  - id: vacuum-journal
    verdict: allow
    command: ["journalctl --vacuum-time=*"]
    checks: [active-migration]
"#,
    )
    .unwrap();
    let env = [
        ("NIGHTWATCH_TRIGGERED_BY", "alert"),
        ("NIGHTWATCH_ALERT_ID", "disk-full-web-1"),
    ];
    let steps: [(&str, &str, &str, Option<i64>); 6] = [
        ("PreToolUse", "toolu_1", "df -h /var", None),
        ("PostToolUse", "toolu_1", "df -h /var", Some(0)),
        ("PreToolUse", "toolu_2", "journalctl --vacuum-time=7d", None),
        (
            "PostToolUse",
            "toolu_2",
            "journalctl --vacuum-time=7d",
            Some(0),
        ),
        ("PreToolUse", "toolu_3", "df -h /var", None),
        ("PostToolUse", "toolu_3", "df -h /var", Some(0)),
    ];
    for (minute, (event, call, command, code)) in steps.into_iter().enumerate() {
        let now = format!("2026-02-14T03:{:02}:22Z", 17 + minute);
        let mut env = env.to_vec();
        env.push(("NIGHTWATCH_NOW", &now));
        let payload = bash(event, "night-shift", call, command, code);
        let output = run(&home, &policy, &["hook", "claude"], &payload, &env);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{event} {command}: {}",
            text(&output)
        );
    }
    let log = text(&run(
        &home,
        &policy,
        &["log", "--session", "night-shift"],
        b"",
        &[],
    ));
    // Each record's line starts with the time it was written (the real time: the steps above
    // judge at 03:17 to 03:22, which no record claims).
    let expected_order = [
        "triggered by alert (alert disk-full-web-1)",
        "     r1  allow df -h /var",
        "r2  ran   df -h /var: ok",
        "r3  allow journalctl --vacuum-time=7d",
        "checked active-migration: clear",
        "r4  ran   journalctl --vacuum-time=7d: ok",
        "r5  allow df -h /var",
        "     r6  ran   df -h /var: ok",
    ];
    let mut from = 0;
    for expected in expected_order {
        let found = log[from..]
            .find(expected)
            .unwrap_or_else(|| panic!("{expected:?} not found in order in:\n{log}"));
        if let Some(step) = expected.strip_prefix("     ") {
            let time = log[..from + found].rsplit('\n').next().unwrap_or_default();
            let written = jiff::civil::DateTime::strptime("%Y-%m-%d %H:%M:%S", time.trim())
                .map(|_| ())
                .or_else(|_| jiff::civil::Time::strptime("%H:%M:%S", time.trim()).map(|_| ()));
            assert!(
                written.is_ok(),
                "{step:?} is not led by the time it was written: {time:?} in:\n{log}"
            );
        }
        from += found + expected.len();
    }
}

/// Seed 000: one app retried a failing deploy 6,483 times in 24 hours. The circuit breaker
/// halts the same actor's same failing action after N failures instead of letting it retry.
#[test]
fn retry_storm_is_halted_after_three_failures() {
    let dir = scratch("retry");
    let home = dir.join("home");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        r#"
checks:
  retry-storm:
    circuit_breaker: { failures: 3, within: 10m }
    on_match: halt
    message: this has failed three times in ten minutes; stop retrying and look
always_check: [retry-storm]
rules:
  - id: deploys
    verdict: allow
    command: ["false", "true"]
"#,
    )
    .unwrap();
    let deploy = ["exec", "--session", "deploys", "--", "false"];
    for attempt in 1..=3 {
        let failed = run(&home, &policy, &deploy, b"", &[]);
        assert_eq!(
            failed.status.code(),
            Some(1),
            "attempt {attempt}: {}",
            text(&failed)
        );
    }
    let halted = run(&home, &policy, &deploy, b"", &[]);
    assert_eq!(halted.status.code(), Some(125), "{}", text(&halted));
    assert!(
        text(&halted).contains("nightwatch: halt ("),
        "{}",
        text(&halted)
    );
    assert!(
        text(&halted).contains("failed three times"),
        "{}",
        text(&halted)
    );
    // A different action by the same actor is not held back by the first one's failures.
    let other = run(&home, &policy, &["exec", "--", "true"], b"", &[]);
    assert_eq!(other.status.code(), Some(0), "{}", text(&other));
    let all = records(&home, &policy);
    let results = all.iter().filter(|r| r["event"] == "result").count();
    assert_eq!(results, 4, "the halted attempt never ran");
}

/// "Build the backup step into the agent's workflow before the write": an agent's edit to a
/// config file is undone byte for byte; a later change makes undo refuse unless forced.
#[test]
fn config_edit_is_undone_exactly() {
    let dir = scratch("undo-edit");
    let home = dir.join("home");
    let config = dir.join("etc/worker.yaml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let original = "log_level: debug\nworkers: 4\n# keep this comment\n";
    std::fs::write(&config, original).unwrap();
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "rules:\n  - id: people-undo\n    verdict: allow\n    actor: {{ kind: [human] }}\n    tool: undo\n  - id: config-edits\n    verdict: allow\n    tool: [edit]\n    paths: [\"{}/etc/**\"]\n",
            dir.display()
        ),
    )
    .unwrap();
    let edit = |event: &str| {
        json!({
            "session_id": "tuning",
            "cwd": dir,
            "hook_event_name": event,
            "tool_name": "Edit",
            "tool_input": {
                "file_path": config,
                "old_string": "log_level: debug",
                "new_string": "log_level: info",
            },
            "tool_response": { "filePath": config },
            "tool_use_id": "toolu_edit",
        })
        .to_string()
        .into_bytes()
    };
    let before = run(
        &home,
        &policy,
        &["hook", "claude"],
        &edit("PreToolUse"),
        &[],
    );
    assert_eq!(before.status.code(), Some(0), "{}", text(&before));
    std::fs::write(&config, original.replace("debug", "info")).unwrap();
    let after = run(
        &home,
        &policy,
        &["hook", "claude"],
        &edit("PostToolUse"),
        &[],
    );
    assert_eq!(after.status.code(), Some(0), "{}", text(&after));

    // Someone edits it again: undo must not silently throw that away.
    std::fs::write(&config, "log_level: warn\n").unwrap();
    let refused = run(&home, &policy, &["undo", "r1"], b"", &[]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("changed since the action"),
        "{}",
        text(&refused)
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "log_level: warn\n"
    );

    let forced = run(
        &home,
        &policy,
        &["undo", "r1", "--force", "--by", "dana"],
        b"",
        &[],
    );
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original);
    let all = records(&home, &policy);
    let undos: Vec<&Value> = all.iter().filter(|r| r["event"] == "undo").collect();
    assert_eq!(undos.len(), 2, "the refusal and the undo are both recorded");
    assert_eq!(undos[0]["outputs"]["exit_code"], 1);
    assert_eq!(undos[1]["outputs"]["exit_code"], 0);
    assert_eq!(undos[1]["actor"], json!({"kind": "human", "id": "dana"}));
    let verify = run(&home, &policy, &["verify"], b"", &[]);
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));
}

/// Deleted, moved and created files, through `nightwatch exec`, undone as a session.
#[test]
fn a_session_of_deletes_moves_and_creates_is_undone() {
    let Story { home, work, policy } = story(
        "undo-session",
        Some(
            "rules:\n  - id: people-undo\n    verdict: allow\n    actor: { kind: [human] }\n    tool: undo\n  - id: files\n    verdict: allow\n    command: [\"rm *\", \"mv *\", \"touch *\"]\n",
        ),
    );
    std::fs::write(work.join("old.log"), "line 1\nline 2\n").unwrap();
    std::fs::write(work.join("a.conf"), "a = 1\n").unwrap();
    let path = |name: &str| work.join(name).display().to_string();
    let session = ["exec", "--session", "tidy", "--"];
    for command in [
        vec!["rm", &path("old.log")],
        vec!["mv", &path("a.conf"), &path("b.conf")],
        vec!["touch", &path("new.txt")],
    ] {
        let args: Vec<&str> = session
            .iter()
            .copied()
            .chain(command.iter().map(|s| s.as_ref()))
            .collect();
        let done = run(&home, &policy, &args, b"", &[]);
        assert_eq!(done.status.code(), Some(0), "{command:?}: {}", text(&done));
    }
    assert!(!work.join("old.log").exists() && work.join("b.conf").exists());
    assert!(work.join("new.txt").exists());

    let undone = run(&home, &policy, &["undo", "--session", "tidy"], b"", &[]);
    assert_eq!(undone.status.code(), Some(0), "{}", text(&undone));
    assert_eq!(
        std::fs::read_to_string(work.join("old.log")).unwrap(),
        "line 1\nline 2\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("a.conf")).unwrap(),
        "a = 1\n"
    );
    assert!(
        !work.join("b.conf").exists(),
        "the moved-to file is gone again"
    );
    assert!(
        !work.join("new.txt").exists(),
        "the created file is gone again"
    );
    // Undoing the session again finds nothing left to undo.
    let again = run(&home, &policy, &["undo", "--session", "tidy"], b"", &[]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(text(&again).contains("nothing to undo"), "{}", text(&again));
}

/// An ask that a human approved lets that exact call through once; another call, a second
/// try, or a rejected one does not get through on it.
#[test]
fn an_approved_ask_goes_through_once() {
    let dir = scratch("approve");
    let home = dir.join("home");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        "rules:\n  - id: restarts-need-a-human\n    verdict: ask\n    command: [\"sh -c *\"]\n",
    )
    .unwrap();
    let call = ["exec", "--", "sh", "-c", "echo restarted"];
    let asked = run(&home, &policy, &call, b"", &[]);
    assert_eq!(asked.status.code(), Some(125), "{}", text(&asked));
    assert!(
        text(&asked).contains("nightwatch: ask ("),
        "{}",
        text(&asked)
    );
    // A halt or a result cannot be approved; an ask can.
    let approve = run(
        &home,
        &policy,
        &["approve", "r1", "--for", "10m", "--by", "sam"],
        b"",
        &[],
    );
    assert_eq!(approve.status.code(), Some(0), "{}", text(&approve));
    let other = run(
        &home,
        &policy,
        &["exec", "--", "sh", "-c", "echo other"],
        b"",
        &[],
    );
    assert_eq!(
        other.status.code(),
        Some(125),
        "a different call is not approved"
    );
    let through = run(&home, &policy, &call, b"", &[]);
    assert_eq!(through.status.code(), Some(0), "{}", text(&through));
    assert!(text(&through).contains("restarted"));
    let once_only = run(&home, &policy, &call, b"", &[]);
    assert_eq!(once_only.status.code(), Some(125), "{}", text(&once_only));

    let id = records(&home, &policy).last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        run(&home, &policy, &["approve", &id], b"", &[])
            .status
            .success()
    );
    assert!(
        run(
            &home,
            &policy,
            &["reject", &id, "--why", "not tonight"],
            b"",
            &[]
        )
        .status
        .success()
    );
    let rejected = run(&home, &policy, &call, b"", &[]);
    assert_eq!(
        rejected.status.code(),
        Some(125),
        "a rejection voids the approval"
    );

    let all = records(&home, &policy);
    let approved_decision = all
        .iter()
        .find(|r| r["event"] == "decision" && r["verdict"] == "allow")
        .unwrap();
    assert_eq!(approved_decision["safeguards"]["approval"]["by"], "sam");
    let not_an_ask = run(&home, &policy, &["approve", "r2"], b"", &[]);
    assert_eq!(not_an_ask.status.code(), Some(1), "{}", text(&not_an_ask));
}

/// Delivery failures are retried with backoff and recorded; nothing is dropped silently.
#[test]
fn a_failing_notifier_is_retried_and_every_attempt_recorded() {
    let dir = scratch("retry-notify");
    let home = dir.join("home");
    let receiver = common::Receiver::start(&[500, 503, 200]);
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            r#"
notifiers:
  oncall:
    webhook: {{ url: "{}" }}
    retry: {{ attempts: 4, initial: 50ms, max: 200ms }}
  nowhere:
    webhook: {{ url: "http://127.0.0.1:9/closed" }}
    retry: {{ attempts: 2, initial: 10ms, max: 10ms }}
escalate:
  ask: [oncall, nowhere]
rules:
  - id: anything-asks
    verdict: ask
    command: ["*"]
"#,
            receiver.url
        ),
    )
    .unwrap();
    let asked = run(&home, &policy, &["exec", "--", "true"], b"", &[]);
    assert_eq!(asked.status.code(), Some(125), "{}", text(&asked));
    assert!(
        text(&asked).contains("nightwatch: ask ("),
        "{}",
        text(&asked)
    );
    // Delivered by the background escalation, or by hand: run it by hand and check both.
    let escalated = run(&home, &policy, &["escalate", "r1"], b"", &[]);
    assert_eq!(
        escalated.status.code(),
        Some(1),
        "one notifier cannot be reached: {}",
        text(&escalated)
    );
    let all = records(&home, &policy);
    let notifications: Vec<&Value> = all
        .iter()
        .filter(|r| r["event"] == "notification")
        .collect();
    assert!(notifications.len() >= 2, "{notifications:?}");
    let to_nowhere = notifications
        .iter()
        .find(|n| n["inputs"]["notifier"] == "nowhere")
        .unwrap();
    assert_eq!(to_nowhere["outputs"]["exit_code"], 1);
    assert_eq!(
        to_nowhere["safeguards"]["delivery"]["attempts"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let delivered = notifications
        .iter()
        .find(|n| n["inputs"]["notifier"] == "oncall" && n["outputs"]["exit_code"] == 0)
        .expect("oncall got it in the end");
    let attempts = delivered["safeguards"]["delivery"]["attempts"]
        .as_array()
        .unwrap();
    assert!(!attempts.is_empty());
    let bodies = receiver.wait_for(3, Duration::from_secs(10));
    assert!(
        bodies.len() >= 3,
        "500 and 503 were retried: {}",
        bodies.len()
    );
    let escalation: Value = serde_json::from_str(bodies.last().unwrap()).unwrap();
    assert_eq!(escalation["approve"], "nightwatch approve r1");
}

/// Retention removes old backups but keeps the one an undo would need next (the latest of every
/// path), and says what it removed and what it kept; an undo of a pruned backup says so.
#[test]
fn retention_keeps_the_latest_backup_of_every_path() {
    let Story { home, work, policy } = story(
        "retention",
        Some(
            "backup:\n  retention: { keep_days: 30 }\nrules:\n  - id: people-undo\n    verdict: allow\n    actor: { kind: [human] }\n    tool: undo\n  - id: files\n    verdict: allow\n    command: [\"touch *\"]\n",
        ),
    );
    let a = work.join("a.txt").display().to_string();
    let b = work.join("b.txt").display().to_string();
    std::fs::write(&a, "a1").unwrap();
    std::fs::write(&b, "b1").unwrap();
    for (day, path) in [(1, &a), (2, &b), (3, &a)] {
        std::fs::write(path, format!("{path} before day {day}")).unwrap();
        let done = run(&home, &policy, &["exec", "--", "touch", path], b"", &[]);
        assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    }
    // Judged 50 days on, every backup is past `keep_days: 30`.
    let later = "+50d";
    let pruned = run(
        &home,
        &policy,
        &["backups", "prune"],
        b"",
        &[("NIGHTWATCH_NOW", later)],
    );
    assert_eq!(pruned.status.code(), Some(0), "{}", text(&pruned));
    assert!(
        text(&pruned).contains("removed 1 backup(s)"),
        "{}",
        text(&pruned)
    );
    assert!(text(&pruned).contains("kept 2"), "{}", text(&pruned));
    let all = records(&home, &policy);
    let record = all
        .iter()
        .find(|r| r["event"] == "backup-pruned")
        .expect("recorded");
    assert_eq!(record["safeguards"]["removed"].as_array().unwrap().len(), 1);
    // The first touch of a.txt lost its backup; its undo says it was pruned.
    let first = all.iter().find(|r| r["event"] == "decision").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let undo = run(
        &home,
        &policy,
        &["undo", &first, "--force"],
        b"",
        &[("NIGHTWATCH_NOW", later)],
    );
    assert_eq!(undo.status.code(), Some(1), "{}", text(&undo));
    assert!(text(&undo).contains("pruned"), "{}", text(&undo));
    // The latest backup of each path still restores.
    let last = all.iter().rev().find(|r| r["event"] == "decision").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let undo = run(
        &home,
        &policy,
        &["undo", &last],
        b"",
        &[("NIGHTWATCH_NOW", later)],
    );
    assert_eq!(undo.status.code(), Some(0), "{}", text(&undo));
    assert_eq!(
        std::fs::read_to_string(&a).unwrap(),
        format!("{a} before day 3")
    );
}

/// "Start more restrictive than you think you need": an agent starts in the lowest tier, and a
/// human's `trust set` (recorded) is what lets tier-scoped rules treat it differently.
#[test]
fn a_trust_placement_changes_what_tier_scoped_rules_allow() {
    let dir = scratch("tiers");
    let home = dir.join("home");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        r#"
trust: { tiers: [observe, prod], default: observe }
rules:
  - id: database-restarts
    verdict: allow
    command: ["systemctl restart postgresql"]
  - id: not-below-prod
    verdict: deny
    reason: database restarts are for agents trusted with production
    command: ["systemctl restart postgresql"]
    tier: [observe]
"#,
    )
    .unwrap();
    let restart = |call: &str| {
        bash(
            "PreToolUse",
            "db",
            call,
            "systemctl restart postgresql",
            None,
        )
    };
    let before = run(
        &home,
        &policy,
        &["hook", "claude"],
        &restart("toolu_1"),
        &[],
    );
    assert_eq!(before.status.code(), Some(2), "{}", text(&before));
    assert!(
        text(&before).contains("trusted with production"),
        "{}",
        text(&before)
    );
    let placed = run(
        &home,
        &policy,
        &[
            "trust",
            "set",
            "claude-code",
            "prod",
            "--why",
            "a month without a denial",
            "--by",
            "ops-lead",
        ],
        b"",
        &[],
    );
    assert_eq!(placed.status.code(), Some(0), "{}", text(&placed));
    let after = run(
        &home,
        &policy,
        &["hook", "claude"],
        &restart("toolu_2"),
        &[],
    );
    assert_eq!(after.status.code(), Some(0), "{}", text(&after));
}

/// An undo is a person's action through the same pipeline: a policy without a rule for it asks,
/// so nothing is restored, and the refusal is on record.
#[test]
fn an_undo_that_policy_does_not_allow_restores_nothing() {
    let Story { home, work, policy } = story(
        "undo-forbidden",
        Some("rules:\n  - id: files\n    verdict: allow\n    command: [\"rm *\"]\n"),
    );
    let file = work.join("notes.txt");
    std::fs::write(&file, "keep me\n").unwrap();
    let removed = run(
        &home,
        &policy,
        &["exec", "--", "rm", file.to_str().unwrap()],
        b"",
        &[],
    );
    assert_eq!(removed.status.code(), Some(0), "{}", text(&removed));
    let undo = run(&home, &policy, &["undo", "r1"], b"", &[]);
    assert_eq!(undo.status.code(), Some(1), "{}", text(&undo));
    assert!(text(&undo).contains("policy says ask"), "{}", text(&undo));
    assert!(!file.exists(), "nothing was restored");
    let all = records(&home, &policy);
    let asked = all
        .iter()
        .find(|r| r["event"] == "decision" && r["tool"] == "undo")
        .expect("the undo's decision is recorded");
    assert_eq!(asked["verdict"], "ask");
    assert_eq!(asked["actor"]["kind"], "human");
    assert!(
        all.iter().all(|r| r["event"] != "undo"),
        "no restore happened"
    );
}

/// Runs `nightwatch ARGS` in data directory `home` under the built-in policy.
fn run_builtin(home: &Path, args: &[&str], stdin: &[u8]) -> Output {
    common::nightwatch(
        args,
        stdin,
        &[
            ("NIGHTWATCH_HOME", home.as_os_str()),
            ("TZ", std::ffi::OsStr::new("UTC")),
        ],
    )
}

/// Claude Code's PreToolUse or PostToolUse for a Write of `content` to `file`.
fn claude_write(event: &str, cwd: &Path, file: &Path, content: &str) -> Vec<u8> {
    json!({
        "session_id": "writer",
        "cwd": cwd,
        "hook_event_name": event,
        "tool_name": "Write",
        "tool_input": { "file_path": file, "content": content },
        "tool_response": { "filePath": file, "type": "update" },
        "tool_use_id": "toolu_write",
    })
    .to_string()
    .into_bytes()
}

/// Issue 15's first trap: the built-in policy asks about every Write, Claude's own prompt lets
/// it through, and undo used to say "it was not allowed, so it changed nothing" while the
/// next record said it ran. An asked call is backed up like an allowed one, and undone.
#[test]
fn an_asked_write_the_agent_carried_out_is_undone_under_the_builtin_policy() {
    let Story { home, work, .. } = story("undo-asked-write", None);
    let file = work.join("app.conf");
    std::fs::write(&file, "port = 8080\n").unwrap();

    let before = run_builtin(
        &home,
        &["hook", "claude"],
        &claude_write("PreToolUse", &work, &file, "port = 9090\n"),
    );
    assert_eq!(before.status.code(), Some(0), "{}", text(&before));
    let reply: Value = serde_json::from_slice(&before.stdout).expect("the hook replies JSON");
    assert_eq!(
        reply["hookSpecificOutput"]["permissionDecision"], "ask",
        "the built-in policy asks about a Write: {reply}"
    );
    // The person answers Claude's prompt with yes: the write happens.
    std::fs::write(&file, "port = 9090\n").unwrap();
    let after = run_builtin(
        &home,
        &["hook", "claude"],
        &claude_write("PostToolUse", &work, &file, "port = 9090\n"),
    );
    assert_eq!(after.status.code(), Some(0), "{}", text(&after));

    let undo = run_builtin(&home, &["undo", "r1"], b"");
    assert_eq!(undo.status.code(), Some(0), "{}", text(&undo));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "port = 8080\n");
}

/// Undo's messages are true: a refused call changed nothing and undo says it was refused; a
/// restore that would overwrite a later change names the flag that does it anyway.
#[test]
fn undo_says_truly_why_it_cannot_and_names_force() {
    let Story { home, work, policy } = story(
        "undo-messages",
        Some(
            "rules:\n  - id: people-undo\n    verdict: allow\n    actor: { kind: [human] }\n    tool: undo\n  - id: no-rm\n    verdict: deny\n    command: [\"rm *\"]\n  - id: touch\n    verdict: allow\n    command: [\"touch *\"]\n",
        ),
    );
    let file = work.join("kept.txt");
    std::fs::write(&file, "kept\n").unwrap();
    let refused = run(
        &home,
        &policy,
        &["exec", "--", "rm", file.to_str().unwrap()],
        b"",
        &[],
    );
    assert_ne!(refused.status.code(), Some(0), "{}", text(&refused));
    let undo = run(&home, &policy, &["undo", "r1"], b"", &[]);
    assert_eq!(undo.status.code(), Some(1), "{}", text(&undo));
    assert!(text(&undo).contains("refused (deny)"), "{}", text(&undo));
    assert!(!text(&undo).contains("not allowed"), "{}", text(&undo));

    let touched = work.join("new.txt");
    let made = run(
        &home,
        &policy,
        &["exec", "--", "touch", touched.to_str().unwrap()],
        b"",
        &[],
    );
    assert_eq!(made.status.code(), Some(0), "{}", text(&made));
    let decision = records(&home, &policy)
        .into_iter()
        .rfind(|r| r["event"] == "decision" && r["verdict"] == "allow")
        .expect("the touch's decision")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(&touched, "written later\n").unwrap();
    let undo = run(&home, &policy, &["undo", &decision], b"", &[]);
    assert_eq!(undo.status.code(), Some(1), "{}", text(&undo));
    assert!(
        text(&undo).contains(&format!("nightwatch undo {decision} --force")),
        "{}",
        text(&undo)
    );
    assert!(touched.exists(), "nothing was restored");
}
