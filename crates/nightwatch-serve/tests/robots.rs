//! Seed 000's backup job, replayed through the robots' event API of a daemon in process (real
//! SQLite stores, a real HTTP server on 127.0.0.1): it reports 46 backups in a day, the
//! `rate` breaker lets the first through and halts the rest (each halt escalated), and the
//! baselines watcher over the same ledger reports it at 46 against `1/day`.

#[path = "support/daemon.rs"]
mod support;

use support::Utc;

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nightwatch_gate::{Clock, Engine, Escalator, Guards, LiveGuards};
use nightwatch_ledger::{Filter, event};
use nightwatch_serve::{Config, Daemon, Edges};
use nightwatch_watch::baseline::BaselineSpec;
use nightwatch_watch::{Databases, Env, NoContainers, Seen};

const POLICY: &str = r#"
version: 1
default: deny
notifiers:
  pager: { command: { argv: ["true"] } }
escalate: { halt: [pager] }
checks:
  once-a-day:
    rate: { max: 1, within: 1d }
    on_match: halt
    message: backup-job already backed up today; a second run is a retry storm
rules:
  - id: one-backup-a-day
    verdict: allow
    actor: { kind: [robot], id: [backup-job] }
    tool: backup
    checks: [once-a-day]
  - id: robots-report
    verdict: allow
    actor: { kind: [robot] }
"#;

struct Robots {
    clock: Utc,
    guards: LiveGuards,
    told: Told,
}

/// Remembers the records it was asked to escalate.
#[derive(Default)]
struct Told(Mutex<Vec<String>>);

impl Escalator for Told {
    fn escalate(&self, record_id: &str) {
        self.0.lock().unwrap().push(record_id.to_owned());
    }
}

