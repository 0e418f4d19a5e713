//! The pages as a real browser builds them: realistic fixtures (an Uptime Kuma disk alert routed
//! to a runbook whose agent session made three calls, one denied, beside a hostile alert from
//! a generic hook) are rendered to files, loaded in headless Chromium, and checked in the DOM
//! Chromium produced and in a screenshot.
//!
//! Chromium is Debian's `chromium` package at `/usr/bin/chromium`; `.ci/run` installs it. A
//! missing browser fails these tests rather than skipping them, so CI never passes by accident.

#[path = "support/chromium.rs"]
mod chromium;

use std::path::{Path, PathBuf};

use chromium::{assert_png, attribute_names, chromium_dom, chromium_screenshot, tags};

use nightwatch_ledger::{Outputs, Record, RecordActor, RecordContext, event, parse_rfc3339};
use nightwatch_serve::inbox::{AlertEvent, Disposition};
use nightwatch_serve::route;
use nightwatch_serve::web::{self, TimelineQuery};
use nightwatch_store::{FleetArrival, FleetRecord, Task, TaskEvent};
use nightwatch_tasks::{Lifecycle, Status};
use serde_json::{Value, json};

/// Text a hostile sender puts in an alert: it must reach the page as text, never as markup.
const HOSTILE_TITLE: &str = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>";
const HOSTILE_HOST: &str = "db9\" onmouseover=\"alert(2)";

fn file_url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Writes `html` to `dir/name` and returns its path.
fn write_page(dir: &Path, name: &str, html: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, html).expect("write page");
    path
}

/// Hostile text must be in the DOM as text, and nowhere as an element or an attribute.
fn assert_hostile_text_is_inert(dom: &str) {
    for tag in tags(dom) {
        let name = tag.split([' ', '\n', '/']).next().unwrap_or("");
        assert!(
            !matches!(name.to_ascii_lowercase().as_str(), "script" | "img"),
            "a <{name}> element from data in the DOM"
        );
        for attr in attribute_names(tag) {
            assert!(
                !attr.to_ascii_lowercase().starts_with("on"),
                "an event handler attribute from data: <{tag}>"
            );
        }
    }
    assert!(
        dom.contains(
            "&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
        ),
        "the hostile title is not shown as text"
    );
    assert!(
        dom.contains("<title>") && !dom.contains("<title>pwned"),
        "the title changed"
    );
}

// ---- the night of 14 February 2026 -------------------------------------------------------------

fn at(text: &str) -> i64 {
    parse_rfc3339(text).expect("fixture time")
}

const SESSION: &str = "5f1c2a9e-3b7d-4c1e-9a2f-0d8e6b4c7a11";

/// Uptime Kuma's "down" notification for the disk monitor, as it sends it.
fn kuma_alert() -> nightwatch_intake::Alert {
    let body = br#"{
      "heartbeat": {"monitorID": 7, "status": 0, "time": "2026-02-14 03:17:00.123",
        "msg": "Disk usage 86% exceeds 85%", "important": true, "timezone": "UTC",
        "timezoneOffset": "+00:00", "localDateTime": "2026-02-14 03:17:00"},
      "monitor": {"id": 7, "name": "prod-worker-01 disk", "type": "push",
        "hostname": "prod-worker-01", "url": null, "active": true,
        "tags": [{"name": "runbook", "value": "disk-cleanup"}, {"name": "env", "value": "prod"},
          {"name": "host", "value": "prod-worker-01"}]},
      "msg": "[prod-worker-01 disk] [Down] Disk usage 86% exceeds 85%"
    }"#;
    nightwatch_intake::parse_uptime_kuma(body, Some("application/json"), None)
        .expect("the Uptime Kuma fixture parses")
}

/// One tool call of the agent's session; `ran` is `None` when it was refused.
struct Call {
    time: &'static str,
    command: &'static str,
    verdict: &'static str,
    rule: &'static str,
    ran: Option<Ran>,
}

struct Ran {
    exit: i64,
    stdout: &'static str,
    stderr: &'static str,
}

struct Night {
    alert_id: String,
    arrivals: Vec<AlertEvent>,
    tasks: Vec<(Task, Vec<TaskEvent>)>,
    records: Vec<Record>,
}

fn record(seq: u64, event: &str, ts: &str, actor: (&str, &str), tool: &str) -> Record {
    Record {
        id: Record::id_for(seq),
        seq,
        event: event.into(),
        timestamp_ms: at(ts),
        session_id: None,
        actor: RecordActor {
            kind: actor.0.into(),
            id: actor.1.into(),
        },
        tool: tool.into(),
        inputs: Value::Null,
        outputs: None,
        context: RecordContext::default(),
        duration_ms: None,
        verdict: None,
        rule: None,
        reasons: Vec::new(),
        call_id: None,
        redacted: Vec::new(),
        cwd: None,
        safeguards: None,
        prev_hash: "0".repeat(64),
        hash: "0".repeat(64),
    }
}

