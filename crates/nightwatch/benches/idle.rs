//! Idle control against the real Docker Engine, through the real release binary:
//!
//! ```text
//! cargo build --release -p nightwatch && cargo bench -p nightwatch --bench idle
//! ```
//!
//! Starts four busybox httpd containers from the offline test image (`/` answers the
//! container's role, `/healthz` answers `ok`) on a bridge network of its own, each at a fixed
//! address (on the default bridge a stopped container can come back on another address, and
//! the daemon could not wake it), and `nightwatch serve` (the release binary, or
//! `BENCH_IDLE_BINARY=PATH`) on 127.0.0.1 with three of them under idle control behind a
//! proxy each, then measures:
//!
//! 1. the proxy's overhead per request: Debian's `wrk` fetches `/` at the container's own
//!    address (the bare line) and through the daemon's proxy (the app awake, `idle_after: 1h`),
//!    with a browser's User-Agent so every request is a person's, at 1 and 16 connections,
//!    `BENCH_SECONDS` (default 10) each after a 1 s warm-up;
//! 2. wake latency: for `suspend: pause` and `suspend: stop` (`idle_after: 1s`, a container
//!    each), `BENCH_WAKES` times (default 10): once the Engine says the container is paused
//!    (or exited) and the daemon says the app is asleep, one person's `GET /` through the proxy
//!    on a raw TCP connection, timed from the connect to the first byte of the reply, which
//!    must be the app's own 200;
//! 3. the Engine's own floor beside (2), on the fourth container, which no daemon controls,
//!    `BENCH_FLOOR` times (default 5), before the daemon starts (so nothing else of the run
//!    touches the Engine meanwhile): `docker unpause` and `docker start` with the CLI (a
//!    process each), the same calls on the Engine's API (as the daemon makes them), and the
//!    API call followed by the first byte of `GET /` at the container's address (retried
//!    every 5 ms; the daemon's readiness check retries every 50 ms).
//!
//! Every container and the network carry the label `nightwatch.bench=idle-<pid>` and are
//! removed by that label when the run ends, panic or not.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The tests' offline busybox image (`tests/common/docker.rs`), built here if it is missing.
#[path = "support/wrk.rs"]
mod wrk;

use wrk::Wrk;

#[path = "../tests/common/docker.rs"]
#[allow(dead_code)]
mod docker;

use docker::{IMAGE, image};

const CONNECTIONS: [u32; 2] = [1, 16];
/// A browser's User-Agent: every request with it is a person's.
const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
/// busybox httpd as PID 1 ignores SIGTERM, so a stop waits out the Engine's 10 s grace.
const STOP_STEP: &str = "20s";

