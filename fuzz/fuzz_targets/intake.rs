//! Any request a monitoring sender (or anyone on the network) can send must parse or be
//! refused with a reason: never a panic, and a parsed alert always has an identity, so the
//! daemon can key its task and its records.
//!
//! The first byte picks the endpoint and content type; the rest is the body (and, for the
//! Uptime Kuma GET shape, also the query).

#![no_main]

use libfuzzer_sys::fuzz_target;
use nightwatch_intake::{GenericMapping, parse_alertmanager, parse_generic, parse_uptime_kuma};

const CONTENT_TYPES: [Option<&str>; 6] = [
    Some("application/json"),
    Some("application/json; charset=utf-8"),
    Some("multipart/form-data; boundary=X"),
    Some("application/x-www-form-urlencoded"),
    Some("text/plain"),
    None,
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let content_type = CONTENT_TYPES[usize::from(selector >> 4) % CONTENT_TYPES.len()];
    let alerts = match selector % 4 {
        0 => parse_alertmanager(body, content_type),
        1 => parse_uptime_kuma(body, content_type, None).map(|a| vec![a]),
        2 => {
            let query = String::from_utf8_lossy(body);
            parse_uptime_kuma(b"", None, Some(&query)).map(|a| vec![a])
        }
        _ => {
            let mapping = GenericMapping {
                name: "fuzz".into(),
                identity: "/id".into(),
                status: Some("/state".into()),
                firing_values: Vec::new(),
                resolved_values: Vec::new(),
                title: Some("/title".into()),
                message: None,
                labels: Some("/labels".into()),
            };
            parse_generic(body, &mapping).map(|a| vec![a])
        }
    };
    if let Ok(alerts) = alerts {
        for alert in alerts {
            assert!(!alert.identity.is_empty(), "an alert without an identity");
        }
    } else if let Err(error) = alerts {
        assert!(!error.to_string().is_empty(), "a refusal without a reason");
    }
});
