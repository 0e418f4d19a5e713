//! The HTTP channels against real servers on 127.0.0.1, one per test.

mod support;

use nightwatch_notify::{AttemptOutcome, Delivery, Escalation, deliver, deliver_all};
use std::time::Duration;
use support::{Reply, Server, Sleeps, ask, closed_port, env_of, halt, notifier, status};

fn no_env(_: &str) -> Option<String> {
    None
}

fn reasons(delivery: &Delivery) -> Vec<String> {
    delivery
        .attempts
        .iter()
        .filter_map(|a| match &a.outcome {
            AttemptOutcome::Failed { reason, .. } => Some(reason.clone()),
            AttemptOutcome::Delivered { .. } => None,
        })
        .collect()
}

fn failed(delivery: &Delivery, number: usize) -> (String, bool) {
    match &delivery.attempts[number - 1].outcome {
        AttemptOutcome::Failed { reason, retryable } => (reason.clone(), *retryable),
        other => panic!("attempt {number} was {other:?}"),
    }
}

#[test]
fn ntfy_sends_the_text_with_title_priority_tags_and_token() {
    let server = Server::start(vec![status(200, r#"{"id":"x"}"#)]);
    let spec = notifier(&format!(
        "ntfy: {{ url: {:?}, token_env: NTFY_TOKEN, priority: 5, tags: [warning, skull] }}",
        server.url("/ops-alerts")
    ));
    let sleeps = Sleeps::default();
    let env = env_of(&[("NTFY_TOKEN", "tk_secret\n")]);
    let delivery = deliver("oncall-phone", &spec, &ask(), &env, &sleeps.record());

    assert!(delivery.delivered, "{delivery:?}");
    assert_eq!(delivery.notifier, "oncall-phone");
    assert_eq!(delivery.attempts.len(), 1);
    assert_eq!(
        delivery.attempts[0].outcome,
        AttemptOutcome::Delivered { status: 200 }
    );
    let requests = server.requests();
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/ops-alerts");
    assert_eq!(
        request.header("X-Title"),
        Some("nightwatch ask: exec: systemctl restart app")
    );
    assert_eq!(request.header("X-Priority"), Some("5"));
    assert_eq!(request.header("X-Tags"), Some("warning,skull,ask"));
    assert_eq!(request.header("Authorization"), Some("Bearer tk_secret"));
    assert_eq!(
        request.body_text(),
        "what: exec: systemctl restart app\n\
         who: agent claude-code (session abc)\n\
         why: rule no-restarts-at-night: restarts wait for a human\n\
         where: web-1:/srv/app\n\
         when: 2026-02-14T03:17:00Z\n\
         approve: nightwatch approve r1842\n\
         inspect: nightwatch show r1842"
    );
    assert!(sleeps.taken().is_empty());
}

#[test]
fn ntfy_without_priority_pages_halts_at_high_priority_and_sends_no_token() {
    let server = Server::start(vec![status(200, "{}")]);
    let spec = notifier(&format!("ntfy: {{ url: {:?} }}", server.url("/t")));
    let delivery = deliver("phone", &spec, &halt(), &no_env, &|_| {});
    assert!(delivery.delivered, "{delivery:?}");
    let request = &server.requests()[0];
    assert_eq!(request.header("X-Priority"), Some("4"));
    assert_eq!(request.header("X-Tags"), Some("halt"));
    assert_eq!(request.header("Authorization"), None);
}

#[test]
fn ntfy_title_with_non_ascii_is_encoded_not_dropped() {
    let server = Server::start(vec![status(200, "{}")]);
    let spec = notifier(&format!("ntfy: {{ url: {:?} }}", server.url("/t")));
    let escalation = Escalation {
        what: "write: café.txt".into(),
        ..halt()
    };
    let delivery = deliver("phone", &spec, &escalation, &no_env, &|_| {});
    assert!(delivery.delivered, "{delivery:?}");
    let title = server.requests()[0].header("X-Title").map(str::to_owned);
    assert_eq!(
        title.as_deref(),
        Some("=?UTF-8?B?bmlnaHR3YXRjaCBoYWx0OiB3cml0ZTogY2Fmw6kudHh0?=")
    );
}

#[test]
fn slack_posts_text_json_and_ok_means_delivered() {
    let server = Server::start(vec![status(200, "ok")]);
    let spec = notifier("slack: { webhook_url_env: SLACK_WEBHOOK }");
    let env = env_of(&[("SLACK_WEBHOOK", &server.url("/services/T0/B0/xyz"))]);
    let delivery = deliver("team-channel", &spec, &halt(), &env, &|_| {});

    assert!(delivery.delivered, "{delivery:?}");
    let request = &server.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/services/T0/B0/xyz");
    assert_eq!(request.header("Content-Type"), Some("application/json"));
    let body: serde_json::Value = serde_json::from_slice(&request.body).expect("json body");
    let object = body.as_object().expect("an object");
    assert_eq!(object.len(), 1, "only text: {body}");
    let text = body["text"].as_str().expect("text");
    assert!(text.starts_with("*nightwatch halt* (r1842)\n"), "{text}");
    assert!(
        text.contains("*what:* exec: systemctl restart app"),
        "{text}"
    );
    assert!(text.contains("*inspect:* nightwatch show r1842"), "{text}");
}

#[test]
fn slack_200_without_ok_is_a_failure_and_not_retried() {
    let server = Server::start(vec![status(200, "<html>captive portal</html>")]);
    let spec = notifier(&format!(
        "slack: {{ webhook_url: {:?} }}",
        server.url("/hook")
    ));
    let delivery = deliver("team-channel", &spec, &halt(), &no_env, &|_| {});

    assert!(!delivery.delivered);
    assert_eq!(delivery.attempts.len(), 1);
    let (reason, retryable) = failed(&delivery, 1);
    assert!(!retryable);
    assert!(reason.contains("instead of \"ok\""), "{reason}");
    assert!(reason.contains("captive portal"), "{reason}");
}

#[test]
fn slack_error_word_is_in_the_reason() {
    let server = Server::start(vec![status(403, "invalid_token")]);
    let spec = notifier(&format!(
        "slack: {{ webhook_url: {:?} }}",
        server.url("/hook")
    ));
    let delivery = deliver("team-channel", &spec, &halt(), &no_env, &|_| {});
    assert!(!delivery.delivered);
    let (reason, retryable) = failed(&delivery, 1);
    assert!(!retryable);
    assert!(
        reason.contains("403") && reason.contains("invalid_token"),
        "{reason}"
    );
}

#[test]
fn server_errors_are_retried_with_growing_waits_until_delivered() {
    let server = Server::start(vec![
        status(500, "down"),
        status(500, "still down"),
        status(200, "ok"),
    ]);
    let spec = notifier(&format!(
        "webhook: {{ url: {:?} }}\nretry: {{ attempts: 4, initial: 1s, max: 30s }}",
        server.url("/escalations")
    ));
    let sleeps = Sleeps::default();
    let delivery = deliver("incident-bot", &spec, &halt(), &no_env, &sleeps.record());

    assert!(delivery.delivered, "{delivery:?}");
    assert_eq!(delivery.attempts.len(), 3);
    let numbers: Vec<u32> = delivery.attempts.iter().map(|a| a.number).collect();
    assert_eq!(numbers, [1, 2, 3]);
    for n in [1, 2] {
        let (reason, retryable) = failed(&delivery, n);
        assert!(retryable);
        assert!(reason.contains("answered 500"), "{reason}");
    }
    assert_eq!(
        delivery.attempts[2].outcome,
        AttemptOutcome::Delivered { status: 200 }
    );
    let waits = sleeps.taken();
    assert_eq!(waits.len(), 2, "{waits:?}");
    assert!(waits[0] < waits[1], "{waits:?}");
    assert!(waits[0] >= Duration::from_millis(800) && waits[0] <= Duration::from_secs(1));
    assert!(waits[1] >= Duration::from_millis(1600) && waits[1] <= Duration::from_secs(2));
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn not_found_is_tried_once() {
    let server = Server::start(vec![status(404, "no such topic")]);
    let spec = notifier(&format!("ntfy: {{ url: {:?} }}", server.url("/typo")));
    let sleeps = Sleeps::default();
    let delivery = deliver("oncall-phone", &spec, &halt(), &no_env, &sleeps.record());

    assert!(!delivery.delivered);
    assert_eq!(delivery.attempts.len(), 1);
    let (reason, retryable) = failed(&delivery, 1);
    assert!(!retryable);
    assert!(reason.contains("answered 404: no such topic"), "{reason}");
    assert!(sleeps.taken().is_empty());
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn rate_limited_is_retried_after_the_wait_the_server_asked_for() {
    let server = Server::start(vec![
        Reply::Answer(429, vec![("Retry-After", "7")], "slow down"),
        status(200, "{}"),
    ]);
    let spec = notifier(&format!("ntfy: {{ url: {:?} }}", server.url("/t")));
    let sleeps = Sleeps::default();
    let delivery = deliver("oncall-phone", &spec, &halt(), &no_env, &sleeps.record());

    assert!(delivery.delivered, "{delivery:?}");
    assert_eq!(delivery.attempts.len(), 2);
    assert!(failed(&delivery, 1).1);
    assert_eq!(sleeps.taken(), [Duration::from_secs(7)]);
}

#[test]
fn redirect_is_not_followed() {
    let server = Server::start(vec![Reply::Answer(
        301,
        vec![("Location", "https://elsewhere.invalid/x")],
        "",
    )]);
    let spec = notifier(&format!("webhook: {{ url: {:?} }}", server.url("/old")));
    let delivery = deliver("incident-bot", &spec, &halt(), &no_env, &|_| {});
    assert!(!delivery.delivered);
    assert_eq!(delivery.attempts.len(), 1);
    let (reason, retryable) = failed(&delivery, 1);
    assert!(!retryable);
    assert!(reason.contains("redirect"), "{reason}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn refused_connection_is_retried_then_reported() {
    let port = closed_port();
    let spec = notifier(&format!(
        "webhook: {{ url: \"http://127.0.0.1:{port}/x\" }}\nretry: {{ attempts: 3 }}"
    ));
    let sleeps = Sleeps::default();
    let delivery = deliver("incident-bot", &spec, &halt(), &no_env, &sleeps.record());

    assert!(!delivery.delivered);
    assert_eq!(delivery.attempts.len(), 3);
    for n in 1..=3 {
        let (reason, retryable) = failed(&delivery, n);
        assert!(retryable, "{reason}");
        assert!(
            reason.starts_with(&format!("could not reach 127.0.0.1:{port}")),
            "{reason}"
        );
    }
    assert!(
        reasons(&delivery)[0].to_lowercase().contains("refused"),
        "{:?}",
        reasons(&delivery)
    );
    assert_eq!(sleeps.taken().len(), 2);
}

#[test]
fn silent_server_times_out_and_the_timeout_is_recorded() {
    let server = Server::start(vec![Reply::Silence]);
    let spec = notifier(&format!(
        "webhook: {{ url: {:?} }}\ntimeout: 300ms\nretry: {{ attempts: 2, initial: 10ms }}",
        server.url("/hang")
    ));
    let sleeps = Sleeps::default();
    let delivery = deliver("incident-bot", &spec, &halt(), &no_env, &sleeps.record());

    assert!(!delivery.delivered);
    assert_eq!(delivery.attempts.len(), 2);
    for n in 1..=2 {
        let (reason, retryable) = failed(&delivery, n);
        assert!(retryable);
        assert!(reason.contains("did not answer within 300ms"), "{reason}");
        let elapsed = delivery.attempts[n - 1].elapsed_ms;
        assert!((250..3000).contains(&elapsed), "{elapsed}");
    }
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn webhook_body_reads_back_as_the_same_escalation() {
    let server = Server::start(vec![status(204, "")]);
    let spec = notifier(&format!(
        "webhook:\n  url: {:?}\n  headers: {{ X-Source: nightwatch }}\n  headers_env: {{ Authorization: HOOK_AUTH }}",
        server.url("/escalations")
    ));
    let env = env_of(&[("HOOK_AUTH", "Basic c2VjcmV0")]);
    let delivery = deliver("incident-bot", &spec, &ask(), &env, &|_| {});

    assert!(delivery.delivered, "{delivery:?}");
    assert_eq!(
        delivery.attempts[0].outcome,
        AttemptOutcome::Delivered { status: 204 }
    );
    let request = &server.requests()[0];
    assert_eq!(request.header("X-Source"), Some("nightwatch"));
    assert_eq!(request.header("Authorization"), Some("Basic c2VjcmV0"));
    assert_eq!(request.header("Content-Type"), Some("application/json"));
    let sent: Escalation = serde_json::from_slice(&request.body).expect("escalation json");
    assert_eq!(sent, ask());
    let raw: serde_json::Value = serde_json::from_slice(&request.body).expect("json");
    assert_eq!(raw["where"], "web-1:/srv/app");
}

#[test]
fn missing_token_env_fails_without_sending_anything() {
    let server = Server::start(vec![status(200, "{}")]);
    let spec = notifier(&format!(
        "ntfy: {{ url: {:?}, token_env: NTFY_TOKEN }}",
        server.url("/t")
    ));
    let sleeps = Sleeps::default();
    let delivery = deliver("oncall-phone", &spec, &halt(), &no_env, &sleeps.record());

    assert!(!delivery.delivered);
    assert_eq!(delivery.attempts.len(), 1);
    let (reason, retryable) = failed(&delivery, 1);
    assert!(!retryable);
    assert_eq!(
        reason,
        "environment variable NTFY_TOKEN (the ntfy token) is not set"
    );
    assert!(server.requests().is_empty());
    assert!(sleeps.taken().is_empty());
}

#[test]
fn url_env_holding_garbage_fails_without_echoing_it() {
    let spec = notifier("slack: { webhook_url_env: SLACK_WEBHOOK }");
    let env = env_of(&[("SLACK_WEBHOOK", "hooks.slack.com/services/SECRET")]);
    let delivery = deliver("team-channel", &spec, &halt(), &env, &|_| {});
    assert!(!delivery.delivered);
    let (reason, retryable) = failed(&delivery, 1);
    assert!(!retryable);
    assert!(!reason.contains("SECRET"), "{reason}");
    assert!(reason.contains("SLACK_WEBHOOK"), "{reason}");
}

#[test]
fn deliver_all_reports_each_notifier_in_order() {
    let good = Server::start(vec![status(200, "ok")]);
    let gone = Server::start(vec![status(410, "no_service")]);
    let team = notifier(&format!("slack: {{ webhook_url: {:?} }}", good.url("/a")));
    let old = notifier(&format!("slack: {{ webhook_url: {:?} }}", gone.url("/b")));
    let deliveries = deliver_all(
        [("team-channel", &team), ("old-channel", &old)],
        &halt(),
        &no_env,
        &|_| {},
    );
    let summary: Vec<(&str, bool)> = deliveries
        .iter()
        .map(|d| (d.notifier.as_str(), d.delivered))
        .collect();
    assert_eq!(summary, [("team-channel", true), ("old-channel", false)]);
}

#[test]
fn delivery_goes_into_the_ledger_as_json_with_every_attempt() {
    let server = Server::start(vec![status(503, "busy"), status(200, "ok")]);
    let spec = notifier(&format!("webhook: {{ url: {:?} }}", server.url("/x")));
    let delivery = deliver("incident-bot", &spec, &halt(), &no_env, &|_| {});
    let json = serde_json::to_value(&delivery).expect("serialize");
    assert_eq!(json["notifier"], "incident-bot");
    assert_eq!(json["delivered"], true);
    assert_eq!(json["attempts"][0]["number"], 1);
    assert_eq!(json["attempts"][0]["outcome"]["result"], "failed");
    assert_eq!(json["attempts"][0]["outcome"]["retryable"], true);
    assert_eq!(json["attempts"][1]["outcome"]["result"], "delivered");
    assert_eq!(json["attempts"][1]["outcome"]["status"], 200);
    let back: Delivery = serde_json::from_value(json).expect("deserialize");
    assert_eq!(back, delivery);
}
