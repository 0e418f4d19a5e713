//! The task queue's trait and the values it hands out. The lifecycle itself (what a claim,
//! a failure or a resolve does to a task) is `nightwatch_tasks::machine`, pure; a queue
//! stores its answers, each change with its event, in one transaction.

use crate::StoreError;
use nightwatch_tasks::{Lifecycle, Outcome, Policy, Status};

/// Why a store call failed. Nothing was written.
/// Why a queue call failed. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error(
        "task {task_id}: attempt {attempt} no longer holds this task (it is {status} at attempt {current}); its result was not applied. Another worker reclaimed it after the lease expired, or it already finished: heartbeat more often than the lease"
    )]
    Stale {
        task_id: i64,
        attempt: u32,
        current: u32,
        status: Status,
    },
    #[error("task {0} does not exist")]
    NotFound(i64),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What `offer` did with an alert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offered {
    Created(i64),
    /// A repeat of an alert whose task is still live: counted on that task.
    Attached(i64),
    /// A task for this identity ran recently; the reason names it and when the cooldown ends.
    Suppressed {
        why: String,
    },
    /// The route started as many tasks in the last hour as its limit allows; no new task.
    Throttled {
        why: String,
    },
}

/// One alert offered to the queue (see [`TaskQueue::apply`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offer<'a> {
    /// What makes two alerts the same problem: one live task per identity.
    pub identity: &'a str,
    pub alert_json: &'a str,
    pub route: &'a str,
    /// At most this many new tasks for the route in any hour; `None`: no limit.
    pub max_per_hour: Option<u32>,
    /// The arrival that offers it. Offering again for the same arrival (after a crash cut its
    /// first answer short) changes nothing and answers as the first offer did, so an arrival
    /// never counts twice or finds itself a duplicate of the task it created.
    pub arrival: Option<i64>,
    /// The arrival may have been offered before (it is decided again after a crash or a
    /// storage failure): the queue first looks for a task it created. A fresh arrival cannot
    /// have one, and is spared the look.
    pub again: bool,
}

impl<'a> Offer<'a> {
    /// An offer with no hourly limit and no arrival behind it (a first offer, never a replay).
    pub fn plain(identity: &'a str, alert_json: &'a str, route: &'a str) -> Offer<'a> {
        Offer {
            identity,
            alert_json,
            route,
            max_per_hour: None,
            arrival: None,
            again: false,
        }
    }
}

/// One change asked of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueOp<'a> {
    Offer(Offer<'a>),
    /// The alert with this identity cleared.
    Resolve {
        identity: &'a str,
    },
}

/// What the queue did with one [`QueueOp`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Offered(Offered),
    Resolved(Resolved),
}

/// What `resolve` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    CancelledBeforeStart(i64),
    /// Already running: it finishes; the event log notes the alert cleared.
    TooLate(i64),
    NoTask,
}

/// A task handed to a worker. `attempt` is the fencing token for heartbeat and complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub task_id: i64,
    pub attempt: u32,
    pub alert_json: String,
    pub route: String,
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub id: i64,
    pub identity: String,
    pub alert_json: String,
    pub route: String,
    pub created_at: i64,
    /// Repeats of the alert attached while the task was live.
    pub repeats: u32,
    pub last_seen: i64,
    pub lifecycle: Lifecycle,
}

/// One row of the append-only `task_events` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskEvent {
    pub seq: i64,
    pub task_id: i64,
    pub at: i64,
    /// `None` for the creation event.
    pub from: Option<Status>,
    pub to: Status,
    pub why: String,
}

/// A task that gave up and has not been handed to a person yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    pub task_id: i64,
    pub identity: String,
    pub route: String,
    pub attempts: u32,
    pub last_error: Option<String>,
}

/// Which tasks `tasks` returns; empty fields match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    pub identity: Option<String>,
    pub status: Option<Status>,
    /// Only tasks with a greater id: the cursor of the page before.
    pub after: Option<i64>,
    /// Only tasks whose last worker's name starts with this (a daemon names its workers
    /// `<host>-worker-<n>`, so `db-1-worker-` keeps the tasks db-1 ran or runs).
    pub worker_prefix: Option<String>,
    /// At most this many, lowest ids first.
    pub limit: Option<usize>,
}

/// The durable queue behind `nightwatch serve`. Every call takes `now` (ms) from the caller's
/// clock; every write asks the machine what happens and stores the change and its event
/// together, so two workers never both claim a task and a stale worker never overwrites the
/// result of the one that reclaimed it.
pub trait TaskQueue: Send + Sync {
    /// The policy this queue applies.
    fn policy(&self) -> &Policy;

