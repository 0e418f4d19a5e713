//! The fleet's view of every host's ledger: the chains of `ledger_records` (shipped there by
//! each host, see [`nightwatch_store::ship`]) and, in `fleet_hosts`, each host's own head as
//! it last reported it, so the fleet can say whether it holds all of a host's chain.

use crate::db::{Db, Failure, Schema, big};
use crate::ledger::{COLUMNS, Param, PgLedger, filter_sql, record_from_row};
use nightwatch_ledger::{ChainLink, Filter, Record};
use nightwatch_store::{
    FleetCursor, FleetHost, FleetLedger, FleetRecord, LedgerReader, StoreError, store_name,
};
use std::sync::Arc;

const SCHEMA_1: &str = "
CREATE TABLE fleet_hosts (
    host        TEXT PRIMARY KEY,
    local_seq   BIGINT,   -- the host's own ledger head when it last shipped
    local_hash  TEXT,
    reported_ms BIGINT NOT NULL
);
";

/// The fleet's records read newest first across hosts ([`FleetLedger::records`]): in the
/// fleet's order, host names compared byte by byte whatever the database's collation.
const SCHEMA_2: &str = r#"
CREATE INDEX ledger_records_fleet_order ON ledger_records (timestamp_ms, (host COLLATE "C"), seq);
"#;

/// Each host's clock as it last measured it against the fleet database's; a host may note it
/// before it has shipped anything.
const SCHEMA_3: &str = "
ALTER TABLE fleet_hosts ADD COLUMN clock_ahead_ms BIGINT, ALTER COLUMN reported_ms DROP NOT NULL;
";

/// A session's, an alert's and a verdict's records across the fleet, newest first
/// (`/api/sessions/{id}`, an alert's page, `?verdict=deny`): each found in the fleet's order
/// under its own key, where the fleet's order alone walked every record newer than the last
/// match, and the per-host indexes could not serve a search across hosts.
const SCHEMA_4: &str = r#"
CREATE INDEX ledger_records_fleet_session
    ON ledger_records (session_id, timestamp_ms, (host COLLATE "C"), seq)
    WHERE session_id IS NOT NULL;
CREATE INDEX ledger_records_fleet_alert
    ON ledger_records (alert_id, timestamp_ms, (host COLLATE "C"), seq)
    WHERE alert_id IS NOT NULL;
CREATE INDEX ledger_records_fleet_verdict
    ON ledger_records (verdict, timestamp_ms, (host COLLATE "C"), seq)
    WHERE verdict IS NOT NULL;
"#;

pub(crate) const SCHEMA: Schema = Schema {
    store: store_name::FLEET,
    migrations: &[SCHEMA_1, SCHEMA_2, SCHEMA_3, SCHEMA_4],
};

/// The fleet's order as SQL, the [`FleetCursor`]'s fields in turn.
const FLEET_ORDER: &str = r#"(timestamp_ms, host COLLATE "C", seq)"#;

/// Every host's chain in the fleet's database.
pub struct PgFleet {
    pub(crate) db: Db,
    pub(crate) stores: crate::PgStores,
}

impl PgFleet {
    fn ledger_of(&self, host: &str) -> Arc<PgLedger> {
        self.stores.ledger_of(host)
    }
}

impl FleetLedger for PgFleet {
    fn clock_ms(&self) -> Result<Option<i64>, StoreError> {
        self.db.run(|client| {
            // clock_timestamp(), not now(): the time of this statement, not of a transaction.
            let row = client.query_one(
                "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
                &[],
            )?;
            Ok::<_, Failure<StoreError>>(Some(row.get::<_, i64>(0)))
        })
    }

    fn shipped(&self, host: &str) -> Result<Option<(u64, String)>, StoreError> {
        self.db.run(|client| {
            let row = client.query_opt(
                "SELECT seq, hash FROM ledger_records WHERE host = $1 ORDER BY seq DESC LIMIT 1",
                &[&host],
            )?;
            Ok::<_, Failure<StoreError>>(row.map(|r| (seq(r.get(0)), r.get(1))))
        })
    }

    fn ship(
        &self,
        host: &str,
        records: &[Record],
        local_head: Option<(u64, String)>,
        now_ms: i64,
    ) -> Result<usize, StoreError> {
        let new = self.ledger_of(host).ship(records)?;
        let (local_seq, local_hash) = match local_head {
            Some((seq, hash)) => (Some(big(seq)), Some(hash)),
            None => (None, None),
        };
        self.db.write(|tx| {
            tx.execute(
                "INSERT INTO fleet_hosts (host, local_seq, local_hash, reported_ms)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (host) DO UPDATE SET local_seq = excluded.local_seq,
                     local_hash = excluded.local_hash, reported_ms = excluded.reported_ms",
                &[&host, &local_seq, &local_hash, &now_ms],
            )?;
            Ok::<_, Failure<StoreError>>(())
        })?;
        Ok(new)
    }

