//! One criterion bound against an agent's record.

use crate::Tally;
use nightwatch_policy::Criteria;
use std::fmt;

/// A bound a policy's `promote:` or `demote:` may set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    MinActions,
    MinDaysInTier,
    MaxDenials,
    MaxHalts,
    MaxUndos,
    MaxFailureRate,
}

impl Bound {
    /// The policy's name for the bound (`min_actions`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::MinActions => "min_actions",
            Bound::MinDaysInTier => "min_days_in_tier",
            Bound::MaxDenials => "max_denials",
            Bound::MaxHalts => "max_halts",
            Bound::MaxUndos => "max_undos",
            Bound::MaxFailureRate => "max_failure_rate",
        }
    }

    /// What is measured, for people.
    fn measure(self) -> &'static str {
        match self {
            Bound::MinActions => "actions",
            Bound::MinDaysInTier => "days in tier",
            Bound::MaxDenials => "denials",
            Bound::MaxHalts => "halts",
            Bound::MaxUndos => "undos",
            Bound::MaxFailureRate => "failure rate",
        }
    }

    fn is_minimum(self) -> bool {
        matches!(self, Bound::MinActions | Bound::MinDaysInTier)
    }
}

/// How an agent's record stands against one bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Within the bound: at or above a minimum, at or below a maximum.
    Holds,
    /// Outside it: short of a minimum (no promotion), past a maximum (for `demote:`, crossed).
    Fails,
    /// Cannot be told (a failure rate with no results): blocks promotion, demotes nobody.
    Unknown,
}

/// One bound, the agent's value and how it stands.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judgement {
    pub bound: Bound,
    pub limit: f64,
    /// The agent's value; `None` when it cannot be told.
    pub value: Option<f64>,
    pub outcome: Outcome,
}

impl fmt::Display for Judgement {
    /// `actions 12 >= 10`, `denials 6 > 5`, `failure rate 0.5 > 0.25`,
    /// `failure rate unknown (no results)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.bound.measure();
        let Some(value) = self.value else {
            return write!(f, "{name} unknown (no results)");
        };
        let holds = self.outcome == Outcome::Holds;
        let sign = match (self.bound.is_minimum(), holds) {
            (true, true) => ">=",
            (true, false) => "<",
            (false, true) => "<=",
            (false, false) => ">",
        };
        if self.bound == Bound::MaxFailureRate {
            write!(f, "{name} {} {sign} {}", rate(value), rate(self.limit))
        } else {
            write!(f, "{name} {value} {sign} {}", self.limit)
        }
    }
}

/// A rate with at most three decimals and no trailing zeros: `0.05`, `0.333`, `0`.
fn rate(value: f64) -> String {
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text.is_empty() {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// Every bound `promote:` sets, in the policy's order of fields.
pub(crate) fn promotion(criteria: &Criteria, tally: &Tally, days: u64) -> Vec<Judgement> {
    let mut judged = Vec::new();
    let counts = [
        (Bound::MinActions, criteria.min_actions, tally.actions),
        (Bound::MinDaysInTier, criteria.min_days_in_tier, days),
    ];
    for (bound, limit, value) in counts {
        if let Some(limit) = limit {
            judged.push(count(bound, limit, value, value >= limit));
        }
    }
    judged.extend(maximums(criteria, tally));
    judged
}

/// The `max_*` bounds `demote:` sets: a minimum cannot be crossed on the way down.
pub(crate) fn demotion(criteria: &Criteria, tally: &Tally) -> Vec<Judgement> {
    maximums(criteria, tally)
}

fn maximums(criteria: &Criteria, tally: &Tally) -> Vec<Judgement> {
    let mut judged = Vec::new();
    let counts = [
        (Bound::MaxDenials, criteria.max_denials, tally.denials),
        (Bound::MaxHalts, criteria.max_halts, tally.halts),
        (Bound::MaxUndos, criteria.max_undos, tally.undos),
    ];
    for (bound, limit, value) in counts {
        if let Some(limit) = limit {
            judged.push(count(bound, limit, value, value <= limit));
        }
    }
    if let Some(limit) = criteria.max_failure_rate {
        let value = tally.failure_rate();
        judged.push(Judgement {
            bound: Bound::MaxFailureRate,
            limit,
            value,
            outcome: match value {
                None => Outcome::Unknown,
                Some(value) if value <= limit => Outcome::Holds,
                Some(_) => Outcome::Fails,
            },
        });
    }
    judged
}

fn count(bound: Bound, limit: u64, value: u64, holds: bool) -> Judgement {
    Judgement {
        bound,
        limit: limit as f64,
        value: Some(value as f64),
        outcome: if holds {
            Outcome::Holds
        } else {
            Outcome::Fails
        },
    }
}
