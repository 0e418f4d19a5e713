//! The real request bodies in `fixtures/payloads` (the shared payloads, kept in the repository), parsed field by field.

use std::fs;
use std::path::PathBuf;

use nightwatch_intake::{
    Alert, GenericMapping, IntakeError, Source, Status, parse_alertmanager, parse_generic,
    parse_uptime_kuma,
};

const PAYLOADS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/payloads");

fn payload(name: &str) -> Vec<u8> {
    let path = PathBuf::from(PAYLOADS).join(name);
    fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn ms(rfc3339: &str) -> i64 {
    rfc3339.parse::<jiff::Timestamp>().unwrap().as_millisecond()
}

/// The files describe their bodies in prose; these pull the body out.
fn form_data_body(line_end: &str) -> Vec<u8> {
    let text = String::from_utf8(payload("uptime-kuma/form-data.txt")).unwrap();
    let start = text.find("--X\n").expect("example starts at --X");
    let lines: Vec<&str> = text[start..].trim_end().lines().collect();
    lines.join(line_end).into_bytes()
}

fn custom_template_body() -> Vec<u8> {
    let text = String::from_utf8(payload("uptime-kuma/custom-template.txt")).unwrap();
    let line = text.lines().find(|l| l.starts_with('{')).unwrap();
    line.as_bytes().to_vec()
}

fn kuma_json(name: &str) -> Alert {
    parse_uptime_kuma(&payload(name), Some("application/json"), None).unwrap()
}

#[test]
fn every_payload_file_has_a_test() {
    for folder in ["uptime-kuma", "alertmanager"] {
        let mut names: Vec<String> = fs::read_dir(PathBuf::from(PAYLOADS).join(folder))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let known: &[&str] = match folder {
            "uptime-kuma" => &[
                "cert-expiry.json",
                "custom-template.txt",
                "down.json",
                "form-data.txt",
                "test-notification.json",
                "up.json",
            ],
            _ => &["firing.json", "resolved.json"],
        };
        assert_eq!(names, known, "a new payload in {folder}/ needs a test here");
    }
}

#[test]
fn alertmanager_firing_alert_has_not_ended() {
    let alerts = parse_alertmanager(
        &payload("alertmanager/firing.json"),
        Some("application/json"),
    )
    .unwrap();
    assert_eq!(alerts.len(), 1);
    let alert = &alerts[0];
    assert_eq!(alert.source, Source::Alertmanager);
    assert_eq!(alert.status, Status::Firing);
    assert_eq!(alert.identity, "c2a1f0e9b3d4a5b6");
    assert_eq!(alert.title, "Disk above 85% on prod-worker-01");
    assert_eq!(alert.message, "/ is 86% full");
    assert_eq!(alert.labels["alertname"], "HostDiskFilling");
    assert_eq!(alert.labels["instance"], "prod-worker-01.tailnet:9100");
    assert_eq!(alert.labels["runbook"], "disk-cleanup");
    assert_eq!(alert.labels.len(), 5);
    assert_eq!(alert.annotations["description"], "/ is 86% full");
    assert_eq!(alert.starts_at_ms, Some(ms("2026-02-14T03:16:30Z")));
    assert_eq!(alert.ends_at_ms, None, "0001-01-01 means not ended");
    assert_eq!(
        alert.group_key.as_deref(),
        Some("{}:{alertname=\"HostDiskFilling\"}")
    );
    assert_eq!(alert.receiver.as_deref(), Some("nightwatch"));
    assert!(
        alert
            .link
            .as_deref()
            .unwrap()
            .starts_with("http://prometheus:9090/")
    );
    assert_eq!(alert.raw["fingerprint"], "c2a1f0e9b3d4a5b6");
}

#[test]
fn alertmanager_resolution_finds_its_firing_alert() {
    let firing = parse_alertmanager(&payload("alertmanager/firing.json"), None).unwrap();
    let resolved = parse_alertmanager(
        &payload("alertmanager/resolved.json"),
        Some("application/json; charset=utf-8"),
    )
    .unwrap();
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].status, Status::Resolved);
    assert_eq!(resolved[0].identity, firing[0].identity);
    assert_eq!(resolved[0].labels, firing[0].labels);
    assert_eq!(resolved[0].message, "/ is 41% full");
    assert_eq!(resolved[0].starts_at_ms, Some(ms("2026-02-14T03:16:30Z")));
    assert_eq!(resolved[0].ends_at_ms, Some(ms("2026-02-14T03:22:00Z")));
}

