//! Times as operators type them (`2am`, `14:30`, `90m`, `+6d`, `yesterday`, RFC 3339): the one
//! grammar of nightwatch-time, which the daemon's API and pages read too. The caller passes
//! `now` and the zone from its [`Clock`](crate::clock::Clock).

pub use nightwatch_time::parse_instant as parse;
