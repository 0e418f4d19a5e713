//! The command channel with real programs.

mod support;

use nightwatch_notify::{AttemptOutcome, Delivery, Escalation, deliver};
use std::time::{Duration, Instant};
use support::{Sleeps, ask, halt, notifier};

fn no_env(_: &str) -> Option<String> {
    None
}

fn command(argv: &[&str], extra: &str) -> nightwatch_notify::NotifierSpec {
    let argv = serde_json::to_string(argv).expect("argv json");
    notifier(&format!("command: {{ argv: {argv} }}\n{extra}"))
}

fn failed(delivery: &Delivery, number: usize) -> (String, bool) {
    match &delivery.attempts[number - 1].outcome {
        AttemptOutcome::Failed { reason, retryable } => (reason.clone(), *retryable),
        other => panic!("attempt {number} was {other:?}"),
    }
}

#[test]
fn command_gets_the_escalation_as_json_on_stdin_and_in_its_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json_file = dir.path().join("escalation.json");
    let env_file = dir.path().join("env");
    let spec = command(
        &[
            "sh",
            "-c",
            "cat > \"$1\" && env > \"$2\"",
            "page-oncall",
            json_file.to_str().expect("utf-8 path"),
            env_file.to_str().expect("utf-8 path"),
        ],
        "",
    );
    let delivery = deliver("pager-script", &spec, &ask(), &no_env, &|_| {});

    assert!(delivery.delivered, "{delivery:?}");
    assert_eq!(
        delivery.attempts[0].outcome,
        AttemptOutcome::Delivered { status: 0 }
    );
    let sent: Escalation =
        serde_json::from_slice(&std::fs::read(&json_file).expect("json file")).expect("json");
    assert_eq!(sent, ask());
    let env = std::fs::read_to_string(&env_file).expect("env file");
    for line in [
        "NIGHTWATCH_ESCALATION_VERDICT=ask",
        "NIGHTWATCH_ESCALATION_RECORD_ID=r1842",
        "NIGHTWATCH_ESCALATION_WHAT=exec: systemctl restart app",
        "NIGHTWATCH_ESCALATION_WHERE=web-1:/srv/app",
        "NIGHTWATCH_ESCALATION_APPROVE=nightwatch approve r1842",
        "NIGHTWATCH_ESCALATION_INSPECT=nightwatch show r1842",
    ] {
        assert!(env.lines().any(|l| l == line), "missing {line} in\n{env}");
    }
}

#[test]
fn argv_is_not_run_through_a_shell() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("marker");
    // With a shell, `;` would start a second command that creates the marker.
    let spec = command(&["echo", &format!("hi; touch {}", marker.display())], "");
    let delivery = deliver("pager-script", &spec, &halt(), &no_env, &|_| {});
    assert!(delivery.delivered, "{delivery:?}");
    assert!(!marker.exists());
}

#[test]
fn false_fails_every_attempt_with_its_exit_status() {
    let spec = command(&["false"], "retry: { attempts: 3, initial: 10ms }");
    let sleeps = Sleeps::default();
    let delivery = deliver("pager-script", &spec, &halt(), &no_env, &sleeps.record());

    assert!(!delivery.delivered);
    assert_eq!(delivery.attempts.len(), 3);
    for n in 1..=3 {
        let (reason, retryable) = failed(&delivery, n);
        assert!(retryable);
        assert_eq!(reason, "false exited with status 1");
    }
    assert_eq!(sleeps.taken().len(), 2);
}

#[test]
fn stderr_explains_the_failure() {
    let spec = command(
        &[
            "sh",
            "-c",
            "echo 'pager API said: quota exceeded' >&2; exit 3",
        ],
        "retry: { attempts: 1 }",
    );
    let delivery = deliver("pager-script", &spec, &halt(), &no_env, &|_| {});
    let (reason, _) = failed(&delivery, 1);
    assert_eq!(
        reason,
        "sh exited with status 3: pager API said: quota exceeded"
    );
}

#[test]
fn slow_command_is_killed_at_the_timeout() {
    let spec = command(&["sleep", "10"], "timeout: 200ms\nretry: { attempts: 1 }");
    let started = Instant::now();
    let delivery = deliver("pager-script", &spec, &halt(), &no_env, &|_| {});
    let took = started.elapsed();

    assert!(!delivery.delivered);
    let (reason, retryable) = failed(&delivery, 1);
    assert!(retryable);
    assert_eq!(reason, "sleep did not finish within 200ms and was killed");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(delivery.attempts[0].elapsed_ms >= 200);
}

#[test]
fn grandchildren_are_killed_with_the_command() {
    // The shell's child keeps stderr open; the timeout must still end the attempt promptly.
    let spec = command(
        &["sh", "-c", "sleep 10; echo never"],
        "timeout: 200ms\nretry: { attempts: 1 }",
    );
    let started = Instant::now();
    let delivery = deliver("pager-script", &spec, &halt(), &no_env, &|_| {});
    assert!(!delivery.delivered);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn missing_program_is_not_retried() {
    let spec = command(&["/nonexistent/page-oncall"], "");
    let sleeps = Sleeps::default();
    let delivery = deliver("pager-script", &spec, &halt(), &no_env, &sleeps.record());

    assert_eq!(delivery.attempts.len(), 1);
    let (reason, retryable) = failed(&delivery, 1);
    assert!(!retryable);
    assert!(
        reason.starts_with("could not start /nonexistent/page-oncall:"),
        "{reason}"
    );
    assert!(sleeps.taken().is_empty());
}

#[test]
fn command_that_ignores_a_large_stdin_still_finishes() {
    let escalation = Escalation {
        why: "x".repeat(1 << 20),
        ..halt()
    };
    let spec = command(&["true"], "");
    let delivery = deliver("pager-script", &spec, &escalation, &no_env, &|_| {});
    assert!(delivery.delivered, "{delivery:?}");
}
