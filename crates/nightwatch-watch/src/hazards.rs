//! The host's hazards as a watcher. (Being built.)

use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HazardSpec {}

impl HazardSpec {
    /// One run (being built).
    pub fn run(&self, _env: &crate::Env<'_>) -> Vec<crate::Observation> {
        vec![crate::Observation::new(
            "hazards",
            crate::Seen::Unknown,
            "not built yet",
        )]
    }
}
