//! Robot baselines: actions per hour and per day against what is expected. (Being built.)

use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineSpec {}

impl BaselineSpec {
    /// One run (being built).
    pub fn run(&self, _env: &crate::Env<'_>) -> Vec<crate::Observation> {
        vec![crate::Observation::new(
            "baseline",
            crate::Seen::Unknown,
            "not built yet",
        )]
    }
}
