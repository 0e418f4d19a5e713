//! What a policy file declares beside its rules: the `checks:`, `notifiers:`, `backup:` and
//! `sweep:` sections, as values.
//!
//! These types live apart from the crates that act on them (nightwatch-checks probes processes
//! and URLs, nightwatch-notify sends HTTP, nightwatch-backup and nightwatch-janitor write to
//! disk and SQLite) so that the policy crate can read a whole policy file without compiling any
//! of that. Those crates re-export the types under their old names.
//!
//! Invariants: every value is validated inside its own `Deserialize`, so a bad policy file is
//! refused at the bad value with its line and column, never at run time; durations are read by
//! the one grammar of nightwatch-time; nothing here does I/O, reads a clock or the environment,
//! and the dependency closure stays pure (checked by the binary's `tidy_pure` test).

pub mod backup;
pub mod checks;
pub mod notify;
pub mod sweep;
