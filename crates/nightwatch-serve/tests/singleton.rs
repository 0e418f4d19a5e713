//! Jobs that run in exactly one place, in process: daemons sharing one data directory (and so
//! one `leases.db`) on a schedule of many short rounds run the janitor's sweep one at a time,
//! checked from the sweeps themselves and from the ledger's timestamps; the others record
//! that they stood down; a lease left by a host that died is taken over once it expires.

#[path = "support/daemon.rs"]
mod support;

use support::Utc;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nightwatch_gate::{Clock, Engine, Escalator, Guards, LiveGuards, NoEscalator};
use nightwatch_ledger::{Filter, Record, event};
use nightwatch_serve::singleton::JANITOR_SWEEP;
use nightwatch_serve::{Config, Daemon, Edges, runner};
use nightwatch_sqlite::SqliteLeases;
use nightwatch_store::{Acquired, Leases};

const EVERY: Duration = Duration::from_millis(100);

fn wall_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

/// One sweep as the test double saw it: which host, from when to when (wall clock, ms).
#[derive(Clone, Debug)]
struct Sweep {
    host: String,
    from_ms: i64,
    to_ms: i64,
}

/// Edges whose sweep takes a while and notes when it ran, on a log the test shares.
struct CountingSweeps {
    host: String,
    clock: Utc,
    guards: LiveGuards,
    log: Arc<Mutex<Vec<Sweep>>>,
}

impl Edges for CountingSweeps {
    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
    fn host(&self) -> Option<String> {
        Some(self.host.clone())
    }
    fn policy(&self) -> Result<Arc<nightwatch_policy::Policy>, String> {
        nightwatch_policy::Policy::from_yaml(
            "version: 1\ndefault: allow\n",
            nightwatch_shell::analyse,
        )
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
        let from_ms = wall_ms();
        std::thread::sleep(Duration::from_millis(15));
        let to_ms = wall_ms();
        self.log.lock().unwrap().push(Sweep {
            host: self.host.clone(),
            from_ms,
            to_ms,
        });
        Ok("swept".into())
    }
    fn runbook_env(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// A daemon named `host` over the stores in `dir`, as the binary opens them for a host alone,
/// sweeping every [`EVERY`] as a singleton.
fn daemon(dir: &Path, host: &str, log: &Arc<Mutex<Vec<Sweep>>>) -> Arc<Daemon> {
    let mut config = Config::defaults();
    config.janitor_every = Some(EVERY);
    config.janitor_singleton = true;
    config.queue.workers = 1;
    let stores = support::sqlite_stores(&config, dir);
    let edges = CountingSweeps {
        host: host.into(),
        clock: Utc::new(),
        guards: LiveGuards::new(dir),
        log: log.clone(),
    };
    Arc::new(Daemon::new(config, dir, stores, Arc::new(edges)).expect("daemon"))
}

fn records(daemon: &Daemon, name: &str) -> Vec<Record> {
    daemon
        .reader()
        .query(&Filter {
            event: Some(name.to_owned()),
            ..Filter::default()
        })
        .expect("the ledger reads")
}

fn token(r: &Record) -> u64 {
    r.inputs["token"].as_u64().expect("a token")
}

/// Runs `daemons` until `done` says so (or a minute passes), then stops them.
fn run_until(daemons: &[Arc<Daemon>], done: impl Fn() -> bool) {
    let threads: Vec<_> = daemons.iter().flat_map(runner::start).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for d in daemons {
        d.begin_shutdown();
    }
    for thread in threads {
        thread.join().expect("no daemon thread died");
    }
}

#[test]
fn two_daemons_sweeping_every_100ms_never_sweep_at_once_and_the_other_stands_down() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = Arc::new(Mutex::new(Vec::new()));
    let a = daemon(dir.path(), "host-a", &log);
    let b = daemon(dir.path(), "host-b", &log);
    run_until(&[a.clone(), b.clone()], || log.lock().unwrap().len() >= 25);

    // The sweeps themselves, as the double saw them: one at a time.
    let mut sweeps = log.lock().unwrap().clone();
    assert!(sweeps.len() >= 25, "only {} sweeps ran", sweeps.len());
    sweeps.sort_by_key(|s| s.from_ms);
    for pair in sweeps.windows(2) {
        assert!(
            pair[1].from_ms >= pair[0].to_ms,
            "two sweeps at once: {pair:?}"
        );
    }

    // The ledger's account, alone: each run bracketed by its start and end, in order of
    // token, and no run's start before the previous one's end.
    let starts = records(&a, event::SINGLETON_START);
    let ends = records(&a, event::SINGLETON_END);
    assert_eq!(starts.len(), sweeps.len(), "one start record per sweep");
    assert_eq!(ends.len(), sweeps.len(), "one end record per sweep");
    let mut runs = Vec::new();
    for start in &starts {
        assert_eq!(start.inputs["job"], JANITOR_SWEEP);
        let end = ends
            .iter()
            .find(|e| token(e) == token(start))
            .unwrap_or_else(|| panic!("no end for {start:?}"));
        assert!(end.seq > start.seq);
        assert_eq!(start.context.host, end.context.host);
        runs.push((
            start.timestamp_ms,
            end.timestamp_ms,
            token(start),
            start.seq,
        ));
    }
    runs.sort_by_key(|r| r.3);
    for pair in runs.windows(2) {
        let ((_, ended, earlier, _), (started, _, later, _)) = (pair[0], pair[1]);
        assert!(later > earlier, "tokens only grow: {pair:?}");
        assert!(
            started >= ended,
            "run {later} started at {started} before run {earlier} ended at {ended}"
        );
    }
    // Once a period of all the hosts: a run keeps the lease for the rest of its period.
    for pair in runs.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(
            gap >= 50,
            "two runs {gap} ms apart in one 100 ms period: {pair:?}"
        );
    }

