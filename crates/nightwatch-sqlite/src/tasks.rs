//! `tasks.db`: the task queue in SQLite, WAL, `synchronous=FULL`.
//!
//! Every write is one `BEGIN IMMEDIATE` transaction that loads the task, asks the
//! [`machine`] what happens, and writes the new row and its event together.
//! IMMEDIATE takes the write lock before reading, so two workers can never both read a task as
//! ready and both claim it: the second waits, then reads it as running.

use std::path::Path;
use std::time::Duration;

use nightwatch_store::{
    Answer, Claim, Escalation, NotedRunbook, Offer, Offered, QueueOp, Resolved, RunbookProcess,
    StoreError, Task, TaskError, TaskEvent, TaskFilter, TaskQueue, store_name,
};
use nightwatch_tasks::machine::{
    self, Change, Input, LastRun, Lifecycle, OfferDecision, Outcome, Policy, Refusal, Status,
};
use rusqlite::{OptionalExtension, Row, Transaction, params};

use crate::db::{Db, Failure, Migration, Schema};

type Fail = Failure<TaskError>;

/// Schema 1, as files made before it was numbered have it (`deferrals` was added to them
/// by a column check; schema 1 adds it where it is missing).
const SCHEMA_1: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY,
    identity TEXT NOT NULL,
    alert_json TEXT NOT NULL,
    route TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    repeats INTEGER NOT NULL DEFAULT 0,
    last_seen_ms INTEGER NOT NULL,
    status TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    ready_ms INTEGER NOT NULL,
    lease_until_ms INTEGER,
    worker TEXT,
    last_error TEXT,
    finished_ms INTEGER,
    -- 0 none, 1 waiting for take_escalations, 2 handed over
    escalation INTEGER NOT NULL DEFAULT 0,
    deferrals INTEGER NOT NULL DEFAULT 0
);
-- The database itself refuses a second live task for one identity.
CREATE UNIQUE INDEX IF NOT EXISTS tasks_one_live ON tasks(identity)
    WHERE status IN ('pending', 'running');
