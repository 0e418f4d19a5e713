//! The host's hazards as a watcher. (Being built.)

use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HazardSpec {}
