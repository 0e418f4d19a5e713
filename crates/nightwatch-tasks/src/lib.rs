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
//! This crate is the pure core, [`machine`]: no I/O, no clock, no database. Every call takes
//! `now` in milliseconds from the caller, the one clock. The queue that stores its answers is
//! the `TaskQueue` trait of `nightwatch-store` (with the values it hands out: `Claim`, `Task`,
//! `TaskEvent`, ...); the embedded one is in `nightwatch-sqlite`.

pub mod machine;

pub use machine::{Lifecycle, Outcome, Policy, Status};
