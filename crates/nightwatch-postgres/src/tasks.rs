//! The task queue in PostgreSQL: one queue for the fleet.
//!
//! Every write is one transaction that locks the rows it decides on (`FOR UPDATE`), asks the
//! [`machine`] what happens, and writes the new row and its event together. Claims take the
//! oldest ready row with `FOR UPDATE SKIP LOCKED`, so workers on any host claim different
//! tasks without waiting for each other; heartbeats and completions are fenced by attempt.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use nightwatch_store::{
    Answer, Claim, Escalation, NotedRunbook, Offer, Offered, QueueOp, ReadySignal, Resolved,
    RunbookProcess, StoreError, Task, TaskError, TaskEvent, TaskFilter, TaskQueue, store_name,
};
use nightwatch_tasks::machine::{
    self, Change, Input, LastRun, Lifecycle, OfferDecision, Outcome, Policy, Refusal, Status,
};
use postgres::Row;
use postgres::types::{ToSql, Type};

use crate::db::{Db, Failure, Schema, Tx, count_u32};
use crate::text::{decode, decoded, encode, encode_opt};

type Fail = Failure<TaskError>;

const SCHEMA_1: &str = "
CREATE OR REPLACE FUNCTION nightwatch_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the nightwatch % is append-only: rows cannot be %',
        TG_ARGV[0], lower(TG_OP) || 'd';
END $$;

CREATE TABLE tasks (
    id                BIGSERIAL PRIMARY KEY,
    host              TEXT NOT NULL,  -- the host whose daemon offered it
    identity          TEXT NOT NULL,
    alert_json        TEXT NOT NULL,
    route             TEXT NOT NULL,
    created_ms        BIGINT NOT NULL,
    repeats           BIGINT NOT NULL DEFAULT 0,
    last_seen_ms      BIGINT NOT NULL,
    status            TEXT NOT NULL,
    attempt           BIGINT NOT NULL,
    ready_ms          BIGINT NOT NULL,
    lease_until_ms    BIGINT,
    worker            TEXT,
    last_error        TEXT,
    finished_ms       BIGINT,
    -- 0 none, 1 waiting for take_escalations, 2 handed over
    escalation        SMALLINT NOT NULL DEFAULT 0,
    deferrals         BIGINT NOT NULL DEFAULT 0,
    runbook           TEXT,           -- JSON of the running attempt's RunbookProcess
    arrival           BIGINT,         -- the arrival (of `host`) that created it
    last_arrival      BIGINT,         -- the last arrival counted on it ...
    last_arrival_host TEXT            -- ... and the host it arrived at
);
-- The database itself refuses a second live task for one identity, whichever host offers it.
CREATE UNIQUE INDEX tasks_one_live ON tasks (identity) WHERE status IN ('pending', 'running');
CREATE INDEX tasks_ready ON tasks (ready_ms, id) WHERE status = 'pending';
CREATE INDEX tasks_lease ON tasks (lease_until_ms, id) WHERE status = 'running';
CREATE INDEX tasks_identity ON tasks (identity, finished_ms);
CREATE INDEX tasks_route_created ON tasks (route, created_ms);
CREATE INDEX tasks_escalation ON tasks (id) WHERE escalation = 1;
CREATE INDEX tasks_created ON tasks (created_ms);
CREATE INDEX tasks_finished ON tasks (finished_ms) WHERE finished_ms IS NOT NULL;

CREATE TABLE task_events (
    seq         BIGSERIAL PRIMARY KEY,
    task_id     BIGINT NOT NULL REFERENCES tasks (id),
    host        TEXT NOT NULL,        -- the host that made the change
    at_ms       BIGINT NOT NULL,
    from_status TEXT,
    to_status   TEXT NOT NULL,
    why         TEXT NOT NULL
);
CREATE INDEX task_events_task ON task_events (task_id, seq);
CREATE TRIGGER task_events_append_only BEFORE UPDATE OR DELETE ON task_events
    FOR EACH ROW EXECUTE FUNCTION nightwatch_append_only('task events');
CREATE TRIGGER task_events_no_truncate BEFORE TRUNCATE ON task_events
    FOR EACH STATEMENT EXECUTE FUNCTION nightwatch_append_only('task events');

-- How many tasks are in each status, kept as tasks change: a change appends +1 and -1 rows
-- rather than updating one counter row, so status changes on different hosts never wait
-- for each other; `counts` sums them and folds them into one row per status now and then.
CREATE TABLE task_counts (status TEXT NOT NULL, n BIGINT NOT NULL);
CREATE OR REPLACE FUNCTION nightwatch_task_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO task_counts VALUES (NEW.status, 1);
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO task_counts VALUES (OLD.status, -1);
    ELSIF OLD.status IS DISTINCT FROM NEW.status THEN
        INSERT INTO task_counts VALUES (OLD.status, -1), (NEW.status, 1);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER tasks_counts AFTER INSERT OR UPDATE OF status OR DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION nightwatch_task_counts();
";

/// Schema 2: a live task is found by identity through `tasks_one_live` alone, so the identity
/// index holds only finished tasks (a new task makes one entry on a hashed key, not two).
const SCHEMA_2: &str = "
DROP INDEX tasks_identity;
CREATE INDEX tasks_identity ON tasks (identity, finished_ms) WHERE finished_ms IS NOT NULL;
";

