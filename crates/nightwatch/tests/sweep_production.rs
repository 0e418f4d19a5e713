//! The janitor on a production host, through the real binary and the real Docker Engine:
//! it judges only what agents started (or the policy names), sees a shell opened in a
//! container, tells a crash loop from restarts long past, never declines without a record,
//! and records each item as it goes, one sweep at a time.

mod common;

use common::docker::{Containers, IMAGE, image, sh};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const ALLOW_JANITOR: &str =
    "rules:\n  - id: janitor\n    verdict: allow\n    actor: { kind: [janitor] }\n";
const OWNED: &str = "nightwatch.agent=claude-code";

struct Site {
    home: PathBuf,
    policy: PathBuf,
    dir: PathBuf,
    containers: Containers,
}

impl Site {
    fn new(name: &str, sweep: &str) -> Site {
        image();
        let dir = common::scratch("sweep-production", name);
        let home = dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let policy = dir.join("policy.yaml");
        std::fs::write(&policy, format!("{sweep}{ALLOW_JANITOR}")).unwrap();
        Site {
            home,
            policy,
            dir,
            containers: Containers(format!("{name}-{}", std::process::id())),
        }
    }

    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut command = common::nightwatch_command(args);
        command
            .env("NIGHTWATCH_HOME", &self.home)
            .env("NIGHTWATCH_POLICY", &self.policy)
            .stdin(Stdio::null());
        for (key, value) in env {
            command.env(key, value);
        }
        command
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(args, env).output().expect("nightwatch runs")
    }

    /// `nightwatch hook AGENT` with `payload` on stdin; it must answer (exit 0).
    fn hook(&self, agent: &str, payload: &Value) -> Output {
        let mut hook = self.command(&["hook", agent], &[]);
        hook.stdin(Stdio::piped());
        let reply = common::run_with_input(hook, payload.to_string().as_bytes());
        assert!(reply.status.success(), "{}", text(&reply));
        reply
    }

    /// Claude Code's `PreToolUse` for `payload`: allowed, with an updated input; that input.
    fn allowed_with_updated_input(&self, payload: &Value) -> Value {
        let reply = self.hook("claude", payload);
        let answer: Value = serde_json::from_slice(&reply.stdout).expect("the hook answers JSON");
        let output = &answer["hookSpecificOutput"];
        assert_eq!(output["permissionDecision"], "allow", "{answer}");
        assert!(
            output["updatedInput"].is_object(),
            "no updated input: {answer}"
        );
        output["updatedInput"].clone()
    }

    /// `sweep plan` as of `days` from now, cut down to this test's containers (others on the
    /// host belong to other tests); the plan file and its entries.
    fn plan(&self, days: i64, ours: &[&str]) -> (PathBuf, Vec<Value>, Output) {
        let file = self.dir.join("plan.json");
        let out = self.run(
            &[
                "sweep",
                "plan",
                "--now",
                &later(days),
                "--out",
                file.to_str().unwrap(),
            ],
            &[],
        );
        let mut plan: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap())
            .unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        let entries: Vec<Value> = plan["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| ours.iter().any(|id| e["id"] == **id))
            .cloned()
            .collect();
        plan["entries"] = Value::from(entries.clone());
        std::fs::write(&file, plan.to_string()).unwrap();
        (file, entries, out)
    }

    fn apply(&self, plan: &Path, days: i64, env: &[(&str, &str)]) -> Output {
        self.run(&apply_args(plan, &later(days)), env)
    }

    /// The janitor's records: event, inputs, outputs, reasons.
    fn records(&self) -> Vec<(String, Value, Value, Vec<String>)> {
        let db = rusqlite::Connection::open(self.home.join("ledger.db")).unwrap();
        let mut stmt = db
            .prepare(
                "SELECT event, inputs, coalesce(outputs, 'null'), reasons FROM records
                 WHERE actor_kind = 'janitor' ORDER BY seq",
            )
            .unwrap();
        stmt.query_map([], |r| {
            let json = |i: usize| -> rusqlite::Result<Value> {
                Ok(serde_json::from_str(&r.get::<_, String>(i)?).unwrap())
            };
            let reasons: Vec<String> = serde_json::from_value(json(3)?).unwrap();
            Ok((r.get(0)?, json(1)?, json(2)?, reasons))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    }

    /// The removal results recorded for container `id`.
    fn results_for(&self, id: &str) -> Vec<Value> {
        self.records()
            .into_iter()
            .filter(|(event, inputs, _, _)| event == "result" && inputs["id"] == id)
            .map(|(_, _, outputs, _)| outputs)
            .collect()
    }
}

fn apply_args<'a>(plan: &'a Path, now: &'a str) -> Vec<&'a str> {
    vec![
        "sweep",
        "apply",
        "--plan",
        plan.to_str().unwrap(),
        "--yes",
        "--now",
        now,
    ]
}

fn later(days: i64) -> String {
    (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24 * days)).to_string()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn exists(id: &str) -> bool {
    Command::new("docker")
        .args(["inspect", id])
        .output()
        .unwrap()
        .status
        .success()
}

fn inspect(id: &str, format: &str) -> String {
    sh("docker", &["inspect", "-f", format, id], None)
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn entry<'a>(entries: &'a [Value], id: &str) -> &'a Value {
    entries
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not in the plan: {entries:?}"))
}

