//! Nothing changes state silently: a resource whose state flips with no record. (Being built.)

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateSpec {
    pub unit: Option<String>,
}

impl StateSpec {
    /// One run (being built).
    pub fn run(&self, _env: &crate::Env<'_>) -> Vec<crate::Observation> {
        vec![crate::Observation::new(
            "state",
            crate::Seen::Unknown,
            "not built yet",
        )]
    }
}
