//! Drift: declared desired state against what is there. (Being built.)

use serde::Deserialize;

/// What should be, as declared.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriftSpec {
    pub file: Option<String>,
}

impl DriftSpec {
    /// One run (being built).
    pub fn run(&self, _env: &crate::Env<'_>) -> Vec<crate::Observation> {
        vec![crate::Observation::new(
            "drift",
            crate::Seen::Unknown,
            "not built yet",
        )]
    }
}
