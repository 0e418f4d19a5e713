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
    let shown = text(&later_ok);
    for path in ["agent-new", "agent-old"] {
        let line = shown
            .lines()
            .find(|l| l.ends_with(path))
            .unwrap_or_default();
        assert!(line.starts_with("REMOVE"), "{path} six days on: {shown}");
    }
    let pinned = shown
        .lines()
        .find(|l| l.ends_with("agent-pinned"))
        .unwrap_or_default();
    assert!(pinned.starts_with("keep"), "{shown}");
}

// ---------------------------------------------------------------------------------------------
// Real Docker Engine and real git worktrees. The sweep sees the whole host, so every apply
// here runs a plan cut down to the test's own items: nothing else on the machine is touched.
// ---------------------------------------------------------------------------------------------

use common::docker::{Containers, IMAGE, image, sh};

/// The plan written to `out`, keeping only entries whose id is in `ids` (or whose path or
/// branch is under `prefix`).
fn cut_plan(plan: &Path, keep: impl Fn(&serde_json::Value) -> bool) {
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(plan).unwrap()).unwrap();
    let entries = value["entries"].as_array().unwrap().clone();
    value["entries"] = entries.into_iter().filter(|e| keep(e)).collect();
    std::fs::write(plan, value.to_string()).unwrap();
}

fn entry<'a>(plan: &'a serde_json::Value, id_part: &str) -> &'a serde_json::Value {
    plan["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"].as_str().unwrap().contains(id_part))
        .unwrap_or_else(|| panic!("{id_part} not in the plan"))
}

#[test]
fn containers_idle_five_days_go_crash_loops_by_age_labels_stay_and_changed_ones_are_left() {
    image();
    let dir = common::scratch("sweep", "docker");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let policy = dir.join("policy.yaml");
    let run_id = format!("sweep-{}", std::process::id());
    // This test's containers are in scope by their label; nothing else on the host is.
    std::fs::write(
        &policy,
        format!(
            "sweep:\n  containers:\n    scope: {{ labels: [\"nightwatch.test={run_id}\"] }}\nrules:\n  - id: janitor\n    verdict: allow\n    actor: {{ kind: [janitor] }}\n"
        ),
    )
    .unwrap();
    let box_ = Containers(run_id.clone());
    let idle = box_.run(&[IMAGE, "sh", "-c", "exit 0"]);
    let pinned = box_.run(&[
        "--label",
        "nightwatch.keep=true",
        IMAGE,
        "sh",
        "-c",
        "exit 0",
    ]);
    let looping = box_.run(&["--restart", "always", IMAGE, "sh", "-c", "exit 1"]);
    let changed = box_.run(&[IMAGE, "sh", "-c", "exit 0"]);
    // A loop is three restarts; on a busy machine each start takes a while.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while sh(
        "docker",
        &["inspect", "-f", "{{.RestartCount}}", &looping],
        None,
    )
    .parse::<u32>()
    .unwrap_or(0)
        < 3
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the loop never restarted 3 times"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    let ours = [&idle, &pinned, &looping, &changed];

    let now = (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(6 * 24)).to_string();
    let plan_file = dir.join("plan.json");
    let planned = run(
        &home,
        &policy,
        &[
            "sweep",
            "plan",
            "--now",
            &now,
            "--out",
            plan_file.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(planned.status.code().is_some(), "{}", text(&planned));
    cut_plan(&plan_file, |e| ours.iter().any(|id| e["id"] == ***id));
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan_file).unwrap()).unwrap();
    assert_eq!(entry(&plan, &idle)["decision"], "remove", "{plan}");
    assert_eq!(entry(&plan, &pinned)["decision"], "keep", "{plan}");
    assert!(
        entry(&plan, &pinned)["reasons"]
            .to_string()
            .contains("nightwatch.keep")
    );
    assert_eq!(entry(&plan, &looping)["decision"], "remove", "{plan}");
    assert!(
        entry(&plan, &looping)["reasons"]
            .to_string()
            .contains("creat"),
        "a restart loop is aged from its creation: {}",
        entry(&plan, &looping)["reasons"]
    );

    // Between plan and apply, one of them is used again.
    sh("docker", &["start", &changed], None);
    let applied = run(
        &home,
        &policy,
        &[
            "sweep",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--yes",
            "--now",
            &now,
        ],
    );
    let gone = |id: &str| {
        !Command::new("docker")
            .args(["inspect", id])
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(gone(&idle), "{}", text(&applied));
    assert!(gone(&looping), "{}", text(&applied));
    assert!(!gone(&pinned), "{}", text(&applied));
    assert!(
        !gone(&changed),
        "changed since the plan: {}",
        text(&applied)
    );
    assert!(text(&applied).contains("changed"), "{}", text(&applied));
}

