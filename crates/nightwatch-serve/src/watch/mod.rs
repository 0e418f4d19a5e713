//! The watchers, the scheduled jobs and the heartbeat (`watch:` in serve.yaml), run inside the
//! daemon: one more actor (`watcher`) that is thin because the engine and the dispatcher do
//! the rest.
//!
//! ```text
//!  each watcher's slot --> a pool thread runs its probe (nightwatch-watch) --> observations
//!     --> per subject: a change of ok/found/unknown is a `watch` record (and its notifiers
//!         told) and an alert into the dispatcher (firing, or resolved when it clears);
//!         unchanged runs are rolled up into one record per `record_every`
//!  each job's slot -----> an alert (source `schedule`) to the job's own route: the queue,
//!                         the gate and a worker run it like any runbook; a slot already in
//!                         the inbox is not fired again, so a restart never runs one twice
//!  the heartbeat -------> only while healthy (ledger writable, queue moving, workers alive,
//!                         watchers on time): a `watch` record, then the push; unhealthy, no
//!                         push, and why is recorded
//! ```
//!
//! Everything here goes through the daemon's engine (records) and its dispatcher (alerts):
//! routes, dedup, cooldown and backoff are the queue's, as for any alert.

mod changes;
mod heartbeat;
pub mod http;
mod jobs;
mod watchers;

use std::sync::Arc;
use std::thread::JoinHandle;

use crate::Daemon;

pub use watchers::{SubjectState, Watching};

/// Starts the watch threads the configuration asks for: none when `watch:` is empty.
pub fn start(daemon: &Arc<Daemon>) -> Vec<JoinHandle<()>> {
    let mut threads = Vec::new();
    let spec = &daemon.config.watch;
    if !spec.watchers.is_empty() {
        threads.extend(watchers::start(daemon));
    }
    if !spec.jobs.is_empty() {
        let d = daemon.clone();
        threads.push(
            std::thread::Builder::new()
                .name("jobs".into())
                .spawn(move || jobs::run(&d))
                .expect("the jobs thread starts"),
        );
    }
    if let Some(beat) = spec.heartbeat.clone() {
        let d = daemon.clone();
        threads.push(
            std::thread::Builder::new()
                .name("heartbeat".into())
                .spawn(move || heartbeat::run(&d, &beat))
                .expect("the heartbeat thread starts"),
        );
    }
    threads
}

/// Shortens a text for a title or a label: whole characters, an ellipsis when cut.
fn clip(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}