CREATE INDEX IF NOT EXISTS tasks_ready ON tasks(status, ready_ms);
CREATE INDEX IF NOT EXISTS tasks_identity ON tasks(identity, finished_ms);
CREATE TABLE IF NOT EXISTS task_events (
    seq INTEGER PRIMARY KEY,
    task_id INTEGER NOT NULL REFERENCES tasks(id),
    at_ms INTEGER NOT NULL,
    from_status TEXT,
    to_status TEXT NOT NULL,
    why TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS task_events_task ON task_events(task_id, seq);
CREATE TRIGGER IF NOT EXISTS task_events_no_update BEFORE UPDATE ON task_events
    BEGIN SELECT RAISE(ABORT, 'task_events is append-only'); END;
CREATE TRIGGER IF NOT EXISTS task_events_no_delete BEFORE DELETE ON task_events
    BEGIN SELECT RAISE(ABORT, 'task_events is append-only'); END;
";

const MIGRATIONS: [Migration; 8] = [
    |tx| {
        tx.execute_batch(SCHEMA_1)?;
        let has: bool = tx
            .prepare("SELECT 1 FROM pragma_table_info('tasks') WHERE name = 'deferrals'")?
            .exists([])?;
        if !has {
            tx.execute_batch("ALTER TABLE tasks ADD COLUMN deferrals INTEGER NOT NULL DEFAULT 0")?;
        }
        Ok(())
    },
    // Schema 2: where the running attempt's runbook runs (JSON of `RunbookProcess`), so a
    // daemon starting after a crash can stop what the dead one left running; and the indexes
    // that keep claiming and a route's hourly count from reading the whole table.
    |tx| {
        tx.execute_batch(
            "ALTER TABLE tasks ADD COLUMN runbook TEXT;
             CREATE INDEX IF NOT EXISTS tasks_lease ON tasks(status, lease_until_ms);
             CREATE INDEX IF NOT EXISTS tasks_route_created ON tasks(route, created_ms);
             CREATE INDEX IF NOT EXISTS tasks_escalation ON tasks(id) WHERE escalation = 1;",
        )
    },
    // Schema 3: the arrival that created a task and the last one counted on it, so that an
    // arrival offered again after a crash gets its first answer, not a second task or count.
    |tx| {
        tx.execute_batch(
            "ALTER TABLE tasks ADD COLUMN arrival INTEGER;
             ALTER TABLE tasks ADD COLUMN last_arrival INTEGER;
             CREATE INDEX IF NOT EXISTS tasks_arrival ON tasks(arrival) WHERE arrival IS NOT NULL;",
        )
    },
    // Schema 4: how many tasks are in each status, kept by triggers as tasks change, so the
    // gauges read a few rows, never the table.
    |tx| tx.execute_batch(TASK_COUNTS),
    // Schema 5: the indexes a time window's tasks are found through.
    |tx| {
        tx.execute_batch(
            "CREATE INDEX IF NOT EXISTS tasks_created ON tasks(created_ms);
             CREATE INDEX IF NOT EXISTS tasks_finished ON tasks(finished_ms);",
        )
    },
    // Schema 6: fewer index entries per new task (each one costs the intake's batch writer).
    // The window's ends are looked for among finished tasks, so that index holds only those;
    // the arrival that created a task is found through its identity; the status counts take
    // one statement per change.
    |tx| tx.execute_batch(LEANER_INDEXES),
    // Schema 7: a live task is found by identity through `tasks_one_live` alone, so the
    // identity index holds only finished tasks: a new task makes one entry on a hashed key,
    // not two (each lands on its own page of a tree that grows with history).
    |tx| {
        tx.execute_batch(
            "DROP INDEX IF EXISTS tasks_identity;
             CREATE INDEX tasks_identity ON tasks(identity, finished_ms)
                 WHERE finished_ms IS NOT NULL;",
        )
    },
    // Schema 8: a finished status's tasks in id order (`?status=gave_up`), which otherwise
    // read every task of that status to sort them. Only finished tasks have an entry, so a
    // new task costs the intake nothing more.
    |tx| {
        tx.execute_batch(
            "CREATE INDEX tasks_finished_status ON tasks(status, id)
                 WHERE finished_ms IS NOT NULL;",
        )
    },
];

const LEANER_INDEXES: &str = "
DROP INDEX IF EXISTS tasks_arrival;
DROP INDEX IF EXISTS tasks_finished;
CREATE INDEX tasks_finished ON tasks(finished_ms) WHERE finished_ms IS NOT NULL;
DROP TRIGGER IF EXISTS task_counts_insert;
CREATE TRIGGER task_counts_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO task_counts (status, n) VALUES (NEW.status, 1)
        ON CONFLICT (status) DO UPDATE SET n = n + 1;
END;
DROP TRIGGER IF EXISTS task_counts_update;
CREATE TRIGGER task_counts_update AFTER UPDATE OF status ON tasks
    WHEN OLD.status IS NOT NEW.status BEGIN
    UPDATE task_counts SET n = n - 1 WHERE status = OLD.status;
    INSERT INTO task_counts (status, n) VALUES (NEW.status, 1)
        ON CONFLICT (status) DO UPDATE SET n = n + 1;
END;
";

/// The table `counts` reads and the triggers that keep it (filled once from the tasks).
const TASK_COUNTS: &str = "
CREATE TABLE IF NOT EXISTS task_counts (status TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
DELETE FROM task_counts;
INSERT INTO task_counts (status, n) SELECT status, count(*) FROM tasks GROUP BY status;
CREATE TRIGGER IF NOT EXISTS task_counts_insert AFTER INSERT ON tasks BEGIN
    INSERT OR IGNORE INTO task_counts (status, n) VALUES (NEW.status, 0);
    UPDATE task_counts SET n = n + 1 WHERE status = NEW.status;
END;
CREATE TRIGGER IF NOT EXISTS task_counts_update AFTER UPDATE OF status ON tasks
    WHEN OLD.status IS NOT NEW.status BEGIN
    UPDATE task_counts SET n = n - 1 WHERE status = OLD.status;
    INSERT OR IGNORE INTO task_counts (status, n) VALUES (NEW.status, 0);
    UPDATE task_counts SET n = n + 1 WHERE status = NEW.status;
END;
CREATE TRIGGER IF NOT EXISTS task_counts_delete AFTER DELETE ON tasks BEGIN
    UPDATE task_counts SET n = n - 1 WHERE status = OLD.status;
END;
";

const SCHEMA: Schema = Schema {
    file: "tasks.db",
    store: store_name::TASKS,
    migrations: &MIGRATIONS,
};

/// The query for `filter` and its arguments.
fn tasks_query(filter: &TaskFilter) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let mut clauses = Vec::new();
    let mut args = Vec::new();
    if let Some(identity) = &filter.identity {
        // A task is live or finished; each half searches its own partial index.
        clauses.push(
            "((identity = ? AND status IN ('pending', 'running')) \
             OR (identity = ? AND finished_ms IS NOT NULL))",
        );
        args.push(Value::Text(identity.clone()));
        args.push(Value::Text(identity.clone()));
    }
    if let Some(status) = filter.status {
        // A finished task has its finish time: said here, so the finished statuses' own
        // index (which holds only those) can serve the page in id order.
        clauses.push(if status.is_live() {
            "status = ?"
        } else {
            "status = ? AND finished_ms IS NOT NULL"
        });
        args.push(Value::Text(status.as_str().to_owned()));
    }
    if let Some(after) = filter.after {
        clauses.push("id > ?");
        args.push(Value::Integer(after));
    }
    if let Some(prefix) = &filter.worker_prefix {
        clauses.push("substr(worker, 1, length(?)) = ?");
        args.push(Value::Text(prefix.clone()));
        args.push(Value::Text(prefix.clone()));
    }
    let mut sql = format!("SELECT {TASK_COLUMNS} FROM tasks");
    if !clauses.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&clauses.join(" AND "));
    }
    sql.push_str(" ORDER BY id");
    if let Some(limit) = filter.limit {
        sql.push_str(" LIMIT ?");
        args.push(Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    }
    (sql, args)
}