#[test]
fn alertmanager_without_fingerprint_hashes_labels_for_both_states() {
    let strip = |name: &str| {
        let mut doc: serde_json::Value = serde_json::from_slice(&payload(name)).unwrap();
        doc["alerts"][0]
            .as_object_mut()
            .unwrap()
            .remove("fingerprint");
        serde_json::to_vec(&doc).unwrap()
    };
    let firing = parse_alertmanager(&strip("alertmanager/firing.json"), None).unwrap();
    let resolved = parse_alertmanager(&strip("alertmanager/resolved.json"), None).unwrap();
    assert!(firing[0].identity.starts_with("sha256:"));
    assert_eq!(firing[0].identity, resolved[0].identity);
}

#[test]
fn alertmanager_group_keeps_every_alert_in_order() {
    let mut doc: serde_json::Value =
        serde_json::from_slice(&payload("alertmanager/firing.json")).unwrap();
    let resolved: serde_json::Value =
        serde_json::from_slice(&payload("alertmanager/resolved.json")).unwrap();
    let mut other = resolved["alerts"][0].clone();
    other["fingerprint"] = "0000000000000001".into();
    doc["alerts"].as_array_mut().unwrap().push(other);
    doc["somethingNew"] = serde_json::json!({"added": "in a later release"});
    let alerts = parse_alertmanager(&serde_json::to_vec(&doc).unwrap(), None).unwrap();
    let states: Vec<_> = alerts
        .iter()
        .map(|a| (a.status, a.identity.as_str()))
        .collect();
    assert_eq!(
        states,
        [
            (Status::Firing, "c2a1f0e9b3d4a5b6"),
            (Status::Resolved, "0000000000000001")
        ]
    );
}

#[test]
fn alertmanager_refuses_other_versions_by_number() {
    let body = String::from_utf8(payload("alertmanager/firing.json"))
        .unwrap()
        .replace("\"version\": \"4\"", "\"version\": \"3\"");
    let err = parse_alertmanager(body.as_bytes(), None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "webhook version 3 is not supported; nightwatch reads Alertmanager webhook version 4"
    );
}

#[test]
fn uptime_kuma_down_is_firing_with_tags_and_utc_time() {
    let alert = kuma_json("uptime-kuma/down.json");
    assert_eq!(alert.source, Source::UptimeKuma);
    assert_eq!(alert.status, Status::Firing);
    assert_eq!(alert.identity, "7");
    assert_eq!(alert.monitor.as_deref(), Some("prod-worker-01 disk"));
    assert_eq!(alert.title, "prod-worker-01 disk is down");
    assert_eq!(
        alert.message,
        "[prod-worker-01 disk] [🔴 Down] Disk usage 86% exceeds 85%"
    );
    assert_eq!(alert.tags, ["runbook:disk-cleanup", "env:prod"]);
    assert_eq!(alert.labels["runbook"], "disk-cleanup");
    assert_eq!(alert.labels["env"], "prod");
    assert_eq!(
        alert.annotations["heartbeat_msg"],
        "Disk usage 86% exceeds 85%"
    );
    assert_eq!(alert.annotations["hostname"], "prod-worker-01.tailnet");
    assert_eq!(alert.starts_at_ms, Some(ms("2026-02-14T03:17:00.123Z")));
    assert_eq!(alert.ends_at_ms, None);
    assert_eq!(alert.raw["monitor"]["interval"], 60);
}

#[test]
fn uptime_kuma_up_resolves_the_same_monitor() {
    let down = kuma_json("uptime-kuma/down.json");
    let up = kuma_json("uptime-kuma/up.json");
    assert_eq!(up.status, Status::Resolved);
    assert_eq!(up.identity, down.identity);
    assert_eq!(up.title, "prod-worker-01 disk is up");
    assert_eq!(up.tags, ["runbook:disk-cleanup"]);
    assert_eq!(up.starts_at_ms, Some(ms("2026-02-14T03:17:00.123Z")));
    assert_eq!(up.ends_at_ms, Some(ms("2026-02-14T03:21:22.480Z")));
}

#[test]
fn uptime_kuma_test_notification_is_a_test() {
    let alert = kuma_json("uptime-kuma/test-notification.json");
    assert_eq!(alert.status, Status::Test);
    assert_eq!(alert.message, "nightwatch Testing");
    assert_eq!(alert.monitor, None);
    assert!(alert.identity.starts_with("sha256:"));
    assert_eq!(alert.starts_at_ms, None);
}

#[test]
fn uptime_kuma_certificate_expiry_fires_and_keeps_its_identity_as_days_pass() {
    let alert = kuma_json("uptime-kuma/cert-expiry.json");
    assert_eq!(alert.status, Status::Firing);
    assert_eq!(
        alert.message,
        "[web-1 https][https://web-1.example/] Certificate will expire in 5 days"
    );
    assert_eq!(alert.monitor.as_deref(), Some("web-1 https"));
    assert!(alert.identity.starts_with("sha256:"));
    let tomorrow = String::from_utf8(payload("uptime-kuma/cert-expiry.json"))
        .unwrap()
        .replace("5 days", "4 days");
    let next = parse_uptime_kuma(tomorrow.as_bytes(), Some("application/json"), None).unwrap();
    assert_eq!(next.identity, alert.identity);
}

