//! The idle controller in process, against a scripted container engine (the steps' outcomes:
//! done, failed, hung) and a real HTTP upstream for its readiness check. What this pins is the
//! controller's logic: who keeps an app awake, what a sleeping app answers, every step through
//! the engine and the ledger, failures undone, backed off and quarantined. The same flows run
//! against the real Docker Engine through the binary in `crates/nightwatch/tests/idle_docker.rs`.

#[path = "support/daemon.rs"]
mod support;

use support::Utc;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nightwatch_gate::{Clock, Engine, Escalator, Guards, LiveGuards, NoEscalator};
use nightwatch_idle::runtime::Step;
use nightwatch_idle::{Observed, Phase, Runtime, SignalSeen, SuspendMode, Target};
use nightwatch_ledger::{Filter, Record, event};
use nightwatch_serve::http::ConnectionLimits;
use nightwatch_serve::idle::control::{Admit, AppControl, Door, Health, IdleControl, Seen};
use nightwatch_serve::idle::proxy::{Upstream, serve_proxy};
use nightwatch_serve::{Config, Daemon, Edges};

/// How each step of the scripted engine goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Goes {
    Done,
    Fails,
    Hangs,
}

/// A container engine whose steps go as the test says; the app it runs answers its readiness
/// check only while running (and `ready` is set).
struct Scripted {
    state: Mutex<Observed>,
    suspend: Mutex<Goes>,
    resume: Mutex<Goes>,
    exec_sessions: AtomicUsize,
    signals_fail: AtomicBool,
    ready: Arc<AtomicBool>,
    running: Arc<AtomicBool>,
    resumes: AtomicUsize,
    suspends: AtomicUsize,
}

impl Scripted {
    fn set(&self, observed: Observed) {
        self.running
            .store(observed == Observed::Running, Ordering::SeqCst);
        *self.state.lock().unwrap() = observed;
    }
}

impl Runtime for Scripted {
    fn observe<'a>(&'a self, _: &'a Target) -> Step<'a, Observed> {
        Box::pin(async move { Ok(self.state.lock().unwrap().clone()) })
    }
    fn suspend<'a>(&'a self, _: &'a Target, mode: SuspendMode) -> Step<'a, ()> {
        Box::pin(async move {
            self.suspends.fetch_add(1, Ordering::SeqCst);
            let goes = *self.suspend.lock().unwrap();
            match goes {
                Goes::Done => {
                    self.set(match mode {
                        SuspendMode::Pause => Observed::Paused,
                        SuspendMode::Stop => Observed::Stopped,
                    });
                    Ok(())
                }
                Goes::Fails => Err("the engine refused: cannot pause".into()),
                Goes::Hangs => {
                    // A frozen container's pause: the engine never answers, and the
                    // container is left half-paused (not answering).
                    self.running.store(false, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                    Ok(())
                }
            }
        })
    }
    fn resume<'a>(&'a self, _: &'a Target) -> Step<'a, ()> {
        Box::pin(async move {
            self.resumes.fetch_add(1, Ordering::SeqCst);
            let goes = *self.resume.lock().unwrap();
            match goes {
                Goes::Done => {
                    self.set(Observed::Running);
                    Ok(())
                }
                Goes::Fails => Err("the engine refused: cannot start".into()),
                Goes::Hangs => std::future::pending().await,
            }
        })
    }
    fn signals<'a>(
        &'a self,
        _: &'a Target,
        specs: &'a [nightwatch_idle::spec::SignalSpec],
    ) -> Step<'a, Vec<SignalSeen>> {
        Box::pin(async move {
            if self.signals_fail.load(Ordering::SeqCst) {
                return Err("the engine refused: cannot list execs".into());
            }
            Ok(specs
                .iter()
                .map(|s| SignalSeen {
                    name: s.name.clone(),
                    count: self.exec_sessions.load(Ordering::SeqCst),
                    activity: s.activity,
                })
                .collect())
        })
    }
}

struct TestEdges {
    clock: Utc,
    guards: LiveGuards,
    policy: String,
    runtime: Arc<Scripted>,
}

