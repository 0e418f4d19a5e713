//! `janitor.db`: the janitor's memory (first sightings, activity it saw, failed removals) in
//! plain tables.

use std::path::Path;

use nightwatch_janitor::{Failures, JanitorState, Kind};
use nightwatch_store::{JanitorStore, StoreError, store_name};
use rusqlite::{OptionalExtension, params};

use crate::db::{Db, Failure, Migration, Schema};

/// Schema 1.
const SCHEMA_1: &str = "
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

const MIGRATIONS: [Migration; 1] = [|tx| tx.execute_batch(SCHEMA_1)];

const SCHEMA: Schema = Schema {
    file: "janitor.db",
    store: store_name::JANITOR,
    migrations: &MIGRATIONS,
};

/// The janitor's state in `janitor.db`.
pub struct SqliteJanitorStore {
    db: Db,
}

impl SqliteJanitorStore {
    /// Opens (creating if needed) `janitor.db` in `dir`.
    pub fn open(dir: &Path) -> Result<SqliteJanitorStore, StoreError> {
        Ok(SqliteJanitorStore {
            db: Db::open(dir, &SCHEMA, crate::db::DEFAULT_PATIENCE)?,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.db.path()
    }
}

impl JanitorStore for SqliteJanitorStore {
    fn load(&self) -> Result<JanitorState, StoreError> {
        self.db.run(|conn| {
            let mut state = JanitorState::new();
            for table in ["first_seen", "activity"] {
                let mut stmt = conn.prepare(&format!("SELECT kind, id, at_ms FROM {table}"))?;
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
                    if table == "first_seen" {
                        state.note_first_seen(kind, &id, at_ms);
                    } else {
                        state.note_activity(kind, &id, at_ms);
                    }
                }
            }
            let mut stmt = conn.prepare(
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
                    state.restore_failures(kind, &id, failures);
                }
            }
            Ok::<_, Failure<StoreError>>(state)
        })
    }

    fn save(&self, state: &mut JanitorState) -> Result<(), StoreError> {
        self.db.write(|tx| {
            let mut forget = [
                tx.prepare_cached("DELETE FROM first_seen WHERE kind = ?1 AND id = ?2")?,
                tx.prepare_cached("DELETE FROM activity WHERE kind = ?1 AND id = ?2")?,
                tx.prepare_cached("DELETE FROM failures WHERE kind = ?1 AND id = ?2")?,
            ];
            for (kind, id) in state.forgotten() {
                for stmt in &mut forget {
                    stmt.execute(params![kind.as_str(), id])?;
                }
            }
            for (kind, id) in state.released() {
                forget[2].execute(params![kind.as_str(), id])?;
            }
            let mut first = tx.prepare_cached(
                "INSERT INTO first_seen (kind, id, at_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (kind, id) DO UPDATE SET at_ms = min(at_ms, excluded.at_ms)",
            )?;
            for (kind, id, at) in state.first_sightings() {
                first.execute(params![kind.as_str(), id, at])?;
            }
            let mut activity = tx.prepare_cached(
                "INSERT INTO activity (kind, id, at_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (kind, id) DO UPDATE SET at_ms = max(at_ms, excluded.at_ms)",
            )?;
            for (kind, id, at) in state.activities() {
                activity.execute(params![kind.as_str(), id, at])?;
            }
            let mut failures = tx.prepare_cached(
                "INSERT OR REPLACE INTO failures
                 (kind, id, count, next_try_ms, quarantined, last_error)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for (kind, id, f) in state.all_failures() {
                failures.execute(params![
                    kind.as_str(),
                    id,
                    i64::from(f.count),
                    f.next_try_ms,
                    i64::from(f.quarantined),
                    f.last_error
                ])?;
            }
            Ok::<_, Failure<StoreError>>(())
        })?;
        state.mark_saved();
        Ok(())
    }

    fn note_activity(&self, kind: Kind, id: &str, at_ms: i64) -> Result<(), StoreError> {
        self.db.write(|tx| {
            tx.execute(
                "INSERT INTO activity (kind, id, at_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (kind, id) DO UPDATE SET at_ms = max(at_ms, excluded.at_ms)",
                params![kind.as_str(), id, at_ms],
            )?;
            Ok::<_, Failure<StoreError>>(())
        })
    }

    fn activity(&self, kind: Kind, id: &str) -> Result<Option<i64>, StoreError> {
        self.db.run(|conn| {
            Ok::<_, Failure<StoreError>>(
                conn.query_row(
                    "SELECT at_ms FROM activity WHERE kind = ?1 AND id = ?2",
                    params![kind.as_str(), id],
                    |r| r.get(0),
                )
                .optional()?,
            )
        })
    }
}
