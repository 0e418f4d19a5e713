//! `nightwatch trust set | report`: a human places an agent in a tier; the record says whether
//! it has earned the next one. The judgement is `nightwatch_trust`'s; this is the edge (ledger,
//! clock, terminal, JSON).

use crate::cli::{TrustReportArgs, TrustSetArgs};
use crate::clock::Clock;
use crate::commands::{load_policy, open_ledger};
use crate::host::Host;
use crate::timespec;
use anyhow::bail;
use nightwatch_ledger::event;
use nightwatch_ledger::schema::Placement;
use nightwatch_store::LedgerReader;
use nightwatch_trust::{AgentReport, Bound, Judgement, Outcome, Recommendation};
use serde::Serialize;
use serde_json::json;

pub fn set(args: TrustSetArgs) -> anyhow::Result<u8> {
    let (policy, origin) = load_policy(&args.source)?;
    let settings = &policy.safeguards().trust;
    let agent = args.agent.trim();
    if agent.is_empty() {
        bail!("the agent is empty: name it as `nightwatch log` shows it (claude-code, codex, ...)");
    }
    if !settings.tiers.contains(&args.tier) {
        bail!(
            "{origin} has no trust tier {:?}; its tiers are {} (lowest first). Nothing was \
             recorded",
            args.tier,
            settings.tiers.join(", ")
        );
    }
    let why = args.why.trim();
    if why.is_empty() {
        bail!(
            "--why is empty: say why {agent} belongs in {}; nothing was recorded",
            args.tier
        );
    }
    let host = Host::open()?;
    let by = crate::context::human(args.by, &host.env);
    let placed = nightwatch_host::trust::place(
        &host.engine(),
        host.ledger(),
        settings,
        by.clone(),
        Placement {
            agent: agent.to_owned(),
            tier: args.tier.clone(),
            why: why.to_owned(),
        },
    )?;
    println!(
        "{}: {agent} is in {} (was {}), placed by {}: {why}",
        placed.record.id, args.tier, placed.before, by.id
    );
    println!("its count starts again from here; `nightwatch trust report` shows its record");
    Ok(0)
}

pub fn report(args: TrustReportArgs) -> anyhow::Result<u8> {
    let (policy, _) = load_policy(&args.source)?;
    let clock = Clock::from_environment()?;
    let since_ms = args
        .since
        .as_deref()
        .map(|text| {
            timespec::parse(text, clock.now(), clock.zone())
                .map_err(|e| anyhow::anyhow!("--since: {e}"))
        })
        .transpose()?;
    let ledger = open_ledger()?;
    // Every decision, result, undo and trust record: the tier and the days in it come from the
    // whole ledger even when --since narrows what is counted.
    let mut records = Vec::new();
    ledger.scan(&mut |record| {
        if matches!(
            record.event.as_str(),
            event::DECISION | event::RESULT | event::UNDO | event::TRUST
        ) {
            records.push(record.clone());
        }
        Ok(())
    })?;
    let settings = &policy.safeguards().trust;
    let reports = nightwatch_trust::report_since(&records, settings, clock.now_ms(), since_ms);
    if args.json {
        let rows: Vec<AgentJson<'_>> = reports.iter().map(AgentJson::from).collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(0);
    }
    if reports.is_empty() {
        println!("no agents in the ledger yet");
        return Ok(0);
    }
    print!("{}", table(&reports, &clock));
    Ok(0)
}

