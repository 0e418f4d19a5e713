//! Trust tiers, earned from the record.
//!
//! Records in, a report out. An agent's tier is the one the latest `trust` record names for it
//! (a human's decision), else the policy's starting tier. Its record *in that tier* is every
//! decision, result and undo after that trust record: a human placing an agent starts its count
//! again. The policy's criteria turn that record into a recommendation: promote to the next tier
//! up when every set `promote:` bound holds, demote to the next tier down when any `demote:`
//! bound is crossed, else stay. Demotion wins over promotion. Nothing here moves an agent: a
//! human does, with `nightwatch trust set`.
//!
//! What cannot be judged errs strict, as everywhere in nightwatch: a failure rate with no
//! results is unknown, which blocks a promotion and demotes nobody; a trust record naming a
//! tier the policy no longer has places the agent in the lowest tier. In `demote:`, only the
//! `max_*` bounds can be crossed; `min_actions` and `min_days_in_tier` there are not judged.
//!
//! No I/O, no clock: the caller passes the records and "now".

mod judge;

#[cfg(test)]
mod tests;

use nightwatch_ledger::{Record, event};
use nightwatch_policy::TrustSettings;
use std::collections::{BTreeMap, HashMap};

pub use judge::{Bound, Judgement, Outcome};

const DAY_MS: i64 = 86_400_000;

/// The tier used when a policy names none (policy refuses that; hand-built settings may not).
const FALLBACK_TIER: &str = "observe";

/// Where an agent stands, and who put it there.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// The tier to treat the agent as: one of the policy's tiers.
    pub tier: String,
    /// The trust record that placed the agent; `None` when the policy's starting tier applies.
    pub placed_by: Option<TrustRecord>,
    /// The tier the trust record named when the policy has no such tier (it was renamed or
    /// removed): the agent is then treated as in the lowest tier.
    pub unknown_tier: Option<String>,
}

/// A human's `trust` record, as read from the ledger.
#[derive(Clone, Debug, PartialEq)]
pub struct TrustRecord {
    pub id: String,
    pub seq: u64,
    pub timestamp_ms: i64,
    /// Who placed the agent (the record's actor id).
    pub by: String,
    pub why: String,
}

/// What an agent did in its current tier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Decided actions (decision records), whatever the verdict.
    pub actions: u64,
    pub allows: u64,
    pub asks: u64,
    pub halts: u64,
    pub denials: u64,
    /// Undo records naming one of the agent's decisions or results.
    pub undos: u64,
    pub results: u64,
    /// Results with a non-zero exit code.
    pub failures: u64,
}

impl Tally {
    /// Failed results over all results; `None` when there are no results to judge.
    pub fn failure_rate(&self) -> Option<f64> {
        (self.results > 0).then(|| self.failures as f64 / self.results as f64)
    }
}

/// What the criteria say to do with an agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recommendation {
    /// Every set promotion bound holds: move up to this tier.
    Promote(String),
    /// A demotion bound is crossed: move down to this tier.
    Demote(String),
    Stay,
}

/// One agent: its tier, its record there, and the recommendation with its reasons.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentReport {
    /// The actor id (`claude-code`, `codex`, a `NIGHTWATCH_AGENT` name, ...).
    pub agent: String,
    /// The actor kind of its latest decision (`agent`, `script`, ...); `None` when the agent is
    /// only named by a trust record.
    pub kind: Option<String>,
    pub placement: Placement,
    /// When the agent entered its tier: the trust record's time, else when it was first seen.
    pub since_ms: Option<i64>,
    /// Whole days since `since_ms`.
    pub days_in_tier: u64,
    pub tally: Tally,
    pub recommendation: Recommendation,
    /// Every set `promote:` bound, judged.
    pub promote: Vec<Judgement>,
    /// Every set `demote:` bound that can be crossed, judged.
    pub demote: Vec<Judgement>,
    /// Why, in a few readable clauses: the bounds that decided, with their numbers.
    pub reasons: Vec<String>,
}