/// Seed 001: "touch only what you started". An operator's service running for a month that
/// no agent started is kept whatever the clock says; an agent's leftover beside it goes; and
/// `why` can say so right after the plan.
#[test]
fn an_unowned_service_is_never_planned_while_an_agents_leftover_goes() {
    let site = Site::new("scope", "");
    let service = site.containers.run(&[IMAGE, "sleep", "3600"]);
    let leftover = site
        .containers
        .run(&["--label", OWNED, IMAGE, "sh", "-c", "exit 0"]);
    let (plan, entries, out) = site.plan(30, &[&service, &leftover]);
    let kept = entry(&entries, &service);
    assert_eq!(kept["decision"], "keep", "{}", text(&out));
    assert!(
        kept["reasons"]
            .to_string()
            .contains("not in the janitor's scope"),
        "{kept}"
    );
    assert_eq!(entry(&entries, &leftover)["decision"], "remove");
    let why = site.run(&["why", &service], &[]);
    assert!(
        text(&why).contains("planned: keep") && text(&why).contains("not in the janitor's scope"),
        "why answers after the plan: {}",
        text(&why)
    );
    let why = site.run(&["why", &leftover], &[]);
    assert!(text(&why).contains("planned: REMOVE"), "{}", text(&why));

    let applied = site.apply(&plan, 30, &[]);
    assert!(applied.status.success(), "{}", text(&applied));
    assert!(!exists(&leftover), "{}", text(&applied));
    assert!(exists(&service), "{}", text(&applied));
    // A removal's `why` shows the rule and the facts that removed it.
    let why = text(&site.run(&["why", &leftover], &[]));
    assert!(why.contains("removed"), "{why}");
    assert!(why.contains("because: idle"), "{why}");
}

/// A shell opened in a container after the plan keeps it: apply looks again, and the open
/// exec session is use.
#[test]
fn a_live_exec_session_keeps_a_container_at_apply() {
    let site = Site::new("exec", "");
    let busy = site
        .containers
        .run(&["--label", OWNED, IMAGE, "sleep", "3600"]);
    let (plan, entries, out) = site.plan(6, &[&busy]);
    assert_eq!(
        entry(&entries, &busy)["decision"],
        "remove",
        "{}",
        text(&out)
    );
    let mut shell = Command::new("docker")
        .args(["exec", &busy, "sleep", "60"])
        .spawn()
        .expect("docker exec starts");
    wait_until("the exec session", Duration::from_secs(20), || {
        inspect(&busy, "{{len .ExecIDs}}") != "0"
    });
    let applied = site.apply(&plan, 6, &[]);
    let _ = shell.kill();
    let _ = shell.wait();
    assert!(exists(&busy), "{}", text(&applied));
    assert!(text(&applied).contains("exec"), "{}", text(&applied));
}

/// Three restarts at boot, then healthy: idle by the normal rule, not a loop aged from
/// creation. A container that crashed until Docker gave up is a loop.
#[test]
fn restarts_long_past_are_not_a_loop_but_a_crash_loop_is() {
    let run = format!("loops-{}", std::process::id());
    let site = Site::new(
        "loops",
        &format!(
            "sweep:\n  containers:\n    scope: {{ labels: [\"nightwatch.test={run}\"] }}\n    max_idle: 30d\n    restart_loop_max_age: 1d\n"
        ),
    );
    // Fails three times (its count survives restarts in its own filesystem), then runs.
    let healthy = site.containers.run(&[
        "--restart",
        "on-failure",
        IMAGE,
        "sh",
        "-c",
        "read n < /count || n=0; echo $((n+1)) > /count; [ $n -ge 3 ] && exec sleep 3600; exit 1",
    ]);
    let looping = site
        .containers
        .run(&["--restart", "on-failure:4", IMAGE, "sh", "-c", "exit 1"]);
    wait_until("the restarts", Duration::from_secs(60), || {
        inspect(&healthy, "{{.RestartCount}} {{.State.Status}}") == "3 running"
            && inspect(&looping, "{{.RestartCount}} {{.State.Status}}") == "4 exited"
    });
    let (_, entries, out) = site.plan(2, &[&healthy, &looping]);
    let kept = entry(&entries, &healthy);
    assert_eq!(kept["decision"], "keep", "{}", text(&out));
    assert!(
        !kept["reasons"].to_string().contains("restart loop"),
        "{kept}"
    );
    let gone = entry(&entries, &looping);
    assert_eq!(gone["decision"], "remove", "{gone}");
    assert!(
        gone["reasons"].to_string().contains("restart loop"),
        "{gone}"
    );
}

