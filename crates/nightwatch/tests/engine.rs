//! The one engine, through the real binary: every actor's action gets the same steps after a
//! decision (tier, time of day, escalation), and what the ledger says matches what happened.
//!
//! Each test here failed before the engine existed: approvals and the circuit breaker missed
//! calls that carry a secret (they compared against the redacted record), the janitor's halts
//! reached nobody, its time-of-day rules could not tell the time, and `sweep apply --now`
//! wrote the simulated date into the ledger.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

fn run(home: &Path, policy: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut all = vec![
        ("NIGHTWATCH_HOME", home.as_os_str()),
        ("NIGHTWATCH_POLICY", policy.as_os_str()),
        ("TZ", std::ffi::OsStr::new("UTC")),
    ];
    all.extend(env.iter().map(|(k, v)| (*k, std::ffi::OsStr::new(*v))));
    common::nightwatch(args, b"", &all)
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn records(home: &Path, policy: &Path) -> Vec<Value> {
    let output = run(home, policy, &["export", "--format", "jsonl"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("export is JSON lines"))
        .collect()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

const TOKEN: &str = "Authorization: Bearer sk_live_4f9a2b7c1d8e3f6a";

/// Seed 004: a person approves one asked call. When the call carries a secret, the ledger
/// stores it redacted; the approval must still match the call the agent makes again.
#[test]
fn an_approval_matches_a_call_that_carries_a_secret() {
    let dir = common::scratch("engine", "approval-secret");
    let home = dir.join("home");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        "rules:\n  - id: ask-before-calling-the-api\n    verdict: ask\n    command: [\"true\"]\n",
    )
    .unwrap();
    let call = ["exec", "--", "true", TOKEN];
    let asked = run(&home, &policy, &call, &[]);
    assert_eq!(asked.status.code(), Some(125), "{}", text(&asked));
    assert!(
        text(&asked).contains("nightwatch: ask ("),
        "{}",
        text(&asked)
    );
    let first = records(&home, &policy);
    let decision = &first[0];
    assert_eq!(decision["verdict"], "ask");
    let stored = decision["inputs"]["command"].as_str().unwrap();
    assert!(
        !stored.contains("sk_live"),
        "the secret is redacted: {stored}"
    );

    let id = decision["id"].as_str().unwrap();
    let approved = run(&home, &policy, &["approve", id, "--by", "alice"], &[]);
    assert_eq!(approved.status.code(), Some(0), "{}", text(&approved));

    let again = run(&home, &policy, &call, &[]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let all = records(&home, &policy);
    let second = all
        .iter()
        .filter(|r| r["event"] == "decision")
        .nth(1)
        .expect("a second decision");
    assert_eq!(second["verdict"], "allow", "{second:#}");
    assert!(
        second["safeguards"]["approval"]["record"].is_string(),
        "{second:#}"
    );
    // Once: the third time asks again.
    let third = run(&home, &policy, &call, &[]);
    assert_eq!(third.status.code(), Some(125), "{}", text(&third));
    assert!(
        text(&third).contains("nightwatch: ask ("),
        "{}",
        text(&third)
    );
}

/// Seed 000's retry storm, with a token in the command: the breaker counts the failures of the
/// call as it was made, not of its redacted record.
#[test]
fn the_breaker_trips_on_a_failing_call_that_carries_a_secret() {
    let dir = common::scratch("engine", "breaker-secret");
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
    let deploy = ["exec", "--", "false", TOKEN];
    for attempt in 1..=3 {
        let failed = run(&home, &policy, &deploy, &[]);
        assert_eq!(
            failed.status.code(),
            Some(1),
            "attempt {attempt}: {}",
            text(&failed)
        );
    }
    let halted = run(&home, &policy, &deploy, &[]);
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
    // Another token is another call: not held back by the first one's failures.
    let other = run(
        &home,
        &policy,
        &[
            "exec",
            "--",
            "false",
            "Authorization: Bearer sk_live_0000000000000000",
        ],
        &[],
    );
    assert_eq!(other.status.code(), Some(1), "{}", text(&other));
}

/// A directory of agents' leftovers, one of them old enough to remove.
struct Leftovers {
    home: PathBuf,
    tmp: PathBuf,
    policy: PathBuf,
}

fn leftovers(name: &str, rules: &str) -> Leftovers {
    let dir = common::scratch("engine", name);
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(tmp.join("agent-old")).unwrap();
    let when = SystemTime::now() - Duration::from_secs(9 * 24 * 3600);
    std::fs::File::open(tmp.join("agent-old"))
        .unwrap()
        .set_modified(when)
        .unwrap();
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "sweep:\n  paths:\n    - {{ glob: \"{}/agent-*\", max_age: 5d }}\n{rules}",
            tmp.display()
        ),
    )
    .unwrap();
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    Leftovers { home, tmp, policy }
}

fn sweep(s: &Leftovers, now: Option<&str>) -> Output {
    let plan = s.home.join("plan.json");
    let plan = plan.to_str().unwrap();
    let mut args = vec!["sweep", "plan", "--out", plan];
    if let Some(now) = now {
        args.extend(["--now", now]);
    }
    let planned = run(&s.home, &s.policy, &args, &[]);
    assert_eq!(planned.status.code(), Some(0), "{}", text(&planned));
    let mut args = vec!["sweep", "apply", "--plan", plan, "--yes"];
    if let Some(now) = now {
        args.extend(["--now", now]);
    }
    run(&s.home, &s.policy, &args, &[])
}

/// A removal policy halts is escalated like any actor's halt: the notifier hears of it.
#[test]
fn a_janitor_removal_halted_by_policy_reaches_its_notifier() {
    let receiver = common::Receiver::start(&[200]);
    let s = leftovers(
        "janitor-halt",
        &format!(
            "notifiers:\n  pager:\n    webhook: {{ url: \"{}\" }}\nescalate:\n  halt: [pager]\nrules:\n  - id: hold-removals\n    verdict: halt\n    actor: {{ kind: [janitor] }}\n    tool: [remove_path]\n",
            receiver.url
        ),
    );
    let applied = sweep(&s, None);
    assert!(
        text(&applied).contains("policy says halt"),
        "{}",
        text(&applied)
    );
    assert!(s.tmp.join("agent-old").exists(), "a halt removes nothing");
    let bodies = receiver.wait_for(1, Duration::from_secs(20));
    assert_eq!(bodies.len(), 1, "the pager was told once");
    let told: Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(told["verdict"], "halt", "{told:#}");
    assert!(
        told["who"].as_str().unwrap_or_default().contains("janitor"),
        "{told:#}"
    );
}

/// A rule scoped by time of day applies to the janitor as to an agent: it can tell the time.
#[test]
fn a_time_of_day_rule_applies_to_the_janitor() {
    let night = "rules:\n  - id: removals-only-at-night\n    verdict: allow\n    actor: { kind: [janitor] }\n    time: \"01:00-05:00\"\n  - id: otherwise-hold\n    verdict: deny\n    actor: { kind: [janitor] }\n    time: \"05:00-01:00\"\n";
    let by_day = leftovers("janitor-day", night);
    let applied = sweep(&by_day, Some("12:00"));
    assert!(
        text(&applied).contains("policy says deny"),
        "{}",
        text(&applied)
    );
    assert!(by_day.tmp.join("agent-old").exists());
    let decision = records(&by_day.home, &by_day.policy)
        .into_iter()
        .find(|r| r["event"] == "decision")
        .unwrap();
    assert_eq!(decision["rule"], "otherwise-hold");

    let at_night = leftovers("janitor-night", night);
    let applied = sweep(&at_night, Some("3am"));
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied));
    assert!(
        text(&applied).contains("removed 1"),
        "at 3 AM the night rule allows it: {}",
        text(&applied)
    );
    assert!(!at_night.tmp.join("agent-old").exists());
    let decision = records(&at_night.home, &at_night.policy)
        .into_iter()
        .find(|r| r["event"] == "decision")
        .unwrap();
    assert_eq!(decision["rule"], "removals-only-at-night");
}

