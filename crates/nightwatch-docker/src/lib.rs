//! The Docker edge of the janitor and of idle control. [`DockerInventory`] lists, inspects
//! and removes containers through the Engine API for the janitor, and
//! [`DockerInventory::record_activity`] copies `docker exec` and `docker attach` events from
//! the Engine into the janitor's state. [`AppEngine`] is idle control's runtime
//! ([`nightwatch_idle::Runtime`]): it observes, suspends (pause or stop) and wakes a container
//! or a compose project, and counts what says someone uses it (open exec sessions,
//! established connections on its ports, processes matching a glob).
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
//! - [`AppEngine`] never removes a container and never touches volumes, networks or images:
//!   suspending is `pause` or `stop` (with a timeout, after which the Engine kills, as
//!   `docker stop` does), waking is `unpause` or `start`. It is async on the caller's runtime,
//!   holds no lock across an await (a call dropped at its timeout leaves the next one
//!   working), and a missing target or an unreachable Engine is an error, never a quiet
//!   success.
//!
//! [`InventoryError`]: nightwatch_janitor::InventoryError

mod activity;
mod apps;
mod containers;
mod engine;
mod facts;

pub use activity::{ACTIVITY_EVENTS, ActivityError};
pub use apps::{AppEngine, COMPOSE_ONEOFF_LABEL};
pub use engine::{DEFAULT_HOST, DockerInventory};
pub use facts::ContainerReader;
