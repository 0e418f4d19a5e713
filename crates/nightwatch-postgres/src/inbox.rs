//! The alert inbox in PostgreSQL: each host's arrivals in `alert_events`, keyed by `(host,
//! id)`. Ids count 1, 2, 3, ... per host from a counter row that each `receive` locks, so a
//! host's arrivals commit in id order and a cursor over ids reads each exactly once. An
//! arrival's row is written once; what was decided about it is a row of `alert_settlements`.
//! Unsettled arrivals are searched for after `alert_settled_through`, the id up to which a
//! host's arrivals were last looked at, and listed in `alert_events_unsettled` until settled.
//! [`PgFleetInbox`] reads every host's arrivals together, in the fleet's order.

use std::borrow::Cow;

use nightwatch_store::{
    AlertEvent, AlertInbox, Arrival, ArrivalCursor, Disposition, FleetArrival, FleetInbox,
    Settlement, StoreError, store_name,
};
use postgres::Row;
use postgres::types::{ToSql, Type};

use crate::db::{Db, Failure, Schema};
use crate::text::{decode, decoded, encode, encode_opt};

const SCHEMA_1: &str = "
CREATE TABLE alert_event_ids (
    host    TEXT PRIMARY KEY,
    last_id BIGINT NOT NULL
);
CREATE TABLE alert_events (
    host        TEXT NOT NULL,   -- the host whose daemon received it
    id          BIGINT NOT NULL,
    received_ms BIGINT NOT NULL,
    source      TEXT NOT NULL,
    alert_id    TEXT NOT NULL,
    status      TEXT NOT NULL,
    title       TEXT NOT NULL,
    alert_host  TEXT,            -- the host the alert is about, when it names one
    alert_json  TEXT NOT NULL,
    disposition TEXT,
    reason      TEXT,
    route       TEXT,
    task_id     BIGINT,
    record      TEXT,
    PRIMARY KEY (host, id)
);
CREATE INDEX alert_events_alert ON alert_events (host, alert_id, id);
CREATE INDEX alert_events_time ON alert_events (host, received_ms);
CREATE INDEX alert_events_unrecorded ON alert_events (host, id) WHERE record IS NULL;
";

/// Every host's arrivals read together ([`PgFleetInbox`]): in the fleet's order, host names
/// compared byte by byte whatever the database's collation; one alert's arrivals on every
/// host found by its id first (the same index still serves one host's).
const SCHEMA_2: &str = r#"
CREATE INDEX alert_events_fleet_order ON alert_events (received_ms, (host COLLATE "C"), id);
DROP INDEX alert_events_alert;
CREATE INDEX alert_events_alert ON alert_events (alert_id, host, id);
"#;

/// Settling an arrival (its disposition, reason, route, task and record) changes no indexed
/// column, so PostgreSQL can rewrite the row in its page (a HOT update, room kept by the fill
/// factor) instead of adding an entry to every index of the table: which arrivals are still
/// unsettled is kept in a table of its own rather than in an index on `record IS NULL`. Under
/// the fleet's intake that update was two fifths of PostgreSQL's time.
const SCHEMA_3: &str = "
CREATE TABLE alert_events_unsettled (
    host TEXT NOT NULL,
    id   BIGINT NOT NULL,
    PRIMARY KEY (host, id)
);
INSERT INTO alert_events_unsettled (host, id)
    SELECT host, id FROM alert_events WHERE record IS NULL;
DROP INDEX alert_events_unrecorded;
ALTER TABLE alert_events SET (fillfactor = 70);
";

/// Settlements in a table of their own: an arrival's row is written once and never updated.
/// Settling is an insert of a narrow row with one index entry, where rewriting the arrival
/// copied the whole row, often into another page with an entry in each of its four indexes,
/// and left a dead row for vacuum; and a prepared update joined to the batch's arrays could be
/// planned, on a table still small, as a walk through all of a host's arrivals.
const SCHEMA_4: &str = "
CREATE TABLE alert_settlements (
    host        TEXT NOT NULL,
    id          BIGINT NOT NULL,
    disposition TEXT,
    reason      TEXT,
    route       TEXT,
    task_id     BIGINT,
    record      TEXT,
    PRIMARY KEY (host, id)
);
INSERT INTO alert_settlements (host, id, disposition, reason, route, task_id, record)
    SELECT host, id, disposition, reason, route, task_id, record
    FROM alert_events WHERE record IS NOT NULL;
