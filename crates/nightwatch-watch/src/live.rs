//! Liveness, not existence: freshness, a command, an HTTP endpoint, a query. (Being built.)

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreshSpec {
    pub glob: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    pub argv: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSpec {
    pub url: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuerySpec {
    pub sql: String,
}

impl FreshSpec {
    /// One run (being built).
    pub fn run(&self, _env: &crate::Env<'_>) -> Vec<crate::Observation> {
        vec![crate::Observation::new(
            "live",
            crate::Seen::Unknown,
            "not built yet",
        )]
    }
}

impl CommandSpec {
    /// One run (being built).
    pub fn run(&self, _env: &crate::Env<'_>) -> Vec<crate::Observation> {
        vec![crate::Observation::new(
            "live",
            crate::Seen::Unknown,
            "not built yet",
        )]
    }
}

impl HttpSpec {
    /// One run (being built).
    pub fn run(&self, _env: &crate::Env<'_>) -> Vec<crate::Observation> {
        vec![crate::Observation::new(
            "live",
            crate::Seen::Unknown,
            "not built yet",
        )]
    }
}

impl QuerySpec {
    /// One run (being built).
    pub fn run(&self, _env: &crate::Env<'_>) -> Vec<crate::Observation> {
        vec![crate::Observation::new(
            "live",
            crate::Seen::Unknown,
            "not built yet",
        )]
    }
}
