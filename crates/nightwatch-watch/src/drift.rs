//! Drift: declared desired state against what is there. (Being built.)

use serde::Deserialize;

/// What should be, as declared.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriftSpec {
    pub file: Option<String>,
}
