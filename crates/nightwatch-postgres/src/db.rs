//! The one way the database is reached, migrated and written, for all four stores.

use nightwatch_store::StoreError;
use postgres::config::Host;
use postgres::config::SslMode;
use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{Client, Config, Row, Statement, Transaction};
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};
use tokio_postgres_rustls::MakeRustlsConnect;

pub(crate) type Pool = r2d2::Pool<Manager>;
pub(crate) type Pooled = r2d2::PooledConnection<Manager>;

/// Statements a connection keeps prepared at most; past that, a statement is sent unnamed
/// (parsed and planned on every call) as before. The stores' statements number a few dozen.
const PREPARED_PER_CONNECTION: usize = 128;

/// A pooled connection and the statements prepared on it, by their text: the hot statements
/// (the intake's, the workers') are parsed once per connection and then sent as a bind and an
/// execute in one round trip, planned from PostgreSQL's plan cache.
pub(crate) struct Conn {
    pub client: Client,
    prepared: HashMap<String, Statement>,
}

/// Opens the pool's connections (the driver's settings and TLS connector) and tells a broken
/// one from a live one.
pub(crate) struct Manager {
    target: Target,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Conn, postgres::Error> {
        Ok(Conn {
            client: self.target.config.connect(self.target.tls.clone())?,
            prepared: HashMap::new(),
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.client.is_closed()
    }
}

/// A transaction of a pooled connection: a [`Transaction`] whose typed statements
/// (`query_typed`, `execute_typed`, ...) are prepared once per connection and reused.
pub(crate) struct Tx<'a> {
    tx: Transaction<'a>,
    prepared: &'a mut HashMap<String, Statement>,
}

impl<'a> Deref for Tx<'a> {
    type Target = Transaction<'a>;
    fn deref(&self) -> &Transaction<'a> {
        &self.tx
    }
}

impl DerefMut for Tx<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.tx
    }
}

/// Parameters with their types, as the driver's `*_typed` calls take them.
type Typed<'p> = [(&'p (dyn ToSql + Sync), Type)];

impl Tx<'_> {
    /// `sql` prepared on this connection with `params`' types, from the cache when it was
    /// before; `None` when the cache is full (the caller then sends it unnamed).
    fn statement(
        &mut self,
        sql: &str,
        params: &Typed<'_>,
    ) -> Result<Option<Statement>, postgres::Error> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(Some(statement.clone()));
        }
        if self.prepared.len() >= PREPARED_PER_CONNECTION {
            return Ok(None);
        }
        let types: Vec<Type> = params.iter().map(|(_, t)| t.clone()).collect();
        let statement = self.tx.prepare_typed(sql, &types)?;
        self.prepared.insert(sql.to_owned(), statement.clone());
        Ok(Some(statement))
    }

    pub fn query_typed(
        &mut self,
        sql: &str,
        params: &Typed<'_>,
    ) -> Result<Vec<Row>, postgres::Error> {
        match self.statement(sql, params)? {
            Some(statement) => self.tx.query(&statement, &values(params)),
            None => self.tx.query_typed(sql, params),
        }
    }

    pub fn query_typed_one(
        &mut self,
        sql: &str,
        params: &Typed<'_>,
    ) -> Result<Row, postgres::Error> {
        match self.statement(sql, params)? {
            Some(statement) => self.tx.query_one(&statement, &values(params)),
            None => self.tx.query_typed_one(sql, params),
        }
    }

    pub fn query_typed_opt(
        &mut self,
        sql: &str,
        params: &Typed<'_>,
    ) -> Result<Option<Row>, postgres::Error> {
        match self.statement(sql, params)? {
            Some(statement) => self.tx.query_opt(&statement, &values(params)),
            None => self.tx.query_typed_opt(sql, params),
        }
    }

    pub fn execute_typed(&mut self, sql: &str, params: &Typed<'_>) -> Result<u64, postgres::Error> {
        match self.statement(sql, params)? {
            Some(statement) => self.tx.execute(&statement, &values(params)),
            None => self.tx.execute_typed(sql, params),
        }
    }
}

fn values<'p>(params: &Typed<'p>) -> Vec<&'p (dyn ToSql + Sync)> {
    params.iter().map(|(v, _)| *v).collect()
}

