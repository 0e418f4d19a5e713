//! What a client of an app under idle control sends (any user agent, path, method, address,
//! at any time) and what `/proc/PID/net/tcp` holds must be read without a panic; a robot's
//! reason, and a refusal's, stays short enough for a record.
//!
//! The bytes are split at NUL into user agent, path and method; the first eight bytes are the
//! request's time, the next sixteen its client address. The whole input is also read as a
//! kernel socket table.

#![no_main]

use libfuzzer_sys::fuzz_target;
use nightwatch_idle::{Admission, Classifier, IdleFile, Phase, Request, Traffic, admission};
use std::net::IpAddr;
use std::sync::OnceLock;

const APP: &str = "apps:
  shop:
    container: shop
    listen: 127.0.0.1:8080
    upstream: 127.0.0.1:18080
    idle_after: 20s
    ready: { http: /healthz }
    health_paths: [/status, \"/api/health*\"]
    robot_networks: [10.0.0.0/8, \"2001:db8::/32\"]
    robot_agents: [internal-poller]
";

fn app() -> &'static nightwatch_idle::AppSpec {
    static APP_SPEC: OnceLock<nightwatch_idle::AppSpec> = OnceLock::new();
    APP_SPEC.get_or_init(|| {
        let file: IdleFile = yaml_serde::from_str(APP).expect("the fuzz app parses");
        file.check().expect("the fuzz app is valid").remove(0)
    })
}

fuzz_target!(|data: &[u8]| {
    let _ = nightwatch_idle::sockets::established_on(&String::from_utf8_lossy(data), &[5432, 80]);
    if data.len() < 24 {
        return;
    }
    let (head, rest) = data.split_at(24);
    let at_ms = u64::from_le_bytes(head[..8].try_into().unwrap());
    let client = IpAddr::from(<[u8; 16]>::try_from(&head[8..24]).unwrap());
    let text = String::from_utf8_lossy(rest);
    let mut parts = text.split('\0');
    let agent = parts.next().unwrap_or("");
    let path = parts.next().unwrap_or("/");
    let method = parts.next().unwrap_or("GET");
    let mut classifier = Classifier::new();
    for step in 0..5u64 {
        let request = Request {
            method,
            path,
            user_agent: Some(agent),
            client,
            at_ms: at_ms.wrapping_add(step.wrapping_mul(at_ms >> 40)),
        };
        let traffic = classifier.classify(app(), &request);
        if let Traffic::Robot { why, .. } = &traffic {
            assert!(
                why.len() < 200,
                "a reason too long for a record: {}",
                why.len()
            );
        }
        // What it gets in every phase: a refusal's reason stays short enough for a record.
        for phase in Phase::ALL {
            if let Admission::Refused(r) = admission(app(), phase, &traffic, method, path) {
                assert!(
                    r.why.len() < 800,
                    "a refusal too long for a record: {}",
                    r.why.len()
                );
            }
        }
    }
});
