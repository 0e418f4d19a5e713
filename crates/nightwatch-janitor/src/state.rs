//! What the janitor remembers between runs: when it first saw each item (for things with no
//! timestamp of their own), container activity it saw itself, and failed removals (backoff
//! and quarantine). [`JanitorState`] is the value the pure planner reads; the `JanitorStore`
//! trait of `nightwatch-store` keeps it (in `janitor.db`, by `nightwatch-sqlite`) so a restart
//! forgets nothing.

use crate::item::{Item, Kind};
use crate::owners::StartedBy;
use crate::rules::FailureRules;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// Failed removals of one item, in a row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failures {
    pub count: u32,
    /// Not before this time (ms since 1970) is the removal tried again.
    pub next_try_ms: i64,
    /// Left alone until a person releases it.
    pub quarantined: bool,
    pub last_error: String,
}

/// What recording one failure led to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureOutcome {
    pub count: u32,
    pub next_try_ms: i64,
    pub quarantined: bool,
    /// This failure is the one that quarantined the item: report it now, and never again.
    pub newly_quarantined: bool,
}

type ByKind<T> = [HashMap<String, T>; 4];

/// The janitor's memory, as a plain value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JanitorState {
    first_seen: ByKind<i64>,
    activity: ByKind<i64>,
    failures: ByKind<Failures>,
    /// Items forgotten since the last save, so the store deletes their rows.
    forgotten: HashSet<(Kind, String)>,
    /// Items released from failures since the last save: only their failure rows go.
    released: HashSet<(Kind, String)>,
    /// Containers without an owner label that the ledger shows an agent session started.
    /// Learned afresh from the ledger on every run, so never saved.
    started_by: HashMap<String, StartedBy>,
}

impl JanitorState {
    pub fn new() -> JanitorState {
        JanitorState::default()
    }

    pub fn first_seen(&self, kind: Kind, id: &str) -> Option<i64> {
        self.first_seen[kind.index()].get(id).copied()
    }

    /// Records `at_ms` as the first sighting unless an earlier one is known.
    pub fn note_first_seen(&mut self, kind: Kind, id: &str, at_ms: i64) {
        self.forgotten.remove(&(kind, id.to_owned()));
        let slot = self.first_seen[kind.index()]
            .entry(id.to_owned())
            .or_insert(at_ms);
        *slot = (*slot).min(at_ms);
    }

    /// Records a first sighting for every item not seen before; returns how many were new.
    /// Call it with the real clock (not `--now`), before planning.
    pub fn observe(&mut self, items: &[Item], now_ms: i64) -> usize {
        let mut new = 0;
        for item in items {
            if self.first_seen(item.kind(), &item.id).is_none() {
                self.note_first_seen(item.kind(), &item.id, now_ms);
                new += 1;
            }
        }
        new
    }

    /// The latest activity nightwatch saw on the item (exec, attach), if any.
    pub fn activity(&self, kind: Kind, id: &str) -> Option<i64> {
        self.activity[kind.index()].get(id).copied()
    }

    /// Records activity at `at_ms`; an older event never moves the time back.
    pub fn note_activity(&mut self, kind: Kind, id: &str, at_ms: i64) {
        self.forgotten.remove(&(kind, id.to_owned()));
        let slot = self.activity[kind.index()]
            .entry(id.to_owned())
            .or_insert(at_ms);
        *slot = (*slot).max(at_ms);
    }

    /// The agent session the ledger says started this container (see [`crate::started_during`]).
    pub fn started_by(&self, id: &str) -> Option<&StartedBy> {
        self.started_by.get(id)
    }

    /// Notes who started a container, as the ledger tells it; kept for this run only.
    pub fn note_started_by(&mut self, id: &str, by: StartedBy) {
        self.started_by.insert(id.to_owned(), by);
    }

    pub fn failures(&self, kind: Kind, id: &str) -> Option<&Failures> {
        self.failures[kind.index()].get(id)
    }

    /// Every item with failures, quarantined or backing off.
    pub fn all_failures(&self) -> impl Iterator<Item = (Kind, &str, &Failures)> {
        by_kind(&self.failures)
    }

