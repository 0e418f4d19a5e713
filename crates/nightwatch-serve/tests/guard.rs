//! The memory guard through the daemon, against a real cgroup: a route's runbook that
//! allocates without end runs in its own cgroup under serve.yaml's `memory_guard:` limits; the
//! guard proposes `stop_job` through the engine (the built-in rule `memory-guard` allows it),
//! kills it, records the result, and the task fails saying the guard stopped it, while a
//! process outside the guard lives on. A policy that refuses the stop leaves the runbook to
//! the kernel, and its decision says why.
//!
//! Needs root with a cgroup the daemon can create (cgroup v2's memory controller or v1's
//! memory hierarchy) and `perl`; without them it fails, saying so.

#[path = "support/daemon.rs"]
mod support;

use support::Utc;

use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nightwatch_gate::{Clock, Engine, Escalator, Guards, LiveGuards, NoEscalator};
use nightwatch_intake::{Alert, Source, Status};
use nightwatch_ledger::{Filter, Record, event};
use nightwatch_serve::{Config, Daemon, Edges, guard, runner};

/// Grows by a mebibyte every 20 ms until something stops it.
const ALLOCATOR: &str =
    "$|=1; my @kept; while (1) { push @kept, 'x' x (1 << 20); select(undef, undef, undef, 0.02) }";

struct TestEdges {
    clock: Utc,
    guards: LiveGuards,
    /// Rules put before the built-in policy's (empty: the built-in policy as is).
    rules: String,
}

