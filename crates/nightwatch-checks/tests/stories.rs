//! The seed stories, and the checks that need nothing but the probe.

mod common;

use common::*;
use jiff::civil::Weekday;
use nightwatch_checks::{History, Outcome, Probe, run_checks, strictest_effect};
use nightwatch_core::Verdict;
use std::cell::RefCell;
use std::time::Duration;

/// The 23:47 restart: a migration running since 21:00 and its lock file. With the checks in
/// policy, the restart halts and says why.
#[test]
fn restart_halts_while_migration_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let name = format!("app-migrate-{}", std::process::id());
    let migration = start(&renamed_sleep(dir.path(), &name), &["300.5"]);
    let lock = dir.path().join("migration_batch_2026Q1.lock");
    let file = std::fs::File::create(&lock).expect("lock");
    let started = std::time::SystemTime::now() - Duration::from_secs(2 * 3600 + 47 * 60);
    file.set_modified(started).expect("mtime");

    let process = spec(&format!(
        "process: {{ command: \"*{name}*\" }}\nmessage: \"a migration is running; restarting would kill it\""
    ));
    let lock_file = spec(&format!(
        "lock_file: {{ glob: \"{}/migration_batch_*.lock\", min_age: 30m }}",
        dir.path().display()
    ));
    let breaker = spec("circuit_breaker: { failures: 5, within: 10m }");
    let history = NO_FAILURES;
    let probe = probe_at(now_ms(), &history);
    let findings = run_checks(
        &[
            ("active-migration", &process),
            ("migration-lock", &lock_file),
            ("retry-storm", &breaker),
        ],
        &probe,
    );
    assert_eq!(strictest_effect(&findings), Some(Verdict::Halt));
    assert_eq!(
        findings[0].message,
        "a migration is running; restarting would kill it"
    );
    assert!(
        matches!(&findings[1].outcome, Outcome::Matched { detail } if detail.contains("migration_batch_2026Q1.lock") && detail.contains("2h47m")),
        "{:?}",
        findings[1]
    );
    assert!(findings[2].outcome.is_clear());

    // The migration finishes and removes its lock: the restart may go ahead.
    drop(migration);
    std::fs::remove_file(&lock).expect("unlock");
    let findings = run_checks(
        &[
            ("active-migration", &process),
            ("migration-lock", &lock_file),
            ("retry-storm", &breaker),
        ],
        &probe,
    );
    assert_eq!(strictest_effect(&findings), None, "{findings:?}");
}

/// Remembers what it was asked, answers a fixed count.
struct RecordingHistory {
    answer: Result<u32, String>,
    asked: RefCell<Vec<(String, String, String, i64)>>,
}

impl History for RecordingHistory {
    fn failures_since(
        &self,
        kind: &str,
        id: &str,
        fingerprint: &str,
        since_ms: i64,
    ) -> Result<u32, String> {
        self.asked
            .borrow_mut()
            .push((kind.into(), id.into(), fingerprint.into(), since_ms));
        self.answer.clone()
    }
}

#[test]
fn circuit_breaker_trips_at_its_threshold() {
    let check = spec("circuit_breaker: { failures: 5, within: 10m }\non_match: deny");
    // (failures in history, expected outcome: matched?, clear?, unknown?)
    let cases: [(Result<u32, String>, &str); 5] = [
        (Ok(0), "clear"),
        (Ok(4), "clear"),
        (Ok(5), "matched"),
        (Ok(u32::MAX), "matched"),
        (Err("ledger is locked".into()), "unknown"),
    ];
    for (answer, expect) in cases {
        let history = RecordingHistory {
            answer: answer.clone(),
            asked: RefCell::new(Vec::new()),
        };
        let probe = probe_at(1_000_000_000, &history);
        let finding = run_checks(&[("retry-storm", &check)], &probe)
            .pop()
            .expect("finding");
        let got = match &finding.outcome {
            Outcome::Matched { .. } => "matched",
            Outcome::Clear { .. } => "clear",
            Outcome::Unknown { reason } => {
                assert!(reason.contains("ledger is locked"), "{reason}");
                "unknown"
            }
        };
        assert_eq!(got, expect, "{answer:?}: {finding:?}");
        let effect = if expect == "clear" {
            None
        } else {
            Some(Verdict::Deny)
        };
        assert_eq!(finding.effect, effect);
        assert_eq!(
            history.asked.borrow().as_slice(),
            [(
                "agent".to_owned(),
                "claude-code".to_owned(),
                "f00d".to_owned(),
                1_000_000_000 - 600_000
            )]
        );
    }
}

/// Remembers the rate questions it was asked, answers a fixed count of allowed actions.
struct AllowedHistory {
    answer: Result<u32, String>,
    asked: RefCell<Vec<(String, String, String, i64)>>,
}

impl History for AllowedHistory {
    fn failures_since(&self, _: &str, _: &str, _: &str, _: i64) -> Result<u32, String> {
        Ok(0)
    }

    fn allowed_since(
        &self,
        kind: &str,
        id: &str,
        tool: &str,
        since_ms: i64,
    ) -> Result<u32, String> {
        self.asked
            .borrow_mut()
            .push((kind.into(), id.into(), tool.into(), since_ms));
        self.answer.clone()
    }
}

