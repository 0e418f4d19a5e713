//! Named leases with fencing tokens for the whole fleet: one row per lease name, whoever
//! holds it. A row is never deleted (a release only ends the lease), so tokens keep counting.

use nightwatch_store::{Acquired, Lease, Leases, StoreError, store_name};

use crate::db::{Db, Failure, Schema};

const SCHEMA_1: &str = "
CREATE TABLE leases (
    name     TEXT PRIMARY KEY,
    holder   TEXT NOT NULL,
    token    BIGINT NOT NULL,
    until_ms BIGINT NOT NULL
);
";

pub(crate) const SCHEMA: Schema = Schema {
    store: store_name::LEASES,
    migrations: &[SCHEMA_1],
};

/// One statement decides: a new name is inserted; an existing row is taken over only when it
/// has expired or is already the holder's. Of hosts running it at once, the first to insert or
/// lock the row wins and the others wait on that row's lock, then see the new holder's
/// unexpired `until_ms` and return no row (READ COMMITTED re-checks `WHERE` against the
/// row as committed).
const ACQUIRE: &str = "
INSERT INTO leases (name, holder, token, until_ms) VALUES ($1, $2, 1, $3)
ON CONFLICT (name) DO UPDATE
    SET holder = excluded.holder, token = leases.token + 1, until_ms = excluded.until_ms
    WHERE leases.until_ms <= $4 OR leases.holder = excluded.holder
RETURNING name, holder, token, until_ms";

fn lease(row: &postgres::Row) -> Result<Lease, postgres::Error> {
    Ok(Lease {
        name: row.try_get(0)?,
        holder: row.try_get(1)?,
        token: u64::try_from(row.try_get::<_, i64>(2)?).unwrap_or(0),
        until_ms: row.try_get(3)?,
    })
}

fn token(lease: &Lease) -> i64 {
    i64::try_from(lease.token).unwrap_or(i64::MAX)
}

/// The fleet's leases.
pub struct PgLeases {
    db: Db,
}

impl PgLeases {
    pub(crate) fn new(db: Db) -> PgLeases {
        PgLeases { db }
    }
}

impl Leases for PgLeases {
    fn acquire(
        &self,
        name: &str,
        holder: &str,
        ttl_ms: i64,
        now_ms: i64,
    ) -> Result<Acquired, StoreError> {
        let until = now_ms.saturating_add(ttl_ms);
        self.db.write(|tx| {
            if let Some(row) = tx.query_opt(ACQUIRE, &[&name, &holder, &until, &now_ms])? {
                return Ok::<_, Failure<StoreError>>(Acquired::Got(lease(&row)?));
            }
            let row = tx.query_one(
                "SELECT name, holder, token, until_ms FROM leases WHERE name = $1",
                &[&name],
            )?;
            Ok(Acquired::HeldBy(lease(&row)?))
        })
    }

    fn renew(&self, held: &Lease, ttl_ms: i64, now_ms: i64) -> Result<Option<Lease>, StoreError> {
        let until = now_ms.saturating_add(ttl_ms);
        self.db.write(|tx| {
            let row = tx.query_opt(
                "UPDATE leases SET until_ms = $1
                 WHERE name = $2 AND holder = $3 AND token = $4 AND until_ms > $5
                 RETURNING name, holder, token, until_ms",
                &[&until, &held.name, &held.holder, &token(held), &now_ms],
            )?;
            Ok::<_, Failure<StoreError>>(row.as_ref().map(lease).transpose()?)
        })
    }

    fn release(&self, held: &Lease, now_ms: i64) -> Result<bool, StoreError> {
        self.db.write(|tx| {
            let changed = tx.execute(
                "UPDATE leases SET until_ms = least(until_ms, $1)
                 WHERE name = $2 AND holder = $3 AND token = $4",
                &[&now_ms, &held.name, &held.holder, &token(held)],
            )?;
            Ok::<_, Failure<StoreError>>(changed == 1)
        })
    }

    fn list(&self) -> Result<Vec<Lease>, StoreError> {
        self.db.run(|client| {
            let rows = client.query(
                "SELECT name, holder, token, until_ms FROM leases ORDER BY name",
                &[],
            )?;
            Ok::<_, Failure<StoreError>>(rows.iter().map(lease).collect::<Result<Vec<_>, _>>()?)
        })
    }
}