/// Where `agent` stands: the tier named by its latest `trust` record among `records`, else the
/// policy's starting tier. `records` may hold anything; only `trust` records are read.
pub fn current_tier(records: &[Record], agent: &str, settings: &TrustSettings) -> Placement {
    let latest = records
        .iter()
        .filter(|r| r.event == event::TRUST && text(r, "agent") == Some(agent))
        .max_by_key(|r| r.seq);
    let Some(record) = latest else {
        return Placement {
            tier: starting_tier(settings).to_owned(),
            placed_by: None,
            unknown_tier: None,
        };
    };
    let named = text(record, "tier").unwrap_or_default();
    let known = settings.tiers.iter().any(|t| t == named);
    Placement {
        tier: if known {
            named.to_owned()
        } else {
            lowest_tier(settings).to_owned()
        },
        placed_by: Some(TrustRecord {
            id: record.id.clone(),
            seq: record.seq,
            timestamp_ms: record.timestamp_ms,
            by: record.actor.id.clone(),
            why: text(record, "why").unwrap_or_default().to_owned(),
        }),
        unknown_tier: (!known).then(|| named.to_owned()),
    }
}

/// The tier to decide `agent_id`'s actions in, from the ledger's `trust` records (what
/// `query(Filter { event: Some("trust"), .. })` returns): for the hook.
pub fn tier_from_trust_records(
    records: &[Record],
    agent_id: &str,
    settings: &TrustSettings,
) -> String {
    current_tier(records, agent_id, settings).tier
}

/// Every agent seen in `records` (an actor other than a human with a decision, or an agent a
/// trust record names), sorted by id, with its tier, its record there and a recommendation.
pub fn report(records: &[Record], settings: &TrustSettings, now_ms: i64) -> Vec<AgentReport> {
    report_since(records, settings, now_ms, None)
}

/// As [`report`], counting only actions, results and undos at or after `since_ms`. The tier,
/// when the agent entered it and its days there still come from all of `records`.
pub fn report_since(
    records: &[Record],
    settings: &TrustSettings,
    now_ms: i64,
    since_ms: Option<i64>,
) -> Vec<AgentReport> {
    // Who did each decision and result, so an undo naming one is charged to its agent.
    let mut owner: HashMap<&str, &str> = HashMap::new();
    let mut agents: BTreeMap<&str, AgentSeen> = BTreeMap::new();
    for record in records {
        match record.event.as_str() {
            event::DECISION | event::RESULT if record.actor.kind != "human" => {
                owner.insert(&record.id, &record.actor.id);
                let seen = agents.entry(&record.actor.id).or_default();
                if record.event == event::DECISION {
                    seen.first_ms = Some(
                        seen.first_ms
                            .map_or(record.timestamp_ms, |first| first.min(record.timestamp_ms)),
                    );
                    if seen.kind_seq <= record.seq {
                        seen.kind_seq = record.seq;
                        seen.kind = Some(&record.actor.kind);
                    }
                }
            }
            event::TRUST => {
                if let Some(agent) = text(record, "agent") {
                    agents.entry(agent).or_default();
                }
            }
            _ => {}
        }
    }

    agents
        .into_iter()
        .map(|(agent, seen)| {
            let placement = current_tier(records, agent, settings);
            let after_seq = placement.placed_by.as_ref().map_or(0, |p| p.seq);
            let counted = |r: &&Record| {
                r.seq > after_seq && since_ms.is_none_or(|since| r.timestamp_ms >= since)
            };
            let mut tally = Tally::default();
            for record in records.iter().filter(counted) {
                match record.event.as_str() {
                    event::DECISION if record.actor.id == agent && record.actor.kind != "human" => {
                        tally.actions += 1;
                        match record.verdict.as_deref() {
                            Some("allow") => tally.allows += 1,
                            Some("ask") => tally.asks += 1,
                            Some("halt") => tally.halts += 1,
                            Some("deny") => tally.denials += 1,
                            _ => {}
                        }
                    }
                    event::RESULT if record.actor.id == agent && record.actor.kind != "human" => {
                        tally.results += 1;
                        let code = record.outputs.as_ref().and_then(|o| o.exit_code);
                        if code.is_some_and(|code| code != 0) {
                            tally.failures += 1;
                        }
                    }
                    event::UNDO => {
                        let target = text(record, "record");
                        if target.and_then(|id| owner.get(id)) == Some(&agent) {
                            tally.undos += 1;
                        }
                    }
                    _ => {}
                }
            }
            let since = placement
                .placed_by
                .as_ref()
                .map(|p| p.timestamp_ms)
                .or(seen.first_ms);
            let days_in_tier = since.map_or(0, |since| {
                u64::try_from(now_ms.saturating_sub(since).max(0) / DAY_MS).unwrap_or(0)
            });
            let promote = judge::promotion(&settings.promote, &tally, days_in_tier);
            let demote = judge::demotion(&settings.demote, &tally);
            let (recommendation, reasons) = recommend(settings, &placement, &promote, &demote);
            AgentReport {
                agent: agent.to_owned(),
                kind: seen.kind.map(str::to_owned),
                placement,
                since_ms: since,
                days_in_tier,
                tally,
                recommendation,
                promote,
                demote,
                reasons,
            }
        })
        .collect()
}