fn night() -> Night {
    let alert = kuma_alert();
    let alert_id = route::alert_id(&alert);
    let host = route::alert_host(&alert);
    let context = RecordContext {
        triggered_by: Some(route::triggered_by(&alert)),
        alert_id: Some(alert_id.clone()),
        host: host.clone(),
        task: Some("t3".into()),
    };
    let kuma = AlertEvent {
        id: 41,
        received_ms: at("2026-02-14T03:17:01Z"),
        source: route::source_name(&alert.source),
        alert_id: alert_id.clone(),
        status: "firing".into(),
        title: alert.title.clone(),
        host: host.clone(),
        alert: serde_json::to_value(&alert).expect("alert JSON"),
        disposition: Some(Disposition::Routed),
        reason: Some("route disk-full matches label runbook=disk-cleanup".into()),
        route: Some("disk-full".into()),
        task_id: Some(3),
        record: Some("r101".into()),
    };
    let mut repeat = kuma.clone();
    repeat.id = 42;
    repeat.received_ms = at("2026-02-14T03:18:01Z");
    repeat.disposition = Some(Disposition::Deduplicated);
    repeat.reason = Some("task 3 for this alert is still running; counted on it".into());
    repeat.record = Some("r104".into());
    let mut hostile = kuma.clone();
    hostile.id = 43;
    hostile.received_ms = at("2026-02-14T03:25:00Z");
    hostile.source = "grafana".into();
    hostile.alert_id = "alert_0bad00".into();
    hostile.title = HOSTILE_TITLE.into();
    hostile.host = Some(HOSTILE_HOST.into());
    hostile.disposition = Some(Disposition::NoRoute);
    hostile.reason = Some(format!("no route matches {HOSTILE_TITLE}"));
    hostile.route = None;
    hostile.task_id = None;
    hostile.record = None;

    let created = at("2026-02-14T03:17:01Z");
    let task = Task {
        id: 3,
        identity: route::task_identity(&alert),
        alert_json: serde_json::to_string(&alert).expect("alert JSON"),
        route: "disk-full".into(),
        created_at: created,
        repeats: 1,
        last_seen: at("2026-02-14T03:18:01Z"),
        lifecycle: Lifecycle {
            status: Status::Done,
            attempt: 1,
            ready_at: created,
            lease_until: None,
            worker: Some("w1".into()),
            last_error: None,
            finished_at: Some(at("2026-02-14T03:21:40Z")),
            deferrals: 0,
        },
    };
    let task_event = |seq, ts: &str, from, to, why: &str| TaskEvent {
        seq,
        task_id: 3,
        at: at(ts),
        from,
        to,
        why: why.into(),
    };
    let events = vec![
        task_event(
            1,
            "2026-02-14T03:17:01Z",
            None,
            Status::Pending,
            "offered by uptime-kuma alert",
        ),
        task_event(
            2,
            "2026-02-14T03:17:02Z",
            Some(Status::Pending),
            Status::Running,
            "claimed by w1, attempt 1",
        ),
        task_event(
            3,
            "2026-02-14T03:21:40Z",
            Some(Status::Running),
            Status::Done,
            "runbook disk-cleanup succeeded",
        ),
    ];

    let agent = ("agent", "claude-code");
    let mut records = Vec::new();
    let mut dispatch = record(
        101,
        event::DISPATCH,
        "2026-02-14T03:17:01Z",
        ("dispatcher", "nightwatch-serve"),
        "alert",
    );
    dispatch.inputs = json!({"disposition": "routed", "alert_id": alert_id, "route": "disk-full", "task": 3, "title": alert.title});
    dispatch.context = context.clone();
    dispatch.reasons = vec!["route disk-full matches label runbook=disk-cleanup".into()];
    records.push(dispatch);
    let mut start = record(
        102,
        event::SESSION_START,
        "2026-02-14T03:17:03Z",
        agent,
        "session",
    );
    start.session_id = Some(SESSION.into());
    start.context = context.clone();
    records.push(start);
    let mut seq = 102;
    let calls = [
        Call {
            time: "03:17:10",
            command: "df -h /",
            verdict: "allow",
            rule: "read-only inspection",
            ran: Some(Ran {
                exit: 0,
                stdout: "Filesystem      Size  Used Avail Use% Mounted on\n/dev/sda1        80G   69G   11G  86% /\n",
                stderr: "",
            }),
        },
        Call {
            time: "03:17:40",
            command: "du -xsh /var/log/* | sort -h | tail -5",
            verdict: "allow",
            rule: "read-only inspection",
            ran: Some(Ran {
                exit: 1,
                stdout: "120M\t/var/log/syslog.1\n2.1G\t/var/log/journal\n6.8G\t/var/log/app\n",
                stderr: "du: cannot read directory '/var/log/private': Permission denied\n",
            }),
        },
        Call {
            time: "03:18:30",
            command: "rm -rf /var/lib/postgresql/14/main/pg_wal",
            verdict: "deny",
            rule: "deletes database files",
            ran: None,
        },
    ];
    for (i, call) in calls.into_iter().enumerate() {
        let Call {
            time,
            command,
            verdict,
            rule,
            ran,
        } = call;
        seq += 1;
        let call_id = format!("toolu_0{i}");
        let mut d = record(
            seq,
            event::DECISION,
            &format!("2026-02-14T{time}Z"),
            agent,
            "exec",
        );
        d.session_id = Some(SESSION.into());
        d.context = context.clone();
        d.inputs = json!({"command": command, "description": "look at the disk"});
        d.verdict = Some(verdict.into());
        d.rule = Some(rule.into());
        d.call_id = Some(call_id.clone());
        d.cwd = Some("/root".into());
        d.reasons = vec![match verdict {
            "deny" => "rm -rf under /var/lib/postgresql deletes database files; instead: ask the on-call DBA".into(),
            _ => format!("{command}: reads only"),
        }];
        if verdict == "deny" {
            d.safeguards = Some(
                json!({"checks": [{"check": "postgres-running", "kind": "process", "outcome": "matched",
                "detail": "postgres (pid 812) is running", "effect": "deny", "message": "the database is running", "elapsed_ms": 3}],
                "notify": ["ntfy-oncall"]}),
            );
        }
        records.push(d);
        if let Some(Ran {
            exit,
            stdout,
            stderr,
        }) = ran
        {
            seq += 1;
            let mut r = record(
                seq,
                event::RESULT,
                &format!("2026-02-14T{time}Z"),
                agent,
                "exec",
            );
            r.timestamp_ms += 900;
            r.session_id = Some(SESSION.into());
            r.context = context.clone();
            r.call_id = Some(call_id);
            r.outputs = Some(Outputs {
                exit_code: Some(exit),
                stdout: stdout.into(),
                stderr: stderr.into(),
            });
            r.duration_ms = Some(870);
            records.push(r);
        }
    }
    let mut end = record(
        seq + 1,
        event::SESSION_END,
        "2026-02-14T03:21:39Z",
        agent,
        "session",
    );
    end.session_id = Some(SESSION.into());
    end.context = context.clone();
    records.push(end);
    let mut ran = record(
        seq + 2,
        event::DISPATCH,
        "2026-02-14T03:21:40Z",
        ("dispatcher", "nightwatch-serve"),
        "runbook",
    );
    ran.session_id = Some(SESSION.into());
    ran.inputs = json!({"disposition": "ran", "alert_id": alert_id, "route": "disk-full", "task": 3, "title": alert.title});
    ran.context = context.clone();
    ran.reasons = vec!["runbook disk-cleanup finished: exit 0 after 4 min 37 s".into()];
    records.push(ran);
    let mut sweep = record(
        seq + 3,
        event::DECISION,
        "2026-02-14T04:00:00Z",
        ("janitor", "janitor"),
        "remove_container",
    );
    sweep.inputs = json!({"id": "3f9a", "name": "ci-runner-old"});
    sweep.verdict = Some("allow".into());
    sweep.rule = Some("janitor-stale-containers".into());
    sweep.reasons = vec!["exited 9 days ago, no keep label".into()];
    sweep.context.host = host.clone();
    records.push(sweep);
    let mut kept = record(
        seq + 4,
        event::SWEEP_KEEP,
        "2026-02-14T04:00:01Z",
        ("janitor", "janitor"),
        "remove_container",
    );
    kept.inputs = json!({"kind": "container", "id": "77c1", "name": "pg-replica-test"});
    kept.reasons = vec!["keep label nightwatch.keep=true".into()];
    kept.context.host = host;
    records.push(kept);

    Night {
        alert_id,
        arrivals: vec![kuma, repeat, hostile],
        tasks: vec![(task, events)],
        records,
    }
}

