//! The JSON API's own types: what each route answers, converted from the stores' types in
//! one place, so a storage type can change without the API changing with it. The OpenAPI
//! document is generated from these types (`ToSchema`), so what it says is what is sent.
//!
//! Times are RFC 3339 text in UTC. A field with no value is `null`, never left out (the schema
//! marks such fields required and nullable), except a record's `safeguards` and a task's
//! `events`, which only some replies carry.

use nightwatch_ledger::{Record, rfc3339};
use nightwatch_store::{AlertEvent, Disposition, Task, TaskEvent};
use nightwatch_tasks::Status;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::dispatch::Dispatched;

/// Why a request was refused or could not be answered.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// A sentence that says why, and what to do about it when there is something to do.
    pub error: String,
}

/// One ledger record: a decision, its result, a dispatch, a janitor's sweep and so on.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(as = Record)]
pub struct ApiRecord {
    /// `r` and the sequence number: `r42`.
    pub id: String,
    /// Position in its host's hash chain, from 1.
    pub seq: u64,
    /// The host whose ledger holds it: in a fleet, the host that recorded and shipped it;
    /// a host alone names itself (`null` when it has no name).
    #[schema(required = true)]
    pub host: Option<String>,
    /// `decision`, `result`, `dispatch`, `sweep`, ...
    pub event: String,
    /// When it was recorded, RFC 3339.
    pub timestamp: String,
    #[schema(required = true)]
    pub session_id: Option<String>,
    pub actor: ApiActor,
    /// The tool or action: `Bash`, `exec`, `remove_container`, `runbook`, ...
    pub tool: String,
    /// The action's inputs as the actor gave them (secrets redacted, see `redacted`).
    #[schema(value_type = Object)]
    pub inputs: Value,
    #[schema(required = true)]
    pub outputs: Option<ApiOutputs>,
    pub context: ApiContext,
    #[schema(required = true)]
    pub duration_ms: Option<u64>,
    /// `allow`, `ask`, `halt` or `deny` on a decision; `null` on records that decide nothing.
    #[schema(required = true)]
    pub verdict: Option<String>,
    /// The policy rule that decided.
    #[schema(required = true)]
    pub rule: Option<String>,
    pub reasons: Vec<String>,
    /// The agent's own id of the call, joining a decision to its result.
    #[schema(required = true)]
    pub call_id: Option<String>,
    /// Which inputs were redacted before recording.
    pub redacted: Vec<String>,
    #[schema(required = true)]
    pub cwd: Option<String>,
    /// Pre-flight checks and safeguards run for the action (backups taken, vetoes), when any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub safeguards: Option<Value>,
    /// The hash of the record before this one (64 hex digits).
    pub prev_hash: String,
    /// This record's hash over its content and `prev_hash`.
    pub hash: String,
}

/// Who proposed the action.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(as = Actor)]
pub struct ApiActor {
    /// `agent`, `janitor`, `dispatcher`, `runbook`, ...
    pub kind: String,
    /// The agent's name (`claude-code`), the runbook, the job.
    pub id: String,
}

/// What a call printed and how it exited.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(as = Outputs)]
pub struct ApiOutputs {
    #[schema(required = true)]
    pub exit_code: Option<i64>,
    pub stdout: String,
    pub stderr: String,
}

/// Why the action happened: the alert and task that started it, and where.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(as = Context)]
pub struct ApiContext {
    #[schema(required = true)]
    pub triggered_by: Option<String>,
    #[schema(required = true)]
    pub alert_id: Option<String>,
    #[schema(required = true)]
    pub host: Option<String>,
    #[schema(required = true)]
    pub task: Option<String>,
}

impl ApiRecord {
    /// `r` as the API shows it, held in `host`'s ledger (empty: a host with no name).
    pub fn of(host: &str, r: &Record) -> ApiRecord {
        ApiRecord {
            id: r.id.clone(),
            seq: r.seq,
            host: (!host.is_empty()).then(|| host.to_owned()),
            event: r.event.clone(),
            timestamp: r.timestamp_text(),
            session_id: r.session_id.clone(),
            actor: ApiActor {
                kind: r.actor.kind.clone(),
                id: r.actor.id.clone(),
            },
            tool: r.tool.clone(),
            inputs: r.inputs.clone(),
            outputs: r.outputs.as_ref().map(|o| ApiOutputs {
                exit_code: o.exit_code,
                stdout: o.stdout.clone(),
                stderr: o.stderr.clone(),
            }),
            context: ApiContext {
                triggered_by: r.context.triggered_by.clone(),
                alert_id: r.context.alert_id.clone(),
                host: r.context.host.clone(),
                task: r.context.task.clone(),
            },
            duration_ms: r.duration_ms,
            verdict: r.verdict.clone(),
            rule: r.rule.clone(),
            reasons: r.reasons.clone(),
            call_id: r.call_id.clone(),
            redacted: r.redacted.clone(),
            cwd: r.cwd.clone(),
            safeguards: r.safeguards.clone(),
            prev_hash: r.prev_hash.clone(),
            hash: r.hash.clone(),
        }
    }
}

