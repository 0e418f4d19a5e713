//! The policy file's `checks:` map: the documented form parses, and hostile values are rejected
//! at the value, with a message that says what to write.

use nightwatch_checks::{CheckKind, CheckSpec, ExitMatch, ProcessPattern, WindowMode};
use nightwatch_core::Verdict;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Policy {
    checks: BTreeMap<String, CheckSpec>,
}

fn parse(yaml: &str) -> Result<BTreeMap<String, CheckSpec>, yaml_serde::Error> {
    yaml_serde::from_str::<Policy>(yaml).map(|p| p.checks)
}

/// One check under `checks: { c: ... }`, given as the check's own lines.
fn parse_one(body: &str) -> Result<CheckSpec, String> {
    let indented: String = body.lines().map(|l| format!("    {l}\n")).collect();
    let yaml = format!("checks:\n  c:\n{indented}");
    parse(&yaml)
        .map_err(|e| e.to_string())
        .and_then(|mut m| m.remove("c").ok_or_else(|| "missing".to_owned()))
}

const DOCUMENTED: &str = r#"
checks:
  active-migration:
    process: { command: "*migrate*", min_age: 30m }
    on_match: halt
    message: "a migration has been running for over 30 minutes; restarting would kill it"
    timeout: 2s
  migration-lock:
    lock_file: { glob: "/var/lib/app/migration_batch_*.lock", min_age: 30m }
  long-running-unit:
    systemd_unit: { unit: "app-migrate.service", active_longer_than: 30m }
  api-healthy:
    http: { url: "http://127.0.0.1:8080/healthz", expect_status: 200, body_contains: "ok" }
    on_match: ask
  safe-to-restart:
    command: { argv: ["/usr/local/bin/safe-to-restart", "app"], match_on: nonzero }
    on_match: deny
  change-window:
    maintenance_window: { outside: ["Sat 02:00-06:00", "Sun 02:00-06:00"] }
  freeze:
    maintenance_window: { inside: ["Mon-Fri 22:00-06:00"] }
  retry-storm:
    circuit_breaker: { failures: 5, within: 10m }
    timeout: 1h30m
"#;