    /// Records a failed removal: the next try waits initial × 2^(n-1) (capped), and the
    /// `quarantine_after`-th failure in a row quarantines the item.
    pub fn record_failure(
        &mut self,
        kind: Kind,
        id: &str,
        now_ms: i64,
        rules: &FailureRules,
        error: &str,
    ) -> FailureOutcome {
        self.forgotten.remove(&(kind, id.to_owned()));
        let entry = self.failures[kind.index()]
            .entry(id.to_owned())
            .or_insert(Failures {
                count: 0,
                next_try_ms: now_ms,
                quarantined: false,
                last_error: String::new(),
            });
        let was_quarantined = entry.quarantined;
        entry.count = entry.count.saturating_add(1);
        entry.next_try_ms = now_ms.saturating_add(rules.backoff(entry.count).as_ms_i64());
        entry.quarantined = was_quarantined || entry.count >= rules.quarantine_after;
        entry.last_error = error.chars().take(500).collect();
        FailureOutcome {
            count: entry.count,
            next_try_ms: entry.next_try_ms,
            quarantined: entry.quarantined,
            newly_quarantined: entry.quarantined && !was_quarantined,
        }
    }

    /// Lets a person put a quarantined (or backing-off) item back in the sweep.
    pub fn release(&mut self, kind: Kind, id: &str) -> bool {
        let released = self.failures[kind.index()].remove(id).is_some();
        if released {
            self.released.insert((kind, id.to_owned()));
        }
        released
    }

    /// Forgets everything about an item that is gone (removed, or found missing).
    pub fn forget(&mut self, kind: Kind, id: &str) {
        let i = kind.index();
        self.first_seen[i].remove(id);
        self.activity[i].remove(id);
        self.failures[i].remove(id);
        self.forgotten.insert((kind, id.to_owned()));
    }

    /// Every first sighting, for a store to save.
    pub fn first_sightings(&self) -> impl Iterator<Item = (Kind, &str, i64)> {
        by_kind(&self.first_seen).map(|(kind, id, at)| (kind, id, *at))
    }

    /// Every activity seen, for a store to save.
    pub fn activities(&self) -> impl Iterator<Item = (Kind, &str, i64)> {
        by_kind(&self.activity).map(|(kind, id, at)| (kind, id, *at))
    }

    /// Puts back failures a store kept (loading, not failing again).
    pub fn restore_failures(&mut self, kind: Kind, id: &str, failures: Failures) {
        self.failures[kind.index()].insert(id.to_owned(), failures);
    }

    /// Items forgotten since the last save: a store deletes everything it keeps about them.
    pub fn forgotten(&self) -> impl Iterator<Item = (Kind, &str)> {
        self.forgotten.iter().map(|(kind, id)| (*kind, id.as_str()))
    }

    /// Items released from failures since the last save: a store deletes their failures.
    pub fn released(&self) -> impl Iterator<Item = (Kind, &str)> {
        self.released.iter().map(|(kind, id)| (*kind, id.as_str()))
    }

    /// A store saved this state: the forgotten and released items are no longer news.
    pub fn mark_saved(&mut self) {
        self.forgotten.clear();
        self.released.clear();
    }

    /// Forgets items of `kind` that a complete listing no longer shows, so the state does not
    /// grow with every short-lived container. Only call it after `kind` listed without error.
    pub fn retain_listed(&mut self, kind: Kind, items: &[Item]) {
        let present: HashSet<&str> = items
            .iter()
            .filter(|i| i.kind() == kind)
            .map(|i| i.id.as_str())
            .collect();
        let i = kind.index();
        let mut gone: Vec<String> = Vec::new();
        for map_keys in [
            self.first_seen[i].keys().collect::<Vec<_>>(),
            self.activity[i].keys().collect(),
            self.failures[i].keys().collect(),
        ] {
            gone.extend(
                map_keys
                    .into_iter()
                    .filter(|id| !present.contains(id.as_str()))
                    .cloned(),
            );
        }
        for id in gone {
            self.forget(kind, &id);
        }
    }
}

fn by_kind<T>(maps: &ByKind<T>) -> impl Iterator<Item = (Kind, &str, &T)> {
    Kind::ALL.into_iter().flat_map(move |kind| {
        maps[kind.index()]
            .iter()
            .map(move |(id, value)| (kind, id.as_str(), value))
    })
}
