//! Runs a drift watcher early when the file it watches changes (inotify), besides its slots.

use std::collections::BTreeMap;
use std::path::PathBuf;

use nightwatch_watch::WatcherKind;
use nightwatch_watch::changes::{Changes, DEFAULT_DEBOUNCE};

use crate::Daemon;

/// The files the drift watchers name, followed; or why they are not (each watcher then runs
/// on its slots only, which is logged once).
pub struct Follow {
    changes: Option<Changes>,
    /// Which watchers (by index) watch each file.
    watchers: BTreeMap<PathBuf, Vec<usize>>,
}

impl Follow {
    /// Indexes of the watchers whose files changed since last asked.
    pub fn changed(&self) -> Vec<usize> {
        let Some(changes) = &self.changes else {
            return Vec::new();
        };
        let mut due: Vec<usize> = changes
            .drain()
            .iter()
            .flat_map(|path| self.watchers.get(path).cloned().unwrap_or_default())
            .collect();
        due.sort_unstable();
        due.dedup();
        due
    }
}

/// Follows the files the drift watchers name.
pub fn follow(daemon: &Daemon) -> Follow {
    let mut watchers: BTreeMap<PathBuf, Vec<usize>> = BTreeMap::new();
    for (index, w) in daemon.config.watch.watchers.iter().enumerate() {
        if let WatcherKind::Drift(drift) = &w.kind {
            for path in drift.watched_paths() {
                watchers.entry(path).or_default().push(index);
            }
        }
    }
    if watchers.is_empty() {
        return Follow {
            changes: None,
            watchers,
        };
    }
    let paths: Vec<PathBuf> = watchers.keys().cloned().collect();
    let changes = match Changes::watch(&paths, DEFAULT_DEBOUNCE) {
        Ok(changes) => {
            for (path, why) in changes.not_watched() {
                tracing::warn!(
                    "{} is checked on its schedule only, not on change: {why}",
                    path.display()
                );
            }
            Some(changes)
        }
        Err(e) => {
            tracing::warn!("drift watchers run on their schedule only, not on change: {e}");
            None
        }
    };
    Follow { changes, watchers }
}
