//! The vocabulary of nightwatch.
//!
//! Every actor (an agent's hook, `nightwatch exec`, the janitor, the alert dispatcher, the idle
//! controller) describes what it wants to do as an [`Action`]. Shell lines inside an action are
//! analysed into [`Invocation`]s with their [`Effects`]; policy turns all of that into a
//! [`Verdict`]. These types carry no behaviour beyond small, total helpers: no I/O, no clock.
//!
//! [`flags`] and [`paths`] are the normal forms of flags and paths: the shell analyser writes
//! invocations in them and policy patterns are read through them, so a rule written with either
//! spelling matches both.

mod action;
pub mod flags;
mod invocation;
pub mod paths;
mod verdict;

pub use action::{Action, Actor, ActorKind, Context, Tool};
pub use flags::normalise_flag;
pub use invocation::{Arg, Effects, Invocation, PathUse, Remote, RemoteKind};
pub use paths::normalise_path;
pub use verdict::Verdict;
