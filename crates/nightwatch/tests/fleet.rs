//! A fleet through the real binary: daemons as hosts (own data directories and host names)
//! on one real PostgreSQL cluster. Heavy; its own test binary.

mod common;

use common::daemon::Daemon;
use common::postgres::Cluster;
use common::{nightwatch, scratch};
use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

fn env<'a>(home: &'a Path, url: &'a str, host: &'a str) -> Vec<(&'a str, &'a OsStr)> {
    vec![
        ("NIGHTWATCH_HOME", home.as_os_str()),
        ("NIGHTWATCH_DATABASE_URL", OsStr::new(url)),
        ("NIGHTWATCH_HOST", OsStr::new(host)),
    ]
}

/// One Claude Code PreToolUse call, distinct by `n`; its answer must be a decision. Every
/// seventh carries a NUL (and the escape PostgreSQL's copy writes for it) in its session id and
/// directory, as hostile input can: it must be shipped and verified like any other.
fn hook_call(vars: &[(&str, &OsStr)], n: usize) {
    let (session, cwd) = if n % 7 == 3 {
        ("sess\u{0}fleet\u{FFFF}0", "/srv/app\u{0}")
    } else {
        ("sess_fleet", "/srv/app")
    };
    let call = serde_json::json!({
        "session_id": session,
        "cwd": cwd,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": { "command": format!("ls /srv/app/releases/{n}") },
        "tool_use_id": format!("toolu_fleet_{n}"),
    });
    let out = nightwatch(&["hook", "claude"], call.to_string().as_bytes(), vars);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON answer");
    assert!(
        reply["hookSpecificOutput"]["permissionDecision"].is_string(),
        "{reply}"
    );
}

