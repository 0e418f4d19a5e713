//! A fleet under load: `cargo build --release && cargo bench -p nightwatch --bench fleet`.
//!
//! Starts a PostgreSQL cluster of Debian's (durable: `fsync` on) and three release `nightwatch
//! serve` daemons as hosts on it (own data directories, `NIGHTWATCH_HOST` host-a/b/c), then:
//! 1. intake: Debian's `wrk` posts distinct routed Alertmanager alerts (fingerprints name the
//!    run, the host, the wrk thread and a counter) to all three at once, 16 connections each,
//!    for `BENCH_SECONDS` (default 10); tasks wait a year to run, so intake is what is measured;
//! 2. shipping: each host's ledger (a `dispatch` record per arrival) reaching the fleet store,
//!    from the start of the load until the fleet holds every host's last record;
//! 3. claims: the daemons restarted with runbooks that run at once (`true`), 3,000 alerts
//!    posted in groups, and the time until every task is done across the hosts;
//! 4. the hook: `nightwatch hook claude` medians over distinct calls, alone and with the
//!    fleet configured (the hook never touches the fleet's database), each as a process of
//!    its own and answered by a resident gate (`nightwatch gate`).
//!
//! Beside them, the disk's own limit: one-row durable SQLite commits per second.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{LUA, commit_rate};

/// The tests' PostgreSQL cluster (`tests/common/postgres.rs`), which makes its directory here.
#[path = "../tests/common/postgres.rs"]
#[allow(dead_code)]
mod postgres;