#[test]
fn timeline_page_in_chromium_shows_the_night_and_keeps_hostile_text_inert() {
    let night = night();
    let dir = tempfile::tempdir().unwrap();
    let now = at("2026-02-14T07:00:00Z");
    let mut params = std::collections::BTreeMap::new();
    params.insert("since".to_string(), "12h".to_string());
    let query = TimelineQuery::from_params(&params, now).unwrap();
    let tasks: Vec<Task> = night.tasks.iter().map(|(t, _)| t.clone()).collect();
    // A host alone: its own records, as its ledger holds them.
    let records: Vec<FleetRecord> = night
        .records
        .iter()
        .map(|record| FleetRecord {
            host: "db1".into(),
            record: record.clone(),
        })
        .collect();
    let arrivals = received_by_db1(&night.arrivals);
    let html = web::timeline_page(&query, now, &records, &arrivals, &tasks);
    let path = write_page(dir.path(), "timeline.html", &html);

    let dom = chromium_dom(&file_url(&path));
    assert!(dom.contains("<ol id=\"timeline\">"), "{dom}");
    assert!(dom.contains("<form id=\"filters\""), "{dom}");
    assert!(dom.contains("<ul id=\"summary\">"), "{dom}");
    for (class, n) in [
        // One row per alert: the repeat, the task and the runbook's outcome are folded in.
        ("entry kind-alert", 2),
        ("entry kind-task", 0),
        ("entry kind-session", 2),
        ("entry kind-call", 2),
        ("entry kind-call veto is-deny", 1),
        ("entry kind-dispatch", 0),
        ("entry kind-sweep", 2),
    ] {
        assert_eq!(
            dom.matches(&format!("class=\"{class}\"")).count(),
            n,
            "{class}\n{dom}"
        );
    }
    assert!(
        dom.contains(
            "data-verdict=\"deny\" data-host=\"prod-worker-01\" data-actor=\"claude-code\""
        ),
        "{dom}"
    );
    assert!(
        dom.contains("<li data-count=\"calls\"><b>3</b> tool calls</li>"),
        "{dom}"
    );
    assert!(
        dom.contains("kept container pg-replica-test</span>: <span class=\"kept-why\">keep label nightwatch.keep=true"),
        "a kept item is headlined as kept, with why: {dom}"
    );
    assert!(
        dom.contains("data-disposition=\"deduplicated\""),
        "the repeat is folded into its alert's row: {dom}"
    );
    assert!(
        dom.contains("<li data-count=\"deny\" class=\"v-deny\"><b>1</b> denied</li>"),
        "{dom}"
    );
    assert!(
        dom.contains(&format!("href=\"/sessions/{SESSION}\"")),
        "{dom}"
    );
    assert!(
        dom.contains(&format!("href=\"/alerts/{}\"", night.alert_id)),
        "{dom}"
    );
    assert!(
        dom.contains("data-host=\"db9&quot; onmouseover=&quot;alert(2)\""),
        "{dom}"
    );
    assert_hostile_text_is_inert(&dom);

    let png = dir.path().join("timeline.png");
    chromium_screenshot(&file_url(&path), &png);
    assert_png(&png);
    keep_screenshot(&png);
}