/// `GET /api/records`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct RecordsPage {
    /// Oldest first: the newest `limit` of the window (before `before`, when given). In a
    /// fleet, every host's (or `host`'s), ordered by time, then host name, then `seq`.
    pub records: Vec<ApiRecord>,
    /// The path of the page of older records in the same window and filters, when this page
    /// is full; following it from page to page reads every record once.
    #[schema(required = true)]
    pub next: Option<String>,
}

/// One agent session (or runbook run), summarised from its records.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(as = Session)]
pub struct SessionSummary {
    pub id: String,
    /// The agent or runbook that worked in it (not the dispatcher that started it).
    #[schema(required = true)]
    pub actor: Option<ApiActor>,
    /// Its first record's time.
    #[schema(required = true)]
    pub started: Option<String>,
    /// Its last record's time.
    #[schema(required = true)]
    pub ended: Option<String>,
    /// Records in the session.
    pub records: usize,
    /// Decisions: the calls it proposed.
    pub calls: usize,
    /// Calls that were not simply allowed (denied, halted or asked).
    pub refused: usize,
    #[schema(required = true)]
    pub triggered_by: Option<String>,
    #[schema(required = true)]
    pub alert_id: Option<String>,
    #[schema(required = true)]
    pub host: Option<String>,
}

impl SessionSummary {
    pub fn of(id: &str, records: &[&Record]) -> SessionSummary {
        let first = records.first();
        let decisions = || records.iter().filter(|r| r.event == "decision");
        let refused = decisions()
            .filter(|r| matches!(r.verdict.as_deref(), Some("deny" | "halt" | "ask")))
            .count();
        let actor = records
            .iter()
            .find(|r| r.actor.kind != "dispatcher")
            .or(first)
            .map(|r| ApiActor {
                kind: r.actor.kind.clone(),
                id: r.actor.id.clone(),
            });
        let context = records
            .iter()
            .find(|r| r.context.alert_id.is_some())
            .or(first);
        SessionSummary {
            id: id.to_owned(),
            actor,
            started: first.map(|r| r.timestamp_text()),
            ended: records.last().map(|r| r.timestamp_text()),
            records: records.len(),
            calls: decisions().count(),
            refused,
            triggered_by: context.and_then(|r| r.context.triggered_by.clone()),
            alert_id: context.and_then(|r| r.context.alert_id.clone()),
            host: context.and_then(|r| r.context.host.clone()),
        }
    }
}

/// `GET /api/sessions`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct SessionsPage {
    /// By start, oldest first.
    pub sessions: Vec<SessionSummary>,
}

/// `GET /api/sessions/{id}`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct SessionDetail {
    pub session: SessionSummary,
    pub records: Vec<ApiRecord>,
}

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Waiting to be claimed once `ready_at` has passed.
    Pending,
    /// Held by a worker under a lease.
    Running,
    /// Finished successfully.
    Done,
    /// The alert resolved before any worker started it.
    Cancelled,
    /// Failed every attempt; needs a person.
    GaveUp,
}

impl From<Status> for TaskState {
    fn from(status: Status) -> TaskState {
        match status {
            Status::Pending => TaskState::Pending,
            Status::Running => TaskState::Running,
            Status::Done => TaskState::Done,
            Status::Cancelled => TaskState::Cancelled,
            Status::GaveUp => TaskState::GaveUp,
        }
    }
}

/// A runbook's work for one alert identity: created by a routed alert, claimed by a worker,
/// retried with backoff, finished or given up.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(as = Task)]
pub struct ApiTask {
    pub id: i64,
    /// The alert identity (`source/identity`) it works for.
    pub identity: String,
    /// The serve.yaml route that runs it.
    pub route: String,
    pub status: TaskState,
    /// Attempts started so far.
    pub attempt: u32,
    pub created: String,
    /// When the alert last arrived again.
    pub last_seen: String,
    /// Repeats of the alert attached while the task was live.
    pub repeats: u32,
    /// When a pending task may be claimed; `null` once it is not pending.
    #[schema(required = true)]
    pub ready_at: Option<String>,
    #[schema(required = true)]
    pub lease_until: Option<String>,
    #[schema(required = true)]
    pub worker: Option<String>,
    #[schema(required = true)]
    pub last_error: Option<String>,
    #[schema(required = true)]
    pub finished: Option<String>,
    /// The alert as stored (the sender's own JSON inside it).
    #[schema(value_type = Object)]
    pub alert: Value,
    /// Its lifecycle, oldest first: only on `GET /api/tasks/{id}` and an alert's tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<ApiTaskEvent>>,
}

