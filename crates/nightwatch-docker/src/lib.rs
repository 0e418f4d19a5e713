//! The janitor's Docker edge: [`DockerInventory`] lists, inspects and removes containers
//! through the Engine API, and [`DockerInventory::record_activity`] copies `docker exec` and
//! `docker attach` events from the Engine into the janitor's state.
//!
//! The seed is a shared dev host with 64 containers, 39 of them one to fourteen weeks old,
//! named however agents liked. The rule that cleaned it reads times, not names: created,
//! started, finished (all in the Engine's inspect data) and activity. The Engine keeps only
//! its most recent events, so activity is written to `janitor.db` as it is read, where it
//! outlives both the Engine's buffer and this process.
//!
//! Invariants:
//!
//! - An Engine that cannot be reached is an [`InventoryError`], never an empty list.
//! - A container that vanished is `None` from `inspect`, and a failed step in `remove`.
//! - `remove` never removes volumes and never forces: a running container is stopped (with a
//!   timeout), then removed, as two steps. A container labelled to stay is refused at
//!   remove time too, whatever the plan said.
//! - Callers stay synchronous: the inventory owns a current-thread tokio runtime, so it must
//!   not be called from inside another runtime.
//!
//! [`InventoryError`]: nightwatch_janitor::InventoryError

mod activity;
mod containers;
mod engine;

pub use activity::{ACTIVITY_EVENTS, ActivityError};
pub use engine::{DEFAULT_HOST, DockerInventory};