    /// Applies `ops` in order, in one durable commit, and answers each: what an intake batch
    /// asks of the queue. An offer creates a task, attaches the alert to the identity's live
    /// task, suppresses it during the cooldown after the identity's last run, or throttles it
    /// when its route reached its hourly limit; a resolve cancels a task not yet started (a
    /// running one finishes). Each op sees the ones before it.
    fn apply(&self, ops: &[QueueOp<'_>], now: i64) -> Result<Vec<Answer>, TaskError>;

    /// Offers one alert with no hourly limit and no arrival (see [`TaskQueue::apply`]).
    fn offer(
        &self,
        identity: &str,
        alert_json: &str,
        route: &str,
        now: i64,
    ) -> Result<Offered, TaskError> {
        let op = QueueOp::Offer(Offer::plain(identity, alert_json, route));
        match self.apply(&[op], now)?.pop() {
            Some(Answer::Offered(offered)) => Ok(offered),
            other => Err(unanswered(other)),
        }
    }

    /// The alert cleared (see [`TaskQueue::apply`]).
    fn resolve(&self, identity: &str, now: i64) -> Result<Resolved, TaskError> {
        match self.apply(&[QueueOp::Resolve { identity }], now)?.pop() {
            Some(Answer::Resolved(resolved)) => Ok(resolved),
            other => Err(unanswered(other)),
        }
    }

    /// Claims the oldest ready task (pending past its ready time, or running with an expired
    /// lease) for `worker`, leased for `lease_ms`. A task whose last allowed attempt's lease
    /// expired gives up on the way (and is escalated) instead of being handed out.
    fn claim(&self, worker: &str, now: i64, lease_ms: i64) -> Result<Option<Claim>, TaskError> {
        self.claim_for(worker, None, now, lease_ms)
    }

    /// As [`TaskQueue::claim`], taking only tasks of `routes` when given: a host claims only
    /// what it may run (a route pinned to other hosts, or one it does not know, is left to the
    /// hosts that can).
    fn claim_for(
        &self,
        worker: &str,
        routes: Option<&[String]>,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<Claim>, TaskError>;

    /// Extends the lease of `attempt` to `now + lease_ms`; fenced like `complete`.
    fn heartbeat(
        &self,
        task_id: i64,
        attempt: u32,
        now: i64,
        lease_ms: i64,
    ) -> Result<(), TaskError>;

    /// Records how `attempt` ended. Rejected with [`TaskError::Stale`] unless `attempt` is the
    /// task's current, running attempt. Returns the task's new status.
    fn complete(
        &self,
        task_id: i64,
        attempt: u32,
        outcome: &Outcome,
        now: i64,
    ) -> Result<Status, TaskError>;

    /// Hands over every task that gave up and was not handed over before: each exactly once.
    fn take_escalations(&self, now: i64) -> Result<Vec<Escalation>, TaskError>;

    /// One task by id.
    fn task(&self, task_id: i64) -> Result<Option<Task>, TaskError>;

    /// Tasks matching `filter`, oldest first.
    fn tasks(&self, filter: &TaskFilter) -> Result<Vec<Task>, TaskError>;

    /// How many tasks are in each status (statuses with none are left out).
    fn counts(&self) -> Result<Vec<(Status, i64)>, TaskError>;

    /// When the longest-waiting claimable task became ready: `now` minus this is the queue's age.
    fn oldest_ready(&self, now: i64) -> Result<Option<i64>, TaskError>;

    /// Tasks created, or finished, in `[since_ms, until_ms)`, or live then, oldest first; at
    /// most `limit` (the newest); with `before`, only tasks with a smaller id (the cursor of the
    /// page after).
    fn active_between(
        &self,
        since_ms: i64,
        until_ms: i64,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Task>, TaskError>;

    /// Everything that happened to a task, in order.
    fn events(&self, task_id: i64) -> Result<Vec<TaskEvent>, TaskError>;

    /// Notes where `attempt`'s runbook runs, so that a daemon starting after the one running it
    /// died can stop what it left before the task runs again. Fenced like `heartbeat`.
    fn note_runbook(
        &self,
        task_id: i64,
        attempt: u32,
        process: &RunbookProcess,
    ) -> Result<(), TaskError>;

    /// The runbooks noted for running tasks, oldest task first.
    fn noted_runbooks(&self) -> Result<Vec<NotedRunbook>, TaskError>;

    /// Word from other processes sharing this queue (other hosts' daemons) that tasks became
    /// claimable, so idle workers need not wait for their next poll. None: this queue has no
    /// such word (one host's queue, whose daemon wakes its own workers), and callers poll.
    fn ready_signal(&self) -> Result<Option<Box<dyn ReadySignal>>, TaskError> {
        Ok(None)
    }
}

/// See [`TaskQueue::ready_signal`].
pub trait ReadySignal: Send {
    /// Waits at most `timeout` for word; true when some came (all that came is taken).
    fn wait(&mut self, timeout: std::time::Duration) -> Result<bool, StoreError>;
}

/// Where a runbook runs: its process group, its leader's start time, and the daemon that
/// started it, each process named by pid and start time (clock ticks after boot) within one
/// boot, so that a pid given since to another process is never taken for it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunbookProcess {
    pub pgid: i64,
    pub leader_started: u64,
    pub daemon_pid: i64,
    pub daemon_started: u64,
    pub boot: String,
}

/// A running task's attempt and where its runbook runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotedRunbook {
    pub task_id: i64,
    pub attempt: u32,
    pub route: String,
    pub identity: String,
    pub process: RunbookProcess,
}

/// A queue that answered an op with the wrong kind of answer, or none: a broken backend.
fn unanswered(answer: Option<Answer>) -> TaskError {
    TaskError::Store(StoreError::Backend {
        store: crate::store_name::TASKS,
        message: format!("the queue answered one op with {answer:?}"),
    })
}