/// The hot path's queries (a claim on every wake-up, a route's hourly count on every routed
/// arrival): each must go through an index, never read the whole table (a unit test checks
/// their query plans).
const READY_PENDING: &str = "ready_ms FROM tasks WHERE status = 'pending' AND ready_ms <= ?1
     ORDER BY ready_ms, id";
const LEASE_EXPIRED: &str = "lease_until_ms FROM tasks
     WHERE status = 'running' AND lease_until_ms <= ?1 ORDER BY lease_until_ms, id";
const ESCALATIONS: &str = "FROM tasks WHERE escalation = 1 ORDER BY id";
const CREATED_SINCE: &str = "SELECT count(*) FROM (SELECT 1 FROM tasks
     WHERE route = ?1 AND created_ms >= ?2 LIMIT ?3)";
/// A window's tasks, newest first: each of the three conditions searches its own index (a
/// window of a busy day reads that day's tasks, not the table's).
const ACTIVE_BETWEEN: &str = "FROM tasks
     WHERE ((created_ms >= ?1 AND created_ms < ?2)
        OR (finished_ms >= ?1 AND finished_ms < ?2)
        OR (status IN ('pending', 'running') AND created_ms < ?2)
     ) AND id < ?4
     ORDER BY id DESC LIMIT ?3";
/// The task an arrival created, live or finished (each half through its own partial index).
const CREATED_BY_ARRIVAL: &str = "SELECT id FROM tasks
     WHERE identity = ?1 AND status IN ('pending', 'running') AND arrival = ?2
     UNION ALL SELECT id FROM tasks
     WHERE identity = ?1 AND finished_ms IS NOT NULL AND arrival = ?2";
/// An identity's last finished run, for the offer's cooldown.
const LAST_RUN: &str = "SELECT id, status, finished_ms FROM tasks
     WHERE identity = ?1 AND status IN ('done', 'gave_up') AND finished_ms IS NOT NULL
     ORDER BY finished_ms DESC, id DESC LIMIT 1";
const LIVE_FOR_IDENTITY: &str = "SELECT id, last_arrival FROM tasks
     WHERE identity = ?1 AND status IN ('pending', 'running')";

const TASK_COLUMNS: &str = "id, identity, alert_json, route, created_ms, repeats, last_seen_ms, \
     status, attempt, ready_ms, lease_until_ms, worker, last_error, finished_ms, deferrals";

/// The durable queue in `tasks.db`. Each handle owns one connection; many handles (threads
/// or processes) may share one data directory.
pub struct SqliteTaskQueue {
    db: Db,
    policy: Policy,
}

impl SqliteTaskQueue {
    /// Opens (creating if needed) `tasks.db` in `dir`; the queue applies `policy`.
    pub fn open(dir: &Path, policy: Policy) -> Result<SqliteTaskQueue, StoreError> {
        SqliteTaskQueue::open_with(dir, policy, crate::db::DEFAULT_PATIENCE)
    }

    /// As [`SqliteTaskQueue::open`]; a write waits at most `patience` for a busy database.
    pub fn open_with(
        dir: &Path,
        policy: Policy,
        patience: Duration,
    ) -> Result<SqliteTaskQueue, StoreError> {
        Ok(SqliteTaskQueue {
            db: Db::open(dir, &SCHEMA, patience)?,
            policy,
        })
    }

    /// Checkpoints the WAL on a thread of its own instead of in this handle's commits (for
    /// the daemon, whose intake waits on these commits).
    pub fn checkpoint_apart(mut self) -> Result<SqliteTaskQueue, StoreError> {
        self.db.checkpoint_apart()?;
        Ok(self)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.db.path()
    }
}