/// `--now` moves what is judged, never when a record says it was written: a sweep judged a week
/// ahead leaves records stamped with the real time, in order.
#[test]
fn sweep_apply_judged_in_the_future_records_the_real_time() {
    let s = leftovers(
        "janitor-future",
        "rules:\n  - id: janitor\n    verdict: allow\n    actor: { kind: [janitor] }\n",
    );
    std::fs::create_dir_all(s.tmp.join("agent-new")).unwrap();
    let before = now_ms();
    let week_ahead = jiff::Timestamp::from_millisecond(before + 7 * 24 * 3600 * 1000)
        .unwrap()
        .to_string();
    let applied = sweep(&s, Some(&week_ahead));
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied));
    // A week ahead, the new directory is old enough too.
    assert!(text(&applied).contains("removed 2"), "{}", text(&applied));
    let after = now_ms();
    let all = records(&s.home, &s.policy);
    assert!(all.len() >= 4, "{all:#?}");
    let mut last = 0;
    for record in &all {
        let at = stamped_ms(record["timestamp"].as_str().unwrap());
        assert!(
            (before - 1_000..=after + 1_000).contains(&at),
            "{} is stamped {} (real time {before}..{after})",
            record["id"],
            record["timestamp"]
        );
        assert!(at >= last, "records in order: {record:#}");
        last = at;
    }
}

fn stamped_ms(text: &str) -> i64 {
    text.parse::<jiff::Timestamp>()
        .expect("an RFC 3339 timestamp")
        .as_millisecond()
}
