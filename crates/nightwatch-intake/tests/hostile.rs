//! Bodies nobody should send. Each must come back as `Ok` or a reason, never a panic or a hang.

use std::collections::BTreeMap;

use nightwatch_intake::{
    GenericMapping, Status, parse_alertmanager, parse_generic, parse_uptime_kuma,
};
use proptest::prelude::*;

const CONTENT_TYPES: &[Option<&str>] = &[
    None,
    Some(""),
    Some(";"),
    Some("application/json"),
    Some("APPLICATION/JSON; charset=\"utf-8"),
    Some("text/plain"),
    Some("image/png"),
    Some("application/x-www-form-urlencoded"),
    Some("multipart/form-data"),
    Some("multipart/form-data; boundary="),
    Some("multipart/form-data; boundary=X"),
    Some("multipart/form-data; boundary=X; boundary=Y"),
    Some("multipart/form-data; boundary=\"X"),
    Some("multipart/form-data; boundary=\"\\"),
];

fn corpus() -> Vec<Vec<u8>> {
    let deep_array = "[".repeat(100_000);
    let deep_object = "{\"a\":".repeat(50_000);
    let deep_heartbeat = format!(
        "{{\"msg\":\"x\",\"heartbeat\":{}1{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let mut many = String::from(r#"{"version":"4","alerts":["#);
    for i in 0..10_000 {
        if i > 0 {
            many.push(',');
        }
        many.push_str(&format!(
            r#"{{"status":"firing","labels":{{"i":"{i}"}},"startsAt":"2026-02-14T03:16:30Z","endsAt":"0001-01-01T00:00:00Z"}}"#
        ));
    }
    many.push_str("]}");
    let texts: Vec<String> = vec![
        String::new(),
        " \r\n\t".into(),
        "{".into(),
        r#"{"version":"4","alerts":[{"status":"firing","labels":{"a":"b"#.into(),
        r#"{"version":"4","alerts":null}"#.into(),
        r#"{"version":4,"alerts":[]}"#.into(),
        r#"{"version":"4","alerts":[null,1,"x",[],{}]}"#.into(),
        r#"{"version":"4","alerts":[{"status":"resolved","labels":[1],"annotations":"x","startsAt":1e999,"endsAt":"99999-01-01T00:00:00Z","fingerprint":7}]}"#.into(),
        r#"{"version":"4","alerts":[{"status":"firing","startsAt":"-009999-01-01T00:00:00Z","endsAt":"+009999-12-31T23:59:59.999999999Z"}]}"#.into(),
        r#"{"msg":null,"heartbeat":null,"monitor":null}"#.into(),
        r#"{"msg":"x","heartbeat":{"status":1e308,"time":"9999-99-99 99:99:99.999","lastDownTime":5},"monitor":{"id":1e400}}"#.into(),
        r#"{"msg":"x","heartbeat":{"status":-1,"time":"2026-02-14 03:17:00.123456789123"},"monitor":{"id":123456789012345678901234567890,"tags":[null,{"name":1},{"name":"a","value":{"b":[]}}]}}"#.into(),
        r#"{"msg":"x","heartbeat":[],"monitor":"m"}"#.into(),
        "msg=%&heartbeat=%zz&monitor=%7B".into(),
        "msg=&heartbeat=undefined&monitor=null".into(),
        "[".repeat(3) + "🔴 Down]",
        "[🔴 Down][✅ Up][][".into(),
        "--X".into(),
        "--X\r\n".into(),
        "--X\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n{}".into(),
        "--X\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\n{}\r\n--X--".into(),
        "--X\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n{\"msg\":\"a\"}\r\n--X\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n{\"msg\":\"b\"}\r\n--X--".into(),
        "--X\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\nnot json\r\n--X--".into(),
        "--X\r\nContent-Disposition: form-data; name=\"data\"\r\n".into(),
        "--X--X--X\n--X\n\n--X--".into(),
        "0".repeat(100_000),
        format!("[{}]", "1".repeat(10_000)),
        deep_array,
        deep_object,
        deep_heartbeat,
        many,
    ];
    let mut bodies: Vec<Vec<u8>> = texts.into_iter().map(String::into_bytes).collect();
    bodies.push(vec![0xff, 0xfe, 0x00]);
    bodies.push(b"{\"msg\":\"\xc3\x28\"}".to_vec());
    bodies.push(
        b"--X\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n\xff\r\n--X--".to_vec(),
    );
    bodies
}

fn mapping() -> GenericMapping {
    serde_json::from_str(r#"{"identity":"/a/0","status":"/s","labels":"/l","title":"/t"}"#).unwrap()
}

#[test]
fn hostile_bodies_never_panic() {
    let queries = [
        None,
        Some(""),
        Some("?"),
        Some("msg=%"),
        Some("heartbeat={"),
    ];
    for body in corpus() {
        for content_type in CONTENT_TYPES {
            let _ = parse_alertmanager(&body, *content_type);
            for query in queries {
                let _ = parse_uptime_kuma(&body, *content_type, query);
            }
        }
        let _ = parse_generic(&body, &mapping());
    }
}

#[test]
fn ten_thousand_alerts_all_arrive() {
    // The last text in the corpus is the 10k-alert group.
    let body = corpus()
        .into_iter()
        .rfind(|b| b.starts_with(br#"{"version""#))
        .unwrap();
    let alerts = parse_alertmanager(&body, Some("application/json")).unwrap();
    assert_eq!(alerts.len(), 10_000);
    assert!(
        alerts
            .iter()
            .all(|a| a.status == Status::Firing && a.ends_at_ms.is_none())
    );
    let distinct: BTreeMap<_, _> = alerts.iter().map(|a| (&a.identity, ())).collect();
    assert_eq!(distinct.len(), 10_000);
}

#[test]
fn multipart_boundary_problems_are_refused() {
    let body =
        b"--X\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n{\"msg\":\"a\"}\r\n--X--";
    for content_type in [
        "multipart/form-data",
        "multipart/form-data; boundary=",
        "multipart/form-data; boundary=X; boundary=Y",
        "multipart/form-data; boundary=Z",
    ] {
        assert!(
            parse_uptime_kuma(body, Some(content_type), None).is_err(),
            "{content_type}"
        );
    }
    assert!(parse_uptime_kuma(body, Some("multipart/form-data; boundary=X"), None).is_ok());
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = "[".repeat(100_000).into_bytes();
    let err = parse_alertmanager(&deep, None).unwrap_err();
    assert!(err.to_string().starts_with("not JSON: "), "{err}");
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..512),
        content_type in proptest::option::of("[a-z/+;= \"\\\\-]{0,40}"),
        query in proptest::option::of("[a-z=&%0-9A-F{}\"]{0,40}"),
    ) {
        let _ = parse_alertmanager(&body, content_type.as_deref());
        let _ = parse_uptime_kuma(&body, content_type.as_deref(), query.as_deref());
        let _ = parse_generic(&body, &mapping());
    }

    #[test]
    fn mutated_real_payloads_never_panic(
        pick in 0usize..4,
        cut in any::<proptest::sample::Index>(),
        byte in any::<u8>(),
        ct in proptest::sample::select(CONTENT_TYPES.to_vec()),
    ) {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/payloads/");
        let file = ["alertmanager/firing.json", "alertmanager/resolved.json", "uptime-kuma/down.json", "uptime-kuma/up.json"][pick];
        let mut body = std::fs::read(format!("{dir}{file}")).unwrap();
        let at = cut.index(body.len());
        body[at] = byte;
        let _ = parse_alertmanager(&body, ct);
        let _ = parse_uptime_kuma(&body, ct, None);
        body.truncate(at);
        let _ = parse_alertmanager(&body, ct);
        let _ = parse_uptime_kuma(&body, ct, None);
    }

    #[test]
    fn multipart_shaped_bodies_never_panic(
        tokens in proptest::collection::vec(proptest::sample::select(vec![
            "--X", "--", "X", "\r\n", "\n", "\r", "Content-Disposition: form-data; name=\"data\"",
            "name=data", ";", ":", "{\"msg\":\"m\"}", "{", "\"", "\\",
        ]), 0..40),
    ) {
        let body = tokens.concat();
        let _ = parse_uptime_kuma(body.as_bytes(), Some("multipart/form-data; boundary=X"), None);
        let _ = parse_uptime_kuma(body.as_bytes(), Some("application/x-www-form-urlencoded"), Some(&body));
    }

    #[test]
    fn alertmanager_identity_ignores_label_order(
        labels in proptest::collection::btree_map("[a-z_]{1,8}", "[ -~]{0,12}", 0..8),
        seed in any::<u64>(),
    ) {
        let mut pairs: Vec<_> = labels.iter().collect();
        // Reorder deterministically from the seed.
        let len = pairs.len().max(1);
        pairs.rotate_left((seed as usize) % len);
        if seed % 2 == 0 { pairs.reverse(); }
        let object = |pairs: &[(&String, &String)]| {
            let inner: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), serde_json::to_string(v).unwrap()))
                .collect();
            format!(r#"{{"version":"4","alerts":[{{"status":"firing","labels":{{{}}}}}]}}"#, inner.join(","))
        };
        let sorted: Vec<_> = labels.iter().collect();
        let a = parse_alertmanager(object(&sorted).as_bytes(), None).unwrap();
        let b = parse_alertmanager(object(&pairs).as_bytes(), None).unwrap();
        prop_assert_eq!(&a[0].identity, &b[0].identity);
        prop_assert!(a[0].identity.starts_with("sha256:"));
    }
}