/// Where to connect and how: the driver's settings, and the TLS connector it is given (used
/// only when the string asked for TLS; see [`crate::tls`]).
pub(crate) struct Target {
    pub config: Config,
    pub tls: MakeRustlsConnect,
}

/// Settings of a connection to the database (see [`crate::PgStores::connect_with`]).
#[derive(Clone, Debug)]
pub struct PgOptions {
    /// Connections the pool keeps open at most; a call waits for a free one.
    pub max_connections: u32,
    /// How long a call waits for a free connection, and keeps retrying a transaction that
    /// lost a conflict with another (a deadlock or a serialization failure), before failing.
    pub patience: Duration,
    /// How long opening one connection may take, unless the URL says (`connect_timeout`).
    pub connect_timeout: Duration,
    /// Bytes of `stdout` and of `stderr` the ledger keeps per record.
    pub output_cap: usize,
}

impl Default for PgOptions {
    fn default() -> PgOptions {
        PgOptions {
            max_connections: 8,
            patience: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            output_cap: nightwatch_ledger::DEFAULT_OUTPUT_CAP,
        }
    }
}

/// One store's numbered migrations: migration `i` takes it from version `i` to `i + 1`.
pub(crate) struct Schema {
    /// The store's name in errors and in `schema_migrations`.
    pub store: &'static str,
    pub migrations: &'static [&'static str],
}

impl Schema {
    pub fn version(&self) -> i64 {
        i64::try_from(self.migrations.len()).unwrap_or(i64::MAX)
    }
}

/// The advisory lock migrations are applied under (any constant would do; this spells
/// "nightwat" in ASCII, so another program's lock is unlikely to share it).
const MIGRATION_LOCK: i64 = 0x6e69_6768_7477_6174;

const MIGRATIONS_TABLE: &str = "
CREATE TABLE IF NOT EXISTS schema_migrations (
    store      TEXT NOT NULL,
    version    BIGINT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (store, version)
);";

/// A failure inside a store operation: PostgreSQL's (conflicts are retried), or the caller's.
pub(crate) enum Failure<E> {
    Sql(postgres::Error),
    Caller(E),
}

impl<E> From<postgres::Error> for Failure<E> {
    fn from(e: postgres::Error) -> Failure<E> {
        Failure::Sql(e)
    }
}

impl From<StoreError> for Failure<StoreError> {
    fn from(e: StoreError) -> Failure<StoreError> {
        Failure::Caller(e)
    }
}

impl From<nightwatch_store::TaskError> for Failure<nightwatch_store::TaskError> {
    fn from(e: nightwatch_store::TaskError) -> Failure<nightwatch_store::TaskError> {
        Failure::Caller(e)
    }
}

/// Where the URL points, for errors: hosts, port, database and user, never the password.
pub(crate) fn describe_target(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    format!(
        "{} port {} (database {}, user {})",
        if hosts.is_empty() {
            "the default host".to_string()
        } else {
            hosts.join(",")
        },
        if ports.is_empty() {
            "5432".to_string()
        } else {
            ports.join(",")
        },
        config.get_dbname().unwrap_or("(the user's)"),
        config.get_user().unwrap_or("(the process's)"),
    )
}

