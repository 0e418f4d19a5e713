//! The janitor through the real binary: `sweep plan`, `sweep apply --plan`, `why`, on real
//! temporary directories. Every keep and every removal is recorded with its reason.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

fn run(home: &Path, policy: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nightwatch"))
        .args(args)
        .env("NIGHTWATCH_HOME", home)
        .env("NIGHTWATCH_POLICY", policy)
        .env_remove("NIGHTWATCH_NOW")
        .output()
        .expect("nightwatch runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn aged(path: &Path, days: u64) {
    let when = SystemTime::now() - Duration::from_secs(days * 24 * 3600);
    std::fs::File::open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

struct Setup {
    home: PathBuf,
    tmp: PathBuf,
    policy: PathBuf,
}

fn setup(name: &str, extra_rules: &str) -> Setup {
    let dir = common::scratch("sweep", name);
    let tmp = dir.join("tmp");
    for agent in ["agent-old", "agent-new", "agent-pinned"] {
        std::fs::create_dir_all(tmp.join(agent)).unwrap();
    }
    std::fs::write(tmp.join("agent-old/out.log"), "done\n").unwrap();
    std::fs::write(tmp.join("agent-pinned/.nightwatch-keep"), "").unwrap();
    for path in [
        "agent-old/out.log",
        "agent-old",
        "agent-pinned/.nightwatch-keep",
        "agent-pinned",
    ] {
        aged(&tmp.join(path), 9);
    }
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "sweep:\n  paths:\n    - {{ glob: \"{}/agent-*\", max_age: 5d }}\nrules:\n{extra_rules}  - id: janitor\n    verdict: allow\n    actor: {{ kind: [janitor] }}\n",
            tmp.display()
        ),
    )
    .unwrap();
    Setup {
        home: dir.join("home"),
        tmp,
        policy,
    }
}

#[test]
fn anything_untouched_for_five_days_goes_unless_it_is_pinned() {
    let s = setup("rules", "");
    let plan_file = s.home.join("plan.json");
    std::fs::create_dir_all(&s.home).unwrap();
    let plan = run(
        &s.home,
        &s.policy,
        &["sweep", "plan", "--out", plan_file.to_str().unwrap()],
    );
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    let shown = text(&plan);
    assert!(
        shown.contains("REMOVE  path      ") && shown.contains("agent-old"),
        "{shown}"
    );
    assert!(shown.contains("contains .nightwatch-keep"), "{shown}");
    assert!(shown.contains("1 to remove, 2 to keep"), "{shown}");

    // Dry run by default: nothing goes without --yes.
    let dry = run(
        &s.home,
        &s.policy,
        &["sweep", "apply", "--plan", plan_file.to_str().unwrap()],
    );
    assert!(text(&dry).contains("dry run"), "{}", text(&dry));
    assert!(s.tmp.join("agent-old").exists());

    let applied = run(
        &s.home,
        &s.policy,
        &[
            "sweep",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--yes",
        ],
    );
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied));
    assert!(
        text(&applied).contains("kept 2, removed 1, failed 0"),
        "{}",
        text(&applied)
    );
    assert!(!s.tmp.join("agent-old").exists());
    assert!(s.tmp.join("agent-new").exists() && s.tmp.join("agent-pinned").exists());

    let why = run(
        &s.home,
        &s.policy,
        &["why", s.tmp.join("agent-pinned").to_str().unwrap()],
    );
    assert!(
        text(&why).contains("kept") && text(&why).contains(".nightwatch-keep"),
        "{}",
        text(&why)
    );
    let why = run(
        &s.home,
        &s.policy,
        &["why", s.tmp.join("agent-old").to_str().unwrap()],
    );
    assert!(
        text(&why).contains("removal allow") && text(&why).contains("removed"),
        "{}",
        text(&why)
    );
    let verify = run(&s.home, &s.policy, &["verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));
}

#[test]
fn what_changed_between_plan_and_apply_is_left_alone() {
    let s = setup("changed", "");
    std::fs::create_dir_all(&s.home).unwrap();
    let plan_file = s.home.join("plan.json");
    run(
        &s.home,
        &s.policy,
        &["sweep", "plan", "--out", plan_file.to_str().unwrap()],
    );
    // Someone writes into it after the plan: it is no longer the thing that was planned.
    std::fs::write(s.tmp.join("agent-old/fresh.txt"), "still working\n").unwrap();
    let applied = run(
        &s.home,
        &s.policy,
        &[
            "sweep",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--yes",
        ],
    );
    assert!(
        s.tmp.join("agent-old/fresh.txt").exists(),
        "{}",
        text(&applied)
    );
    assert!(text(&applied).contains("removed 0"), "{}", text(&applied));
}

#[test]
fn policy_can_forbid_the_janitor_and_the_refusal_is_recorded() {
    let forbid = "  - id: not-the-old-one\n    verdict: deny\n    actor: { kind: [janitor] }\n    tool: [remove_path]\n";
    let s = setup("forbidden", forbid);
    std::fs::create_dir_all(&s.home).unwrap();
    let plan_file = s.home.join("plan.json");
    run(
        &s.home,
        &s.policy,
        &["sweep", "plan", "--out", plan_file.to_str().unwrap()],
    );
    let applied = run(
        &s.home,
        &s.policy,
        &[
            "sweep",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--yes",
        ],
    );
    assert!(s.tmp.join("agent-old").exists());
    assert!(text(&applied).contains("refused"), "{}", text(&applied));
    let why = run(
        &s.home,
        &s.policy,
        &["why", s.tmp.join("agent-old").to_str().unwrap()],
    );
    assert!(text(&why).contains("removal deny"), "{}", text(&why));
    assert!(text(&why).contains("not-the-old-one"), "{}", text(&why));
}

#[test]
fn now_evaluates_ages_as_of_another_time() {
    let s = setup("now", "");
    std::fs::create_dir_all(&s.home).unwrap();
    let in_six_days = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(6 * 24);
    let later_ok = run(
        &s.home,
        &s.policy,
        &["sweep", "plan", "--now", &in_six_days.to_string()],
    );
    assert!(
        text(&later_ok).contains("2 to remove"),
        "{}",
        text(&later_ok)
    );
}
