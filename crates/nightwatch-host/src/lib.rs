//! The host: what nightwatch needs from this machine, built once per command or daemon, and
//! the engine built from it.
//!
//! - [`environment`] captures the variables nightwatch reads (and [`clock`] the time) once:
//!   they are the only code that reads the process environment or the system clock, so a
//!   resident gate can decide a hook's call with the hook's variables, and a test or a
//!   simulation can give another time.
//! - [`home`] and [`paths`] say where the data directory is and which places the path facts
//!   protect; [`context`] what the launcher says about an action (session, alert, host).
//! - [`stores`] is the one place stores are opened: the only code above the store traits that
//!   names the backend.
//! - [`host::Host`] puts them together; [`host::Host::engine`] is how every command proposes
//!   and records. [`policies::Policies`] keeps policies for long-running processes.
//! - [`sweep`] is the janitor's orchestration through that engine, for the CLI and the daemon.
//! - [`hook`] is the hook pipeline (a hook call in, the agent's reply out) with the world of a
//!   hook process that answers one call; [`resident`] is the resident gate (its socket, wire
//!   format and world) that answers hooks through the same pipeline.
//! - [`policies`] says which policy file applies and loads it; [`daemon`] is what the daemon is
//!   given from this host (clock, policy, guards, escalator, janitor).
//! - [`escalation`] delivers a halt's or an ask's escalation and records every delivery.
//! - [`undo`], [`approvals`], [`retention`] and [`trust`] are people's actions on records,
//!   through the engine; [`replay`] re-decides recorded decisions under a candidate policy.

pub mod approvals;
pub mod clock;
pub mod context;
pub mod daemon;
pub mod environment;
pub mod escalation;
pub mod home;
pub mod hook;
pub mod host;
pub mod paths;
pub mod policies;
pub mod replay;
pub mod resident;
pub mod retention;
pub mod stores;
pub mod sweep;
pub mod trust;
pub mod undo;

pub use clock::Clock;
pub use environment::Environment;
pub use host::{Background, Host};
pub use policies::{Origin, Policies};
