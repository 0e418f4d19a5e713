//! Reading the `notifiers:` section: the example policy, and hostile input that must be refused
//! with a reason and a line, never a panic.

use nightwatch_notify::{
    Channel, CommandChannel, Endpoint, EnvName, HeaderName, HttpUrl, NotifierSpec, Notifiers,
    NtfyChannel, Retry, Secret, SlackChannel, WebhookChannel,
};
use serde::Deserialize;
use std::time::Duration;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Policy {
    notifiers: Notifiers,
}

fn env(name: &str) -> EnvName {
    EnvName::parse(name).expect("env name")
}

fn url(text: &str) -> Endpoint {
    Endpoint::Url(HttpUrl::parse(text).expect("url"))
}

#[test]
fn example_policy_reads_as_written() {
    let text = include_str!("data/notifiers.yaml");
    let policy: Policy = yaml_serde::from_str(text).expect("example parses");
    let n = &policy.notifiers;
    assert_eq!(n.len(), 5);

    assert_eq!(
        n["oncall-phone"],
        NotifierSpec {
            channel: Channel::Ntfy(NtfyChannel {
                url: url("https://ntfy.sh/ops-alerts"),
                token: Some(Secret::Env(env("NTFY_TOKEN"))),
                priority: Some(4),
                tags: vec!["warning".into()],
            }),
            retry: Retry {
                attempts: 5,
                initial: Duration::from_secs(1),
                max: Duration::from_secs(30),
            },
            timeout: Duration::from_secs(5),
        }
    );
    assert_eq!(
        n["team-channel"],
        NotifierSpec::new(Channel::Slack(SlackChannel {
            webhook_url: Endpoint::Env(env("SLACK_WEBHOOK")),
        }))
    );
    assert_eq!(
        n["team-channel-inline"].channel,
        Channel::Slack(SlackChannel {
            webhook_url: url("https://hooks.slack.com/services/T000/B000/XXXX"),
        })
    );
    assert_eq!(
        n["incident-bot"].channel,
        Channel::Webhook(WebhookChannel {
            url: url("http://127.0.0.1:9000/escalations"),
            headers: vec![
                (
                    HeaderName::parse("X-Source").expect("name"),
                    Secret::Inline("nightwatch".into())
                ),
                (
                    HeaderName::parse("Authorization").expect("name"),
                    Secret::Env(env("INCIDENT_BOT_AUTH"))
                ),
            ],
        })
    );
    assert_eq!(n["incident-bot"].timeout, Duration::from_millis(1500));
    assert_eq!(n["incident-bot"].retry, Retry::default());
    assert_eq!(
        n["pager-script"].channel,
        Channel::Command(CommandChannel {
            argv: vec![
                "/usr/local/bin/page-oncall".into(),
                "--team".into(),
                "ops".into()
            ],
        })
    );
    assert_eq!(n["pager-script"].retry.attempts, 2);
}

#[test]
fn defaults_are_four_attempts_one_second_thirty_seconds_five_second_timeout() {
    let spec: NotifierSpec = yaml_serde::from_str("command: { argv: [true] }").expect("parses");
    assert_eq!(spec.retry.attempts, 4);
    assert_eq!(spec.retry.initial, Duration::from_secs(1));
    assert_eq!(spec.retry.max, Duration::from_secs(30));
    assert_eq!(spec.timeout, Duration::from_secs(5));
}

/// The one duration grammar of nightwatch-time: spaces and spelt-out units as in the policy's
/// checks (`5 s` was refused here before the grammars were merged).
#[test]
fn durations_read_as_everywhere_else() {
    for (text, want) in [
        ("5 s", Duration::from_secs(5)),
        ("1m30s", Duration::from_secs(90)),
        ("2 minutes", Duration::from_secs(120)),
        ("1h", Duration::from_secs(3600)),
    ] {
        let yaml = format!("command: {{ argv: [x] }}\nretry: {{ max: 1h }}\ntimeout: {text}");
        let spec: NotifierSpec =
            yaml_serde::from_str(&yaml).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(spec.timeout, want, "{text}");
    }
}

