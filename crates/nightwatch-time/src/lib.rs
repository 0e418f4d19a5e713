//! Time as operators write it, read one way everywhere: policy files, `serve.yaml`, the CLI's
//! `--since`/`--until`/`--now`, `NIGHTWATCH_NOW` and the daemon's API and pages.
//!
//! - [`parse_duration`]: `90s`, `15m`, `2h`, `7d`, `1h30m`, `500ms`; [`format_duration`] writes
//!   what it reads; [`serde`] deserializes config fields through it.
//! - [`parse_instant`]: `2am`, `14:30`, `90m` (ago), `+6d` (ahead), `yesterday`, a date or RFC
//!   3339.
//! - [`rfc3339`] writes unix milliseconds as RFC 3339 in UTC (what records and messages carry),
//!   [`parse_rfc3339`] reads it back.
//! - [`backoff`]: capped exponential backoff, shortened by a caller-supplied jitter.
//!
//! Invariant: nothing here reads a clock, the environment or the system time zone. "Now", the
//! zone and the jitter are arguments, so every answer is a function of its inputs and tests
//! need no clock. Nothing panics on any input.

mod backoff;
mod duration;
mod instant;
mod rfc3339;
pub mod serde;

pub use backoff::backoff;
pub use duration::{DurationError, DurationProblem, MAX_DURATION, format_duration, parse_duration};
pub use instant::{InstantError, parse_instant};
pub use rfc3339::{parse_rfc3339, rfc3339};