impl TaskQueue for SqliteTaskQueue {
    fn policy(&self) -> &Policy {
        &self.policy
    }

    fn apply(&self, ops: &[QueueOp<'_>], now: i64) -> Result<Vec<Answer>, TaskError> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        self.db.write(|tx| {
            ops.iter()
                .map(|op| match op {
                    QueueOp::Offer(offer) => {
                        offer_in(tx, &self.policy, offer, now).map(Answer::Offered)
                    }
                    QueueOp::Resolve { identity } => {
                        resolve_in(tx, &self.policy, identity, now).map(Answer::Resolved)
                    }
                })
                .collect()
        })
    }

    /// Claims the oldest ready task (pending past its ready time, or running with an expired
    /// lease) for `worker`, leased for `lease_ms`. A task whose last allowed attempt's lease
    /// expired gives up on the way (and is escalated) instead of being handed out.
    fn claim_for(
        &self,
        worker: &str,
        routes: Option<&[String]>,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<Claim>, TaskError> {
        // Only these routes' tasks, when the caller names them (as a JSON array, one statement
        // whatever their number).
        let only = routes.map(|r| serde_json::to_string(r).unwrap_or_else(|_| "[]".into()));
        let with_routes = |sql: &str| match only {
            None => sql.to_owned(),
            Some(_) => sql.replacen(
                " ORDER BY",
                " AND route IN (SELECT value FROM json_each(?2)) ORDER BY",
                1,
            ),
        };
        let args = |now: i64| -> Vec<rusqlite::types::Value> {
            let mut args = vec![rusqlite::types::Value::Integer(now)];
            if let Some(json) = &only {
                args.push(rusqlite::types::Value::Text(json.clone()));
            }
            args
        };
        // Asked by every worker on every wake-up: a look through the indexes, without the
        // write lock intake needs, first.
        let ready = self.db.run::<bool, TaskError>(|conn| {
            let any = |sql: &str| {
                conn.prepare_cached(&format!("SELECT 1, {} LIMIT 1", with_routes(sql)))?
                    .exists(rusqlite::params_from_iter(args(now)))
            };
            Ok(any(READY_PENDING)? || any(LEASE_EXPIRED)?)
        })?;
        if !ready {
            return Ok(None);
        }
        self.db.write(|tx| {
            loop {
                // The pending task ready longest, and the running one whose lease ran out
                // longest ago, each found through its index; the earlier of the two goes.
                let first = |sql: &str| {
                    tx.prepare_cached(&format!(
                        "SELECT {TASK_COLUMNS}, {} LIMIT 1",
                        with_routes(sql)
                    ))?
                    .query_row(rusqlite::params_from_iter(args(now)), |r| {
                        Ok(read_task(r).map(|t| (r.get::<_, i64>(15), t)))
                    })
                    .optional()
                };
                let pending = first(READY_PENDING)?.transpose()?;
                let expired = first(LEASE_EXPIRED)?.transpose()?;
                let task = match (pending, expired) {
                    (Some((a, p)), Some((b, e))) => {
                        let (a, b) = (a?, b?);
                        Some(if (b, e.id) < (a, p.id) { e } else { p })
                    }
                    (Some((_, t)), None) | (None, Some((_, t))) => Some(t),
                    (None, None) => None,
                };
                let Some(task) = task else { return Ok(None) };
                let input = Input::Claim { worker, lease_ms };
                let step = match machine::apply(&task.lifecycle, &input, &self.policy, now, 0) {
                    Ok(step) => step,
                    // The query and the machine agree on readiness; if they ever did not,
                    // refusing to hand the task out is the safe side.
                    Err(_) => return Ok(None),
                };
                write_step(tx, task.id, now, &step)?;
                // A new attempt: the last one's runbook note is the past.
                tx.execute("UPDATE tasks SET runbook = NULL WHERE id = ?1", [task.id])?;
                if step.next.status == Status::Running {
                    return Ok(Some(Claim {
                        task_id: task.id,
                        attempt: step.next.attempt,
                        alert_json: task.alert_json,
                        route: task.route,
                    }));
                }
            }
        })
    }

    /// Extends the lease of `attempt` to `now + lease_ms`; fenced like `complete`.
    fn heartbeat(
        &self,
        task_id: i64,
        attempt: u32,
        now: i64,
        lease_ms: i64,
    ) -> Result<(), TaskError> {
        self.change(task_id, now, &Input::Heartbeat { attempt, lease_ms })
            .map(|_| ())
    }

    fn note_runbook(
        &self,
        task_id: i64,
        attempt: u32,
        process: &RunbookProcess,
    ) -> Result<(), TaskError> {
        let noted = serde_json::to_string(process).map_err(|e| {
            TaskError::Store(StoreError::Backend {
                store: store_name::TASKS,
                message: format!("cannot encode the runbook's process: {e}"),
            })
        })?;
        self.db.write(|tx| {
            let changed = tx.execute(
                "UPDATE tasks SET runbook = ?3
                 WHERE id = ?1 AND attempt = ?2 AND status = 'running'",
                params![task_id, attempt, noted],
            )?;
            if changed == 1 {
                return Ok(());
            }
            let task = load_task(tx, task_id)?;
            Err(Failure::Caller(TaskError::Stale {
                task_id,
                attempt,
                current: task.lifecycle.attempt,
                status: task.lifecycle.status,
            }))
        })
    }

    fn noted_runbooks(&self) -> Result<Vec<NotedRunbook>, TaskError> {
        self.db.run(|conn| {
            let mut stmt = conn.prepare(
                "SELECT id, attempt, route, identity, runbook FROM tasks
                 WHERE status = 'running' AND runbook IS NOT NULL ORDER BY id",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                ))
            })?;
            let mut noted = Vec::new();
            for row in rows {
                let (task_id, attempt, route, identity, text) = row?;
                // A note this version cannot read names no process it could safely stop.
                if let Ok(process) = serde_json::from_str(&text) {
                    noted.push(NotedRunbook {
                        task_id,
                        attempt,
                        route,
                        identity,
                        process,
                    });
                }
            }
            Ok(noted)
        })
    }

    /// Records how `attempt` ended. Rejected with [`TaskError::Stale`] unless `attempt` is the
    /// task's current, running attempt. Returns the task's new status.
    fn complete(
        &self,
        task_id: i64,
        attempt: u32,
        outcome: &Outcome,
        now: i64,
    ) -> Result<Status, TaskError> {
        self.change(task_id, now, &Input::Complete { attempt, outcome })
    }

    /// Hands over every task that gave up and was not handed over before: each exactly once.
    fn take_escalations(&self, now: i64) -> Result<Vec<Escalation>, TaskError> {
        // Asked on every wake-up: a look through the index, without the write lock, first.
        let waiting = self.db.run::<bool, TaskError>(|conn| {
            Ok(conn
                .prepare_cached(&format!("SELECT 1 {ESCALATIONS} LIMIT 1"))?
                .exists([])?)
        })?;
        if !waiting {
            return Ok(Vec::new());
        }
        self.db.write(|tx| {
            let mut stmt = tx.prepare(&format!(
                "SELECT id, identity, route, attempt, last_error {ESCALATIONS}"
            ))?;
            let taken = stmt
                .query_map([], |r| {
                    Ok(Escalation {
                        task_id: r.get(0)?,
                        identity: r.get(1)?,
                        route: r.get(2)?,
                        attempts: r.get(3)?,
                        last_error: r.get(4)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            for e in &taken {
                tx.execute("UPDATE tasks SET escalation = 2 WHERE id = ?1", [e.task_id])?;
                // The queue does not know who is told: the daemon's `escalated` record says.
                let why = "taken for escalation; the escalated record says who was told";
                insert_event(
                    tx,
                    e.task_id,
                    now,
                    Some(Status::GaveUp),
                    Status::GaveUp,
                    why,
                )?;
            }
            Ok(taken)
        })
    }

    /// One task by id.
    fn task(&self, task_id: i64) -> Result<Option<Task>, TaskError> {
        self.db.run(|conn| {
            conn.query_row(
                &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1"),
                [task_id],
                |r| Ok(read_task(r)),
            )
            .optional()?
            .transpose()
        })
    }

    /// Tasks matching `filter`, oldest first.
    fn tasks(&self, filter: &TaskFilter) -> Result<Vec<Task>, TaskError> {
        // Only the clauses the filter has: `(? IS NULL OR identity = ?)` would keep SQLite
        // from the identity index and read the whole table.
        let (sql, args) = tasks_query(filter);
        self.db.run(|conn| {
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(&args), |r| Ok(read_task(r)))?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row??);
            }
            Ok(out)
        })
    }

    /// How many tasks are in each status (statuses with none are left out).
    fn counts(&self) -> Result<Vec<(Status, i64)>, TaskError> {
        self.db.run(|conn| {
            let mut stmt = conn
                .prepare_cached("SELECT status, n FROM task_counts WHERE n > 0 ORDER BY status")?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
            let mut out = Vec::new();
            for row in rows {
                let (status, n) = row?;
                if let Some(status) = Status::parse(&status) {
                    out.push((status, n));
                }
            }
            Ok(out)
        })
    }

    /// When the longest-waiting claimable task became ready: `now` minus this is the queue's age.
    fn oldest_ready(&self, now: i64) -> Result<Option<i64>, TaskError> {
        self.db.run(|conn| {
            Ok(conn.query_row(
                "SELECT min(ready_ms) FROM tasks WHERE status = 'pending' AND ready_ms <= ?1",
                [now],
                |r| r.get(0),
            )?)
        })
    }

    /// Tasks created, or finished, in `[since_ms, until_ms)`, oldest first.
    fn active_between(
        &self,
        since_ms: i64,
        until_ms: i64,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Task>, TaskError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut tasks = self.db.run(|conn| {
            let mut stmt =
                conn.prepare_cached(&format!("SELECT {TASK_COLUMNS} {ACTIVE_BETWEEN}"))?;
            let before = before.unwrap_or(i64::MAX);
            let rows = stmt.query_map(params![since_ms, until_ms, limit, before], |r| {
                Ok(read_task(r))
            })?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row??);
            }
            Ok::<_, Fail>(out)
        })?;
        tasks.reverse();
        Ok(tasks)
    }

    /// Everything that happened to a task, in order.
    fn events(&self, task_id: i64) -> Result<Vec<TaskEvent>, TaskError> {
        self.db.run(|conn| {
            let mut stmt = conn.prepare(
                "SELECT seq, task_id, at_ms, from_status, to_status, why FROM task_events
                 WHERE task_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map([task_id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (seq, task_id, at, from, to, why) = row?;
                out.push(TaskEvent {
                    seq,
                    task_id,
                    at,
                    from: from.map(|f| parse_status(task_id, &f)).transpose()?,
                    to: parse_status(task_id, &to)?,
                    why,
                });
            }
            Ok(out)
        })
    }
}

impl SqliteTaskQueue {
    fn change(&self, task_id: i64, now: i64, input: &Input<'_>) -> Result<Status, TaskError> {
        self.db.write(|tx| {
            let task = load_task(tx, task_id)?;
            let jitter = machine::jitter_for(task_id, task.lifecycle.attempt);
            match machine::apply(&task.lifecycle, input, &self.policy, now, jitter) {
                Ok(step) => {
                    write_step(tx, task_id, now, &step)?;
                    Ok(step.next.status)
                }
                Err(Refusal::Stale {
                    attempt,
                    current,
                    status,
                }) => Err(Failure::Caller(TaskError::Stale {
                    task_id,
                    attempt,
                    current,
                    status,
                })),
                // Heartbeat and complete only refuse as stale.
                Err(_) => Err(Failure::Caller(TaskError::NotFound(task_id))),
            }
        })
    }
}

/// The task `task_id`, or NotFound.
/// An offer inside the caller's transaction (see [`TaskQueue::apply`]).
fn offer_in(
    tx: &Transaction<'_>,
    policy: &Policy,
    offer: &Offer<'_>,
    now: i64,
) -> Result<Offered, Fail> {
    // Offered again for an arrival whose first answer a crash cut short: the same answer,
    // nothing changed twice.
    if let Some(arrival) = offer.arrival.filter(|_| offer.again) {
        let created: Option<i64> = tx
            .prepare_cached(CREATED_BY_ARRIVAL)?
            .query_row(params![offer.identity, arrival], |r| r.get(0))
            .optional()?;
        if let Some(id) = created {
            return Ok(Offered::Created(id));
        }
    }
    let live: Option<(i64, Option<i64>)> = tx
        .prepare_cached(LIVE_FOR_IDENTITY)?
        .query_row([offer.identity], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    if let (Some((id, Some(counted))), Some(arrival)) = (live, offer.arrival)
        && counted >= arrival
    {
        return Ok(Offered::Attached(id));
    }
    let last_run = tx
        .prepare_cached(LAST_RUN)?
        .query_row([offer.identity], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get(2)?))
        })
        .optional()?;
    let last_run = match last_run {
        Some((task_id, status, finished_at)) => Some(LastRun {
            task_id,
            status: parse_status(task_id, &status)?,
            finished_at,
        }),
        None => None,
    };
    match machine::decide_offer(live.map(|(id, _)| id), last_run.as_ref(), policy, now) {
        OfferDecision::Attach(id) => {
            tx.prepare_cached(
                "UPDATE tasks SET repeats = repeats + 1, last_seen_ms = ?2,
                     last_arrival = coalesce(?3, last_arrival)
                 WHERE id = ?1",
            )?
            .execute(params![id, now, offer.arrival])?;
            Ok(Offered::Attached(id))
        }
        OfferDecision::Suppress { why } => Ok(Offered::Suppressed { why }),
        OfferDecision::Create => {
            if let Some(limit) = offer.max_per_hour {
                // Counting stops at the limit: the throttle reads at most `limit` index entries.
                let started: i64 = tx
                    .prepare_cached(CREATED_SINCE)?
                    .query_row(params![offer.route, now - machine::HOUR_MS, limit], |r| {
                        r.get(0)
                    })?;
                let started = u32::try_from(started).unwrap_or(u32::MAX);
                if let Some(why) = machine::throttle(offer.route, started, limit) {
                    return Ok(Offered::Throttled { why });
                }
            }
            let life = Lifecycle::new(policy, now);
            tx.prepare_cached(
                "INSERT INTO tasks (identity, alert_json, route, created_ms, last_seen_ms,
                     status, attempt, ready_ms, arrival, last_arrival)
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5, 0, ?6, ?7, ?7)",
            )?
            .execute(params![
                offer.identity,
                offer.alert_json,
                offer.route,
                now,
                life.status.as_str(),
                life.ready_at,
                offer.arrival
            ])?;
            let id = tx.last_insert_rowid();
            let why = if life.ready_at > now {
                format!(
                    "alert offered; claimable at {} unless it resolves first",
                    life.ready_at
                )
            } else {
                "alert offered".to_string()
            };
            insert_event(tx, id, now, None, Status::Pending, &why)?;
            Ok(Offered::Created(id))
        }
    }
}