#[test]
fn inline_secrets_stay_out_of_debug_output() {
    let spec: NotifierSpec = yaml_serde::from_str(
        "ntfy: { url: \"https://ntfy.sh/secret-topic\", token: tk_very_secret }",
    )
    .expect("parses");
    let debug = format!("{spec:?}");
    assert!(!debug.contains("tk_very_secret"), "{debug}");
    assert!(!debug.contains("secret-topic"), "{debug}");
    assert!(debug.contains("ntfy.sh"), "{debug}");
}

/// Each hostile notifier and a piece of the error it must produce.
const REFUSED: &[(&str, &str)] = &[
    // Unknown fields, anywhere.
    (
        "ntfy: { url: \"https://ntfy.sh/a\" }\nemail: x",
        "unknown field `email`",
    ),
    (
        "ntfy: { url: \"https://ntfy.sh/a\", topic: ops }",
        "unknown field `topic`",
    ),
    (
        "slack: { url: \"https://hooks.slack.com/x\" }",
        "unknown field `url`",
    ),
    (
        "webhook: { url: \"http://a/\", method: PUT }",
        "unknown field `method`",
    ),
    (
        "command: { argv: [x], shell: true }",
        "unknown field `shell`",
    ),
    (
        "command: { argv: [x] }\nretry: { attempts: 2, factor: 3 }",
        "unknown field `factor`",
    ),
    // Channels: exactly one.
    (
        "ntfy: { url: \"https://ntfy.sh/a\" }\nslack: { webhook_url_env: S }",
        "exactly one channel, but this one has ntfy and slack",
    ),
    (
        "command: { argv: [x] }\nwebhook: { url: \"http://a/\" }",
        "exactly one channel, but this one has command and webhook",
    ),
    ("retry: { attempts: 2 }", "missing a channel"),
    ("{}", "missing a channel"),
    ("ntfy", "expected a notifier"),
    ("[ntfy]", "expected a notifier"),
    // Alternatives: exactly one of each.
    ("ntfy: {}", "missing url or url_env"),
    (
        "ntfy: { url: \"https://ntfy.sh/a\", url_env: NTFY_URL }",
        "only one of url or url_env",
    ),
    (
        "ntfy: { url: \"https://ntfy.sh/a\", token: t, token_env: T }",
        "only one of token or token_env",
    ),
    ("slack: {}", "missing webhook_url or webhook_url_env"),
    (
        "slack: { webhook_url: \"https://h/x\", webhook_url_env: S }",
        "only one of webhook_url or webhook_url_env",
    ),
    // URLs.
    ("ntfy: { url: \"ntfy.sh/ops\" }", "is not an http(s) URL"),
    ("ntfy: { url: \"ftp://ntfy.sh/ops\" }", "the scheme is ftp"),
    (
        "ntfy: { url: \"file:///etc/passwd\" }",
        "is not an http(s) URL",
    ),
    ("webhook: { url: \"http://\" }", "is not an http(s) URL"),
    (
        "webhook: { url: \"http://exa mple.com/\" }",
        "spaces or control characters",
    ),
    ("webhook: { url: \"\" }", "is not an http(s) URL"),
    ("webhook: { url: 42 }", "is not an http(s) URL"),
    (
        "webhook: { url: [\"http://a/\"] }",
        "expected an http(s) URL",
    ),
    (
        "slack: { webhook_url: \"javascript:alert(1)\" }",
        "is not an http(s) URL",
    ),
    // Env names.
    (
        "slack: { webhook_url_env: \"$SLACK\" }",
        "is not an environment variable name",
    ),
    (
        "slack: { webhook_url_env: \"1ABC\" }",
        "is not an environment variable name",
    ),
    (
        "slack: { webhook_url_env: \"\" }",
        "is not an environment variable name",
    ),
    // Retry and durations.
    (
        "command: { argv: [x] }\nretry: { attempts: 0 }",
        "attempts must be between 1 and 20, not 0",
    ),
    (
        "command: { argv: [x] }\nretry: { attempts: -3 }",
        "attempts must be between 1 and 20",
    ),
    (
        "command: { argv: [x] }\nretry: { attempts: 1000000 }",
        "attempts must be between 1 and 20",
    ),
    (
        "command: { argv: [x] }\nretry: { attempts: 99999999999999999999999 }",
        "attempts",
    ),
    (
        "command: { argv: [x] }\nretry: { attempts: 2.5 }",
        "attempts must be between 1 and 20",
    ),
    (
        "command: { argv: [x] }\nretry: { initial: -1s }",
        "cannot read the duration \"-1s\"",
    ),
    (
        "command: { argv: [x] }\nretry: { initial: 0s }",
        "must be above zero",
    ),
    (
        "command: { argv: [x] }\nretry: { max: 1000000h }",
        "out of range",
    ),
    (
        "command: { argv: [x] }\nretry: { max: 99999999999999999999999s }",
        "out of range",
    ),
    ("command: { argv: [x] }\nretry: { max: 2h }", "out of range"),
    (
        "command: { argv: [x] }\nretry: { initial: 1 }",
        "cannot read the duration \"1\"",
    ),
    (
        "command: { argv: [x] }\nretry: { initial: 1.5s }",
        "cannot read the duration",
    ),
    (
        "command: { argv: [x] }\nretry: { initial: 5 parsecs }",
        "cannot read the duration",
    ),
    // One duration grammar everywhere: `1d` is now read (it was an unknown unit here), and
    // refused for its length.
    (
        "command: { argv: [x] }\nretry: { initial: 1d }",
        "out of range",
    ),
    (
        "command: { argv: [x] }\nretry: { initial: 1m, max: 30s }",
        "initial (60s) is longer than max (30s)",
    ),
    (
        "command: { argv: [x] }\ntimeout: -5s",
        "cannot read the duration",
    ),
    ("command: { argv: [x] }\ntimeout: 0ms", "must be above zero"),
    (
        "command: { argv: [x] }\ntimeout: forever",
        "cannot read the duration",
    ),
    ("command: { argv: [x] }\ntimeout: ~", "expected a duration"),
    // ntfy values.
    (
        "ntfy: { url: \"https://ntfy.sh/a\", priority: 0 }",
        "priority must be 1 (min) to 5 (max), not 0",
    ),
    (
        "ntfy: { url: \"https://ntfy.sh/a\", priority: 6 }",
        "priority must be 1",
    ),
    (
        "ntfy: { url: \"https://ntfy.sh/a\", priority: high }",
        "priority must be 1",
    ),
    (
        "ntfy: { url: \"https://ntfy.sh/a\", tags: [\"a,b\"] }",
        "is not an ntfy tag",
    ),
    (
        "ntfy: { url: \"https://ntfy.sh/a\", tags: [\"\"] }",
        "is not an ntfy tag",
    ),
    (
        "ntfy: { url: \"https://ntfy.sh/a\", tags: warning }",
        "expected a sequence",
    ),
    (
        "ntfy: { url: \"https://ntfy.sh/a\", token: \"a\\nb\" }",
        "printable ASCII on one line",
    ),
    // Webhook headers.
    (
        "webhook: { url: \"http://a/\", headers: { \"Bad Header\": x } }",
        "is not an HTTP header name",
    ),
    (
        "webhook: { url: \"http://a/\", headers: { Content-Length: \"0\" } }",
        "is not an HTTP header name",
    ),
    (
        "webhook: { url: \"http://a/\", headers: { Host: evil } }",
        "is not an HTTP header name",
    ),
    (
        "webhook: { url: \"http://a/\", headers: { X-A: \"1\\r\\nX-B: 2\" } }",
        "printable ASCII on one line",
    ),
    (
        "webhook: { url: \"http://a/\", headers: { X-A: a }, headers_env: { x-a: A } }",
        "header x-a is given twice",
    ),
    // Command.
    ("command: { argv: [] }", "argv must name a program"),
    ("command: { argv: [\"\"] }", "argv must name a program"),
    (
        "command: { argv: \"page-oncall --team ops\" }",
        "expected a sequence",
    ),
    ("command: { argv: [\"a\\0b\"] }", "argv must name a program"),
    ("command: {}", "missing argv"),
];