#[test]
fn uptime_kuma_form_data_reads_the_data_field() {
    let json = kuma_json("uptime-kuma/down.json");
    for line_end in ["\r\n", "\n"] {
        let alert = parse_uptime_kuma(
            &form_data_body(line_end),
            Some("multipart/form-data; boundary=X"),
            None,
        )
        .unwrap();
        assert_eq!(alert.status, Status::Firing);
        assert_eq!(alert.identity, json.identity);
        assert_eq!(alert.message, json.message);
        assert_eq!(alert.starts_at_ms, json.starts_at_ms);
        assert_eq!(alert.monitor, json.monitor);
    }
}

#[test]
fn uptime_kuma_custom_template_reads_status_and_monitor_from_the_text() {
    let body = custom_template_body();
    let alert = parse_uptime_kuma(&body, Some("application/x-www-form-urlencoded"), None).unwrap();
    assert_eq!(alert.status, Status::Firing);
    assert_eq!(alert.message, String::from_utf8(body.clone()).unwrap());
    assert_eq!(alert.monitor.as_deref(), Some("prod-worker-01 disk"));
    assert_eq!(alert.identity, "name:prod-worker-01 disk");
    assert_eq!(
        alert.raw["Title"],
        "Uptime Kuma Alert - prod-worker-01 disk"
    );
    // The same template when the monitor comes back up.
    let up = String::from_utf8(body)
        .unwrap()
        .replace("[🔴 Down]", "[✅ Up]");
    let resolved = parse_uptime_kuma(up.as_bytes(), None, None).unwrap();
    assert_eq!(resolved.status, Status::Resolved);
    assert_eq!(resolved.identity, alert.identity);
}

#[test]
fn uptime_kuma_custom_template_with_kuma_fields_uses_them() {
    let down = payload("uptime-kuma/down.json");
    let alert = parse_uptime_kuma(&down, Some("application/x-www-form-urlencoded"), None).unwrap();
    assert_eq!(alert, kuma_json("uptime-kuma/down.json"));
    let plain = parse_uptime_kuma(b"disk is full on web-1", Some("text/plain"), None).unwrap();
    assert_eq!(plain.status, Status::Firing);
    assert_eq!(plain.message, "disk is full on web-1");
    assert_eq!(plain.title, "disk is full on web-1");
    let encoded = parse_uptime_kuma(
        b"msg=%5Bweb%5D+%5B%F0%9F%94%B4+Down%5D+timeout",
        Some("application/x-www-form-urlencoded"),
        None,
    )
    .unwrap();
    assert_eq!(encoded.message, "[web] [🔴 Down] timeout");
    assert_eq!(encoded.identity, "name:web");
}

#[test]
fn uptime_kuma_get_query_carries_the_same_notification() {
    let doc: serde_json::Value = serde_json::from_slice(&payload("uptime-kuma/down.json")).unwrap();
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    let query = format!(
        "?msg={}&heartbeat={}&monitor={}",
        encode(doc["msg"].as_str().unwrap()),
        encode(&doc["heartbeat"].to_string()),
        encode(&doc["monitor"].to_string()),
    );
    let alert = parse_uptime_kuma(b"", None, Some(&query)).unwrap();
    let json = kuma_json("uptime-kuma/down.json");
    assert_eq!(alert.identity, json.identity);
    assert_eq!(alert.status, Status::Firing);
    assert_eq!(alert.message, json.message);
    assert_eq!(alert.tags, json.tags);
    assert_eq!(alert.starts_at_ms, json.starts_at_ms);

    let test = parse_uptime_kuma(b"", None, Some("msg=nightwatch+Testing&heartbeat=null")).unwrap();
    assert_eq!(test.status, Status::Test);
}

#[test]
fn uptime_kuma_unknown_fields_are_ignored() {
    let body = br#"{"msg":"m is fine","heartbeat":{"status":1,"brandNew":[1,2]},"monitor":{"id":"abc","name":"m","futureField":{}},"extra":true}"#;
    let alert = parse_uptime_kuma(body, Some("application/json"), None).unwrap();
    assert_eq!(alert.identity, "abc");
    assert_eq!(alert.status, Status::Resolved);
}