    fn note_clock(&self, host: &str, ahead_ms: i64) -> Result<(), StoreError> {
        self.db.write(|tx| {
            tx.execute(
                "INSERT INTO fleet_hosts (host, clock_ahead_ms) VALUES ($1, $2)
                 ON CONFLICT (host) DO UPDATE SET clock_ahead_ms = excluded.clock_ahead_ms",
                &[&host, &ahead_ms],
            )?;
            Ok::<_, Failure<StoreError>>(())
        })
    }

    fn hosts(&self) -> Result<Vec<FleetHost>, StoreError> {
        self.db.run(|client| {
            let rows = client.query(
                "SELECT coalesce(h.host, f.host), h.seq, h.hash,
                        (SELECT r.timestamp_ms FROM ledger_records r
                          WHERE r.host = h.host AND r.seq = h.seq),
                        f.local_seq, f.local_hash, f.reported_ms, f.clock_ahead_ms
                   FROM (SELECT host, seq, hash FROM ledger_heads WHERE seq > 0) h
                   FULL JOIN fleet_hosts f ON f.host = h.host
                  ORDER BY 1",
                &[],
            )?;
            Ok::<_, Failure<StoreError>>(
                rows.iter()
                    .map(|r| FleetHost {
                        host: r.get(0),
                        shipped: pair(r.get(1), r.get(2)),
                        shipped_record_ms: r.get(3),
                        local_head: pair(r.get(4), r.get(5)),
                        reported_ms: r.get(6),
                        clock_ahead_ms: r.get(7),
                    })
                    .collect(),
            )
        })
    }

    fn host_ledger(&self, host: &str) -> Result<Arc<dyn LedgerReader>, StoreError> {
        let reported = self.db.run(|client| {
            let row = client.query_opt(
                "SELECT local_seq, local_hash FROM fleet_hosts WHERE host = $1",
                &[&host],
            )?;
            Ok::<_, Failure<StoreError>>(row.and_then(|r| pair(r.get(0), r.get(1))))
        })?;
        Ok(Arc::new(ReportedChain {
            chain: self.ledger_of(host),
            reported,
        }))
    }

    fn records(
        &self,
        host: Option<&str>,
        filter: &Filter,
        before: Option<&FleetCursor>,
    ) -> Result<Vec<FleetRecord>, StoreError> {
        let (mut sql_where, mut values) = filter_sql(filter, 1);
        if let Some(host) = host {
            values.push(Box::new(host.to_owned()));
            sql_where.push_str(&format!(" AND host = ${}", values.len()));
        }
        if let Some(b) = before {
            let n = values.len();
            sql_where.push_str(&format!(
                " AND {FLEET_ORDER} < (${}, ${} COLLATE \"C\", ${})",
                n + 1,
                n + 2,
                n + 3
            ));
            values.extend([
                Box::new(b.timestamp_ms) as Param,
                Box::new(b.host.clone()),
                Box::new(big(b.seq)),
            ]);
        }
        let limit = match filter.limit {
            Some(limit) => format!(" LIMIT {}", i64::try_from(limit).unwrap_or(i64::MAX)),
            None => String::new(),
        };
        let sql = format!(
            "SELECT {COLUMNS}, host FROM ledger_records WHERE true{sql_where}
              ORDER BY timestamp_ms DESC, host COLLATE \"C\" DESC, seq DESC{limit}"
        );
        let params: Vec<&(dyn postgres::types::ToSql + Sync)> =
            values.iter().map(|v| v.as_ref()).collect();
        self.db.run(|client| {
            let rows = client.query(&sql, &params)?;
            rows.iter()
                .map(|row| {
                    Ok(FleetRecord {
                        record: record_from_row(row)?,
                        host: row.try_get(24)?,
                    })
                })
                .collect::<Result<Vec<_>, Failure<StoreError>>>()
        })
    }
}

/// A host's chain as the fleet holds it, whose head checkpoint is the head the host reported:
/// `verify` on it finds a chain the fleet holds only part of.
struct ReportedChain {
    chain: Arc<PgLedger>,
    reported: Option<(u64, String)>,
}

impl LedgerReader for ReportedChain {
    fn get(&self, id_or_seq: &str) -> Result<Option<Record>, StoreError> {
        self.chain.get(id_or_seq)
    }
    fn query(&self, filter: &Filter) -> Result<Vec<Record>, StoreError> {
        self.chain.query(filter)
    }
    fn decision_for_call(&self, call_id: &str) -> Result<Option<Record>, StoreError> {
        self.chain.decision_for_call(call_id)
    }
    fn scan(
        &self,
        visit: &mut dyn FnMut(&Record) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.chain.scan(visit)
    }
    fn scan_chain(
        &self,
        visit: &mut dyn FnMut(&ChainLink<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.chain.scan_chain(visit)
    }
    fn head_checkpoint(&self) -> Result<Option<(u64, String)>, StoreError> {
        Ok(self.reported.clone())
    }
}

fn seq(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn pair(seq_of: Option<i64>, hash: Option<String>) -> Option<(u64, String)> {
    Some((seq(seq_of?), hash?))
}
