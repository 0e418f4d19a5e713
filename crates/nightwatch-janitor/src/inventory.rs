//! The seam to the world: one [`Inventory`] per kind lists, re-inspects and removes items.
//! Docker and git live in other crates behind this trait; the filesystem one is
//! [`crate::PathInventory`].

use crate::item::{Item, Kind};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Lists, inspects and removes the items of one kind.
///
/// `inspect` answers `Ok(None)` only when the item is known to be gone; anything the inventory
/// cannot tell is an error, so "cannot see it" is never mistaken for "it does not exist".
pub trait Inventory {
    fn kind(&self) -> Kind;

    fn list(&self) -> Result<Vec<Item>, InventoryError>;

    fn inspect(&self, id: &str) -> Result<Option<Item>, InventoryError>;

    /// Removes the item step by step (a running container: stop, then remove), stopping at the
    /// first failed step. Every step taken is reported, so a stop that succeeded and a remove
    /// that failed are two records, not one half-done state.
    fn remove(&self, item: &Item, now_ms: i64) -> Removal;

    /// How many removals this inventory carries out at once: a Docker Engine stops several
    /// containers in parallel (each stop may wait its whole timeout); files and git go one by one.
    fn removals_at_once(&self) -> usize {
        1
    }

    /// Removes `items` (at most [`Inventory::removals_at_once`] of them), handing each one's
    /// index and removal to `done` as it finishes. An error from `done` stops the rest and is
    /// returned. By default one after another.
    fn remove_all(
        &self,
        items: &[&Item],
        now_ms: i64,
        done: &mut dyn FnMut(usize, Removal) -> Result<(), String>,
    ) -> Result<(), String> {
        for (index, item) in items.iter().enumerate() {
            done(index, self.remove(item, now_ms))?;
        }
        Ok(())
    }
}

/// Why an inventory could not list or inspect.
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error("{what} is unavailable: {reason}")]
    Unavailable { what: String, reason: String },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("refused {id}: {reason}")]
    Refused { id: String, reason: String },
    #[error("{0}")]
    Other(String),
}

/// The steps a removal took, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removal {
    pub steps: Vec<Step>,
}

/// One step of a removal: `stop`, `remove`, `remove worktree folder`, `delete branch`...
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub what: String,
    pub ok: bool,
    /// What happened: the command's message, the error.
    pub detail: String,
}

impl Removal {
    pub fn new() -> Removal {
        Removal::default()
    }

    /// Adds a step that worked.
    pub fn done(mut self, what: impl Into<String>, detail: impl Into<String>) -> Removal {
        self.steps.push(Step {
            what: what.into(),
            ok: true,
            detail: detail.into(),
        });
        self
    }

    /// Adds a step that failed.
    pub fn failed(mut self, what: impl Into<String>, detail: impl Into<String>) -> Removal {
        self.steps.push(Step {
            what: what.into(),
            ok: false,
            detail: detail.into(),
        });
        self
    }

    /// True when at least one step ran and none failed: an empty removal removed nothing.
    pub fn succeeded(&self) -> bool {
        !self.steps.is_empty() && self.steps.iter().all(|s| s.ok)
    }

    /// The first failure, as `what: detail`, for backoff records and reports.
    pub fn error(&self) -> Option<String> {
        if self.steps.is_empty() {
            return Some("the inventory took no step".to_owned());
        }
        self.steps
            .iter()
            .find(|s| !s.ok)
            .map(|s| format!("{}: {}", s.what, s.detail))
    }
}

/// What listing every inventory found: the items, and the kinds that could not be listed.
#[derive(Debug, Default)]
pub struct Listing {
    pub items: Vec<Item>,
    /// The kinds listed in full; only these may have their state pruned.
    pub listed: Vec<Kind>,
    pub errors: Vec<(Kind, InventoryError)>,
}

/// Lists every inventory. A kind that fails is reported in `errors`, never treated as empty.
pub fn list_all(inventories: &[&dyn Inventory]) -> Listing {
    let mut listing = Listing::default();
    for inventory in inventories {
        match inventory.list() {
            Ok(items) => {
                listing.items.extend(items);
                listing.listed.push(inventory.kind());
            }
            Err(e) => listing.errors.push((inventory.kind(), e)),
        }
    }
    listing
}

/// The action the gate decides for removing `item`: actor `janitor`, tool `remove_container`
/// (or `remove_worktree`, `delete_branch`, `remove_path`), and the target as the task.
pub fn removal_action(item: &Item) -> nightwatch_core::Action {
    let mut action = nightwatch_core::Action::new(
        nightwatch_core::Actor::new(nightwatch_core::ActorKind::Janitor, "janitor"),
        nightwatch_core::Tool::Named {
            name: item.kind().tool_name().to_owned(),
        },
    );
    action.context.task = Some(if item.name == item.id {
        format!("remove {} {}", item.kind(), item.id)
    } else {
        format!("remove {} {} ({})", item.kind(), item.name, item.id)
    });
    action
}
