//! The guard against real processes in real cgroups: a runaway allocator under a memory
//! limit is stopped (and the stop reported) before the kernel's OOM killer gets to it, while a
//! process outside the guard, standing for the database, lives on; under host-wide pressure
//! the lowest-priority job goes first, and only it.
//!
//! These need a cgroup the test may create (root, with cgroup v2's memory controller or cgroup
//! v1's memory hierarchy) and `perl` for the allocator. Without either they fail, saying so.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nightwatch_guard::{
    Cause, Cgroups, Guard, GuardConfig, GuardError, JobLimits, Killed, Percent, Placement, Stop,
    StopGate,
};
use nightwatch_spec::backup::ByteSize;

/// Grows by a mebibyte every 20 ms, touching every page: about 50 MiB a second, slow enough
/// for the guard's looks to catch it and fast enough to hit a 64 MiB limit in seconds.
const ALLOCATOR: &str =
    "$|=1; my @kept; while (1) { push @kept, 'x' x (1 << 20); select(undef, undef, undef, 0.02) }";

fn guard(yaml: &str) -> Guard {
    let cgroups = Cgroups::detect().unwrap_or_else(|e| {
        panic!(
            "the memory guard's tests need a cgroup they can create (run as root where cgroup \
             v2's memory controller or cgroup v1's memory hierarchy is available): {e}"
        )
    });
    Guard::new(
        GuardConfig::from_yaml(yaml).expect("the config reads"),
        Ok(cgroups),
    )
}

fn limits(memory: u64, priority: u8) -> JobLimits {
    JobLimits {
        memory: ByteSize(memory),
        cpu: Some(Percent(100.0)),
        priority,
    }
}

/// A name no other test (or run) uses at the same time.
fn name(what: &str) -> String {
    format!("test-{what}-{}", std::process::id())
}

