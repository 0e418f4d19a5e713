//! The daemon's workers in process: a task whose handling panics is caught, recorded and
//! retried, and the worker goes on with the next task. With one worker, a panic that killed it
//! would leave every later task unrun.

#[path = "support/daemon.rs"]
mod support;

use support::Utc;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nightwatch_gate::{Clock, Engine, Escalator, Guards, LiveGuards, NoEscalator};
use nightwatch_intake::{Alert, Source, Status};
use nightwatch_ledger::{Filter, Record, event};
use nightwatch_serve::{Config, Daemon, Edges, runner};
use nightwatch_store::{Answer, Offer, Offered, QueueOp};

/// The daemon over SQLite stores in `dir`, as the binary opens them.
fn daemon(config: Config, dir: &std::path::Path, edges: PanicsOnce) -> Arc<Daemon> {
    let stores = support::sqlite_stores(&config, dir);
    Arc::new(Daemon::new(config, dir, stores, Arc::new(edges)).expect("daemon"))
}

/// Edges whose policy panics the first time it is read: the first task's handling panics.
struct PanicsOnce {
    clock: Utc,
    guards: LiveGuards,
    reads: AtomicUsize,
}

impl Edges for PanicsOnce {
    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
    fn host(&self) -> Option<String> {
        Some("test-host".into())
    }
    fn policy(&self) -> Result<Arc<nightwatch_policy::Policy>, String> {
        if self.reads.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("a poisoned task");
        }
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

fn dispatches(daemon: &Daemon, disposition: &str) -> Vec<Record> {
    daemon
        .reader()
        .query(&Filter {
            event: Some(event::DISPATCH.to_owned()),
            ..Filter::default()
        })
        .expect("the ledger reads")
        .into_iter()
        .filter(|r| r.inputs["disposition"] == disposition)
        .collect()
}

#[test]
fn a_panicking_task_is_recorded_and_retried_and_the_worker_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config_file = dir.path().join("serve.yaml");
    std::fs::write(
        &config_file,
        "queue: { workers: 1, backoff_base: 100ms, backoff_cap: 200ms, max_attempts: 3 }\nroutes:\n  - id: all\n    run: [\"true\"]\n",
    )
    .unwrap();
    let config = Config::load(&config_file, &|_| None).expect("config");
    let edges = PanicsOnce {
        clock: Utc::new(),
        guards: LiveGuards::new(dir.path()),
        reads: AtomicUsize::new(0),
    };
    let daemon = daemon(config, dir.path(), edges);
    let threads = runner::start(&daemon);

    let dispatched = daemon
        .dispatch(vec![alert("first"), alert("second")])
        .expect("stored");
    assert_eq!(dispatched.len(), 2);

    let deadline = Instant::now() + Duration::from_secs(30);
    while dispatches(&daemon, "ran").len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    daemon.begin_shutdown();
    for thread in threads {
        thread.join().expect("no thread died");
    }