/// An Engine that is configured but cannot be reached: the plan says so, records it and
/// fails; an apply against it does nothing, says so and fails, and the container stays.
#[test]
fn an_unreachable_engine_is_recorded_and_fails_the_run() {
    let site = Site::new("unreachable", "");
    let leftover = site
        .containers
        .run(&["--label", OWNED, IMAGE, "sh", "-c", "exit 0"]);
    let nowhere = format!("unix://{}", site.dir.join("no-such.sock").display());
    let planned = site.run(
        &["sweep", "plan", "--now", &later(6)],
        &[("DOCKER_HOST", &nowhere)],
    );
    assert_eq!(planned.status.code(), Some(1), "{}", text(&planned));
    assert!(text(&planned).contains("container"), "{}", text(&planned));
    let noted = site
        .records()
        .into_iter()
        .any(|(event, inputs, _, reasons)| {
            event == "sweep-keep" && inputs["id"] == "*" && reasons.join(" ").contains("container")
        });
    assert!(noted, "the containers not swept are recorded");

    let (plan, entries, _) = site.plan(6, &[&leftover]);
    assert_eq!(entry(&entries, &leftover)["decision"], "remove");
    let applied = site.apply(&plan, 6, &[("DOCKER_HOST", &nowhere)]);
    assert_eq!(applied.status.code(), Some(1), "{}", text(&applied));
    assert!(text(&applied).contains("NOT DONE"), "{}", text(&applied));
    assert!(exists(&leftover));
}

/// One sweep at a time: a second apply while the first runs exits at once and says why; with
/// --wait it takes its turn. A first apply killed half way leaves a result for each item it
/// finished, each with its own time, and nothing for what it never reached; the next run
/// finds the removals it decided and never finished, and records what became of each.
#[test]
fn sweeps_take_turns_and_a_killed_apply_leaves_an_exact_ledger() {
    let site = Site::new("turns", "");
    // The first stops at once; the other two ignore SIGTERM, so their stops (which run
    // together with the first) wait out the janitor's stop timeout (10 s).
    let slow: Vec<String> = (0..3)
        .map(|i| {
            let script = if i == 0 {
                "trap 'exit 0' TERM; while true; do sleep 1; done"
            } else {
                "trap '' TERM; while true; do sleep 1; done"
            };
            site.containers
                .run(&["--label", OWNED, IMAGE, "sh", "-c", script])
        })
        .collect();
    let ours: Vec<&str> = slow.iter().map(String::as_str).collect();
    let (plan, entries, _) = site.plan(6, &ours);
    assert_eq!(
        entries.iter().filter(|e| e["decision"] == "remove").count(),
        3
    );
    let now = later(6);
    let mut first = site
        .command(&apply_args(&plan, &now), &[])
        .spawn()
        .expect("the first apply starts");
    let lock = site.home.join("sweep.lock");
    wait_until(
        "the first apply to hold the lock",
        Duration::from_secs(20),
        || {
            std::fs::read_to_string(&lock)
                .is_ok_and(|holder| holder.contains(&format!("pid {}", first.id())))
        },
    );
    let second = site.apply(&plan, 6, &[]);
    assert_ne!(second.status.code(), Some(0), "{}", text(&second));
    assert!(
        text(&second).contains("another sweep is running"),
        "{}",
        text(&second)
    );
    assert_eq!(
        site.records()
            .iter()
            .filter(|(event, ..)| event == "result")
            .count(),
        0,
        "the refused apply touched nothing"
    );

    // Killed while the slow two wait out their stops: the first removal is recorded, the
    // rest are not.
    wait_until("the first removal", Duration::from_secs(60), || {
        ours.iter().any(|id| !site.results_for(id).is_empty())
    });
    std::thread::sleep(Duration::from_secs(2));
    let _ = first.kill();
    let _ = first.wait();
    let gone: Vec<&str> = ours.iter().copied().filter(|id| !exists(id)).collect();
    let recorded: Vec<&str> = ours
        .iter()
        .copied()
        .filter(|id| !site.results_for(id).is_empty())
        .collect();
    assert_eq!(
        recorded.len(),
        1,
        "exactly one removal finished: {recorded:?}"
    );
    assert_eq!(
        gone, recorded,
        "what is gone is what the ledger says was removed"
    );

    // `verify` sees the two unfinished removals: the ledger is intact, the story unfinished.
    let verified = site.run(&["verify"], &[]);
    assert!(
        text(&verified).contains("2 janitor removal(s) decided and never finished"),
        "{}",
        text(&verified)
    );

    // The next run finds the two removals the killed one decided and never finished,
    // re-inspects them and records what became of each against its decision: still there
    // (running, or stopped by the Engine after the stop the killed run asked for).
    let (plan, _, replanned) = site.plan(6, &ours);
    let interrupted: Vec<&str> = ours
        .iter()
        .copied()
        .filter(|id| !recorded.contains(id))
        .collect();
    for id in &interrupted {
        let results = site.results_for(id);
        assert_eq!(results.len(), 1, "{id}: {results:?}\n{}", text(&replanned));
        assert_eq!(results[0]["exit_code"], 1, "{results:?}");
        let said = results[0]["stderr"].as_str().unwrap_or_default();
        assert!(said.starts_with("interrupted: still there ("), "{said}");
        let why = site.run(&["why", id], &[]);
        assert!(text(&why).contains("removal INTERRUPTED"), "{}", text(&why));
    }
    assert!(
        text(&replanned).contains("was interrupted"),
        "the run says what it found: {}",
        text(&replanned)
    );

    // The rest, in turn: two applies at once, the second waiting its turn. Each item ends
    // with exactly one removal result that succeeded.
    let now = later(6);
    let mut waiting: Vec<_> = (0..2)
        .map(|_| {
            let mut args = apply_args(&plan, &now);
            args.extend(["--wait", "120"]);
            site.command(&args, &[]).spawn().expect("an apply starts")
        })
        .collect();
    for apply in &mut waiting {
        assert!(apply.wait().unwrap().success());
    }
    for id in &ours {
        assert!(!exists(id), "{id} was removed");
        let results = site.results_for(id);
        let removed = results.iter().filter(|r| r["exit_code"] == 0).count();
        assert_eq!(removed, 1, "{id}: {results:?}");
        let expected = if interrupted.contains(id) { 2 } else { 1 };
        assert_eq!(results.len(), expected, "{id}: {results:?}");
    }
    common::assert_ledger_verifies(&site.home);
}

