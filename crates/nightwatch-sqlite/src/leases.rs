//! `leases.db`: named leases with fencing tokens, shared by every process on the data
//! directory (the daemons of one host).
//!
//! A lease's row is never deleted: a release only ends it, so the next acquisition's token
//! still counts on from the last one.

use std::path::Path;

use nightwatch_store::{Acquired, Lease, Leases, StoreError, store_name};
use rusqlite::{OptionalExtension, params};

use crate::db::{Db, Failure, Migration, Schema};

/// Schema 1.
const SCHEMA_1: &str = "
CREATE TABLE IF NOT EXISTS leases (
    name     TEXT PRIMARY KEY,
    holder   TEXT NOT NULL,
    token    INTEGER NOT NULL,
    until_ms INTEGER NOT NULL
) WITHOUT ROWID;
";

const MIGRATIONS: [Migration; 1] = [|tx| tx.execute_batch(SCHEMA_1)];

const SCHEMA: Schema = Schema {
    file: "leases.db",
    store: store_name::LEASES,
    migrations: &MIGRATIONS,
};

/// Takes the lease when it is free or already the holder's, in one statement: the write
/// transaction (`BEGIN IMMEDIATE`) makes it atomic across processes. No row back: another
/// holder has it.
const ACQUIRE: &str = "
INSERT INTO leases (name, holder, token, until_ms) VALUES (?1, ?2, 1, ?3)
ON CONFLICT (name) DO UPDATE
    SET holder = excluded.holder, token = leases.token + 1, until_ms = excluded.until_ms
    WHERE leases.until_ms <= ?4 OR leases.holder = excluded.holder
RETURNING name, holder, token, until_ms";

const COLUMNS: &str = "name, holder, token, until_ms";

fn lease(row: &rusqlite::Row<'_>) -> rusqlite::Result<Lease> {
    Ok(Lease {
        name: row.get(0)?,
        holder: row.get(1)?,
        token: u64::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
        until_ms: row.get(3)?,
    })
}

fn token(lease: &Lease) -> i64 {
    i64::try_from(lease.token).unwrap_or(i64::MAX)
}

/// The leases in `leases.db`.
pub struct SqliteLeases {
    db: Db,
}

impl SqliteLeases {
    /// Opens (creating if needed) `leases.db` in `dir`.
    pub fn open(dir: &Path) -> Result<SqliteLeases, StoreError> {
        Ok(SqliteLeases {
            db: Db::open(dir, &SCHEMA, crate::db::DEFAULT_PATIENCE)?,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.db.path()
    }
}

impl Leases for SqliteLeases {
    fn acquire(
        &self,
        name: &str,
        holder: &str,
        ttl_ms: i64,
        now_ms: i64,
    ) -> Result<Acquired, StoreError> {
        let until = now_ms.saturating_add(ttl_ms);
        self.db.write(|tx| {
            let got = tx
                .prepare_cached(ACQUIRE)?
                .query_row(params![name, holder, until, now_ms], lease)
                .optional()?;
            Ok::<_, Failure<StoreError>>(match got {
                Some(lease) => Acquired::Got(lease),
                None => Acquired::HeldBy(tx.query_row(
                    &format!("SELECT {COLUMNS} FROM leases WHERE name = ?1"),
                    params![name],
                    lease,
                )?),
            })
        })
    }

    fn renew(&self, held: &Lease, ttl_ms: i64, now_ms: i64) -> Result<Option<Lease>, StoreError> {
        let until = now_ms.saturating_add(ttl_ms);
        self.db.write(|tx| {
            Ok::<_, Failure<StoreError>>(
                tx.prepare_cached(&format!(
                    "UPDATE leases SET until_ms = ?1
                     WHERE name = ?2 AND holder = ?3 AND token = ?4 AND until_ms > ?5
                     RETURNING {COLUMNS}"
                ))?
                .query_row(
                    params![until, held.name, held.holder, token(held), now_ms],
                    lease,
                )
                .optional()?,
            )
        })
    }

    fn release(&self, held: &Lease, now_ms: i64) -> Result<bool, StoreError> {
        self.db.write(|tx| {
            let changed = tx.execute(
                "UPDATE leases SET until_ms = min(until_ms, ?1)
                 WHERE name = ?2 AND holder = ?3 AND token = ?4",
                params![now_ms, held.name, held.holder, token(held)],
            )?;
            Ok::<_, Failure<StoreError>>(changed == 1)
        })
    }

    fn list(&self) -> Result<Vec<Lease>, StoreError> {
        self.db.run(|conn| {
            let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM leases ORDER BY name"))?;
            let rows = stmt.query_map([], lease)?;
            Ok::<_, Failure<StoreError>>(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}