    let ran = dispatches(&daemon, "ran");
    assert_eq!(ran.len(), 2, "both tasks ran in the end: {ran:#?}");
    let panics = daemon
        .reader()
        .query(&Filter {
            event: Some(event::INTERNAL_ERROR.to_owned()),
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(panics.len(), 1, "{panics:#?}");
    assert!(
        panics[0].reasons[0].contains("a poisoned task"),
        "{:?}",
        panics[0].reasons
    );
    let failed = dispatches(&daemon, "failed");
    assert!(
        failed
            .iter()
            .any(|r| r.reasons[0].contains("panicked") && r.reasons[0].contains("retried")),
        "the panicked attempt failed and was retried: {failed:#?}"
    );
}

/// The whole daemon in process on a port of its own: it answers, takes an alert, runs its
/// runbook, and stops when told, joining its workers.
#[test]
fn the_daemon_serves_in_process_and_stops_when_told() {
    use std::io::{Read, Write};

    let dir = tempfile::tempdir().expect("temp dir");
    let config_file = dir.path().join("serve.yaml");
    std::fs::write(
        &config_file,
        "queue: { workers: 1 }\nroutes:\n  - id: all\n    run: [\"true\"]\n",
    )
    .unwrap();
    let config = Config::load(&config_file, &|_| None).expect("config");
    let edges = PanicsOnce {
        clock: Utc::new(),
        guards: LiveGuards::new(dir.path()),
        // Past its one panic: this test is about serving.
        reads: AtomicUsize::new(1),
    };
    let daemon = daemon(config, dir.path(), edges);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = runtime.spawn(nightwatch_serve::serve(
        daemon.clone(),
        listener,
        async {
            let _ = stopped.await;
        },
        || {},
    ));

    let body = r#"{"heartbeat":{"status":0,"msg":"down","monitorID":7},"monitor":{"id":7,"name":"disk"},"msg":"disk is down"}"#;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /hooks/uptime-kuma HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("routed"), "{reply}");

    let deadline = Instant::now() + Duration::from_secs(30);
    while dispatches(&daemon, "ran").is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(dispatches(&daemon, "ran").len(), 1);

    stop.send(()).unwrap();
    runtime
        .block_on(served)
        .expect("the server task ends")
        .expect("it stops cleanly");
    assert!(daemon.is_shutting_down());
    // Asked a few times: a connect to a free local port can, rarely, meet itself (TCP
    // simultaneous open) or a port another test just took; the daemon's listener would answer
    // every time.
    assert!(
        (0..5).any(|_| std::net::TcpStream::connect(addr).is_err()),
        "nothing listens"
    );
}

/// A daemon over `dir` with one route taking every alert, its workers not started: what a
/// restarted daemon finds before it records what a crash left.
fn restarted(dir: &std::path::Path) -> Arc<Daemon> {
    let config_file = dir.join("serve.yaml");
    std::fs::write(&config_file, "routes:\n  - id: all\n    run: [\"true\"]\n").unwrap();
    let config = Config::load(&config_file, &|_| None).expect("config");
    let edges = PanicsOnce {
        clock: Utc::new(),
        guards: LiveGuards::new(dir),
        // Past the panic: these tests run no runbook.
        reads: AtomicUsize::new(1),
    };
    daemon(config, dir, edges)
}

/// A crash after an arrival's `dispatch` record was written but before the arrival was
/// settled: the restarted daemon settles it from that record; it never writes a second.
#[test]
fn an_arrival_recorded_just_before_a_crash_gets_no_second_record() {
    let dir = tempfile::tempdir().expect("temp dir");
    let daemon = restarted(dir.path());
    let dispatched = daemon.dispatch(vec![alert("disk")]).expect("stored");
    let arrival = dispatched[0].arrival;
    // The state a kill -9 between the ledger's commit and the inbox's leaves.
    let alerts = rusqlite::Connection::open(dir.path().join("alerts.db")).unwrap();
    alerts
        .execute(
            "UPDATE alert_events SET disposition = NULL, reason = NULL, route = NULL,
                 task_id = NULL, record = NULL
             WHERE id = ?1",
            [arrival],
        )
        .unwrap();
    drop(alerts);
    assert_eq!(daemon.inbox.unrecorded(10).unwrap().len(), 1);

    assert_eq!(daemon.record_unrecorded(0).expect("recorded"), 1);
    let routed = dispatches(&daemon, "routed");
    assert_eq!(routed.len(), 1, "one record per arrival: {routed:#?}");
    let stored = daemon.inbox.get(arrival).unwrap().unwrap();
    assert_eq!(stored.record.as_deref(), Some(routed[0].id.as_str()));
    assert_eq!(stored.disposition.map(|d| d.as_str()), Some("routed"));
    assert_eq!(stored.task_id, dispatched[0].task);
    assert_eq!(
        stored.reason.as_deref(),
        Some(dispatched[0].reason.as_str())
    );
    assert!(daemon.inbox.unrecorded(10).unwrap().is_empty());
}

/// The state a crash leaves after the task queue answered arrivals that were never settled:
/// `alert` stored as arrival, and offered to the queue for it.
fn stored_and_offered(daemon: &Daemon, alert: &Alert) -> (i64, Offered) {
    let json = serde_json::to_string(alert).unwrap();
    let now = daemon.now_ms();
    let id = nightwatch_serve::route::alert_id(alert);
    let arrival = daemon
        .inbox
        .receive(&[nightwatch_store::Arrival {
            received_ms: now,
            source: &nightwatch_serve::route::source_name(&alert.source),
            alert_id: &id,
            status: "firing",
            title: &alert.title,
            host: None,
            alert_json: &json,
        }])
        .unwrap()[0];
    let identity = nightwatch_serve::route::task_identity(alert);
    let op = QueueOp::Offer(Offer {
        identity: &identity,
        alert_json: &json,
        route: "all",
        max_per_hour: None,
        arrival: Some(arrival),
        again: false,
    });
    let Answer::Offered(offered) = daemon.tasks.apply(&[op], now).unwrap().remove(0) else {
        panic!("an offer is answered with an offer");
    };
    (arrival, offered)
}

/// A crash after an arrival created its task but before its disposition was stored: decided
/// again after the restart, it is routed to the task it created, not a duplicate of itself.
#[test]
fn an_arrival_that_created_its_task_before_a_crash_is_routed_to_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let daemon = restarted(dir.path());
    let alert = alert("disk");
    let (arrival, created) = stored_and_offered(&daemon, &alert);
    let Offered::Created(task) = created else {
        panic!("{created:?}");
    };

    daemon.record_unrecorded(0).expect("recorded");
    let stored = daemon.inbox.get(arrival).unwrap().unwrap();
    assert_eq!(
        stored.disposition.map(|d| d.as_str()),
        Some("routed"),
        "{stored:?}"
    );
    assert_eq!(stored.task_id, Some(task));
    assert_eq!(dispatches(&daemon, "routed").len(), 1);
    assert!(dispatches(&daemon, "deduplicated").is_empty());
    // A later arrival of the same alert is a duplicate, as ever.
    let again = daemon.dispatch(vec![alert]).unwrap();
    assert_eq!(again[0].task, Some(task));
    assert_eq!(dispatches(&daemon, "deduplicated").len(), 1);
}

/// A crash after a repeat was counted on the live task but before it was settled: decided
/// again, it is the same duplicate, counted once.
#[test]
fn a_repeat_counted_before_a_crash_is_not_counted_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let daemon = restarted(dir.path());
    let alert = alert("disk");
    let first = daemon.dispatch(vec![alert.clone()]).unwrap();
    let task = first[0].task.expect("a task");
    let (arrival, attached) = stored_and_offered(&daemon, &alert);
    assert_eq!(attached, Offered::Attached(task));
    assert_eq!(daemon.tasks.task(task).unwrap().unwrap().repeats, 1);

    daemon.record_unrecorded(0).expect("recorded");
    let stored = daemon.inbox.get(arrival).unwrap().unwrap();
    assert_eq!(stored.disposition.map(|d| d.as_str()), Some("deduplicated"));
    assert_eq!(stored.task_id, Some(task));
    assert_eq!(
        daemon.tasks.task(task).unwrap().unwrap().repeats,
        1,
        "counted once"
    );
}
