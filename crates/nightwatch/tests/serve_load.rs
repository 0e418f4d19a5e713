//! The daemon under large deliveries, through the real binary (and a real Alertmanager): a
//! whole group is one batch, stored once, answered once; and under a kill, thousands of idle
//! connections and a real full disk (a small tmpfs, so root). Apart from `serve.rs` so that
//! suite stays quick while working on the daemon.

mod common;

use common::daemon::{Daemon, request};
use common::gate::Gate;
use common::scratch;
use serde_json::Value;
use std::time::{Duration, Instant};

/// A route for `DiskFull` whose tasks wait an hour: what is tested is intake, not runbooks.
const CONFIG: &str = "queue: { resolve_delay: 1h }\nroutes:\n  - id: disk\n    when: { labels: { alertname: DiskFull } }\n    run: [\"true\"]\n";

/// One Alertmanager notification of `count` firing `DiskFull` alerts on one host, each its
/// own mount (and fingerprint): one group, as Alertmanager sends it.
fn group(count: usize) -> Vec<u8> {
    group_from(0, count)
}

/// As [`group`], its alerts numbered from `first` (so groups from different `first`s never
/// share an alert).
fn group_from(first: usize, count: usize) -> Vec<u8> {
    let alerts: Vec<Value> = (first..first + count)
        .map(|i| {
            serde_json::json!({
                "status": "firing",
                "labels": { "alertname": "DiskFull", "instance": "db1:9100", "mount": format!("/m{i}") },
                "annotations": {},
                "startsAt": "2026-12-02T03:00:00Z",
                "endsAt": "0001-01-01T00:00:00Z",
                "fingerprint": format!("{i:016x}"),
            })
        })
        .collect();
    serde_json::json!({
        "version": "4",
        "groupKey": "{}:{alertname=\"DiskFull\", instance=\"db1:9100\"}",
        "status": "firing",
        "receiver": "nightwatch",
        "groupLabels": { "alertname": "DiskFull", "instance": "db1:9100" },
        "commonLabels": { "alertname": "DiskFull", "instance": "db1:9100" },
        "commonAnnotations": {},
        "externalURL": "http://alertmanager",
        "alerts": alerts,
    })
    .to_string()
    .into_bytes()
}

/// What `/metrics` counts for one series, 0 when it is not there.
fn metric(daemon: &Daemon, series: &str) -> u64 {
    daemon
        .get("/metrics")
        .text()
        .lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0)
}

/// Every arrival's alert id, read by cursor.
fn arrivals(daemon: &Daemon) -> Vec<String> {
    let mut ids = Vec::new();
    let mut path = "/api/alerts?after=0&limit=1000".to_owned();
    loop {
        let page = daemon.json(&path);
        for alert in page["alerts"].as_array().expect("alerts") {
            ids.push(alert["alert_id"].as_str().expect("alert_id").to_owned());
        }
        match page["next"].as_str() {
            Some(next) => path = next.to_owned(),
            None => return ids,
        }
    }
}

/// Seed 001's 3,000 alerts that became 9,000: a 5,000-alert group (inside the 1 MiB body
/// limit) is stored as one batch, answered 200 once, one arrival and one task per alert.
#[test]
fn a_five_thousand_alert_group_gets_one_reply_and_one_stored_copy_per_alert() {
    let dir = scratch("serve-load", "group");
    let daemon = Daemon::start(&dir.join("home"), Some(CONFIG), &[]);
    let body = group(5_000);
    assert!(body.len() < 1 << 20, "{} bytes", body.len());
    let started = Instant::now();
    let reply = request(
        &daemon.addr,
        "POST",
        "/hooks/alertmanager",
        &[("Content-Type", "application/json")],
        &body,
    );
    let took = started.elapsed();
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["stored"], 5_000);
    eprintln!("5,000 alerts stored and answered in {took:?}");

    let ids = arrivals(&daemon);
    assert_eq!(ids.len(), 5_000);
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 5_000, "each alert stored once");
    assert_eq!(
        metric(&daemon, "nightwatch_alerts_total{disposition=\"routed\"}"),
        5_000
    );
    let tasks = daemon.json("/api/tasks?limit=1")["next"].clone();
    assert!(tasks.is_string(), "tasks are paged: {tasks}");
    let records = daemon.json("/api/records?event=dispatch&since=1h&limit=1");
    assert_eq!(records["records"].as_array().map(Vec::len), Some(1));

    // The timeline page shows a bounded share of them and links to the page before, until
    // every arrival was shown once: 5,000 arrivals (one millisecond), 5,000 records.
    let (mut shown, mut pages, mut path) = (0, 0, "/?since=1h".to_owned());
    loop {
        let page = daemon.get(&path);
        assert_eq!(page.status, 200, "{path}: {}", page.text());
        let html = page.text();
        let alerts: usize = html
            .split("data-count=\"alerts\"><b>")
            .nth(1)
            .and_then(|rest| rest.split('<').next())
            .and_then(|n| n.parse().ok())
            .expect("the page counts its alerts");
        assert!(alerts <= 2_000, "{alerts} alerts on one page");
        shown += alerts;
        pages += 1;
        match html.split("id=\"earlier\" href=\"").nth(1) {
            Some(rest) => path = rest.split('"').next().unwrap().replace("&amp;", "&"),
            None => break,
        }
        assert!(pages < 10, "the pages never end");
    }
    assert_eq!(shown, 5_000, "every arrival once, over {pages} pages");
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
}