/// Starts `argv` inside `placement`'s cgroup, entering it before exec.
fn spawn_in(placement: &Placement, argv: &[&str]) -> Child {
    let mut command = Command::new(argv[0]);
    command
        .args(&argv[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let hook = placement
        .enter_hook()
        .expect("a guarded placement has a cgroup");
    // SAFETY: the hook only calls getpid, open, write and close (async-signal-safe).
    unsafe {
        command.pre_exec(hook);
    }
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("{} could not be started (is it installed?): {e}", argv[0]));
    let pids = placement
        .cgroup()
        .unwrap()
        .pids()
        .expect("cgroup.procs reads");
    assert!(
        pids.contains(&(child.id() as i32)),
        "{} (pid {}) runs outside its cgroup {}: {pids:?}",
        argv[0],
        child.id(),
        placement.cgroup().unwrap().dir().display()
    );
    child
}

fn protected() -> Child {
    Command::new("sleep")
        .arg("600")
        .spawn()
        .expect("sleep starts (the protected process)")
}

/// A gate that allows (or declines) every stop and keeps what it was told.
struct Recorder {
    allow: bool,
    asked: Vec<Stop>,
    done: Vec<(String, Result<Killed, String>)>,
}

impl Recorder {
    fn allowing(allow: bool) -> Recorder {
        Recorder {
            allow,
            asked: Vec::new(),
            done: Vec::new(),
        }
    }
}

impl StopGate for Recorder {
    fn allow(&mut self, stop: &Stop) -> Result<(), String> {
        self.asked.push(stop.clone());
        if self.allow {
            Ok(())
        } else {
            Err("policy says deny".into())
        }
    }
    fn done(&mut self, stop: &Stop, result: &Result<Killed, GuardError>) {
        let result = match result {
            Ok(killed) => Ok(killed.clone()),
            Err(e) => Err(e.to_string()),
        };
        self.done.push((stop.job.name.clone(), result));
    }
}

fn alive(child: &mut Child) -> bool {
    matches!(child.try_wait(), Ok(None))
}

fn end(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_runaway_allocator_is_stopped_before_the_oom_killer_and_the_database_survives() {
    let guard = guard("stop_at: 50%\nmem_available_below: 0%\nswap_free_below: 0%\npressure: ~");
    let placement = guard
        .start_with(&name("runaway"), limits(64 << 20, 50))
        .expect("the runaway's cgroup is made");
    let dir = placement.cgroup().unwrap().dir().to_path_buf();
    assert_eq!(
        placement.cgroup().unwrap().cpu_max().as_deref(),
        Some("100000 100000"),
        "one core: 100 ms of CPU every 100 ms"
    );
    let mut database = protected();
    let mut runaway = spawn_in(&placement, &["perl", "-e", ALLOCATOR]);

    let mut gate = Recorder::allowing(true);
    let began = Instant::now();
    let outcomes = loop {
        let now_ms = began.elapsed().as_millis() as i64;
        let outcomes = guard.run(now_ms, &mut gate);
        if !outcomes.is_empty() {
            break outcomes;
        }
        if let Ok(Some(status)) = runaway.try_wait() {
            panic!(
                "the runaway ended before the guard stopped it ({status}); the kernel's OOM kills \
                 in its cgroup: {:?}",
                placement.cgroup().unwrap().oom_kills()
            );
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "the guard never stopped the runaway"
        );
        std::thread::sleep(Duration::from_millis(20));
    };

    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    let stop = &outcomes[0].stop;
    assert_eq!(stop.job.name, name("runaway"));
    let Cause::NearItsLimit { usage, limit, .. } = stop.cause else {
        panic!("stopped for {:?}", stop.cause);
    };
    assert_eq!(limit, 64 << 20);
    assert!(usage >= 32 << 20, "stopped at {usage} bytes");
    let killed = outcomes[0].result.as_ref().expect("the stop worked");
    assert!(killed.processes >= 1, "{killed:?}");
    assert_eq!(
        killed.oom_kills,
        Some(0),
        "the kernel's OOM killer had already killed in the cgroup"
    );
    // What the gate was told: the stop, and how it went.
    assert_eq!(gate.asked.len(), 1);
    assert_eq!(gate.done.len(), 1);
    assert!(gate.done[0].1.is_ok(), "{:?}", gate.done);

    let status = runaway.wait().expect("the runaway is reaped");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
    assert!(alive(&mut database), "the protected process was killed");

    let ended = guard.finish(placement);
    let why = ended.stopped.expect("the guard says it stopped the job");
    assert!(why.contains("stop_at 50%"), "{why}");
    assert_eq!(ended.left, None);
    assert!(!dir.exists(), "{} was not removed", dir.display());
    end(database);
}

#[test]
fn the_limit_is_real_a_runaway_nobody_watches_is_killed_by_the_kernel() {
    // The other side of the test above: with no look at it, the kernel's OOM killer ends the
    // same allocator under the same limit, and its counter says so. So a guard that did
    // nothing could not pass the test above.
    let guard = guard("pressure: ~");
    let placement = guard
        .start_with(&name("unwatched"), limits(64 << 20, 50))
        .expect("the cgroup is made");
    let mut runaway = spawn_in(&placement, &["perl", "-e", ALLOCATOR]);
    let began = Instant::now();
    let status = loop {
        if let Some(status) = runaway.try_wait().expect("waitable") {
            break status;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "the kernel did not enforce the 64 MiB limit"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
    let oom_kills = placement.cgroup().unwrap().oom_kills();
    assert!(
        oom_kills.is_some_and(|n| n >= 1),
        "OOM kills: {oom_kills:?}"
    );
    let ended = guard.finish(placement);
    assert_eq!(ended.stopped, None, "the guard did not stop it");
}

#[test]
fn under_host_pressure_the_lowest_priority_job_is_stopped_first_and_only_it() {
    // Every threshold already met: the host counts as short of memory at every look.
    let guard =
        guard("mem_available_below: 100%\nswap_free_below: 100%\npressure: ~\nstop_at: 100%");
    let agent = guard
        .start_with(&name("agent"), limits(256 << 20, 20))
        .expect("cgroup");
    let runbook = guard
        .start_with(&name("runbook"), limits(256 << 20, 50))
        .expect("cgroup");
    let mut agent_child = spawn_in(&agent, &["sleep", "600"]);
    let mut runbook_child = spawn_in(&runbook, &["sleep", "600"]);
    let mut database = protected();

    let mut gate = Recorder::allowing(true);
    let first = guard.run(0, &mut gate);
    assert_eq!(first.len(), 1, "one job per look: {first:?}");
    assert_eq!(first[0].stop.job.name, name("agent"));
    assert!(matches!(first[0].stop.cause, Cause::LowMemory { .. }));
    assert!(
        first[0].stop.reason().contains("priority 20"),
        "{}",
        first[0].stop.reason()
    );
    assert!(first[0].result.is_ok(), "{first:?}");
    let status = agent_child.wait().expect("reaped");
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert!(
        alive(&mut runbook_child),
        "the higher priority job was stopped too"
    );
    assert!(alive(&mut database));

    // Still short: the next look takes the next job, never the stopped one again.
    let second = guard.run(1000, &mut gate);
    assert_eq!(second.len(), 1, "{second:?}");
    assert_eq!(second[0].stop.job.name, name("runbook"));
    let _ = runbook_child.wait();
    assert!(
        guard.run(2000, &mut gate).is_empty(),
        "nothing left to stop"
    );
    assert!(alive(&mut database), "outside the guard, never chosen");

    for placement in [agent, runbook] {
        let dir = placement.cgroup().unwrap().dir().to_path_buf();
        let ended = guard.finish(placement);
        assert!(ended.stopped.is_some());
        assert!(!dir.exists(), "{} was not removed", dir.display());
    }
    end(database);
}

#[test]
fn a_declined_stop_kills_nothing_and_is_not_asked_again_at_once() {
    let guard = guard("mem_available_below: 100%\nswap_free_below: 100%\npressure: ~");
    let placement = guard
        .start_with(&name("declined"), limits(256 << 20, 10))
        .expect("cgroup");
    let mut child = spawn_in(&placement, &["sleep", "600"]);
    let mut gate = Recorder::allowing(false);
    let outcomes = guard.run(0, &mut gate);
    assert_eq!(outcomes.len(), 1);
    let why = outcomes[0].result.as_ref().unwrap_err();
    assert!(why.contains("policy says deny"), "{why}");
    assert!(gate.done.is_empty(), "nothing was done");
    std::thread::sleep(Duration::from_millis(100));
    assert!(alive(&mut child), "declined, yet killed");
    assert!(guard.run(1000, &mut gate).is_empty(), "asked again at once");
    let later = nightwatch_guard::DECLINED_FOR.as_millis() as i64;
    assert_eq!(guard.run(later, &mut gate).len(), 1, "asked again later");
    assert_eq!(gate.asked.len(), 2);
    let _ = child.kill();
    let _ = child.wait();
    let ended = guard.finish(placement);
    assert_eq!(ended.stopped, None);
    assert_eq!(ended.left, None);
}

#[test]
fn pressure_held_for_its_time_stops_the_lowest_priority_job_once() {
    // The host's readings come from files here: plenty of memory, but PSI says tasks stall
    // on memory 90% of the time.
    let proc_root = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(proc_root.path().join("pressure")).unwrap();
    std::fs::write(
        proc_root.path().join("meminfo"),
        "MemTotal: 1000000 kB\nMemAvailable: 900000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n",
    )
    .unwrap();
    std::fs::write(
        proc_root.path().join("pressure/memory"),
        "some avg10=90.00 avg60=50.00 avg300=10.00 total=123\nfull avg10=80.00 avg60=40.00 avg300=5.00 total=99\n",
    )
    .unwrap();
    let guard =
        guard("pressure: { some_avg10_above: 40%, for: 5s }").with_proc_root(proc_root.path());
    let low = guard
        .start_with(&name("psi-low"), limits(256 << 20, 10))
        .expect("cgroup");
    let high = guard
        .start_with(&name("psi-high"), limits(256 << 20, 90))
        .expect("cgroup");
    let mut low_child = spawn_in(&low, &["sleep", "600"]);
    let mut high_child = spawn_in(&high, &["sleep", "600"]);
    let mut gate = Recorder::allowing(true);

    assert!(guard.run(0, &mut gate).is_empty(), "not held long enough");
    assert!(
        guard.run(4_000, &mut gate).is_empty(),
        "not held long enough"
    );
    let stopped = guard.run(5_000, &mut gate);
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0].stop.job.name, name("psi-low"));
    assert!(
        matches!(stopped[0].stop.cause, Cause::Pressure { .. }),
        "{:?}",
        stopped[0].stop.cause
    );
    let _ = low_child.wait();
    // PSI's ten-second average lags: the window starts again, so the next job is not taken
    // on the same stale reading a second later.
    assert!(guard.run(6_000, &mut gate).is_empty());
    assert!(alive(&mut high_child));

    let _ = high_child.kill();
    let _ = high_child.wait();
    for placement in [low, high] {
        let dir = placement.cgroup().unwrap().dir().to_path_buf();
        guard.finish(placement);
        assert!(!dir.exists(), "{} was not removed", dir.display());
    }
}