ALTER TABLE alert_events DROP COLUMN disposition, DROP COLUMN reason, DROP COLUMN route,
    DROP COLUMN task_id, DROP COLUMN record;
ALTER TABLE alert_events RESET (fillfactor);
";

/// Arrivals are no longer listed as unsettled when written: `alert_settled_through` says up to
/// which id a host's arrivals were looked at, and the search for unsettled ones (every few
/// seconds) reads only those after it, lists what it finds unsettled (a crash's leftovers, or
/// arrivals still being decided) in `alert_events_unsettled`, and moves the mark. Writing and
/// settling an arrival then cost nothing beyond the arrival and its settlement; the list stays
/// a handful of rows, where listing every arrival cost an insert and a delete each and left
/// dead rows that a prepared delete came to walk.
const SCHEMA_5: &str = "
CREATE TABLE alert_settled_through (
    host    TEXT PRIMARY KEY,
    through BIGINT NOT NULL
);
INSERT INTO alert_settled_through (host, through) SELECT host, last_id FROM alert_event_ids;
";

/// One host's arrivals in time order down one index, for the fleet's pages kept to one host
/// (`?host=`): read through the fleet's order instead, a quiet host's page walked past every
/// other host's arrivals of the window.
const SCHEMA_6: &str = "
DROP INDEX alert_events_time;
CREATE INDEX alert_events_time ON alert_events (host, received_ms, id);
";

pub(crate) const SCHEMA: Schema = Schema {
    store: store_name::INBOX,
    migrations: &[SCHEMA_1, SCHEMA_2, SCHEMA_3, SCHEMA_4, SCHEMA_5, SCHEMA_6],
};

/// Arrivals (`e`) with their settlements (`s`) when they have one: looked up arrival by
/// arrival (a subquery with a limit is never turned into a join), so a page of arrivals never
/// costs a walk through all of a host's settlements, whatever the planner believes of the
/// tables' sizes.
const ARRIVALS: &str = "alert_events e LEFT JOIN LATERAL (
         SELECT disposition, reason, route, task_id, record FROM alert_settlements
         WHERE host = e.host AND id = e.id LIMIT 1) s ON true";

/// The fleet's order as SQL, the [`ArrivalCursor`]'s fields in turn.
const FLEET_ORDER: &str = r#"(e.received_ms, e.host COLLATE "C", e.id)"#;

const COLUMNS: &str = "e.id, e.received_ms, e.source, e.alert_id, e.status, e.title, e.alert_host, \
     e.alert_json, s.disposition, s.reason, s.route, s.task_id, s.record";

/// One host's arrivals in the fleet's database.
pub struct PgInbox {
    db: Db,
    host: String,
}

impl PgInbox {
    pub(crate) fn new(db: Db, host: &str) -> PgInbox {
        PgInbox {
            db,
            host: host.to_string(),
        }
    }

    /// The host whose arrivals this handle keeps.
    pub fn host(&self) -> &str {
        &self.host
    }