/// One step of a task's lifecycle.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(as = TaskEvent)]
pub struct ApiTaskEvent {
    pub seq: i64,
    pub at: String,
    /// `null` for the creation.
    #[schema(required = true)]
    pub from: Option<TaskState>,
    pub to: TaskState,
    pub why: String,
}

impl ApiTask {
    pub fn of(task: &Task, events: Option<&[TaskEvent]>) -> ApiTask {
        let life = &task.lifecycle;
        ApiTask {
            id: task.id,
            identity: task.identity.clone(),
            route: task.route.clone(),
            status: life.status.into(),
            attempt: life.attempt,
            created: rfc3339(task.created_at),
            last_seen: rfc3339(task.last_seen),
            repeats: task.repeats,
            ready_at: (life.status == Status::Pending).then(|| rfc3339(life.ready_at)),
            lease_until: life.lease_until.map(rfc3339),
            worker: life.worker.clone(),
            last_error: life.last_error.clone(),
            finished: life.finished_at.map(rfc3339),
            alert: serde_json::from_str(&task.alert_json).unwrap_or(Value::Null),
            events: events.map(|events| {
                events
                    .iter()
                    .map(|e| ApiTaskEvent {
                        seq: e.seq,
                        at: rfc3339(e.at),
                        from: e.from.map(TaskState::from),
                        to: e.to.into(),
                        why: e.why.clone(),
                    })
                    .collect()
            }),
        }
    }
}

/// `GET /api/tasks`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct TasksPage {
    /// Oldest first.
    pub tasks: Vec<ApiTask>,
    /// The next page's path, or `null` when this page is the last.
    #[schema(required = true)]
    pub next: Option<String>,
}

/// What the dispatcher did with an arriving alert.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AlertDisposition {
    /// A new task was queued for a route.
    Routed,
    /// A task for the same alert identity is still live; the arrival was counted on it.
    Deduplicated,
    /// A task for this identity ran recently (cooldown); no new task.
    Suppressed,
    /// The route reached its limit of tasks per hour; no new task.
    Throttled,
    /// No route matches the alert; nothing runs.
    NoRoute,
    /// The alert resolved and a task that had not started was cancelled.
    Cancelled,
    /// The alert resolved; nothing to cancel.
    Resolved,
    /// A test notification: acknowledged, never runs anything.
    Test,
}

impl From<Disposition> for AlertDisposition {
    fn from(d: Disposition) -> AlertDisposition {
        match d {
            Disposition::Routed => AlertDisposition::Routed,
            Disposition::Deduplicated => AlertDisposition::Deduplicated,
            Disposition::Suppressed => AlertDisposition::Suppressed,
            Disposition::Throttled => AlertDisposition::Throttled,
            Disposition::NoRoute => AlertDisposition::NoRoute,
            Disposition::Cancelled => AlertDisposition::Cancelled,
            Disposition::Resolved => AlertDisposition::Resolved,
            Disposition::Test => AlertDisposition::Test,
        }
    }
}

/// Whether the sender said the problem is on or over.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AlertStatus {
    Firing,
    Resolved,
    /// A sender's "send test" notification.
    Test,
}

/// One arrival of an alert, stored before its sender got a reply, with what became of it.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(as = AlertEvent)]
pub struct ApiArrival {
    /// Arrival number, 1, 2, 3, ... on the host that received it.
    pub id: i64,
    /// When it arrived, RFC 3339.
    pub received: String,
    /// The same instant in Unix milliseconds.
    pub received_ms: i64,
    /// `uptime-kuma`, `alertmanager`, or the generic hook's name.
    pub source: String,
    /// The id every record about this alert carries: the same for its firing and its
    /// resolution.
    pub alert_id: String,
    pub status: AlertStatus,
    pub title: String,
    /// The host the alert is about, when the sender names one.
    #[schema(required = true)]
    pub host: Option<String>,
    /// The alert as read, the sender's raw JSON inside it.
    #[schema(value_type = Object)]
    pub alert: Value,
    /// `null` until the dispatcher settled it.
    #[schema(required = true)]
    pub disposition: Option<AlertDisposition>,
    #[schema(required = true)]
    pub reason: Option<String>,
    #[schema(required = true)]
    pub route: Option<String>,
    #[schema(required = true)]
    pub task_id: Option<i64>,
    /// The ledger record of the disposition, once written (in the receiving host's ledger).
    #[schema(required = true)]
    pub record: Option<String>,
    /// The host whose daemon received it (and numbered it): in a fleet, any host; a host
    /// alone names itself (`null` when it has no name).
    #[schema(required = true)]
    pub received_by: Option<String>,
}