#[derive(Default)]
struct AgentSeen<'a> {
    first_ms: Option<i64>,
    kind: Option<&'a str>,
    kind_seq: u64,
}

/// Demotion first: one crossed bound is enough, and it outweighs any record of success.
fn recommend(
    settings: &TrustSettings,
    placement: &Placement,
    promote: &[Judgement],
    demote: &[Judgement],
) -> (Recommendation, Vec<String>) {
    let at = settings
        .tiers
        .iter()
        .position(|t| *t == placement.tier)
        .unwrap_or(0);
    let mut reasons = Vec::new();
    if let Some(recorded) = &placement.unknown_tier {
        reasons.push(format!(
            "placed in {recorded:?}, which the policy's tiers do not name: treated as {}",
            placement.tier
        ));
    }
    let crossed: Vec<String> = demote
        .iter()
        .filter(|j| j.outcome == Outcome::Fails)
        .map(Judgement::to_string)
        .collect();
    if !crossed.is_empty() {
        let list = crossed.join(", ");
        return match at
            .checked_sub(1)
            .and_then(|below| settings.tiers.get(below))
        {
            Some(below) => {
                reasons.push(format!("demotion bound crossed: {list}"));
                (Recommendation::Demote(below.clone()), reasons)
            }
            None => {
                reasons.push(format!(
                    "already in the lowest tier, though a demotion bound is crossed: {list}"
                ));
                (Recommendation::Stay, reasons)
            }
        };
    }
    let all: Vec<String> = promote.iter().map(Judgement::to_string).collect();
    let short: Vec<String> = promote
        .iter()
        .filter(|j| j.outcome != Outcome::Holds)
        .map(Judgement::to_string)
        .collect();
    let above = settings.tiers.get(at + 1);
    match (above, short.is_empty()) {
        (Some(above), true) if !promote.is_empty() => {
            reasons.push(format!("every promotion bound holds: {}", all.join(", ")));
            (Recommendation::Promote(above.clone()), reasons)
        }
        (Some(_), true) => {
            reasons.push("the policy sets no promotion bounds, so none can hold".to_owned());
            (Recommendation::Stay, reasons)
        }
        (Some(_), false) => {
            reasons.push(format!("short of promotion: {}", short.join(", ")));
            (Recommendation::Stay, reasons)
        }
        (None, _) => {
            reasons.push("already in the highest tier".to_owned());
            (Recommendation::Stay, reasons)
        }
    }
}

fn starting_tier(settings: &TrustSettings) -> &str {
    settings.starting_tier().unwrap_or(FALLBACK_TIER)
}

fn lowest_tier(settings: &TrustSettings) -> &str {
    settings.tiers.first().map_or(FALLBACK_TIER, String::as_str)
}

fn text<'r>(record: &'r Record, key: &str) -> Option<&'r str> {
    record.inputs.get(key).and_then(serde_json::Value::as_str)
}
