//! The janitor's memory in PostgreSQL: each host's first sightings, activity and failed
//! removals, keyed by `(host, kind, id)` (containers and branches are a host's own).

use nightwatch_janitor::{Failures, JanitorState, Kind};
use nightwatch_store::{JanitorStore, StoreError, store_name};

use crate::db::{Db, Failure, Schema, count_u32};
use crate::text::{decode, decoded, encode};

const SCHEMA_1: &str = "
CREATE TABLE janitor_first_seen (
    host  TEXT NOT NULL,
    kind  TEXT NOT NULL,
    id    TEXT NOT NULL,
    at_ms BIGINT NOT NULL,
    PRIMARY KEY (host, kind, id)
);
CREATE TABLE janitor_activity (
    host  TEXT NOT NULL,
    kind  TEXT NOT NULL,
    id    TEXT NOT NULL,
    at_ms BIGINT NOT NULL,
    PRIMARY KEY (host, kind, id)
);
CREATE TABLE janitor_failures (
    host        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    id          TEXT NOT NULL,
    count       BIGINT NOT NULL,
    next_try_ms BIGINT NOT NULL,
    quarantined BOOLEAN NOT NULL,
    last_error  TEXT NOT NULL,
    PRIMARY KEY (host, kind, id)
);
";

pub(crate) const SCHEMA: Schema = Schema {
    store: store_name::JANITOR,
    migrations: &[SCHEMA_1],
};

const NOTE_ACTIVITY: &str = "INSERT INTO janitor_activity (host, kind, id, at_ms)
    VALUES ($1, $2, $3, $4)
    ON CONFLICT (host, kind, id) DO UPDATE
        SET at_ms = greatest(janitor_activity.at_ms, excluded.at_ms)";

/// One host's janitor state in the fleet's database.
pub struct PgJanitorStore {
    db: Db,
    host: String,
}

impl PgJanitorStore {
    pub(crate) fn new(db: Db, host: &str) -> PgJanitorStore {
        PgJanitorStore {
            db,
            host: host.to_string(),
        }
    }

    /// The host whose janitor state this handle keeps.
    pub fn host(&self) -> &str {
        &self.host
    }
}

impl JanitorStore for PgJanitorStore {
    fn load(&self) -> Result<JanitorState, StoreError> {
        self.db.run(|client| {
            let mut state = JanitorState::new();
            for table in ["janitor_first_seen", "janitor_activity"] {
                let rows = client.query(
                    &format!("SELECT kind, id, at_ms FROM {table} WHERE host = $1"),
                    &[&self.host],
                )?;
                for row in &rows {
                    let Some(kind) = Kind::parse(row.try_get(0)?) else {
                        continue;
                    };
                    let (id, at_ms) = (decode(row.try_get(1)?), row.try_get::<_, i64>(2)?);
                    let id = id.as_ref();
                    if table == "janitor_first_seen" {
                        state.note_first_seen(kind, id, at_ms);
                    } else {
                        state.note_activity(kind, id, at_ms);
                    }
                }
            }
            let rows = client.query(
                "SELECT kind, id, count, next_try_ms, quarantined, last_error
                 FROM janitor_failures WHERE host = $1",
                &[&self.host],
            )?;
            for row in &rows {
                if let Some(kind) = Kind::parse(row.try_get(0)?) {
                    let failures = Failures {
                        count: count_u32(row.try_get(2)?),
                        next_try_ms: row.try_get(3)?,
                        quarantined: row.try_get(4)?,
                        last_error: decoded(row.try_get(5)?),
                    };
                    state.restore_failures(kind, &decode(row.try_get(1)?), failures);
                }
            }
            Ok::<_, Failure<StoreError>>(state)
        })
    }

    fn save(&self, state: &mut JanitorState) -> Result<(), StoreError> {
        let host = &self.host;
        self.db.write(|tx| {
            let forget = [
                tx.prepare(
                    "DELETE FROM janitor_first_seen WHERE host = $1 AND kind = $2 AND id = $3",
                )?,
                tx.prepare(
                    "DELETE FROM janitor_activity WHERE host = $1 AND kind = $2 AND id = $3",
                )?,
                tx.prepare(
                    "DELETE FROM janitor_failures WHERE host = $1 AND kind = $2 AND id = $3",
                )?,
            ];
            for (kind, id) in state.forgotten() {
                for stmt in &forget {
                    tx.execute(stmt, &[host, &kind.as_str(), &encode(id)])?;
                }
            }
            for (kind, id) in state.released() {
                tx.execute(&forget[2], &[host, &kind.as_str(), &encode(id)])?;
            }
            let first = tx.prepare(
                "INSERT INTO janitor_first_seen (host, kind, id, at_ms) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (host, kind, id) DO UPDATE
                     SET at_ms = least(janitor_first_seen.at_ms, excluded.at_ms)",
            )?;
            for (kind, id, at) in state.first_sightings() {
                tx.execute(&first, &[host, &kind.as_str(), &encode(id), &at])?;
            }
            let activity = tx.prepare(NOTE_ACTIVITY)?;
            for (kind, id, at) in state.activities() {
                tx.execute(&activity, &[host, &kind.as_str(), &encode(id), &at])?;
            }
            let failures = tx.prepare(
                "INSERT INTO janitor_failures
                     (host, kind, id, count, next_try_ms, quarantined, last_error)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (host, kind, id) DO UPDATE SET count = excluded.count,
                     next_try_ms = excluded.next_try_ms, quarantined = excluded.quarantined,
                     last_error = excluded.last_error",
            )?;
            for (kind, id, f) in state.all_failures() {
                tx.execute(
                    &failures,
                    &[
                        host,
                        &kind.as_str(),
                        &encode(id),
                        &i64::from(f.count),
                        &f.next_try_ms,
                        &f.quarantined,
                        &encode(&f.last_error),
                    ],
                )?;
            }
            Ok::<_, Failure<StoreError>>(())
        })?;
        state.mark_saved();
        Ok(())
    }

    fn note_activity(&self, kind: Kind, id: &str, at_ms: i64) -> Result<(), StoreError> {
        self.db.run(|client| {
            client.execute(
                NOTE_ACTIVITY,
                &[&self.host, &kind.as_str(), &encode(id), &at_ms],
            )?;
            Ok::<_, Failure<StoreError>>(())
        })
    }

    fn activity(&self, kind: Kind, id: &str) -> Result<Option<i64>, StoreError> {
        self.db.run(|client| {
            Ok::<_, Failure<StoreError>>(
                client
                    .query_opt(
                        "SELECT at_ms FROM janitor_activity
                         WHERE host = $1 AND kind = $2 AND id = $3",
                        &[&self.host, &kind.as_str(), &encode(id)],
                    )?
                    .map(|r| r.get(0)),
            )
        })
    }
}