/// Ownership end to end: Claude Code's `docker run` is allowed with an updated input that
/// labels the container with the agent, session and project; run as the hook rewrote it, the
/// container really carries them, and the janitor judges it as the agent's own while an
/// unlabelled one beside it stays out of scope.
#[test]
fn a_container_an_agent_starts_through_the_hook_carries_its_owner() {
    let site = Site::new("ownership", "");
    // Removed with the site's other containers when the test ends.
    let run = site.containers.0.clone();
    // Agents may start containers here; the janitor may sweep.
    std::fs::write(
        &site.policy,
        "rules:\n  - id: agents-may-start-containers\n    verdict: allow\n    command: \"docker run *\"\n  - id: janitor\n    verdict: allow\n    actor: { kind: [janitor] }\n",
    )
    .unwrap();
    let command = format!("docker run -d --label nightwatch.test={run} {IMAGE} sleep 600");
    let payload = serde_json::json!({
        "session_id": "sess_own",
        "cwd": site.dir,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": { "command": command, "description": "start a scratch box", "timeout": 120000 },
        "tool_use_id": "toolu_own",
    });
    let updated = site.allowed_with_updated_input(&payload);
    assert_eq!(
        updated["description"], "start a scratch box",
        "the rest of the input stays"
    );
    let labelled = updated["command"]
        .as_str()
        .expect("the command is rewritten");
    assert!(
        labelled.contains("nightwatch.agent=claude-code"),
        "{labelled}"
    );
    assert!(
        labelled.contains("nightwatch.session=sess_own"),
        "{labelled}"
    );

    // The ledger holds the line that runs, labels and all.
    let db = rusqlite::Connection::open(site.home.join("ledger.db")).unwrap();
    let recorded: String = db
        .query_row(
            "SELECT inputs FROM records WHERE event = 'decision' AND call_id = 'toolu_own'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let recorded: Value = serde_json::from_str(&recorded).unwrap();
    assert_eq!(recorded["command"], labelled, "{recorded}");

    // Run exactly what the agent would now run.
    let started = Command::new("sh").args(["-c", labelled]).output().unwrap();
    assert!(started.status.success(), "{}", text(&started));
    let owned = String::from_utf8_lossy(&started.stdout).trim().to_owned();
    assert_eq!(
        inspect(&owned, "{{index .Config.Labels \"nightwatch.agent\"}}"),
        "claude-code"
    );
    assert_eq!(
        inspect(&owned, "{{index .Config.Labels \"nightwatch.session\"}}"),
        "sess_own"
    );
    assert_eq!(
        inspect(&owned, "{{index .Config.Labels \"nightwatch.project\"}}"),
        site.dir.display().to_string()
    );
    // The call finished; a container started after it, by no agent's call, is not the
    // janitor's.
    let mut finished = payload.clone();
    finished["hook_event_name"] = "PostToolUse".into();
    finished["tool_response"] =
        serde_json::json!({ "stdout": owned, "stderr": "", "interrupted": false });
    site.hook("claude", &finished);
    std::thread::sleep(Duration::from_millis(2_100));
    let unlabelled = site.containers.run(&[IMAGE, "sleep", "600"]);
    let (_, entries, out) = site.plan(6, &[&owned, &unlabelled]);
    assert_eq!(
        entry(&entries, &owned)["decision"],
        "remove",
        "{}",
        text(&out)
    );
    assert!(
        entry(&entries, &owned)["reasons"]
            .to_string()
            .contains("started by agent claude-code")
    );
    assert_eq!(entry(&entries, &unlabelled)["decision"], "keep");
}

/// An agent's compose stack that carries no owner label (here brought up as written, as a hook
/// that cannot rewrite the call leaves it): the ledger holds the session's call to `docker
/// compose` with its result, and the Engine the time each container was created. Joined, that
/// is a clue, not proof (an operator's stack of the same image could be created in the same
/// second): the plan keeps the stack and tells a person whose it may be, in every mode,
/// reaping the session included. A service an operator starts while no agent call runs gets
/// no clue at all.
#[test]
fn containers_without_owner_labels_are_never_removed_on_a_timing_join() {
    let site = Site::new("ledger-join", "");
    std::fs::write(
        &site.policy,
        "rules:\n  - id: agents-may-compose\n    verdict: allow\n    command: \"docker-compose *\"\n  - id: janitor\n    verdict: allow\n    actor: { kind: [janitor] }\n",
    )
    .unwrap();
    let project = format!("nwjoin{}", std::process::id());
    let file = write_compose_file(&site.dir);
    let up = format!("docker-compose -p {project} up -d");
    let _down = Cleanup(compose_down(&project, &file));
    let hook = |event: &str, extra: Value| {
        let mut payload = serde_json::json!({
            "session_id": "sess_codex",
            "turn_id": "turn_1",
            "cwd": site.dir,
            "hook_event_name": event,
            "model": "gpt-5-codex",
            "tool_name": "Bash",
            "tool_input": { "command": up },
            "tool_use_id": "call_up",
        });
        for (key, value) in extra.as_object().unwrap() {
            payload[key] = value.clone();
        }
        site.hook("codex", &payload)
    };
    let reply = hook("PreToolUse", serde_json::json!({}));
    assert!(
        !String::from_utf8_lossy(&reply.stdout).contains("deny"),
        "{}",
        text(&reply)
    );
    // Codex's hook cannot rewrite the call: Compose runs it as written, with no owner label.
    let ran = Command::new("sh")
        .args(["-c", &up])
        .current_dir(&site.dir)
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", text(&ran));
    let members = compose_members(&project);
    assert_eq!(members.len(), 2, "{members:?}");
    let (db, web) = (members[0].clone(), members[1].clone());
    for id in &members {
        assert_eq!(
            inspect(id, "{{index .Config.Labels \"nightwatch.agent\"}}"),
            ""
        );
    }
    // Another stack brought up elsewhere at the same moment (another test, an operator) is
    // not this call's.
    let elsewhere = site.containers.run(&[
        "--label",
        "com.docker.compose.project.working_dir=/srv/elsewhere",
        IMAGE,
        "sleep",
        "3600",
    ]);
    hook(
        "PostToolUse",
        serde_json::json!({ "tool_response": { "stdout": "", "stderr": "", "exit_code": 0 } }),
    );
    std::thread::sleep(Duration::from_millis(2_100));
    let operators = site.containers.run(&[IMAGE, "sleep", "3600"]);

    let (_, entries, out) = site.plan(6, &[&db, &web, &operators, &elsewhere]);
    for id in [&db, &web] {
        let planned = entry(&entries, id);
        assert_eq!(planned["decision"], "keep", "{}", text(&out));
        let reasons = planned["reasons"].to_string();
        assert!(
            reasons.contains("the ledger suggests agent codex in session sess_codex"),
            "{reasons}"
        );
        assert!(reasons.contains("a person decides"), "{reasons}");
        assert!(reasons.contains("docker-compose -p"), "{reasons}");
    }
    for id in [&operators, &elsewhere] {
        let kept = entry(&entries, id);
        assert_eq!(kept["decision"], "keep");
        assert!(
            kept["reasons"]
                .to_string()
                .contains("not in the janitor's scope")
        );
    }

    // Reaping the session removes nothing it cannot prove was the session's.
    let reaped = site.run(&["sweep", "apply", "--session", "sess_codex", "--yes"], &[]);
    assert!(reaped.status.success(), "{}", text(&reaped));
    for id in [&db, &web, &operators, &elsewhere] {
        assert!(exists(id), "{id} removed: {}", text(&reaped));
    }
}

/// The tester's night: an agent's `docker run` of an image is asked and never approved (so it
/// never ran), and then an operator starts a service of that same image. No result was
/// recorded for the agent's call, so the ledger gives not even a clue: the operator's
/// container is out of the janitor's scope in every mode.
#[test]
fn a_declined_agent_docker_run_gives_no_claim_on_an_operators_container() {
    let site = Site::new("declined-run", "");
    let payload = |event: &str| {
        serde_json::json!({
            "session_id": "sess_declined",
            "cwd": site.dir,
            "hook_event_name": event,
            "tool_name": "Bash",
            "tool_input": { "command": format!("docker run -d {IMAGE} sleep 3600") },
            "tool_use_id": "toolu_declined",
        })
    };
    let asked = site.hook("claude", &payload("PreToolUse"));
    assert!(
        String::from_utf8_lossy(&asked.stdout).contains("\"ask\""),
        "the built-in policy asks about docker run: {}",
        text(&asked)
    );
    // The person says no (Claude Code reports it through PermissionDenied).
    let mut denied = payload("PermissionDenied");
    denied["reason"] = "The user declined".into();
    site.hook("claude", &denied);
    // The call is closed as declined, joined to its decision.
    let db = rusqlite::Connection::open(site.home.join("ledger.db")).unwrap();
    let (declined, reasons): (i64, String) = db
        .query_row(
            "SELECT count(*), coalesce(max(reasons), '') FROM records
             WHERE event = 'declined' AND call_id = 'toolu_declined'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(declined, 1, "the declined call is recorded as declined");
    assert!(reasons.contains("The user declined"), "{reasons}");
    let operators = site
        .containers
        .run(&["--restart", "always", IMAGE, "sleep", "3600"]);
    let stopped = site.containers.run(&[IMAGE, "sh", "-c", "exit 3"]);

    let (_, entries, out) = site.plan(6, &[&operators, &stopped]);
    for id in [&operators, &stopped] {
        let kept = entry(&entries, id);
        assert_eq!(kept["decision"], "keep", "{}", text(&out));
        let reasons = kept["reasons"].to_string();
        assert!(reasons.contains("not in the janitor's scope"), "{reasons}");
        assert!(!reasons.contains("sess_declined"), "{reasons}");
    }
    // That plan was judged six days ahead (`--now`): a what-if, and recorded as one.
    let planned: Vec<Value> = site
        .records()
        .into_iter()
        .filter(|(event, inputs, ..)| event == "sweep-plan" && inputs["id"] == *operators)
        .map(|(_, inputs, ..)| inputs)
        .collect();
    assert_eq!(planned.len(), 1, "{planned:?}");
    assert!(planned[0]["what_if_ms"].is_i64(), "{planned:?}");
    let why = site.run(&["why", &operators], &[]);
    assert!(text(&why).contains("WHAT-IF as of"), "{}", text(&why));
    let reaped = site.run(
        &["sweep", "apply", "--session", "sess_declined", "--yes"],
        &[],
    );
    assert!(reaped.status.success(), "{}", text(&reaped));
    assert!(exists(&operators) && exists(&stopped), "{}", text(&reaped));
}

/// A compose file of two services on the offline test image, in `dir`.
fn write_compose_file(dir: &Path) -> PathBuf {
    let file = dir.join("docker-compose.yml");
    std::fs::write(
        &file,
        format!(
            "version: \"3\"\nservices:\n  db:\n    image: {IMAGE}\n    command: [\"sleep\", \"3600\"]\n  web:\n    image: {IMAGE}\n    command: [\"sleep\", \"3600\"]\n"
        ),
    )
    .unwrap();
    file
}

/// `docker-compose down` of `project`, for a [`Cleanup`].
fn compose_down(project: &str, file: &Path) -> Vec<String> {
    ["docker-compose", "-p", project, "-f"]
        .iter()
        .map(|s| (*s).to_owned())
        .chain([
            file.display().to_string(),
            "down".into(),
            "-t".into(),
            "0".into(),
        ])
        .collect()
}

/// The ids of compose project `project`'s containers, sorted by name (db, web).
fn compose_members(project: &str) -> Vec<String> {
    let filter = format!("label=com.docker.compose.project={project}");
    let listed = sh(
        "docker",
        &[
            "ps",
            "-a",
            "--no-trunc",
            "--filter",
            &filter,
            "--format",
            "{{.Names}} {{.ID}}",
        ],
        None,
    );
    let mut rows: Vec<(String, String)> = listed
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, id)| (n.to_owned(), id.to_owned()))
        .collect();
    rows.sort();
    rows.into_iter().map(|(_, id)| id).collect()
}