/// Schema 3: cheaper new tasks. A batch's new tasks are counted once per statement (from its
/// transition table) rather than by a trigger call and an insert per task; and their events no
/// longer check a foreign key, which cost a lookup and a row lock on the task per event: the
/// queue writes each event in the statement that writes its task, and nothing else writes them.
const SCHEMA_3: &str = "
CREATE OR REPLACE FUNCTION nightwatch_task_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_counts SELECT status, count(*) FROM inserted GROUP BY status;
    RETURN NULL;
END $$;
DROP TRIGGER tasks_counts ON tasks;
CREATE TRIGGER tasks_counts AFTER UPDATE OF status OR DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION nightwatch_task_counts();
CREATE TRIGGER tasks_counts_inserted AFTER INSERT ON tasks
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION nightwatch_task_counts_inserted();
ALTER TABLE task_events DROP CONSTRAINT task_events_task_id_fkey;
";

/// Schema 4: pages of tasks kept to a host or a finished status read only those. The tasks
/// each worker took, by worker then id, for one host's page (`?host=`): its workers found and
/// each one's tasks read in order, not the fleet's tasks walked for the few a quiet host took
/// (a task no worker has taken has no entry). Finished tasks by status then id, for
/// `?status=gave_up` (a new task has no entry: intake does not pay for it).
const SCHEMA_4: &str = r#"
CREATE INDEX tasks_worker ON tasks ((worker COLLATE "C"), id) WHERE worker IS NOT NULL;
CREATE INDEX tasks_finished_status ON tasks (status, id) WHERE finished_ms IS NOT NULL;
"#;

pub(crate) const SCHEMA: Schema = Schema {
    store: store_name::TASKS,
    migrations: &[SCHEMA_1, SCHEMA_2, SCHEMA_3, SCHEMA_4],
};

/// The channel a `NOTIFY` goes to when a task becomes claimable (created, or back to pending):
/// workers may `LISTEN` on it instead of polling as often.
pub const TASKS_CHANNEL: &str = "nightwatch_tasks";

/// What a look at an identity found.
#[derive(Default)]
struct Looked {
    live: Option<Live>,
    last_run: Option<LastRun>,
}

/// An identity's live task, and the last arrival counted on it (by which host).
struct Live {
    id: i64,
    counted: Option<i64>,
    counted_at: Option<String>,
}

/// What an offer comes to once its identity was looked at.
enum Next {
    Answered(Offered),
    Attach(i64),
    Create,
}

/// Advisory lock classes (the first key of the two-key form).
const ROUTE_LOCK: i32 = 0x6e77_0001;
const FOLD_LOCK: i32 = 0x6e77_0002;
/// Held from a transaction's first new task until it commits, so tasks commit in id order
/// across hosts: a reader following new tasks by id (`after`) never passes an id whose task
/// commits later.
const TASK_ID_LOCK: i32 = 0x6e77_0003;

/// Delta rows in `task_counts` above which `counts` folds them.
const FOLD_AFTER: i64 = 1_000;
/// Writes through one [`crate::PgStores`] after which its housekeeping (the look for
/// escalations) folds the count deltas, so that what `counts` reads stays small whether or not
/// anyone reads it: an unscraped `/metrics` would otherwise leave every change since the daemon
/// started for the first scrape to sum.
const FOLD_EVERY_WRITES: u64 = 200;

const TASK_COLUMNS: &str = "id, identity, alert_json, route, created_ms, repeats, last_seen_ms, \
     status, attempt, ready_ms, lease_until_ms, worker, last_error, finished_ms, deferrals";

/// `$2`: the routes a claim may take, or NULL for any.
/// The route is a filter on what the ready (or lease) index finds in order, never a search of
/// its own (`route || ''` is no index's key): the route's index holds every task the route ever
/// had, and a plan that read it to meet the few claimable tasks cost a walk through the
/// route's history at every worker's look.
const READY_PENDING: &str = "FROM tasks WHERE status = 'pending' AND ready_ms <= $1
     AND ($2::text[] IS NULL OR route || '' = ANY($2))
     ORDER BY ready_ms, id LIMIT 1 FOR UPDATE SKIP LOCKED";
const LEASE_EXPIRED: &str = "FROM tasks WHERE status = 'running' AND lease_until_ms <= $1
     AND ($2::text[] IS NULL OR route || '' = ANY($2))
     ORDER BY lease_until_ms, id LIMIT 1 FOR UPDATE SKIP LOCKED";

/// The fleet's task queue. A handle is opened for one host: the tasks it creates and the
/// events it writes name that host, and the arrivals it is offered are that host's; claims,
/// reads and counts cover the whole fleet.
pub struct PgTaskQueue {
    db: Db,
    host: String,
    policy: Policy,
    /// Writes through every queue handle of these stores, for folding the counts.
    writes: Arc<AtomicU64>,
}

impl PgTaskQueue {
    pub(crate) fn new(db: Db, host: &str, policy: Policy, writes: Arc<AtomicU64>) -> PgTaskQueue {
        PgTaskQueue {
            db,
            host: host.to_string(),
            policy,
            writes,
        }
    }

    /// The host this handle offers and changes tasks as.
    pub fn host(&self) -> &str {
        &self.host
    }