    // Each host's sweeps are the runs the ledger puts on that host.
    for host in ["host-a", "host-b"] {
        let swept = sweeps.iter().filter(|s| s.host == host).count();
        let started = starts
            .iter()
            .filter(|r| r.context.host.as_deref() == Some(host))
            .count();
        assert_eq!(swept, started, "{host}");
    }

    // The host that did not run said so, naming the holder and until when.
    let stood = records(&a, event::STOOD_DOWN);
    assert!(!stood.is_empty(), "no host stood down");
    for r in &stood {
        let me = r.context.host.clone().expect("the host that stood down");
        let holder = r.inputs["holder"].as_str().expect("who holds it");
        assert_ne!(holder, me, "{r:?}");
        assert!(r.inputs["until_ms"].as_i64().expect("until") > r.timestamp_ms - 1_000);
        assert!(r.reasons[0].contains("holds the lease on janitor-sweep"));
    }
}

#[test]
fn a_lease_left_by_a_host_that_died_is_taken_over_once_it_expires() {
    let dir = tempfile::tempdir().expect("temp dir");
    // host-a took the lease and died mid-sweep: nobody renews it.
    let leases = SqliteLeases::open(dir.path()).expect("leases");
    let Acquired::Got(dead) = leases
        .acquire(JANITOR_SWEEP, "host-a", 700, wall_ms())
        .expect("acquired")
    else {
        panic!("the lease was free")
    };
    let log = Arc::new(Mutex::new(Vec::new()));
    let b = daemon(dir.path(), "host-b", &log);
    run_until(std::slice::from_ref(&b), || !log.lock().unwrap().is_empty());

    let sweeps = log.lock().unwrap().clone();
    assert!(!sweeps.is_empty(), "host-b never took over");
    assert!(
        sweeps[0].from_ms >= dead.until_ms,
        "host-b swept at {} while host-a's lease ran to {}",
        sweeps[0].from_ms,
        dead.until_ms
    );
    let stood = records(&b, event::STOOD_DOWN);
    assert!(!stood.is_empty(), "host-b waited without saying so");
    for r in &stood {
        assert_eq!(r.inputs["holder"], "host-a");
        assert_eq!(r.inputs["until_ms"], dead.until_ms);
        assert_eq!(r.context.host.as_deref(), Some("host-b"));
    }
    let starts = records(&b, event::SINGLETON_START);
    assert_eq!(starts[0].inputs["holder"], "host-b");
    assert!(
        token(&starts[0]) > dead.token,
        "a higher token fences host-a"
    );
    // host-a, were it to wake now, could neither renew nor release.
    assert_eq!(leases.renew(&dead, 1_000, wall_ms()).unwrap(), None);
    assert!(!leases.release(&dead, wall_ms()).unwrap());
}