impl ApiArrival {
    /// `a` as the API shows it, received by `host` (empty: a host with no name).
    pub fn of(host: &str, a: &AlertEvent) -> ApiArrival {
        let status = match a.status.as_str() {
            "resolved" => AlertStatus::Resolved,
            "test" => AlertStatus::Test,
            _ => AlertStatus::Firing,
        };
        ApiArrival {
            id: a.id,
            received: rfc3339(a.received_ms),
            received_ms: a.received_ms,
            source: a.source.clone(),
            alert_id: a.alert_id.clone(),
            status,
            title: a.title.clone(),
            host: a.host.clone(),
            alert: a.alert.clone(),
            disposition: a.disposition.map(AlertDisposition::from),
            reason: a.reason.clone(),
            route: a.route.clone(),
            task_id: a.task_id,
            record: a.record.clone(),
            received_by: (!host.is_empty()).then(|| host.to_owned()),
        }
    }
}

/// `GET /api/alerts`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct AlertsPage {
    /// Oldest first. In a fleet, every host's (or `host`'s), ordered by time received, then
    /// the receiving host's name, then its arrival number.
    pub alerts: Vec<ApiArrival>,
    /// With `after`: the next page's path, or `null` when this page is the last. Without it,
    /// always `null` (see `truncated`).
    #[schema(required = true)]
    pub next: Option<String>,
    /// Without `after`: true when the window holds more than `limit` arrivals and only the
    /// newest are shown. With it, always false.
    pub truncated: bool,
}

/// `GET /api/alerts/{id}`: one alert from arrival to resolution.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct AlertDetail {
    pub alert_id: String,
    /// Every arrival of it (firing, repeats, resolved), oldest first; in a fleet, on every
    /// host, in the fleet's order (time received, host name, arrival number).
    pub arrivals: Vec<ApiArrival>,
    /// The tasks it started, each with its events.
    pub tasks: Vec<ApiTask>,
    /// Every record that carries its id.
    pub records: Vec<ApiRecord>,
}

/// The reply to a sender: every alert in its request stored, decided and recorded.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct IntakeReply {
    /// Alerts stored (Alertmanager sends several in one request).
    pub stored: usize,
    pub alerts: Vec<DispatchedAlert>,
}

/// What became of one alert of a request.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(as = Dispatched)]
pub struct DispatchedAlert {
    /// Its arrival number.
    pub arrival: i64,
    pub alert_id: String,
    pub disposition: AlertDisposition,
    pub reason: String,
    /// The task it created or was counted on.
    #[schema(required = true)]
    pub task: Option<i64>,
    /// The ledger record that says so.
    pub record: String,
}

impl IntakeReply {
    pub fn of(dispatched: &[Dispatched]) -> IntakeReply {
        IntakeReply {
            stored: dispatched.len(),
            alerts: dispatched
                .iter()
                .map(|d| DispatchedAlert {
                    arrival: d.arrival,
                    alert_id: d.alert_id.clone(),
                    disposition: d.disposition.into(),
                    reason: d.reason.clone(),
                    task: d.task,
                    record: d.record.clone(),
                })
                .collect(),
        }
    }
}

/// What a robot reports it is about to do (`POST /api/robots/{robot}/actions`).
#[derive(Clone, Debug, serde::Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RobotAction {
    /// The action, the tool name policy judges and rate checks count by: `backup`, `retry`,
    /// `rebuild_host`. 1-64 of `a-z`, `0-9`, `_`, `-`, `.`; not one of the agents' tools
    /// (`exec`, `read`, `write`, `edit`, `fetch`, `mcp__*`).
    pub action: String,
    /// What it acts on (`db1`, a host, a path), recorded with the decision.
    #[serde(default)]
    pub target: Option<String>,
    /// Anything else worth recording (a JSON object).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub details: Option<Value>,
}

/// The verdict on a robot's action, which the robot must obey: only `allow` lets it act.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct RobotVerdict {
    /// `allow`, `ask`, `halt` or `deny`.
    pub verdict: String,
    /// The policy rule that decided.
    #[schema(required = true)]
    pub rule: Option<String>,
    /// Why, in a sentence (a check that matched says so here).
    pub reason: String,
    /// The decision's record in the ledger (`r42`).
    pub record: String,
}