    fn select(
        &self,
        clause: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<AlertEvent>, StoreError> {
        self.db.run(|client| {
            let mut all: Vec<&(dyn ToSql + Sync)> = vec![&self.host];
            all.extend_from_slice(params);
            client
                .query(
                    &format!("SELECT {COLUMNS} FROM {ARRIVALS} WHERE e.host = $1 {clause}"),
                    &all,
                )?
                .iter()
                .map(read_row)
                .collect()
        })
    }
}

impl AlertInbox for PgInbox {
    fn receive(&self, arrivals: &[Arrival<'_>]) -> Result<Vec<i64>, StoreError> {
        if arrivals.is_empty() {
            return Ok(Vec::new());
        }
        let n = i64::try_from(arrivals.len()).unwrap_or(i64::MAX);
        let received: Vec<i64> = arrivals.iter().map(|a| a.received_ms).collect();
        let sources: Vec<Cow<'_, str>> = arrivals.iter().map(|a| encode(a.source)).collect();
        let alert_ids: Vec<Cow<'_, str>> = arrivals.iter().map(|a| encode(a.alert_id)).collect();
        let statuses: Vec<Cow<'_, str>> = arrivals.iter().map(|a| encode(a.status)).collect();
        let titles: Vec<Cow<'_, str>> = arrivals.iter().map(|a| encode(a.title)).collect();
        let jsons: Vec<Cow<'_, str>> = arrivals.iter().map(|a| encode(a.alert_json)).collect();
        let hosts: Vec<Option<Cow<'_, str>>> =
            arrivals.iter().map(|a| encode_opt(a.host)).collect();
        self.db.write(|tx| {
            // One statement, one round trip: the counter row is created or advanced (and locked
            // until commit, so the next receive numbers after these), and the batch is written
            // from arrays, numbered in its order after the counter's old value.
            let last: i64 = tx
                .query_typed_one(
                    "WITH counter AS (
                         INSERT INTO alert_event_ids AS c (host, last_id) VALUES ($1, $2)
                         ON CONFLICT (host) DO UPDATE SET last_id = c.last_id + $2
                         RETURNING last_id
                     ), written AS (
                         INSERT INTO alert_events (host, id, received_ms, source, alert_id,
                             status, title, alert_host, alert_json)
                         SELECT $1, counter.last_id - $2 + a.n, a.received_ms, a.source,
                             a.alert_id, a.status, a.title, a.alert_host, a.alert_json
                         FROM counter, unnest($3::bigint[], $4::text[], $5::text[], $6::text[],
                             $7::text[], $8::text[], $9::text[])
                             WITH ORDINALITY AS a (received_ms, source, alert_id, status, title,
                                 alert_host, alert_json, n)
                     )
                     SELECT last_id FROM counter",
                    &[
                        (&self.host, Type::TEXT),
                        (&n, Type::INT8),
                        (&received, Type::INT8_ARRAY),
                        (&sources, Type::TEXT_ARRAY),
                        (&alert_ids, Type::TEXT_ARRAY),
                        (&statuses, Type::TEXT_ARRAY),
                        (&titles, Type::TEXT_ARRAY),
                        (&hosts, Type::TEXT_ARRAY),
                        (&jsons, Type::TEXT_ARRAY),
                    ],
                )?
                .get(0);
            Ok::<_, Failure<StoreError>>((last - n + 1..=last).collect())
        })
    }

    fn settle(&self, settlements: &[Settlement<'_>]) -> Result<(), StoreError> {
        if settlements.is_empty() {
            return Ok(());
        }
        let ids: Vec<i64> = settlements.iter().map(|s| s.arrival).collect();
        let dispositions: Vec<&str> = settlements.iter().map(|s| s.disposition.as_str()).collect();
        let reasons: Vec<Cow<'_, str>> = settlements.iter().map(|s| encode(s.reason)).collect();
        let routes: Vec<Option<Cow<'_, str>>> =
            settlements.iter().map(|s| encode_opt(s.route)).collect();
        let task_ids: Vec<Option<i64>> = settlements.iter().map(|s| s.task_id).collect();
        let records: Vec<Cow<'_, str>> = settlements.iter().map(|s| encode(s.record)).collect();
        self.db.write_relaxed(|tx| {
            // The whole batch in one statement. An arrival settled twice in one batch takes
            // its last settlement, as one settled again later does.
            tx.execute_typed(
                "WITH settled AS (
                     DELETE FROM alert_events_unsettled
                     WHERE host = $1 AND id = ANY($2::bigint[])
                 )
                 INSERT INTO alert_settlements AS s
                     (host, id, disposition, reason, route, task_id, record)
                 SELECT DISTINCT ON (id) $1, id, disposition, reason, route, task_id, record
                 FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[],
                         $7::text[])
                     WITH ORDINALITY AS u (id, disposition, reason, route, task_id, record, n)
                 ORDER BY id, n DESC
                 ON CONFLICT (host, id) DO UPDATE
                     SET disposition = excluded.disposition, reason = excluded.reason,
                         route = excluded.route, task_id = excluded.task_id,
                         record = excluded.record",
                &[
                    (&self.host, Type::TEXT),
                    (&ids, Type::INT8_ARRAY),
                    (&dispositions, Type::TEXT_ARRAY),
                    (&reasons, Type::TEXT_ARRAY),
                    (&routes, Type::TEXT_ARRAY),
                    (&task_ids, Type::INT8_ARRAY),
                    (&records, Type::TEXT_ARRAY),
                ],
            )?;
            Ok::<_, Failure<StoreError>>(())
        })
    }

