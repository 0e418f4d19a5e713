//! Runs a drift watcher early when the file it watches changes.

use crate::Daemon;

/// The watchers whose files changed since last asked.
pub struct Follow;

impl Follow {
    /// Indexes of the watchers to run now.
    pub fn changed(&self) -> Vec<usize> {
        Vec::new()
    }
}

/// Follows the files the drift watchers name.
pub fn follow(_daemon: &Daemon) -> Follow {
    Follow
}
