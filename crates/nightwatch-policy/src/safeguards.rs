//! The parts of a policy beside its rules: pre-flight checks, notifiers, who is notified of
//! which verdict, backup limits and retention, and the trust criteria. Policy only holds them;
//! the gate runs checks, takes backups and sends notifications.

use nightwatch_core::Verdict;
use nightwatch_spec::backup::{Limits, Retention};
use nightwatch_spec::checks::CheckSpec;
use nightwatch_spec::notify::NotifierSpec;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Which notifiers hear of which verdict, whatever rule decided it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping of verdicts to notifier ids"
)]
pub struct Escalation {
    #[serde(default)]
    pub halt: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

impl Escalation {
    pub fn for_verdict(&self, verdict: Verdict) -> &[String] {
        match verdict {
            Verdict::Halt => &self.halt,
            Verdict::Ask => &self.ask,
            Verdict::Deny => &self.deny,
            Verdict::Allow => &[],
        }
    }
}

/// Backups taken before writes.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "backup settings (limits, retention)")]
pub struct BackupSettings {
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub retention: Retention,
}

/// How agents earn and lose trust: the tiers in order and the record that moves an agent.
#[derive(Clone, Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "trust settings (tiers, default, promote, demote)"
)]
pub struct TrustSettings {
    /// Lowest first: `[observe, draft, nonprod, prod]`.
    #[serde(default = "default_tiers")]
    pub tiers: Vec<String>,
    /// The tier of an agent no human has placed yet.
    #[serde(default)]
    pub default: Option<String>,
    #[serde(default = "Criteria::promotion")]
    pub promote: Criteria,
    #[serde(default = "Criteria::demotion")]
    pub demote: Criteria,
}

impl Default for TrustSettings {
    fn default() -> TrustSettings {
        TrustSettings {
            tiers: default_tiers(),
            default: None,
            promote: Criteria::promotion(),
            demote: Criteria::demotion(),
        }
    }
}

impl TrustSettings {
    /// The tier an agent starts in: `default:`, else the lowest.
    pub fn starting_tier(&self) -> Option<&str> {
        self.default
            .as_deref()
            .or(self.tiers.first().map(String::as_str))
    }
}

fn default_tiers() -> Vec<String> {
    ["observe", "draft", "nonprod", "prod"]
        .map(str::to_owned)
        .to_vec()
}

/// A record's thresholds. For promotion every set bound must hold; for demotion any one
/// crossed is enough.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, expecting = "trust criteria")]
pub struct Criteria {
    /// At least this many decided actions in the tier.
    #[serde(default)]
    pub min_actions: Option<u64>,
    /// At least this many days in the tier.
    #[serde(default)]
    pub min_days_in_tier: Option<u64>,
    #[serde(default)]
    pub max_denials: Option<u64>,
    #[serde(default)]
    pub max_halts: Option<u64>,
    #[serde(default)]
    pub max_undos: Option<u64>,
    /// Failed results over all results, from 0 to 1.
    #[serde(default)]
    pub max_failure_rate: Option<f64>,
}

impl Criteria {
    fn promotion() -> Criteria {
        Criteria {
            min_actions: Some(50),
            min_days_in_tier: Some(7),
            max_denials: Some(0),
            max_halts: Some(0),
            max_undos: Some(0),
            max_failure_rate: Some(0.05),
        }
    }

    fn demotion() -> Criteria {
        Criteria {
            max_denials: Some(5),
            max_halts: Some(3),
            max_undos: Some(2),
            max_failure_rate: Some(0.25),
            ..Criteria::default()
        }
    }
}

/// Everything in a policy beside rules and examples, as read.
#[derive(Clone, Debug, Default)]
pub struct Safeguards {
    pub checks: BTreeMap<String, CheckSpec>,
    /// Checks run for every action that is not denied outright (a circuit breaker).
    pub always_check: Vec<String>,
    pub notifiers: BTreeMap<String, NotifierSpec>,
    pub escalate: Escalation,
    pub backup: BackupSettings,
    pub trust: TrustSettings,
}