#[test]
fn hostile_notifiers_are_refused_with_a_reason_and_a_line() {
    let mut wrong = Vec::new();
    for (yaml, expected) in REFUSED {
        match yaml_serde::from_str::<NotifierSpec>(yaml) {
            Ok(spec) => wrong.push(format!("accepted {yaml:?} as {spec:?}")),
            Err(error) => {
                let message = error.to_string();
                if !message.contains(expected) {
                    wrong.push(format!(
                        "{yaml:?}\n  expected: {expected}\n  got:      {message}"
                    ));
                } else if yaml.contains('\n') && !message.contains("line") {
                    wrong.push(format!("{yaml:?}\n  no line in: {message}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn second_channel_is_reported_at_its_own_line() {
    let yaml = "notifiers:\n  phone:\n    ntfy: { url: \"https://ntfy.sh/a\" }\n    slack: { webhook_url_env: S }\n";
    let error = yaml_serde::from_str::<Policy>(yaml)
        .err()
        .expect("refused")
        .to_string();
    assert!(error.contains("line 4"), "{error}");
    assert!(error.contains("notifiers.phone"), "{error}");
}

#[test]
fn deep_or_strange_yaml_is_refused_without_panicking() {
    let nested = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    let inputs = [
        nested.as_str(),
        "ntfy: &a { url: \"https://ntfy.sh/a\" }\nslack: *a",
        "!!binary aGVsbG8=",
        "ntfy: { url: !!binary aHR0cDovL2EvCg== }",
        "? [complex, key]\n: value",
        "command: { argv: [x] }\ncommand: { argv: [y] }",
        "\u{feff}command: { argv: [x] }\n",
        "ntfy: { url: \"https://ntfy.sh/a\", priority: .nan }",
    ];
    for yaml in inputs {
        // Accepted or refused, but never a panic.
        let _ = yaml_serde::from_str::<NotifierSpec>(yaml);
    }
}

proptest::proptest! {
    #[test]
    fn any_text_is_read_or_refused_never_a_panic(text in "\\PC{0,120}") {
        let _ = yaml_serde::from_str::<NotifierSpec>(&text);
        let _ = HttpUrl::parse(&text);
        let _ = EnvName::parse(&text);
        let _ = HeaderName::parse(&text);
    }

    #[test]
    fn any_durations_and_counts_are_read_or_refused(
        attempts in "-?[0-9]{0,25}(\\.[0-9])?",
        initial in "-?[0-9]{0,25}(ms|s|m|h|d|)",
        timeout in "[0-9 .a-z-]{0,12}",
    ) {
        let yaml = format!(
            "command: {{ argv: [x] }}\nretry: {{ attempts: {attempts:?}, initial: {initial:?} }}\ntimeout: {timeout:?}"
        );
        if let Ok(spec) = yaml_serde::from_str::<NotifierSpec>(&yaml) {
            proptest::prop_assert!((1..=20).contains(&spec.retry.attempts));
            proptest::prop_assert!(!spec.retry.initial.is_zero());
            proptest::prop_assert!(spec.retry.initial <= spec.retry.max);
            proptest::prop_assert!(spec.timeout <= Duration::from_secs(3600));
        }
    }
}