/// Seed 000's backup job: `rate: { max: 1, within: 1d }` lets the first backup of the day
/// through and halts the second, counted per actor and tool.
#[test]
fn rate_halts_the_second_backup_of_the_day() {
    let check = spec("rate: { max: 1, within: 1d }\non_match: halt");
    let cases: [(Result<u32, String>, &str); 5] = [
        (Ok(0), "clear"),
        (Ok(1), "matched"),
        (Ok(45), "matched"),
        (Ok(u32::MAX), "matched"),
        (Err("ledger is locked".into()), "unknown"),
    ];
    for (answer, expect) in cases {
        let history = AllowedHistory {
            answer: answer.clone(),
            asked: RefCell::new(Vec::new()),
        };
        let probe = Probe {
            actor_kind: "robot",
            actor_id: "backup-job",
            tool: "backup",
            ..probe_at(1_000_000_000_000, &history)
        };
        let finding = run_checks(&[("once-a-day", &check)], &probe)
            .pop()
            .expect("finding");
        let got = match &finding.outcome {
            Outcome::Matched { detail } => {
                assert!(detail.contains("robot backup-job"), "{detail}");
                "matched"
            }
            Outcome::Clear { .. } => "clear",
            Outcome::Unknown { reason } => {
                assert!(reason.contains("ledger is locked"), "{reason}");
                "unknown"
            }
        };
        assert_eq!(got, expect, "{answer:?}: {finding:?}");
        assert_eq!(
            finding.effect,
            (expect != "clear").then_some(Verdict::Halt),
            "{finding:?}"
        );
        assert_eq!(
            history.asked.borrow().as_slice(),
            [(
                "robot".to_owned(),
                "backup-job".to_owned(),
                "backup".to_owned(),
                1_000_000_000_000 - 86_400_000
            )]
        );
    }
}

/// A history that cannot count allowed actions (one written before the rate existed) holds
/// the action: a check that cannot tell is not a pass.
#[test]
fn rate_without_a_count_holds_the_action() {
    let check = spec("rate: { max: 5, within: 1h }\non_match: deny");
    let probe = probe_at(now_ms(), &NO_FAILURES);
    let finding = run_checks(&[("rate", &check)], &probe)
        .pop()
        .expect("finding");
    assert!(finding.outcome.is_unknown(), "{finding:?}");
    assert_eq!(finding.effect, Some(Verdict::Deny));
}

/// A history that takes its time: the breaker runs on the caller's thread, so it is judged
/// after the fact.
struct SlowHistory;

impl History for SlowHistory {
    fn failures_since(&self, _: &str, _: &str, _: &str, _: i64) -> Result<u32, String> {
        std::thread::sleep(Duration::from_millis(150));
        Ok(0)
    }
}

#[test]
fn slow_history_is_unknown() {
    let check = spec("circuit_breaker: { failures: 5, within: 10m }\ntimeout: 50ms");
    let probe = probe_at(now_ms(), &SlowHistory);
    let finding = run_checks(&[("retry-storm", &check)], &probe)
        .pop()
        .expect("finding");
    assert!(finding.outcome.is_unknown(), "{finding:?}");
    assert_eq!(finding.effect, Some(Verdict::Halt));
}

#[test]
fn change_windows_and_freezes() {
    let outside =
        spec("maintenance_window: { outside: [\"Sat 02:00-06:00\", \"Sun 02:00-06:00\"] }");
    let freeze = spec("maintenance_window: { inside: [\"Fri 17:00-09:00\"] }\non_match: ask");
    // (weekday, minute, change window matched?, freeze matched?)
    let cases = [
        (Weekday::Saturday, 3 * 60, false, true),
        (Weekday::Sunday, 5 * 60 + 59, false, false),
        (Weekday::Sunday, 6 * 60, true, false),
        (Weekday::Wednesday, 12 * 60, true, false),
        (Weekday::Friday, 17 * 60, true, true),
        (Weekday::Saturday, 8 * 60 + 59, true, true),
        (Weekday::Saturday, 9 * 60, true, false),
    ];
    let history = NO_FAILURES;
    for (day, minute, change_matched, freeze_matched) in cases {
        let probe = Probe {
            local_weekday: day,
            local_minute_of_day: minute,
            ..probe_at(0, &history)
        };
        let findings = run_checks(&[("change-window", &outside), ("freeze", &freeze)], &probe);
        assert_eq!(
            (
                findings[0].outcome.is_matched(),
                findings[1].outcome.is_matched()
            ),
            (change_matched, freeze_matched),
            "{day:?} {minute}: {findings:?}"
        );
        assert_eq!(findings[1].effect, freeze_matched.then_some(Verdict::Ask));
    }
    let probe = Probe {
        local_minute_of_day: 1440,
        ..probe_at(0, &history)
    };
    let finding = run_checks(&[("change-window", &outside)], &probe)
        .pop()
        .expect("finding");
    assert!(finding.outcome.is_unknown(), "{finding:?}");
}

/// A spec built by hand, not parsed, may hold values the parser would refuse: still no panic.
#[test]
fn hand_built_extremes_do_not_panic() {
    use nightwatch_checks::{
        CheckKind, CheckSpec, CircuitBreakerCheck, Pattern, ProcessCheck, ProcessPattern,
    };
    let breaker = CheckSpec {
        kind: CheckKind::CircuitBreaker(CircuitBreakerCheck {
            failures: 0,
            within: Duration::MAX,
        }),
        on_match: Verdict::Halt,
        message: None,
        timeout: Duration::MAX,
    };
    let process = CheckSpec {
        kind: CheckKind::Process(ProcessCheck {
            pattern: ProcessPattern::Name(Pattern::new("*").expect("glob")),
            min_age: Duration::MAX,
        }),
        on_match: Verdict::Ask,
        message: None,
        timeout: Duration::ZERO,
    };
    let history = NO_FAILURES;
    let probe = Probe {
        now_ms: i64::MIN,
        ..probe_at(0, &history)
    };
    let findings = run_checks(&[("b", &breaker), ("p", &process)], &probe);
    assert_eq!(findings.len(), 2);
    assert!(findings[1].outcome.is_unknown(), "{findings:?}");
}