/// Claude Code's `docker-compose up` is rewritten with one more compose file that labels every
/// service with the agent, session and project; run as rewritten by the real Compose, both
/// containers carry the labels, and the janitor judges them as the agent's own.
#[test]
fn a_compose_stack_an_agent_brings_up_through_the_hook_carries_its_owner() {
    let site = Site::new("compose-own", "");
    std::fs::write(
        &site.policy,
        "rules:\n  - id: agents-may-compose\n    verdict: allow\n    command: \"docker-compose *\"\n  - id: janitor\n    verdict: allow\n    actor: { kind: [janitor] }\n",
    )
    .unwrap();
    let project = format!("nwown{}", std::process::id());
    let file = write_compose_file(&site.dir);
    let _down = Cleanup(compose_down(&project, &file));
    let payload = serde_json::json!({
        "session_id": "sess_compose",
        "cwd": site.dir,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": { "command": format!("docker-compose -p {project} up -d") },
        "tool_use_id": "toolu_compose",
    });
    let updated = site.allowed_with_updated_input(&payload);
    let labelled = updated["command"]
        .as_str()
        .unwrap_or_else(|| panic!("the command is rewritten: {updated}"));
    assert!(labelled.contains(" -f "), "{labelled}");
    assert!(labelled.ends_with(" up -d"), "{labelled}");
    let ran = Command::new("sh")
        .args(["-c", labelled])
        .current_dir(&site.dir)
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", text(&ran));
    let members = compose_members(&project);
    assert_eq!(members.len(), 2, "{members:?}");
    for id in &members {
        assert_eq!(
            inspect(id, "{{index .Config.Labels \"nightwatch.agent\"}}"),
            "claude-code"
        );
        assert_eq!(
            inspect(id, "{{index .Config.Labels \"nightwatch.session\"}}"),
            "sess_compose"
        );
    }
    let ours: Vec<&str> = members.iter().map(String::as_str).collect();
    let (_, entries, out) = site.plan(6, &ours);
    for id in &ours {
        let planned = entry(&entries, id);
        assert_eq!(planned["decision"], "remove", "{}", text(&out));
        assert!(
            planned["reasons"]
                .to_string()
                .contains("started by agent claude-code")
        );
    }
}

