//! `nightwatch serve` as a real process: webhooks in over loopback, runbooks run as real
//! processes, the ledger and the API read back.

mod common;

use common::daemon::{Daemon, payload, request};
use common::{Receiver, scratch};
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

const NW: &str = env!("CARGO_BIN_EXE_nightwatch");

/// A runbook script at `dir/name` (executable).
fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn records_of(daemon: &Daemon, alert_id: &str) -> Vec<Value> {
    daemon.json(&format!("/api/alerts/{alert_id}"))["records"]
        .as_array()
        .unwrap()
        .clone()
}

fn has(records: &[Value], what: impl Fn(&Value) -> bool) -> bool {
    records.iter().any(what)
}

#[test]
fn seed_004_disk_alert_runs_the_runbook_and_every_call_carries_the_alert() {
    let dir = scratch("serve", "seed004");
    let home = dir.join("home");
    let runbook = script(
        &dir,
        "disk-cleanup.sh",
        &format!(
            "set -e\ncat > \"$NIGHTWATCH_HOME/runbook-stdin.json\"\n\
             echo \"session=$NIGHTWATCH_SESSION alert=$NIGHTWATCH_ALERT_ID by=$NIGHTWATCH_TRIGGERED_BY runbook=$NIGHTWATCH_LABEL_RUNBOOK\"\n\
             {NW} exec -- df -h /\n{NW} exec -- du -sh {}\n",
            dir.display()
        ),
    );
    let config = format!(
        "queue: {{ lease: 5s, backoff_base: 200ms }}\nroutes:\n  - id: disk-cleanup\n    when: {{ source: uptime-kuma, tags: [\"runbook:disk-cleanup\"] }}\n    run: [\"{runbook}\"]\n    timeout: 60s\n"
    );
    let daemon = Daemon::start(&home, Some(&config), &[]);

    let reply = daemon.post(
        "/hooks/uptime-kuma",
        "application/json",
        &payload("uptime-kuma/down.json"),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let answer = reply.json();
    let dispatched = &answer["alerts"][0];
    assert_eq!(dispatched["disposition"], "routed", "{answer:#}");
    let alert_id = dispatched["alert_id"].as_str().unwrap().to_owned();
    let task = dispatched["task"].as_i64().unwrap();

    let done = daemon.wait_for(&format!("/api/tasks/{task}"), 60, "the runbook", |t| {
        t["status"] == "done" || t["status"] == "gave_up"
    });
    assert_eq!(done["status"], "done", "{done:#}\n{}", daemon.log());

    // The runbook got the alert on stdin and in its environment.
    let stdin: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join("runbook-stdin.json")).unwrap())
            .unwrap();
    assert_eq!(stdin["identity"], "7");
    assert_eq!(stdin["monitor"], "prod-worker-01 disk");

    // The ledger ties alert -> dispatch -> runbook decision -> each tool call -> result.
    let records = records_of(&daemon, &alert_id);
    let session = format!("sess_{}-t{task}", &alert_id["alert_".len()..]);
    assert!(has(&records, |r| r["event"] == "dispatch"
        && r["inputs"]["disposition"] == "routed"));
    assert!(has(&records, |r| r["event"] == "decision"
        && r["tool"] == "runbook"
        && r["verdict"] == "allow"
        && r["actor"]["kind"] == "dispatcher"));
    for command in ["df -h /", "du -sh"] {
        assert!(
            has(&records, |r| r["event"] == "decision"
                && r["inputs"]["command"]
                    .as_str()
                    .is_some_and(|c| c.contains(command))
                && r["session_id"] == session.as_str()
                && r["context"]["triggered_by"] == "uptime_kuma_alert"
                && r["context"]["alert_id"] == alert_id.as_str()),
            "no decision for {command} in the alert's session {session}: {records:#?}"
        );
    }
    let runbook_result = records
        .iter()
        .find(|r| r["event"] == "result" && r["tool"] == "runbook")
        .expect("the runbook's result is recorded");
    assert_eq!(runbook_result["outputs"]["exit_code"], 0);
    let stdout = runbook_result["outputs"]["stdout"].as_str().unwrap();
    assert!(
        stdout.contains(&format!(
            "session={session} alert={alert_id} by=uptime_kuma_alert runbook=disk-cleanup"
        )),
        "{stdout}"
    );
    assert!(has(&records, |r| r["event"] == "dispatch"
        && r["inputs"]["disposition"] == "ran"));

    // Resolution: recorded, nothing left to cancel.
    let reply = daemon.post(
        "/hooks/uptime-kuma",
        "application/json",
        &payload("uptime-kuma/up.json"),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["alerts"][0]["disposition"], "resolved");
    assert_eq!(reply.json()["alerts"][0]["alert_id"], alert_id.as_str());

    // The pages: the session reads as a runbook, the alert from arrival to resolution.
    let page = daemon.get(&format!("/sessions/{session}"));
    assert_eq!(page.status, 200);
    assert!(page.text().contains("df -h /"));
    let page = daemon.get(&format!("/alerts/{alert_id}"));
    assert_eq!(page.status, 200);
    assert!(page.text().contains("prod-worker-01 disk"));
    let page = daemon.get("/");
    assert_eq!(page.status, 200);
    assert!(page.text().contains(&alert_id));

    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
    common::assert_ledger_verifies(&home);
}

fn multipart(field_json: &[u8]) -> (String, Vec<u8>) {
    let boundary = "nightwatchBoundary42";
    let mut body = Vec::new();
    write!(
        body,
        "--{boundary}\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n"
    )
    .unwrap();
    body.extend_from_slice(field_json);
    write!(body, "\r\n--{boundary}--\r\n").unwrap();
    (format!("multipart/form-data; boundary={boundary}"), body)
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn every_uptime_kuma_shape_is_stored_and_decided() {
    let dir = scratch("serve", "kuma-shapes");
    let daemon = Daemon::start(&dir.join("home"), None, &[]);
    let down = payload("uptime-kuma/down.json");

    let (ct, body) = multipart(&down);
    let reply = daemon.post("/hooks/uptime-kuma", &ct, &body);
    assert_eq!(reply.status, 200, "form-data: {}", reply.text());
    assert_eq!(reply.json()["alerts"][0]["disposition"], "no_route");

    let template = br#"{"Title": "Uptime Kuma Alert - prod-worker-01 disk", "Body": "[prod-worker-01 disk] [Down] Disk usage 86% exceeds 85%"}"#;
    let reply = daemon.post(
        "/hooks/uptime-kuma",
        "application/x-www-form-urlencoded",
        template,
    );
    assert_eq!(reply.status, 200, "custom template: {}", reply.text());

    let doc: Value = serde_json::from_slice(&down).unwrap();
    let query = format!(
        "/hooks/uptime-kuma?msg={}&heartbeat={}&monitor={}",
        url_encode(doc["msg"].as_str().unwrap()),
        url_encode(&doc["heartbeat"].to_string()),
        url_encode(&doc["monitor"].to_string())
    );
    let reply = daemon.get(&query);
    assert_eq!(reply.status, 200, "GET: {}", reply.text());

    let reply = daemon.post(
        "/hooks/uptime-kuma",
        "application/json",
        &payload("uptime-kuma/test-notification.json"),
    );
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["alerts"][0]["disposition"], "test");

    let reply = daemon.post(
        "/hooks/uptime-kuma",
        "application/json",
        &payload("uptime-kuma/cert-expiry.json"),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());

    // Five arrivals stored, each with its ledger record: nothing silent.
    let alerts = daemon.json("/api/alerts?since=1h")["alerts"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(alerts.len(), 5, "{alerts:#?}");
    for a in &alerts {
        assert!(a["record"].is_string(), "arrival without a record: {a:#}");
        assert!(a["disposition"].is_string());
    }
    let dispatch = daemon.json("/api/records?event=dispatch")["records"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(dispatch, 5);
}

const AM_FIRING: &str = "alertmanager/firing.json";

fn hostile_config(runbook: &str) -> String {
    format!(
        "max_body_bytes: 65536\nrequest_timeout: 2s\nsources:\n  alertmanager: {{ auth: {{ bearer: am-token }} }}\n  uptime-kuma: {{ auth: {{ header: X-Kuma-Token, value: kuma-token }} }}\n  generic:\n    grafana:\n      mapping: {{ identity: /ruleId, status: /state, title: /title }}\nqueue: {{ resolve_delay: 10m }}\nroutes:\n  - id: all\n    run: [\"{runbook}\"]\n"
    )
}

fn am_post(daemon: &Daemon, token: &str, content_type: &str, body: &[u8]) -> common::daemon::Reply {
    let auth = format!("Bearer {token}");
    request(
        &daemon.addr,
        "POST",
        "/hooks/alertmanager",
        &[("Content-Type", content_type), ("Authorization", &auth)],
        body,
    )
}

#[test]
fn hostile_intake_is_refused_with_reasons_and_loses_nothing() {
    let dir = scratch("serve", "hostile");
    let runbook = script(&dir, "noop.sh", "exit 0");
    let daemon = Daemon::start(&dir.join("home"), Some(&hostile_config(&runbook)), &[]);
    let firing = payload(AM_FIRING);

    // Secrets.
    assert_eq!(
        am_post(&daemon, "wrong", "application/json", &firing).status,
        401
    );
    let reply = daemon.post("/hooks/alertmanager", "application/json", &firing);
    assert_eq!(reply.status, 401);
    assert!(reply.header("www-authenticate").is_some());
    let reply = request(
        &daemon.addr,
        "POST",
        "/hooks/uptime-kuma",
        &[
            ("Content-Type", "application/json"),
            ("X-Kuma-Token", "nope"),
        ],
        &payload("uptime-kuma/down.json"),
    );
    assert_eq!(reply.status, 401);

    // Unparseable, with why; wrong content type; oversized.
    let reply = am_post(
        &daemon,
        "am-token",
        "application/json",
        b"{\"version\": \"4\", \"alerts\": [",
    );
    assert_eq!(reply.status, 400);
    assert!(
        reply.json()["error"].as_str().unwrap().contains("JSON"),
        "{}",
        reply.text()
    );
    let reply = am_post(&daemon, "am-token", "text/csv", &firing);
    assert_eq!(reply.status, 400, "{}", reply.text());
    let reply = am_post(
        &daemon,
        "am-token",
        "application/json",
        br#"{"version":"3","alerts":[]}"#,
    );
    assert_eq!(reply.status, 400);
    assert!(reply.text().contains("version"), "{}", reply.text());
    let huge = vec![b' '; 200_000];
    let reply = am_post(&daemon, "am-token", "application/json", &huge);
    assert_eq!(reply.status, 413, "{}", reply.text());
    let reply = daemon.post("/hooks/generic/nope", "application/json", b"{}");
    assert_eq!(reply.status, 404);
    // The generic hook, read through its mapping.
    let reply = daemon.post(
        "/hooks/generic/grafana",
        "application/json",
        br#"{"ruleId": "disk-db1", "state": "alerting", "title": "Disk on db1", "extra": [1]}"#,
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["alerts"][0]["disposition"], "routed");
    let reply = daemon.post(
        "/hooks/generic/grafana",
        "application/json",
        br#"{"ruleId": "disk-db1", "state": "ok"}"#,
    );
    assert_eq!(
        reply.json()["alerts"][0]["disposition"],
        "cancelled",
        "{}",
        reply.text()
    );
    let reply = daemon.post(
        "/hooks/generic/grafana",
        "application/json",
        br#"{"state": "ok"}"#,
    );
    assert_eq!(reply.status, 400, "no identity: {}", reply.text());

    // A corpus of garbage to every endpoint: refused, never a 5xx, never a crash.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let templates: [&[u8]; 6] = [
        br#"{"version":"4","alerts":[{"status":"firing","labels":{}}]}"#,
        br#"{"heartbeat":{"status":"x"},"monitor":[1,2],"msg":7}"#,
        br#"{"ruleId":null,"state":{"a":1}}"#,
        b"\xff\xfe\x00garbage",
        b"--X\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n{",
        br#"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]"#,
    ];
    for i in 0..120 {
        let mut body = templates[i % templates.len()].to_vec();
        for _ in 0..(next() % 4) {
            let at = (next() as usize) % body.len().max(1);
            body.insert(at, (next() & 0xff) as u8);
        }
        let (path, headers): (&str, Vec<(&str, &str)>) = match i % 3 {
            0 => (
                "/hooks/alertmanager",
                vec![("Authorization", "Bearer am-token")],
            ),
            1 => ("/hooks/uptime-kuma", vec![("X-Kuma-Token", "kuma-token")]),
            _ => ("/hooks/generic/grafana", vec![]),
        };
        let ct = [
            "application/json",
            "multipart/form-data; boundary=X",
            "text/plain",
            "",
        ][i % 4];
        let mut headers = headers;
        if !ct.is_empty() {
            headers.push(("Content-Type", ct));
        }
        let reply = request(&daemon.addr, "POST", path, &headers, &body);
        assert!(
            matches!(reply.status, 200 | 400),
            "{path} {ct} {:?} -> {} {}",
            String::from_utf8_lossy(&body),
            reply.status,
            reply.text()
        );
    }

    // A slow client is cut off; others are served meanwhile.
    let mut slow = std::net::TcpStream::connect(&daemon.addr).unwrap();
    write!(
        slow,
        "POST /hooks/alertmanager HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer am-token\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{{\"vers"
    )
    .unwrap();
    let started = Instant::now();
    assert_eq!(daemon.get("/healthz").status, 200);
    assert!(started.elapsed() < Duration::from_secs(1));
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let reply = common::daemon::read_reply(&mut slow);
    assert_eq!(reply.status, 408, "{}", reply.text());

    // A burst of the same alert: every copy stored, exactly one task.
    let before = daemon.json("/api/alerts?since=1h&limit=5000")["alerts"]
        .as_array()
        .unwrap()
        .len();
    let threads: Vec<_> = (0..24)
        .map(|_| {
            let addr = daemon.addr.clone();
            let body = firing.clone();
            std::thread::spawn(move || {
                request(
                    &addr,
                    "POST",
                    "/hooks/alertmanager",
                    &[
                        ("Content-Type", "application/json"),
                        ("Authorization", "Bearer am-token"),
                    ],
                    &body,
                )
            })
        })
        .collect();
    let mut routed = 0;
    for t in threads {
        let reply = t.join().unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text());
        for a in reply.json()["alerts"].as_array().unwrap() {
            if a["disposition"] == "routed" {
                routed += 1;
            } else {
                assert_eq!(a["disposition"], "deduplicated", "{a:#}");
            }
        }
    }
    let per_request = serde_json::from_slice::<Value>(&firing).unwrap()["alerts"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(routed, per_request, "one task per alert in the group");
    let after = daemon.json("/api/alerts?since=1h&limit=5000")["alerts"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(after - before, 24 * per_request, "every arrival is stored");
    let tasks = daemon.json("/api/tasks")["tasks"]
        .as_array()
        .unwrap()
        .clone();
    let fingerprint = serde_json::from_slice::<Value>(&firing).unwrap()["alerts"][0]["fingerprint"]
        .as_str()
        .unwrap()
        .to_owned();
    let am_tasks = tasks
        .iter()
        .filter(|t| t["identity"] == format!("alertmanager/{fingerprint}").as_str())
        .count();
    assert_eq!(am_tasks, per_request, "{tasks:#?}");

    assert_eq!(daemon.get("/healthz").status, 200);
    let metrics = daemon.get("/metrics").text();
    assert!(
        metrics.contains(
            "nightwatch_webhook_rejects_total{source=\"alertmanager\",reason=\"unauthorized\"}"
        ),
        "{metrics}"
    );
    assert!(metrics.contains("reason=\"too_large\""), "{metrics}");
    assert!(metrics.contains("reason=\"unparseable\""), "{metrics}");
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0));
    assert!(!log.contains("panicked"), "{log}");
}