/// The daemon's resident memory in bytes (`VmRSS`).
fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmRSS")
        * 1024
}

/// Issue 13's unbounded reads: after 100,000 tasks, one `GET /api/tasks` took 10 s, returned
/// 127 MB and left the daemon at 2.1 GB. Now every list is a bounded page, and the daemon
/// stays small however much it was asked to read.
#[test]
fn after_a_hundred_thousand_tasks_every_read_is_a_bounded_page_and_the_daemon_stays_small() {
    let dir = scratch("serve-load", "hundred-thousand");
    let daemon = Daemon::start(&dir.join("home"), Some(CONFIG), &[]);
    let started = Instant::now();
    for first in (0..100_000).step_by(4_000) {
        let reply = request(
            &daemon.addr,
            "POST",
            "/hooks/alertmanager",
            &[("Content-Type", "application/json")],
            &group_from(first, 4_000),
        );
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    eprintln!("100,000 alerts stored in {:?}", started.elapsed());
    assert_eq!(
        metric(&daemon, "nightwatch_tasks{state=\"pending\"}"),
        100_000
    );

    let read = |path: &str, most_bytes: usize| {
        let started = Instant::now();
        let reply = daemon.get(path);
        let took = started.elapsed();
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        assert!(
            reply.body.len() <= most_bytes,
            "{path}: {} bytes, more than {most_bytes}",
            reply.body.len()
        );
        eprintln!("{path}: {} bytes in {took:?}", reply.body.len());
        reply
    };
    let first = read("/api/tasks", 1 << 20).json();
    assert_eq!(first["tasks"].as_array().map(Vec::len), Some(100));
    assert!(first["next"].is_string(), "a page links to the next");
    // Asking for everything gets the largest page, not everything.
    let most = read("/api/tasks?limit=100000000", 16 << 20).json();
    let page = most["tasks"].as_array().map_or(0, Vec::len);
    assert!((100..100_000).contains(&page), "{page} tasks on one page");
    read("/api/alerts?since=1h", 16 << 20);
    read("/api/records?since=1h", 16 << 20);
    read("/?since=1h", 16 << 20);
    read("/metrics", 1 << 20);

    let rss = resident_bytes(daemon.pid());
    eprintln!(
        "the daemon's resident memory after the reads: {} MB",
        rss >> 20
    );
    assert!(rss < 100 << 20, "{} MB resident", rss >> 20);
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
}

/// A real Alertmanager sends a 3,000-alert group: one delivery, answered 200 at once, so it
/// never sends it again; every alert stored once.
#[test]
fn a_real_alertmanager_delivers_a_large_group_once_without_duplicates() {
    let dir = scratch("serve-load", "alertmanager-group");
    let daemon = Daemon::start(&dir.join("home"), Some(CONFIG), &[]);
    let am = common::alertmanager::Alertmanager::start(
        &format!("{}/hooks/alertmanager", daemon.url),
        None,
    );
    am.fire_group(
        &[("alertname", "DiskFull"), ("instance", "db1:9100")],
        "mount",
        3_000,
    );
    let delivered = "nightwatch_http_requests_total{endpoint=\"/hooks/alertmanager\",code=\"200\"}";
    let deadline = Instant::now() + Duration::from_secs(60);
    while metric(&daemon, delivered) == 0 {
        assert!(Instant::now() < deadline, "no delivery:\n{}", am.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    // Alertmanager retries a failed delivery within a second; give it the time to.
    std::thread::sleep(Duration::from_secs(5));
    let log = am.log();
    assert_eq!(metric(&daemon, delivered), 1, "one delivery:\n{log}");
    assert!(!log.contains("Notify for alerts failed"), "{log}");
    let ids = arrivals(&daemon);
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!((ids.len(), distinct.len()), (3_000, 3_000), "no duplicates");
    assert_eq!(
        metric(&daemon, "nightwatch_alerts_total{disposition=\"routed\"}"),
        3_000
    );
    drop(am);
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
}

/// Raises this process's open-file limit to `files` (within the hard limit), so the test
/// itself can hold the connections; the daemon, started before, keeps its own limit.
fn raise_file_limit(files: u64) -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = files.min(limit.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
    limit.rlim_cur
}

/// Files the process `pid` has open.
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| dir.count())
        .unwrap_or(usize::MAX)
}

/// Drops the connections the daemon ended: refused with a 503 (counted in `refused`), or
/// idle past `request_timeout` and closed without a word (in `timed_out`).
fn drop_ended(held: &mut Vec<std::net::TcpStream>, refused: &mut usize, timed_out: &mut usize) {
    use std::io::Read;
    held.retain_mut(|stream| {
        stream.set_nonblocking(true).unwrap();
        let mut first = [0u8; 12];
        match stream.read(&mut first) {
            Ok(0) => {
                *timed_out += 1;
                false
            }
            Ok(n) => {
                *refused += 1;
                assert!(
                    first[..n].starts_with(b"HTTP/1.1 503"),
                    "{:?}",
                    String::from_utf8_lossy(&first[..n])
                );
                false
            }
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}");
                true
            }
        }
    });
}