    fn unrecorded(&self, limit: usize) -> Result<Vec<AlertEvent>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.db.write_relaxed(|tx| {
            let through: i64 = tx
                .query_opt(
                    "SELECT through FROM alert_settled_through WHERE host = $1",
                    &[&self.host],
                )?
                .map_or(0, |row| row.get(0));
            // The last id given out, read before the arrivals: a receive commits its arrivals
            // with the counter, so every arrival up to it is visible to the statements after.
            let last: i64 = tx
                .query_opt(
                    "SELECT last_id FROM alert_event_ids WHERE host = $1",
                    &[&self.host],
                )?
                .map_or(0, |row| row.get(0));
            if last > through {
                // The arrivals since the last look that have no settlement, listed. Each
                // arrival's settlement is looked up by its key (a subquery with a limit is
                // never made a join): a join planned from stale statistics compared every
                // arrival of the range with every settlement of it.
                tx.execute(
                    "WITH found AS (
                         INSERT INTO alert_events_unsettled (host, id)
                         SELECT e.host, e.id FROM alert_events e
                         WHERE e.host = $1 AND e.id > $2 AND e.id <= $3
                           AND (SELECT true FROM alert_settlements s
                                WHERE s.host = $1 AND s.id = e.id LIMIT 1) IS NULL
                         ON CONFLICT DO NOTHING
                     )
                     INSERT INTO alert_settled_through AS t (host, through) VALUES ($1, $3)
                     ON CONFLICT (host) DO UPDATE SET through = greatest(t.through, $3)",
                    &[&self.host, &through, &last],
                )?;
            }
            // One listed while its settlement committed is settled: off the list (its
            // settlement looked up row by row, as a subquery with a limit always is).
            tx.execute(
                "DELETE FROM alert_events_unsettled u WHERE u.host = $1 AND (SELECT true
                     FROM alert_settlements s WHERE s.host = $1 AND s.id = u.id LIMIT 1)",
                &[&self.host],
            )?;
            tx.query(
                &format!(
                    "SELECT {COLUMNS} FROM {ARRIVALS}
                     WHERE e.host = $1 AND e.id IN (SELECT id FROM alert_events_unsettled
                         WHERE host = $1 ORDER BY id LIMIT $2)
                       AND s.record IS NULL
                     ORDER BY e.id"
                ),
                &[&self.host, &limit],
            )?
            .iter()
            .map(read_row)
            .collect::<Result<Vec<_>, _>>()
        })
    }

    fn get(&self, id: i64) -> Result<Option<AlertEvent>, StoreError> {
        Ok(self.select("AND e.id = $2", &[&id])?.into_iter().next())
    }

    fn for_alert(&self, alert_id: &str) -> Result<Vec<AlertEvent>, StoreError> {
        self.select("AND e.alert_id = $2 ORDER BY e.id", &[&encode(alert_id)])
    }

    fn after(&self, after_id: i64, limit: usize) -> Result<Vec<AlertEvent>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.select("AND e.id > $2 ORDER BY e.id LIMIT $3", &[&after_id, &limit])
    }

    fn between(
        &self,
        since_ms: i64,
        until_ms: i64,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AlertEvent>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let before = before.unwrap_or(i64::MAX);
        // Newest first down the primary key from `before`, the time a filter (`+ 0` is no
        // index's key): a page of a window that ends now reads about its own rows, where the
        // time index would read the whole window to sort it by id.
        let mut rows = self.select(
            "AND e.received_ms + 0 >= $2 AND e.received_ms + 0 < $3 AND e.id < $5 \
             ORDER BY e.id DESC LIMIT $4",
            &[&since_ms, &until_ms, &limit, &before],
        )?;
        rows.reverse();
        Ok(rows)
    }

    fn count(&self) -> Result<i64, StoreError> {
        self.db.run(|client| {
            Ok::<_, Failure<StoreError>>(
                client
                    .query_one(
                        "SELECT count(*) FROM alert_events WHERE host = $1",
                        &[&self.host],
                    )?
                    .get(0),
            )
        })
    }
}

/// Every host's arrivals in the fleet's database, read together.
pub struct PgFleetInbox {
    db: Db,
}

impl PgFleetInbox {
    pub(crate) fn new(db: Db) -> PgFleetInbox {
        PgFleetInbox { db }
    }

