//! The environment variables nightwatch reads, captured once: from this process, or from a hook
//! that hands its call to the resident gate (`nightwatch gate`), which must decide with the
//! hook's session, clock and policy, not its own.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Every variable that changes what a hook call decides or records (the agents' config-dir
/// variables say where their hook settings live, which policy protects).
const READ: [&str; 21] = [
    "NIGHTWATCH_HOME",
    "NIGHTWATCH_DATABASE_URL",
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
    "LOGNAME",
    "DOCKER_HOST",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "GEMINI_CLI_HOME",
    "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
    "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
];

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    vars: BTreeMap<String, String>,
    /// The process's working directory: where a call that names none was made. Not a
    /// variable, so never passed on as one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
}

/// A variable that configuration names by itself (a notifier's token, a webhook's secret in
/// `serve.yaml`), read from this process: the names are the operator's, so they cannot be
/// captured ahead.
pub fn configured_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl Environment {
    pub fn of_process() -> Environment {
        Environment {
            vars: READ
                .iter()
                .filter_map(|key| Some((key.to_string(), std::env::var(key).ok()?)))
                .collect(),
            cwd: std::env::current_dir()
                .ok()
                .and_then(|dir| dir.to_str().map(str::to_owned)),
        }
    }

    /// An environment of exactly these variables (a test's, or a caller's that hands over
    /// what it captured), with no working directory.
    pub fn from_vars<K: Into<String>, V: Into<String>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Environment {
        Environment {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            cwd: None,
        }
    }

    /// The working directory the variables were captured in.
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
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
