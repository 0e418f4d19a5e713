//! The one way a database file is opened, configured, migrated and written, for all four.

use nightwatch_store::StoreError;
use rusqlite::{Connection, ErrorCode, Transaction, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long SQLite itself waits for another connection's lock before reporting busy (less
/// when the caller's patience is shorter).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Prepared statements each connection keeps (rusqlite's default is 16).
const STATEMENT_CACHE: usize = 64;

/// How long a write keeps retrying a busy database, unless the opener says otherwise.
pub const DEFAULT_PATIENCE: Duration = Duration::from_secs(60);

/// WAL size above which a closing handle checkpoints the WAL into the database and truncates
/// it. About 6 pages of 4 KiB go into the ledger's WAL per append, so this is every 10 or so
/// appends there.
const WAL_CLOSE_CHECKPOINT_BYTES: u64 = 256 * 1024;

/// WAL pages after which a handle whose checkpoints run apart checkpoints in its own commits
/// anyway: only when the checkpointing thread has fallen far behind (about 40 MiB).
const BACKSTOP_CHECKPOINT_PAGES: i64 = 10_000;

/// How long the checkpointing thread lets commits gather before it checkpoints them: one
/// checkpoint (a sync of the WAL, one of the database file, and one of the WAL's header when
/// the next commit starts it over) for the pages of many commits. Under load a profile put
/// 20% of the daemon's CPU in the commits' syncs and 12% in the checkpoints at 10 ms, up to
/// 100 a second per store; at 30 ms routed intake at 16 connections rose by 8% on an empty
/// store and 19% at a million live alerts (BENCHMARKS.md). Longer gathers make each sync of
/// the database larger, and the intake's WAL syncs wait behind it: at 100 ms, before the era
/// indexes, p99 tripled at a million alerts; 30 ms kept p99 where 10 ms had it.
const CHECKPOINT_GATHER: Duration = Duration::from_millis(30);

/// One step of a database's schema, applied inside the migration's write transaction.
pub(crate) type Migration = fn(&Transaction<'_>) -> rusqlite::Result<()>;

/// A database file of the data directory and how its schema came to be.
pub(crate) struct Schema {
    /// The file's name in the data directory (`ledger.db`, ...).
    pub file: &'static str,
    /// The store's name in errors (see `nightwatch_store::store_name`).
    pub store: &'static str,
    /// Migration `i` takes the schema from version `i` to `i + 1` (`PRAGMA user_version`).
    pub migrations: &'static [Migration],
}

impl Schema {
    pub fn version(&self) -> i64 {
        i64::try_from(self.migrations.len()).unwrap_or(i64::MAX)
    }
}

/// A failure inside a store operation: SQLite's (busy ones are retried), or the caller's own.
pub(crate) enum Failure<E> {
    Sql(rusqlite::Error),
    Caller(E),
}

impl<E> From<rusqlite::Error> for Failure<E> {
    fn from(e: rusqlite::Error) -> Failure<E> {
        Failure::Sql(e)
    }
}

/// One connection to one database file, shared by the threads of one handle.
pub(crate) struct Db {
    conn: Mutex<Connection>,
    path: PathBuf,
    store: &'static str,
    patience: Duration,
    /// Set by [`Db::checkpoint_apart`]: the thread that checkpoints this handle's commits.
    checkpointer: Option<Checkpointer>,
}

impl Db {
    /// Opens (creating the directory and the file if needed) `schema.file` in `dir`: WAL,
    /// `synchronous=FULL` (a commit survives power loss, not only a crash), one busy timeout,
    /// then brings the schema up to date. Refuses a schema newer than this build knows.
    pub fn open(dir: &Path, schema: &Schema, patience: Duration) -> Result<Db, StoreError> {
        let io = |source| StoreError::Io {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let path = dir.join(schema.file);
        // SQLite is built not to sync the directory (see `.cargo/config.toml`), so a new
        // database or WAL file gets its directory entry synced here, after it is created.
        let creates = !path.exists() || !path.with_extension("db-wal").exists();
        let store = schema.store;
        let sql = |e| backend(store, e);
        let conn = Connection::open(&path).map_err(sql)?;
        conn.busy_timeout(BUSY_TIMEOUT.min(patience)).map_err(sql)?;
        // The daemon's hot statements stay compiled: parsing them again on every call cost a
        // quarter of its CPU under load.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // Hooks are short processes. Checkpointing the WAL into the database on every close
        // (and then recreating the WAL) cost three extra fsyncs per call; SQLite's automatic
        // checkpoints during commits keep the WAL bounded, and `Drop` truncates a long one.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .map_err(sql)?;
        let mut conn = conn;
        retry_busy(store, patience, || configure(&mut conn, schema))?;
        if creates {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io)?;
        }
        Ok(Db {
            conn: Mutex::new(conn),
            path,
            store,
            patience,
            checkpointer: None,
        })
    }

    /// Moves the WAL's checkpoints out of this handle's commits into a thread of their own,
    /// for a long-lived handle whose writes are on someone's critical path (the daemon's
    /// intake). A commit then only appends to the WAL and syncs it; copying its pages into
    /// the database and syncing that (a write to a random page of every index the commit
    /// touched, so dearer as history grows) happens beside it, on its own connection,
    /// gathering many commits into one checkpoint. Should that thread fall far behind, the
    /// commits checkpoint again themselves.
    pub fn checkpoint_apart(&mut self) -> Result<(), StoreError> {
        self.checkpoint_apart_gathering(CHECKPOINT_GATHER)
    }

    fn checkpoint_apart_gathering(&mut self, gather: Duration) -> Result<(), StoreError> {
        if self.checkpointer.is_some() {
            return Ok(());
        }
        let sql = |e| backend(self.store, e);
        let own = Connection::open(&self.path).map_err(sql)?;
        own.execute_batch("PRAGMA synchronous=FULL;").map_err(sql)?;
        self.conn()
            .pragma_update(None, "wal_autocheckpoint", BACKSTOP_CHECKPOINT_PAGES)
            .map_err(sql)?;
        self.checkpointer = Some(Checkpointer::start(own, self.store, gather));
        Ok(())
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves the connection usable: SQLite rolls back an
        // unfinished transaction, so the poison flag carries no information here.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `op` on the connection, in no transaction of its own: reads, and writes of one
    /// statement (which commit by themselves, waiting at most the busy timeout).
    pub fn run<T, E: From<StoreError>>(
        &self,
        op: impl FnOnce(&Connection) -> Result<T, Failure<E>>,
    ) -> Result<T, E> {
        op(&self.conn()).map_err(|f| self.failed(f))
    }

    /// Runs `op` in a `BEGIN IMMEDIATE` transaction and commits it, retrying while another
    /// writer holds the database. IMMEDIATE takes the write lock before the first read, so what
    /// `op` reads cannot change before it writes.
    pub fn write<T, E: From<StoreError>>(
        &self,
        op: impl FnMut(&Transaction<'_>) -> Result<T, Failure<E>>,
    ) -> Result<T, E> {
        self.write_in(&mut self.conn(), op)
    }

    /// As [`Db::write`], but the commit does not wait for the disk (`synchronous=NORMAL`): a
    /// crash keeps it (WAL), a power cut may lose it. Only for what can be rebuilt from what
    /// was written with a full sync.
    pub fn write_relaxed<T, E: From<StoreError>>(
        &self,
        op: impl FnMut(&Transaction<'_>) -> Result<T, Failure<E>>,
    ) -> Result<T, E> {
        let mut conn = self.conn();
        let sync = |conn: &Connection, level: &str| {
            conn.pragma_update(None, "synchronous", level)
                .map_err(|e| E::from(backend(self.store, e)))
        };
        sync(&conn, "NORMAL")?;
        let written = self.write_in(&mut conn, op);
        sync(&conn, "FULL")?;
        written
    }

    fn write_in<T, E: From<StoreError>>(
        &self,
        conn: &mut Connection,
        mut op: impl FnMut(&Transaction<'_>) -> Result<T, Failure<E>>,
    ) -> Result<T, E> {
        let written = retry_busy(self.store, self.patience, || {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = op(&tx)?;
            tx.commit()?;
            Ok(value)
        });
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.wake();
        }
        written
    }

    pub fn failed<E: From<StoreError>>(&self, f: Failure<E>) -> E {
        match f {
            Failure::Sql(e) => E::from(backend(self.store, e)),
            Failure::Caller(e) => e,
        }
    }
}

/// The thread of [`Db::checkpoint_apart`]: asleep until a commit wakes it, then one passive
/// checkpoint for everything committed meanwhile. Passive: it never waits for, or blocks, a
/// writer or a reader; what a reader still needs is copied by a later checkpoint.
struct Checkpointer {
    signal: Arc<(Mutex<Wake>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct Wake {
    committed: bool,
    closing: bool,
    /// The thread is letting commits gather: they need not wake it (only closing does).
    gathering: bool,
}

impl Checkpointer {
    fn start(conn: Connection, store: &'static str, gather: Duration) -> Checkpointer {
        let signal = Arc::new((Mutex::new(Wake::default()), Condvar::new()));
        let theirs = Arc::clone(&signal);
        let thread = std::thread::Builder::new()
            .name(format!("checkpoint {store}"))
            .spawn(move || checkpoint_loop(&conn, store, gather, &theirs))
            .ok();
        Checkpointer { signal, thread }
    }

    fn wake(&self) {
        let (state, bell) = &*self.signal;
        let mut wake = state.lock().unwrap_or_else(|p| p.into_inner());
        wake.committed = true;
        if !wake.gathering {
            bell.notify_one();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        let (state, bell) = &*self.signal;
        state.lock().unwrap_or_else(|p| p.into_inner()).closing = true;
        bell.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn checkpoint_loop(
    conn: &Connection,
    store: &'static str,
    gather: Duration,
    signal: &(Mutex<Wake>, Condvar),
) {
    let (state, bell) = signal;
    loop {
        {
            let mut wake = state.lock().unwrap_or_else(|p| p.into_inner());
            while !wake.committed && !wake.closing {
                wake = bell.wait(wake).unwrap_or_else(|p| p.into_inner());
            }
            if wake.closing {
                return;
            }
            // Let the commits of the next moments join this checkpoint; a closing handle
            // does not wait for the gathering to end.
            wake.gathering = true;
            let (mut wake, _) = bell
                .wait_timeout_while(wake, gather, |wake| !wake.closing)
                .unwrap_or_else(|p| p.into_inner());
            wake.gathering = false;
            if wake.closing {
                return;
            }
            // The checkpoint below takes what is committed by now; later commits ask again.
            wake.committed = false;
        }
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            // The commits' own backstop checkpoints keep the WAL bounded meanwhile.
            tracing::warn!(store, error = %e, "checkpointing the WAL failed");
        }
    }
}

impl Drop for Db {
    /// Each hook process is the only connection while it runs, and SQLite rebuilds its WAL
    /// index by reading the whole WAL when the first connection opens; what a process
    /// checkpoints is forgotten with that index. So the WAL only shrinks when it is
    /// checkpointed and truncated, which a closing handle does once it is long (truncated,
    /// not deleted, so its directory entry stays put). When others hold the database it
    /// does not wait: a later handle will do it.
    fn drop(&mut self) {
        drop(self.checkpointer.take());
        let wal = self.path.with_extension("db-wal");
        let long = std::fs::metadata(&wal).is_ok_and(|m| m.len() > WAL_CLOSE_CHECKPOINT_BYTES);
        if long {
            let conn = self.conn.get_mut().unwrap_or_else(|p| p.into_inner());
            let _ = conn.busy_timeout(Duration::ZERO);
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        }
    }
}

/// The pragmas every database gets, then its migrations.
fn configure(conn: &mut Connection, schema: &Schema) -> Result<(), Failure<StoreError>> {
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Failure::Caller(StoreError::Backend {
            store: schema.store,
            message: format!("the database could not be put in WAL mode (it is in {mode} mode)"),
        }));
    }
    conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;")?;
    migrate(conn, schema)
}

/// Brings the schema to `schema.version()`, one migration at a time, in one write transaction
/// that reads the version itself, so of several processes opening a new file at once exactly
/// one migrates and the others find it done.
fn migrate(conn: &mut Connection, schema: &Schema) -> Result<(), Failure<StoreError>> {
    let known = schema.version();
    let too_new = |found| {
        Failure::Caller(StoreError::SchemaTooNew {
            store: schema.store,
            found,
            known,
        })
    };
    // Most opens find the schema current: a read, no write lock.
    let found = user_version(conn)?;
    if found == known {
        return Ok(());
    }
    if found > known {
        return Err(too_new(found));
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = user_version(&tx)?;
    if found > known {
        return Err(too_new(found));
    }
    let from = usize::try_from(found).unwrap_or(0);
    for step in &schema.migrations[from..] {
        step(&tx)?;
    }
    tx.pragma_update(None, "user_version", known)?;
    tx.commit()?;
    Ok(())
}

fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Runs `op` until it does not fail with busy, backing off between tries, for at most
/// `patience`; then [`StoreError::Busy`]. The one retry loop of every store.
pub(crate) fn retry_busy<T, E: From<StoreError>>(
    store: &'static str,
    patience: Duration,
    mut op: impl FnMut() -> Result<T, Failure<E>>,
) -> Result<T, E> {
    let started = Instant::now();
    let mut attempt = 0u32;
    loop {
        match op() {
            Ok(value) => return Ok(value),
            Err(Failure::Sql(e)) if is_busy(&e) => {
                if started.elapsed() >= patience {
                    return Err(E::from(StoreError::Busy {
                        store,
                        waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                    }));
                }
                attempt += 1;
                backoff(attempt);
            }
            Err(Failure::Sql(e)) => return Err(E::from(backend(store, e))),
            Err(Failure::Caller(e)) => return Err(e),
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

fn backoff(attempt: u32) {
    // Exponential from 1 ms to 50 ms (nightwatch-time's one backoff), less a random share so
    // that writers that collided once do not collide again in lockstep.
    let wait = nightwatch_time::backoff(
        Duration::from_millis(1),
        Duration::from_millis(50),
        attempt.saturating_add(1),
        random_share() / 2.0,
    );
    std::thread::sleep(wait);
}

/// A number in `[0, 1)` that differs from call to call and thread to thread: the standard
/// library's randomly keyed hasher, so no clock is read for it.
fn random_share() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// SQLite's error as the store's: damage is [`StoreError::Corrupt`], the rest its message.
pub(crate) fn backend(store: &'static str, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt {
            store,
            what: e.to_string(),
        },
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy {
            store,
            waited_ms: 0,
        },
        _ => StoreError::Backend {
            store,
            message: e.to_string(),
        },
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

/// The steps of SQLite's plan for `sql` with one text parameter (tests assert which index a
/// query searches).
#[cfg(test)]
pub(crate) fn query_plan(conn: &Connection, sql: &str, param: &str) -> Vec<String> {
    conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap()
        .query_map([param], |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIGRATIONS: [Migration; 1] =
        [|tx| tx.execute_batch("CREATE TABLE t (x INTEGER PRIMARY KEY, body TEXT NOT NULL);")];
    const SCHEMA: Schema = Schema {
        file: "test.db",
        store: "test",
        migrations: &MIGRATIONS,
    };

    fn write_pages(db: &Db, rows: i64) {
        for x in 0..rows {
            db.write::<_, StoreError>(|tx| {
                tx.execute(
                    "INSERT INTO t (x, body) VALUES (?1, ?2)",
                    params![x, "y".repeat(3000)],
                )?;
                Ok(())
            })
            .unwrap();
        }
    }

    use rusqlite::params;

    fn database_bytes(db: &Db) -> u64 {
        std::fs::metadata(db.path()).unwrap().len()
    }

    #[test]
    fn a_handle_checkpointing_apart_gets_its_commits_into_the_database_without_checkpointing_them_itself()
     {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::open(dir.path(), &SCHEMA, DEFAULT_PATIENCE).unwrap();
        db.checkpoint_apart().unwrap();
        let before = database_bytes(&db);
        // About 200 pages: below the commits' own backstop, so only the thread copies them.
        write_pages(&db, 200);
        let deadline = Instant::now() + Duration::from_secs(20);
        while database_bytes(&db) < before + 200 * 3000 {
            assert!(
                Instant::now() < deadline,
                "the checkpointing thread never copied the WAL into the database ({} bytes)",
                database_bytes(&db)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_plain_handle_leaves_a_short_wal_alone() {
        // The control for the test above: without the thread, 200 pages stay in the WAL.
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), &SCHEMA, DEFAULT_PATIENCE).unwrap();
        let before = database_bytes(&db);
        write_pages(&db, 200);
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(database_bytes(&db), before);
    }

    #[test]
    fn closing_a_handle_stops_its_checkpointing_thread() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::open(dir.path(), &SCHEMA, DEFAULT_PATIENCE).unwrap();
        db.checkpoint_apart().unwrap();
        write_pages(&db, 5);
        let started = Instant::now();
        drop(db);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn closing_a_handle_does_not_wait_for_its_commits_to_gather() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::open(dir.path(), &SCHEMA, DEFAULT_PATIENCE).unwrap();
        db.checkpoint_apart_gathering(Duration::from_secs(60))
            .unwrap();
        // The commit wakes the thread, which then gathers for a minute.
        write_pages(&db, 5);
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        drop(db);
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "closing waited {:?}",
            started.elapsed()
        );
    }
}