#[test]
fn session_page_in_chromium_reads_like_a_runbook() {
    let night = night();
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<FleetRecord> = night
        .records
        .iter()
        .filter(|r| r.session_id.as_deref() == Some(SESSION))
        .map(|record| FleetRecord {
            host: "db1".into(),
            record: record.clone(),
        })
        .collect();
    let path = write_page(
        dir.path(),
        "session.html",
        &web::session_page(SESSION, &records, at("2026-02-14T07:00:00Z")),
    );

    let dom = chromium_dom(&file_url(&path));
    assert!(dom.contains("<ol id=\"steps\">"), "{dom}");
    // Every host numbers its own records: each link names the host whose ledger holds it.
    assert!(dom.contains("<dd id=\"recorded-on\">db1</dd>"), "{dom}");
    assert!(
        dom.contains("href=\"/api/records/r") && dom.matches("?host=db1\"").count() >= 3,
        "{dom}"
    );
    assert_eq!(dom.matches("<li class=\"step").count(), 3, "{dom}");
    assert!(
        dom.contains("<li class=\"step veto is-deny\" id=\"step-3\" data-verdict=\"deny\">"),
        "{dom}"
    );
    assert!(dom.contains("Denied: it did not run"), "{dom}");
    assert!(
        dom.contains("$ du -xsh /var/log/* | sort -h | tail -5"),
        "{dom}"
    );
    assert!(dom.contains("6.8G\t/var/log/app"), "{dom}");
    assert!(
        dom.contains("<pre class=\"stderr\">du: cannot read directory '/var/log/private'"),
        "{dom}"
    );
    assert!(
        dom.contains("<span class=\"exit fail\">exit 1</span>"),
        "{dom}"
    );
    assert!(
        dom.contains("<dt>duration</dt><dd id=\"duration\">4 min 36 s</dd>"),
        "{dom}"
    );

    let png = dir.path().join("session.png");
    chromium_screenshot(&file_url(&path), &png);
    assert_png(&png);
    keep_screenshot(&png);
}

