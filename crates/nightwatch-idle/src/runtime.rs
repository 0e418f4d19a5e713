//! What the controller needs from the container engine, as a trait, so the controller is
//! tested against a fake and run against Docker (`nightwatch-docker`'s `AppEngine`) without
//! knowing which.
//!
//! Every call is bounded by the caller (`step_timeout`); an implementation must be safe to
//! drop mid-call (a timed-out pause is abandoned, then undone by the controller).

use std::future::Future;
use std::pin::Pin;

use crate::spec::{SignalSpec, SuspendMode, Target};

/// A boxed future, so the trait can be used as `dyn Runtime`.
pub type Step<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// What the engine says of an app's containers (all of them, for a compose project).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observed {
    /// Every container running.
    Running,
    /// Every container paused.
    Paused,
    /// Every container stopped (exited or created).
    Stopped,
    /// No container found for the target.
    Missing,
    /// Some in one state, some in another (a compose project half started), described.
    Mixed(String),
}

impl Observed {
    pub fn as_str(&self) -> &str {
        match self {
            Observed::Running => "running",
            Observed::Paused => "paused",
            Observed::Stopped => "stopped",
            Observed::Missing => "missing",
            Observed::Mixed(_) => "mixed",
        }
    }
}

/// One signal as looked at now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignalSeen {
    pub name: String,
    /// How many (exec sessions, connections, processes); zero is off.
    pub count: usize,
    /// Whether it counts as activity (from its spec).
    pub activity: bool,
}

/// The container engine, for the idle controller.
pub trait Runtime: Send + Sync {
    fn observe<'a>(&'a self, target: &'a Target) -> Step<'a, Observed>;
    /// Pauses or stops every container of the target.
    fn suspend<'a>(&'a self, target: &'a Target, mode: SuspendMode) -> Step<'a, ()>;
    /// Unpauses or starts every container of the target (whichever each needs).
    fn resume<'a>(&'a self, target: &'a Target) -> Step<'a, ()>;
    /// Looks at each signal (exec sessions open, connections on ports, matching processes).
    fn signals<'a>(
        &'a self,
        target: &'a Target,
        signals: &'a [SignalSpec],
    ) -> Step<'a, Vec<SignalSeen>>;
}
