//! Nothing changes state silently: a resource whose state flips with no record. (Being built.)

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateSpec {
    pub unit: Option<String>,
}
