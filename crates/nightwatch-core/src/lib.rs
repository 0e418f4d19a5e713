//! The vocabulary of nightwatch.
//!
//! Every actor (an agent's hook, `nightwatch exec`, the janitor, the alert dispatcher, the idle
//! controller) describes what it wants to do as an [`Action`]. Shell lines inside an action are
//! analysed into [`Invocation`]s with their [`Effects`]; policy turns all of that into a
//! [`Verdict`]. These types carry no behaviour beyond small, total helpers: no I/O, no clock.

mod action;
mod invocation;
mod verdict;

pub use action::{Action, Actor, ActorKind, Context, Tool};
pub use invocation::{Arg, Effects, Invocation, PathUse, Remote, RemoteKind};
pub use verdict::Verdict;
