//! Builders for items and an in-memory world behind fake inventories.
#![allow(dead_code)]

use nightwatch_janitor::{
    BranchFacts, ContainerFacts, Facts, Inventory, InventoryError, Item, Kind, MergeState, PrState,
    Removal, WorktreeFacts,
};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

pub const MINUTE: i64 = 60_000;
pub const HOUR: i64 = 60 * MINUTE;
pub const DAY: i64 = 24 * HOUR;

/// `2026-03-10T12:00:00Z` written as RFC 3339, in ms.
pub fn at(text: &str) -> i64 {
    text.parse::<jiff::Timestamp>()
        .expect("a test timestamp")
        .as_millisecond()
}

/// A container an agent started (it carries the owner label), exited, unless `edit` says else.
pub fn container(id: &str, name: &str, edit: impl FnOnce(&mut ContainerFacts)) -> Item {
    let mut facts = ContainerFacts {
        labels: [("nightwatch.agent".to_owned(), "claude-code".to_owned())].into(),
        image: "postgres:16".into(),
        status: "exited".into(),
        ..ContainerFacts::default()
    };
    edit(&mut facts);
    Item {
        id: id.into(),
        name: name.into(),
        facts: Facts::Container(facts),
    }
}

/// A worktree that is removable unless `edit` changes that: clean, merged, PR merged, 3 days old.
pub fn worktree(path: &str, now: i64, edit: impl FnOnce(&mut WorktreeFacts)) -> Item {
    let mut facts = WorktreeFacts {
        repo: "/src/app".into(),
        path: path.into(),
        branch: Some("fix-4411".into()),
        head: "abc123def4567890".into(),
        is_main: false,
        locked: None,
        dirty: None,
        merge: MergeState::Ancestor {
            into: "main".into(),
        },
        in_use_by: Vec::new(),
        pr: PrState::Merged {
            commit: "abc123def4567890".into(),
        },
        created_ms: Some(now - 3 * DAY),
    };
    edit(&mut facts);
    Item {
        id: path.into(),
        name: path.into(),
        facts: Facts::Worktree(facts),
    }
}

/// A branch that is removable unless `edit` changes that, once seen for a day: its PR merged
/// from its tip, which the base also holds, committed 2026-03-05; checked out nowhere.
pub fn branch(name: &str, edit: impl FnOnce(&mut BranchFacts)) -> Item {
    let mut facts = BranchFacts {
        repo: "/src/app".into(),
        name: name.into(),
        tip: "abc123def4567890".into(),
        merged_commit: Some("abc123def4567890".into()),
        pr: PrState::Merged {
            commit: "abc123def4567890".into(),
        },
        tip_time_ms: Some(at("2026-03-05T09:00:00Z")),
        checked_out_in: None,
    };
    edit(&mut facts);
    Item {
        id: format!("/src/app#{name}"),
        name: name.into(),
        facts: Facts::Branch(facts),
    }
}

/// Everything the fake inventories see, shared so removing a worktree frees its branch.
#[derive(Default)]
pub struct World {
    pub items: RefCell<BTreeMap<(Kind, String), Item>>,
    /// Removals of these ids fail (at the `remove` step, after a successful `stop`).
    pub failing: RefCell<HashSet<String>>,
    /// Inspecting these ids errors.
    pub unreadable: RefCell<HashSet<String>>,
    /// Every item as it was at the moment it was removed.
    pub removed: RefCell<Vec<Item>>,
    pub remove_calls: RefCell<HashMap<String, u32>>,
}

impl World {
    pub fn new(items: Vec<Item>) -> Rc<World> {
        let world = World::default();
        for item in items {
            world.put(item);
        }
        Rc::new(world)
    }

    pub fn put(&self, item: Item) {
        self.items
            .borrow_mut()
            .insert((item.kind(), item.id.clone()), item);
    }

    pub fn all(&self) -> Vec<Item> {
        self.items.borrow().values().cloned().collect()
    }

    pub fn get(&self, kind: Kind, id: &str) -> Option<Item> {
        self.items.borrow().get(&(kind, id.to_owned())).cloned()
    }

    pub fn inventories(self: &Rc<World>) -> Vec<Fake> {
        Kind::ALL
            .into_iter()
            .map(|kind| Fake {
                kind,
                world: Rc::clone(self),
            })
            .collect()
    }
}

pub struct Fake {
    pub kind: Kind,
    pub world: Rc<World>,
}

impl Inventory for Fake {
    fn kind(&self) -> Kind {
        self.kind
    }

    fn list(&self) -> Result<Vec<Item>, InventoryError> {
        Ok(self
            .world
            .all()
            .into_iter()
            .filter(|i| i.kind() == self.kind)
            .collect())
    }

    fn inspect(&self, id: &str) -> Result<Option<Item>, InventoryError> {
        if self.world.unreadable.borrow().contains(id) {
            return Err(InventoryError::Unavailable {
                what: "the fake daemon".into(),
                reason: "timed out".into(),
            });
        }
        Ok(self.world.get(self.kind, id))
    }

    fn remove(&self, item: &Item, _now_ms: i64) -> Removal {
        *self
            .world
            .remove_calls
            .borrow_mut()
            .entry(item.id.clone())
            .or_default() += 1;
        let Some(current) = self.world.get(self.kind, &item.id) else {
            return Removal::new().done("remove", "already gone");
        };
        let mut removal = Removal::new();
        if let Facts::Container(c) = &current.facts
            && c.status == "running"
        {
            removal = removal.done("stop", "stopped");
        }
        if self.world.failing.borrow().contains(&item.id) {
            return removal.failed("remove", "device or resource busy");
        }
        self.world.removed.borrow_mut().push(current.clone());
        self.world
            .items
            .borrow_mut()
            .remove(&(self.kind, item.id.clone()));
        if self.kind == Kind::Worktree {
            for other in self.world.items.borrow_mut().values_mut() {
                if let Facts::Branch(b) = &mut other.facts
                    && b.checked_out_in.as_deref() == Some(item.id.as_str())
                {
                    b.checked_out_in = None;
                }
            }
        }
        removal.done("remove", "removed")
    }
}

pub fn dyns(fakes: &[Fake]) -> Vec<&dyn Inventory> {
    fakes.iter().map(|f| f as &dyn Inventory).collect()
}
