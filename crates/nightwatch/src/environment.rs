//! The environment variables nightwatch reads, captured once: from this process, or from a hook
//! that hands its call to the resident gate (`nightwatch gate`), which must decide with the
//! hook's session, clock and policy, not its own.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Every variable that changes what a hook call decides or records.
const READ: [&str; 13] = [
    "NIGHTWATCH_HOME",
    "NIGHTWATCH_POLICY",
    "NIGHTWATCH_NOW",
    "NIGHTWATCH_SESSION",
    "NIGHTWATCH_AGENT",
    "NIGHTWATCH_TRIGGERED_BY",
    "NIGHTWATCH_ALERT_ID",
    "NIGHTWATCH_TASK",
    "NIGHTWATCH_HOST",
    "TZ",
    "XDG_STATE_HOME",
    "HOME",
    "USER",
];

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

impl Environment {
    pub fn of_process() -> Environment {
        Environment {
            vars: READ
                .iter()
                .filter_map(|key| Some((key.to_string(), std::env::var(key).ok()?)))
                .collect(),
        }
    }

    /// The variable's value, when it is set and not blank.
    pub fn var(&self, key: &str) -> Option<&str> {
        self.vars
            .get(key)
            .map(String::as_str)
            .filter(|value| !value.trim().is_empty())
    }

    /// The pairs, to pass on to a child process.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}
