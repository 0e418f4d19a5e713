//! Data-driven: each case is a policy's `trust:` section, a ledger written as a short script,
//! and the report, one line per agent.
//!
//! Script lines (one record each; ids are `r1`, `r2`, ... in order; `@N` is day N at 00:00):
//!
//! ```text
//! 3x d claude allow @0     three decisions by agent claude, verdict allow
//! d script/exec deny @1    a decision by actor kind script, id exec
//! r claude 0 @1            a result with exit code 0
//! t claude draft @2        a human placed claude in tier draft
//! u r3 @2                  an undo of record r3
//! ```

use super::*;
use nightwatch_ledger::{Outputs, RecordActor, RecordContext};
use nightwatch_policy::Policy;
use serde_json::json;

const NOW_DAY: i64 = 10;

fn settings(trust: &str) -> TrustSettings {
    let source = format!("version: 1\ntrust:\n{trust}");
    let policy = Policy::compile(&source, nightwatch_shell::analyse)
        .unwrap_or_else(|e| panic!("{e}\n{source}"));
    policy.safeguards().trust.clone()
}

fn ledger(script: &str) -> Vec<Record> {
    let mut records = Vec::new();
    for line in script.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (times, line) = match line.split_once("x ") {
            Some((n, rest)) if n.parse::<usize>().is_ok() => (n.parse().unwrap_or(1), rest),
            _ => (1, line),
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        let day: i64 = words
            .last()
            .and_then(|w| w.strip_prefix('@'))
            .and_then(|d| d.parse().ok())
            .unwrap_or_else(|| panic!("no @DAY in {line:?}"));
        for _ in 0..times {
            let seq = records.len() as u64 + 1;
            records.push(record(seq, day * DAY_MS, &words));
        }
    }
    records
}

fn record(seq: u64, timestamp_ms: i64, words: &[&str]) -> Record {
    let actor = |who: &str| match who.split_once('/') {
        Some((kind, id)) => RecordActor {
            kind: kind.to_owned(),
            id: id.to_owned(),
        },
        None => RecordActor {
            kind: "agent".to_owned(),
            id: who.to_owned(),
        },
    };
    let mut record = Record {
        id: Record::id_for(seq),
        seq,
        event: String::new(),
        timestamp_ms,
        session_id: None,
        actor: RecordActor::default(),
        tool: "exec".to_owned(),
        inputs: json!({}),
        outputs: None,
        context: RecordContext::default(),
        duration_ms: None,
        verdict: None,
        rule: None,
        reasons: Vec::new(),
        call_id: None,
        redacted: Vec::new(),
        cwd: None,
        safeguards: None,
        prev_hash: String::new(),
        hash: String::new(),
    };
    match words {
        ["d", who, verdict, _] => {
            record.event = event::DECISION.to_owned();
            record.actor = actor(who);
            record.verdict = Some((*verdict).to_owned());
        }
        ["r", who, code, _] => {
            record.event = event::RESULT.to_owned();
            record.actor = actor(who);
            record.outputs = Some(Outputs {
                exit_code: code.parse().ok(),
                ..Outputs::default()
            });
        }
        ["t", agent, tier, _] => {
            record.event = event::TRUST.to_owned();
            record.actor = actor("human/ops");
            record.tool = "trust".to_owned();
            record.inputs = json!({"agent": agent, "tier": tier, "why": "reviewed"});
        }
        ["u", target, _] => {
            record.event = event::UNDO.to_owned();
            record.actor = actor("human/ops");
            record.tool = "undo".to_owned();
            record.inputs = json!({"record": target, "snapshot": "s1"});
        }
        other => panic!("cannot read script line {other:?}"),
    }
    record
}

fn line(report: &AgentReport) -> String {
    let t = &report.tally;
    let recommendation = match &report.recommendation {
        Recommendation::Promote(to) => format!("promote to {to}"),
        Recommendation::Demote(to) => format!("demote to {to}"),
        Recommendation::Stay => "stay".to_owned(),
    };
    format!(
        "{} {} {}d: {} actions ({} allow, {} ask, {} halt, {} deny), {} undos, {} results \
         {} failed -> {recommendation} | {}",
        report.agent,
        report.placement.tier,
        report.days_in_tier,
        t.actions,
        t.allows,
        t.asks,
        t.halts,
        t.denials,
        t.undos,
        t.results,
        t.failures,
        report.reasons.join("; ")
    )
}

#[track_caller]
fn check(trust: &str, script: &str, expected: &[&str]) {
    let got: Vec<String> = report(&ledger(script), &settings(trust), NOW_DAY * DAY_MS)
        .iter()
        .map(line)
        .collect();
    assert_eq!(got, expected, "\n{script}");
}