/// A compose stack (made here as Compose makes one: containers and a network carrying the
/// `com.docker.compose.project` label) goes whole with its network, or not at all.
#[test]
fn a_compose_stack_goes_whole_with_its_network_or_stays_whole() {
    let site = Site::new("stacks", "");
    let stack = |project: &str, keep_db: bool| -> (String, String, String) {
        let label = format!("com.docker.compose.project={project}");
        let network = sh(
            "docker",
            &[
                "network",
                "create",
                "--label",
                &label,
                &format!("{project}_default"),
            ],
            None,
        );
        let net = format!("{project}_default");
        let web = site.containers.run(&[
            "--label",
            OWNED,
            "--label",
            &label,
            "--network",
            &net,
            IMAGE,
            "sh",
            "-c",
            "exit 0",
        ]);
        let mut db_args = vec!["--label", OWNED, "--label", &label, "--network", &net];
        if keep_db {
            db_args.extend(["--label", "nightwatch.keep=true"]);
        }
        db_args.extend([IMAGE, "sh", "-c", "exit 0"]);
        let db = site.containers.run(&db_args);
        (web, db, network)
    };
    let pid = std::process::id();
    let (web, db, network) = stack(&format!("gone{pid}"), false);
    let (kept_web, kept_db, kept_network) = stack(&format!("kept{pid}"), true);
    let network_exists = |id: &str| {
        Command::new("docker")
            .args(["network", "inspect", id])
            .output()
            .unwrap()
            .status
            .success()
    };
    let (plan, entries, out) = site.plan(6, &[&web, &db, &kept_web, &kept_db]);
    assert_eq!(
        entry(&entries, &web)["decision"],
        "remove",
        "{}",
        text(&out)
    );
    assert_eq!(entry(&entries, &db)["decision"], "remove");
    let held = entry(&entries, &kept_web);
    assert_eq!(held["decision"], "keep", "{held}");
    assert!(
        held["reasons"].to_string().contains("compose stack"),
        "{held}"
    );
    let applied = site.apply(&plan, 6, &[]);
    assert!(applied.status.success(), "{}", text(&applied));
    assert!(!exists(&web) && !exists(&db), "{}", text(&applied));
    assert!(
        !network_exists(&network),
        "the stack's network went with it: {}",
        text(&applied)
    );
    assert!(exists(&kept_web) && exists(&kept_db));
    assert!(network_exists(&kept_network));
    let _ = Command::new("docker")
        .args(["network", "rm", &kept_network])
        .output();
    // The network's removal is in the removal's recorded steps.
    let steps: Vec<Value> = site.results_for(&db);
    let recorded = steps.iter().chain(site.results_for(&web).iter()).any(|o| {
        o["stdout"]
            .as_str()
            .is_some_and(|s| s.contains("removed network"))
    });
    assert!(recorded, "{steps:?}");
}

