//! Seed 000's first story against the real Docker Engine, through the real binary: an app
//! (busybox httpd, built offline) behind `nightwatch serve`'s proxy sleeps although Uptime
//! Kuma polls it; a person's request wakes it and gets the app's own answer; the monitor's
//! poll to the sleeping app gets the kept answer and wakes nothing; an exec session keeps it
//! awake; a backup's lock vetoes the suspend, and the veto is in the ledger; a daemon killed
//! mid-wake finds the app's real state when it starts again.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::daemon::{Daemon, request};
use common::docker::{Containers, httpd_app, sh, state};

const KUMA: &str = "Uptime-Kuma/1.23.16";
const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

fn run_id() -> String {
    format!(
        "idle{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    )
}

fn app_yaml(name: &str, container: &str, listen: u16, upstream: &str, extra: &str) -> String {
    format!(
        "    {name}:\n      container: {container}\n      listen: 127.0.0.1:{listen}\n      upstream: {upstream}\n      ready: {{ http: /healthz }}\n      wake_timeout: 15s\n{extra}"
    )
}

fn until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn why(daemon: &Daemon, app: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_nightwatch"))
        .args(["why", app, "--last", "30"])
        .env("NIGHTWATCH_HOME", &daemon.home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "why {app}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn an_uptime_monitor_cannot_keep_the_app_awake_and_a_person_wakes_it() {
    let run = run_id();
    let containers = Containers(run.clone());
    let name = format!("nw-shop-{run}");
    let upstream = httpd_app(&containers, &name);
    let port = common::free_port();
    let proxy = format!("127.0.0.1:{port}");
    let config = format!(
        "idle:\n  apps:\n{}",
        app_yaml("shop", &name, port, &upstream, "      idle_after: 20s\n")
    );
    let home = common::scratch("idle", "monitor");
    let daemon = Daemon::start(&home, Some(&config), &[]);
    daemon.wait_for("/api/idle/shop", 20, "awake", |v| v["phase"] == "awake");

    // Uptime Kuma polls every 5 s, for longer than the 20 s idle timeout: the app sleeps.
    let started = Instant::now();
    let mut polls = 0;
    while state(&name) != "paused" {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the app never slept while a monitor polled it\n{}",
            daemon.log()
        );
        let reply = request(&proxy, "GET", "/healthz", &[("User-Agent", KUMA)], b"");
        assert_eq!(reply.status, 200, "{}", reply.text());
        polls += 1;
        std::thread::sleep(Duration::from_secs(5));
    }
    assert!(
        polls >= 4,
        "slept after {polls} polls: before its idle timeout"
    );
    daemon.wait_for("/api/idle/shop", 10, "asleep", |v| v["phase"] == "asleep");

    // The monitor's next poll: the kept answer, marked asleep; the app stays paused.
    let reply = request(&proxy, "GET", "/healthz", &[("User-Agent", KUMA)], b"");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.text(), "ok\n");
    assert_eq!(reply.header("x-nightwatch-asleep"), Some("shop"));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(state(&name), "paused", "a robot woke it");

    // A person's request wakes it and gets the app's own answer.
    let asked = Instant::now();
    let reply = request(&proxy, "GET", "/", &[("User-Agent", FIREFOX)], b"");
    assert_eq!(reply.status, 200, "{}\n{}", reply.text(), daemon.log());
    assert_eq!(reply.text(), "shop\n");
    assert!(reply.header("x-nightwatch-asleep").is_none());
    assert_eq!(state(&name), "running");
    eprintln!("woken and answered in {:?}", asked.elapsed());

    let app = daemon.json("/api/idle/shop");
    assert_eq!(app["phase"], "awake");
    assert_eq!(app["last_person"]["path"], "/");

    let text = why(&daemon, "shop");
    assert!(text.contains("shop is awake"), "{text}");
    assert!(text.contains("a person's request woke it"), "{text}");
    assert!(text.contains("suspend_app allow"), "{text}");
    assert!(text.contains("asleep -> awake"), "{text}");

    let metrics = daemon.get("/metrics").text();
    assert!(
        metrics.contains("nightwatch_idle_wakes_total{app=\"shop\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("nightwatch_idle_app_state{app=\"shop\",state=\"awake\"} 1"),
        "{metrics}"
    );
    let monitor_line = metrics
        .lines()
        .find(|l| l.starts_with("nightwatch_idle_requests_total{app=\"shop\",traffic=\"monitor\"}"))
        .expect("monitor requests are counted");
    let counted: u64 = monitor_line.rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(counted, polls + 1, "{monitor_line}");
}

#[test]
fn an_exec_session_keeps_it_awake_and_a_backup_lock_vetoes_the_suspend() {
    let run = run_id();
    let containers = Containers(run.clone());
    let name = format!("nw-db-{run}");
    let upstream = httpd_app(&containers, &name);
    let port = common::free_port();
    let home = common::scratch("idle", "veto");
    let lock = home.join("backup.lock");
    let policy = home.join("policy.yaml");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        &policy,
        format!(
            "version: 1
extends: builtin
checks:
  backup-running:
    lock_file: {{ glob: \"{}\" }}
    on_match: halt
    message: a backup is running; suspending now would cut it off
rules:
  - id: suspends-wait-for-backups
    verdict: allow
    actor: {{ kind: [idle-controller] }}
    tool: suspend_app
    checks: [backup-running]
",
            lock.display()
        ),
    )
    .unwrap();
    let config = format!(
        "idle:\n  apps:\n{}",
        app_yaml(
            "db",
            &name,
            port,
            &upstream,
            "      idle_after: 3s\n      failures: { initial: 2s }\n"
        )
    );
    let daemon = Daemon::start(
        &home,
        Some(&config),
        &[("NIGHTWATCH_POLICY", policy.to_str().unwrap())],
    );
    daemon.wait_for("/api/idle/db", 20, "awake", |v| v["phase"] == "awake");

    // Someone is at work inside it: it stays awake past its idle timeout, and says why.
    sh("docker", &["exec", "-d", &name, "sleep", "9"], None);
    daemon.wait_for("/api/idle/db", 10, "held by exec", |v| {
        v["held_by"][0] == "exec"
    });
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(state(&name), "running", "slept under an exec session");
    assert!(why(&daemon, "db").contains("kept awake by exec"));

    // The session ends while a backup holds its lock: the suspend is proposed and vetoed.
    std::fs::write(&lock, "").unwrap();
    until("a vetoed suspend", Duration::from_secs(30), || {
        why(&daemon, "db").contains("suspend refused")
    });
    let text = why(&daemon, "db");
    assert!(text.contains("halt by suspends-wait-for-backups"), "{text}");
    assert!(text.contains("a backup is running"), "{text}");
    assert_eq!(state(&name), "running", "vetoed, yet suspended");

    // The backup ends: the next proposal goes through.
    std::fs::remove_file(&lock).unwrap();
    until("paused", Duration::from_secs(30), || {
        state(&name) == "paused"
    });
    let text = why(&daemon, "db");
    assert!(text.contains("db is asleep"), "{text}");
}

#[test]
fn a_daemon_killed_mid_wake_finds_the_real_state_when_it_starts_again() {
    let run = run_id();
    let containers = Containers(run.clone());
    let name = format!("nw-cart-{run}");
    let upstream = httpd_app(&containers, &name);
    let port = common::free_port();
    let proxy = format!("127.0.0.1:{port}");
    let config = format!(
        "idle:\n  apps:\n{}",
        app_yaml(
            "cart",
            &name,
            port,
            &upstream,
            // busybox httpd ignores SIGTERM as PID 1: a stop takes the Engine's whole grace.
            "      idle_after: 2s\n      suspend: stop\n      step_timeout: 20s\n"
        )
    );
    let home = common::scratch("idle", "crash");
    let daemon = Daemon::start(&home, Some(&config), &[]);
    until("stopped", Duration::from_secs(40), || {
        state(&name) == "exited"
    });
    daemon.wait_for("/api/idle/cart", 10, "asleep", |v| v["phase"] == "asleep");

    // A person asks; the daemon dies while the app starts.
    let asking = {
        let proxy = proxy.clone();
        std::thread::spawn(move || {
            let _ = std::panic::catch_unwind(|| {
                request(&proxy, "GET", "/", &[("User-Agent", FIREFOX)], b"")
            });
        })
    };
    until("the wake to begin", Duration::from_secs(10), || {
        state(&name) != "exited"
    });
    daemon.crash();
    let _ = asking.join();

    let engine_says = state(&name);
    let daemon = Daemon::start(&home, Some(&config), &[]);
    let found = daemon.wait_for("/api/idle/cart", 20, "found", |v| {
        v["why"].as_str().is_some_and(|w| w.starts_with("found"))
            || v["phase"] == "awake"
            || v["phase"] == "asleep"
    });
    let expected = if engine_says == "running" {
        "awake"
    } else {
        "asleep"
    };
    assert_eq!(
        found["phase"], expected,
        "the Engine said {engine_says}: {found:#}"
    );
    let records = daemon.json("/api/records?limit=100");
    let starts: Vec<_> = records["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "idle" && r["inputs"]["from"] == "unknown")
        .collect();
    assert_eq!(
        starts.len(),
        2,
        "each start records what it found: {starts:#?}"
    );
    assert!(
        starts[1]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("the controller started: found"),
        "{starts:#?}"
    );

    // And it serves a person as usual.
    let reply = request(&proxy, "GET", "/", &[("User-Agent", FIREFOX)], b"");
    assert_eq!(reply.status, 200, "{}\n{}", reply.text(), daemon.log());
    assert_eq!(reply.text(), "shop\n");
}

/// A Unix socket in front of the real Engine that passes every call on, one per connection,
/// except a pause, which it takes and never answers: a stalled Engine call. Returns the
/// socket's `DOCKER_HOST` and how many pauses it swallowed.
fn stalling_engine(
    dir: &std::path::Path,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    use std::os::unix::net::{UnixListener, UnixStream};
    let path = dir.join("stalling-docker.sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).expect("bind the stalling socket");
    let swallowed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = swallowed.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            // The request's head, byte by byte up to the blank line (calls are small).
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match client.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            let text = String::from_utf8_lossy(&head).into_owned();
            let first = text.lines().next().unwrap_or("").to_owned();
            if first.starts_with("POST") && first.contains("/pause") {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                held.push(client);
                continue;
            }
            // One call per connection: the Engine closes it after its answer.
            let mut lines: Vec<&str> = text
                .split("\r\n")
                .filter(|l| !l.is_empty() && !l.to_ascii_lowercase().starts_with("connection:"))
                .collect();
            lines.push("Connection: close");
            let rewritten = format!("{}\r\n\r\n", lines.join("\r\n"));
            let Ok(mut engine) = UnixStream::connect("/var/run/docker.sock") else {
                continue;
            };
            let _ = engine.write_all(rewritten.as_bytes());
            let (mut to_engine, mut from_client) =
                (engine.try_clone().unwrap(), client.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_client, &mut to_engine);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut engine, &mut client);
                let _ = client.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (format!("unix://{}", path.display()), swallowed)
}

#[test]
fn a_pause_the_engine_never_answers_is_undone_then_backed_off_then_quarantined_and_told_once() {
    let run = run_id();
    let containers = Containers(run.clone());
    let name = format!("nw-stall-{run}");
    let upstream = httpd_app(&containers, &name);
    let port = common::free_port();
    let home = common::scratch("idle", "stall");
    let (docker_host, swallowed) = stalling_engine(&home);
    let pager = common::Receiver::start(&[200]);
    let policy = home.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nextends: builtin\nnotifiers:\n  pager:\n    webhook: {{ url: \"{}\" }}\n",
            pager.url
        ),
    )
    .unwrap();
    let config = format!(
        "idle:\n  apps:\n{}",
        app_yaml(
            "stall",
            &name,
            port,
            &upstream,
            "      idle_after: 2s\n      step_timeout: 2s\n      failures: { initial: 1s, max: 2s, quarantine_after: 2, notify: [pager] }\n"
        )
    );
    let daemon = Daemon::start(
        &home,
        Some(&config),
        &[
            ("DOCKER_HOST", docker_host.as_str()),
            ("NIGHTWATCH_POLICY", policy.to_str().unwrap()),
        ],
    );
    daemon.wait_for("/api/idle/stall", 60, "quarantined", |v| {
        v["phase"] == "quarantined"
    });
    assert_eq!(swallowed.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(
        state(&name),
        "running",
        "the stalled pause never took effect"
    );

    let text = why(&daemon, "stall");
    assert!(text.contains("did not finish within 2s"), "{text}");
    assert!(
        text.contains("undone: resumed, and its readiness check passes"),
        "{text}"
    );
    assert!(text.contains("quarantined"), "{text}");

    // A person is told once, by the policy's notifier.
    let told = pager.wait_for(1, Duration::from_secs(20));
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].contains("stall"), "{}", told[0]);
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        pager.wait_for(2, Duration::from_millis(10)).len(),
        1,
        "told twice"
    );
    assert_eq!(
        swallowed.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "no tries after the quarantine"
    );
}

#[test]
fn an_app_that_runs_but_fails_its_readiness_check_is_half_awake_never_awake() {
    let run = run_id();
    let containers = Containers(run.clone());
    let name = format!("nw-half-{run}");
    let upstream = httpd_app(&containers, &name);
    let port = common::free_port();
    let proxy = format!("127.0.0.1:{port}");
    let config = format!(
        "idle:\n  apps:\n    half:\n      container: {name}\n      listen: {proxy}\n      upstream: {upstream}\n      ready: {{ http: /missing }}\n      idle_after: 1h\n      wake_timeout: 2s\n"
    );
    let home = common::scratch("idle", "half");
    let daemon = Daemon::start(&home, Some(&config), &[]);
    let app = daemon.wait_for("/api/idle/half", 20, "found", |v| v["phase"] != "waking");
    assert_eq!(app["phase"], "half-awake", "{app:#}");
    assert!(app["why"].as_str().unwrap().contains("404"), "{app:#}");
    // A person's request is not forwarded to it as if it were awake.
    let reply = request(&proxy, "GET", "/", &[("User-Agent", FIREFOX)], b"");
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert!(reply.text().contains("not ready"), "{}", reply.text());
    assert_eq!(daemon.json("/api/idle/half")["phase"], "half-awake");
}