impl Edges for TestEdges {
    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
    fn host(&self) -> Option<String> {
        Some("test-host".into())
    }
    fn policy(&self) -> Result<Arc<nightwatch_policy::Policy>, String> {
        if self.rules.is_empty() {
            return Ok(Arc::new(nightwatch_policy::Policy::builtin(
                nightwatch_shell::analyse,
            )));
        }
        let text = format!("version: 1\nextends: builtin\nrules:\n{}", self.rules);
        nightwatch_policy::Policy::from_yaml(&text, nightwatch_shell::analyse)
            .map(Arc::new)
            .map_err(|e| e.to_string())
    }
    fn guards(&self) -> &(dyn Guards + Sync) {
        &self.guards
    }
    fn escalator(&self) -> &dyn Escalator {
        &NoEscalator
    }
    fn sweep(&self, _: &Engine<'_>) -> Result<String, String> {
        Ok(String::new())
    }
    fn runbook_env(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

fn alert(identity: &str) -> Alert {
    Alert {
        source: Source::Generic("test".into()),
        identity: identity.into(),
        status: Status::Firing,
        title: format!("alert {identity}"),
        message: String::new(),
        labels: Default::default(),
        annotations: Default::default(),
        tags: vec![],
        monitor: None,
        starts_at_ms: None,
        ends_at_ms: None,
        group_key: None,
        receiver: None,
        link: None,
        raw: serde_json::Value::Null,
    }
}

fn records(daemon: &Daemon, event: &str) -> Vec<Record> {
    daemon
        .reader()
        .query(&Filter {
            event: Some(event.to_owned()),
            ..Filter::default()
        })
        .expect("the ledger reads")
}

fn failed(daemon: &Daemon) -> Vec<Record> {
    records(daemon, event::DISPATCH)
        .into_iter()
        .filter(|r| r.inputs["disposition"] == "failed")
        .collect()
}

/// A daemon with one route running the allocator under a 64 MiB limit, its workers and its
/// guard running.
fn start(
    rules: &str,
) -> (
    tempfile::TempDir,
    Arc<Daemon>,
    Vec<std::thread::JoinHandle<()>>,
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let yaml = format!(
        "queue: {{ workers: 1, max_attempts: 1 }}\n\
         routes:\n  - id: runaway\n    run: [perl, -e, {ALLOCATOR:?}]\n    timeout: 60s\n\
         memory_guard:\n  every: 50ms\n  stop_at: 50%\n  mem_available_below: 0%\n  \
         swap_free_below: 0%\n  pressure: ~\n  runbook: {{ memory: 64MiB, priority: 50 }}\n"
    );
    let config = Config::from_text(&yaml, "serve.yaml", &|_| None).expect("config");
    let edges = TestEdges {
        clock: Utc::new(),
        guards: LiveGuards::new(dir.path()),
        rules: rules.to_owned(),
    };
    let stores = support::sqlite_stores(&config, dir.path());
    let daemon =
        Arc::new(Daemon::new(config, dir.path(), stores, Arc::new(edges)).expect("daemon"));
    match daemon
        .guard
        .as_ref()
        .expect("memory_guard: makes a guard")
        .cgroups()
    {
        Ok(_) => {}
        Err(why) => panic!(
            "this test needs a cgroup the daemon can create (root, with cgroup v2's memory \
             controller or cgroup v1's memory hierarchy): {why}"
        ),
    }
    let mut threads = runner::start(&daemon);
    threads.extend(guard::start(&daemon));
    (dir, daemon, threads)
}

fn stop(daemon: &Daemon, threads: Vec<std::thread::JoinHandle<()>>) {
    daemon.begin_shutdown();
    for thread in threads {
        thread.join().expect("no thread died");
    }
}

fn wait_for_failure(daemon: &Daemon) -> Record {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(r) = failed(daemon).into_iter().next() {
            return r;
        }
        assert!(Instant::now() < deadline, "the runbook never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn protected() -> Child {
    Command::new("sleep")
        .arg("600")
        .spawn()
        .expect("sleep starts (the protected process)")
}

#[test]
fn a_runaway_runbook_is_stopped_through_the_engine_and_recorded_while_the_database_lives() {
    let mut database = protected();
    let (_dir, daemon, threads) = start("");
    daemon.dispatch(vec![alert("runaway")]).expect("stored");
    let failure = wait_for_failure(&daemon);
    stop(&daemon, threads);

    assert!(
        failure.reasons[0].contains(guard::STOPPED_BY_GUARD),
        "the task's failure names the guard: {:?}",
        failure.reasons
    );
    assert!(
        failure.reasons[0].contains("stop_at 50%"),
        "{:?}",
        failure.reasons
    );

    let stops: Vec<Record> = records(&daemon, event::DECISION)
        .into_iter()
        .filter(|r| r.tool == guard::STOP_JOB)
        .collect();
    assert_eq!(stops.len(), 1, "{stops:#?}");
    let decision = &stops[0];
    assert_eq!(decision.actor.kind, "watcher");
    assert_eq!(decision.actor.id, guard::MEMORY_GUARD);
    assert_eq!(decision.verdict.as_deref(), Some("allow"));
    assert_eq!(decision.rule.as_deref(), Some("memory-guard"));
    assert_eq!(decision.inputs["cause"], "near_its_limit");
    assert_eq!(decision.inputs["limit_bytes"], 64 << 20);
    assert_eq!(decision.context.task.as_deref(), Some("t1"));

    let result = records(&daemon, event::RESULT)
        .into_iter()
        .find(|r| r.call_id == decision.call_id)
        .expect("the stop's result is recorded against its decision");
    let outputs = result.outputs.expect("outputs");
    assert_eq!(outputs.exit_code, Some(0), "{outputs:?}");
    assert!(
        outputs
            .stdout
            .contains("the kernel's OOM killer had not killed in it"),
        "{}",
        outputs.stdout
    );

    let watch = records(&daemon, event::WATCH);
    assert!(
        watch
            .iter()
            .any(|r| r.inputs["subject"] == "cgroups" && r.inputs["seen"] == "ok"),
        "where the jobs go is recorded: {watch:#?}"
    );
    assert!(
        matches!(database.try_wait(), Ok(None)),
        "the protected process was killed"
    );
    let _ = database.kill();
    let _ = database.wait();
}

#[test]
fn a_stop_the_policy_refuses_kills_nothing_and_its_decision_says_why() {
    let rules = "  - id: no-stops-tonight\n    verdict: deny\n    reason: \"a person decides tonight\"\n    tool: [stop_job]\n";
    let (_dir, daemon, threads) = start(rules);
    daemon.dispatch(vec![alert("refused")]).expect("stored");
    let failure = wait_for_failure(&daemon);
    stop(&daemon, threads);

    let stops: Vec<Record> = records(&daemon, event::DECISION)
        .into_iter()
        .filter(|r| r.tool == guard::STOP_JOB)
        .collect();
    assert!(!stops.is_empty(), "the stop was proposed");
    for refused in &stops {
        assert_eq!(refused.verdict.as_deref(), Some("deny"));
        assert_eq!(refused.rule.as_deref(), Some("no-stops-tonight"));
        assert!(
            refused
                .reasons
                .iter()
                .any(|r| r.contains("a person decides"))
        );
    }
    assert_eq!(
        stops.len(),
        1,
        "a refused stop is not proposed again at every look"
    );
    assert!(
        records(&daemon, event::RESULT)
            .iter()
            .all(|r| r.tool != guard::STOP_JOB),
        "nothing was stopped"
    );
    // Left alone, the runbook met its kernel limit.
    assert!(
        !failure.reasons[0].contains(guard::STOPPED_BY_GUARD),
        "{:?}",
        failure.reasons
    );
    assert!(
        failure.reasons[0].contains("killed by a signal"),
        "{:?}",
        failure.reasons
    );
}

#[test]
fn serve_yaml_reads_the_guard_section_and_refuses_its_mistakes() {
    let routes = "routes:\n  - id: disk-full\n    run: [\"true\"]\n";
    let off = Config::from_text(routes, "serve.yaml", &|_| None).expect("config");
    assert!(off.memory_guard.is_none(), "no section: no guard");
    let bare = Config::from_text(&format!("{routes}memory_guard:\n"), "serve.yaml", &|_| None)
        .expect("config");
    assert_eq!(
        bare.memory_guard,
        Some(nightwatch_guard::GuardConfig::default()),
        "a bare section is every default, not off"
    );
    let on = Config::from_text(
        &format!("{routes}memory_guard:\n  routes: {{ disk-full: {{ memory: 256MiB }} }}\n"),
        "serve.yaml",
        &|_| None,
    )
    .expect("config");
    let guard = on.memory_guard.expect("a guard");
    assert!(guard.required, "fails closed unless told");
    let limits = guard.limits(nightwatch_guard::JobKind::Runbook, Some("disk-full"));
    assert_eq!(limits.memory.0, 256 << 20);
    for (text, says) in [
        (
            "memory_guard:\n  routes: { nope: { priority: 1 } }\n",
            "memory_guard.routes.nope",
        ),
        ("memory_guard:\n  stop_at: 95\n", "has no unit"),
        (
            "memory_guard:\n  stop_at: 95%\n  oom: true\n",
            "unknown field",
        ),
    ] {
        let err = Config::from_text(&format!("{routes}{text}"), "serve.yaml", &|_| None)
            .expect_err(text)
            .to_string();
        assert!(err.contains(says), "{text}: {err}");
        assert!(err.starts_with("serve.yaml"), "{err}");
    }
}

/// A daemon whose guard found no cgroup to use (as on a host without one), with
/// `required` as given; a route that runs `true`.
fn without_cgroups(
    required: bool,
) -> (
    tempfile::TempDir,
    Arc<Daemon>,
    Vec<std::thread::JoinHandle<()>>,
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let yaml = format!(
        "queue: {{ workers: 1, max_attempts: 1 }}\nroutes:\n  - id: plain\n    run: [\"true\"]\n\
         memory_guard:\n  required: {required}\n"
    );
    let config = Config::from_text(&yaml, "serve.yaml", &|_| None).expect("config");
    let edges = TestEdges {
        clock: Utc::new(),
        guards: LiveGuards::new(dir.path()),
        rules: String::new(),
    };
    let stores = support::sqlite_stores(&config, dir.path());
    let guard_config = config.memory_guard.clone().expect("a guard");
    let mut daemon = Daemon::new(config, dir.path(), stores, Arc::new(edges)).expect("daemon");
    daemon.guard = Some(Arc::new(nightwatch_guard::Guard::new(
        guard_config,
        Err(nightwatch_guard::Unavailable(
            "cgroup v2 is not mounted; cgroup v1's memory hierarchy is not mounted".into(),
        )),
    )));
    let daemon = Arc::new(daemon);
    let mut threads = runner::start(&daemon);
    threads.extend(guard::start(&daemon));
    (dir, daemon, threads)
}

fn disposition(daemon: &Daemon, wanted: &str) -> Option<Record> {
    records(daemon, event::DISPATCH)
        .into_iter()
        .find(|r| r.inputs["disposition"] == wanted)
}

fn wait_for(daemon: &Daemon, wanted: &str) -> Record {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(r) = disposition(daemon, wanted) {
            return r;
        }
        assert!(Instant::now() < deadline, "no {wanted} record");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn with_no_cgroup_to_be_had_a_required_guard_refuses_runbooks_saying_why() {
    let (_dir, daemon, threads) = without_cgroups(true);
    daemon.dispatch(vec![alert("unguarded")]).expect("stored");
    let refused = wait_for(&daemon, "refused");
    stop(&daemon, threads);
    assert!(
        refused.reasons[0].contains("no memory guard can be set up")
            && refused.reasons[0].contains("required is true"),
        "{:?}",
        refused.reasons
    );
    assert!(disposition(&daemon, "ran").is_none(), "it ran anyway");
    let watch = records(&daemon, event::WATCH);
    assert!(
        watch.iter().any(|r| r.inputs["subject"] == "cgroups"
            && r.inputs["seen"] == "found"
            && r.reasons[0].contains("refused")),
        "the missing guard is recorded: {watch:#?}"
    );
}

#[test]
fn with_no_cgroup_to_be_had_an_optional_guard_runs_runbooks_unguarded() {
    let (_dir, daemon, threads) = without_cgroups(false);
    daemon.dispatch(vec![alert("unguarded")]).expect("stored");
    wait_for(&daemon, "ran");
    stop(&daemon, threads);
    let watch = records(&daemon, event::WATCH);
    assert!(
        watch
            .iter()
            .any(|r| r.inputs["subject"] == "cgroups" && r.reasons[0].contains("without limits")),
        "{watch:#?}"
    );
}