impl Edges for TestEdges {
    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
    fn host(&self) -> Option<String> {
        Some("test-host".into())
    }
    fn policy(&self) -> Result<Arc<nightwatch_policy::Policy>, String> {
        nightwatch_policy::Policy::from_yaml(&self.policy, nightwatch_shell::analyse)
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
    fn idle_runtime(&self) -> Result<Arc<dyn Runtime>, String> {
        Ok(self.runtime.clone())
    }
}

/// The app's upstream: answers any path while the scripted engine runs it (and it is ready),
/// marking its own answers `X-App`; counts the requests other than its readiness checks.
async fn upstream(
    running: Arc<AtomicBool>,
    ready: Arc<AtomicBool>,
    hits: Arc<AtomicUsize>,
) -> SocketAddr {
    use axum::http::StatusCode;
    let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap| {
        let up = running.load(Ordering::SeqCst) && ready.load(Ordering::SeqCst);
        if headers
            .get("user-agent")
            .is_none_or(|a| a != "nightwatch-readiness")
        {
            hits.fetch_add(1, Ordering::SeqCst);
        }
        async move {
            if up {
                (StatusCode::OK, [("x-app", "shop")], "{\"status\":\"ok\"}")
            } else {
                (StatusCode::SERVICE_UNAVAILABLE, [("x-app", "shop")], "down")
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

struct World {
    daemon: Arc<Daemon>,
    control: Arc<IdleControl>,
    engine: Arc<Scripted>,
    /// Requests that reached the app, its readiness checks aside.
    hits: Arc<AtomicUsize>,
    _dir: tempfile::TempDir,
}

impl World {
    fn app(&self) -> &Arc<AppControl> {
        &self.control.apps[0]
    }

    fn phase(&self) -> Phase {
        *self.app().watch().borrow()
    }

    async fn until(&self, what: &str, within: Duration, test: impl Fn(&World) -> bool) {
        let deadline = Instant::now() + within;
        while !test(self) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; phase {:?}",
                self.phase()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The daemon's own proxy in front of the app (`listen`), with the controller at its door.
    async fn proxy(&self) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let door = Arc::new(Door::new(
            self.daemon.clone(),
            self.control.clone(),
            self.app().clone(),
        ));
        let limits = ConnectionLimits {
            max_connections: 16,
            header_read: Duration::from_secs(5),
        };
        tokio::spawn(serve_proxy(
            listener,
            Upstream::new(self.app().spec.upstream),
            door,
            limits,
            std::future::pending(),
        ));
        addr
    }

    async fn ask(&self, agent: &str, path: &str) -> Admit {
        self.ask_with("GET", agent, path).await
    }

    async fn ask_with(&self, method: &str, agent: &str, path: &str) -> Admit {
        let seen = Seen {
            method: method.into(),
            path: path.into(),
            user_agent: Some(agent.into()),
            client: "192.0.2.7".parse().unwrap(),
        };
        self.control.admit(&self.daemon, self.app(), &seen).await
    }

    fn records(&self) -> Vec<Record> {
        self.daemon
            .reader()
            .query(&Filter::default())
            .expect("the ledger reads")
    }

    fn idle_records(&self, to: &str) -> Vec<Record> {
        self.records()
            .into_iter()
            .filter(|r| r.event == event::IDLE && r.inputs["to"] == to)
            .collect()
    }

    fn decisions(&self, tool: &str) -> Vec<Record> {
        self.records()
            .into_iter()
            .filter(|r| r.event == event::DECISION && r.tool == tool)
            .collect()
    }
}

const ALLOW_ALL: &str = "version: 1\nextends: builtin\n";
const KUMA: &str = "Uptime-Kuma/1.23.16";
const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

async fn world(app_yaml: &str, policy: &str) -> World {
    let ready = Arc::new(AtomicBool::new(true));
    let running = Arc::new(AtomicBool::new(true));
    let hits = Arc::new(AtomicUsize::new(0));
    let upstream = upstream(running.clone(), ready.clone(), hits.clone()).await;
    let engine = Arc::new(Scripted {
        state: Mutex::new(Observed::Running),
        suspend: Mutex::new(Goes::Done),
        resume: Mutex::new(Goes::Done),
        exec_sessions: AtomicUsize::new(0),
        signals_fail: AtomicBool::new(false),
        ready,
        running,
        resumes: AtomicUsize::new(0),
        suspends: AtomicUsize::new(0),
    });
    let dir = tempfile::tempdir().unwrap();
    // Steps are quick here unless the test says otherwise (a stop's must outlast its grace).
    let step = if app_yaml.contains("step_timeout") {
        ""
    } else {
        "      step_timeout: 500ms\n"
    };
    let yaml = format!(
        "idle:\n  apps:\n    shop:\n      container: shop\n      hosts: [shop.test]\n      upstream: {upstream}\n      ready: {{ http: /healthz }}\n{step}      wake_timeout: 2s\n{app_yaml}"
    );
    let config = Config::from_text(&yaml, "serve.yaml", &|_| None).expect("config");
    let stores = support::sqlite_stores(&config, dir.path());
    let edges = TestEdges {
        clock: Utc::new(),
        guards: LiveGuards::new(dir.path()),
        policy: policy.replace("DIR", &dir.path().display().to_string()),
        runtime: engine.clone(),
    };
    let daemon = Arc::new(Daemon::new(config, dir.path(), stores, Arc::new(edges)).unwrap());
    let control = daemon.idle.clone().expect("the controller");
    tokio::spawn(control.clone().run(daemon.clone()));
    let w = World {
        daemon,
        control,
        engine,
        hits,
        _dir: dir,
    };
    w.until(
        "the controller to find the app",
        Duration::from_secs(5),
        |w| w.phase() == Phase::Awake,
    )
    .await;
    w
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitor_polling_lets_the_app_sleep_and_a_person_wakes_it() {
    let w = world("      idle_after: 2s\n", ALLOW_ALL).await;
    // Uptime Kuma polls faster than the idle timeout; the app sleeps anyway.
    let started = Instant::now();
    while w.phase() == Phase::Awake {
        assert!(matches!(w.ask(KUMA, "/").await, Admit::Forward));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "it never slept"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    w.until("asleep", Duration::from_secs(5), |w| {
        w.phase() == Phase::Asleep
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "slept before its idle_after"
    );

    // The monitor's next health check gets the kept answer and does not wake it; the same
    // monitor asking the home page is refused, saying why.
    let resumes = w.engine.resumes.load(Ordering::SeqCst);
    match w.ask(KUMA, "/healthz").await {
        Admit::Kept(Some(kept)) => {
            assert_eq!(kept.status, 200);
            assert_eq!(&kept.body[..], b"{\"status\":\"ok\"}");
        }
        other => panic!("a robot's health check got {other:?}"),
    }
    match w.ask(KUMA, "/").await {
        Admit::Unavailable { why, asleep, .. } => {
            assert!(asleep);
            assert!(why.contains("GET / (monitor: Uptime Kuma)"), "{why}");
        }
        other => panic!("a robot's GET / got {other:?}"),
    }
    assert_eq!(w.phase(), Phase::Asleep);
    assert_eq!(w.engine.resumes.load(Ordering::SeqCst), resumes);

    // A person's request wakes it and is forwarded once it answers.
    assert!(matches!(w.ask(FIREFOX, "/cart").await, Admit::Forward));
    assert_eq!(w.phase(), Phase::Awake);

    // Both steps went through the engine, allowed by the built-in rule, with results.
    let suspends = w.decisions("suspend_app");
    assert_eq!(suspends.len(), 1);
    assert_eq!(suspends[0].verdict.as_deref(), Some("allow"));
    assert_eq!(suspends[0].actor.kind, "idle-controller");
    assert_eq!(
        suspends[0].inputs["seen"]["robots"]["monitor"]
            .as_u64()
            .map(|n| n > 0),
        Some(true)
    );
    let wakes = w.decisions("wake_app");
    assert_eq!(wakes.len(), 1);
    assert_eq!(wakes[0].inputs["person"]["path"], "/cart");
    let asleep = w.idle_records("asleep");
    assert!(
        asleep
            .iter()
            .any(|r| r.reasons[0].starts_with("paused after")),
        "{asleep:?}"
    );
    let awake = w.idle_records("awake");
    let woke = awake
        .iter()
        .find(|r| r.inputs["from"] == "asleep" && r.inputs["person"]["path"] == "/cart")
        .expect("the wake is recorded");
    // What was seen while it slept goes with the wake: one kept answer, one refusal.
    assert_eq!(woke.inputs["seen"]["kept"], 1, "{:#}", woke.inputs);
    assert_eq!(
        woke.inputs["seen"]["refused"]["GET /"], 1,
        "{:#}",
        woke.inputs
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_session_keeps_it_awake_and_says_so_once() {
    let w = world("      idle_after: 1s\n", ALLOW_ALL).await;
    w.engine.exec_sessions.store(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(w.phase(), Phase::Awake);
    assert_eq!(w.engine.suspends.load(Ordering::SeqCst), 0);
    let held = w.idle_records("awake");
    let holds: Vec<_> = held
        .iter()
        .filter(|r| r.reasons[0] == "kept awake by exec")
        .collect();
    assert_eq!(
        holds.len(),
        1,
        "one record per change, not per look: {held:?}"
    );
    // The session ends: idle counts from then.
    w.engine.exec_sessions.store(0, Ordering::SeqCst);
    w.until("asleep", Duration::from_secs(6), |w| {
        w.phase() == Phase::Asleep
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_that_is_not_activity_does_not_hold_it() {
    let w = world(
        "      idle_after: 1s\n      signals: { replication: { process: \"postgres: walsender*\", activity: false } }\n",
        ALLOW_ALL,
    )
    .await;
    w.engine.exec_sessions.store(1, Ordering::SeqCst);
    w.until("asleep", Duration::from_secs(6), |w| {
        w.phase() == Phase::Asleep
    })
    .await;
    let suspend = &w.decisions("suspend_app")[0];
    assert_eq!(suspend.inputs["signals"][0]["name"], "replication");
    assert_eq!(suspend.inputs["signals"][0]["activity"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_vetoes_the_suspend_and_the_veto_is_recorded() {
    let policy = "version: 1
extends: builtin
checks:
  backup-running:
    lock_file: { glob: \"DIR/backup.lock\" }
    on_match: halt
    message: a backup is running; suspending now would cut it off
rules:
  - id: suspends-wait-for-backups
    verdict: allow
    actor: { kind: [idle-controller] }
    tool: suspend_app
    checks: [backup-running]
";
    let w = world(
        "      idle_after: 1s\n      failures: { initial: 30s }\n",
        policy,
    )
    .await;
    std::fs::write(w.daemon.data_dir.join("backup.lock"), "").unwrap();
    w.until("a decided suspend", Duration::from_secs(6), |w| {
        !w.decisions("suspend_app").is_empty()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let vetoed = &w.decisions("suspend_app")[0];
    assert_eq!(vetoed.verdict.as_deref(), Some("halt"));
    assert!(
        vetoed
            .reasons
            .iter()
            .any(|r| r.contains("a backup is running")),
        "{:?}",
        vetoed.reasons
    );
    assert_eq!(w.phase(), Phase::Awake);
    assert_eq!(
        w.engine.suspends.load(Ordering::SeqCst),
        0,
        "vetoed, not done"
    );
    // Not proposed again every second.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(w.decisions("suspend_app").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_that_hangs_is_undone_and_recorded() {
    let w = world(
        "      idle_after: 1s\n      failures: { initial: 30s }\n",
        ALLOW_ALL,
    )
    .await;
    *w.engine.suspend.lock().unwrap() = Goes::Hangs;
    w.until("the undo", Duration::from_secs(8), |w| {
        w.engine.resumes.load(Ordering::SeqCst) > 0 && w.phase() == Phase::Awake
    })
    .await;
    let undone = w.idle_records("awake");
    let record = undone
        .iter()
        .find(|r| r.inputs["from"] == "suspending")
        .expect("the undo is recorded");
    assert!(
        record.reasons[0].contains("did not finish within 500ms"),
        "{}",
        record.reasons[0]
    );
    assert!(
        record.reasons[0].contains("undone: resumed"),
        "{}",
        record.reasons[0]
    );
    assert_eq!(record.inputs["failures"], 1);
    let results: Vec<_> = w
        .records()
        .into_iter()
        .filter(|r| r.event == event::RESULT && r.tool == "suspend_app")
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].outputs.as_ref().unwrap().exit_code, Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_failures_back_off_then_quarantine_and_tell_once() {
    let w = world(
        "      idle_after: 1s\n      failures: { initial: 200ms, max: 400ms, quarantine_after: 3, notify: [oncall] }\n",
        ALLOW_ALL,
    )
    .await;
    *w.engine.suspend.lock().unwrap() = Goes::Fails;
    w.until("quarantine", Duration::from_secs(15), |w| {
        w.phase() == Phase::Quarantined
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        w.engine.suspends.load(Ordering::SeqCst),
        3,
        "no tries after quarantine"
    );
    let told = w.idle_records("quarantined");
    assert_eq!(told.len(), 1, "a person is told once");
    let notify = &told[0].safeguards.as_ref().unwrap()["notify"];
    assert_eq!(notify[0], "oncall");
    // Backed off: the failures are at least the backoff apart.
    let failures: Vec<i64> = w
        .records()
        .into_iter()
        .filter(|r| r.event == event::RESULT && r.tool == "suspend_app")
        .map(|r| r.timestamp_ms)
        .collect();
    assert_eq!(failures.len(), 3);
    assert!(failures[1] - failures[0] >= 200, "{failures:?}");
    assert!(failures[2] - failures[1] >= 400, "{failures:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_that_starts_but_never_answers_is_half_awake_never_awake() {
    let w = world(
        "      idle_after: 1s\n      suspend: stop\n      step_timeout: 11s\n      failures: { initial: 300ms }\n",
        ALLOW_ALL,
    )
    .await;
    w.until("asleep", Duration::from_secs(6), |w| {
        w.phase() == Phase::Asleep
    })
    .await;
    w.engine.ready.store(false, Ordering::SeqCst);
    match w.ask(FIREFOX, "/").await {
        Admit::Unavailable { why, .. } => assert!(why.contains("not ready"), "{why}"),
        other => panic!("a person got {other:?} from an app that does not answer"),
    }
    assert_eq!(w.phase(), Phase::HalfAwake);
    assert!(!w.idle_records("half-awake").is_empty());
    // Robots are not given a half-awake app.
    assert!(matches!(w.ask(KUMA, "/").await, Admit::Unavailable { .. }));
    // Once it answers, the controller's recovery finds it awake.
    w.engine.ready.store(true, Ordering::SeqCst);
    w.until("awake", Duration::from_secs(8), |w| {
        w.phase() == Phase::Awake
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_that_cannot_be_read_keep_it_awake_and_say_so_at_most_once_a_backoff() {
    let w = world(
        "      idle_after: 1s\n      failures: { initial: 2s }\n",
        ALLOW_ALL,
    )
    .await;
    w.engine.signals_fail.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(4_500)).await;
    assert_eq!(w.phase(), Phase::Awake);
    assert_eq!(w.engine.suspends.load(Ordering::SeqCst), 0);
    let said: Vec<_> = w
        .idle_records("awake")
        .into_iter()
        .filter(|r| r.reasons[0].starts_with("not suspended: its signals cannot be read"))
        .collect();
    assert!(
        (1..=3).contains(&said.len()),
        "once per 2 s backoff, not once a second: {}",
        said.len()
    );
    w.engine.signals_fail.store(false, Ordering::SeqCst);
    w.until("asleep", Duration::from_secs(6), |w| {
        w.phase() == Phase::Asleep
    })
    .await;
}

/// The tester's night: a sync client POSTs every few seconds through the daemon's proxy, is
/// classed a robot by its rhythm, and the app sleeps. From then on every POST is refused with
/// 503, `Retry-After` and `X-Nightwatch-Asleep`: no 2xx the app did not send, nothing
/// forwarded to it, no wake. The first refusal is recorded with why; the rest are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn periodic_posts_are_never_answered_2xx_by_nightwatch_while_the_app_sleeps() {
    let w = world("      idle_after: 2s\n", ALLOW_ALL).await;
    let proxy = w.proxy().await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<axum::body::Body>();
    let post = || {
        hyper::Request::post(format!("http://{proxy}/orders/sync"))
            .header("user-agent", "orders-sync/1.0")
            .header("content-type", "application/json")
            .body(axum::body::Body::from("{\"orders\":[1]}"))
            .unwrap()
    };
    let started = Instant::now();
    let mut refused_asleep = 0;
    let mut from_the_app = 0;
    while refused_asleep < 4 {
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "the app never slept under the sync client; phase {:?}",
            w.phase()
        );
        let asked_at = Instant::now();
        let response = client.request(post()).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(axum::body::Body::new(response.into_body()), 1 << 20)
            .await
            .unwrap();
        let body = String::from_utf8_lossy(&body);
        if headers.contains_key("x-app") {
            // The app's own answer, while it was awake.
            from_the_app += 1;
            assert!(!headers.contains_key("x-nightwatch-asleep"), "{headers:?}");
        } else {
            assert!(
                !status.is_success(),
                "nightwatch answered a POST {status} in the app's place: {body}"
            );
            assert_eq!(status, 503, "{body}");
            assert_eq!(headers["retry-after"], "30");
            assert_eq!(headers["x-nightwatch-asleep"], "shop");
            assert!(body.contains("POST /orders/sync (polling"), "{body}");
            refused_asleep += 1;
        }
        // A period the classifier sees as polling (at least 2 s, steady).
        tokio::time::sleep(Duration::from_millis(2_100).saturating_sub(asked_at.elapsed())).await;
    }
    assert_eq!(w.phase(), Phase::Asleep);
    assert_eq!(
        w.hits.load(Ordering::SeqCst),
        from_the_app,
        "only the POSTs the app answered reached it"
    );
    assert!(from_the_app >= 3, "it was awake for the first POSTs");
    assert_eq!(
        w.engine.resumes.load(Ordering::SeqCst),
        0,
        "a robot woke it"
    );
    let refusals: Vec<Record> = w
        .records()
        .into_iter()
        .filter(|r| r.event == event::IDLE && r.inputs.get("refused").is_some())
        .collect();
    assert_eq!(
        refusals.len(),
        1,
        "the first refusal recorded, the rest counted"
    );
    assert_eq!(refusals[0].inputs["refused"]["method"], "POST");
    assert_eq!(refusals[0].inputs["refused"]["path"], "/orders/sync");
    assert_eq!(refusals[0].inputs["refused"]["robot"], "polling");
    assert!(
        refusals[0].reasons[0].contains("does not wake it"),
        "{}",
        refusals[0].reasons[0]
    );
    let seen = w.control.state(w.app()).seen;
    assert_eq!(seen.refused["POST /orders/sync"], refused_asleep);
    let metrics = w.daemon.metrics.render(&[], 0.0);
    assert!(
        metrics.contains(&format!(
            "nightwatch_idle_answers_total{{app=\"shop\",answer=\"refused\"}} {refused_asleep}"
        )),
        "{metrics}"
    );

    // A monitor's health check through the same proxy still gets the kept answer.
    let hits = w.hits.load(Ordering::SeqCst);
    let health = hyper::Request::get(format!("http://{proxy}/healthz"))
        .header("user-agent", KUMA)
        .body(axum::body::Body::empty())
        .unwrap();
    let response = client.request(health).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-nightwatch-asleep"], "shop");
    assert_eq!(w.hits.load(Ordering::SeqCst), hits);
    assert_eq!(w.phase(), Phase::Asleep);
}

/// `/idle/health`'s side of the controller: awake, the app answers the health check now (its
/// own status, even a failing one); asleep, the kept answer. Never a wake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_health_check_passed_on_is_answered_live_while_awake_and_kept_while_asleep() {
    let w = world("      idle_after: 1s\n", ALLOW_ALL).await;
    let check = || Seen {
        method: "GET".into(),
        path: "/healthz".into(),
        user_agent: Some(KUMA.into()),
        client: "192.0.2.9".parse().unwrap(),
    };
    match w
        .control
        .health(
            &w.daemon,
            w.app(),
            &check(),
            "/healthz?deep=1",
            Some("shop.test"),
        )
        .await
    {
        Health::Live(answer) => {
            assert_eq!(answer.status, 200);
            assert_eq!(&answer.body[..], b"{\"status\":\"ok\"}");
        }
        other => panic!("an awake app's health check got {other:?}"),
    }
    assert_eq!(w.hits.load(Ordering::SeqCst), 1, "the app answered it");
    w.until("asleep", Duration::from_secs(6), |w| {
        w.phase() == Phase::Asleep
    })
    .await;
    for _ in 0..3 {
        match w
            .control
            .health(&w.daemon, w.app(), &check(), "/healthz", Some("shop.test"))
            .await
        {
            Health::Answer(Admit::Kept(Some(kept))) => assert_eq!(kept.status, 200),
            other => panic!("a sleeping app's health check got {other:?}"),
        }
    }
    assert_eq!(w.phase(), Phase::Asleep);
    assert_eq!(w.engine.resumes.load(Ordering::SeqCst), 0);
    assert_eq!(
        w.hits.load(Ordering::SeqCst),
        1,
        "nothing reached the sleeping app"
    );
}
