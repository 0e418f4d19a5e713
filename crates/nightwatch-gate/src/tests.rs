//! The pipeline with made-up path facts: policy judges every name the guards know for a path,
//! from the proposal's directory, and the backup still takes the paths as the line names them.

use super::*;
use nightwatch_backup::{Limits, Observation, Snapshot};
use nightwatch_checks::{CheckSpec, Finding, History};
use nightwatch_core::{ActorKind, Tool};
use nightwatch_policy::PathFacts;
use serde_json::json;
use std::sync::Mutex;

/// Guards whose facts call `<cwd>/state/...` `$NIGHTWATCH_HOME/...` and give every path two
/// more names, and whose backups only note the paths they were asked for.
#[derive(Default)]
struct MadeUp {
    backed_up: Mutex<Vec<PathBuf>>,
}

struct MadeUpFacts(Option<String>);

impl PathFacts for MadeUpFacts {
    fn aliases(&self, path: &str) -> Vec<String> {
        let Some(cwd) = &self.0 else {
            return Vec::new();
        };
        let absolute = format!("{cwd}/{path}");
        let mut aliases = vec![absolute.clone(), format!("~/elsewhere/{path}")];
        if let Some(rest) = absolute.strip_prefix("/srv/app/state/") {
            aliases.push(format!("$NIGHTWATCH_HOME/{rest}"));
        }
        aliases
    }
}

impl Guards for MadeUp {
    fn path_facts(&self, cwd: Option<&str>) -> Box<dyn PathFacts + '_> {
        Box::new(MadeUpFacts(cwd.map(str::to_owned)))
    }

    fn run_checks(
        &self,
        _: &[(&str, &CheckSpec)],
        _: &CheckSubject<'_>,
        _: &dyn History,
    ) -> Vec<Finding> {
        Vec::new()
    }

    fn back_up(&self, paths: &[PathBuf], _: &Limits, _: i64) -> Result<Snapshot, String> {
        self.backed_up
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(paths);
        Err("no store in this test".to_owned())
    }

    fn observe(&self, _: &[PathBuf], _: &Limits) -> Observation {
        Observation::default()
    }
}

const POLICY: &str = r#"
version: 1
default: allow
rules:
  - id: no-touching-nightwatch
    verdict: deny
    paths: ["$NIGHTWATCH_HOME/**"]
"#;

fn ledger() -> nightwatch_store::memory::MemoryLedger {
    nightwatch_store::memory::MemoryLedger::new()
}

/// A clock stopped at one instant, in UTC.
pub(crate) struct Stopped(pub i64, pub jiff::tz::TimeZone);

impl Clock for Stopped {
    fn now_ms(&self) -> i64 {
        self.0
    }
    fn zone(&self) -> &jiff::tz::TimeZone {
        &self.1
    }
}

static CLOCK: Stopped = Stopped(1, jiff::tz::TimeZone::UTC);

fn propose(engine: &Engine<'_>, policy: &Policy, line: &str, cwd: Option<&str>) -> Ruling {
    let action = Action::new(
        Actor::new(ActorKind::Agent, "claude-code"),
        Tool::Exec {
            line: line.to_owned(),
        },
    );
    engine
        .propose(
            policy,
            Proposal {
                action,
                call_id: None,
                inputs: json!({ "command": line }),
                cwd: cwd.map(str::to_owned),
            },
        )
        .expect("recorded")
}

#[test]
fn policy_judges_the_names_the_guards_know_from_the_calls_directory() {
    let policy = Policy::from_yaml(POLICY, nightwatch_shell::analyse).expect("policy");
    let ledger = ledger();
    let guards = MadeUp::default();
    let engine = Engine::new(&ledger, &guards, &CLOCK, &NoEscalator, None);
    let rows = [
        ("cat state/ledger.db", Some("/srv/app"), Verdict::Deny),
        ("cat state/ledger.db", Some("/srv/other"), Verdict::Allow),
        ("cat state/ledger.db", None, Verdict::Allow),
        ("cat README.md", Some("/srv/app"), Verdict::Allow),
    ];
    for (line, cwd, verdict) in rows {
        let ruling = propose(&engine, &policy, line, cwd);
        assert_eq!(ruling.decision.verdict, verdict, "{line} in {cwd:?}");
        assert_eq!(ruling.record.verdict.as_deref(), Some(verdict.as_str()));
    }
}

#[test]
fn backups_take_the_paths_as_the_line_names_them() {
    let policy = Policy::from_yaml(POLICY, nightwatch_shell::analyse).expect("policy");
    let ledger = ledger();
    let guards = MadeUp::default();
    let engine = Engine::new(&ledger, &guards, &CLOCK, &NoEscalator, None);
    let ruling = propose(&engine, &policy, "echo hi > out.txt", Some("/srv/app"));
    // The made-up store refuses, so the write is denied; what it was asked for is the point.
    assert_eq!(ruling.decision.verdict, Verdict::Deny);
    let backed_up = guards.backed_up.lock().expect("lock").clone();
    assert_eq!(backed_up, [PathBuf::from("/srv/app/out.txt")]);
    let reasons = ruling.record.reasons.join("\n");
    assert!(!reasons.contains("elsewhere"), "{reasons}");
}

/// A fence that holds until `until_ms`, then says why not.
struct Until(i64);

impl Fence for Until {
    fn holds(&self, now_ms: i64) -> Result<(), String> {
        if now_ms < self.0 {
            Ok(())
        } else {
            Err(format!("the lease ran out at {}", self.0))
        }
    }
}

#[test]
fn a_job_whose_fence_no_longer_holds_is_denied_and_the_record_says_why() {
    let policy = Policy::from_yaml(POLICY, nightwatch_shell::analyse).expect("policy");
    let ledger = ledger();
    let guards = MadeUp::default();
    let engine = Engine::new(&ledger, &guards, &CLOCK, &NoEscalator, None);
    let held = Until(CLOCK.0 + 1);
    let ruling = propose(&engine.with_fence(&held), &policy, "cat README.md", None);
    assert_eq!(
        ruling.decision.verdict,
        Verdict::Allow,
        "held: as policy says"
    );

    let lost = Until(CLOCK.0);
    let ruling = propose(&engine.with_fence(&lost), &policy, "cat README.md", None);
    assert_eq!(ruling.decision.verdict, Verdict::Deny);
    assert_eq!(ruling.record.verdict.as_deref(), Some("deny"));
    let reasons = ruling.record.reasons.join("\n");
    assert!(
        reasons.contains(&format!("fence: the lease ran out at {}", CLOCK.0)),
        "{reasons}"
    );
    // A verdict that already stops the action keeps its own reason.
    let denied = propose(
        &engine.with_fence(&lost),
        &policy,
        "cat state/ledger.db",
        Some("/srv/app"),
    );
    assert_eq!(denied.decision.verdict, Verdict::Deny);
    assert!(!denied.decision.reason.starts_with("fence:"));
}