/// Runs `verify --fleet` until it exits 0 (every chain whole in the fleet) or `within` passes;
/// returns its last output and exit status.
fn verify_fleet_until_whole(vars: &[(&str, &OsStr)], within: Duration) -> (i32, String) {
    let deadline = Instant::now() + within;
    loop {
        let out = nightwatch(&["verify", "--fleet"], b"", vars);
        let code = out.status.code().unwrap_or(-1);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if code == 0 || Instant::now() > deadline {
            return (code, text);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn local_records(vars: &[(&str, &OsStr)]) -> usize {
    let out = nightwatch(&["export", "--format", "jsonl"], b"", vars);
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// Seed 000: the fleet's database goes away in the middle of the night. On every host, every
/// hook call is still decided and recorded there; each daemon says it cannot ship; once the
/// database is back, the fleet catches up with no gap and no duplicate, and `verify --fleet`
/// finds every host's chain whole.
#[test]
fn hook_calls_are_decided_with_the_fleet_database_down_and_reach_it_after() {
    let pg = Cluster::start("outage");
    let url = pg.url();
    let hosts = ["web-1", "web-2", "db-1"];
    let daemons = host_daemons("outage", &hosts, &url, |_| {
        "queue: { resolve_delay: 10m }\n".to_owned()
    });
    let homes: Vec<_> = daemons.iter().map(|daemon| daemon.home.clone()).collect();
    // Each host's calls, from a thread of its own: 20, the database stops, 40 more.
    let url_ref = url.as_str();
    let calls = |range: std::ops::Range<usize>| {
        std::thread::scope(|scope| {
            for (host, home) in hosts.iter().zip(&homes) {
                let range = range.clone();
                scope.spawn(move || {
                    let vars = env(home, url_ref, host);
                    for n in range {
                        hook_call(&vars, n);
                    }
                });
            }
        });
    };
    calls(0..20);
    pg.down();
    calls(20..60);
    for (host, home) in hosts.iter().zip(&homes) {
        let vars = env(home, &url, host);
        let down = nightwatch(&["verify", "--fleet"], b"", &vars);
        assert!(
            !down.status.success(),
            "verify --fleet cannot pass with the fleet's database down"
        );
        let recorded = local_records(&vars);
        assert!(
            recorded >= 60,
            "every call was recorded on {host} ({recorded} records)"
        );
    }
    // The daemons' shipping fails meanwhile, and each says so.
    for daemon in &daemons {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !daemon.log().contains("cannot ship") {
            assert!(
                Instant::now() < deadline,
                "a daemon never said shipping failed:\n{}",
                daemon.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pg.up();
    for (host, home) in hosts.iter().zip(&homes) {
        let vars = env(home, &url, host);
        let (code, text) = verify_fleet_until_whole(&vars, Duration::from_secs(60));
        assert_eq!(code, 0, "the fleet caught up after the outage: {text}");
        let recorded = local_records(&vars);
        let held = pg.query(&format!(
            "SELECT count(*) || ' ' || count(DISTINCT seq) || ' ' || max(seq) \
             FROM ledger_records WHERE host = '{host}'"
        ));
        let held: Vec<usize> = held.split(' ').map(|n| n.parse().unwrap()).collect();
        assert_eq!(held[0], held[1], "no record of {host} held twice");
        assert_eq!(held[0], held[2], "no gap: seq 1 to {}", held[2]);
        assert!(
            held[0] >= 60 && held[0] <= recorded,
            "the fleet holds {host}'s records ({held:?}, {recorded} there)"
        );
    }
    for daemon in &daemons {
        assert!(
            daemon.log().contains("works again"),
            "the daemon said shipping recovered:\n{}",
            daemon.log()
        );
    }
    let vars = env(&homes[0], &url, hosts[0]);
    let status = nightwatch(&["fleet", "status", "--json"], b"", &vars);
    assert!(status.status.success());
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["this_host"], "web-1");
    let listed: Vec<&str> = status["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["db-1", "web-1", "web-2"]);
}

/// A runbook script in `work` whose body may write to `{runs}` (the file it returns beside it).
fn runbook(work: &Path, body: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let runs = work.join("runs");
    let script = work.join("runbook.sh");
    let body = body.replace("{runs}", &runs.display().to_string());
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, runs)
}

/// A daemon as `host` of the fleet at `url`, with its own data directory.
fn host_daemon(test: &str, host: &str, url: &str, serve_yaml: &str) -> Daemon {
    Daemon::start(
        &scratch("fleet", &format!("{test}-{host}")),
        Some(serve_yaml),
        &[("NIGHTWATCH_DATABASE_URL", url), ("NIGHTWATCH_HOST", host)],
    )
}

/// A daemon as each of `hosts` of the fleet at `url`, in that order, each with its own data
/// directory and the `serve.yaml` that `serve_yaml` writes for its host.
fn host_daemons(
    test: &str,
    hosts: &[&str],
    url: &str,
    serve_yaml: impl Fn(&str) -> String,
) -> Vec<Daemon> {
    hosts
        .iter()
        .map(|host| host_daemon(test, host, url, &serve_yaml(host)))
        .collect()
}

/// An Alertmanager notification of `alerts` (fingerprints), firing.
fn group(name: &str, fingerprints: &[String]) -> Vec<u8> {
    let alerts: Vec<_> = fingerprints
        .iter()
        .map(|fp| {
            serde_json::json!({
                "status": "firing",
                "labels": { "alertname": name, "instance": format!("{fp}:9100") },
                "annotations": { "summary": "disk above 90%" },
                "startsAt": "2026-02-14T03:16:30Z",
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://prometheus:9090",
                "fingerprint": fp,
            })
        })
        .collect();
    serde_json::json!({
        "version": "4",
        "groupKey": format!("{{}}:{{alertname=\"{name}\"}}"),
        "status": "firing",
        "receiver": "nightwatch",
        "groupLabels": { "alertname": name },
        "commonLabels": { "alertname": name },
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "alerts": alerts,
    })
    .to_string()
    .into_bytes()
}

/// Seed 004: three hosts behind one webhook, one queue. A burst of 1,000 distinct alerts
/// spread over the three daemons, and 50 deliveries of one group sent to all three at once,
/// become exactly one task per alert fleet-wide, and every task's runbook runs exactly once,
/// on whichever host claimed it.
#[test]
fn three_daemons_on_one_database_make_one_task_per_alert_and_run_each_runbook_once() {
    let pg = Cluster::start("three");
    let url = pg.url();
    let work = scratch("fleet", "three-work");
    let (runbook, runs) = runbook(
        &work,
        "printf '%s %s\\n' \"$NIGHTWATCH_TASK\" \"$1\" >> {runs}",
    );
    let hosts = ["host-a", "host-b", "host-c"];
    let daemons = host_daemons("three", &hosts, &url, |host| {
        format!(
            "queue: {{ workers: 4, lease: 30s }}\nroutes:\n  - id: disk\n    run: [\"{}\", \"{host}\"]\n",
            runbook.display()
        )
    });

    let duplicate: Vec<String> = (0..5).map(|i| format!("dup-{i}")).collect();
    let all = &daemons;
    std::thread::scope(|scope| {
        for (t, daemon) in daemons.iter().enumerate() {
            let duplicate = &duplicate;
            scope.spawn(move || {
                // This thread's share of the 1,000: 20 groups of 50 (the last shorter), in turn
                // to each daemon, as a load balancer would.
                for g in (t..20).step_by(3) {
                    let fps: Vec<String> = (0..50).map(|i| format!("burst-{g}-{i}")).collect();
                    let reply = all[g % 3].post(
                        "/hooks/alertmanager",
                        "application/json",
                        &group("DiskFull", &fps),
                    );
                    assert_eq!(reply.status, 200, "{}", reply.text());
                }
                for _ in 0..17 {
                    let reply = daemon.post(
                        "/hooks/alertmanager",
                        "application/json",
                        &group("DiskFull", duplicate),
                    );
                    assert_eq!(reply.status, 200, "{}", reply.text());
                }
            });
        }
    });

    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let open = pg.query("SELECT count(*) FROM tasks WHERE status IN ('pending', 'running')");
        let total = pg.query("SELECT count(*) FROM tasks");
        if open == "0" && total != "0" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "tasks still open after 3 minutes: {open} of {total}\n{}",
            daemons[0].log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let tasks = pg.query(
        "SELECT count(*) || ' ' || count(DISTINCT identity) || ' ' || \
         count(*) FILTER (WHERE status = 'done') FROM tasks",
    );
    assert_eq!(
        tasks, "1005 1005 1005",
        "one task per alert fleet-wide, all done (tasks, identities, done)"
    );
    let lines = std::fs::read_to_string(&runs).unwrap();
    let mut ran: Vec<&str> = lines
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(ran.len(), 1005, "one run per task");
    ran.sort();
    ran.dedup();
    assert_eq!(ran.len(), 1005, "no task's runbook ran twice");
    let by_host = |host: &str| lines.lines().filter(|l| l.ends_with(host)).count();
    assert!(
        hosts.iter().filter(|h| by_host(h) > 0).count() >= 2,
        "the hosts shared the work: {:?}",
        hosts.map(by_host)
    );
    let arrivals = pg.query("SELECT count(*) FROM alert_events");
    assert_eq!(
        arrivals, "1255",
        "every delivery stored, on the host that took it"
    );
}

/// A host that dies mid-runbook loses its task: its runbook dies with it, and another host
/// claims the task once the lease has run out and runs it to the end, once.
#[test]
fn a_host_killed_mid_runbook_hands_its_task_to_another_after_the_lease() {
    let pg = Cluster::start("handoff");
    let url = pg.url();
    let work = scratch("fleet", "handoff-work");
    let (runbook, runs) = runbook(
        &work,
        "printf 'started %s\\n' \"$1\" >> {runs}\nsleep 4\nprintf 'finished %s\\n' \"$1\" >> {runs}",
    );
    let start = |host: &str| {
        let yaml = format!(
            "queue: {{ workers: 1, lease: 2s, backoff_base: 100ms }}\nroutes:\n  - id: disk\n    run: [\"{}\", \"{host}\"]\n",
            runbook.display()
        );
        host_daemon("handoff", host, &url, &yaml)
    };
    let first = start("host-a");
    let reply = first.post(
        "/hooks/alertmanager",
        "application/json",
        &group("DiskFull", &["handoff-1".to_owned()]),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&runs).is_ok_and(|t| t.contains("started host-a")) {
        assert!(
            Instant::now() < deadline,
            "host-a never started the runbook"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    first.crash();
    let second = start("host-b");
    let deadline = Instant::now() + Duration::from_secs(60);
    while pg.query("SELECT status FROM tasks") != "done" {
        assert!(
            Instant::now() < deadline,
            "host-b never finished the task: {}\n{}",
            pg.query("SELECT status || ' ' || coalesce(worker, '-') FROM tasks"),
            second.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(5));
    let lines = std::fs::read_to_string(&runs).unwrap();
    assert_eq!(
        lines, "started host-a\nstarted host-b\nfinished host-b\n",
        "host-a's runbook died with it; host-b ran the task to its end, once"
    );
    let worker = pg.query("SELECT worker FROM tasks");
    assert!(worker.starts_with("host-b"), "{worker}");
    drop(second);
}

/// Debian's libfaketime, which makes a process read its clock `offset` away from the host's
/// (`FAKETIME`), leaving its monotonic clock alone: the environment for a daemon on a host whose
/// clock is wrong. Installed by `scripts/test` (`faketime`); missing, the test fails.
fn clock_off_by(offset: &str) -> Vec<(&'static str, String)> {
    let library = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|dir| dir.path().join("faketime/libfaketimeMT.so.1"))
        .find(|p| p.exists())
        .expect("libfaketime is required by this test: apt-get install faketime");
    vec![
        ("LD_PRELOAD", library.display().to_string()),
        ("FAKETIME", offset.to_owned()),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_owned()),
    ]
}

/// A host whose clock runs an hour ahead (seed 000's VMs woke up with wrong clocks) must not
/// see another host's lease on a running task as long expired and run the task a second time
/// beside it: in a fleet the daemons judge leases by the fleet database's clock.
#[test]
fn a_host_whose_clock_runs_an_hour_ahead_takes_no_task_before_its_lease_runs_out() {
    let pg = Cluster::start("skew");
    let url = pg.url();
    let work = scratch("fleet", "skew-work");
    let (runbook, runs) = runbook(
        &work,
        "printf 'started %s\\n' \"$1\" >> {runs}\nsleep 8\nprintf 'finished %s\\n' \"$1\" >> {runs}",
    );
    let yaml = |host: &str| {
        format!(
            "queue: {{ workers: 1, lease: 2s, backoff_base: 100ms }}\nroutes:\n  - id: disk\n    run: [\"{}\", \"{host}\"]\n",
            runbook.display()
        )
    };
    let honest = host_daemon("skew", "host-a", &url, &yaml("host-a"));
    let reply = honest.post(
        "/hooks/alertmanager",
        "application/json",
        &group("DiskFull", &["skew-1".to_owned()]),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&runs).is_ok_and(|t| t.contains("started host-a")) {
        assert!(
            Instant::now() < deadline,
            "host-a never started the runbook"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let skewed_env = clock_off_by("+1h");
    let mut skewed: Vec<(&str, &str)> = skewed_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    skewed.extend([
        ("NIGHTWATCH_DATABASE_URL", url.as_str()),
        ("NIGHTWATCH_HOST", "host-b"),
    ]);
    let ahead = Daemon::start(
        &scratch("fleet", "skew-host-b"),
        Some(&yaml("host-b")),
        &skewed,
    );
    // The daemon saw its own clock an hour off the fleet's: the skew is real, and noticed.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ahead.log().contains(" ms off") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = ahead.log();
    let skew_ms: i64 = log
        .split("this host's is ")
        .nth(1)
        .and_then(|rest| rest.split(" ms off").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("host-b says how far its clock is off the fleet's\n{log}"));
    assert!(
        (3_590_000..3_610_000).contains(&skew_ms),
        "host-b's clock is an hour ahead: {skew_ms} ms\n{log}"
    );

    let deadline = Instant::now() + Duration::from_secs(60);
    while pg.query("SELECT status FROM tasks") != "done" {
        assert!(
            Instant::now() < deadline,
            "the task never finished: {}\n{}",
            pg.query("SELECT status || ' ' || coalesce(worker, '-') FROM tasks"),
            honest.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(3));
    let lines = std::fs::read_to_string(&runs).unwrap();
    assert_eq!(
        lines,
        "started host-a\nfinished host-a\n",
        "host-b took the task while host-a's lease held\n{}",
        ahead.log()
    );
    let worker = pg.query("SELECT worker FROM tasks");
    assert!(worker.starts_with("host-a"), "{worker}");

    // `fleet status` shows each host's clock against the fleet's, and warns of host-b's:
    // its records carry its own clock's times, an hour out of place.
    let reader = scratch("fleet", "skew-reader");
    let vars = env(&reader, &url, "reader");
    let status = nightwatch(&["fleet", "status", "--json"], b"", &vars);
    assert!(status.status.success(), "{status:?}");
    let shown: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let clock = |host: &str| {
        shown["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["host"] == host)
            .and_then(|h| h["clock_ahead_ms"].as_i64())
            .unwrap_or_else(|| panic!("{host}'s clock in {shown}"))
    };
    assert!((3_590_000..3_610_000).contains(&clock("host-b")), "{shown}");
    assert!(clock("host-a").abs() < 5_000, "{shown}");
    let status = nightwatch(&["fleet", "status"], b"", &vars);
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(
        said.contains("warning: host-b's clock is 36")
            && said.contains("s ahead of the fleet database's")
            && !said.contains("warning: host-a"),
        "{said}"
    );
    drop(ahead);
    drop(honest);
}

/// Hosts reach the fleet's database across a network (seed 004's boxes): with
/// `sslmode=verify-full` and the database's certificate authority, the daemon and the fleet
/// commands talk to it over TLS only; without the authority the server cannot be verified and
/// nothing is sent, the refusal naming why.
#[test]
fn the_fleet_database_is_reached_over_verified_tls_when_the_url_asks_for_it() {
    let pg = Cluster::start("tls");
    let ca = pg.with_tls();
    let tls_url = format!(
        "{}&sslmode=verify-full&sslrootcert={}",
        pg.url(),
        ca.display()
    );
    // The server takes TLS once its configuration is reloaded.
    let home = scratch("fleet", "tls-home");
    let vars = env(&home, &tls_url, "web-1");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = nightwatch(&["fleet", "status", "--json"], b"", &vars);
        if status.status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "fleet status over TLS: {}",
            String::from_utf8_lossy(&status.stderr)
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let daemon = host_daemon(
        "tls",
        "web-1",
        &tls_url,
        "queue: { resolve_delay: 1h }\nroutes:\n  - id: disk\n    run: [\"true\"]\n",
    );
    let reply = daemon.post(
        "/hooks/alertmanager",
        "application/json",
        &group("DiskFull", &["tls-1".to_owned()]),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(pg.query("SELECT count(*) FROM tasks"), "1");
    // Every connection of the daemon's to the database is encrypted.
    let (tls, plain) = (
        pg.query("SELECT count(*) FROM pg_stat_activity JOIN pg_stat_ssl USING (pid) WHERE application_name = 'nightwatch' AND ssl"),
        pg.query("SELECT count(*) FROM pg_stat_activity JOIN pg_stat_ssl USING (pid) WHERE application_name = 'nightwatch' AND NOT ssl"),
    );
    assert!(tls.parse::<u32>().unwrap() > 0, "{tls} over TLS");
    assert_eq!(plain, "0", "connections in the clear");
    drop(daemon);

    // Without the authority, the server's certificate cannot be verified: refused, saying so.
    let unverifiable = format!("{}&sslmode=require", pg.url());
    let vars = env(&home, &unverifiable, "web-1");
    let status = nightwatch(&["fleet", "status"], b"", &vars);
    assert!(!status.status.success());
    let said = String::from_utf8_lossy(&status.stderr);
    assert!(said.contains("certificate"), "{said}");
}

/// Seed 001's thirty scheduled jobs on a fleet: a `singleton` job's slot runs once across all
/// the hosts, whichever fired it and whichever claimed it; a job of every host (each sweeping
/// its own Docker) runs each slot once on each host.
#[test]
fn a_singleton_job_runs_each_slot_once_in_the_fleet_and_a_per_host_job_once_per_host() {
    let pg = Cluster::start("jobs");
    let url = pg.url();
    let work = scratch("fleet", "jobs-work");
    // Each run appends its host and the alert it read (the slot is its `slot` label) as one
    // line in one write, as runs on several hosts' workers append at once.
    let (runbook, runs) = runbook(
        &work,
        "line=\"$1 $(tr -d '\\n')\"\nprintf '%s\\n' \"$line\" >> {runs}",
    );
    let hosts = ["host-a", "host-b", "host-c"];
    let daemons = host_daemons("jobs", &hosts, &url, |host| {
        format!(
            "queue: {{ workers: 2 }}\nwatch:\n  jobs:\n    report:\n      every: 1s\n      singleton: true\n      run: [\"{r}\", \"{host}\"]\n    own-sweep:\n      every: 1s\n      run: [\"{r}\", \"{host}\"]\n",
            r = runbook.display()
        )
    });
    std::thread::sleep(Duration::from_secs(10));
    drop(daemons);

    // (job, host that ran it, slot) of every run.
    let lines = std::fs::read_to_string(&runs).unwrap_or_default();
    let ran: Vec<(String, String, String)> = lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let (host, alert) = line.split_once(' ').unwrap();
            let alert: serde_json::Value =
                serde_json::from_str(alert).unwrap_or_else(|e| panic!("{e}: {line}"));
            let label = |k: &str| alert["labels"][k].as_str().unwrap_or_default().to_owned();
            (label("job"), host.to_owned(), label("slot"))
        })
        .collect();
    let mut report: Vec<&str> = ran
        .iter()
        .filter(|(job, _, _)| job == "report")
        .map(|(_, _, slot)| slot.as_str())
        .collect();
    assert!(
        report.len() >= 5,
        "the singleton ran through the seconds: {ran:#?}"
    );
    report.sort_unstable();
    let before = report.len();
    report.dedup();
    assert_eq!(report.len(), before, "a singleton slot ran twice: {ran:#?}");
    for host in hosts {
        let mut own: Vec<&str> = ran
            .iter()
            .filter(|(job, h, _)| job == "own-sweep" && h == host)
            .map(|(_, _, slot)| slot.as_str())
            .collect();
        assert!(own.len() >= 5, "{host} ran its own job: {ran:#?}");
        own.sort_unstable();
        let before = own.len();
        own.dedup();
        assert_eq!(
            own.len(),
            before,
            "{host} ran a slot of its own job twice: {ran:#?}"
        );
    }
    assert_eq!(
        ran.iter()
            .filter(|(job, _, _)| job != "report" && job != "own-sweep")
            .count(),
        0,
        "every run names its job: {ran:#?}"
    );
}

/// Seed 001's "jobs that must run in one place", for runbooks: a route pinned to `db-*` hosts
/// has its tasks run there only, whichever host the alerts reached.
#[test]
fn a_route_pinned_to_some_hosts_runs_only_there() {
    let pg = Cluster::start("pinned");
    let url = pg.url();
    let work = scratch("fleet", "pinned-work");
    let (runbook, runs) = runbook(
        &work,
        "printf '%s %s\\n' \"$NIGHTWATCH_TASK\" \"$1\" >> {runs}",
    );
    let daemons = host_daemons("pinned", &["web-1", "db-1"], &url, |host| {
        format!(
            "queue: {{ workers: 2 }}\nroutes:\n  - id: backup\n    hosts: [\"db-*\"]\n    run: [\"{}\", \"{host}\"]\n",
            runbook.display()
        )
    });
    let fps: Vec<String> = (0..20).map(|i| format!("backup-{i}")).collect();
    let reply = daemons[0].post(
        "/hooks/alertmanager",
        "application/json",
        &group("BackupDue", &fps),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let deadline = Instant::now() + Duration::from_secs(60);
    while pg.query("SELECT count(*) FROM tasks WHERE status = 'done'") != "20" {
        assert!(
            Instant::now() < deadline,
            "the pinned tasks did not all run: {}\n{}",
            pg.query("SELECT status || ' ' || coalesce(worker, '-') FROM tasks"),
            daemons[1].log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let lines = std::fs::read_to_string(&runs).unwrap();
    assert_eq!(lines.lines().count(), 20);
    assert!(
        lines.lines().all(|l| l.ends_with(" db-1")),
        "every run on db-1:\n{lines}"
    );
    // Any daemon shows the fleet's tasks, each with the worker (so the host) that ran it,
    // and keeps one host's.
    let count = |path: &str| daemons[0].json(path)["tasks"].as_array().unwrap().len();
    assert_eq!(count("/api/tasks?host=db-1"), 20);
    assert_eq!(count("/api/tasks?host=web-1"), 0);
    assert_eq!(
        count("/api/tasks?host=db"),
        0,
        "a host's name, not a prefix of one"
    );
    let page = daemons[0].json("/api/tasks?host=db-1&limit=15");
    assert!(
        page["tasks"].as_array().unwrap().iter().all(|t| t["worker"]
            .as_str()
            .is_some_and(|w| w.starts_with("db-1-worker-"))),
        "{page}"
    );
    let next = page["next"].as_str().expect("a second page");
    assert!(next.contains("host=db-1"), "{next}");
    assert_eq!(count(next), 5);
    assert_eq!(daemons[1].get("/api/tasks?host=").status, 400);
}

/// Seed 001: a fleet-wide sweep runs on one host at a time. Three daemons on one PostgreSQL,
/// each scheduling the janitor's sweep every second as a singleton, for a dozen seconds: from
/// the three hosts' own ledgers, the runs (each bracketed by its start and end records, with
/// its lease's token) never overlap, the tokens only grow, and the hosts that stood down said so.
#[test]
fn a_singleton_sweep_runs_on_one_host_at_a_time_across_the_fleet() {
    let pg = Cluster::start("singleton");
    let url = pg.url();
    let hosts = ["host-a", "host-b", "host-c"];
    let daemons = host_daemons("singleton", &hosts, &url, |_| {
        "janitor: { every: 1s, singleton: true }\n".to_owned()
    });
    let homes: Vec<_> = hosts
        .iter()
        .zip(&daemons)
        .map(|(host, daemon)| (*host, daemon.home.clone()))
        .collect();
    std::thread::sleep(Duration::from_secs(12));
    drop(daemons);

    // (start ms, end ms, token, host) of every run, and the stand-downs, from each host.
    let mut runs = Vec::new();
    let mut stood_down = 0;
    for (host, home) in &homes {
        let vars = [("NIGHTWATCH_HOME", home.as_os_str())];
        let out = nightwatch(&["export", "--format", "jsonl"], b"", &vars);
        assert!(out.status.success());
        let records: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let at = |r: &serde_json::Value| {
            nightwatch_time::parse_rfc3339(r["timestamp"].as_str().unwrap()).unwrap()
        };
        for start in records.iter().filter(|r| r["event"] == "singleton-start") {
            let token = start["inputs"]["token"].as_u64().unwrap();
            let end = records
                .iter()
                .find(|r| r["event"] == "singleton-end" && r["inputs"]["token"] == token)
                .map(at);
            runs.push((at(start), end, token, *host));
        }
        stood_down += records
            .iter()
            .filter(|r| r["event"] == "stood-down")
            .count();
    }
    runs.sort_by_key(|r| r.2);
    assert!(
        runs.len() >= 5,
        "the sweep ran through the dozen seconds: {runs:?}"
    );
    assert!(stood_down > 0, "the hosts that did not sweep said so");
    for pair in runs.windows(2) {
        let (earlier, later) = (&pair[0], &pair[1]);
        assert!(later.2 > earlier.2, "tokens only grow: {pair:?}");
        let ended = earlier
            .1
            .expect("every run but one cut short by the stop has its end");
        assert!(
            later.0 >= ended,
            "a run began before the one before it ended: {pair:?}"
        );
    }
}

/// A record as `/api/records` names it: its host and sequence number.
fn place(record: &serde_json::Value) -> (String, u64) {
    (
        record["host"]
            .as_str()
            .expect("every record names its host")
            .to_owned(),
        record["seq"].as_u64().unwrap(),
    )
}

/// Every page of `path` and the pages after it, following `next`, each read with `items`;
/// what was read, in the order read, and how many pages.
fn follow_pages<T>(
    daemon: &Daemon,
    path: &str,
    items: impl Fn(&serde_json::Value) -> Vec<T>,
) -> (Vec<T>, usize) {
    let mut read = Vec::new();
    let mut pages = 0;
    let mut next = Some(path.to_owned());
    while let Some(path) = next {
        let page = daemon.json(&path);
        pages += 1;
        read.extend(items(&page));
        next = page["next"].as_str().map(str::to_owned);
        assert!(pages < 100, "the pages never end: {path}");
    }
    (read, pages)
}

/// Every record of `path` and the pages after it, in the order read (newest first: each
/// page is oldest first, the next one older).
fn read_pages(daemon: &Daemon, path: &str) -> (Vec<(i64, String, u64)>, usize) {
    follow_pages(daemon, path, |page| {
        let mut records: Vec<_> = page["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let at = nightwatch_ledger::parse_rfc3339(r["timestamp"].as_str().unwrap())
                    .expect("an RFC 3339 time");
                let (host, seq) = place(r);
                (at, host, seq)
            })
            .collect();
        records.reverse();
        records
    })
}

/// Issue 16's fleet view: three hosts record on their own, and any one daemon's
/// `/api/records` holds all three hosts' records, each naming its host; `?host=h2` keeps
/// h2's; reading page after page from `next` gives every record exactly once, newest first
/// by time, host and seq; a `host` no host could have is a 400; the timeline names each
/// line's host and filters by it.
#[test]
fn any_daemon_shows_every_hosts_records_by_host_and_pages_them_once() {
    let pg = Cluster::start("view");
    let url = pg.url();
    let hosts = ["h1", "h2", "h3"];
    let daemons = host_daemons("view", &hosts, &url, |_| {
        "queue: { workers: 1 }\n".to_owned()
    });
    for (i, (host, daemon)) in hosts.iter().zip(&daemons).enumerate() {
        let vars = env(&daemon.home, &url, host);
        for n in 0..4 + i {
            hook_call(&vars, 100 * i + n);
        }
    }
    // Each host's own records, once the fleet holds them all (the daemons ship every 2s).
    let own: Vec<usize> = hosts
        .iter()
        .zip(&daemons)
        .map(|(host, daemon)| local_records(&env(&daemon.home, &url, host)))
        .collect();
    let total: usize = own.iter().sum();
    assert!(own.iter().all(|n| *n >= 4), "{own:?}");
    let all = daemons[0].wait_for(
        "/api/records?limit=5000",
        60,
        "every host's records in the fleet",
        |v| v["records"].as_array().unwrap().len() >= total,
    );
    let mut everyone: Vec<(String, u64)> = all["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(place)
        .collect();
    assert_eq!(everyone.len(), total, "{own:?}");
    assert_eq!(
        all["next"],
        serde_json::Value::Null,
        "one page holds them all"
    );
    for (host, n) in hosts.iter().zip(&own) {
        let seqs: Vec<u64> = everyone
            .iter()
            .filter(|(h, _)| h == host)
            .map(|(_, seq)| *seq)
            .collect();
        let mut sorted = seqs.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (1..=*n as u64).collect::<Vec<_>>(),
            "all of {host}'s"
        );
    }

    // The same from another host's daemon.
    let elsewhere = daemons[2].json("/api/records?limit=5000");
    let mut there: Vec<(String, u64)> = elsewhere["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(place)
        .collect();
    everyone.sort();
    there.sort();
    assert_eq!(there, everyone, "every daemon shows the fleet's records");

    // One host's.
    let h2 = daemons[0].json("/api/records?host=h2&limit=5000");
    let h2: Vec<(String, u64)> = h2["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(place)
        .collect();
    assert_eq!(h2.len(), own[1]);
    assert!(h2.iter().all(|(h, _)| h == "h2"), "{h2:?}");
    let none = daemons[0].json("/api/records?host=h4");
    assert_eq!(none["records"].as_array().unwrap().len(), 0);

    // Page by page, each record once, in the fleet's order (newest first).
    for size in [1, 2, 5] {
        let (read, pages) = read_pages(&daemons[1], &format!("/api/records?limit={size}"));
        assert!(pages >= total / size, "{pages} pages of {size}");
        let mut places: Vec<(String, u64)> = read.iter().map(|(_, h, s)| (h.clone(), *s)).collect();
        let mut sorted = read.clone();
        sorted.sort_by(|a, b| b.cmp(a));
        assert_eq!(read, sorted, "pages of {size} read newest first");
        places.sort();
        assert_eq!(
            places, everyone,
            "pages of {size}: every record exactly once"
        );
    }
    let (read, _) = read_pages(&daemons[1], "/api/records?limit=2&host=h3");
    assert_eq!(read.len(), own[2]);
    assert!(read.iter().all(|(_, h, _)| h == "h3"));

    // Hostile input is a 400 with a sentence, never a crash.
    let long = "h".repeat(300);
    for bad in [
        "/api/records?host=".to_owned(),
        format!("/api/records?host={long}"),
        "/api/records?host=h%001".to_owned(),
        "/api/records?host=h%0A2%20x".to_owned(),
        "/api/records?host=%FF%FE".to_owned(),
        "/api/records?before=yesterday".to_owned(),
        "/api/records?before=1.2.h%202".to_owned(),
    ] {
        let reply = daemons[0].get(&bad);
        assert_eq!(reply.status, 400, "{bad}: {}", reply.text());
        assert!(reply.json()["error"].is_string(), "{bad}");
    }
    assert_eq!(daemons[0].get("/healthz").status, 200, "still serving");

    // The timeline: every host's lines, each naming its host; its host filter keeps h2's.
    let page = daemons[0].get("/");
    assert_eq!(page.status, 200);
    let html = page.text();
    for host in hosts {
        assert!(
            html.contains(&format!("<span class=\"host\">{host}</span>")),
            "{host} on the timeline"
        );
    }
    let html = daemons[0].get("/?host=h2").text();
    assert!(html.contains("<span class=\"host\">h2</span>"));
    assert!(!html.contains("<span class=\"host\">h1</span>"), "{html}");
    // Every host numbers its own records (each has an r1): a line's link names its host.
    assert!(html.contains("href=\"/api/records/r1?host=h2\""), "{html}");

    // One record, from any daemon: `host=` says whose; this daemon's own without it.
    let theirs = daemons[0].json("/api/records/r2?host=h2");
    assert_eq!(theirs["host"], "h2", "{theirs}");
    assert_eq!(
        theirs,
        daemons[1].json("/api/records/r2"),
        "h2's record as h1 shows it is h2's own"
    );
    let mine = daemons[0].json("/api/records/r2");
    assert_eq!(mine["host"], "h1", "{mine}");
    assert_ne!(
        mine["inputs"], theirs["inputs"],
        "two hosts' r2 are two records"
    );
    let missing = daemons[0].get("/api/records/r2?host=h4");
    assert_eq!(missing.status, 404, "{}", missing.text());
    let bad = daemons[0].get("/api/records/r2?host=h%0A2");
    assert_eq!(bad.status, 400, "{}", bad.text());

    // A session whose calls ran on every host: each daemon shows all of it, each record
    // naming the host that holds it; its page says where it was recorded and links there.
    let session = daemons[2].json("/api/sessions/sess_fleet");
    let records = session["records"].as_array().unwrap();
    for host in hosts {
        let held = daemons[0].json(&format!(
            "/api/records?session=sess_fleet&host={host}&limit=5000"
        ));
        let expected = held["records"].as_array().unwrap().len();
        assert!(expected > 0, "{host} has records of the session");
        assert_eq!(
            records.iter().filter(|r| r["host"] == host).count(),
            expected,
            "{host}'s records of the session, from h3's daemon"
        );
    }
    let listed = daemons[0].json("/api/sessions");
    assert!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == "sess_fleet"),
        "{listed}"
    );
    let page = daemons[0].get("/sessions/sess_fleet");
    assert_eq!(page.status, 200);
    let html = page.text();
    assert!(
        html.contains("<dd id=\"recorded-on\">h1, h2, h3</dd>"),
        "{html}"
    );
    assert!(html.contains("?host=h3\""), "{html}");
}

/// An arrival as `/api/alerts` names it: the host that received it and its number there.
fn arrival_place(arrival: &serde_json::Value) -> (String, i64) {
    (
        arrival["received_by"]
            .as_str()
            .expect("every arrival names the host that received it")
            .to_owned(),
        arrival["id"].as_i64().unwrap(),
    )
}

/// Every arrival of `path` and the pages after it, in the order read (oldest first), each as
/// (received_ms, host, id).
fn read_arrival_pages(daemon: &Daemon, path: &str) -> (Vec<(i64, String, i64)>, usize) {
    follow_pages(daemon, path, |page| {
        page["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let (host, id) = arrival_place(a);
                (a["received_ms"].as_i64().unwrap(), host, id)
            })
            .collect()
    })
}

/// Issue 16's fleet view of the inbox: alerts posted to three hosts' daemons all show on any
/// daemon's `/api/alerts`, each naming the host that received it; `?host=a2` keeps a2's;
/// reading page after page from `next` gives every arrival exactly once, oldest first by
/// time, host and number; an alert received on two hosts shows both arrivals on its
/// `/api/alerts/{id}` and its page; hostile parameters are a 400; the timeline names each
/// arrival's host and its host filter matches it.
#[test]
fn any_daemon_shows_every_hosts_arrivals_by_host_and_pages_them_once() {
    let pg = Cluster::start("arrivals");
    let url = pg.url();
    let hosts = ["a1", "a2", "a3"];
    let daemons = host_daemons("arrivals", &hosts, &url, |_| {
        "queue: { workers: 1 }\n".to_owned()
    });
    // Each host receives its own alerts, 3, 4 and 5 of them, in one delivery each.
    for (i, daemon) in daemons.iter().enumerate() {
        let fps: Vec<String> = (0..3 + i).map(|k| format!("fp{i}-{k}")).collect();
        let reply = daemon.post(
            "/hooks/alertmanager",
            "application/json",
            &group("DiskFull", &fps),
        );
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    // One alert reaches a1 and a2 (two Alertmanager receivers).
    for daemon in &daemons[..2] {
        let reply = daemon.post(
            "/hooks/alertmanager",
            "application/json",
            &group("LoadHigh", &["shared".to_owned()]),
        );
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    let own: [i64; 3] = [4, 5, 5];
    let total = own.iter().sum::<i64>() as usize;

    // Any daemon: every host's arrivals, each naming its host, numbered per host.
    let all = daemons[2].json("/api/alerts?limit=5000");
    let mut everyone: Vec<(String, i64)> = all["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(arrival_place)
        .collect();
    assert_eq!(everyone.len(), total, "{all}");
    assert_eq!(all["truncated"], false);
    for (host, n) in hosts.iter().zip(own) {
        let mut ids: Vec<i64> = everyone
            .iter()
            .filter(|(h, _)| h == host)
            .map(|(_, id)| *id)
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, (1..=n).collect::<Vec<_>>(), "all of {host}'s");
    }
    let mut there: Vec<(String, i64)> = daemons[0].json("/api/alerts?limit=5000")["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(arrival_place)
        .collect();
    everyone.sort();
    there.sort();
    assert_eq!(there, everyone, "every daemon shows the fleet's arrivals");

    // One host's.
    let a2 = daemons[0].json("/api/alerts?host=a2&limit=5000");
    let a2: Vec<(String, i64)> = a2["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(arrival_place)
        .collect();
    assert_eq!(a2.len() as i64, own[1]);
    assert!(a2.iter().all(|(h, _)| h == "a2"), "{a2:?}");
    let none = daemons[0].json("/api/alerts?host=a4");
    assert_eq!(none["alerts"].as_array().unwrap().len(), 0);

    // Page by page from the start, each arrival once, in the fleet's order (oldest first).
    for size in [1, 2, 5] {
        let (read, pages) =
            read_arrival_pages(&daemons[1], &format!("/api/alerts?after=0&limit={size}"));
        assert!(pages >= total / size, "{pages} pages of {size}");
        let mut sorted = read.clone();
        sorted.sort();
        assert_eq!(read, sorted, "pages of {size} read oldest first");
        let mut places: Vec<(String, i64)> =
            read.iter().map(|(_, h, id)| (h.clone(), *id)).collect();
        places.sort();
        assert_eq!(
            places, everyone,
            "pages of {size}: every arrival exactly once"
        );
    }
    let (read, _) = read_arrival_pages(&daemons[1], "/api/alerts?after=0&limit=2&host=a3");
    assert_eq!(read.len() as i64, own[2]);
    assert!(read.iter().all(|(_, h, _)| h == "a3"));

    // The alert received on two hosts: both arrivals, from any daemon.
    let shared = all["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["alert"]["identity"] == "shared")
        .expect("the shared alert");
    let alert_id = shared["alert_id"].as_str().unwrap();
    let detail = daemons[2].json(&format!("/api/alerts/{alert_id}"));
    let mut received: Vec<String> = detail["arrivals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| arrival_place(a).0)
        .collect();
    received.sort();
    assert_eq!(received, ["a1", "a2"], "{detail}");
    // Its records too: each receiving host's `dispatch`, once the hosts have shipped them.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let detail = daemons[2].json(&format!("/api/alerts/{alert_id}"));
        let mut recorded: Vec<String> = detail["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["event"] == "dispatch")
            .map(|r| r["host"].as_str().unwrap().to_owned())
            .collect();
        recorded.sort();
        if recorded == ["a1", "a2"] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the alert's records name both receiving hosts' dispatch: {detail}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let page = daemons[2].get(&format!("/alerts/{alert_id}"));
    assert_eq!(page.status, 200);
    let html = page.text();
    assert!(html.contains("<th>received by</th>"), "{html}");
    for host in ["a1", "a2"] {
        assert!(
            html.contains(&format!("<td class=\"host\">{host}</td>")),
            "{host}: {html}"
        );
    }

    // Hostile input is a 400 with a sentence, never a crash.
    let long = "h".repeat(300);
    for bad in [
        "/api/alerts?host=".to_owned(),
        format!("/api/alerts?host={long}"),
        "/api/alerts?host=a%001".to_owned(),
        "/api/alerts?host=%FF%FE".to_owned(),
        "/api/alerts?after=soon".to_owned(),
        "/api/alerts?after=1.2.a%202".to_owned(),
        "/api/alerts?after=99999999999999999999.1.a1".to_owned(),
        // Arrivals are numbered per host: a bare number names no one arrival in a fleet.
        "/api/alerts?after=3".to_owned(),
        "/?arrivals_before=3".to_owned(),
    ] {
        let reply = daemons[0].get(&bad);
        assert_eq!(reply.status, 400, "{bad}: {}", reply.text());
    }
    assert_eq!(daemons[0].get("/healthz").status, 200, "still serving");

    // The timeline: every host's arrivals, each naming its host; its host filter keeps a3's.
    let by = |host: &str| format!("received by <span class=\"host\">{host}</span>");
    let html = daemons[0].get("/").text();
    for host in hosts {
        assert!(html.contains(&by(host)), "{host} on the timeline: {html}");
    }
    let html = daemons[0].get("/?host=a3").text();
    assert!(html.contains(&by("a3")), "{html}");
    assert!(!html.contains(&by("a1")), "{html}");
    assert!(
        !html.contains(alert_id),
        "the alert a1 and a2 received: {html}"
    );
}