/// Parses `url` (a `postgres://` URL or `key=value` pairs) and fills in what nightwatch
/// always wants: a connect timeout, its name in `pg_stat_activity`, and TLS as the string
/// asks for it (`sslmode=require` and `sslrootcert`; see [`crate::tls`]).
pub(crate) fn config(
    url: &str,
    options: &PgOptions,
    store: &'static str,
) -> Result<Target, StoreError> {
    let unreadable = |e: String| StoreError::Backend {
        store,
        message: format!("not a PostgreSQL connection string: {e}"),
    };
    let (rest, wish) = crate::tls::split(url).map_err(unreadable)?;
    let mut config: Config = rest.parse().map_err(|e| unreadable(format!("{e}")))?;
    config.ssl_mode(if wish.required {
        SslMode::Require
    } else {
        SslMode::Disable
    });
    let tls = crate::tls::connector(&wish).map_err(|e| StoreError::Backend {
        store,
        message: format!("cannot set up TLS to PostgreSQL: {e}"),
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(options.connect_timeout);
    }
    if config.get_application_name().is_none() {
        config.application_name("nightwatch");
    }
    Ok(Target { config, tls })
}

/// One connection, opened now: the error says where it tried and why it failed.
pub(crate) fn connect_once(target: &Target, store: &'static str) -> Result<Client, StoreError> {
    let config = &target.config;
    config
        .connect(target.tls.clone())
        .map_err(|e| StoreError::Backend {
            store,
            message: format!(
                "cannot connect to PostgreSQL at {}: {}",
                describe_target(config),
                describe(&e)
            ),
        })
}

/// The pool every store handle draws from; it opens connections as calls need them.
pub(crate) fn pool(target: Target, options: &PgOptions) -> Pool {
    r2d2::Pool::builder()
        .max_size(options.max_connections.max(1))
        .min_idle(Some(0))
        .connection_timeout(options.patience)
        .build_unchecked(Manager { target })
}

/// Brings `schema` to its version under a transaction-scoped advisory lock, so of several
/// hosts opening one database at once exactly one applies each migration and the others
/// find it done. A database from a newer nightwatch is refused.
pub(crate) fn migrate(client: &mut Client, schema: &Schema) -> Result<(), StoreError> {
    let store = schema.store;
    let known = schema.version();
    let sql = |e| backend(store, e);
    let too_new = |found| StoreError::SchemaTooNew {
        store,
        found,
        known,
    };
    // Most opens find the schema current: one read, no lock.
    match applied(client, store) {
        Ok(found) if found == known => return Ok(()),
        Ok(found) if found > known => return Err(too_new(found)),
        Ok(_) => {}
        Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => {}
        Err(e) => return Err(sql(e)),
    }
    let mut tx = client.transaction().map_err(sql)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(sql)?;
    tx.batch_execute(MIGRATIONS_TABLE).map_err(sql)?;
    let found = applied(&mut tx, store).map_err(sql)?;
    if found > known {
        return Err(too_new(found));
    }
    for (i, step) in schema.migrations.iter().enumerate().skip(found as usize) {
        tx.batch_execute(step).map_err(sql)?;
        let version = i as i64 + 1;
        tx.execute(
            "INSERT INTO schema_migrations (store, version) VALUES ($1, $2)",
            &[&store, &version],
        )
        .map_err(sql)?;
    }
    tx.commit().map_err(sql)
}

fn applied(client: &mut impl postgres::GenericClient, store: &str) -> Result<i64, postgres::Error> {
    let row = client.query_one(
        "SELECT coalesce(max(version), 0) FROM schema_migrations WHERE store = $1",
        &[&store],
    )?;
    row.try_get(0)
}

/// A store's handle on the pool.
#[derive(Clone)]
pub(crate) struct Db {
    pool: Pool,
    store: &'static str,
    patience: Duration,
}

impl Db {
    pub fn new(pool: Pool, store: &'static str, patience: Duration) -> Db {
        Db {
            pool,
            store,
            patience,
        }
    }

    pub(crate) fn client<E: From<StoreError>>(&self) -> Result<Pooled, E> {
        self.pool.get().map_err(|e| {
            E::from(StoreError::Backend {
                store: self.store,
                message: format!(
                    "no connection to PostgreSQL within {} s: {e}",
                    self.patience.as_secs()
                ),
            })
        })
    }

    /// Runs `op` on a connection, in no transaction of its own: reads, and single statements.
    pub fn run<T, E: From<StoreError>>(
        &self,
        op: impl FnOnce(&mut Client) -> Result<T, Failure<E>>,
    ) -> Result<T, E> {
        let mut conn = self.client()?;
        op(&mut conn.client).map_err(|f| self.failed(f))
    }

    /// Runs `op` in a transaction and commits it, running it again (after a short, jittered
    /// wait) when PostgreSQL aborted it for a deadlock or a serialization failure, for at most
    /// the patience. Reads that decide a write lock their rows (`FOR UPDATE`), so what `op`
    /// read cannot change before it writes.
    pub fn write<T, E: From<StoreError>>(
        &self,
        op: impl FnMut(&mut Tx<'_>) -> Result<T, Failure<E>>,
    ) -> Result<T, E> {
        self.write_with(false, op)
    }

    /// As [`Db::write`], but the commit does not wait for the disk (`synchronous_commit =
    /// off`): a crash of the database server may lose it. Only for what can be rebuilt from
    /// what was written with a full commit.
    pub fn write_relaxed<T, E: From<StoreError>>(
        &self,
        op: impl FnMut(&mut Tx<'_>) -> Result<T, Failure<E>>,
    ) -> Result<T, E> {
        self.write_with(true, op)
    }

    fn write_with<T, E: From<StoreError>>(
        &self,
        relaxed: bool,
        mut op: impl FnMut(&mut Tx<'_>) -> Result<T, Failure<E>>,
    ) -> Result<T, E> {
        let mut conn = self.client()?;
        let Conn { client, prepared } = &mut *conn;
        let started = Instant::now();
        let mut attempt = 0u32;
        loop {
            let tried = (|| {
                let mut tx = Tx {
                    tx: client.transaction()?,
                    prepared: &mut *prepared,
                };
                if relaxed {
                    tx.batch_execute("SET LOCAL synchronous_commit = off")?;
                }
                let value = op(&mut tx)?;
                tx.tx.commit()?;
                Ok(value)
            })();
            match tried {
                Ok(value) => return Ok(value),
                Err(Failure::Sql(e)) if is_conflict(&e) && started.elapsed() < self.patience => {
                    attempt += 1;
                    backoff(attempt);
                }
                Err(Failure::Sql(e)) if is_conflict(&e) => {
                    return Err(E::from(StoreError::Busy {
                        store: self.store,
                        waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                    }));
                }
                Err(f) => return Err(self.failed(f)),
            }
        }
    }

    pub fn failed<E: From<StoreError>>(&self, f: Failure<E>) -> E {
        match f {
            Failure::Sql(e) => E::from(backend(self.store, e)),
            Failure::Caller(e) => e,
        }
    }
}

/// A transaction PostgreSQL aborted only because it met another: running it again is safe.
fn is_conflict(e: &postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE
    )
}

fn backoff(attempt: u32) {
    // Exponential from 1 ms to 50 ms, less a random share, so that two transactions that
    // met once do not meet again in lockstep.
    let wait = nightwatch_time::backoff(
        Duration::from_millis(1),
        Duration::from_millis(50),
        attempt.saturating_add(1),
        random_share() / 2.0,
    );
    std::thread::sleep(wait);
}

/// A number in `[0, 1)` that differs from call to call: the standard library's randomly keyed
/// hasher, so no clock is read for it.
fn random_share() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// PostgreSQL's error as a person reads it: the server's message, detail and code, or the
/// driver's own (a lost connection, a refused one).
pub(crate) fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!("{} (SQLSTATE {})", db.message(), db.code().code());
            if let Some(detail) = db.detail() {
                text.push_str(": ");
                text.push_str(detail);
            }
            text
        }
        None if e.is_closed() => format!("the connection to PostgreSQL was lost: {e}"),
        None => {
            // The driver's own words are general ("error performing TLS handshake"); the
            // cause (an unknown issuer, a name that does not match) is in its sources.
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            text
        }
    }
}

/// PostgreSQL's error as the store's: damage is [`StoreError::Corrupt`], a lock not had is
/// [`StoreError::Busy`], the rest its message.
pub(crate) fn backend(store: &'static str, e: postgres::Error) -> StoreError {
    match e.code() {
        Some(c) if *c == SqlState::DATA_CORRUPTED || *c == SqlState::INDEX_CORRUPTED => {
            StoreError::Corrupt {
                store,
                what: describe(&e),
            }
        }
        Some(c) if *c == SqlState::LOCK_NOT_AVAILABLE => StoreError::Busy {
            store,
            waited_ms: 0,
        },
        _ => StoreError::Backend {
            store,
            message: describe(&e),
        },
    }
}

/// `n` as the `BIGINT` it is stored as.
pub(crate) fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A `BIGINT` read back as the unsigned count it was written from.
pub(crate) fn count_u32(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(if n < 0 { 0 } else { u32::MAX })
}
