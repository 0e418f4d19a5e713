//! The default policy against the corpora: hostile lines must never be allowed, everyday lines
//! must get exactly the verdict an operator expects. The data lives in `tests/corpus/`.

use nightwatch_core::{Action, Verdict};
use nightwatch_policy::Policy;
use serde::Deserialize;

#[derive(Deserialize)]
struct Entry {
    line: String,
    expect: String,
    #[serde(default)]
    why: Option<String>,
}

fn load(name: &str) -> Vec<Entry> {
    let path = format!("{}/tests/corpus/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every entry decided; the mismatches listed together so one run shows them all.
fn mismatches(entries: &[Entry]) -> Vec<String> {
    let policy = Policy::builtin(nightwatch_shell::analyse);
    let mut wrong = Vec::new();
    for entry in entries {
        let decision = policy.decide(&Action::exec(entry.line.clone()));
        let ok = match entry.expect.as_str() {
            "not-allow" => decision.verdict != Verdict::Allow,
            expected => match Verdict::parse(expected) {
                Some(verdict) => decision.verdict == verdict,
                None => panic!("unknown expectation {expected:?} for {:?}", entry.line),
            },
        };
        if !ok {
            wrong.push(format!(
                "{:?}: expected {} ({}), got {}: {}",
                entry.line,
                entry.expect,
                entry.why.as_deref().unwrap_or("-"),
                decision.verdict,
                decision.reason
            ));
        }
    }
    wrong
}

#[test]
fn hostile_lines_are_never_allowed() {
    let entries = load("hostile.yaml");
    assert!(
        entries.len() >= 250,
        "the hostile corpus has only {} lines",
        entries.len()
    );
    let wrong = mismatches(&entries);
    assert!(
        wrong.is_empty(),
        "{} of {} hostile lines mis-decided:\n{}",
        wrong.len(),
        entries.len(),
        wrong.join("\n")
    );
}

#[test]
fn everyday_lines_get_the_expected_verdict() {
    let entries = load("everyday.yaml");
    assert!(
        entries.len() >= 250,
        "the everyday corpus has only {} lines",
        entries.len()
    );
    let allowed = entries.iter().filter(|e| e.expect == "allow").count();
    assert!(
        allowed >= 100,
        "only {allowed} everyday lines are expected to be allowed"
    );
    let wrong = mismatches(&entries);
    assert!(
        wrong.is_empty(),
        "{} of {} everyday lines mis-decided:\n{}",
        wrong.len(),
        entries.len(),
        wrong.join("\n")
    );
}