/// A daemon with a route for every alert, whose first delivery (`AM_FIRING`) was refused
/// with 503 and `Retry-After` because another process holds the ledger's write lock, so
/// appends cannot be made durable; and that lock, to release.
fn refused_for_a_held_ledger(name: &str) -> (Daemon, rusqlite::Connection) {
    let dir = scratch("serve", name);
    let home = dir.join("home");
    let runbook = script(&dir, "noop.sh", "exit 0");
    let config = format!(
        "request_timeout: 1s\nqueue: {{ resolve_delay: 10m }}\nroutes:\n  - id: all\n    run: [\"{runbook}\"]\n"
    );
    let daemon = Daemon::start(&home, Some(&config), &[]);
    let holder = rusqlite::Connection::open(home.join("ledger.db")).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let reply = daemon.post(
        "/hooks/alertmanager",
        "application/json",
        &payload(AM_FIRING),
    );
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.header("retry-after"), Some("5"));
    (daemon, holder)
}

/// `/readyz` says not ready, and that a write failed.
fn assert_not_ready_for_a_failed_write(daemon: &Daemon) {
    let readyz = daemon.get("/readyz");
    assert_eq!(readyz.status, 503, "{}", readyz.text());
    assert!(
        readyz.text().contains("the last write failed"),
        "{}",
        readyz.text()
    );
}

#[test]
fn a_storage_failure_is_a_503_and_the_redelivery_finds_the_task() {
    let (daemon, holder) = refused_for_a_held_ledger("storage-503");
    let firing = payload(AM_FIRING);
    // While writes fail, the daemon does not say it is ready.
    assert_not_ready_for_a_failed_write(&daemon);
    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);

    // The sender retries: the same alerts find their live tasks.
    let reply = daemon.post("/hooks/alertmanager", "application/json", &firing);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let readyz = daemon.get("/readyz");
    assert_eq!(readyz.status, 200, "ready again: {}", readyz.text());
    let alerts = reply.json()["alerts"].as_array().unwrap().clone();
    let first = &alerts[0];
    assert_eq!(first["disposition"], "deduplicated", "{alerts:#?}");
    let tasks = daemon.json("/api/tasks")["tasks"].as_array().unwrap().len();
    assert_eq!(
        tasks, 1,
        "the first alert's task exists once; the 503 stopped before the others"
    );

    // The arrival that got the 503 is recorded by the daemon itself soon after.
    let id = first["alert_id"].as_str().unwrap();
    daemon.wait_for(
        &format!("/api/alerts/{id}"),
        30,
        "the 503'd arrival's record",
        |v| {
            v["arrivals"]
                .as_array()
                .unwrap()
                .iter()
                .all(|a| a["record"].is_string())
                && v["arrivals"].as_array().unwrap().len() == 2
        },
    );
}

