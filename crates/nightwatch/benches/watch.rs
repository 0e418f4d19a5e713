//! The cost of 1,000 declared watchers on a schedule, through the real binary:
//!
//! ```text
//! cargo bench -p nightwatch --bench watch
//! ```
//!
//! Lays out what 1,000 watchers look at (half drift: an INI file each, a key to compare; half
//! freshness: a directory of seven dumps each, the newest young enough), declares them in
//! `serve.yaml` every `BENCH_EVERY` (default 15s), starts `nightwatch serve` (this build's
//! binary), waits until every watcher has run once (the first run records each subject), and
//! then reads the daemon's CPU time (`/proc/PID/stat`, user + system) over `BENCH_SECONDS`
//! (default 120): CPU seconds per minute of wall time, and per round of all 1,000. Beside it,
//! in the same run:
//!
//! - the same daemon with no watchers over the same span (the idle floor: workers, the
//!   housekeeping, the checkpoint thread);
//! - the probes alone: the same 1,000 watchers' runs in this process, one round, no daemon
//!   (the work itself: stat, read and parse the files).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WATCHERS: usize = 1_000;
const DUMPS: usize = 7;

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let every: u64 = env_number("BENCH_EVERY", 15);
    let seconds: u64 = env_number("BENCH_SECONDS", 120);
    let dir = std::env::temp_dir().join(format!("nightwatch-bench-watch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = lay_out(&dir, every);

    // The probes alone, in this process: one round of all 1,000.
    let parsed = nightwatch_serve::Config::from_text(&config, "bench", &|_| None).unwrap();
    let ledger = nightwatch_store::memory::MemoryLedger::new();
    let bare = cpu_of_self(|| {
        for w in &parsed.watch.watchers {
            let env = nightwatch_watch::Env {
                now_ms: now_ms(),
                ledger: &ledger,
                databases: &nightwatch_serve::NoDatabases,
                containers: &nightwatch_watch::NoContainers,
                timeout: w.timeout,
                reference_clock_ms: None,
            };
            let seen = w.kind.run(&env);
            assert!(
                seen.iter().all(|o| o.seen == nightwatch_watch::Seen::Ok),
                "{}: {seen:?}",
                w.name
            );
        }
    });

    let binary: PathBuf = env!("CARGO_BIN_EXE_nightwatch").into();
    let idle_home = dir.join("idle-home");
    std::fs::create_dir_all(&idle_home).unwrap();
    let (idle, _) = start_daemon(&binary, &idle_home, None);
    let watch_home = dir.join("watch-home");
    std::fs::create_dir_all(&watch_home).unwrap();
    let (watching, api) = start_daemon(&binary, &watch_home, Some(&config));
    let started = Instant::now();
    wait_all_ran(&api);
    let first_round = started.elapsed();

    let (idle_before, watch_before) = (cpu_of(idle.id()), cpu_of(watching.id()));
    let span = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let wall = span.elapsed().as_secs_f64();
    let idle_cpu = cpu_of(idle.id()) - idle_before;
    let watch_cpu = cpu_of(watching.id()) - watch_before;
    let records = get(&api, "/api/records?event=watch&limit=5000")["records"]
        .as_array()
        .map_or(0, Vec::len);
    stop(idle);
    stop(watching);

    let per_minute = |cpu: f64| cpu / wall * 60.0;
    let rounds = wall / every as f64;
    println!(
        "1,000 watchers (500 drift on INI files, 500 freshness over 7 dumps each) every {every}s, {seconds}s measured:"
    );
    println!(
        "  daemon with the watchers:     {:.2} CPU s/min ({:.1} ms CPU per round of 1,000, {:.1}% of a core)",
        per_minute(watch_cpu),
        (watch_cpu - idle_cpu) / rounds * 1000.0,
        watch_cpu / wall * 100.0
    );
    println!(
        "  the same daemon, no watchers: {:.2} CPU s/min ({:.1}% of a core)",
        per_minute(idle_cpu),
        idle_cpu / wall * 100.0
    );
    println!(
        "  the probes alone, one round:  {:.1} ms CPU in this process",
        bare * 1000.0
    );
    println!(
        "  first round (start to every subject seen, 1,000 records): {:.2}s; watch records after {seconds}s: {records}",
        first_round.as_secs_f64()
    );
    println!(
        "  at every: 1m the watchers would cost about {:.2} CPU s/min over the idle daemon",
        (watch_cpu - idle_cpu) / rounds
    );
    println!(
        "reproduce: BENCH_EVERY={every} BENCH_SECONDS={seconds} cargo bench -p nightwatch --bench watch"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes the files the watchers look at and the serve.yaml declaring them.
fn lay_out(dir: &Path, every: u64) -> String {
    let mut yaml = String::from("watch:\n  record_every: 1h\n  watchers:\n");
    for n in 0..WATCHERS / 2 {
        let ini = dir.join(format!("app-{n}.ini"));
        std::fs::write(
            &ini,
            format!(
                "; app {n}\n[server]\nport = {}\nmax_connections = 512\n[cache]\nsize = 64m\n",
                8000 + n
            ),
        )
        .unwrap();
        yaml.push_str(&format!(
            "    drift-{n}:\n      every: {every}s\n      drift: {{ file: \"{}\", key: server.max_connections, equals: \"512\" }}\n",
            ini.display()
        ));
        let dumps = dir.join(format!("backups-{n}"));
        std::fs::create_dir_all(&dumps).unwrap();
        for d in 0..DUMPS {
            std::fs::write(dumps.join(format!("db-{d}.dump")), vec![b'x'; 2048]).unwrap();
        }
        yaml.push_str(&format!(
            "    fresh-{n}:\n      every: {every}s\n      fresh: {{ glob: \"{}/*.dump\", younger_than: 26h, larger_than: 1KiB }}\n",
            dumps.display()
        ));
    }
    yaml
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// CPU seconds (user + system) `f` took in this process.
fn cpu_of_self(f: impl FnOnce()) -> f64 {
    let before = cpu_of(std::process::id());
    f();
    cpu_of(std::process::id()) - before
}

/// A process's CPU time so far, user + system, in seconds.
fn cpu_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command's closing parenthesis; utime and stime are the 12th and
    // 13th of them.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / hz
}

fn start_daemon(binary: &Path, home: &Path, config: Option<&str>) -> (Child, String) {
    if let Some(config) = config {
        std::fs::write(home.join("serve.yaml"), config).unwrap();
    }
    let mut command = Command::new(binary);
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(home.join("daemon.log")).unwrap());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("NIGHTWATCH_") {
            command.env_remove(key);
        }
    }
    let mut child = command
        .env("NIGHTWATCH_HOME", home)
        .spawn()
        .expect("nightwatch serve starts");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let api = line
        .trim()
        .strip_prefix("nightwatch serve: listening on http://")
        .unwrap_or_else(|| panic!("the daemon did not say where it listens: {line:?}"))
        .to_owned();
    std::thread::spawn(move || {
        let mut rest = Vec::new();
        let _ = out.read_to_end(&mut rest);
    });
    (child, api)
}

fn wait_all_ran(api: &str) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let watch = get(api, "/api/watch");
        let subjects = watch["subjects"].as_array().map_or(0, Vec::len);
        if subjects >= WATCHERS {
            let bad: Vec<_> = watch["subjects"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["seen"] != "ok")
                .take(3)
                .collect();
            assert!(
                bad.is_empty(),
                "watchers that did not find all well: {bad:#?}"
            );
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {subjects} subjects after 300s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn get(api: &str, path: &str) -> serde_json::Value {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(api).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {api}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let text = String::from_utf8_lossy(&reply);
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let Some((size, rest)) = body.split_once("\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
}

fn stop(mut child: Child) {
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let _ = child.wait();
}