    fn change(&self, task_id: i64, now: i64, input: &Input<'_>) -> Result<Status, TaskError> {
        self.db.write(|tx| {
            let task = load_task(tx, task_id)?;
            let jitter = machine::jitter_for(task_id, task.lifecycle.attempt);
            match machine::apply(&task.lifecycle, input, &self.policy, now, jitter) {
                Ok(step) => {
                    self.write_step(tx, task_id, now, &step)?;
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

    /// An offer inside the caller's transaction (see [`TaskQueue::apply`]).
    fn offer_in(&self, tx: &mut Tx<'_>, offer: &Offer<'_>, now: i64) -> Result<Offered, Fail> {
        // Offered again for an arrival whose first answer a crash cut short: the same answer,
        // nothing changed twice.
        if let Some(arrival) = offer.arrival.filter(|_| offer.again) {
            let created = tx.query_typed_opt(
                "SELECT id FROM tasks WHERE identity = $1 AND host = $2 AND arrival = $3
                   AND (status IN ('pending', 'running') OR finished_ms IS NOT NULL)",
                &[
                    (&encode(offer.identity), Type::TEXT),
                    (&self.host, Type::TEXT),
                    (&arrival, Type::INT8),
                ],
            )?;
            if let Some(row) = created {
                return Ok(Offered::Created(row.get(0)));
            }
        }
        // Twice at most: a second pass only after another host's daemon made the live task
        // this one was about to make.
        for _ in 0..2 {
            let looked = self.look(tx, &[offer.identity])?.remove(offer.identity);
            match self.next_for(offer, &looked.unwrap_or_default(), now) {
                Next::Answered(offered) => return Ok(offered),
                Next::Attach(id) => {
                    self.attach_in(tx, id, offer, now)?;
                    return Ok(Offered::Attached(id));
                }
                Next::Create => {
                    if let Some(limit) = offer.max_per_hour {
                        // Hosts creating tasks for one route take turns until commit, so the
                        // hour's count each reads includes the others' new tasks.
                        tx.execute_typed(
                            "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                            &[
                                (&ROUTE_LOCK, Type::INT4),
                                (&encode(offer.route), Type::TEXT),
                            ],
                        )?;
                        // A statement of its own after the lock, so it sees what the host that
                        // held the lock before committed.
                        let started: i64 = tx
                            .query_typed_one(
                                "SELECT count(*) FROM (SELECT 1 FROM tasks
                                 WHERE route = $1 AND created_ms >= $2 LIMIT $3) AS recent",
                                &[
                                    (&encode(offer.route), Type::TEXT),
                                    (&(now - machine::HOUR_MS), Type::INT8),
                                    (&i64::from(limit), Type::INT8),
                                ],
                            )?
                            .get(0);
                        if let Some(why) = machine::throttle(offer.route, count_u32(started), limit)
                        {
                            return Ok(Offered::Throttled { why });
                        }
                    }
                    if let Some(&id) = self.create(tx, &[offer], now)?.get(offer.identity) {
                        return Ok(Offered::Created(id));
                    }
                }
            }
        }
        Err(Failure::Caller(TaskError::Store(StoreError::Backend {
            store: store_name::TASKS,
            message: format!(
                "identity {} had no live task to attach to, yet another host's held its place",
                offer.identity
            ),
        })))
    }

    /// Each identity's live task (locked for this transaction, in id order so that hosts
    /// locking several never wait on each other in a circle) and, read after those locks, its
    /// last finished run: had a lock waited for another host finishing that task, this read
    /// sees the finished run.
    fn look(&self, tx: &mut Tx<'_>, identities: &[&str]) -> Result<HashMap<String, Looked>, Fail> {
        let mut looked: HashMap<String, Looked> = HashMap::new();
        let identities: Vec<Cow<'_, str>> = identities.iter().map(|i| encode(i)).collect();
        for row in tx.query_typed(
            "SELECT id, identity, last_arrival, last_arrival_host FROM tasks
             WHERE identity = ANY($1) AND status IN ('pending', 'running')
             ORDER BY id FOR UPDATE",
            &[(&identities, Type::TEXT_ARRAY)],
        )? {
            looked.entry(decoded(row.get(1))).or_default().live = Some(Live {
                id: row.get(0),
                counted: row.get(2),
                counted_at: row.get(3),
            });
        }
        // Each identity's last run read on its own (a subquery with a limit, which the planner
        // never makes a join): its newest entry in the identity index, whatever the plan
        // cached while the table was small believed.
        for row in tx.query_typed(
            "SELECT i.identity, t.id, t.status, t.finished_ms
             FROM unnest($1::text[]) AS i (identity)
             CROSS JOIN LATERAL (
                 SELECT id, status, finished_ms FROM tasks
                 WHERE identity = i.identity AND status IN ('done', 'gave_up')
                   AND finished_ms IS NOT NULL
                 ORDER BY finished_ms DESC, id DESC LIMIT 1
             ) AS t",
            &[(&identities, Type::TEXT_ARRAY)],
        )? {
            let task_id: i64 = row.get(1);
            looked.entry(decoded(row.get(0))).or_default().last_run = Some(LastRun {
                task_id,
                status: parse_status(task_id, row.get(2))?,
                finished_at: row.get::<_, Option<i64>>(3).unwrap_or(0),
            });
        }
        Ok(looked)
    }

    /// What an offer comes to, given what a look at its identity found.
    fn next_for(&self, offer: &Offer<'_>, looked: &Looked, now: i64) -> Next {
        // This host already counted this arrival on the live task (a replay): nothing to change.
        if let (Some(live), Some(arrival)) = (&looked.live, offer.arrival)
            && live.counted_at.as_deref() == Some(self.host.as_str())
            && live.counted.is_some_and(|counted| counted >= arrival)
        {
            return Next::Answered(Offered::Attached(live.id));
        }
        let live = looked.live.as_ref().map(|l| l.id);
        match machine::decide_offer(live, looked.last_run.as_ref(), &self.policy, now) {
            OfferDecision::Attach(id) => Next::Attach(id),
            OfferDecision::Suppress { why } => Next::Answered(Offered::Suppressed { why }),
            OfferDecision::Create => Next::Create,
        }
    }

    /// A repeat counted on live task `id`.
    fn attach_in(&self, tx: &mut Tx<'_>, id: i64, offer: &Offer<'_>, now: i64) -> Result<(), Fail> {
        tx.execute_typed(
            "UPDATE tasks SET repeats = repeats + 1, last_seen_ms = $2,
                 last_arrival = coalesce($3, last_arrival),
                 last_arrival_host = CASE WHEN $3::BIGINT IS NULL
                     THEN last_arrival_host ELSE $4 END
             WHERE id = $1",
            &[
                (&id, Type::INT8),
                (&now, Type::INT8),
                (&offer.arrival, Type::INT8),
                (&self.host, Type::TEXT),
            ],
        )?;
        Ok(())
    }

    /// New tasks for `offers` (distinct identities), their first events and the word to
    /// listeners, in one statement; the ids made, by identity. Another host's daemon may be
    /// inserting one of these identities: the unique index makes this wait for it, and if it
    /// committed, that identity gets nothing here (no task, no event, no notification) and is
    /// missing from the answer.
    fn create(
        &self,
        tx: &mut Tx<'_>,
        offers: &[&Offer<'_>],
        now: i64,
    ) -> Result<HashMap<String, i64>, Fail> {
        let life = Lifecycle::new(&self.policy, now);
        let why = if life.ready_at > now {
            format!(
                "alert offered; claimable at {} unless it resolves first",
                life.ready_at
            )
        } else {
            "alert offered".to_string()
        };
        let identities: Vec<Cow<'_, str>> = offers.iter().map(|o| encode(o.identity)).collect();
        let alerts: Vec<Cow<'_, str>> = offers.iter().map(|o| encode(o.alert_json)).collect();
        let routes: Vec<Cow<'_, str>> = offers.iter().map(|o| encode(o.route)).collect();
        let arrivals: Vec<Option<i64>> = offers.iter().map(|o| o.arrival).collect();
        tx.execute_typed(
            "SELECT pg_advisory_xact_lock($1, 0)",
            &[(&TASK_ID_LOCK, Type::INT4)],
        )?;
        let rows = tx.query_typed(
            "WITH input AS (
                 SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[])
                     WITH ORDINALITY AS i (identity, alert_json, route, arrival, n)
             ), task AS (
                 INSERT INTO tasks (host, identity, alert_json, route, created_ms,
                     last_seen_ms, status, attempt, ready_ms, arrival, last_arrival,
                     last_arrival_host)
                 SELECT $1, identity, alert_json, route, $6, $6, $7, 0, $8, arrival, arrival,
                     CASE WHEN arrival IS NULL THEN NULL ELSE $1 END
                 FROM input ORDER BY n
                 ON CONFLICT (identity) WHERE status IN ('pending', 'running')
                 DO NOTHING
                 RETURNING id, identity
             ), event AS (
                 INSERT INTO task_events (task_id, host, at_ms, from_status, to_status, why)
                 SELECT id, $1, $6, NULL, 'pending', $9 FROM task ORDER BY id
             )
             -- The word to listeners only when the tasks are claimable now: a delayed task
             -- is found by the workers' next look after its time.
             SELECT id, identity, (SELECT pg_notify($10, '') WHERE $8 <= $6) FROM task",
            &[
                (&self.host, Type::TEXT),
                (&identities, Type::TEXT_ARRAY),
                (&alerts, Type::TEXT_ARRAY),
                (&routes, Type::TEXT_ARRAY),
                (&arrivals, Type::INT8_ARRAY),
                (&now, Type::INT8),
                (&life.status.as_str(), Type::TEXT),
                (&life.ready_at, Type::INT8),
                (&encode(&why), Type::TEXT),
                (&TASKS_CHANNEL, Type::TEXT),
            ],
        )?;
        Ok(rows.iter().map(|r| (decoded(r.get(1)), r.get(0))).collect())
    }

    /// The batch's plain offers waiting in `waiting` (indexes into `ops`), created together;
    /// one whose identity another host took meanwhile is offered again on its own.
    fn create_waiting(
        &self,
        tx: &mut Tx<'_>,
        ops: &[QueueOp<'_>],
        waiting: &mut Vec<usize>,
        answers: &mut [Option<Answer>],
        now: i64,
    ) -> Result<(), Fail> {
        if waiting.is_empty() {
            return Ok(());
        }
        let offers: Vec<(usize, &Offer<'_>)> = waiting
            .drain(..)
            .filter_map(|i| match &ops[i] {
                QueueOp::Offer(offer) => Some((i, offer)),
                QueueOp::Resolve { .. } => None,
            })
            .collect();
        let made = self.create(tx, &offers.iter().map(|(_, o)| *o).collect::<Vec<_>>(), now)?;
        for (i, offer) in offers {
            answers[i] = Some(Answer::Offered(match made.get(offer.identity) {
                Some(&id) => Offered::Created(id),
                None => self.offer_in(tx, offer, now)?,
            }));
        }
        Ok(())
    }

    /// A resolve inside the caller's transaction (see [`TaskQueue::apply`]).
    fn resolve_in(&self, tx: &mut Tx<'_>, identity: &str, now: i64) -> Result<Resolved, Fail> {
        let task = tx
            .query_typed_opt(
                &format!(
                    "SELECT {TASK_COLUMNS} FROM tasks
                     WHERE identity = $1 AND status IN ('pending', 'running') FOR UPDATE"
                ),
                &[(&encode(identity), Type::TEXT)],
            )?
            .map(|r| read_task(&r))
            .transpose()?;
        let Some(task) = task else {
            return Ok(Resolved::NoTask);
        };
        match machine::apply(&task.lifecycle, &Input::Resolve, &self.policy, now, 0) {
            Ok(step) => {
                self.write_step(tx, task.id, now, &step)?;
                Ok(match step.next.status {
                    Status::Cancelled => Resolved::CancelledBeforeStart(task.id),
                    _ => Resolved::TooLate(task.id),
                })
            }
            Err(_) => Ok(Resolved::NoTask),
        }
    }

    fn write_step(
        &self,
        tx: &mut Tx<'_>,
        task_id: i64,
        now: i64,
        step: &machine::Step,
    ) -> Result<(), Fail> {
        self.write_step_and(tx, task_id, now, step, false)
    }

    /// The new row, its event and (when it is claimable again) the word to listeners, in one
    /// statement; `clear_runbook` also forgets the last attempt's runbook note. Listeners on
    /// [`TASKS_CHANNEL`] hear at commit, once per transaction however many tasks it made
    /// ready (PostgreSQL folds a transaction's identical notifications into one).
    fn write_step_and(
        &self,
        tx: &mut Tx<'_>,
        task_id: i64,
        now: i64,
        step: &machine::Step,
        clear_runbook: bool,
    ) -> Result<(), Fail> {
        let n = &step.next;
        let (from, to, why) = match &step.event {
            Some(Change { from, to, why }) => {
                (Some(from.as_str()), Some(to.as_str()), Some(why.as_str()))
            }
            None => (None, None, None),
        };
        tx.execute_typed(
            "WITH step AS (
                 UPDATE tasks SET status = $2, attempt = $3, ready_ms = $4, lease_until_ms = $5,
                     worker = $6, last_error = $7, finished_ms = $8,
                     escalation = CASE WHEN $9 THEN 1 ELSE escalation END, deferrals = $10,
                     runbook = CASE WHEN $11 THEN NULL ELSE runbook END
                 WHERE id = $1
                 RETURNING id
             ), event AS (
                 INSERT INTO task_events (task_id, host, at_ms, from_status, to_status, why)
                 SELECT id, $12, $13, $14, $15, $16 FROM step WHERE $15 IS NOT NULL
             )
             SELECT id, pg_notify($17, '') FROM step WHERE $15 = 'pending' AND $4 <= $13",
            &[
                (&task_id, Type::INT8),
                (&n.status.as_str(), Type::TEXT),
                (&i64::from(n.attempt), Type::INT8),
                (&n.ready_at, Type::INT8),
                (&n.lease_until, Type::INT8),
                (&encode_opt(n.worker.as_deref()), Type::TEXT),
                (&encode_opt(n.last_error.as_deref()), Type::TEXT),
                (&n.finished_at, Type::INT8),
                (&step.escalate, Type::BOOL),
                (&i64::from(n.deferrals), Type::INT8),
                (&clear_runbook, Type::BOOL),
                (&self.host, Type::TEXT),
                (&now, Type::INT8),
                (&from, Type::TEXT),
                (&to, Type::TEXT),
                (&encode_opt(why), Type::TEXT),
                (&TASKS_CHANNEL, Type::TEXT),
            ],
        )?;
        Ok(())
    }

    fn insert_event(
        &self,
        tx: &mut Tx<'_>,
        task_id: i64,
        now: i64,
        from: Option<Status>,
        to: Status,
        why: &str,
    ) -> Result<(), Fail> {
        tx.execute_typed(
            "INSERT INTO task_events (task_id, host, at_ms, from_status, to_status, why)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                (&task_id, Type::INT8),
                (&self.host, Type::TEXT),
                (&now, Type::INT8),
                (&from.map(Status::as_str), Type::TEXT),
                (&to.as_str(), Type::TEXT),
                (&encode(why), Type::TEXT),
            ],
        )?;
        Ok(())
    }

    fn select_tasks(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Task>, TaskError> {
        self.db.run(|client| {
            client
                .query(sql, params)?
                .iter()
                .map(read_task)
                .collect::<Result<Vec<_>, Fail>>()
        })
    }
}

impl TaskQueue for PgTaskQueue {
    fn policy(&self) -> &Policy {
        &self.policy
    }

    fn apply(&self, ops: &[QueueOp<'_>], now: i64) -> Result<Vec<Answer>, TaskError> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let applied = self.db.write(|tx| {
            // Plain offers (no replay after a crash, no hourly limit), each its identity's first
            // op in the batch, are looked at together and their tasks made together: a batch
            // of n new alerts costs a few round trips, not three per alert. Every other op goes
            // on its own, in order, after the waiting creations before it are written.
            let mut seen = HashSet::new();
            let plain: Vec<bool> = ops
                .iter()
                .map(|op| match op {
                    QueueOp::Offer(o) => {
                        seen.insert(o.identity) && !o.again && o.max_per_hour.is_none()
                    }
                    QueueOp::Resolve { identity } => {
                        seen.insert(identity);
                        false
                    }
                })
                .collect();
            let identities: Vec<&str> = ops
                .iter()
                .zip(&plain)
                .filter_map(|(op, plain)| match op {
                    QueueOp::Offer(o) if *plain => Some(o.identity),
                    _ => None,
                })
                .collect();
            let mut looked = if identities.is_empty() {
                HashMap::new()
            } else {
                self.look(tx, &identities)?
            };
            let mut answers: Vec<Option<Answer>> = ops.iter().map(|_| None).collect();
            let mut waiting = Vec::new();
            for (i, op) in ops.iter().enumerate() {
                match op {
                    QueueOp::Offer(offer) if plain[i] => {
                        let found = looked.remove(offer.identity).unwrap_or_default();
                        match self.next_for(offer, &found, now) {
                            Next::Answered(offered) => answers[i] = Some(Answer::Offered(offered)),
                            Next::Attach(id) => {
                                self.attach_in(tx, id, offer, now)?;
                                answers[i] = Some(Answer::Offered(Offered::Attached(id)));
                            }
                            Next::Create => waiting.push(i),
                        }
                    }
                    QueueOp::Offer(offer) => {
                        self.create_waiting(tx, ops, &mut waiting, &mut answers, now)?;
                        answers[i] = Some(Answer::Offered(self.offer_in(tx, offer, now)?));
                    }
                    QueueOp::Resolve { identity } => {
                        self.create_waiting(tx, ops, &mut waiting, &mut answers, now)?;
                        answers[i] = Some(Answer::Resolved(self.resolve_in(tx, identity, now)?));
                    }
                }
            }
            self.create_waiting(tx, ops, &mut waiting, &mut answers, now)?;
            answers
                .into_iter()
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    Failure::Caller(TaskError::Store(StoreError::Backend {
                        store: store_name::TASKS,
                        message: "a batch of queue operations was left partly unanswered".into(),
                    }))
                })
        });
        self.wrote(applied)
    }