/// The daemon follows the Engine's events as they happen and keeps them in the janitor's
/// state: a shell opened in a container is noted with no sweep running at all (the Engine
/// itself keeps only its last 256 events, so a sweep reading them later may find nothing).
#[test]
fn the_daemon_notes_use_of_a_container_as_it_happens() {
    let site = Site::new("follow", "");
    let busy = site
        .containers
        .run(&["--label", OWNED, IMAGE, "sleep", "3600"]);
    let policy = site.policy.to_string_lossy().into_owned();
    let daemon = common::daemon::Daemon::start(&site.home, None, &[("NIGHTWATCH_POLICY", &policy)]);
    std::thread::sleep(Duration::from_secs(2));
    let before = jiff::Timestamp::now().as_millisecond();
    sh("docker", &["exec", &busy, "sh", "-c", ":"], None);
    let noted = || -> Option<i64> {
        let db = rusqlite::Connection::open(site.home.join("janitor.db")).ok()?;
        db.query_row(
            "SELECT at_ms FROM activity WHERE kind = 'container' AND id = ?1",
            [&busy],
            |r| r.get(0),
        )
        .ok()
    };
    wait_until(
        "the daemon to note the exec",
        Duration::from_secs(30),
        || noted().is_some_and(|at| at >= before),
    );
    let (code, log) = daemon.stop();
    assert_eq!(code, Some(0), "{log}");
}

