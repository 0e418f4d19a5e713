//! What the janitor remembers between runs: when it first saw each item (for things with no
//! timestamp of their own), container activity it saw itself, and failed removals (backoff
//! and quarantine). [`JanitorState`] is the value the pure planner reads; [`StateStore`] keeps
//! it in `janitor.db` so a restart forgets nothing.

use crate::item::{Item, Kind};
use crate::rules::FailureRules;
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

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

    pub fn failures(&self, kind: Kind, id: &str) -> Option<&Failures> {
        self.failures[kind.index()].get(id)
    }

    /// Every item with failures, quarantined or backing off.
    pub fn all_failures(&self) -> impl Iterator<Item = (Kind, &str, &Failures)> {
        Kind::ALL.into_iter().flat_map(move |kind| {
            self.failures[kind.index()]
                .iter()
                .map(move |(id, f)| (kind, id.as_str(), f))
        })
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

/// Why the state store failed.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot create the janitor's data directory {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("janitor state database: {0}")]
    Database(#[from] rusqlite::Error),
    #[error(
        "janitor.db has schema version {found}, newer than this nightwatch understands ({known}); upgrade nightwatch"
    )]
    Schema { found: i64, known: i64 },
}

const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS first_seen (
    kind  TEXT NOT NULL,
    id    TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS activity (
    kind  TEXT NOT NULL,
    id    TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS failures (
    kind        TEXT NOT NULL,
    id          TEXT NOT NULL,
    count       INTEGER NOT NULL,
    next_try_ms INTEGER NOT NULL,
    quarantined INTEGER NOT NULL,
    last_error  TEXT NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;
";

/// `janitor.db` in nightwatch's data directory: plain tables in WAL mode.
///
/// Saving merges rather than overwrites: a first sighting only moves earlier and activity
/// only later, so an event watcher writing activity while a sweep runs loses nothing.
pub struct StateStore {
    conn: Connection,
    path: PathBuf,
}

impl StateStore {
    /// Opens (creating if needed) `janitor.db` in `dir`.
    pub fn open(dir: &Path) -> Result<StateStore, StateError> {
        std::fs::create_dir_all(dir).map_err(|source| StateError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join("janitor.db");
        let conn = Connection::open(&path)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if found > SCHEMA_VERSION {
            return Err(StateError::Schema {
                found,
                known: SCHEMA_VERSION,
            });
        }
        conn.execute_batch(SCHEMA)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        Ok(StateStore { conn, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the whole state. Rows of a kind this build does not know are skipped.
    pub fn load(&self) -> Result<JanitorState, StateError> {
        let mut state = JanitorState::new();
        for (table, target) in [("first_seen", 0), ("activity", 1)] {
            let mut stmt = self
                .conn
                .prepare(&format!("SELECT kind, id, at_ms FROM {table}"))?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })?;
            for row in rows {
                let (kind, id, at_ms) = row?;
                let Some(kind) = Kind::parse(&kind) else {
                    continue;
                };
                let map = if target == 0 {
                    &mut state.first_seen
                } else {
                    &mut state.activity
                };
                map[kind.index()].insert(id, at_ms);
            }
        }
        let mut stmt = self.conn.prepare(
            "SELECT kind, id, count, next_try_ms, quarantined, last_error FROM failures",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                Failures {
                    count: u32::try_from(r.get::<_, i64>(2)?).unwrap_or(u32::MAX),
                    next_try_ms: r.get(3)?,
                    quarantined: r.get::<_, i64>(4)? != 0,
                    last_error: r.get(5)?,
                },
            ))
        })?;
        for row in rows {
            let (kind, id, failures) = row?;
            if let Some(kind) = Kind::parse(&kind) {
                state.failures[kind.index()].insert(id, failures);
            }
        }
        Ok(state)
    }

    /// Writes `state` in one transaction and clears its list of forgotten items.
    pub fn save(&mut self, state: &mut JanitorState) -> Result<(), StateError> {
        let tx = self.conn.transaction()?;
        {
            let mut forget = [
                tx.prepare_cached("DELETE FROM first_seen WHERE kind = ?1 AND id = ?2")?,
                tx.prepare_cached("DELETE FROM activity WHERE kind = ?1 AND id = ?2")?,
                tx.prepare_cached("DELETE FROM failures WHERE kind = ?1 AND id = ?2")?,
            ];
            for (kind, id) in &state.forgotten {
                for stmt in &mut forget {
                    stmt.execute(params![kind.as_str(), id])?;
                }
            }
            for (kind, id) in &state.released {
                forget[2].execute(params![kind.as_str(), id])?;
            }
            let mut first = tx.prepare_cached(
                "INSERT INTO first_seen (kind, id, at_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (kind, id) DO UPDATE SET at_ms = min(at_ms, excluded.at_ms)",
            )?;
            let mut activity = tx.prepare_cached(
                "INSERT INTO activity (kind, id, at_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (kind, id) DO UPDATE SET at_ms = max(at_ms, excluded.at_ms)",
            )?;
            let mut failures = tx.prepare_cached(
                "INSERT OR REPLACE INTO failures
                 (kind, id, count, next_try_ms, quarantined, last_error)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for kind in Kind::ALL {
                let i = kind.index();
                for (id, at) in &state.first_seen[i] {
                    first.execute(params![kind.as_str(), id, at])?;
                }
                for (id, at) in &state.activity[i] {
                    activity.execute(params![kind.as_str(), id, at])?;
                }
                for (id, f) in &state.failures[i] {
                    failures.execute(params![
                        kind.as_str(),
                        id,
                        i64::from(f.count),
                        f.next_try_ms,
                        i64::from(f.quarantined),
                        f.last_error
                    ])?;
                }
            }
        }
        tx.commit()?;
        state.forgotten.clear();
        state.released.clear();
        Ok(())
    }

    /// Records activity straight into the store, for an event watcher running beside sweeps.
    pub fn note_activity(&self, kind: Kind, id: &str, at_ms: i64) -> Result<(), StateError> {
        self.conn.execute(
            "INSERT INTO activity (kind, id, at_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (kind, id) DO UPDATE SET at_ms = max(at_ms, excluded.at_ms)",
            params![kind.as_str(), id, at_ms],
        )?;
        Ok(())
    }

    /// The latest recorded activity of one item.
    pub fn activity(&self, kind: Kind, id: &str) -> Result<Option<i64>, StateError> {
        Ok(self
            .conn
            .query_row(
                "SELECT at_ms FROM activity WHERE kind = ?1 AND id = ?2",
                params![kind.as_str(), id],
                |r| r.get(0),
            )
            .optional()?)
    }
}