fn scratch(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "nightwatch-bench-{suite}-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

const HOSTS: [&str; 3] = ["host-a", "host-b", "host-c"];

fn main() {
    if Command::new("wrk").arg("--version").output().is_err() {
        eprintln!("wrk is not installed (Debian: apt-get install wrk); nothing measured");
        std::process::exit(1);
    }
    let seconds: u32 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let run = std::process::id();
    let pg = postgres::Cluster::start_with("fleet", true);
    let url = pg.url();
    let work = scratch("fleet", "work");
    let script = work.join("post.lua");
    std::fs::write(&script, LUA).unwrap();
    println!(
        "the disk's own limit: {:.0} one-row durable commits/s (SQLite, WAL, synchronous=FULL)",
        commit_rate(&work, Duration::from_secs(2))
    );

    // 1 and 2: intake on three hosts at once, and shipping.
    let waiting = "queue: { resolve_delay: 52w }\nroutes:\n  - id: disk\n    when: { labels: { alertname: DiskFull } }\n    run: [\"true\"]\n";
    let mut daemons: Vec<(Child, String, PathBuf)> = HOSTS
        .iter()
        .map(|host| start(&work.join(host), waiting, &url, host))
        .collect();
    let postmaster = support::cpu::postmaster(port_of(&url));
    if postmaster.is_none() {
        println!("(PostgreSQL's postmaster was not found: its CPU is counted in the rest)");
    }
    let cpu_before = CpuSplit::now(&daemons, postmaster);
    let started = Instant::now();
    let loads: Vec<Child> = daemons
        .iter()
        .zip(HOSTS)
        .map(|((_, addr, _), host)| {
            Command::new("wrk")
                .args([
                    "-t",
                    "2",
                    "-c",
                    "16",
                    "-d",
                    &format!("{seconds}s"),
                    "--latency",
                ])
                .arg("-s")
                .arg(&script)
                .arg(format!("{addr}/hooks/alertmanager"))
                .args(["--", &format!("r{run}-{host}"), "DiskFull"])
                .stdout(Stdio::piped())
                .spawn()
                .expect("wrk runs")
        })
        .collect();
    let mut total = 0.0;
    println!(
        "intake, {seconds} s, three hosts at once, 16 connections each, distinct routed alerts:"
    );
    for (load, host) in loads.into_iter().zip(HOSTS) {
        let out = load.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let rate = field(&text, "Requests/sec:");
        total += rate;
        println!(
            "  {host}: {rate:.0} events/s, p50 {} p99 {}, non-2xx {}",
            latency(&text, "50%"),
            latency(&text, "99%"),
            text.lines()
                .find_map(|l| l.trim().strip_prefix("Non-2xx or 3xx responses:"))
                .unwrap_or(" 0")
                .trim()
        );
    }
    println!("  fleet: {total:.0} events/s");
    let loaded = started.elapsed();
    CpuSplit::now(&daemons, postmaster).report_since(&cpu_before, total * loaded.as_secs_f64());
    let heads: Vec<i64> = daemons
        .iter()
        .map(|(_, _, home)| local_head(home))
        .collect();
    let records: i64 = heads.iter().sum();
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let held: i64 = HOSTS
            .iter()
            .map(|host| {
                pg.query(&format!(
                    "SELECT coalesce(max(seq), 0) FROM ledger_records WHERE host = '{host}'"
                ))
                .parse::<i64>()
                .unwrap()
            })
            .zip(&heads)
            .map(|(held, head)| held.min(*head))
            .sum();
        if held >= records || Instant::now() > deadline {
            let all = started.elapsed();
            println!(
                "shipping: {records} records of three hosts held by the fleet {:.1} s after the load began ({:.1} s after it ended): {:.0} records/s",
                all.as_secs_f64(),
                all.saturating_sub(loaded).as_secs_f64(),
                held as f64 / all.as_secs_f64()
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for (child, _, _) in &mut daemons {
        stop(child);
    }

    // 3: runbooks claimed and run across the hosts.
    let running = "queue: { workers: 4 }\nroutes:\n  - id: disk\n    when: { labels: { alertname: Busy } }\n    run: [\"true\"]\n";
    let mut daemons: Vec<(Child, String, PathBuf)> = HOSTS
        .iter()
        .map(|host| start(&work.join(format!("{host}-claims")), running, &url, host))
        .collect();
    let before: i64 = pg
        .query("SELECT count(*) FROM tasks WHERE status = 'done'")
        .parse()
        .unwrap();
    let started = Instant::now();
    for g in 0..30 {
        let fps: Vec<String> = (0..100).map(|i| format!("claims-{run}-{g}-{i}")).collect();
        post(&daemons[g % 3].1, &group("Busy", &fps));
    }
    let posted = started.elapsed();
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let done: i64 = pg
            .query("SELECT count(*) FROM tasks WHERE status = 'done'")
            .parse()
            .unwrap();
        if done - before >= 3_000 || Instant::now() > deadline {
            let all = started.elapsed();
            let by_host = pg.query(
                "SELECT string_agg(split_part(worker, '-worker', 1) || ' ' || n, ', ') FROM \
                 (SELECT worker, count(*) n FROM tasks WHERE route = 'disk' AND status = 'done' \
                  AND identity LIKE '%claims-%' GROUP BY split_part(worker, '-worker', 1), worker) t",
            );
            println!(
                "claims: {} runbooks claimed and run by 3 hosts x 4 workers in {:.1} s ({:.0}/s; alerts posted in {:.1} s); by worker: {by_host}",
                done - before,
                all.as_secs_f64(),
                (done - before) as f64 / all.as_secs_f64(),
                posted.as_secs_f64()
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for (child, _, _) in &mut daemons {
        stop(child);
    }

    // 4: the hook alone and with the fleet configured, each run as its own process and
    // answered by a resident gate (`nightwatch gate`, started here with the same settings).
    let mut gates: Vec<Child> = Vec::new();
    let mut home_for = |resident: bool, fleet: bool| -> PathBuf {
        let home = work.join(format!("hook-{resident}-{fleet}"));
        std::fs::create_dir_all(&home).unwrap();
        if resident {
            let mut gate = Command::new(env!("CARGO_BIN_EXE_nightwatch"));
            gate.arg("gate")
                .env("NIGHTWATCH_HOME", &home)
                .env("NIGHTWATCH_HOST", "host-a")
                .stderr(Stdio::null());
            if fleet {
                gate.env("NIGHTWATCH_DATABASE_URL", &url);
            }
            gates.push(gate.spawn().expect("the resident gate starts"));
            let socket = home.join("gate.sock");
            let waited = Instant::now();
            while !socket.exists() && waited.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(socket.exists(), "the resident gate listens");
        }
        home
    };
    let variants: Vec<(&str, bool, PathBuf)> = vec![
        ("alone", false, home_for(false, false)),
        ("fleet configured", true, home_for(false, true)),
        ("resident gate, alone", false, home_for(true, false)),
        (
            "resident gate, fleet configured",
            true,
            home_for(true, true),
        ),
    ];
    for (round, (label, fleet, home)) in variants.iter().chain(variants.iter()).enumerate() {
        let (label, fleet) = (*label, *fleet);
        let mut times: Vec<f64> = (0..200)
            .map(|n| {
                let call = format!(
                    "{{\"session_id\":\"s\",\"cwd\":\"/srv\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{{\"command\":\"ls /srv/r/{round}-{n}\"}},\"tool_use_id\":\"t{round}-{n}\"}}"
                );
                let mut command = Command::new(env!("CARGO_BIN_EXE_nightwatch"));
                command
                    .args(["hook", "claude"])
                    .env("NIGHTWATCH_HOME", home)
                    .env("NIGHTWATCH_HOST", "host-a")
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null());
                if fleet {
                    command.env("NIGHTWATCH_DATABASE_URL", &url);
                }
                let began = Instant::now();
                let mut child = command.spawn().unwrap();
                use std::io::Write;
                child.stdin.take().unwrap().write_all(call.as_bytes()).unwrap();
                assert!(child.wait().unwrap().success());
                began.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!(
            "hook ({label}): median {:.2} ms, p90 {:.2} ms over 200 distinct calls",
            times[100], times[180]
        );
    }
    for gate in &mut gates {
        stop(gate);
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// Where the machine's CPU went during the intake: the three daemons, PostgreSQL (postmaster
/// and backends), the `wrk`s (reaped by then), and whatever else ran.
struct CpuSplit {
    daemons: Vec<Duration>,
    postgres: Duration,
    wrk: Duration,
    busy: Duration,
    capacity: Duration,
}

impl CpuSplit {
    fn now(daemons: &[(Child, String, PathBuf)], postmaster: Option<u32>) -> CpuSplit {
        let (busy, capacity) = support::cpu::machine();
        CpuSplit {
            daemons: daemons
                .iter()
                .map(|(child, _, _)| support::cpu::process(child.id()))
                .collect(),
            postgres: postmaster.map_or(Duration::ZERO, support::cpu::process_and_children),
            wrk: support::cpu::reaped_children(),
            busy,
            capacity,
        }
    }

    /// Prints each part's share of the machine (its CPU time over all cores' time) and its
    /// CPU time per event stored.
    fn report_since(&self, before: &CpuSplit, events: f64) {
        let capacity = (self.capacity - before.capacity).as_secs_f64();
        let daemons: Duration = self
            .daemons
            .iter()
            .zip(&before.daemons)
            .map(|(now, then)| now.saturating_sub(*then))
            .sum();
        let postgres = self.postgres.saturating_sub(before.postgres);
        let wrk = self.wrk.saturating_sub(before.wrk);
        let busy = self.busy.saturating_sub(before.busy);
        let other = busy.saturating_sub(daemons + postgres + wrk);
        let share = |d: Duration| 100.0 * d.as_secs_f64() / capacity;
        let per_event = |d: Duration| 1000.0 * d.as_secs_f64() / events.max(1.0);
        println!(
            "  CPU during the intake, shares of the machine: daemons {:.0}%, PostgreSQL {:.0}%, wrk {:.0}%, the rest {:.0}%, idle {:.0}%",
            share(daemons),
            share(postgres),
            share(wrk),
            share(other),
            100.0 - share(busy)
        );
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        println!(
            "  CPU per event stored: daemon {:.3} ms, PostgreSQL {:.3} ms, wrk {:.3} ms, all {:.3} ms (at that cost the machine's {cores} cores allow {:.0} events/s)",
            per_event(daemons),
            per_event(postgres),
            per_event(wrk),
            per_event(busy),
            cores as f64 * 1000.0 / per_event(busy).max(1e-9)
        );
    }
}

/// The port of a `postgres://` URL.
fn port_of(url: &str) -> u16 {
    url.rsplit_once(':')
        .and_then(|(_, tail)| tail.split(['/', '?']).next()?.parse().ok())
        .expect("the cluster's URL names a port")
}

fn start(home: &Path, yaml: &str, url: &str, host: &str) -> (Child, String, PathBuf) {
    std::fs::create_dir_all(home).unwrap();
    std::fs::write(home.join("serve.yaml"), yaml).unwrap();
    // `BENCH_SERVE_BINARY=PATH` measures another build's daemons (an earlier commit's) the same way.
    let binary = std::env::var_os("BENCH_SERVE_BINARY")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_nightwatch").into());
    let mut child = Command::new(binary)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("NIGHTWATCH_HOME", home)
        .env("NIGHTWATCH_DATABASE_URL", url)
        .env("NIGHTWATCH_HOST", host)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("nightwatch serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("nightwatch serve: listening on ")
        .expect("the daemon says where it listens")
        .to_owned();
    (child, url, home.to_path_buf())
}

fn stop(child: &mut Child) {
    unsafe { kill(child.id() as i32, 15) };
    let _ = child.wait();
}

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

fn post(base: &str, body: &[u8]) {
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            "@-",
        ])
        .arg(format!("{base}/hooks/alertmanager"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(body)?;
            c.wait_with_output()
        })
        .expect("curl runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200");
}

fn group(name: &str, fingerprints: &[String]) -> Vec<u8> {
    let alerts: Vec<String> = fingerprints
        .iter()
        .map(|fp| format!(
            "{{\"status\":\"firing\",\"labels\":{{\"alertname\":\"{name}\",\"instance\":\"{fp}:9100\"}},\"annotations\":{{}},\"startsAt\":\"2026-02-14T03:16:30Z\",\"endsAt\":\"0001-01-01T00:00:00Z\",\"generatorURL\":\"http://prom\",\"fingerprint\":\"{fp}\"}}"
        ))
        .collect();
    format!(
        "{{\"version\":\"4\",\"groupKey\":\"g\",\"status\":\"firing\",\"receiver\":\"nightwatch\",\"groupLabels\":{{}},\"commonLabels\":{{}},\"commonAnnotations\":{{}},\"externalURL\":\"http://am\",\"alerts\":[{}]}}",
        alerts.join(",")
    )
    .into_bytes()
}

/// The last record's sequence number in a host's own ledger.
fn local_head(home: &Path) -> i64 {
    let db = rusqlite::Connection::open(home.join("ledger.db")).expect("ledger.db opens");
    db.query_row("SELECT coalesce(max(seq), 0) FROM records", [], |r| {
        r.get(0)
    })
    .expect("the head is read")
}

fn field(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(name))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

fn latency(text: &str, pct: &str) -> String {
    text.lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&pct)).then(|| f.get(1).map(|s| s.to_string()))
        })
        .flatten()
        .unwrap_or_default()
}
