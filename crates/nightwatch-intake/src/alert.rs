//! The one alert shape every sender is converted into.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which tool sent the alert; kept so a task can say where it came from and so identities from
/// different senders never collide.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    UptimeKuma,
    Alertmanager,
    /// A JSON webhook read through a [`GenericMapping`](crate::GenericMapping), named by it.
    Generic(String),
    /// What one of nightwatch's own watchers found (drift, staleness, a robot above its
    /// baseline, a hazard, a late watcher).
    Watch,
    /// A scheduled job's slot coming due.
    Schedule,
    /// The daemon's own check that intake writes work again after they failed.
    Nightwatch,
}

/// Whether the problem is happening, is over, or the sender is only checking that we listen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Firing,
    Resolved,
    /// A "send test notification" button: acknowledge it, never start work for it.
    Test,
}

/// One alert, whatever sent it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub source: Source,
    /// Stable key for "the same problem": the firing and the resolved notification share it.
    ///
    /// Sender ids are used bare (Alertmanager's fingerprint, Uptime Kuma's monitor id); derived
    /// ones carry a prefix (`name:<monitor name>`, `sha256:<hex>`) so they cannot collide with them.
    pub identity: String,
    pub status: Status,
    pub title: String,
    pub message: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// Uptime Kuma tags as `name` or `name:value`; they are also copied into `labels`.
    pub tags: Vec<String>,
    /// Uptime Kuma monitor name.
    pub monitor: Option<String>,
    pub starts_at_ms: Option<i64>,
    /// `None` while the alert has not ended (Alertmanager writes that as `0001-01-01T00:00:00Z`).
    pub ends_at_ms: Option<i64>,
    /// Alertmanager's group key: alerts that arrived in one notification share it.
    pub group_key: Option<String>,
    /// Alertmanager's receiver name, to tell apart routes that point at the same daemon.
    pub receiver: Option<String>,
    /// Where a person can look (Alertmanager's `generatorURL`, the Uptime Kuma monitor's URL).
    pub link: Option<String>,
    /// The sender's own JSON for this alert, so nothing is lost to the conversion.
    pub raw: serde_json::Value,
}