#[test]
fn a_finished_worktree_goes_with_its_branch_and_unfinished_ones_stay() {
    let dir = common::scratch("sweep", "git");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    sh("git", &["init", "-q", "-b", "main"], Some(&repo));
    std::fs::write(repo.join("app.txt"), "v1\n").unwrap();
    sh("git", &["add", "."], Some(&repo));
    sh("git", &["commit", "-qm", "first"], Some(&repo));
    let mut paths = Vec::new();
    for name in ["merged", "dirty", "locked"] {
        let path = dir.join(format!("wt-{name}"));
        sh(
            "git",
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("feat-{name}"),
                path.to_str().unwrap(),
            ],
            Some(&repo),
        );
        std::fs::write(path.join(format!("{name}.txt")), "work\n").unwrap();
        sh("git", &["add", "."], Some(&path));
        sh("git", &["commit", "-qm", name], Some(&path));
        sh(
            "git",
            &["merge", "-q", "--ff-only", &format!("feat-{name}")],
            Some(&repo),
        );
        paths.push(path);
    }
    std::fs::write(paths[1].join("app.txt"), "uncommitted\n").unwrap();
    sh(
        "git",
        &[
            "worktree",
            "lock",
            "--reason",
            "agent still running",
            paths[2].to_str().unwrap(),
        ],
        Some(&repo),
    );
    let pr = dir.join("pr-state");
    std::fs::write(
        &pr,
        "#!/bin/sh\ncd \"$1\" && echo \"merged $(git rev-parse \"$2\")\"\n",
    )
    .unwrap();
    sh("chmod", &["755", pr.to_str().unwrap()], None);
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "sweep:\n  worktrees:\n    repos: [\"{}\"]\n    base: main\n    min_age: 1d\n    pr: {{ command: [\"{}\"] }}\nrules:\n  - id: janitor\n    verdict: allow\n    actor: {{ kind: [janitor] }}\n",
            repo.display(),
            pr.display()
        ),
    )
    .unwrap();
    let now = (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(2 * 24)).to_string();
    let plan_file = dir.join("plan.json");
    let planned = run(
        &home,
        &policy,
        &[
            "sweep",
            "plan",
            "--now",
            &now,
            "--out",
            plan_file.to_str().unwrap(),
        ],
    );
    assert!(plan_file.exists(), "{}", text(&planned));
    let repo_text = repo.display().to_string();
    let dir_text = dir.display().to_string();
    cut_plan(&plan_file, |e| {
        let id = e["id"].as_str().unwrap_or("");
        id.starts_with(&dir_text) || id.starts_with(&repo_text)
    });
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan_file).unwrap()).unwrap();
    assert_eq!(
        entry(&plan, "wt-merged")["decision"],
        "remove",
        "{}\n{plan}",
        text(&planned)
    );
    assert_eq!(entry(&plan, "wt-dirty")["decision"], "keep");
    assert!(
        entry(&plan, "wt-dirty")["reasons"]
            .to_string()
            .contains("modified")
    );
    assert_eq!(entry(&plan, "wt-locked")["decision"], "keep");
    assert!(
        entry(&plan, "wt-locked")["reasons"]
            .to_string()
            .contains("agent still running")
    );
    assert_eq!(entry(&plan, "#feat-merged")["decision"], "remove", "{plan}");

    let applied = run(
        &home,
        &policy,
        &[
            "sweep",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--yes",
            "--now",
            &now,
        ],
    );
    assert!(!paths[0].exists(), "{}", text(&applied));
    assert!(paths[1].exists() && paths[2].exists());
    let branches = sh("git", &["branch", "--list"], Some(&repo));
    assert!(
        !branches.contains("feat-merged"),
        "{branches}\n{}",
        text(&applied)
    );
    assert!(branches.contains("feat-dirty") && branches.contains("feat-locked"));
    let why = run(&home, &policy, &["why", paths[1].to_str().unwrap()]);
    assert!(text(&why).contains("kept"), "{}", text(&why));
}