/// A daemon whose writes failed is taken out of rotation by its `/readyz`, so no sender
/// writes to it again: it must find out by itself that writes work again, and say so in
/// the ledger.
#[test]
fn readiness_comes_back_by_itself_once_writes_work_again() {
    let (daemon, holder) = refused_for_a_held_ledger("write-check");

    // The daemon's first check (5 s after the failure) fails too, and says so: still not
    // ready.
    daemon.wait_until(30, "a failed write check in the log", |d| {
        d.log().contains("intake writes still fail")
    });
    assert_not_ready_for_a_failed_write(&daemon);
    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);

    // Nothing is sent again; the daemon's own check finds that writes work.
    daemon.wait_until(30, "ready again once writes work", |d| {
        d.get("/readyz").status == 200
    });
    // The check that succeeded is an arrival of the daemon's own, acknowledged and recorded;
    // checks that failed may have reached the inbox before the ledger refused them, and they
    // too are recorded, each once.
    let checks: Vec<Value> = daemon.json("/api/alerts?limit=1000")["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["source"] == "nightwatch")
        .cloned()
        .collect();
    assert!(!checks.is_empty(), "no write check was stored");
    let id = checks[0]["alert_id"].as_str().unwrap().to_owned();
    daemon.wait_for(
        &format!("/api/alerts/{id}"),
        30,
        "every write check recorded",
        |v| {
            v["arrivals"].as_array().unwrap().iter().all(|a| {
                a["record"].is_string()
                    && a["disposition"] == "test"
                    && a["reason"]
                        .as_str()
                        .unwrap()
                        .contains("intake writes work again")
            })
        },
    );
    let records = records_of(&daemon, &id);
    assert!(
        has(&records, |r| r["event"] == "dispatch"
            && r["inputs"]["disposition"] == "test"
            && r["inputs"]["source"] == "nightwatch"),
        "{records:#?}"
    );
    // The one task is the refused alert's (its arrival was stored before the ledger refused).
    let tasks = daemon.json("/api/tasks");
    let identities: Vec<&str> = tasks["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["identity"].as_str().unwrap())
        .collect();
    assert_eq!(identities.len(), 1, "{tasks}");
    assert!(
        identities[0].starts_with("alertmanager/"),
        "a write check starts no work: {tasks}"
    );
}

#[test]
fn a_crashed_daemon_loses_nothing_and_its_task_is_reclaimed() {
    let dir = scratch("serve", "crash");
    let home = dir.join("home");
    let marker = dir.join("second-attempt");
    let pidfile = dir.join("runbook.pid");
    let runbook = script(
        &dir,
        "slow.sh",
        &format!(
            "echo $$ > {pid}\nif [ \"$NIGHTWATCH_ATTEMPT\" = 1 ]; then sleep 30; fi\ntouch {marker}\n",
            pid = pidfile.display(),
            marker = marker.display()
        ),
    );
    let config = format!(
        "queue: {{ lease: 1s, backoff_base: 100ms }}\nroutes:\n  - id: all\n    run: [\"{runbook}\"]\n"
    );
    let daemon = Daemon::start(&home, Some(&config), &[]);
    let task = runbook_started_for_an_alert(&daemon, &pidfile);
    daemon.crash();
    // The crashed daemon's runbook dies with it and its `sleep 30`, in the runbook's process
    // group, is stopped by the next daemon before the task runs again: nothing to end here.

    let daemon = Daemon::start(&home, Some(&config), &[]);
    let done = daemon.wait_for(
        &format!("/api/tasks/{task}"),
        30,
        "the reclaimed task",
        |t| t["status"] == "done",
    );
    assert_eq!(done["attempt"], 2, "{done:#}");
    assert!(marker.exists());
    let whys: Vec<&str> = done["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["why"].as_str().unwrap())
        .collect();
    assert!(
        whys.iter()
            .any(|w| w.contains("interrupted: the daemon that ran attempt 1")),
        "{whys:#?}"
    );
    let stopped = daemon.json("/api/records?event=dispatch&since=1h");
    assert!(
        stopped["records"].as_array().unwrap().iter().any(|r| {
            r["inputs"]["disposition"] == "stopped_after_crash" && r["inputs"]["attempt"] == 1
        }),
        "the sleep the first attempt left was stopped, and the ledger says so: {stopped:#}"
    );
    assert_eq!(
        daemon.json("/api/alerts?since=1h")["alerts"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// Seed 000's "ran twice, overlapping": a runbook whose work outlives its shell (a background
/// job, as an agent's tools are) is running when the daemon is killed. The daemon that starts
/// next stops it before running the task again, so its side effect happens exactly once.
#[test]
fn a_runbook_left_running_by_a_killed_daemon_is_stopped_and_its_work_done_once() {
    let dir = scratch("serve", "once");
    let home = dir.join("home");
    let effects = dir.join("effects");
    let started = dir.join("started");
    let runbook = script(
        &dir,
        "work.sh",
        &format!(
            "( echo \"$NIGHTWATCH_ATTEMPT\" >> {started}; sleep 4; echo \"done by attempt $NIGHTWATCH_ATTEMPT\" >> {effects} ) &\nwait\n",
            started = started.display(),
            effects = effects.display()
        ),
    );
    // A lease far longer than the work: only the restart's stop can keep the first run from
    // finishing beside the second.
    let config = format!(
        "queue: {{ lease: 60s, backoff_base: 100ms }}\nroutes:\n  - id: all\n    run: [\"{runbook}\"]\n"
    );
    let daemon = Daemon::start(&home, Some(&config), &[]);
    let task = runbook_started_for_an_alert(&daemon, &started);
    let first_started = Instant::now();
    daemon.crash();

    let daemon = Daemon::start(&home, Some(&config), &[]);
    let done = daemon.wait_for(
        &format!("/api/tasks/{task}"),
        30,
        "the task run again",
        |t| t["status"] == "done",
    );
    assert_eq!(done["attempt"], 2, "{done:#}");
    // Past the time the first attempt's work would have finished, had it been left running.
    let settle = Duration::from_secs(6).saturating_sub(first_started.elapsed());
    std::thread::sleep(settle);
    let work = std::fs::read_to_string(&effects).unwrap_or_default();
    assert_eq!(
        work.lines().collect::<Vec<_>>(),
        ["done by attempt 2"],
        "the work happened once, by the second attempt"
    );
    let records = daemon.json("/api/records?event=dispatch&since=1h");
    let stopped: Vec<&serde_json::Value> = records["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["inputs"]["disposition"] == "stopped_after_crash")
        .collect();
    assert_eq!(stopped.len(), 1, "{records:#}");
    assert!(
        stopped[0]["inputs"]["stopped"].as_u64().unwrap() >= 1,
        "{:#}",
        stopped[0]
    );
    assert!(
        stopped[0]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("were still running and were stopped"),
        "{:#}",
        stopped[0]
    );
}

#[test]
fn a_failing_runbook_backs_off_then_escalates_once() {
    let dir = scratch("serve", "escalate");
    let home = dir.join("home");
    let receiver = Receiver::start(&[200]);
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "notifiers:\n  oncall:\n    webhook: {{ url: \"{}\" }}\nrules:\n  - id: runbooks\n    verdict: allow\n    actor: {{ kind: [dispatcher] }}\n    tool: [runbook]\n",
            receiver.url
        ),
    )
    .unwrap();
    let runbook = script(&dir, "fails.sh", "echo 'disk still full' >&2\nexit 3");
    let config = format!(
        "queue: {{ max_attempts: 3, backoff_base: 100ms, backoff_cap: 300ms }}\nroutes:\n  - id: disk\n    run: [\"{runbook}\"]\n    notify: [oncall]\n"
    );
    let policy_text = policy.display().to_string();
    let daemon = Daemon::start(&home, Some(&config), &[("NIGHTWATCH_POLICY", &policy_text)]);
    let reply = daemon.post(
        "/hooks/uptime-kuma",
        "application/json",
        &payload("uptime-kuma/down.json"),
    );
    let task = reply.json()["alerts"][0]["task"].as_i64().unwrap();
    let alert_id = reply.json()["alerts"][0]["alert_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let gave_up = daemon.wait_for(&format!("/api/tasks/{task}"), 30, "give up", |t| {
        t["status"] == "gave_up"
    });
    assert_eq!(gave_up["attempt"], 3);
    assert!(
        gave_up["last_error"]
            .as_str()
            .unwrap()
            .contains("disk still full")
    );
    let escalated = daemon.wait_for(
        &format!("/api/records?event=dispatch&alert={alert_id}"),
        10,
        "the escalation record",
        |v| {
            v["records"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["inputs"]["disposition"] == "escalated")
        },
    );
    let failed = escalated["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["inputs"]["disposition"] == "failed")
        .count();
    assert_eq!(failed, 3, "one failed record per attempt");
    let bodies = receiver.wait_for(1, Duration::from_secs(20));
    assert_eq!(bodies.len(), 1, "told once: {bodies:?}");
    assert!(bodies[0].contains("gave up"), "{}", bodies[0]);
    let later = receiver.wait_for(2, Duration::from_millis(1500));
    assert_eq!(later.len(), 1, "and only once: {later:?}");
}

/// The contract check fails on what the document does not promise: an undocumented status,
/// another content type, a missing required field, a field the document does not name, a
/// value of the wrong type.
#[test]
fn the_contract_check_refuses_replies_the_document_does_not_promise() {
    let doc = serde_json::json!({
        "openapi": "3.1.0",
        "paths": { "/api/things/{id}": { "get": { "responses": {
            "200": { "description": "a thing", "content": { "application/json": {
                "schema": { "$ref": "#/components/schemas/Thing" } } } },
        } } } },
        "components": { "schemas": { "Thing": {
            "type": "object",
            "required": ["id", "when"],
            "properties": { "id": { "type": "integer" }, "when": { "type": "string" } },
        } } },
    });
    let contract = common::openapi::Contract::of(doc);
    let reply = |status: u16, content_type: &str, body: &str| common::daemon::Reply {
        status,
        headers: vec![("Content-Type".into(), content_type.into())],
        body: body.as_bytes().to_vec(),
    };
    let check = |r: common::daemon::Reply| {
        std::panic::catch_unwind(|| contract.check("get", "/api/things/{id}", &r)).is_ok()
    };
    assert!(check(reply(
        200,
        "application/json",
        r#"{"id":1,"when":"now"}"#
    )));
    for (status, content_type, body) in [
        (404, "application/json", r#"{"error":"no"}"#),
        (200, "text/html", "<p>1</p>"),
        (200, "application/json", r#"{"id":1}"#),
        (
            200,
            "application/json",
            r#"{"id":1,"when":"now","extra":true}"#,
        ),
        (200, "application/json", r#"{"id":"1","when":"now"}"#),
    ] {
        assert!(
            !check(reply(status, content_type, body)),
            "{status} {content_type} {body} passed"
        );
    }
}

#[test]
fn health_metrics_api_and_the_openapi_document_agree() {
    let dir = scratch("serve", "api");
    let runbook = disk_runbook(&dir);
    let config = format!(
        "request_timeout: 2s\nmax_body_bytes: 65536\nreaders: {{ auth: {{ bearer: r34d }} }}\n\
         sources:\n  alertmanager: {{ auth: {{ bearer: am-secret }} }}\n  generic:\n    grafana:\n      \
         mapping: {{ identity: /ruleId, status: /state, title: /title }}\n\
         robots: {{ auth: {{ bearer: r0b0t }} }}\n\
         queue: {{ lease: 5s, backoff_base: 200ms }}\nroutes:\n  - id: disk\n    \
         when: {{ source: alertmanager, labels: {{ alertname: HostDiskFilling }} }}\n    run: [\"{runbook}\"]\n"
    );
    let daemon = Daemon::start(&dir.join("home"), Some(&config), &[]);
    let contract = common::openapi::Contract::of({
        let doc = request(
            &daemon.addr,
            "GET",
            "/api/openapi.json",
            &[("Authorization", "Bearer r34d")],
            b"",
        );
        assert_eq!(doc.status, 200, "{}", doc.text());
        doc.json()
    });
    let mut seen: std::collections::BTreeSet<(String, String)> = Default::default();
    // Sends one request and checks its reply against the document.
    let mut call =
        |method: &str, path: &str, concrete: &str, auth: &[(&str, &str)], body: &[u8]| {
            let reply = request(&daemon.addr, &method.to_uppercase(), concrete, auth, body);
            contract.check(method, path, &reply);
            seen.insert((path.to_owned(), method.to_owned()));
            reply
        };
    let reader = [("Authorization", "Bearer r34d")];
    let am = [
        ("Authorization", "Bearer am-secret"),
        ("Content-Type", "application/json"),
    ];
    let json_body = [("Content-Type", "application/json")];

    assert_eq!(call("get", "/healthz", "/healthz", &[], b"").status, 200);
    assert_eq!(call("get", "/readyz", "/readyz", &[], b"").status, 200);

    // The hooks: stored, unparseable, unauthorised, unknown, too large.
    let fired = call(
        "post",
        "/hooks/alertmanager",
        "/hooks/alertmanager",
        &am,
        &payload(AM_FIRING),
    );
    assert_eq!(fired.status, 200, "{}", fired.text());
    let alert_id = fired.json()["alerts"][0]["alert_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let record = fired.json()["alerts"][0]["record"]
        .as_str()
        .unwrap()
        .to_owned();
    let task = fired.json()["alerts"][0]["task"]
        .as_i64()
        .expect("routed to a task");
    assert_eq!(
        call(
            "post",
            "/hooks/alertmanager",
            "/hooks/alertmanager",
            &am,
            b"{"
        )
        .status,
        400
    );
    assert_eq!(
        call(
            "post",
            "/hooks/alertmanager",
            "/hooks/alertmanager",
            &json_body,
            &payload(AM_FIRING)
        )
        .status,
        401
    );
    let huge = vec![b' '; 70_000];
    assert_eq!(
        call(
            "post",
            "/hooks/alertmanager",
            "/hooks/alertmanager",
            &am,
            &huge
        )
        .status,
        413
    );
    let kuma = call(
        "post",
        "/hooks/uptime-kuma",
        "/hooks/uptime-kuma",
        &json_body,
        &payload("uptime-kuma/down.json"),
    );
    assert_eq!(kuma.status, 200, "{}", kuma.text());
    let kuma_get = call(
        "get",
        "/hooks/uptime-kuma",
        "/hooks/uptime-kuma?status=0&msg=down&monitorName=web&monitorId=9",
        &[],
        b"",
    );
    assert_eq!(kuma_get.status, 200, "{}", kuma_get.text());
    let grafana = br#"{"ruleId":"r1","state":"alerting","title":"CPU hot"}"#;
    assert_eq!(
        call(
            "post",
            "/hooks/generic/{name}",
            "/hooks/generic/grafana",
            &json_body,
            grafana
        )
        .status,
        200
    );
    assert_eq!(
        call(
            "post",
            "/hooks/generic/{name}",
            "/hooks/generic/nobody",
            &json_body,
            grafana
        )
        .status,
        404
    );
    assert_eq!(
        call(
            "post",
            "/hooks/generic/{name}",
            "/hooks/generic/grafana",
            &json_body,
            b"[]"
        )
        .status,
        400
    );

    // The runbook runs, so the task, its session and its calls are in the replies below.
    let deadline = Instant::now() + Duration::from_secs(60);
    let session = loop {
        let t = request(
            &daemon.addr,
            "GET",
            &format!("/api/tasks/{task}"),
            &reader,
            b"",
        )
        .json();
        if t["status"] == "done" || t["status"] == "gave_up" {
            assert_eq!(t["status"], "done", "{t:#}\n{}", daemon.log());
            break format!("sess_{}-t{task}", &alert_id["alert_".len()..]);
        }
        assert!(
            Instant::now() < deadline,
            "the runbook did not finish: {t:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };

    // Reading: each route's answers, refusals and misses.
    for (path, concrete, status) in [
        ("/api/openapi.json", "/api/openapi.json".to_owned(), 200),
        ("/metrics", "/metrics".to_owned(), 200),
        ("/api/records", "/api/records?since=1h".to_owned(), 200),
        ("/api/records", "/api/records?since=soon".to_owned(), 400),
        ("/api/records", "/api/records?limit=many".to_owned(), 400),
        ("/api/records/{id}", format!("/api/records/{record}"), 200),
        ("/api/records/{id}", "/api/records/r999999".to_owned(), 404),
        (
            "/api/sessions",
            "/api/sessions?since=2h&until=%2B1h".to_owned(),
            200,
        ),
        (
            "/api/sessions",
            "/api/sessions?until=whenever".to_owned(),
            400,
        ),
        (
            "/api/sessions/{id}",
            format!("/api/sessions/{session}"),
            200,
        ),
        (
            "/api/sessions/{id}",
            "/api/sessions/sess_none".to_owned(),
            404,
        ),
        ("/api/tasks", "/api/tasks?limit=1".to_owned(), 200),
        ("/api/tasks", "/api/tasks?status=later".to_owned(), 400),
        ("/api/tasks/{id}", format!("/api/tasks/t{task}"), 200),
        ("/api/tasks/{id}", "/api/tasks/t999".to_owned(), 404),
        ("/api/tasks/{id}", "/api/tasks/seven".to_owned(), 400),
        ("/api/alerts", "/api/alerts?since=yesterday".to_owned(), 200),
        ("/api/alerts", "/api/alerts?after=0&limit=1".to_owned(), 200),
        ("/api/alerts", "/api/alerts?after=first".to_owned(), 400),
        ("/api/alerts/{id}", format!("/api/alerts/{alert_id}"), 200),
        ("/api/alerts/{id}", "/api/alerts/alert_none".to_owned(), 404),
        // No app is under idle control here: an empty list, and no such app.
        ("/api/idle", "/api/idle".to_owned(), 200),
        ("/api/idle/{app}", "/api/idle/shop".to_owned(), 404),
        // No watcher is declared here: no subjects, none late.
        ("/api/watch", "/api/watch".to_owned(), 200),
    ] {
        let reply = call("get", path, &concrete, &reader, b"");
        assert_eq!(reply.status, status, "{concrete}: {}", reply.text());
        // And without the readers' secret, every one of them is refused as documented.
        assert_eq!(
            call("get", path, &concrete, &[], b"").status,
            401,
            "{concrete}"
        );
    }
    let tasks = request(&daemon.addr, "GET", "/api/tasks?limit=1", &reader, b"").json();
    assert!(
        tasks["next"].is_string(),
        "a full page links the next: {tasks:#}"
    );
    let session = request(
        &daemon.addr,
        "GET",
        &format!("/api/sessions/{session}"),
        &reader,
        b"",
    )
    .json();
    assert!(
        session["session"]["calls"].as_u64().unwrap() >= 2,
        "{session:#}"
    );

    // Forward-auth asks no readers' secret (a proxy in front of the apps calls it); with no
    // app under idle control, no host is known.
    for method in ["get", "post"] {
        let reply = call(
            method,
            "/idle/auth",
            "/idle/auth",
            &[("X-Forwarded-Host", "shop.test")],
            b"",
        );
        assert_eq!(reply.status, 404, "{method}: {}", reply.text());
    }
    // Nor the health checks a proxy passes on (the idle tests ask them of a real app).
    let reply = call(
        "get",
        "/idle/health",
        "/idle/health",
        &[
            ("X-Forwarded-Host", "shop.test"),
            ("X-Forwarded-Uri", "/healthz"),
        ],
        b"",
    );
    assert_eq!(reply.status, 404, "{}", reply.text());

    // A robot reports an action: decided (the built-in rule allows robots), refused without
    // its secret or with a body that is no report.
    let robot = [
        ("Authorization", "Bearer r0b0t"),
        ("Content-Type", "application/json"),
    ];
    let path = "/api/robots/{robot}/actions";
    let concrete = "/api/robots/backup-job/actions";
    let reported = call(
        "post",
        path,
        concrete,
        &robot,
        br#"{"action":"backup","target":"db1"}"#,
    );
    assert_eq!(reported.status, 200, "{}", reported.text());
    assert_eq!(reported.json()["verdict"], "allow", "{}", reported.text());
    assert_eq!(call("post", path, concrete, &json_body, b"{}").status, 401);
    assert_eq!(call("post", path, concrete, &robot, b"[]").status, 400);

    let untried: Vec<_> = contract
        .operations()
        .into_iter()
        .filter(|op| !seen.contains(op))
        .collect();
    assert!(
        untried.is_empty(),
        "documented but never called here: {untried:?}"
    );
    // Decisions by verdict count every gate's decisions in the shared ledger, a hook's too.
    let refused = common::nightwatch(
        &["exec", "--", "rm", "-rf", "/"],
        b"",
        &[("NIGHTWATCH_HOME", daemon.home.as_os_str())],
    );
    assert!(!refused.status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !request(&daemon.addr, "GET", "/metrics", &reader, b"")
        .text()
        .contains("nightwatch_decisions_total{verdict=\"deny\"} 1")
    {
        assert!(
            Instant::now() < deadline,
            "{}",
            request(&daemon.addr, "GET", "/metrics", &reader, b"").text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let metrics = request(&daemon.addr, "GET", "/metrics", &reader, b"");
    let text = metrics.text();
    for family in [
        "nightwatch_http_requests_total{endpoint=\"/hooks/alertmanager\",code=\"200\"}",
        "nightwatch_alerts_total{disposition=\"no_route\"}",
        "nightwatch_tasks{state=\"pending\"} 0",
        "nightwatch_queue_age_seconds",
        "nightwatch_decisions_total{verdict=\"halt\"} 0",
        "nightwatch_webhook_rejects_total{source=\"alertmanager\",reason=\"storage\"} 0",
    ] {
        assert!(text.contains(family), "missing {family}:\n{text}");
    }
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
    assert!(log.contains("stopped"), "{log}");
}

#[test]
fn the_janitor_runs_on_its_schedule_inside_serve() {
    let dir = scratch("serve", "janitor");
    let home = dir.join("home");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let old = tmp.join("agent-scratch-1");
    std::fs::write(&old, "left behind").unwrap();
    let status = std::process::Command::new("touch")
        .args(["-d", "10 days ago"])
        .arg(&old)
        .status()
        .unwrap();
    assert!(status.success());
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "sweep:\n  paths:\n    - {{ glob: \"{}/agent-*\", max_age: 5d }}\nrules:\n  - id: janitor\n    verdict: allow\n    actor: {{ kind: [janitor] }}\n",
            tmp.display()
        ),
    )
    .unwrap();
    let policy_text = policy.display().to_string();
    let daemon = Daemon::start(
        &home,
        Some("janitor: { every: 1s }\n"),
        &[("NIGHTWATCH_POLICY", &policy_text)],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while old.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !old.exists(),
        "the scheduled sweep did not remove it:\n{}",
        daemon.log()
    );
    let records = daemon.json("/api/records?actor=janitor")["records"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        has(&records, |r| r["tool"] == "remove_path"
            && r["verdict"] == "allow"),
        "{records:#?}"
    );
}

#[path = "../../nightwatch-serve/tests/support/chromium.rs"]
mod chromium;

/// A disk runbook that makes two tool calls through `nightwatch exec`.
fn disk_runbook(dir: &Path) -> String {
    script(
        dir,
        "disk.sh",
        &format!(
            "set -e\ncat > /dev/null\n{NW} exec -- df -h /\n{NW} exec -- du -sh {}\n",
            dir.display()
        ),
    )
}

#[test]
fn a_real_alertmanager_fires_and_resolves_through_a_storage_failure_without_a_duplicate_task() {
    let dir = scratch("serve", "alertmanager");
    let home = dir.join("home");
    let runbook = disk_runbook(&dir);
    let config = format!(
        "request_timeout: 2s\nsources:\n  alertmanager: {{ auth: {{ bearer: am-secret }} }}\nqueue: {{ lease: 5s, backoff_base: 200ms }}\nroutes:\n  - id: disk\n    when: {{ source: alertmanager, labels: {{ alertname: DiskFull }} }}\n    run: [\"{runbook}\"]\n"
    );
    let daemon = Daemon::start(&home, Some(&config), &[]);
    let am = common::alertmanager::Alertmanager::start(
        &format!("{}/hooks/alertmanager", daemon.url),
        Some("am-secret"),
    );
    let labels = [("alertname", "DiskFull"), ("instance", "db1.tailnet:9100")];

    // The ledger is held by another process when the first notification comes: the alert is
    // stored and its task queued, but the record cannot be written, so the reply is 503.
    let holder = rusqlite::Connection::open(home.join("ledger.db")).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    am.fire(&labels, &[("summary", "/ is 91% full")]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !daemon
        .get("/metrics")
        .text()
        .contains("nightwatch_webhook_rejects_total{source=\"alertmanager\",reason=\"storage\"} 1")
    {
        assert!(
            Instant::now() < deadline,
            "no 503 was sent:\n{}\n{}",
            daemon.log(),
            am.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);

    // Alertmanager redelivers; the redelivery finds the task. One task, the runbook runs.
    let alerts = daemon.wait_for("/api/alerts?since=1h", 30, "the redelivery", |v| {
        v["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["disposition"] == "deduplicated" || a["disposition"] == "suppressed")
    });
    let alert_id = alerts["alerts"][0]["alert_id"].as_str().unwrap().to_owned();
    let tasks = daemon.json("/api/tasks")["tasks"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(tasks.len(), 1, "a duplicate task: {tasks:#?}");
    let task = tasks[0]["id"].as_i64().unwrap();
    let done = daemon.wait_for(&format!("/api/tasks/{task}"), 90, "the runbook", |t| {
        t["status"] == "done" || t["status"] == "gave_up"
    });
    assert_eq!(done["status"], "done", "{done:#}\n{}", daemon.log());

    // The chain from the alert to each tool call. The arrival that got the 503 is recorded
    // by the daemon once the ledger is free again.
    daemon.wait_for(
        &format!("/api/alerts/{alert_id}"),
        30,
        "every arrival recorded",
        |v| {
            v["arrivals"]
                .as_array()
                .unwrap()
                .iter()
                .all(|a| a["record"].is_string())
        },
    );
    let records = records_of(&daemon, &alert_id);
    assert!(has(&records, |r| r["event"] == "dispatch"
        && r["inputs"]["disposition"] == "routed"));
    assert!(has(&records, |r| r["tool"] == "runbook"
        && r["event"] == "decision"));
    assert!(has(&records, |r| r["event"] == "decision"
        && r["inputs"]["command"] == "df -h /"
        && r["context"]["triggered_by"] == "alertmanager_alert"));
    assert!(has(&records, |r| r["event"] == "result"
        && r["tool"] == "runbook"));

    // Resolved in Alertmanager: the resolution arrives and is recorded.
    am.resolve(&labels);
    daemon.wait_for(
        &format!("/api/alerts/{alert_id}"),
        30,
        "the resolution",
        |v| {
            v["arrivals"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["status"] == "resolved" && a["record"].is_string())
        },
    );
    assert_eq!(
        daemon.json("/api/tasks")["tasks"].as_array().unwrap().len(),
        1
    );
    drop(am);
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
    common::assert_ledger_verifies(&home);
}

/// Uptime Kuma's `down.json` for another monitor, with one `runbook` tag.
fn kuma_down(monitor: i64, name: &str, runbook: &str) -> Vec<u8> {
    let mut alert: Value = serde_json::from_slice(&payload("uptime-kuma/down.json")).unwrap();
    alert["monitor"]["id"] = monitor.into();
    alert["monitor"]["name"] = name.into();
    alert["heartbeat"]["monitorID"] = monitor.into();
    alert["monitor"]["tags"] = serde_json::json!([{ "name": "runbook", "value": runbook }]);
    alert["msg"] = format!("[{name}] [Down] {runbook}").into();
    alert.to_string().into_bytes()
}

/// The text a person sees in a serialised DOM: tags, and with them every attribute, left out.
fn visible_text(dom: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in dom.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Machine times a person should not have to read: unix milliseconds (thirteen digits
/// alone) and RFC 3339 (`2026-02-14T03:17`).
fn machine_times(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let n = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            let rest = &b[i + n..];
            let rfc = n == 4
                && rest.len() >= 12
                && rest[0] == b'-'
                && rest[3] == b'-'
                && rest[6] == b'T'
                && rest[9] == b':';
            if (n == 13 && !rest.first().is_some_and(u8::is_ascii_alphanumeric)) || rfc {
                found.push(text[i..(i + n + 12).min(text.len())].to_owned());
            }
            i += n;
        } else {
            i += 1;
        }
    }
    found
}

/// The `<li class="entry ...">` tags of the timeline, each with its row, in page order.
fn entries(dom: &str) -> Vec<&str> {
    let list = dom.split("<ol id=\"timeline\">").nth(1).unwrap_or("");
    let list = list.split("</ol></main>").next().unwrap_or(list);
    list.split("<li class=\"entry ").skip(1).collect()
}

/// Where each entry of a timeline page is in time (its `<time datetime>`), in page order.
fn entry_times(dom: &str) -> Vec<String> {
    entries(dom)
        .iter()
        .map(|e| {
            e.split("datetime=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The record ids an HTML fragment links to.
fn record_ids(html: &str) -> Vec<String> {
    html.split("href=\"/api/records/")
        .skip(1)
        .map(|r| r.split('"').next().unwrap().to_owned())
        .collect()
}

/// The arrival numbers an alert's rows show (`data-arrival`).
fn arrival_ids(html: &str) -> Vec<String> {
    html.split("data-arrival=\"")
        .skip(1)
        .map(|r| r.split('"').next().unwrap().to_owned())
        .collect()
}

/// Follows a timeline's `#earlier` links from `first`, in Chromium; the record ids and the
/// arrival numbers each page's list shows, page by page.
fn follow_earlier(daemon: &Daemon, first: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut pages = Vec::new();
    let mut path = first.to_owned();
    loop {
        let dom = chromium::chromium_dom(&format!("{}{path}", daemon.url));
        let list = dom.split("<ol id=\"timeline\">").nth(1).unwrap_or("");
        let list = list.split("</ol></main>").next().unwrap_or(list);
        pages.push((record_ids(list), arrival_ids(list)));
        assert!(pages.len() < 30, "the earlier links do not end");
        match dom.split("id=\"earlier\" href=\"").nth(1) {
            Some(rest) => path = rest.split('"').next().unwrap().replace("&amp;", "&"),
            None => return pages,
        }
    }
}

/// A scripted night on a live daemon, each page read in headless Chromium: a disk alert
/// whose runbook exits 0 after the gate refused one of its steps, the same alert again in the
/// cooldown, a replication alert whose runbook fails and gives up with no notifier, an agent's
/// halted call and asked call, and a janitor sweep that removes one path and keeps a pinned
/// one. Each point of the pages (issue: "a timeline for 2 AM") is checked in the DOM, and the
/// pages are saved as screenshots (`NIGHTWATCH_KEEP_SCREENSHOTS=<dir>` keeps them).
#[test]
fn the_pages_of_a_live_daemon_in_headless_chromium() {
    let dir = scratch("serve", "chromium");
    let home = dir.join("home");
    let tmp = dir.join("tmp");
    for agent in ["agent-old", "agent-pinned"] {
        std::fs::create_dir_all(tmp.join(agent)).unwrap();
    }
    std::fs::write(tmp.join("agent-pinned/.nightwatch-keep"), "").unwrap();
    for path in ["agent-old", "agent-pinned/.nightwatch-keep", "agent-pinned"] {
        let status = std::process::Command::new("touch")
            .args(["-d", "9 days ago"])
            .arg(tmp.join(path))
            .status()
            .unwrap();
        assert!(status.success());
    }
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nextends: builtin\nsweep:\n  paths:\n    - {{ glob: \"{}/agent-*\", max_age: 5d }}\nrules:\n  - id: restarts-wait-for-a-person\n    verdict: ask\n    command: \"systemctl restart *\"\n    reason: a restart waits for the on-call's yes\n  - id: failovers-stop-the-night\n    verdict: halt\n    command: \"failover-db *\"\n    reason: a failover stops everything until a person looks\n  - id: the-janitor-sweeps\n    verdict: allow\n    actor: {{ kind: [janitor] }}\n",
            tmp.display()
        ),
    )
    .unwrap();
    let cleanup = script(
        &dir,
        "cleanup.sh",
        &format!("cat > /dev/null\n{NW} exec -- df -h /\n{NW} exec -- rm -rf /var/lib\nexit 0\n"),
    );
    let broken = script(
        &dir,
        "replication.sh",
        "cat > /dev/null\necho 'cannot reach the replica' >&2\nexit 3\n",
    );
    let config = format!(
        "queue: {{ max_attempts: 1, lease: 5s }}\nroutes:\n  - id: disk-cleanup\n    when: {{ source: uptime-kuma, tags: [\"runbook:disk-cleanup\"] }}\n    run: [\"{cleanup}\"]\n  - id: replication\n    when: {{ source: uptime-kuma, tags: [\"runbook:replication\"] }}\n    run: [\"{broken}\"]\n"
    );
    let policy_text = policy.display().to_string();
    let daemon = Daemon::start(&home, Some(&config), &[("NIGHTWATCH_POLICY", &policy_text)]);
    let env = [
        ("NIGHTWATCH_HOME", home.as_os_str()),
        ("NIGHTWATCH_POLICY", policy.as_os_str()),
    ];

    // The night.
    let disk = daemon.post(
        "/hooks/uptime-kuma",
        "application/json",
        &payload("uptime-kuma/down.json"),
    );
    let task = disk.json()["alerts"][0]["task"].as_i64().unwrap();
    let alert_id = disk.json()["alerts"][0]["alert_id"]
        .as_str()
        .unwrap()
        .to_owned();
    daemon.wait_for(&format!("/api/tasks/{task}"), 60, "the runbook", |t| {
        t["status"] == "done"
    });
    let replication = daemon.post(
        "/hooks/uptime-kuma",
        "application/json",
        &kuma_down(9, "prod-db-01 replication", "replication"),
    );
    let failing = replication.json()["alerts"][0]["task"].as_i64().unwrap();
    let failing_alert = replication.json()["alerts"][0]["alert_id"]
        .as_str()
        .unwrap()
        .to_owned();
    daemon.wait_for(
        &format!("/api/records?alert={failing_alert}&event=dispatch"),
        60,
        "the escalation",
        |v| {
            v["records"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["inputs"]["disposition"] == "escalated")
        },
    );
    let again = daemon.post(
        "/hooks/uptime-kuma",
        "application/json",
        &payload("uptime-kuma/down.json"),
    );
    assert_eq!(
        again.json()["alerts"][0]["disposition"],
        "suppressed",
        "{}",
        again.text()
    );
    for line in [
        ["failover-db", "--promote", "replica-2"],
        ["systemctl", "restart", "nginx"],
    ] {
        let mut args = vec!["exec", "--"];
        args.extend(line);
        let refused = common::nightwatch(&args, b"", &env);
        assert!(!refused.status.success(), "{line:?} ran");
    }
    let plan = dir.join("sweep.plan.json");
    let plan = plan.to_str().unwrap();
    let planned = common::nightwatch(&["sweep", "plan", "--out", plan], b"", &env);
    assert!(
        planned.status.success(),
        "{}",
        String::from_utf8_lossy(&planned.stderr)
    );
    let swept = common::nightwatch(&["sweep", "apply", "--plan", plan, "--yes"], b"", &env);
    assert!(
        !tmp.join("agent-old").exists() && tmp.join("agent-pinned").exists(),
        "{}{}",
        String::from_utf8_lossy(&swept.stdout),
        String::from_utf8_lossy(&swept.stderr)
    );

    let url = |path: &str| format!("{}{path}", daemon.url);
    let shots = dir.join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let shoot = |path: &str, name: &str| {
        let png = shots.join(name);
        chromium::chromium_screenshot_sized(&url(path), &png, 1280, 2000);
        chromium::assert_png(&png);
        if let Ok(keep) = std::env::var("NIGHTWATCH_KEEP_SCREENSHOTS") {
            let _ = std::fs::copy(&png, Path::new(&keep).join(format!("live-{name}")));
        }
    };

    let dom = chromium::chromium_dom(&url("/"));
    let rows = entries(&dom);
    assert!(dom.contains("id=\"filters\"") && dom.contains("id=\"summary\""));

    // 1. Escaped by type: the pages parse into the hooks the tests and scrapers use.
    assert!(dom.contains("http-equiv=\"Content-Security-Policy\""));
    assert!(!dom.contains("<script"));

    // 2. Ask, halt and deny are told apart: class, colour (CSS by class) and word.
    for (verdict, class, word) in [
        ("ask", "kind-call asked is-ask", ">asked<"),
        ("halt", "kind-call veto is-halt", ">halted<"),
        ("deny", "kind-call veto is-deny", ">denied<"),
    ] {
        let row = rows
            .iter()
            .find(|r| r.contains(&format!("data-verdict=\"{verdict}\"")))
            .unwrap_or_else(|| panic!("no {verdict} row: {dom}"));
        assert!(
            row.starts_with(class) && row.contains(word),
            "{verdict}: {row}"
        );
    }

    // 3. Human times and no raw JSON in rows; the cooldown's end reads as a clock time.
    let list_text = visible_text(dom.split("<ol id=\"timeline\">").nth(1).unwrap());
    assert_eq!(
        machine_times(&list_text),
        Vec::<String>::new(),
        "{list_text}"
    );
    assert!(!list_text.contains("{\""), "raw JSON in a row: {list_text}");
    assert!(
        list_text.contains("no new task until") && list_text.contains(" UTC ("),
        "{list_text}"
    );

    // 4. One row per alert, its dispositions folded in.
    let disk_rows: Vec<&&str> = rows
        .iter()
        .filter(|r| r.contains(&format!("data-alert=\"{alert_id}\"")))
        .collect();
    assert_eq!(disk_rows.len(), 1, "{dom}");
    for d in ["routed", "ran_with_refusals", "suppressed", "task_finished"] {
        assert!(
            disk_rows[0].contains(&format!("<li class=\"fold\" data-disposition=\"{d}\"")),
            "{d} is not folded into the alert's row: {}",
            disk_rows[0]
        );
    }
    assert!(
        !rows
            .iter()
            .any(|r| r.starts_with("kind-task") || r.starts_with("kind-dispatch")),
        "a task or a disposition has a row of its own: {dom}"
    );

    // 5. The janitor's kept item is headlined as kept, with why.
    let kept = rows
        .iter()
        .find(|r| r.contains("agent-pinned") && r.contains("sw-kept"))
        .unwrap_or_else(|| panic!("no kept row for agent-pinned: {dom}"));
    assert!(
        kept.contains(&format!(
            "<span class=\"sweep-what sw-kept\">kept path {}",
            tmp.join("agent-pinned").display()
        )) && kept.contains(".nightwatch-keep"),
        "{kept}"
    );
    assert!(
        !dom.contains("sw-kept\">remove_"),
        "a kept item headlined by its action: {dom}"
    );

    // 6. Newest first, and oldest first on request.
    let times = entry_times(&dom);
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "not newest first: {times:?}"
    );
    assert!(dom.contains("id=\"order\""), "no order toggle: {dom}");
    let oldest = chromium::chromium_dom(&url("/?order=oldest"));
    let times = entry_times(&oldest);
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "not oldest first: {times:?}"
    );

    // 7. The runbook with a refused step is not a success, and its session has ended.
    let session = format!("sess_{}-t{task}", &alert_id["alert_".len()..]);
    let page = chromium::chromium_dom(&url(&format!("/sessions/{session}")));
    assert!(page.contains("id=\"steps\""));
    let outcome = page
        .split("<dd id=\"outcome\"")
        .nth(1)
        .unwrap()
        .split("</dd>")
        .next()
        .unwrap();
    assert!(
        outcome.contains("class=\"o-warn\"") && outcome.contains("ran with refusals"),
        "{outcome}"
    );
    assert!(!outcome.contains("succeeded"), "{outcome}");
    assert!(!page.contains("still running"), "{page}");
    assert!(page.contains("<dd id=\"duration\">"), "{page}");
    assert!(
        page.contains("class=\"step veto is-deny\""),
        "the refused step: {page}"
    );

    // 8. The task that gave up says nobody was told: no notifier is configured.
    let failing_page = chromium::chromium_dom(&url(&format!("/alerts/{failing_alert}")));
    let task_section = failing_page
        .split(&format!("id=\"task-{failing}\""))
        .nth(1)
        .unwrap_or_else(|| panic!("no task {failing}: {failing_page}"));
    assert!(task_section.contains("nobody was told"), "{task_section}");
    assert!(
        !failing_page.contains("handed to a person") && !failing_page.contains("goes to a person"),
        "{failing_page}"
    );
    let failing_row = rows
        .iter()
        .find(|r| r.contains(&format!("data-alert=\"{failing_alert}\"")))
        .unwrap();
    assert!(
        failing_row.contains("data-disposition=\"escalated\"")
            && failing_row.contains("nobody was told: no notifier is configured"),
        "{failing_row}"
    );
    let disk_page = chromium::chromium_dom(&url(&format!("/alerts/{alert_id}")));
    for id in ["arrivals", "tasks", "records"] {
        assert!(disk_page.contains(&format!("id=\"{id}\"")), "no #{id}");
    }
    assert!(
        disk_page.contains("done, with refused steps"),
        "the alert's task is not a plain done: {disk_page}"
    );
    assert_eq!(
        machine_times(&visible_text(&disk_page)),
        Vec::<String>::new(),
        "machine times on the alert page"
    );

    // 9. Paging past the limit: every record once, in either order.
    let all: std::collections::BTreeSet<String> =
        record_ids(dom.split("<ol id=\"timeline\">").nth(1).unwrap())
            .into_iter()
            .collect();
    assert!(dom.contains("id=\"timeline\"") && !dom.contains("id=\"earlier\""));
    let all_arrivals = arrival_ids(dom.split("<ol id=\"timeline\">").nth(1).unwrap());
    assert_eq!(all_arrivals.len(), 3, "{dom}");
    for first in ["/?limit=12", "/?limit=12&order=oldest"] {
        let pages = follow_earlier(&daemon, first);
        assert!(pages.len() >= 2, "{first}: a limit of 12 makes pages");
        let records: Vec<String> = pages.iter().flat_map(|p| p.0.clone()).collect();
        let unique: std::collections::BTreeSet<String> = records.iter().cloned().collect();
        assert_eq!(
            records.len(),
            unique.len(),
            "{first}: a record on two pages"
        );
        // An arrival's own record, said by its line on a whole page, has a line of its own
        // on a page that holds the record but not the arrival.
        assert!(unique.is_superset(&all), "{first}: a record is on no page");
        let mut arrivals: Vec<String> = pages.iter().flat_map(|p| p.1.clone()).collect();
        arrivals.sort();
        let mut expected = all_arrivals.clone();
        expected.sort();
        assert_eq!(arrivals, expected, "{first}: each arrival once");
    }

    // 10. Decisions per hour by verdict, as a picture with words.
    let chart = dom
        .split("<figure id=\"chart\">")
        .nth(1)
        .unwrap_or_else(|| panic!("no chart: {dom}"))
        .split("</figure>")
        .next()
        .unwrap();
    assert!(chart.contains("role=\"img\""), "{chart}");
    assert!(chart.contains("<title id=\"chart-title\">Decisions per hour by verdict</title>"));
    for verdict in ["allow", "ask", "halt", "deny"] {
        assert!(
            chart.contains(&format!("<rect class=\"c-{verdict}\"")),
            "no {verdict} bar: {chart}"
        );
    }
    assert!(
        chart.contains("1 asked") && chart.contains("1 halted"),
        "{chart}"
    );

    let denied = chromium::chromium_dom(&url("/?verdict=deny"));
    assert!(denied.contains("data-verdict=\"deny\""));
    assert!(
        !denied.contains("entry kind-alert"),
        "a verdict filter hides alerts"
    );

    shoot("/", "timeline.png");
    shoot("/?order=oldest", "timeline-oldest.png");
    shoot(&format!("/sessions/{session}"), "session.png");
    shoot(&format!("/alerts/{alert_id}"), "alert.png");
    shoot(&format!("/alerts/{failing_alert}"), "alert-gave-up.png");
}

/// A daemon whose policy asks a person about every runbook, and one Uptime Kuma disk alert
/// sent to it, for the approval stories.
struct Asking {
    daemon: Daemon,
    home: std::path::PathBuf,
    policy: std::path::PathBuf,
    /// Exists once the runbook ran.
    marker: std::path::PathBuf,
    task: i64,
    alert_id: String,
}

/// Dana approves or rejects the asked record, through the real binary.
fn dana_answers(verb: &str, record: &str, why: &str, home: &Path, policy: &Path) {
    let out = common::nightwatch(
        &[verb, record, "--by", "dana", "--why", why],
        b"",
        &[
            ("NIGHTWATCH_HOME", home.as_os_str()),
            ("NIGHTWATCH_POLICY", policy.as_os_str()),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn asking(name: &str, queue: &str) -> Asking {
    let dir = scratch("serve", name);
    let home = dir.join("home");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        "rules:\n  - id: runbooks-need-a-person\n    verdict: ask\n    reason: \"a person approves each runbook this week\"\n    actor: { kind: [dispatcher] }\n    tool: [runbook]\n",
    )
    .unwrap();
    let marker = dir.join("ran");
    let runbook = script(&dir, "fix.sh", &format!("touch {}", marker.display()));
    let config = format!("queue: {queue}\nroutes:\n  - id: disk\n    run: [\"{runbook}\"]\n");
    let policy_text = policy.display().to_string();
    let daemon = Daemon::start(&home, Some(&config), &[("NIGHTWATCH_POLICY", &policy_text)]);
    let reply = daemon.post(
        "/hooks/uptime-kuma",
        "application/json",
        &payload("uptime-kuma/down.json"),
    );
    let alert = &reply.json()["alerts"][0];
    Asking {
        task: alert["task"].as_i64().unwrap(),
        alert_id: alert["alert_id"].as_str().unwrap().to_owned(),
        daemon,
        home,
        policy,
        marker,
    }
}

#[test]
fn a_runbook_policy_asks_about_waits_for_approval_then_runs() {
    let Asking {
        daemon,
        home,
        policy,
        marker,
        task,
        alert_id,
    } = asking("approval", "{ max_attempts: 2, approval_poll: 200ms }");
    let waiting = daemon.wait_for(
        &format!("/api/records?alert={alert_id}&event=dispatch"),
        20,
        "awaiting approval",
        |v| {
            v["records"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["inputs"]["disposition"] == "awaiting_approval")
        },
    );
    assert!(!marker.exists(), "nothing runs before a person says so");
    let asked = daemon.json(&format!(
        "/api/records?alert={alert_id}&event=decision&verdict=ask"
    ));
    let asked_id = asked["records"][0]["id"].as_str().unwrap().to_owned();
    let why = waiting["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["inputs"]["disposition"] == "awaiting_approval")
        .unwrap()["reasons"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        why.contains(&format!("nightwatch approve {asked_id}")),
        "{why}"
    );

    // Waiting uses up no tries (max_attempts is 2) and adds no records: the ask stands. Polled
    // until the third look (every 200 ms, however slow the machine) has ended.
    let waiting_task = daemon.wait_for(
        &format!("/api/tasks/{task}"),
        30,
        "a third look at the ask",
        // Between looks the task is pending; during one, briefly running. Stop at the third
        // look's end, or at an end of the task, which would be wrong.
        |t| {
            let status = t["status"].as_str().unwrap_or_default();
            (t["attempt"].as_i64().unwrap_or(0) >= 3 && status == "pending")
                || matches!(status, "done" | "gave_up" | "cancelled")
        },
    );
    assert_eq!(waiting_task["status"], "pending", "{waiting_task:#}");
    assert!(
        waiting_task["attempt"].as_i64().unwrap() >= 3,
        "{waiting_task:#}"
    );
    let asks = daemon.json(&format!(
        "/api/records?alert={alert_id}&event=decision&verdict=ask"
    ));
    assert_eq!(asks["records"].as_array().unwrap().len(), 1);
    assert!(!marker.exists());

    dana_answers("approve", &asked_id, "disk is really full", &home, &policy);
    let done = daemon.wait_for(&format!("/api/tasks/{task}"), 30, "the approved run", |t| {
        t["status"] == "done"
    });
    assert!(marker.exists());
    assert!(done["attempt"].as_i64().unwrap() >= 4);
    let allowed = daemon.json(&format!(
        "/api/records?alert={alert_id}&event=decision&verdict=allow"
    ));
    let reason = allowed["records"][0]["reasons"][0].as_str().unwrap();
    assert!(reason.contains("approved by dana"), "{reason}");
}

#[test]
fn serve_check_reads_the_example_and_refuses_a_bad_file_with_where() {
    let dir = scratch("serve", "check");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/serve.yaml");
    let env = [
        ("NIGHTWATCH_HOME", dir.as_os_str()),
        ("NIGHTWATCH_KUMA_TOKEN", std::ffi::OsStr::new("k")),
        ("NIGHTWATCH_AM_TOKEN", std::ffi::OsStr::new("a")),
        ("NIGHTWATCH_GRAFANA_TOKEN", std::ffi::OsStr::new("g")),
        ("NIGHTWATCH_ROBOTS_TOKEN", std::ffi::OsStr::new("r")),
    ];
    let ok = common::nightwatch(&["serve", "--check", "--config", example], b"", &env);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let said = String::from_utf8_lossy(&ok.stderr);
    assert!(said.contains("route disk-cleanup"), "{said}");
    // Every watcher kind, the job and the heartbeat of the example are read and listed.
    for kind in [
        "drift",
        "fresh",
        "command",
        "http",
        "query",
        "state",
        "baselines",
        "hazards",
    ] {
        assert!(said.contains(&format!(": {kind} ")), "{kind}: {said}");
    }
    assert!(said.contains("job overnight-triage"), "{said}");
    assert!(said.contains("heartbeat: every 1m"), "{said}");

    // Without the secret's variable, the daemon does not start.
    let missing = common::nightwatch(
        &["serve", "--check", "--config", example],
        b"",
        &[("NIGHTWATCH_HOME", dir.as_os_str())],
    );
    assert!(!missing.status.success());
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(
        said.contains("NIGHTWATCH_") && said.contains("not set"),
        "{said}"
    );

    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "queue: { max_atempts: 3 }\n").unwrap();
    let refused = common::nightwatch(
        &["serve", "--check", "--config", bad.to_str().unwrap()],
        b"",
        &[("NIGHTWATCH_HOME", dir.as_os_str())],
    );
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("bad.yaml") && said.contains("max_atempts"),
        "{said}"
    );
}

#[test]
fn cooldown_and_throttle_refuse_new_tasks_and_say_why() {
    let dir = scratch("serve", "damping");
    let runbook = script(&dir, "ok.sh", "exit 0");
    let config = format!(
        "queue: {{ cooldown: 1h }}\nroutes:\n  - id: disk\n    when: {{ source: uptime-kuma }}\n    run: [\"{runbook}\"]\n    max_per_hour: 1\n"
    );
    let daemon = Daemon::start(&dir.join("home"), Some(&config), &[]);
    let down = payload("uptime-kuma/down.json");
    let first = daemon
        .post("/hooks/uptime-kuma", "application/json", &down)
        .json();
    let task = first["alerts"][0]["task"].as_i64().unwrap();
    daemon.wait_for(&format!("/api/tasks/{task}"), 30, "the run", |t| {
        t["status"] == "done"
    });

    // The same alert again within the cooldown: suppressed, naming the task that ran.
    let again = daemon
        .post("/hooks/uptime-kuma", "application/json", &down)
        .json();
    let a = &again["alerts"][0];
    assert_eq!(a["disposition"], "suppressed", "{again:#}");
    assert!(
        a["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("task {task}")),
        "{a:#}"
    );

    // Another monitor on the same route: over the route's hourly limit.
    let mut other: Value = serde_json::from_slice(&down).unwrap();
    other["monitor"]["id"] = 8.into();
    other["heartbeat"]["monitorID"] = 8.into();
    let body = serde_json::to_vec(&other).unwrap();
    let third = daemon
        .post("/hooks/uptime-kuma", "application/json", &body)
        .json();
    let t = &third["alerts"][0];
    assert_eq!(t["disposition"], "throttled", "{third:#}");
    assert!(
        t["reason"].as_str().unwrap().contains("limit is 1"),
        "{t:#}"
    );
    assert_eq!(
        daemon.json("/api/tasks")["tasks"].as_array().unwrap().len(),
        1
    );
    let records = daemon.json("/api/records?event=dispatch")["records"]
        .as_array()
        .unwrap()
        .clone();
    for d in ["suppressed", "throttled"] {
        assert!(
            has(&records, |r| r["inputs"]["disposition"] == d),
            "no {d} record"
        );
    }
}

#[test]
fn sigterm_stops_a_running_runbook_after_the_grace_period_and_the_restart_retries_it() {
    let dir = scratch("serve", "sigterm");
    let home = dir.join("home");
    let marker = dir.join("finished");
    let runbook = script(
        &dir,
        "long.sh",
        &format!(
            "if [ \"$NIGHTWATCH_ATTEMPT\" = 1 ]; then exec sleep 60; fi\ntouch {}\n",
            marker.display()
        ),
    );
    let config = format!(
        "queue: {{ backoff_base: 100ms }}\nroutes:\n  - id: all\n    run: [\"{runbook}\"]\n"
    );
    let daemon = Daemon::start(&home, Some(&config), &[]);
    let reply = daemon.post(
        "/hooks/uptime-kuma",
        "application/json",
        &payload("uptime-kuma/down.json"),
    );
    let task = reply.json()["alerts"][0]["task"].as_i64().unwrap();
    daemon.wait_for(
        &format!("/api/tasks/{task}"),
        20,
        "the first attempt",
        |t| t["status"] == "running",
    );
    let asked = Instant::now();
    let (status, log) = daemon.stop();
    let took = asked.elapsed();
    assert_eq!(status, Some(0), "{log}");
    assert!(took < Duration::from_secs(25), "shutdown took {took:?}");
    assert!(
        took >= Duration::from_secs(9),
        "the runbook got its grace period: {took:?}"
    );

    let daemon = Daemon::start(&home, Some(&config), &[]);
    let done = daemon.wait_for(&format!("/api/tasks/{task}"), 30, "the retry", |t| {
        t["status"] == "done"
    });
    assert_eq!(done["attempt"], 2);
    assert!(marker.exists());
    let records = daemon.json("/api/records?event=dispatch")["records"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        has(&records, |r| r["inputs"]["disposition"] == "failed"
            && r["reasons"][0]
                .as_str()
                .unwrap()
                .contains("the daemon shut down")),
        "{records:#?}"
    );
}

#[test]
fn a_rejected_runbook_is_dropped_and_handed_to_a_person() {
    let Asking {
        daemon,
        home,
        policy,
        marker,
        task,
        alert_id,
    } = asking("rejection", "{ approval_poll: 200ms }");
    let asked = daemon.wait_for(
        &format!("/api/records?alert={alert_id}&event=decision&verdict=ask"),
        20,
        "the ask",
        |v| !v["records"].as_array().unwrap().is_empty(),
    );
    let asked_id = asked["records"][0]["id"].as_str().unwrap().to_owned();
    dana_answers("reject", &asked_id, "not during the sale", &home, &policy);
    let gave_up = daemon.wait_for(&format!("/api/tasks/{task}"), 20, "the drop", |t| {
        t["status"] == "gave_up"
    });
    let error = gave_up["last_error"].as_str().unwrap();
    assert!(
        error.contains("dana rejected") && error.contains("not during the sale"),
        "{error}"
    );
    assert!(!marker.exists(), "a rejected runbook never runs");
    daemon.wait_for(
        &format!("/api/records?alert={alert_id}&event=dispatch"),
        10,
        "the escalation",
        |v| {
            v["records"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["inputs"]["disposition"] == "escalated")
        },
    );
}

/// A client that trickles its headers, or sends none, is closed within `request_timeout`; one
/// connection past `max_connections` is told 503 and why, and once the idle ones are closed the
/// daemon answers again.
#[test]
fn slow_and_surplus_connections_are_cut_off_and_the_daemon_keeps_answering() {
    use std::io::{Read, Write};
    let dir = scratch("serve", "connections");
    let home = dir.join("home");
    let daemon = Daemon::start(
        &home,
        Some("request_timeout: 1s\nmax_connections: 8\n"),
        &[],
    );
    assert_eq!(daemon.get("/healthz").status, 200);

    // One byte of headers a second: cut off, though it never stops sending.
    let mut trickle = std::net::TcpStream::connect(&daemon.addr).unwrap();
    let started = Instant::now();
    let mut cut_off = None;
    for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaa" {
        if trickle.write_all(&[*byte]).is_err() {
            cut_off = Some(started.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
        let mut probe = [0u8; 1];
        trickle
            .set_read_timeout(Some(Duration::from_millis(1)))
            .unwrap();
        if let Ok(0) = trickle.read(&mut probe) {
            cut_off = Some(started.elapsed());
            break;
        }
    }
    let cut_off = cut_off.expect("the trickling client was never cut off");
    assert!(
        cut_off < Duration::from_secs(4),
        "cut off after {cut_off:?}"
    );

    // Eight idle connections fill the daemon; the ninth is refused with a reason, but a
    // liveness probe is told the daemon lives.
    let idle: Vec<std::net::TcpStream> = (0..8)
        .map(|_| std::net::TcpStream::connect(&daemon.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let alive = daemon.get("/healthz");
    assert_eq!((alive.status, alive.text().as_str()), (200, "ok\n"));
    let refused = daemon.get("/readyz");
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert!(
        refused.text().contains("max_connections"),
        "{}",
        refused.text()
    );
    assert_eq!(refused.header("retry-after"), Some("1"));

    // The idle ones are closed within the header timeout, and the daemon answers again.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = daemon.get("/readyz");
        if reply.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "still refused: {}", reply.text());
        std::thread::sleep(Duration::from_millis(200));
    }
    for mut stream in idle {
        let mut rest = Vec::new();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(
            stream.read_to_end(&mut rest).unwrap_or(0),
            0,
            "closed without a word"
        );
    }
}

/// `/api/tasks` is read a page at a time by cursor: every task once, in order, however many
/// there are, and a page never larger than asked.
#[test]
fn tasks_are_listed_a_page_at_a_time_each_once() {
    let dir = scratch("serve", "tasks-pages");
    let home = dir.join("home");
    let config = "queue: { resolve_delay: 1h }\nroutes:\n  - id: all\n    run: [\"true\"]\n";
    let daemon = Daemon::start(&home, Some(config), &[]);
    // Five monitors down: five alerts, five tasks.
    monitors_down(&daemon, 100..105);
    assert_eq!(
        follow_pages(&daemon, "/api/tasks?limit=2", "tasks"),
        [1, 2, 3, 4, 5]
    );
    let bad = daemon.get("/api/tasks?limit=lots");
    assert_eq!(bad.status, 400, "{}", bad.text());
}

/// `/api/alerts?after=` reads every arrival once, in order, a page at a time, however many
/// share a millisecond; the time window says when it left older arrivals out.
#[test]
fn arrivals_are_read_by_cursor_each_once_and_a_cut_window_says_so() {
    let dir = scratch("serve", "alerts-pages");
    let home = dir.join("home");
    let daemon = Daemon::start(&home, None, &[]);
    monitors_down(&daemon, 200..205);
    assert_eq!(
        follow_pages(&daemon, "/api/alerts?after=0&limit=2", "alerts"),
        [1, 2, 3, 4, 5]
    );
    let window = daemon.json("/api/alerts?since=1h&limit=2");
    assert_eq!(window["alerts"].as_array().unwrap().len(), 2);
    assert_eq!(window["truncated"], true, "{window:#}");
    assert_eq!(daemon.json("/api/alerts?since=1h")["truncated"], false);
    assert_eq!(daemon.get("/api/alerts?after=soon").status, 400);
}

/// Uptime Kuma says each of `monitors` is down: one new alert each.
fn monitors_down(daemon: &Daemon, monitors: std::ops::Range<i64>) {
    let down: Value = serde_json::from_slice(&payload("uptime-kuma/down.json")).unwrap();
    for monitor in monitors {
        let mut alert = down.clone();
        alert["monitor"]["id"] = monitor.into();
        alert["heartbeat"]["monitorID"] = monitor.into();
        let reply = daemon.post(
            "/hooks/uptime-kuma",
            "application/json",
            alert.to_string().as_bytes(),
        );
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
}

/// The ids of every `key` item, following each page's `next` from `first`; no page larger
/// than its `limit` of 2.
fn follow_pages(daemon: &Daemon, first: &str, key: &str) -> Vec<i64> {
    let mut seen = Vec::new();
    let mut path = first.to_owned();
    loop {
        let page = daemon.json(&path);
        let items = page[key].as_array().unwrap();
        assert!(items.len() <= 2, "{page:#}");
        seen.extend(items.iter().map(|item| item["id"].as_i64().unwrap()));
        match page["next"].as_str() {
            Some(next) => path = next.to_owned(),
            None => return seen,
        }
    }
}

/// Posts Uptime Kuma's `down.json` and waits until its runbook has written `sign` (so the
/// first attempt is running); the task's id.
fn runbook_started_for_an_alert(daemon: &Daemon, sign: &Path) -> i64 {
    let reply = daemon.post(
        "/hooks/uptime-kuma",
        "application/json",
        &payload("uptime-kuma/down.json"),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let task = reply.json()["alerts"][0]["task"].as_i64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sign.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(sign.exists(), "the first attempt's runbook started");
    // The daemon notes where the runbook runs right after starting it; a crash before that
    // commit leaves the task to its lease (a case of its own), not to the next daemon's start.
    let tasks = daemon.home.join("tasks.db");
    let noted = || {
        rusqlite::Connection::open(&tasks)
            .and_then(|db| {
                db.query_row(
                    "SELECT runbook IS NOT NULL FROM tasks WHERE id = ?1",
                    [task],
                    |r| r.get::<_, bool>(0),
                )
            })
            .unwrap_or(false)
    };
    while !noted() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(noted(), "the daemon noted where the runbook runs");
    task
}

/// With a readers' secret, the API, the pages and `/metrics` ask for it (a bearer token, or a
/// browser's password); the probes stay open, and the hooks keep their own secrets.
#[test]
fn a_readers_secret_guards_the_api_pages_and_metrics_but_not_probes_or_hooks() {
    let dir = scratch("serve", "readers");
    let home = dir.join("home");
    let daemon = Daemon::start(
        &home,
        Some(
            "readers: { auth: { bearer_env: READ_TOKEN } }\nsources:\n  alertmanager: { auth: { bearer: am-secret } }\n",
        ),
        &[("READ_TOKEN", "r34d-s3cret")],
    );
    let get = |path: &str, auth: Option<&str>| {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("Authorization", a)).into_iter().collect();
        request(&daemon.addr, "GET", path, &headers, b"")
    };
    for path in [
        "/api/tasks",
        "/api/alerts?since=1h",
        "/api/openapi.json",
        "/",
        "/metrics",
        "/nowhere",
    ] {
        let refused = get(path, None);
        assert_eq!(refused.status, 401, "{path}: {}", refused.text());
        assert!(
            refused.text().contains("readers"),
            "{path}: {}",
            refused.text()
        );
        assert!(
            refused
                .header("www-authenticate")
                .is_some_and(|h| h.starts_with("Basic")),
            "{path}"
        );
        assert_eq!(get(path, Some("Bearer wrong")).status, 401, "{path}");
    }
    assert_eq!(get("/api/tasks", Some("Bearer r34d-s3cret")).status, 200);
    assert_eq!(get("/metrics", Some("Bearer r34d-s3cret")).status, 200);
    // "dana:r34d-s3cret", as a browser sends what it was given.
    let page = get("/", Some("Basic ZGFuYTpyMzRkLXMzY3JldA=="));
    assert_eq!(page.status, 200, "{}", page.text());
    assert_eq!(get("/healthz", None).status, 200);
    assert_eq!(get("/readyz", None).status, 200);

    let body = payload("alertmanager/firing.json");
    let stored = am_post(&daemon, "am-secret", "application/json", &body);
    assert_eq!(stored.status, 200, "{}", stored.text());
    let wrong = am_post(&daemon, "r34d-s3cret", "application/json", &body);
    assert_eq!(wrong.status, 401, "the readers' secret is not a hook's");
}

/// Issue 15: `serve --check` passed a runbook whose program did not exist, and stopped at the
/// first unset secret. Now it names every route that could not start its runbook, and every
/// secret variable that is not set, in one run.
#[test]
fn serve_check_names_every_missing_runbook_and_secret_at_once() {
    let dir = scratch("serve", "check-everything");
    std::fs::create_dir_all(dir.join("runbooks")).unwrap();
    let present = dir.join("runbooks/present.sh");
    std::fs::write(&present, "#!/bin/sh\ntrue\n").unwrap();
    let not_executable = dir.join("runbooks/plain.sh");
    std::fs::write(&not_executable, "true\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&present, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = dir.join("serve.yaml");
    std::fs::write(
        &config,
        "readers: { auth: { bearer_env: NW_TEST_READ } }
sources:
  alertmanager: { auth: { bearer_env: NW_TEST_AM } }
routes:
  - { id: fine, run: [runbooks/present.sh] }
  - { id: on-path, run: [sh, -c, 'true'] }
  - { id: gone, run: [runbooks/gone.sh] }
  - { id: plain, run: [runbooks/plain.sh] }
  - { id: unknown, run: [no-such-program-nightwatch-test] }
  - { id: nowhere, run: [sh], cwd: /no/such/dir }
",
    )
    .unwrap();
    let env = [("NIGHTWATCH_HOME", dir.as_os_str())];
    let secrets = common::nightwatch(
        &["serve", "--check", "--config", config.to_str().unwrap()],
        b"",
        &env,
    );
    assert!(!secrets.status.success());
    let said = String::from_utf8_lossy(&secrets.stderr);
    assert!(said.contains("NW_TEST_READ (for readers.auth)"), "{said}");
    assert!(
        said.contains("NW_TEST_AM (for sources.alertmanager.auth)"),
        "{said}"
    );

    let env = [
        ("NIGHTWATCH_HOME", dir.as_os_str()),
        ("NW_TEST_READ", std::ffi::OsStr::new("r")),
        ("NW_TEST_AM", std::ffi::OsStr::new("a")),
    ];
    let runbooks = common::nightwatch(
        &["serve", "--check", "--config", config.to_str().unwrap()],
        b"",
        &env,
    );
    assert!(!runbooks.status.success());
    let said = String::from_utf8_lossy(&runbooks.stderr);
    for expected in [
        format!("route gone: its program {} does not exist", dir.join("runbooks/gone.sh").display()),
        format!("route plain: its program {} is not an executable file", not_executable.display()),
        "route unknown: its program \"no-such-program-nightwatch-test\" is not on the daemon's PATH".to_owned(),
        "route nowhere: its cwd /no/such/dir is not a directory".to_owned(),
        "4 routes cannot start their runbook".to_owned(),
    ] {
        assert!(said.contains(&expected), "{expected}\n{said}");
    }
    assert!(
        !said.contains("route fine: its") && !said.contains("route on-path: its"),
        "{said}"
    );
}

/// Issue 15: a runbook whose `rm -rf` the gate refused, and which then exited 0, showed as
/// "ran and succeeded". Its outcome now says which steps were refused, and is not a success.
#[test]
fn a_runbook_with_a_refused_step_is_not_shown_as_a_plain_success() {
    let dir = scratch("serve", "refused-step");
    let home = dir.join("home");
    let runbook = script(
        &dir,
        "cleanup.sh",
        &format!("{NW} exec -- df -h /\n{NW} exec -- rm -rf /var/lib\nexit 0\n"),
    );
    let config = format!(
        "queue: {{ lease: 5s }}\nroutes:\n  - id: disk-cleanup\n    when: {{ source: uptime-kuma, tags: [\"runbook:disk-cleanup\"] }}\n    run: [\"{runbook}\"]\n    timeout: 60s\n"
    );
    let daemon = Daemon::start(&home, Some(&config), &[]);
    let reply = daemon.post(
        "/hooks/uptime-kuma",
        "application/json",
        &payload("uptime-kuma/down.json"),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let dispatched = &reply.json()["alerts"][0];
    let alert_id = dispatched["alert_id"].as_str().unwrap().to_owned();
    let task = dispatched["task"].as_i64().unwrap();
    let done = daemon.wait_for(&format!("/api/tasks/{task}"), 60, "the runbook", |t| {
        t["status"] == "done" || t["status"] == "gave_up"
    });
    assert_eq!(done["status"], "done", "{done:#}\n{}", daemon.log());

    let records = records_of(&daemon, &alert_id);
    let refused = records
        .iter()
        .find(|r| r["event"] == "decision" && r["inputs"]["command"] == "rm -rf /var/lib")
        .expect("the refused step is recorded");
    assert_eq!(refused["verdict"], "deny");
    let outcome = records
        .iter()
        .find(|r| {
            r["event"] == "dispatch"
                && r["inputs"]["task"] == task
                && r["inputs"]["disposition"] != "routed"
        })
        .expect("the run's outcome is recorded");
    assert_eq!(
        outcome["inputs"]["disposition"], "ran_with_refusals",
        "{outcome:#}"
    );
    let why = outcome["reasons"][0].as_str().unwrap_or_default();
    assert!(
        why.contains("refused 1 of its steps")
            && why.contains(refused["id"].as_str().unwrap())
            && why.contains("rm -rf /var/lib"),
        "{why}"
    );
    assert!(
        !records
            .iter()
            .any(|r| r["event"] == "dispatch" && r["inputs"]["disposition"] == "ran"),
        "not a plain success"
    );
    let (status, log) = daemon.stop();
    assert_eq!(status, Some(0), "{log}");
}