impl Edges for Robots {
    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
    fn host(&self) -> Option<String> {
        Some("db-host".into())
    }
    fn policy(&self) -> Result<Arc<nightwatch_policy::Policy>, String> {
        nightwatch_policy::Policy::from_yaml(POLICY, nightwatch_shell::analyse)
            .map(Arc::new)
            .map_err(|e| e.to_string())
    }
    fn guards(&self) -> &(dyn Guards + Sync) {
        &self.guards
    }
    fn escalator(&self) -> &dyn Escalator {
        &self.told
    }
    fn sweep(&self, _: &Engine<'_>) -> Result<String, String> {
        Ok(String::new())
    }
    fn runbook_env(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

struct NoDatabases;

impl Databases for NoDatabases {
    fn returns_row(&self, _: &str, _: &str, _: Duration) -> Result<bool, String> {
        Err("no databases here".into())
    }
}

/// A daemon serving on 127.0.0.1 with `config`; stopped when the returned sender is dropped.
struct Serving {
    daemon: Arc<Daemon>,
    edges: Arc<Robots>,
    addr: std::net::SocketAddr,
    runtime: tokio::runtime::Runtime,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<Result<(), nightwatch_serve::ServeError>>>,
    _dir: tempfile::TempDir,
}

impl Serving {
    fn start(config: &str) -> Serving {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = Config::from_text(config, "serve.yaml", &|_| None).expect("config");
        let edges = Arc::new(Robots {
            clock: Utc::new(),
            guards: LiveGuards::new(dir.path()),
            told: Told::default(),
        });
        let stores = support::sqlite_stores(&config, dir.path());
        let daemon =
            Arc::new(Daemon::new(config, dir.path(), stores, edges.clone()).expect("daemon"));
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
        Serving {
            daemon,
            edges,
            addr,
            runtime,
            stop: Some(stop),
            served: Some(served),
            _dir: dir,
        }
    }

    /// POSTs `body` to `path`; the status and the reply's body.
    fn post(&self, path: &str, token: Option<&str>, body: &str) -> (u16, serde_json::Value) {
        let mut stream = std::net::TcpStream::connect(self.addr).unwrap();
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        let status = reply[9..12].parse().expect("a status");
        let text = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        let json = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {reply}"));
        (status, json)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            let _ = self.runtime.block_on(served);
        }
    }
}

#[test]
fn forty_six_backups_in_a_day_are_halted_after_the_first_and_reported() {
    let serving = Serving::start("robots: { auth: { bearer: r0b0t } }\n");
    let path = "/api/robots/backup-job/actions";
    let mut verdicts = Vec::new();
    for n in 0..46 {
        let body = format!(r#"{{"action":"backup","target":"db1","details":{{"attempt":{n}}}}}"#);
        let (status, reply) = serving.post(path, Some("r0b0t"), &body);
        assert_eq!(status, 200, "{reply}");
        assert!(
            reply["record"].as_str().unwrap().starts_with('r'),
            "{reply}"
        );
        verdicts.push(reply["verdict"].as_str().unwrap().to_owned());
        if n == 1 {
            assert_eq!(reply["rule"], "one-backup-a-day", "{reply}");
            assert!(
                reply["reason"]
                    .as_str()
                    .unwrap()
                    .contains("already backed up today"),
                "{reply}"
            );
        }
    }
    assert_eq!(verdicts[0], "allow");
    assert!(verdicts[1..].iter().all(|v| v == "halt"), "{verdicts:?}");

    // The ledger holds every report as a decision of robot:backup-job, and every halt was
    // escalated.
    let decisions = serving
        .daemon
        .reader()
        .query(&Filter {
            event: Some(event::DECISION.into()),
            actor: Some("backup-job".into()),
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(decisions.len(), 46);
    assert!(
        decisions
            .iter()
            .all(|r| r.actor.kind == "robot" && r.tool == "backup")
    );
    assert_eq!(
        decisions
            .iter()
            .filter(|r| r.verdict.as_deref() == Some("halt"))
            .count(),
        45
    );
    assert_eq!(decisions[3].inputs["details"]["attempt"], 3);
    assert_eq!(serving.edges.told.0.lock().unwrap().len(), 45);

    // Another robot is not held back by the backup job's breaker.
    let (status, reply) = serving.post(
        "/api/robots/retrier/actions",
        Some("r0b0t"),
        r#"{"action":"retry","target":"deploy-42"}"#,
    );
    assert_eq!(
        (status, reply["verdict"].as_str()),
        (200, Some("allow")),
        "{reply}"
    );

    // The baselines watcher, over the same ledger, reports the backup job at 46 against 1/day.
    let watcher: BaselineSpec =
        yaml_serde::from_str("expect: { backup-job: 1/day, \"robot:retrier\": 60/h }").unwrap();
    let env = Env {
        now_ms: serving.daemon.now_ms(),
        ledger: serving.daemon.reader(),
        databases: &NoDatabases,
        containers: &NoContainers,
        timeout: Duration::from_secs(30),
        reference_clock_ms: None,
    };
    let seen = watcher.run(&env);
    let backup = seen
        .iter()
        .find(|o| o.subject == "actor robot:backup-job backup")
        .unwrap_or_else(|| panic!("{seen:#?}"));
    assert_eq!(backup.seen, Seen::Found, "{backup:?}");
    assert!(
        backup.summary.contains("46 times in the last 24h") && backup.summary.contains("1/day"),
        "{}",
        backup.summary
    );
    let retrier = seen
        .iter()
        .find(|o| o.subject == "actor robot:retrier retry")
        .unwrap_or_else(|| panic!("{seen:#?}"));
    assert_eq!(retrier.seen, Seen::Ok, "{retrier:?}");
}

#[test]
fn reports_without_the_secret_or_with_hostile_bodies_are_refused() {
    let serving = Serving::start("robots: { auth: { bearer: r0b0t } }\nmax_body_bytes: 4096\n");
    let path = "/api/robots/backup-job/actions";
    let good = r#"{"action":"backup"}"#;
    assert_eq!(serving.post(path, None, good).0, 401);
    assert_eq!(serving.post(path, Some("wrong"), good).0, 401);
    for (path, body, why) in [
        (path, "not json", "not a report"),
        (path, r#"{"action":"exec"}"#, "agents' tools"),
        (path, r#"{"action":"backup","details":7}"#, "JSON object"),
        ("/api/robots/back%20up/actions", good, "must be 1-64"),
    ] {
        let (status, reply) = serving.post(path, Some("r0b0t"), body);
        assert_eq!(status, 400, "{body}: {reply}");
        assert!(
            reply["error"].as_str().unwrap().contains(why),
            "{body}: {reply}"
        );
    }
    let huge = format!(r#"{{"action":"backup","target":"{}"}}"#, "x".repeat(5000));
    assert_eq!(serving.post(path, Some("r0b0t"), &huge).0, 413);
    // Nothing refused was recorded.
    let decisions = serving
        .daemon
        .reader()
        .query(&Filter {
            event: Some(event::DECISION.into()),
            ..Filter::default()
        })
        .unwrap();
    assert!(decisions.is_empty(), "{decisions:?}");
}

#[test]
fn without_a_robots_section_the_api_is_off_and_says_how_to_enable_it() {
    let serving = Serving::start("");
    let (status, reply) = serving.post(
        "/api/robots/backup-job/actions",
        None,
        r#"{"action":"backup"}"#,
    );
    assert_eq!(status, 404, "{reply}");
    assert!(
        reply["error"].as_str().unwrap().contains("robots:"),
        "{reply}"
    );
}

#[test]
fn robots_without_a_secret_only_listen_on_loopback() {
    assert!(Config::from_text("robots: {}\n", "serve.yaml", &|_| None).is_ok());
    let err = Config::from_text("listen: 0.0.0.0:8787\nrobots: {}\n", "serve.yaml", &|_| {
        None
    })
    .expect_err("open beyond this host");
    assert!(err.to_string().contains("robots.auth"), "{err}");
    let err = Config::from_text(
        "robots: { auth: { bearer_env: NIGHTWATCH_ROBOTS_TOKEN } }\n",
        "serve.yaml",
        &|_| None,
    )
    .expect_err("unset secret");
    assert!(err.to_string().contains("NIGHTWATCH_ROBOTS_TOKEN"), "{err}");
}