/// Low bounds so scripts stay short; the demote bounds sit well above them.
const SMALL: &str = "
  promote: { min_actions: 3, min_days_in_tier: 2, max_denials: 1, max_halts: 1, max_undos: 1, max_failure_rate: 0.5 }
  demote: { max_denials: 3, max_halts: 3, max_undos: 3, max_failure_rate: 0.75 }
";

#[test]
fn no_records_no_agents() {
    check(SMALL, "", &[]);
}

#[test]
fn an_agent_exactly_at_every_promotion_bound_is_promoted() {
    check(
        SMALL,
        "
        d claude allow @8
        d claude deny @8
        d claude halt @8
        r claude 0 @8
        r claude 1 @8
        u r1 @9
        ",
        &[
            "claude observe 2d: 3 actions (1 allow, 0 ask, 1 halt, 1 deny), 1 undos, 2 results 1 \
           failed -> promote to draft | every promotion bound holds: actions 3 >= 3, days in \
           tier 2 >= 2, denials 1 <= 1, halts 1 <= 1, undos 1 <= 1, failure rate 0.5 <= 0.5",
        ],
    );
}

#[test]
fn one_short_of_any_promotion_bound_stays() {
    let at_bounds = "d claude allow @8\nd claude deny @8\nd claude halt @8\nr claude 0 @8\n\
                     r claude 1 @8\nu r1 @9";
    let cases = [
        (
            "d claude allow @8\nd claude allow @8\nr claude 0 @8",
            "actions 2 < 3",
        ),
        ("3x d claude allow @9\nr claude 0 @9", "days in tier 1 < 2"),
        (&*format!("{at_bounds}\nd claude deny @9"), "denials 2 > 1"),
        (&*format!("{at_bounds}\nd claude halt @9"), "halts 2 > 1"),
        (&*format!("{at_bounds}\nu r2 @9"), "undos 2 > 1"),
        (
            &*format!("{at_bounds}\nr claude 2 @9"),
            "failure rate 0.667 > 0.5",
        ),
        ("3x d claude allow @8", "failure rate unknown (no results)"),
    ];
    for (script, short) in cases {
        let reports = report(&ledger(script), &settings(SMALL), NOW_DAY * DAY_MS);
        assert_eq!(reports.len(), 1, "{script}");
        assert_eq!(reports[0].recommendation, Recommendation::Stay, "{script}");
        let reasons = reports[0].reasons.join("; ");
        assert!(reasons.starts_with("short of promotion: "), "{reasons}");
        assert!(reasons.contains(short), "{short:?} not in {reasons:?}");
    }
}

#[test]
fn demotion_bounds_are_crossed_only_past_them() {
    let trust = "
  promote: { min_actions: 100 }
  demote: { max_denials: 2, max_failure_rate: 0.5 }
";
    check(
        trust,
        "
        t claude nonprod @1
        2x d claude deny @2
        r claude 0 @2
        r claude 1 @2
        ",
        &[
            "claude nonprod 9d: 2 actions (0 allow, 0 ask, 0 halt, 2 deny), 0 undos, 2 results 1 \
           failed -> stay | short of promotion: actions 2 < 100",
        ],
    );
    check(
        trust,
        "
        t claude nonprod @1
        3x d claude deny @2
        2x r claude 1 @2
        ",
        &[
            "claude nonprod 9d: 3 actions (0 allow, 0 ask, 0 halt, 3 deny), 0 undos, 2 results 2 \
           failed -> demote to draft | demotion bound crossed: denials 3 > 2, failure rate 1 > 0.5",
        ],
    );
}

#[test]
fn demotion_wins_over_promotion() {
    check(
        "
  promote: { min_actions: 1, max_failure_rate: 1.0 }
  demote: { max_failure_rate: 0.25 }
",
        "
        t claude draft @0
        2x d claude allow @1
        r claude 0 @1
        r claude 7 @1
        ",
        &[
            "claude draft 10d: 2 actions (2 allow, 0 ask, 0 halt, 0 deny), 0 undos, 2 results 1 \
           failed -> demote to observe | demotion bound crossed: failure rate 0.5 > 0.25",
        ],
    );
}

#[test]
fn no_promotion_past_the_top_and_no_demotion_below_the_bottom() {
    check(
        SMALL,
        "
        t top prod @0
        3x d top allow @1
        r top 0 @1
        5x d bottom deny @1
        ",
        &[
            "bottom observe 9d: 5 actions (0 allow, 0 ask, 0 halt, 5 deny), 0 undos, 0 results 0 \
             failed -> stay | already in the lowest tier, though a demotion bound is crossed: \
             denials 5 > 3",
            "top prod 10d: 3 actions (3 allow, 0 ask, 0 halt, 0 deny), 0 undos, 1 results 0 \
             failed -> stay | already in the highest tier",
        ],
    );
}