/// Seed 001's flood: 20,000 idle connections. The daemon keeps at most `max_connections`
/// (768) and refuses the rest at once with why, so its files stay far from its limit, a
/// liveness probe is answered all along, the hooks' socket (the resident gate, its own
/// process) answers a hook's call, and once the idle ones time out, alerts are taken again.
/// The test lets go of each connection the daemon refused (it is closed already), so it needs
/// no more files than the daemon keeps open.
#[test]
fn twenty_thousand_idle_connections_leave_the_daemon_alive_and_then_taking_alerts() {
    let dir = scratch("serve-load", "idle-flood");
    let home = dir.join("home");
    // Long enough that the flood (seconds on a slow 2-core machine) ends before the first
    // idle connections it made are cut off and replaced by later ones.
    let daemon = Daemon::start(&home, Some(&format!("request_timeout: 10s\n{CONFIG}")), &[]);
    let _gate = Gate::start(&home);
    let limit = raise_file_limit(4_096);
    assert!(
        limit >= 4_096,
        "the test needs 4,096 open files; the hard limit is {limit}"
    );
    let (mut held, mut refused, mut timed_out) = (Vec::new(), 0, 0);
    for _ in 0..20 {
        for _ in 0..1_000 {
            held.push(std::net::TcpStream::connect(&daemon.addr).expect("connect"));
        }
        std::thread::sleep(Duration::from_millis(50));
        drop_ended(&mut held, &mut refused, &mut timed_out);
    }
    std::thread::sleep(Duration::from_millis(500));
    drop_ended(&mut held, &mut refused, &mut timed_out);
    assert_eq!(refused + timed_out + held.len(), 20_000);
    assert!(held.len() <= 768, "{} idle connections kept", held.len());
    assert!(
        refused >= 19_000,
        "{refused} refused with why, {timed_out} timed out"
    );

    let files = open_files(daemon.pid());
    assert!(files < 1_000, "the daemon holds {files} files");
    let alive = daemon.get("/healthz");
    assert_eq!(alive.status, 200, "{}", alive.text());
    // A hook's call goes to the gate's socket and is answered, the flood notwithstanding.
    std::os::unix::net::UnixStream::connect(home.join("gate.sock")).expect("the gate listens");
    let started = Instant::now();
    let hooked = common::nightwatch(
        &["hook", "claude"],
        &common::daemon::payload("claude/pre-bash.json"),
        &[("NIGHTWATCH_HOME", home.as_os_str())],
    );
    assert!(
        hooked.status.success() && started.elapsed() < Duration::from_secs(5),
        "{:?} after {:?}: {}",
        hooked.status,
        started.elapsed(),
        String::from_utf8_lossy(&hooked.stderr)
    );
    let full = daemon.post("/hooks/alertmanager", "application/json", &group(1));
    assert_eq!(full.status, 503, "{}", full.text());
    assert!(full.text().contains("max_connections"), "{}", full.text());

    // The idle connections the daemon kept are closed after request_timeout; it takes
    // alerts again without a restart.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = daemon.post("/hooks/alertmanager", "application/json", &group(1));
        if reply.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "still refused: {}", reply.text());
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(held);
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
}