fn scratch(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "nightwatch-bench-{suite}-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Removes what the run made, in order, when dropped (also while a panic unwinds): the
/// daemon first (so it does not act on a container being removed), then every container with
/// the run's label, then the data directory.
struct Cleanup {
    label: String,
    daemon: Option<Child>,
    dir: PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(mut child) = self.daemon.take() {
            unsafe { kill(child.id() as i32, 15) };
            let deadline = Instant::now() + Duration::from_secs(15);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!("the daemon's last lines:");
            for line in tail.iter().rev() {
                eprintln!("  {line}");
            }
        }
        let filter = format!("label={}", self.label);
        if let Ok(out) = Command::new("docker")
            .args(["ps", "-aq", "--filter", &filter])
            .output()
        {
            let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            if !ids.is_empty() {
                let _ = Command::new("docker")
                    .args(["rm", "-f"])
                    .args(&ids)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
            eprintln!("removed {} container(s) labelled {}", ids.len(), self.label);
        }
        if let Ok(out) = Command::new("docker")
            .args(["network", "ls", "-q", "--filter", &filter])
            .output()
        {
            for id in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("docker")
                    .args(["network", "rm", id])
                    .stdout(Stdio::null())
                    .status();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

fn main() {
    if Command::new("wrk").arg("--version").output().is_err() {
        eprintln!("wrk is not installed (Debian: apt-get install wrk); nothing measured");
        std::process::exit(1);
    }
    let seconds: u32 = env_number("BENCH_SECONDS", 10);
    let wakes: usize = env_number("BENCH_WAKES", 10);
    let floors: usize = env_number("BENCH_FLOOR", 5);
    let binary: PathBuf = std::env::var_os("BENCH_IDLE_BINARY")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_nightwatch").into())
        .into();
    let run = std::process::id();
    let dir = scratch("idle", "home");
    let mut cleanup = Cleanup {
        label: format!("nightwatch.bench=idle-{run}"),
        daemon: None,
        dir: dir.clone(),
    };
    image();

    let engine = docker(&["version", "--format", "{{.Server.Version}}"]);
    println!(
        "machine: {} cores, load average {} at start; Docker Engine {engine}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average(),
    );
    println!(
        "binary: {} ({})",
        binary.display(),
        String::from_utf8_lossy(
            &Command::new(&binary)
                .arg("--version")
                .output()
                .expect("the binary runs")
                .stdout
        )
        .trim()
    );

    // The apps: one awake for the overhead, one paused and one stopped when idle, and a plain
    // container no daemon controls for the Engine's floor.
    let net = Network::create(&cleanup.label, run);
    let web = App::start(&cleanup.label, &net, run, "web");
    let paused = App::start(&cleanup.label, &net, run, "paused");
    let stopped = App::start(&cleanup.label, &net, run, "stopped");
    let floor = App::start(&cleanup.label, &net, run, "floor");
    // 3. first, before the daemon runs: nothing else of this run touches the Engine then.
    let floor_rows = engine_floor(&floor, floors);
    let config = format!(
        "idle:\n  apps:\n{}{}{}",
        web.yaml("idle_after: 1h\n"),
        paused.yaml("idle_after: 1s\n      suspend: pause\n"),
        stopped.yaml(&format!(
            "idle_after: 1s\n      suspend: stop\n      step_timeout: {STOP_STEP}\n"
        )),
    );
    std::fs::write(dir.join("serve.yaml"), &config).unwrap();
    let (child, api) = start_daemon(&binary, &dir);
    cleanup.daemon = Some(child);

    // The two sleepers first go to sleep, so no suspend runs under the overhead's rows.
    for app in [&paused, &stopped] {
        wait_asleep(&api, app);
    }
    let reply = get(web.proxy, "/", FIREFOX);
    assert_eq!(
        (reply.status, reply.body.as_str(), reply.asleep),
        (200, "web\n", false),
        "the proxy does not serve the awake app"
    );

    // 1. The proxy's overhead.
    println!();
    println!(
        "1. proxy overhead: GET / ({} bytes, busybox httpd), a browser's User-Agent, {seconds} s a row after 1 s warm-up",
        "web\n".len()
    );
    println!(
        "{:>22} {:>11} {:>9} {:>9} {:>9} {:>9} {:>12}",
        "target", "connections", "req/s", "p50 ms", "p90 ms", "p99 ms", "listen drops"
    );
    let mut overhead = Vec::new();
    for connections in CONNECTIONS {
        let (direct, direct_drops) = with_drops(&web, || wrk(web.upstream, connections, seconds));
        let (proxied, proxied_drops) = with_drops(&web, || wrk(web.proxy, connections, seconds));
        for (name, w, drops) in [
            ("app direct (bare)", &direct, direct_drops),
            ("through idle proxy", &proxied, proxied_drops),
        ] {
            println!(
                "{name:>22} {connections:>11} {:>9.0} {:>9.3} {:>9.3} {:>9.3} {drops:>12}",
                w.rate, w.p50, w.p90, w.p99
            );
        }
        overhead.push((connections, direct, proxied));
    }
    println!("overhead of the proxy (through it minus direct):");
    for (connections, direct, proxied) in &overhead {
        println!(
            "  {connections:>2} connection(s): median {:+.3} ms, p99 {:+.3} ms, requests/s {:+.1}%",
            proxied.p50 - direct.p50,
            proxied.p99 - direct.p99,
            (proxied.rate / direct.rate - 1.0) * 100.0
        );
    }

    // 2. Wake latency, and 3. the Engine's floor.
    println!();
    println!(
        "2. wake: a person's GET / to a sleeping app, connect to first byte, {wakes} wakes a mode; 3. the Engine's floor (measured before the daemon started), {floors} times each"
    );
    let mut rows: Vec<(String, Vec<f64>)> = Vec::new();
    for app in [&paused, &stopped] {
        let mut times = Vec::new();
        for i in 0..wakes {
            wait_asleep(&api, app);
            // A distinct browser each time: the same client asking `/` on a steady period
            // would (rightly) be taken for a poller, a robot, and not woken for.
            let agent = format!("{FIREFOX}.{i}");
            let reply = get(app.proxy, "/", &agent);
            assert_eq!(
                (reply.status, reply.body.as_str(), reply.asleep),
                (200, format!("{}\n", app.name).as_str(), false),
                "wake {i} of {} did not get the app's own answer",
                app.name
            );
            times.push(reply.first_byte_ms);
        }
        let mode = if app.name == "paused" {
            "pause"
        } else {
            "stop"
        };
        rows.push((format!("wake, suspend: {mode}, through the proxy"), times));
    }
    rows.extend(floor_rows);
    println!(
        "{:>48} {:>3} {:>9} {:>9} {:>9}",
        "what", "n", "min ms", "median ms", "max ms"
    );
    for (what, times) in &rows {
        let (min, median, max) = spread(times);
        println!(
            "{what:>48} {:>3} {min:>9.1} {median:>9.1} {max:>9.1}",
            times.len()
        );
    }

    println!();
    println!("load average {} at the end", load_average());
    let mut knobs = String::new();
    if std::env::var_os("BENCH_IDLE_BINARY").is_some() {
        knobs.push_str(&format!("BENCH_IDLE_BINARY={} ", binary.display()));
    }
    for (name, value, default) in [
        ("BENCH_SECONDS", seconds as usize, 10),
        ("BENCH_WAKES", wakes, 10),
        ("BENCH_FLOOR", floors, 5),
    ] {
        if value != default {
            knobs.push_str(&format!("{name}={value} "));
        }
    }
    println!(
        "reproduce: cargo build --release -p nightwatch && {knobs}cargo bench -p nightwatch --bench idle"
    );
    drop(cleanup);
}

/// One busybox httpd container: `/` answers its name, `/healthz` answers `ok`.
struct App {
    name: &'static str,
    container: String,
    upstream: SocketAddr,
    proxy: SocketAddr,
}

impl App {
    fn start(label: &str, net: &Network, run: u32, name: &'static str) -> App {
        let container = format!("nw-idlebench-{name}-{run}");
        let script = format!(
            "mkdir -p /www && echo ok > /www/healthz && echo {name} > /www/index.html && exec busybox httpd -f -p 80 -h /www"
        );
        let ip = net.next();
        docker(&[
            "run",
            "-d",
            "--label",
            label,
            "--name",
            &container,
            "--network",
            &net.name,
            "--ip",
            &ip.to_string(),
            IMAGE,
            "sh",
            "-c",
            &script,
        ]);
        assert_eq!(address(&container), ip.to_string());
        let upstream = SocketAddr::new(ip.into(), 80);
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect_timeout(&upstream, Duration::from_secs(1)).is_err() {
            assert!(Instant::now() < deadline, "{container} never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
        let proxy = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        App {
            name,
            container,
            upstream,
            proxy,
        }
    }

    fn yaml(&self, extra: &str) -> String {
        format!(
            "    {}:\n      container: {}\n      listen: {}\n      upstream: {}\n      ready: {{ http: /healthz }}\n      wake_timeout: 30s\n      {extra}",
            self.name, self.container, self.proxy, self.upstream
        )
    }
}

/// A bridge network of the run's own whose subnet is named, so that each container is given
/// a fixed address: on the default bridge a stopped container can come back on another
/// address (another container took its own meanwhile), and the daemon, which reaches the app
/// at the address in its configuration, then cannot wake it.
struct Network {
    name: String,
    base: u32,
    given: std::cell::Cell<u32>,
}

impl Network {
    /// Lets the Engine choose a free subnet, then makes the network again naming it (a fixed
    /// address needs a subnet given by the user).
    fn create(label: &str, run: u32) -> Network {
        let name = format!("nw-idlebench-{run}");
        docker(&["network", "create", "--label", label, &name]);
        let subnet = docker(&[
            "network",
            "inspect",
            "-f",
            "{{range .IPAM.Config}}{{.Subnet}}{{end}}",
            &name,
        ]);
        docker(&["network", "rm", &name]);
        docker(&[
            "network", "create", "--label", label, "--subnet", &subnet, &name,
        ]);
        let base: std::net::Ipv4Addr = subnet
            .split('/')
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("an IPv4 subnet: {subnet:?}"));
        Network {
            name,
            base: base.into(),
            given: std::cell::Cell::new(0),
        }
    }

    /// The next fixed address: the subnet's 10th, 11th, ...
    fn next(&self) -> std::net::Ipv4Addr {
        self.given.set(self.given.get() + 1);
        (self.base + 9 + self.given.get()).into()
    }
}

/// Runs `f` and counts the connections the app's listener dropped meanwhile (its accept
/// queue full: the client's SYN is retried after a second). `-` when it cannot be read.
fn with_drops<T>(app: &App, f: impl FnOnce() -> T) -> (T, String) {
    let before = listen_drops(&app.container);
    let out = f();
    let after = listen_drops(&app.container);
    let drops = match (before, after) {
        (Some(b), Some(a)) => (a - b).to_string(),
        _ => "-".to_owned(),
    };
    (out, drops)
}

/// `TcpExt: ListenDrops` of the container's network namespace.
fn listen_drops(container: &str) -> Option<u64> {
    let out = Command::new("docker")
        .args(["exec", container, "busybox", "cat", "/proc/net/netstat"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut tcp_ext = text.lines().filter(|l| l.starts_with("TcpExt:"));
    let names = tcp_ext.next()?.split_whitespace();
    let values = tcp_ext.next()?.split_whitespace();
    names
        .zip(values)
        .find(|(name, _)| *name == "ListenDrops")
        .and_then(|(_, value)| value.parse().ok())
}

/// The container's address on its (first) network.
fn address(container: &str) -> String {
    docker(&[
        "inspect",
        "-f",
        "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
        container,
    ])
}

/// The container's state as the Engine says: running, paused, exited.
fn state(container: &str) -> String {
    docker(&["inspect", "-f", "{{.State.Status}}", container])
}

fn docker(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("docker runs");
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Starts the daemon on `dir` (its `serve.yaml` there); the child and its API's address.
fn start_daemon(binary: &Path, dir: &Path) -> (Child, SocketAddr) {
    let mut command = Command::new(binary);
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("daemon.log")).unwrap());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("NIGHTWATCH_") {
            command.env_remove(key);
        }
    }
    let mut child = command
        .env("NIGHTWATCH_HOME", dir)
        .spawn()
        .expect("nightwatch serve starts");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let api = line
        .trim()
        .strip_prefix("nightwatch serve: listening on http://")
        .unwrap_or_else(|| panic!("the daemon did not say where it listens: {line:?}"))
        .parse()
        .expect("an address");
    std::thread::spawn(move || {
        let mut rest = Vec::new();
        let _ = out.read_to_end(&mut rest);
    });
    (child, api)
}

/// Waits until the Engine says the app's container is suspended (paused or exited) and the
/// daemon has finished the suspend (the app is `asleep` in its API).
fn wait_asleep(api: &SocketAddr, app: &App) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let want = if app.name == "paused" {
        "paused"
    } else {
        "exited"
    };
    loop {
        if state(&app.container) == want {
            let reply = get(*api, &format!("/api/idle/{}", app.name), "bench");
            let phase = serde_json::from_str::<serde_json::Value>(&reply.body)
                .ok()
                .and_then(|v| v["phase"].as_str().map(str::to_owned));
            if phase.as_deref() == Some("asleep") {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} was not {want} and asleep within 60 s",
            app.name
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

struct Reply {
    status: u16,
    body: String,
    /// The daemon answered for a sleeping app (`x-nightwatch-asleep`).
    asleep: bool,
    /// From the connect to the first byte of the reply.
    first_byte_ms: f64,
}

/// One `GET path` with `Connection: close` on a raw TCP connection; fails the run when
/// there is no reply.
fn get(addr: SocketAddr, path: &str, agent: &str) -> Reply {
    try_get(addr, path, agent).unwrap_or_else(|e| panic!("GET {path} at {addr}: {e}"))
}

fn try_get(addr: SocketAddr, path: &str, agent: &str) -> Result<Reply, String> {
    let started = Instant::now();
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(90)))
        .map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: {agent}\r\nAccept: text/html\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("write: {e}"))?;
    let mut first = [0u8; 1];
    let n = stream.read(&mut first).map_err(|e| format!("read: {e}"))?;
    let first_byte_ms = ms(started);
    if n == 0 {
        return Err("the connection closed without a reply".into());
    }
    let mut raw = first.to_vec();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("read: {e}"))?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let header = |name: &str| {
        head.lines()
            .any(|l| l.to_ascii_lowercase().starts_with(name))
    };
    let body = if header("transfer-encoding: chunked") {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok(Reply {
        status,
        body,
        asleep: header("x-nightwatch-asleep:"),
        first_byte_ms,
    })
}

fn dechunk(mut data: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = data.split_once("\r\n") {
        let size =
            usize::from_str_radix(size.split(';').next().unwrap_or("0").trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        data = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// The Engine's own floor on a plain container: the CLI's `docker unpause` and `docker
/// start`, the same calls on the Engine's API, and the API call followed by the first byte of
/// `GET /` at the container's own address.
fn engine_floor(app: &App, times: usize) -> Vec<(String, Vec<f64>)> {
    let id = docker(&["inspect", "-f", "{{.Id}}", &app.container]);
    let mut unpause_cli = Vec::new();
    let mut unpause_api = Vec::new();
    let mut unpause_byte = Vec::new();
    let mut start_cli = Vec::new();
    let mut start_api = Vec::new();
    let mut start_byte = Vec::new();
    for _ in 0..times {
        docker(&["pause", &app.container]);
        unpause_cli.push(timed(|| {
            docker(&["unpause", &app.container]);
        }));
        docker(&["pause", &app.container]);
        let started = Instant::now();
        engine_post(&format!("/containers/{id}/unpause"));
        unpause_api.push(ms(started));
        first_byte(app);
        unpause_byte.push(ms(started));

        stop_now(&app.container);
        start_cli.push(timed(|| {
            docker(&["start", &app.container]);
        }));
        first_byte(app);
        stop_now(&app.container);
        let started = Instant::now();
        engine_post(&format!("/containers/{id}/start"));
        start_api.push(ms(started));
        first_byte(app);
        start_byte.push(ms(started));
    }
    vec![
        ("floor: `docker unpause` (CLI process)".into(), unpause_cli),
        ("floor: unpause (Engine API)".into(), unpause_api),
        (
            "floor: unpause (API) + first byte direct".into(),
            unpause_byte,
        ),
        ("floor: `docker start` (CLI process)".into(), start_cli),
        ("floor: start (Engine API)".into(), start_api),
        ("floor: start (API) + first byte direct".into(), start_byte),
    ]
}

/// Kills the container and waits until it has exited (`docker kill` returns before that).
fn stop_now(container: &str) {
    docker(&["kill", container]);
    docker(&["wait", container]);
}

/// Retries `GET /` at the container's own address until it answers with its body.
fn first_byte(app: &App) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(reply) = try_get(app.upstream, "/", FIREFOX)
            && reply.status == 200
        {
            assert_eq!(reply.body, format!("{}\n", app.name));
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} never answered at {}",
            app.name,
            app.upstream
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A POST without a body to the Engine's API on its Unix socket (`DOCKER_HOST`, or Docker's
/// default); fails unless it answers 2xx.
fn engine_post(path: &str) {
    let host = std::env::var("DOCKER_HOST").unwrap_or_default();
    let socket = host
        .strip_prefix("unix://")
        .unwrap_or("/var/run/docker.sock");
    let mut stream = std::os::unix::net::UnixStream::connect(socket)
        .unwrap_or_else(|e| panic!("the Engine's socket {socket}: {e}"));
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: docker\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    let status: u16 = reply
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    assert!(
        (200..300).contains(&status),
        "POST {path}: {}",
        reply.lines().next().unwrap_or("")
    );
}

fn timed(f: impl FnOnce()) -> f64 {
    let started = Instant::now();
    f();
    ms(started)
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn spread(times: &[f64]) -> (f64, f64, f64) {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    (sorted[0], median, sorted[n - 1])
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// wrk's figures for `GET /` at `addr` with a browser's User-Agent, after a 1 s warm-up (not
/// counted). Fails the run on any error or non-2xx reply: a figure with errors in it is not a
/// figure.
fn wrk(addr: SocketAddr, connections: u32, seconds: u32) -> Wrk {
    let url = format!("http://{addr}/");
    let agent = format!("User-Agent: {FIREFOX}");
    let run = |seconds: u32| {
        let out = Command::new("wrk")
            .args([
                "-t",
                &connections.min(2).to_string(),
                "-c",
                &connections.to_string(),
                "-d",
                &format!("{seconds}s"),
                "-H",
                &agent,
                "--latency",
                &url,
            ])
            .output()
            .expect("wrk runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(1);
    let text = run(seconds);
    let w = Wrk::parse(&text);
    assert!(
        w.requests > 0 && w.errors == 0 && w.non_2xx == 0,
        "wrk saw errors or no replies:\n{text}"
    );
    w
}