#[test]
fn a_trust_record_starts_the_count_again() {
    check(
        SMALL,
        "
        5x d claude deny @1
        r claude 1 @1
        u r1 @2
        t claude draft @3
        u r2 @4
        3x d claude allow @4
        3x r claude 0 @4
        ",
        &[
            "claude draft 7d: 3 actions (3 allow, 0 ask, 0 halt, 0 deny), 1 undos, 3 results 0 \
           failed -> promote to nonprod | every promotion bound holds: actions 3 >= 3, days in \
           tier 7 >= 2, denials 0 <= 1, halts 0 <= 1, undos 1 <= 1, failure rate 0 <= 0.5",
        ],
    );
}

#[test]
fn agents_are_apart_and_humans_are_not_agents() {
    check(
        SMALL,
        "
        3x d a allow @1
        r a 0 @1
        d script/exec deny @1
        d human/ops allow @1
        t b nonprod @5
        u r5 @6
        ",
        &[
            "a observe 9d: 3 actions (3 allow, 0 ask, 0 halt, 0 deny), 0 undos, 1 results 0 \
             failed -> promote to draft | every promotion bound holds: actions 3 >= 3, days in \
             tier 9 >= 2, denials 0 <= 1, halts 0 <= 1, undos 0 <= 1, failure rate 0 <= 0.5",
            "b nonprod 5d: 0 actions (0 allow, 0 ask, 0 halt, 0 deny), 0 undos, 0 results 0 \
             failed -> stay | short of promotion: actions 0 < 3, failure rate unknown (no results)",
            "exec observe 9d: 1 actions (0 allow, 0 ask, 0 halt, 1 deny), 1 undos, 0 results 0 \
             failed -> stay | short of promotion: actions 1 < 3, failure rate unknown (no results)",
        ],
    );
}

#[test]
fn a_tier_the_policy_no_longer_has_is_the_lowest() {
    check(
        SMALL,
        "
        t claude root @0
        d claude allow @1
        ",
        &[
            "claude observe 10d: 1 actions (1 allow, 0 ask, 0 halt, 0 deny), 0 undos, 0 results 0 \
           failed -> stay | placed in \"root\", which the policy's tiers do not name: treated as \
           observe; short of promotion: actions 1 < 3, failure rate unknown (no results)",
        ],
    );
}

#[test]
fn a_policy_without_promotion_bounds_promotes_nobody() {
    check(
        "  promote: {}\n  demote: {}\n",
        "3x d claude allow @1",
        &[
            "claude observe 9d: 3 actions (3 allow, 0 ask, 0 halt, 0 deny), 0 undos, 0 results 0 \
           failed -> stay | the policy sets no promotion bounds, so none can hold",
        ],
    );
}

#[test]
fn the_default_tier_is_where_an_unplaced_agent_starts() {
    let trust = settings("  tiers: [sandbox, staging, live]\n  default: staging\n");
    let records = ledger("d claude allow @1\nt other live @2");
    assert_eq!(
        tier_from_trust_records(&records, "claude", &trust),
        "staging"
    );
    assert_eq!(tier_from_trust_records(&records, "other", &trust), "live");
    let records = ledger("t claude live @1\nt claude sandbox @2\nt other staging @3");
    let placement = current_tier(&records, "claude", &trust);
    assert_eq!(placement.tier, "sandbox", "the latest record wins");
    let by = placement.placed_by.expect("placed");
    assert_eq!(
        (by.id.as_str(), by.by.as_str(), by.why.as_str()),
        ("r2", "ops", "reviewed")
    );
    assert_eq!(by.timestamp_ms, 2 * DAY_MS);
}

#[test]
fn since_narrows_the_count_but_not_the_tier() {
    let records =
        ledger("t claude draft @1\n2x d claude deny @2\n3x d claude allow @8\nr claude 0 @8");
    let all = report(&records, &settings(SMALL), NOW_DAY * DAY_MS);
    assert_eq!(all[0].tally.denials, 2);
    let recent = report_since(
        &records,
        &settings(SMALL),
        NOW_DAY * DAY_MS,
        Some(7 * DAY_MS),
    );
    assert_eq!(recent[0].tally.actions, 3);
    assert_eq!(recent[0].tally.denials, 0);
    assert_eq!(
        recent[0].days_in_tier, 9,
        "days in tier still count from the trust record"
    );
    assert_eq!(
        recent[0].recommendation,
        Recommendation::Promote("nonprod".to_owned())
    );
}