#[test]
fn errors_say_what_is_wrong() {
    let cases: Vec<(Result<(), IntakeError>, &str)> = vec![
        (
            parse_alertmanager(b"{\"version\":\"4\"}", None).map(drop),
            "missing field alerts",
        ),
        (
            parse_alertmanager(b"{\"version\":\"4\",\"alerts\":null}", None).map(drop),
            "field alerts is null, expected an array",
        ),
        (
            parse_alertmanager(b"{\"alerts\":[]}", None).map(drop),
            "missing field version",
        ),
        (parse_alertmanager(b"", None).map(drop), "body is empty"),
        (
            parse_alertmanager(b"{\"a\":\xff}", None).map(drop),
            "body is not valid UTF-8 (first bad byte at offset 5)",
        ),
        (
            parse_alertmanager(b"{}", Some("text/html")).map(drop),
            "content type \"text/html\" is not supported here; send application/json",
        ),
        (
            parse_alertmanager(br#"{"version":"4","alerts":[{"status":"pending"}]}"#, None)
                .map(drop),
            "field alerts[0].status is \"pending\", expected firing or resolved",
        ),
        (
            parse_uptime_kuma(b"--X--", Some("multipart/form-data"), None).map(drop),
            "multipart body: the content type has no boundary parameter",
        ),
        (
            parse_uptime_kuma(b"{\"msg\": 3}", Some("application/json"), None).map(drop),
            "field msg is a number, expected a string or null",
        ),
        (
            parse_uptime_kuma(b"{}", Some("application/json"), None).map(drop),
            "missing field msg",
        ),
    ];
    for (result, expected) in cases {
        assert_eq!(result.unwrap_err().to_string(), expected);
    }
    let truncated = parse_alertmanager(b"{\"version\":\"4\",\"al", None).unwrap_err();
    assert!(
        truncated.to_string().starts_with("not JSON: "),
        "{truncated}"
    );
}

fn mapping(yaml_like_json: &str) -> GenericMapping {
    serde_json::from_str(yaml_like_json).unwrap()
}

#[test]
fn generic_mapping_reads_pointers() {
    let m = mapping(
        r#"{"name":"grafana","identity":"/rule/uid","status":"/state",
            "firing_values":["alerting"],"resolved_values":["ok"],
            "title":"/rule/title","message":"/text","labels":"/tags"}"#,
    );
    let body = br#"{"rule":{"uid":"abc123","title":"CPU high"},"state":"alerting","text":"cpu 97%","tags":{"host":"web-1","cpu":97}}"#;
    let alert = parse_generic(body, &m).unwrap();
    assert_eq!(alert.source, Source::Generic("grafana".into()));
    assert_eq!(alert.identity, "abc123");
    assert_eq!(alert.status, Status::Firing);
    assert_eq!(alert.title, "CPU high");
    assert_eq!(alert.message, "cpu 97%");
    assert_eq!(alert.labels["cpu"], "97");
    let ok = String::from_utf8(body.to_vec())
        .unwrap()
        .replace("alerting", "ok");
    let resolved = parse_generic(ok.as_bytes(), &m).unwrap();
    assert_eq!(resolved.status, Status::Resolved);
    assert_eq!(resolved.identity, alert.identity);

    let err = parse_generic(br#"{"rule":{"uid":1},"state":"pending"}"#, &m).unwrap_err();
    assert_eq!(
        err.to_string(),
        "field /state is \"pending\", expected one of firing_values [\"alerting\"] or resolved_values [\"ok\"]"
    );
    let err = parse_generic(br#"{"rule":{}}"#, &m).unwrap_err();
    assert_eq!(err.to_string(), "missing field /rule/uid");
}

#[test]
fn generic_mapping_defaults_and_refusals() {
    let m = mapping(r#"{"identity":"/id","status":"/s"}"#);
    let alert = parse_generic(br#"{"id":42,"s":"RESOLVED"}"#, &m).unwrap();
    assert_eq!(alert.identity, "42");
    assert_eq!(alert.status, Status::Resolved);
    assert_eq!(alert.source, Source::Generic("webhook".into()));
    assert!(
        serde_json::from_str::<GenericMapping>(r#"{"identity":"/id","resolve_values":[]}"#)
            .is_err()
    );
    let bad = mapping(r#"{"identity":"id"}"#);
    assert!(
        parse_generic(b"{}", &bad)
            .unwrap_err()
            .to_string()
            .starts_with("mapping: ")
    );
    let object_id = parse_generic(br#"{"id":{"a":1}}"#, &mapping(r#"{"identity":"/id"}"#));
    assert_eq!(
        object_id.unwrap_err().to_string(),
        "field /id is an object, expected a string, number or boolean"
    );
}

#[test]
fn alert_round_trips_through_json() {
    let alert = kuma_json("uptime-kuma/down.json");
    let text = serde_json::to_string(&alert).unwrap();
    let back: Alert = serde_json::from_str(&text).unwrap();
    assert_eq!(back, alert);
    assert!(text.contains("\"source\":\"uptime_kuma\""));
}
