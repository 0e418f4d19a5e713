//! Robot baselines: actions per hour and per day against what is expected. (Being built.)

use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineSpec {}