/// A readable table, one row per agent, each followed by its reasons.
fn table(reports: &[AgentReport], clock: &Clock) -> String {
    let header = [
        "AGENT",
        "TIER",
        "SINCE",
        "DAYS",
        "ACTIONS",
        "ALLOW",
        "ASK",
        "HALT",
        "DENY",
        "UNDO",
        "RESULTS",
        "FAILED",
        "RATE",
        "RECOMMENDATION",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_owned()).collect()];
    for report in reports {
        let t = &report.tally;
        rows.push(vec![
            report.agent.clone(),
            report.placement.tier.clone(),
            report
                .since_ms
                .map_or_else(|| "-".to_owned(), |ms| local_time(ms, clock)),
            report.days_in_tier.to_string(),
            t.actions.to_string(),
            t.allows.to_string(),
            t.asks.to_string(),
            t.halts.to_string(),
            t.denials.to_string(),
            t.undos.to_string(),
            t.results.to_string(),
            t.failures.to_string(),
            t.failure_rate()
                .map_or_else(|| "-".to_owned(), |rate| format!("{rate:.2}")),
            recommendation(&report.recommendation),
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (index, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(column, cell)| {
                // Names and words left, numbers right.
                if (3..13).contains(&column) {
                    format!("{cell:>width$}", width = widths[column])
                } else {
                    format!("{cell:<width$}", width = widths[column])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
        if index > 0 {
            let report = &reports[index - 1];
            out.push_str(&format!("  why: {}\n", report.reasons.join("; ")));
        }
    }
    out
}

fn recommendation(recommendation: &Recommendation) -> String {
    match recommendation {
        Recommendation::Promote(to) => format!("promote to {to}"),
        Recommendation::Demote(to) => format!("demote to {to}"),
        Recommendation::Stay => "stay".to_owned(),
    }
}

/// A time as the operator's clock reads it: `2026-02-14 03:17`.
pub(super) fn local_time(ms: i64, clock: &Clock) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| {
            t.to_zoned(clock.zone().clone())
                .strftime("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|_| nightwatch_ledger::rfc3339(ms))
}

/// `trust report --json`: one object per agent, fields in this order, always present.
#[derive(Serialize)]
struct AgentJson<'a> {
    agent: &'a str,
    kind: Option<&'a str>,
    tier: &'a str,
    /// RFC 3339 UTC: when the agent entered its tier (its trust record, else first seen).
    since: Option<String>,
    days_in_tier: u64,
    placed_by: Option<PlacedJson<'a>>,
    /// The tier a trust record named that the policy does not have (the agent is then in the
    /// lowest).
    unknown_tier: Option<&'a str>,
    actions: u64,
    allows: u64,
    asks: u64,
    halts: u64,
    denials: u64,
    undos: u64,
    results: u64,
    failures: u64,
    failure_rate: Option<f64>,
    /// `promote`, `demote` or `stay`.
    recommendation: &'static str,
    /// The tier to move to; `null` for stay.
    to: Option<&'a str>,
    promote: Vec<JudgementJson>,
    demote: Vec<JudgementJson>,
    reasons: &'a [String],
}

#[derive(Serialize)]
struct PlacedJson<'a> {
    record: &'a str,
    by: &'a str,
    why: &'a str,
}

#[derive(Serialize)]
struct JudgementJson {
    bound: &'static str,
    limit: serde_json::Value,
    value: serde_json::Value,
    /// `holds`, `fails` or `unknown`.
    outcome: &'static str,
}

impl<'a> From<&'a AgentReport> for AgentJson<'a> {
    fn from(report: &'a AgentReport) -> AgentJson<'a> {
        let t = &report.tally;
        let (recommendation, to) = match &report.recommendation {
            Recommendation::Promote(to) => ("promote", Some(to.as_str())),
            Recommendation::Demote(to) => ("demote", Some(to.as_str())),
            Recommendation::Stay => ("stay", None),
        };
        AgentJson {
            agent: &report.agent,
            kind: report.kind.as_deref(),
            tier: &report.placement.tier,
            since: report.since_ms.map(nightwatch_ledger::rfc3339),
            days_in_tier: report.days_in_tier,
            placed_by: report.placement.placed_by.as_ref().map(|p| PlacedJson {
                record: &p.id,
                by: &p.by,
                why: &p.why,
            }),
            unknown_tier: report.placement.unknown_tier.as_deref(),
            actions: t.actions,
            allows: t.allows,
            asks: t.asks,
            halts: t.halts,
            denials: t.denials,
            undos: t.undos,
            results: t.results,
            failures: t.failures,
            failure_rate: t.failure_rate(),
            recommendation,
            to,
            promote: report.promote.iter().map(judgement_json).collect(),
            demote: report.demote.iter().map(judgement_json).collect(),
            reasons: &report.reasons,
        }
    }
}

fn judgement_json(judgement: &Judgement) -> JudgementJson {
    // Counts as integers, the failure rate as a fraction.
    let rate = judgement.bound == Bound::MaxFailureRate;
    let number = |value: f64| {
        if rate {
            json!(value)
        } else {
            json!(value as u64)
        }
    };
    JudgementJson {
        bound: judgement.bound.as_str(),
        limit: number(judgement.limit),
        value: judgement.value.map_or(serde_json::Value::Null, number),
        outcome: match judgement.outcome {
            Outcome::Holds => "holds",
            Outcome::Fails => "fails",
            Outcome::Unknown => "unknown",
        },
    }
}