/// `arrivals` as a host alone, db1, received them.
fn received_by_db1(arrivals: &[AlertEvent]) -> Vec<FleetArrival> {
    arrivals
        .iter()
        .map(|arrival| FleetArrival {
            host: "db1".into(),
            arrival: arrival.clone(),
        })
        .collect()
}

#[test]
fn alert_page_in_chromium_follows_the_alert_to_resolution() {
    let night = night();
    let dir = tempfile::tempdir().unwrap();
    let arrivals: Vec<AlertEvent> = night
        .arrivals
        .iter()
        .filter(|a| a.alert_id == night.alert_id)
        .cloned()
        .collect();
    let records: Vec<FleetRecord> = night
        .records
        .iter()
        .filter(|r| r.context.alert_id.as_deref() == Some(night.alert_id.as_str()))
        .map(|record| FleetRecord {
            host: "db1".into(),
            record: record.clone(),
        })
        .collect();
    let now = at("2026-02-14T07:00:00Z");
    let html = web::alert_page(
        &night.alert_id,
        &received_by_db1(&arrivals),
        &night.tasks,
        &records,
        now,
    );
    let path = write_page(dir.path(), "alert.html", &html);

    let dom = chromium_dom(&file_url(&path));
    assert!(dom.contains("<table id=\"arrivals\">"), "{dom}");
    assert!(dom.contains("<div id=\"tasks\">"), "{dom}");
    assert!(dom.contains("<table id=\"records\">"), "{dom}");
    assert!(dom.contains("data-disposition=\"routed\""), "{dom}");
    assert!(dom.contains("data-disposition=\"deduplicated\""), "{dom}");
    assert!(dom.contains("running → <b>done</b>"), "{dom}");
    assert!(
        dom.contains("<th scope=\"row\">runbook</th><td>disk-cleanup</td>"),
        "{dom}"
    );
    assert!(
        dom.contains(&format!("href=\"/sessions/{SESSION}\"")),
        "{dom}"
    );
    assert_eq!(
        dom.matches("<tr class=\"record").count(),
        records.len(),
        "{dom}"
    );

    let png = dir.path().join("alert.png");
    chromium_screenshot(&file_url(&path), &png);
    assert_png(&png);
    keep_screenshot(&png);

    // The hostile alert's own page.
    let hostile: Vec<AlertEvent> = night
        .arrivals
        .iter()
        .filter(|a| a.alert_id == "alert_0bad00")
        .cloned()
        .collect();
    let path = write_page(
        dir.path(),
        "hostile.html",
        &web::alert_page("alert_0bad00", &received_by_db1(&hostile), &[], &[], now),
    );
    assert_hostile_text_is_inert(&chromium_dom(&file_url(&path)));
}

#[test]
fn the_dom_checks_catch_markup_that_escaped_escaping() {
    let inert = "<!DOCTYPE html><html><head><title>x</title></head><body><p>&lt;script&gt;\
        document.title='pwned'&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</p>\
        <li data-host=\"db9&quot; onmouseover=&quot;alert(2)\">db9\" onmouseover=\"x</li>";
    assert_hostile_text_is_inert(inert);
    for broken in [
        format!("{inert}<script>alert(1)</script>"),
        format!("{inert}<img src=\"x\" onerror=\"alert(1)\">"),
        format!("{inert}<li data-host=\"db9\" onmouseover=\"alert(2)\">"),
    ] {
        let caught = std::panic::catch_unwind(|| assert_hostile_text_is_inert(&broken));
        assert!(caught.is_err(), "not caught: {broken}");
    }
}

/// With `NIGHTWATCH_KEEP_SCREENSHOTS=<dir>`, copies a screenshot and the page beside it
/// (`x.png`, `x.html`) there, for a person to look at.
fn keep_screenshot(png: &Path) {
    if let Some(dir) = std::env::var_os("NIGHTWATCH_KEEP_SCREENSHOTS") {
        for file in [png.to_path_buf(), png.with_extension("html")] {
            let dest = Path::new(&dir).join(file.file_name().unwrap());
            std::fs::copy(&file, &dest)
                .unwrap_or_else(|e| panic!("copy {} to {}: {e}", file.display(), dest.display()));
        }
    }
}
