//! Turns monitoring alerts into agent tasks that run once, retry with restraint, and leave a
//! trail: the queue behind `nightwatch serve`.
//!
//! It exists because of two nights. A sweeper re-selected the same wedged VM every 30 seconds
//! with no backoff, no cap and no memory, making it worse until morning; and 22 databases
//! flipped to failed with zero events. So here:
//!
//! - one live task per alert identity; repeats attach to it, and a cooldown after a run
//!   suppresses new tasks for that identity, saying why;
//! - an optional wait-for-resolve delay, so a flap that clears in time never runs;
//! - workers claim under a lease, and completions are *fenced* by attempt number, so a worker
//!   that lost its lease cannot overwrite the result of the one that reclaimed the task;
//! - failures retry after capped, jittered exponential backoff, and after `max_attempts` the
//!   task gives up and is escalated exactly once;
//! - every state change is a row in the append-only `task_events` table, written in the same
//!   transaction as the change.
//!
//! [`machine`] is the pure core (no I/O, no clock); [`TaskStore`] is the SQLite edge. Every
//! call takes `now` in milliseconds from the caller, the one clock.
//!
//! ```
//! use nightwatch_tasks::{Offered, Outcome, Policy, Status, TaskStore};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = TaskStore::open(dir.path(), Policy::default()).unwrap();
//! let Offered::Created(id) = store.offer("disk-full/db1", "{}", "runbook:disk", 0).unwrap()
//! else { unreachable!() };
//! let claim = store.claim("worker-1", 0, 60_000).unwrap().unwrap();
//! assert_eq!(claim.task_id, id);
//! let status = store.complete(id, claim.attempt, &Outcome::Succeeded, 1_000).unwrap();
//! assert_eq!(status, Status::Done);
//! assert_eq!(store.events(id).unwrap().len(), 3); // offered, claimed, succeeded
//! ```

pub mod machine;
mod store;

pub use machine::{Lifecycle, Outcome, Policy, Status};
pub use store::{
    Claim, Escalation, Offered, Resolved, Task, TaskError, TaskEvent, TaskFilter, TaskStore,
};