/// A resolve inside the caller's transaction (see [`TaskQueue::apply`]).
fn resolve_in(
    tx: &Transaction<'_>,
    policy: &Policy,
    identity: &str,
    now: i64,
) -> Result<Resolved, Fail> {
    let task: Option<(i64, Lifecycle)> = tx
        .prepare_cached(&format!(
            "SELECT {TASK_COLUMNS} FROM tasks
             WHERE identity = ?1 AND status IN ('pending', 'running')"
        ))?
        .query_row([identity], |r| Ok(read_task(r)))
        .optional()?
        .transpose()?
        .map(|t| (t.id, t.lifecycle));
    let Some((id, life)) = task else {
        return Ok(Resolved::NoTask);
    };
    match machine::apply(&life, &Input::Resolve, policy, now, 0) {
        Ok(step) => {
            write_step(tx, id, now, &step)?;
            Ok(match step.next.status {
                Status::Cancelled => Resolved::CancelledBeforeStart(id),
                _ => Resolved::TooLate(id),
            })
        }
        Err(_) => Ok(Resolved::NoTask),
    }
}

fn load_task(tx: &Transaction<'_>, task_id: i64) -> Result<Task, Fail> {
    tx.prepare_cached(&format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1"))?
        .query_row([task_id], |r| Ok(read_task(r)))
        .optional()?
        .transpose()?
        .ok_or(Failure::Caller(TaskError::NotFound(task_id)))
}

fn parse_status(task_id: i64, s: &str) -> Result<Status, Fail> {
    Status::parse(s).ok_or_else(|| {
        Failure::Caller(TaskError::Store(StoreError::Corrupt {
            store: store_name::TASKS,
            what: format!(
                "task {task_id} has status {s:?} in the database, which this version does not know"
            ),
        }))
    })
}

fn read_task(r: &Row<'_>) -> Result<Task, Fail> {
    let id: i64 = r.get(0)?;
    let status: String = r.get(7)?;
    Ok(Task {
        id,
        identity: r.get(1)?,
        alert_json: r.get(2)?,
        route: r.get(3)?,
        created_at: r.get(4)?,
        repeats: r.get(5)?,
        last_seen: r.get(6)?,
        lifecycle: Lifecycle {
            status: parse_status(id, &status)?,
            attempt: r.get(8)?,
            ready_at: r.get(9)?,
            lease_until: r.get(10)?,
            worker: r.get(11)?,
            last_error: r.get(12)?,
            finished_at: r.get(13)?,
            deferrals: r.get(14)?,
        },
    })
}

fn write_step(
    tx: &Transaction<'_>,
    task_id: i64,
    now: i64,
    step: &machine::Step,
) -> Result<(), Fail> {
    let n = &step.next;
    tx.execute(
        "UPDATE tasks SET status = ?2, attempt = ?3, ready_ms = ?4, lease_until_ms = ?5,
             worker = ?6, last_error = ?7, finished_ms = ?8,
             escalation = CASE WHEN ?9 THEN 1 ELSE escalation END, deferrals = ?10
         WHERE id = ?1",
        params![
            task_id,
            n.status.as_str(),
            n.attempt,
            n.ready_at,
            n.lease_until,
            n.worker,
            n.last_error,
            n.finished_at,
            step.escalate,
            n.deferrals
        ],
    )?;
    if let Some(Change { from, to, why }) = &step.event {
        insert_event(tx, task_id, now, Some(*from), *to, why)?;
    }
    Ok(())
}

fn insert_event(
    tx: &Transaction<'_>,
    task_id: i64,
    now: i64,
    from: Option<Status>,
    to: Status,
    why: &str,
) -> Result<(), Fail> {
    tx.execute(
        "INSERT INTO task_events (task_id, at_ms, from_status, to_status, why)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![task_id, now, from.map(Status::as_str), to.as_str(), why],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The queries run on every wake-up or routed arrival search an index, and those that
    /// pick one row read it in order: their cost does not grow with the tasks that finished
    /// long ago, nor with the ones running now. Only the look at one alert's own tasks may
    /// sort them (they are that alert's, not the table's).
    #[test]
    fn the_hot_path_searches_an_index_never_scans_the_table() {
        use rusqlite::types::Value;
        let dir = tempfile::tempdir().unwrap();
        drop(SqliteTaskQueue::open(dir.path(), Policy::default()).unwrap());
        let conn = rusqlite::Connection::open(dir.path().join("tasks.db")).unwrap();
        // A partial index holds only the rows its query wants: walking it reads no others.
        let partial: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let one = |sql: String, params: Vec<Value>| (sql, params, false);
        let mut queries: Vec<(String, Vec<Value>, bool)> = [READY_PENDING, LEASE_EXPIRED]
            .map(|q| {
                one(
                    format!("SELECT {TASK_COLUMNS}, {q} LIMIT 1"),
                    vec![Value::Integer(1)],
                )
            })
            .into();
        queries.push(one(
            CREATED_SINCE.to_owned(),
            vec![
                Value::Text("r".into()),
                Value::Integer(1),
                Value::Integer(10),
            ],
        ));
        queries.push((
            format!("SELECT id {ACTIVE_BETWEEN}"),
            vec![
                Value::Integer(1),
                Value::Integer(2),
                Value::Integer(10),
                Value::Integer(100),
            ],
            // The window's own matches are sorted, never the table.
            true,
        ));
        queries.push(one(
            CREATED_BY_ARRIVAL.to_owned(),
            vec![Value::Text("kuma/1".into()), Value::Integer(1)],
        ));
        queries.push(one(
            LIVE_FOR_IDENTITY.to_owned(),
            vec![Value::Text("kuma/1".into())],
        ));
        queries.push(one(LAST_RUN.to_owned(), vec![Value::Text("kuma/1".into())]));
        queries.push(one(format!("SELECT id {ESCALATIONS}"), Vec::new()));
        let (sql, params) = tasks_query(&TaskFilter {
            after: Some(100),
            limit: Some(50),
            ..TaskFilter::default()
        });
        queries.push(one(sql, params));
        let (sql, params) = tasks_query(&TaskFilter {
            identity: Some("kuma/1".into()),
            ..TaskFilter::default()
        });
        queries.push((sql, params, true));
        // A finished status's page, in id order without sorting them all.
        let (sql, params) = tasks_query(&TaskFilter {
            status: Some(Status::GaveUp),
            after: Some(100),
            limit: Some(50),
            ..TaskFilter::default()
        });
        queries.push(one(sql, params));
        for (sql, params, may_sort) in queries {
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .unwrap()
                .query_map(rusqlite::params_from_iter(params), |r| {
                    r.get::<_, String>(3)
                })
                .unwrap()
                .map(Result::unwrap)
                .collect();
            // A scan reads every row (but a partial index's, or a bounded subquery's); a
            // temporary sort, every match.
            let reads_all = |step: &String| {
                let whole_table = step.starts_with("SCAN")
                    && !step.starts_with("SCAN (subquery")
                    && !partial
                        .iter()
                        .any(|index| step.ends_with(&format!("INDEX {index}")));
                whole_table || (!may_sort && step.contains("TEMP B-TREE"))
            };
            assert!(
                !plan.iter().any(reads_all) && plan.iter().any(|step| step.contains("USING")),
                "{sql}\n{plan:#?}"
            );
        }
    }
}