/// `sweep plan --session S`: what an agent session left running goes at its end, however
/// young; another session's containers are not in the plan.
#[test]
fn a_sessions_leftovers_are_reaped_at_its_end() {
    let site = Site::new("session", "");
    let mine = site.containers.run(&[
        "--label",
        OWNED,
        "--label",
        "nightwatch.session=sess_done",
        IMAGE,
        "sleep",
        "3600",
    ]);
    let other = site.containers.run(&[
        "--label",
        OWNED,
        "--label",
        "nightwatch.session=sess_live",
        IMAGE,
        "sleep",
        "3600",
    ]);
    let file = site.dir.join("plan.json");
    let out = site.run(
        &[
            "sweep",
            "plan",
            "--session",
            "sess_done",
            "--out",
            file.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    let plan: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let entries = plan["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "only the session's container: {plan}");
    assert_eq!(entries[0]["id"], mine.as_str());
    assert_eq!(entries[0]["decision"], "remove", "{plan}");
    let applied = site.run(
        &["sweep", "apply", "--plan", file.to_str().unwrap(), "--yes"],
        &[],
    );
    assert!(applied.status.success(), "{}", text(&applied));
    assert!(!exists(&mine), "{}", text(&applied));
    assert!(exists(&other));
}

/// With `reap_at_session_end`, the session's `SessionEnd` hook starts the reaping itself: what
/// the session left running goes without anyone typing a sweep, the session-end record says
/// the reaping started, and the sweep's own records say what it removed.
#[test]
fn a_session_end_hook_reaps_what_the_session_left_when_the_policy_says_so() {
    let site = Site::new(
        "session-end",
        "sweep:\n  containers:\n    reap_at_session_end: true\n",
    );
    let mine = site.containers.run(&[
        "--label",
        OWNED,
        "--label",
        "nightwatch.session=sess_ending",
        IMAGE,
        "sleep",
        "3600",
    ]);
    let held = site.containers.run(&[
        "--label",
        OWNED,
        "--label",
        "nightwatch.session=sess_ending",
        "--label",
        "nightwatch.keep=true",
        IMAGE,
        "sleep",
        "3600",
    ]);
    let payload = serde_json::json!({
        "session_id": "sess_ending",
        "cwd": site.dir,
        "hook_event_name": "SessionEnd",
        "reason": "logout",
    });
    site.hook("claude", &payload);
    wait_until(
        "the ended session's container to go",
        Duration::from_secs(90),
        || !exists(&mine),
    );
    assert!(exists(&held), "a keep label still keeps it");
    let db = rusqlite::Connection::open(site.home.join("ledger.db")).unwrap();
    let details: String = db
        .query_row(
            "SELECT inputs FROM records WHERE event = 'session-end'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        details.contains("started: nightwatch sweep apply --session sess_ending --yes"),
        "{details}"
    );
    wait_until("the removal's result", Duration::from_secs(30), || {
        site.results_for(&mine)
            .iter()
            .any(|outputs| outputs["exit_code"] == 0)
    });
}

/// A volume or network an agent creates through Claude Code's hook carries the same owner
/// labels as its containers, on the real Engine.
#[test]
fn volumes_and_networks_an_agent_creates_carry_its_owner() {
    let site = Site::new("own-volumes", "");
    std::fs::write(
        &site.policy,
        "rules:\n  - id: agents-may-create\n    verdict: allow\n    command: \"docker * create *\"\n",
    )
    .unwrap();
    let name = format!("nw-own-{}", std::process::id());
    for (kind, line) in [
        ("volume", format!("docker volume create {name}")),
        ("network", format!("docker network create {name}")),
    ] {
        let payload = serde_json::json!({
            "session_id": "sess_vol",
            "cwd": site.dir,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": { "command": line },
            "tool_use_id": format!("toolu_{kind}"),
        });
        let updated = site.allowed_with_updated_input(&payload);
        let labelled = updated["command"]
            .as_str()
            .unwrap_or_else(|| panic!("{kind}: the command is rewritten: {updated}"));
        let made = Command::new("sh").args(["-c", labelled]).output().unwrap();
        // Removed whatever the asserts below say.
        let _cleanup = Cleanup(vec![
            "docker".into(),
            kind.into(),
            "rm".into(),
            name.clone(),
        ]);
        assert!(made.status.success(), "{}", text(&made));
        let labels = sh(
            "docker",
            &[kind, "inspect", "-f", "{{json .Labels}}", &name],
            None,
        );
        let labels: Value = serde_json::from_str(&labels).unwrap();
        assert_eq!(
            labels["nightwatch.agent"], "claude-code",
            "{kind}: {labels}"
        );
        assert_eq!(labels["nightwatch.session"], "sess_vol", "{kind}: {labels}");
    }
}

/// Runs a command when dropped, failed test or not.
struct Cleanup(Vec<String>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new(&self.0[0]).args(&self.0[1..]).output();
    }
}