#[test]
fn documented_checks_parse() {
    // `timeout: 1h30m` is over the limit: fix it to see the rest parse.
    let err = parse(DOCUMENTED).expect_err("1h30m timeout is rejected");
    assert!(err.to_string().contains("at most 60s"), "{err}");
    let checks = parse(&DOCUMENTED.replace("timeout: 1h30m", "timeout: 500ms")).expect("parses");

    let kinds: Vec<(&str, &str)> = checks
        .iter()
        .map(|(id, c)| (id.as_str(), c.kind_name()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("active-migration", "process"),
            ("api-healthy", "http"),
            ("change-window", "maintenance_window"),
            ("freeze", "maintenance_window"),
            ("long-running-unit", "systemd_unit"),
            ("migration-lock", "lock_file"),
            ("retry-storm", "circuit_breaker"),
            ("safe-to-restart", "command"),
        ]
    );

    let migration = &checks["active-migration"];
    assert_eq!(migration.on_match, Verdict::Halt);
    assert_eq!(migration.timeout, Duration::from_secs(2));
    assert!(
        migration
            .message
            .as_deref()
            .is_some_and(|m| m.contains("30 minutes"))
    );
    match &migration.kind {
        CheckKind::Process(p) => {
            assert!(matches!(&p.pattern, ProcessPattern::Command(g) if g.as_str() == "*migrate*"));
            assert_eq!(p.min_age, Duration::from_secs(1800));
        }
        other => panic!("{other:?}"),
    }
    // Defaults: halt, 2s, no message.
    let lock = &checks["migration-lock"];
    assert_eq!(
        (lock.on_match, lock.timeout),
        (Verdict::Halt, Duration::from_secs(2))
    );
    assert_eq!(lock.message, None);
    match &lock.kind {
        CheckKind::LockFile(l) => {
            assert_eq!(l.glob.root(), "/var/lib/app");
            assert_eq!(l.glob.depth(), Some(1));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(checks["api-healthy"].on_match, Verdict::Ask);
    assert_eq!(checks["safe-to-restart"].on_match, Verdict::Deny);
    match &checks["safe-to-restart"].kind {
        CheckKind::Command(c) => assert_eq!(c.match_on, ExitMatch::NonZero),
        other => panic!("{other:?}"),
    }
    match &checks["freeze"].kind {
        CheckKind::MaintenanceWindow(w) => assert_eq!(w.mode, WindowMode::Inside),
        other => panic!("{other:?}"),
    }
    assert_eq!(checks["retry-storm"].timeout, Duration::from_millis(500));
}

#[test]
fn other_accepted_forms() {
    let accepted = [
        "process: { name: postgres }",
        "process: { name: \"fake-migrate*\", min_age: 0s }",
        "process: { command: \"*migrate*\", min_age: 1h30m }",
        "lock_file: { glob: /run/app.lock }",
        "lock_file: { glob: \"/srv/**/*.lock\", min_age: 5m }",
        "systemd_unit: { unit: \"backup@daily.timer\" }",
        "http: { url: \"http://[::1]:9000/\" }",
        "command: { argv: [true], match_on: zero }",
        "command: { argv: [\"/bin/check\"], match_on: 3 }",
        "maintenance_window: { outside: [\"00:00-24:00\", \"Sat-Sun\", \"fri-mon 23:30-0:30\", \"Mon,Wed 12:00-13:00\"] }",
        "circuit_breaker: { failures: 1, within: 1s }",
        "circuit_breaker: { failures: 3, within: 2 hours }\ntimeout: 60s",
        "rate: { max: 1, within: 1d }",
        "rate: { max: 60, within: 1h }\non_match: deny",
    ];
    for body in accepted {
        if let Err(e) = parse_one(body) {
            panic!("{body}: {e}");
        }
    }
}

#[test]
fn hostile_values_are_rejected_with_a_reason() {
    // (the check's body, a piece of the error message)
    let rejected: &[(&str, &str)] = &[
        // Kinds: none, two, unknown.
        ("on_match: halt", "needs a kind"),
        (
            "process: { name: x }\nlock_file: { glob: /a }",
            "`process` and `lock_file`",
        ),
        ("disk_full: { path: / }", "unknown field `disk_full`"),
        (
            "process: { name: x }\nseverity: high",
            "unknown field `severity`",
        ),
        ("process: { name: x, user: root }", "unknown field `user`"),
        // on_match.
        ("process: { name: x }\non_match: allow", "cannot be allow"),
        (
            "process: { name: x }\non_match: notify_and_halt",
            "expected halt, ask or deny",
        ),
        (
            "process: { name: x }\non_match: [halt]",
            "halt, ask or deny",
        ),
        // Durations: garbage, units missing, negative, zero where it matters, huge.
        ("process: { name: x, min_age: soon }", "bad duration"),
        ("process: { name: x, min_age: 30 }", "unit designator"),
        (
            "process: { name: x, min_age: [30m] }",
            "a duration with a unit",
        ),
        (
            "process: { name: x, min_age: -30m }",
            "must not be negative",
        ),
        (
            "process: { name: x, min_age: 9999999h }",
            "longer than a year",
        ),
        (
            "process: { name: x, min_age: 99999999999999999999999h }",
            "bad duration",
        ),
        ("process: { name: x }\ntimeout: 0s", "more than 0s"),
        ("process: { name: x }\ntimeout: 61s", "at most 60s"),
        ("process: { name: x }\ntimeout: -1s", "must not be negative"),
        (
            "circuit_breaker: { failures: 5, within: 0s }",
            "longer than zero",
        ),
        (
            "circuit_breaker: { failures: 0, within: 10m }",
            "between 1 and 1000000",
        ),
        (
            "circuit_breaker: { failures: -1, within: 10m }",
            "expected u32",
        ),
        ("circuit_breaker: { failures: 5 }", "missing field `within`"),
        ("rate: { max: 0, within: 1d }", "between 1 and 1000000"),
        (
            "rate: { max: 2000000, within: 1d }",
            "between 1 and 1000000",
        ),
        ("rate: { max: 1, within: 0s }", "longer than zero"),
        ("rate: { max: 1, within: 400d }", "longer than a year"),
        ("rate: { max: 1 }", "missing field `within`"),
        (
            "rate: { max: 1, within: 1d, tool: x }",
            "unknown field `tool`",
        ),
        ("rate: 1/day", "struct RawRate"),
        // process.
        (
            "process: { min_age: 1m }",
            "exactly one of `name:` or `command:`",
        ),
        (
            "process: { name: a, command: b }",
            "exactly one of `name:` or `command:`",
        ),
        ("process: { name: \"\" }", "empty glob"),
        ("process: { name: \"[unclosed\" }", "bad glob"),
        ("process: migrate", "invalid type"),
        // lock_file.
        ("lock_file: { glob: relative/*.lock }", "absolute path"),
        (
            "lock_file: { glob: \"/var/lib/../etc/*\" }",
            ". or .. components",
        ),
        (
            "lock_file: { glob: \"/var/lib/app/\" }",
            "must not end with /",
        ),
        ("lock_file: { glob: \"/var/{a\" }", "bad lock_file glob"),
        // systemd_unit.
        ("systemd_unit: { unit: \"--help\" }", "bad systemd unit"),
        (
            "systemd_unit: { unit: \"a b.service\" }",
            "bad systemd unit",
        ),
        ("systemd_unit: { unit: \"\" }", "bad systemd unit"),
        // http.
        (
            "http: { url: \"https://example.com/\" }",
            "only plain http://",
        ),
        ("http: { url: \"ftp://x/\" }", "only plain http://"),
        ("http: { url: \"http:///nohost\" }", "has no host"),
        ("http: { url: \"http://x\", expect_status: 99 }", "100-599"),
        (
            "http: { url: \"http://x\", expect_status: 70000 }",
            "invalid value",
        ),
        (
            "http: { url: \"http://x\", body_contains: \"\" }",
            "must not be empty",
        ),
        // command.
        ("command: { argv: [] }", "must name a program"),
        ("command: { argv: [\"\"] }", "must name a program"),
        ("command: { argv: \"/bin/true\" }", "invalid type"),
        ("command: { argv: [true], match_on: 256 }", "bad match_on"),
        ("command: { argv: [true], match_on: -1 }", "bad match_on"),
        (
            "command: { argv: [true], match_on: sometimes }",
            "bad match_on",
        ),
        // maintenance_window.
        ("maintenance_window: { outside: [] }", "must not be empty"),
        (
            "maintenance_window: { outside: [\"Sat 02:00-06:00\"], inside: [\"Sun 02:00-06:00\"] }",
            "exactly one of",
        ),
        ("maintenance_window: { }", "exactly one of"),
        (
            "maintenance_window: { outside: [\"Caturday 02:00-06:00\"] }",
            "bad day",
        ),
        (
            "maintenance_window: { outside: [\"25:00-26:00\"] }",
            "bad start time",
        ),
        (
            "maintenance_window: { outside: [\"02:00-02:00\"] }",
            "start equals end",
        ),
        (
            "maintenance_window: { outside: [\"02:60-03:00\"] }",
            "bad start time",
        ),
        ("maintenance_window: { outside: [\"2-3\"] }", "bad window"),
        (
            "maintenance_window: { outside: [\"Sat 02:00-06:00 extra\"] }",
            "too many parts",
        ),
        ("maintenance_window: { outside: [42] }", "bad day"),
        (
            "maintenance_window: { outside: \"Sat 02:00-06:00\" }",
            "invalid type",
        ),
    ];
    for (body, want) in rejected {
        match parse_one(body) {
            Ok(spec) => panic!("accepted {body:?} as {spec:?}"),
            Err(e) => assert!(e.contains(want), "{body:?}: wanted {want:?} in {e:?}"),
        }
    }
}

#[test]
fn error_points_at_the_bad_value() {
    let yaml = "checks:\n  ok:\n    process: { name: x }\n  bad:\n    lock_file:\n      glob: /var/lib/app/*.lock\n      min_age: 40 minutes ago\n";
    let err = parse(yaml).expect_err("rejected");
    let location = err.location().expect("has a location");
    assert_eq!(location.line(), 7, "{err}");
    assert!(err.to_string().contains("40 minutes ago"), "{err}");
}

#[test]
fn garbage_documents_never_panic() {
    let garbage = [
        "",
        "checks: 5",
        "checks: [1, 2]",
        "checks: { a: null }",
        "checks: { a: 5 }",
        "checks: { a: [process] }",
        "checks: { a: { process: null } }",
        "checks: { a: { timeout: { nested: 1 }, process: { name: x } } }",
        "checks: { a: { process: { name: x }, process: { name: y } } }",
        "checks: { a: &x { process: { name: *x } } }",
        "checks: { a: { maintenance_window: { outside: [\"\\u0000\", \"Mon-\"] } } }",
        "checks: { a: { maintenance_window: { outside: [\"ÅÄÖ 02:00-06:00\"] } } }",
        "checks: { a: { maintenance_window: { outside: [\"Mon 99999999999999999999:00-1:00\"] } } }",
    ];
    for yaml in garbage {
        assert!(parse(yaml).is_err(), "{yaml:?} was accepted");
    }
}