/// One firing `DiskFull` alert with its own fingerprint, as Alertmanager sends one.
fn one_alert(fingerprint: &str) -> Vec<u8> {
    serde_json::json!({
        "version": "4",
        "status": "firing",
        "receiver": "nightwatch",
        "alerts": [{
            "status": "firing",
            "labels": { "alertname": "DiskFull", "instance": "db1:9100", "mount": fingerprint },
            "startsAt": "2026-12-02T03:00:00Z",
            "fingerprint": fingerprint,
        }],
    })
    .to_string()
    .into_bytes()
}

/// One stored arrival: its number, its alert's identity, its record once it has one.
struct Stored {
    id: i64,
    identity: String,
    record: Option<String>,
}

/// Every arrival in the data directory's `alerts.db`, oldest first.
fn stored_arrivals(home: &std::path::Path) -> Vec<Stored> {
    let alerts = rusqlite::Connection::open(home.join("alerts.db")).unwrap();
    let mut statement = alerts
        .prepare("SELECT id, alert_json, record FROM alert_events ORDER BY id")
        .unwrap();
    statement
        .query_map([], |r| {
            let alert: Value = serde_json::from_str(&r.get::<_, String>(1)?).unwrap();
            Ok(Stored {
                id: r.get(0)?,
                identity: alert["identity"].as_str().unwrap().to_owned(),
                record: r.get(2)?,
            })
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Nothing acknowledged is lost, and the ledger has exactly one `dispatch` record for each
/// stored arrival and none for anything else.
fn assert_stored_and_recorded_once(
    home: &std::path::Path,
    acknowledged: &[String],
    stored: &[Stored],
) {
    let identities: std::collections::HashSet<&str> =
        stored.iter().map(|a| a.identity.as_str()).collect();
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|f| !identities.contains(f.as_str()))
        .collect();
    assert!(lost.is_empty(), "acknowledged but not stored: {lost:?}");
    let ledger = rusqlite::Connection::open(home.join("ledger.db")).unwrap();
    let per_arrival: std::collections::HashMap<i64, i64> = ledger
        .prepare(
            "SELECT json_extract(inputs, '$.arrival'), count(*) FROM records
             WHERE event = 'dispatch' AND tool = 'alert' GROUP BY 1",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for arrival in stored {
        assert_eq!(
            per_arrival.get(&arrival.id),
            Some(&1),
            "arrival {} ({:?})",
            arrival.id,
            arrival.record
        );
    }
    assert_eq!(
        per_arrival.len(),
        stored.len(),
        "records name only stored arrivals"
    );
}

/// Seed 001's crash under load: `kill -9` while eight senders post. Every alert a sender got
/// a 200 for is stored, and once the daemon is back every arrival has exactly one `dispatch`
/// record, however the batches in flight were cut.
#[test]
fn a_kill_mid_load_loses_no_acknowledged_alert_and_leaves_one_record_per_arrival() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let dir = scratch("serve-load", "kill-mid-load");
    let home = dir.join("home");
    let daemon = Daemon::start(&home, Some(CONFIG), &[]);
    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let senders: Vec<_> = (0..8)
        .map(|sender| {
            let (addr, stop, acknowledged) =
                (daemon.addr.clone(), stop.clone(), acknowledged.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    n += 1;
                    let fingerprint = format!("s{sender}-{n}");
                    let sent = std::panic::catch_unwind(|| {
                        request(
                            &addr,
                            "POST",
                            "/hooks/alertmanager",
                            &[("Content-Type", "application/json")],
                            &one_alert(&fingerprint),
                        )
                        .status
                    });
                    match sent {
                        Ok(200) => acknowledged.lock().unwrap().push(fingerprint),
                        // The daemon is gone: nothing more to send.
                        _ => return,
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1_500));
    daemon.crash();
    stop.store(true, Ordering::SeqCst);
    for sender in senders {
        sender.join().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() > 100,
        "only {} sent before the kill",
        acknowledged.len()
    );

    let daemon = Daemon::start(&home, Some(CONFIG), &[]);
    let stored = stored_arrivals(&home);
    let unrecorded: Vec<i64> = stored
        .iter()
        .filter(|a| a.record.is_none())
        .map(|a| a.id)
        .collect();
    assert!(
        unrecorded.is_empty(),
        "arrivals without a record after the restart: {unrecorded:?}"
    );
    assert_stored_and_recorded_once(&home, &acknowledged, &stored);
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
    common::assert_ledger_verifies(&home);
}

/// A tmpfs of its own size mounted on a directory, so a test can fill a real disk and give
/// the space back; unmounted when dropped. Mounting needs root: without it the test fails,
/// saying so.
struct SmallDisk {
    dir: std::path::PathBuf,
}

impl SmallDisk {
    fn mount(dir: &std::path::Path, size: &str) -> SmallDisk {
        std::fs::create_dir_all(dir).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status();
        assert!(
            matches!(mounted, Ok(status) if status.success()),
            "a full disk is made with a small tmpfs, which needs root and `mount`: {mounted:?}"
        );
        SmallDisk {
            dir: dir.to_path_buf(),
        }
    }

    /// Gives the disk room again, keeping what it holds.
    fn grow(&self, size: &str) {
        let status = std::process::Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.dir)
            .status()
            .unwrap();
        assert!(status.success(), "remounting {} failed", self.dir.display());
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.dir)
            .status();
    }
}

/// Seed 001's full disk, on a real one: deliveries are refused with 503 and `Retry-After`,
/// the daemon stays up and says it is not ready; once the space is back it says ready again
/// with nothing sent to it (a load balancer sends nothing to a daemon that is not ready), then
/// takes alerts. Every alert answered 200 is stored, and every arrival gets one record.
#[test]
fn a_full_disk_is_refused_with_retry_after_and_intake_comes_back_without_a_restart() {
    let dir = scratch("serve-load", "full-disk");
    let home = dir.join("home");
    let disk = SmallDisk::mount(&home, "8m");
    let config = format!("request_timeout: 1s\n{CONFIG}");
    let daemon = Daemon::start(&home, Some(&config), &[]);

    // Groups of 100 distinct alerts until the disk is full.
    let mut acknowledged = Vec::new();
    let started = Instant::now();
    let refused = loop {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "an 8 MiB disk never filled: {} alerts stored",
            acknowledged.len()
        );
        let first = acknowledged.len();
        let reply = daemon.post(
            "/hooks/alertmanager",
            "application/json",
            &group_from(first, 100),
        );
        match reply.status {
            200 => acknowledged.extend((first..first + 100).map(|i| format!("{i:016x}"))),
            _ => break reply,
        }
    };
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(refused.header("retry-after"), Some("5"));
    assert!(refused.text().contains("full"), "{}", refused.text());
    assert!(acknowledged.len() >= 100, "the disk filled at once");
    let readyz = daemon.get("/readyz");
    assert_eq!(readyz.status, 503, "{}", readyz.text());
    assert!(readyz.text().contains("full"), "{}", readyz.text());
    assert_eq!(daemon.get("/healthz").status, 200, "the daemon is up");

    // Room again, and nothing sent: the daemon finds out by itself.
    disk.grow("256m");
    daemon.wait_until(30, "ready again once the space came back", |d| {
        d.get("/readyz").status == 200
    });
    let after = acknowledged.len() + 1_000;
    let reply = daemon.post(
        "/hooks/alertmanager",
        "application/json",
        &group_from(after, 100),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    acknowledged.extend((after..after + 100).map(|i| format!("{i:016x}")));

    // Arrivals the full disk cut off between store and record are recorded by the daemon.
    daemon.wait_until(60, "every arrival recorded", |_| {
        stored_arrivals(&home).iter().all(|a| a.record.is_some())
    });
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
    let stored = stored_arrivals(&home);
    assert_stored_and_recorded_once(&home, &acknowledged, &stored);
    assert!(
        stored.iter().any(|a| a.identity == "intake-write-check"),
        "the write check that found the space back is stored"
    );
    common::assert_ledger_verifies(&home);
    drop(disk);
}