    /// Arrivals (with their host) where `clause` holds, its placeholders numbered from `$1`.
    fn select(
        &self,
        clause: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<FleetArrival>, StoreError> {
        self.db.run(|client| {
            client
                .query(
                    &format!("SELECT {COLUMNS}, e.host FROM {ARRIVALS} WHERE {clause}"),
                    params,
                )?
                .iter()
                .map(|row| {
                    Ok(FleetArrival {
                        arrival: read_row(row)?,
                        host: row.try_get(13)?,
                    })
                })
                .collect()
        })
    }
}

impl FleetInbox for PgFleetInbox {
    fn between(
        &self,
        host: Option<&str>,
        since_ms: i64,
        until_ms: i64,
        before: Option<&ArrivalCursor>,
        limit: usize,
    ) -> Result<Vec<FleetArrival>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // No cursor: a place after every arrival of the window.
        let before = before.cloned().unwrap_or(ArrivalCursor {
            received_ms: until_ms,
            host: String::new(),
            id: 0,
        });
        if let Some(host) = host {
            let (received_ms, id) = in_host_order(host, &before);
            let mut rows = self.select(
                "e.host = $1 AND e.received_ms >= $2 AND e.received_ms < $3
                   AND (e.received_ms, e.id) < ($4, $5)
                 ORDER BY e.received_ms DESC, e.id DESC LIMIT $6",
                &[&host, &since_ms, &until_ms, &received_ms, &id, &limit],
            )?;
            rows.reverse();
            return Ok(rows);
        }
        let mut rows = self.select(
            &format!(
                "e.received_ms >= $1 AND e.received_ms < $2
                   AND {FLEET_ORDER} < ($3, $4 COLLATE \"C\", $5)
                 ORDER BY e.received_ms DESC, e.host COLLATE \"C\" DESC, e.id DESC LIMIT $6"
            ),
            &[
                &since_ms,
                &until_ms,
                &before.received_ms,
                &before.host,
                &before.id,
                &limit,
            ],
        )?;
        rows.reverse();
        Ok(rows)
    }

    fn after(
        &self,
        host: Option<&str>,
        after: &ArrivalCursor,
        limit: usize,
    ) -> Result<Vec<FleetArrival>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        if let Some(host) = host {
            let (received_ms, id) = in_host_order(host, after);
            return self.select(
                "e.host = $1 AND (e.received_ms, e.id) > ($2, $3)
                 ORDER BY e.received_ms, e.id LIMIT $4",
                &[&host, &received_ms, &id, &limit],
            );
        }
        self.select(
            &format!(
                "{FLEET_ORDER} > ($1, $2 COLLATE \"C\", $3)
                 ORDER BY e.received_ms, e.host COLLATE \"C\", e.id LIMIT $4"
            ),
            &[&after.received_ms, &after.host, &after.id, &limit],
        )
    }

    fn for_alert(&self, alert_id: &str) -> Result<Vec<FleetArrival>, StoreError> {
        self.select(
            "e.alert_id = $1 ORDER BY e.received_ms, e.host COLLATE \"C\", e.id",
            &[&encode(alert_id)],
        )
    }
}

/// A cursor in the fleet's order (time, host compared byte by byte, id) as the same place
/// among one host's arrivals, ordered by (time, id): another host's cursor sits after all of
/// `host`'s arrivals of its millisecond when `host` sorts first, before them all otherwise.
fn in_host_order(host: &str, cursor: &ArrivalCursor) -> (i64, i64) {
    let id = match host.as_bytes().cmp(cursor.host.as_bytes()) {
        std::cmp::Ordering::Equal => cursor.id,
        std::cmp::Ordering::Less => i64::MAX,
        std::cmp::Ordering::Greater => i64::MIN,
    };
    (cursor.received_ms, id)
}

fn read_row(r: &Row) -> Result<AlertEvent, Failure<StoreError>> {
    let id: i64 = r.try_get(0)?;
    let alert_json = decode(r.try_get(7)?);
    let disposition: Option<&str> = r.try_get(8)?;
    let text = |i: usize| r.try_get::<_, String>(i).map(decoded);
    let optional = |i: usize| r.try_get::<_, Option<String>>(i).map(|v| v.map(decoded));
    Ok(AlertEvent {
        id,
        received_ms: r.try_get(1)?,
        source: text(2)?,
        alert_id: text(3)?,
        status: text(4)?,
        title: text(5)?,
        host: optional(6)?,
        alert: serde_json::from_str(&alert_json).map_err(|e| StoreError::Corrupt {
            store: store_name::INBOX,
            what: format!("the stored alert JSON of arrival {id} is unreadable: {e}"),
        })?,
        disposition: disposition.and_then(Disposition::parse),
        reason: optional(9)?,
        route: optional(10)?,
        task_id: r.try_get(11)?,
        record: optional(12)?,
    })
}