    fn claim_for(
        &self,
        worker: &str,
        routes: Option<&[String]>,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<Claim>, TaskError> {
        let routes: Option<Vec<Cow<'_, str>>> =
            routes.map(|r| r.iter().map(|r| encode(r)).collect());
        // Whether a step was written: an idle poll that finds nothing writes no count delta.
        let claimed = self.db.write(|tx| {
            let mut stepped = false;
            loop {
                // The pending task ready longest and the running one whose lease ran out
                // longest ago, each skipping rows another worker holds, both in one statement;
                // the earlier goes (the other stays locked until commit, which only makes others
                // skip it a moment).
                let rows = tx.query_typed(
                    &format!(
                        "WITH pending AS (SELECT {TASK_COLUMNS} {READY_PENDING}),
                              expired AS (SELECT {TASK_COLUMNS} {LEASE_EXPIRED})
                         SELECT * FROM pending UNION ALL SELECT * FROM expired"
                    ),
                    &[(&now, Type::INT8), (&routes, Type::TEXT_ARRAY)],
                )?;
                let mut task: Option<(i64, Task)> = None;
                for row in &rows {
                    let found = read_task(row)?;
                    let key = match found.lifecycle.status {
                        Status::Running => found.lifecycle.lease_until.unwrap_or(0),
                        _ => found.lifecycle.ready_at,
                    };
                    // On a tie the pending task (the first row) goes.
                    if task
                        .as_ref()
                        .is_none_or(|(k, t)| (key, found.id) < (*k, t.id))
                    {
                        task = Some((key, found));
                    }
                }
                let task = task.map(|(_, t)| t);
                let Some(task) = task else {
                    return Ok((None, stepped));
                };
                let input = Input::Claim { worker, lease_ms };
                let step = match machine::apply(&task.lifecycle, &input, &self.policy, now, 0) {
                    Ok(step) => step,
                    // The query and the machine agree on readiness; if they ever did not,
                    // refusing to hand the task out is the safe side.
                    Err(_) => return Ok((None, stepped)),
                };
                // A new attempt: the last one's runbook note is the past.
                self.write_step_and(tx, task.id, now, &step, true)?;
                stepped = true;
                if step.next.status == Status::Running {
                    let claim = Claim {
                        task_id: task.id,
                        attempt: step.next.attempt,
                        alert_json: task.alert_json,
                        route: task.route,
                    };
                    return Ok((Some(claim), stepped));
                }
            }
        });
        let (claim, stepped) = claimed?;
        if stepped {
            return self.wrote(Ok(claim));
        }
        Ok(claim)
    }

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

    fn complete(
        &self,
        task_id: i64,
        attempt: u32,
        outcome: &Outcome,
        now: i64,
    ) -> Result<Status, TaskError> {
        let changed = self.change(task_id, now, &Input::Complete { attempt, outcome });
        self.wrote(changed)
    }

    fn take_escalations(&self, now: i64) -> Result<Vec<Escalation>, TaskError> {
        self.fold_if_due();
        self.db.write(|tx| {
            // Daemons on several hosts may ask at once: each task goes to one of them.
            let taken: Vec<Escalation> = tx
                .query_typed(
                    "SELECT id, identity, route, attempt, last_error FROM tasks
                     WHERE escalation = 1 ORDER BY id FOR UPDATE SKIP LOCKED",
                    &[],
                )?
                .iter()
                .map(|r| Escalation {
                    task_id: r.get(0),
                    identity: decoded(r.get(1)),
                    route: decoded(r.get(2)),
                    attempts: count_u32(r.get(3)),
                    last_error: r.get::<_, Option<String>>(4).map(decoded),
                })
                .collect();
            for e in &taken {
                tx.execute_typed(
                    "UPDATE tasks SET escalation = 2 WHERE id = $1",
                    &[(&e.task_id, Type::INT8)],
                )?;
                // The queue does not know who is told: the daemon's `escalated` record says.
                let why = "taken for escalation; the escalated record says who was told";
                self.insert_event(
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

    fn task(&self, task_id: i64) -> Result<Option<Task>, TaskError> {
        let found = self.select_tasks(
            &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1"),
            &[&task_id],
        )?;
        Ok(found.into_iter().next())
    }

    fn tasks(&self, filter: &TaskFilter) -> Result<Vec<Task>, TaskError> {
        let mut clauses = Vec::new();
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        let limit = filter.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let identity = filter.identity.as_deref().map(encode);
        let prefix = filter.worker_prefix.as_deref().map(encode);
        if let Some(identity) = &identity {
            params.push(identity);
            // A task is live or finished; each half searches its own partial index.
            clauses.push(format!(
                "identity = ${0} AND (status IN ('pending', 'running') OR finished_ms IS NOT NULL)",
                params.len()
            ));
        }
        if let Some(status) = filter.status {
            // Written out (a word of `Status`, never input), so that each status is a plan of
            // its own that can take the partial index holding it: a live status the ready or
            // lease index, a finished one `tasks_finished_status` in id order. A parameter
            // made one plan for all, walking every task in id order for the few that failed.
            let word = status.as_str();
            clauses.push(if status.is_live() {
                format!("status = '{word}'")
            } else {
                format!("status = '{word}' AND finished_ms IS NOT NULL")
            });
        }
        if let Some(after) = &filter.after {
            params.push(after);
            clauses.push(format!("id > ${}", params.len()));
        }
        let limit_clause = match &limit {
            Some(limit) => {
                params.push(limit);
                format!(" LIMIT ${}", params.len())
            }
            None => String::new(),
        };
        let Some(prefix) = &prefix else {
            let mut sql = format!("SELECT {TASK_COLUMNS} FROM tasks");
            if !clauses.is_empty() {
                sql.push_str(" WHERE ");
                sql.push_str(&clauses.join(" AND "));
            }
            sql.push_str(" ORDER BY id");
            sql.push_str(&limit_clause);
            return self.select_tasks(&sql, &params);
        };
        // The tasks some workers took (a host's: their names share a prefix), oldest first.
        // Walking every task in id order for the few a quiet host took would read the fleet's
        // history; instead the workers with the prefix are found one index probe each (there
        // are a handful per host), each one's first tasks read from the same index, and those
        // merged: a page costs a few probes per worker whatever the history.
        params.push(prefix);
        let p = params.len();
        clauses.push("worker COLLATE \"C\" = w.worker".to_string());
        let sql = format!(
            "WITH RECURSIVE workers AS (
                 (SELECT worker COLLATE \"C\" AS worker FROM tasks
                  WHERE worker COLLATE \"C\" >= ${p} AND worker IS NOT NULL
                  ORDER BY worker COLLATE \"C\" LIMIT 1)
                 UNION ALL
                 SELECT (SELECT t.worker COLLATE \"C\" FROM tasks t
                         WHERE t.worker COLLATE \"C\" > w.worker AND t.worker IS NOT NULL
                         ORDER BY t.worker COLLATE \"C\" LIMIT 1)
                 FROM workers w WHERE starts_with(w.worker, ${p})
             )
             SELECT t.* FROM workers w CROSS JOIN LATERAL (
                 SELECT {TASK_COLUMNS} FROM tasks WHERE {clauses} ORDER BY id{limit_clause}
             ) t
             WHERE starts_with(w.worker, ${p})
             ORDER BY t.id{limit_clause}",
            clauses = clauses.join(" AND "),
        );
        self.select_tasks(&sql, &params)
    }

    fn counts(&self) -> Result<Vec<(Status, i64)>, TaskError> {
        let rows = self.db.run(|client| {
            let rows = client.query(
                "SELECT status, sum(n)::BIGINT, count(*) FROM task_counts GROUP BY status",
                &[],
            )?;
            Ok::<_, Fail>(rows)
        })?;
        let deltas: i64 = rows.iter().map(|r| r.get::<_, i64>(2)).sum();
        if deltas > FOLD_AFTER {
            self.fold_counts()?;
        }
        let mut out: Vec<(Status, i64)> = rows
            .iter()
            .filter_map(|r| {
                let n: i64 = r.get(1);
                Status::parse(r.get(0)).filter(|_| n > 0).map(|s| (s, n))
            })
            .collect();
        out.sort_by_key(|(status, _)| status.as_str());
        Ok(out)
    }

    fn oldest_ready(&self, now: i64) -> Result<Option<i64>, TaskError> {
        self.db.run(|client| {
            Ok(client
                .query_one(
                    "SELECT min(ready_ms) FROM tasks WHERE status = 'pending' AND ready_ms <= $1",
                    &[&now],
                )?
                .get(0))
        })
    }

    fn active_between(
        &self,
        since_ms: i64,
        until_ms: i64,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Task>, TaskError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let before = before.unwrap_or(i64::MAX);
        let mut tasks = self.select_tasks(
            &format!(
                "SELECT {TASK_COLUMNS} FROM tasks
                 WHERE ((created_ms >= $1 AND created_ms < $2)
                    OR (finished_ms >= $1 AND finished_ms < $2)
                    OR (status IN ('pending', 'running') AND created_ms < $2)
                 ) AND id < $4
                 ORDER BY id DESC LIMIT $3"
            ),
            &[&since_ms, &until_ms, &limit, &before],
        )?;
        tasks.reverse();
        Ok(tasks)
    }

    fn events(&self, task_id: i64) -> Result<Vec<TaskEvent>, TaskError> {
        self.db.run(|client| {
            client
                .query(
                    "SELECT seq, task_id, at_ms, from_status, to_status, why FROM task_events
                     WHERE task_id = $1 ORDER BY seq",
                    &[&task_id],
                )?
                .iter()
                .map(|r| {
                    let task_id: i64 = r.get(1);
                    Ok(TaskEvent {
                        seq: r.get(0),
                        task_id,
                        at: r.get(2),
                        from: r
                            .get::<_, Option<&str>>(3)
                            .map(|f| parse_status(task_id, f))
                            .transpose()?,
                        to: parse_status(task_id, r.get(4))?,
                        why: decoded(r.get(5)),
                    })
                })
                .collect()
        })
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
                "UPDATE tasks SET runbook = $3
                 WHERE id = $1 AND attempt = $2 AND status = 'running'",
                &[&task_id, &i64::from(attempt), &encode(&noted)],
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
        self.db.run(|client| {
            let rows = client.query(
                "SELECT id, attempt, route, identity, runbook FROM tasks
                 WHERE status = 'running' AND runbook IS NOT NULL ORDER BY id",
                &[],
            )?;
            Ok::<_, Fail>(
                rows.iter()
                    .filter_map(|r| {
                        // A note this version cannot read names no process it could safely stop.
                        let process = serde_json::from_str(&decode(r.get(4))).ok()?;
                        Some(NotedRunbook {
                            task_id: r.get(0),
                            attempt: count_u32(r.get(1)),
                            route: decoded(r.get(2)),
                            identity: decoded(r.get(3)),
                            process,
                        })
                    })
                    .collect(),
            )
        })
    }

    /// `LISTEN` on [`TASKS_CHANNEL`], on a pooled connection held while listening.
    fn ready_signal(&self) -> Result<Option<Box<dyn ReadySignal>>, TaskError> {
        let mut client = self.db.client::<StoreError>()?;
        client
            .client
            .batch_execute(&format!("LISTEN {TASKS_CHANNEL}"))
            .map_err(|e| crate::db::backend(store_name::TASKS, e))?;
        Ok(Some(Box::new(Listening { client })))
    }
}

/// A connection listening for [`TASKS_CHANNEL`].
struct Listening {
    client: crate::db::Pooled,
}

impl ReadySignal for Listening {
    fn wait(&mut self, timeout: std::time::Duration) -> Result<bool, StoreError> {
        use postgres::fallible_iterator::FallibleIterator;
        let fail = |e| crate::db::backend(store_name::TASKS, e);
        let mut notifications = self.client.client.notifications();
        let came = notifications.timeout_iter(timeout).next().map_err(fail)?;
        if came.is_none() {
            return Ok(false);
        }
        // Take what else arrived with it: one wake for a burst.
        let mut buffered = notifications.iter();
        while buffered.next().map_err(fail)?.is_some() {}
        Ok(true)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        // The connection goes back to the pool: it must stop listening first.
        let _ = self.client.client.batch_execute("UNLISTEN *");
    }
}

impl PgTaskQueue {
    /// Counts a committed write that may have added count deltas, for [`Self::fold_if_due`].
    fn wrote<T>(&self, result: Result<T, TaskError>) -> Result<T, TaskError> {
        if result.is_ok() {
            self.writes.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// Folds the count deltas once [`FOLD_EVERY_WRITES`] writes have passed since the last
    /// fold: from the housekeeping's look for escalations, off the intake's path. A fold that
    /// fails is left to the next one, or to `counts`; the look goes on.
    fn fold_if_due(&self) {
        if self.writes.load(Ordering::Relaxed) >= FOLD_EVERY_WRITES
            && self.writes.swap(0, Ordering::Relaxed) >= FOLD_EVERY_WRITES
        {
            let _ = self.fold_counts();
        }
    }

    /// Folds the count deltas into one row per status. One folder at a time (others skip);
    /// deltas committed meanwhile are not visible to the delete, so they stay and count.
    fn fold_counts(&self) -> Result<(), TaskError> {
        self.db.write(|tx| {
            let mine: bool = tx
                .query_one("SELECT pg_try_advisory_xact_lock($1, 0)", &[&FOLD_LOCK])?
                .get(0);
            if mine {
                tx.batch_execute(
                    "WITH gone AS (DELETE FROM task_counts RETURNING status, n)
                     INSERT INTO task_counts (status, n)
                         SELECT status, sum(n) FROM gone GROUP BY status",
                )?;
            }
            Ok::<_, Fail>(())
        })
    }
}

fn load_task(tx: &mut Tx<'_>, task_id: i64) -> Result<Task, Fail> {
    tx.query_typed_opt(
        &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1 FOR UPDATE"),
        &[(&task_id, Type::INT8)],
    )?
    .map(|r| read_task(&r))
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

fn read_task(r: &Row) -> Result<Task, Fail> {
    let id: i64 = r.try_get(0)?;
    Ok(Task {
        id,
        identity: decoded(r.try_get(1)?),
        alert_json: decoded(r.try_get(2)?),
        route: decoded(r.try_get(3)?),
        created_at: r.try_get(4)?,
        repeats: count_u32(r.try_get(5)?),
        last_seen: r.try_get(6)?,
        lifecycle: Lifecycle {
            status: parse_status(id, r.try_get(7)?)?,
            attempt: count_u32(r.try_get(8)?),
            ready_at: r.try_get(9)?,
            lease_until: r.try_get(10)?,
            worker: r.try_get::<_, Option<String>>(11)?.map(decoded),
            last_error: r.try_get::<_, Option<String>>(12)?.map(decoded),
            finished_at: r.try_get(13)?,
            deferrals: count_u32(r.try_get(14)?),
        },
    })
}
