//! "This file changed": inotify (through `notify`) for drift watchers that should run as soon
//! as their file is touched, not only on their schedule.
//!
//! Each file's parent directory is watched, not the file: editors and agents replace a file
//! by writing a new one and renaming it over the old, and a watch on the old file's inode
//! would see nothing after the first such write. Events for other names in the directory are
//! dropped. A burst (write, chmod, rename) is told once, after the directory has been quiet
//! for the debounce.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

/// How long a burst of events on one file is gathered before it is told, unless asked for
/// another.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(100);

/// Why files cannot be watched at all.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch files for changes: {0}")]
pub struct ChangesError(String);

/// A live watch over some files. Dropping it stops the watch.
pub struct Changes {
    changed: Receiver<PathBuf>,
    not_watched: Vec<(PathBuf, String)>,
    // Held for its drop: dropping it ends the watch and, through the closed channel, the
    // debounce thread.
    _watcher: RecommendedWatcher,
}

impl Changes {
    /// Watches `paths` (absolute file paths). A file whose directory cannot be watched (it
    /// does not exist, or is not readable) is listed in [`Changes::not_watched`] and the others
    /// are watched; `Err` only when no watch can be made at all (inotify unavailable or out of
    /// instances).
    pub fn watch(paths: &[PathBuf], debounce: Duration) -> Result<Changes, ChangesError> {
        let wanted: BTreeSet<PathBuf> = paths.iter().cloned().collect();
        let (raw_tx, raw_rx) = mpsc::channel::<PathBuf>();
        let filter = wanted.clone();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let Ok(event) = event else { return };
                if matches!(event.kind, EventKind::Access(_)) {
                    return;
                }
                for path in event.paths {
                    if filter.contains(&path) {
                        let _ = raw_tx.send(path);
                    }
                }
            })
            .map_err(|e| ChangesError(e.to_string()))?;
        let mut not_watched = Vec::new();
        let mut dirs = BTreeSet::new();
        for path in &wanted {
            match path.parent() {
                Some(dir) if path.is_absolute() => {
                    dirs.insert(dir.to_path_buf());
                }
                _ => not_watched.push((path.clone(), "not an absolute file path".to_owned())),
            }
        }
        for dir in dirs {
            if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
                for path in wanted.iter().filter(|p| p.parent() == Some(dir.as_path())) {
                    not_watched
                        .push((path.clone(), format!("cannot watch {}: {e}", dir.display())));
                }
            }
        }
        let (tx, changed) = mpsc::channel();
        thread::Builder::new()
            .name("nightwatch-changes".to_owned())
            .spawn(move || debounce_loop(&raw_rx, &tx, debounce))
            .map_err(|e| ChangesError(e.to_string()))?;
        Ok(Changes {
            changed,
            not_watched,
            _watcher: watcher,
        })
    }

    /// The next file that changed, waiting at most `timeout`.
    pub fn next_within(&self, timeout: Duration) -> Option<PathBuf> {
        self.changed.recv_timeout(timeout).ok()
    }

    /// Files that changed since the last look, without waiting.
    pub fn drain(&self) -> Vec<PathBuf> {
        self.changed.try_iter().collect()
    }

    /// The files that are not watched, with why.
    pub fn not_watched(&self) -> &[(PathBuf, String)] {
        &self.not_watched
    }
}

/// Gathers a burst until `debounce` passes without a new event, then tells each file once.
fn debounce_loop(raw: &Receiver<PathBuf>, out: &Sender<PathBuf>, debounce: Duration) {
    while let Ok(first) = raw.recv() {
        let mut burst = BTreeSet::from([first]);
        let mut quiet_until = Instant::now() + debounce;
        loop {
            match raw.recv_timeout(quiet_until.saturating_duration_since(Instant::now())) {
                Ok(path) => {
                    burst.insert(path);
                    quiet_until = Instant::now() + debounce;
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    tell(out, burst);
                    return;
                }
            }
        }
        if !tell(out, burst) {
            return;
        }
    }
}

/// `false` when nobody listens any more.
fn tell(out: &Sender<PathBuf>, burst: BTreeSet<PathBuf>) -> bool {
    burst.into_iter().all(|path| out.send(path).is_ok())
}
