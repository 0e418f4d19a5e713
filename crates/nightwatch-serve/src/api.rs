//! The JSON API: records, sessions, tasks and alerts, read-only, documented by the OpenAPI
//! document served at `/api/openapi.json` (a test checks every documented path answers).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use nightwatch_ledger::{Filter, Record};
use nightwatch_store::{Task, TaskEvent, TaskFilter};
use nightwatch_tasks::Status;
use serde_json::{Value, json};

use crate::inbox::AlertEvent;
use crate::{Daemon, ServeError};

pub const OPENAPI: &str = include_str!("openapi.json");

/// Records returned when a request names no `limit`, and the most it may ask for.
const DEFAULT_LIMIT: usize = 500;
const MAX_LIMIT: usize = 5000;

pub fn router() -> Router<Arc<Daemon>> {
    Router::new()
        .route(
            "/api/openapi.json",
            get(|| async { ([(header::CONTENT_TYPE, "application/json")], OPENAPI) }),
        )
        .route("/api/records", get(records))
        .route("/api/records/{id}", get(record))
        .route("/api/sessions", get(sessions))
        .route("/api/sessions/{id}", get(session))
        .route("/api/tasks", get(tasks))
        .route("/api/tasks/{id}", get(task))
        .route("/api/alerts", get(alerts))
        .route("/api/alerts/{id}", get(alert))
}

type Params = Query<BTreeMap<String, String>>;

fn bad(why: String) -> Response {
    (StatusCode::BAD_REQUEST, axum::Json(json!({ "error": why }))).into_response()
}

fn not_found(why: String) -> Response {
    (StatusCode::NOT_FOUND, axum::Json(json!({ "error": why }))).into_response()
}

async fn blocking<F>(f: F) -> Response
where
    F: FnOnce() -> Result<Response, ServeError> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({ "error": e.to_string() })),
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(json!({ "error": e.to_string() })),
        )
            .into_response(),
    }
}

/// `since`/`until`: as on the page and in the CLI (see [`crate::web`]): RFC 3339, `now`,
/// `yesterday`, a clock time (`2am`), or a span back from now (`12h`).
pub fn parse_time(key: &str, text: &str, now_ms: i64) -> Result<i64, String> {
    crate::web::instant(key, text, now_ms)
}

struct Window {
    since: i64,
    until: i64,
    limit: usize,
}

/// `limit` as asked (kept within 1 and `max`), else `default`.
fn limit_param(
    params: &BTreeMap<String, String>,
    default: usize,
    max: usize,
) -> Result<usize, String> {
    match params.get("limit") {
        Some(text) => Ok(text
            .parse::<usize>()
            .map_err(|_| format!("limit {text:?} is not a number"))?
            .clamp(1, max)),
        None => Ok(default),
    }
}

fn window(params: &BTreeMap<String, String>, now: i64) -> Result<Window, String> {
    let since = match params.get("since") {
        Some(t) => parse_time("since", t, now)?,
        None => now - 12 * 3_600_000,
    };
    let until = match params.get("until") {
        Some(t) => parse_time("until", t, now)?,
        None => now + 1,
    };
    let limit = limit_param(params, DEFAULT_LIMIT, MAX_LIMIT)?;
    Ok(Window {
        since,
        until,
        limit,
    })
}

/// A record as the API shows it: its own type, so the storage type can change without the API
/// changing with it (and the other way round). Today it has the stored record's fields, with
/// `timestamp` as RFC 3339 text; `openapi.json` documents it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ApiRecord {
    pub id: String,
    pub seq: u64,
    pub event: String,
    pub timestamp: String,
    pub session_id: Option<String>,
    pub actor: ApiActor,
    pub tool: String,
    pub inputs: Value,
    pub outputs: Option<ApiOutputs>,
    pub context: ApiContext,
    pub duration_ms: Option<u64>,
    pub verdict: Option<String>,
    pub rule: Option<String>,
    pub reasons: Vec<String>,
    pub call_id: Option<String>,
    pub redacted: Vec<String>,
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safeguards: Option<Value>,
    pub prev_hash: String,
    pub hash: String,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ApiActor {
    pub kind: String,
    pub id: String,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ApiOutputs {
    pub exit_code: Option<i64>,
    pub stdout: String,
    pub stderr: String,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ApiContext {
    pub triggered_by: Option<String>,
    pub alert_id: Option<String>,
    pub host: Option<String>,
    pub task: Option<String>,
}

impl From<&Record> for ApiRecord {
    fn from(r: &Record) -> ApiRecord {
        ApiRecord {
            id: r.id.clone(),
            seq: r.seq,
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

/// The API's view of each record.
pub fn api_records(records: &[Record]) -> Vec<ApiRecord> {
    records.iter().map(ApiRecord::from).collect()
}

/// The ledger's records in `[since, until)`, the newest `limit`, in order.
pub fn records_between(
    daemon: &Daemon,
    since: i64,
    until: i64,
    before_seq: Option<u64>,
    limit: usize,
) -> Result<Vec<Record>, ServeError> {
    Ok(daemon.reader().query(&Filter {
        since_ms: Some(since),
        until_ms: Some(until),
        before_seq,
        limit: Some(limit),
        ..Filter::default()
    })?)
}

pub fn session_records(daemon: &Daemon, id: &str) -> Result<Vec<Record>, ServeError> {
    Ok(daemon.reader().query(&Filter {
        session: Some(id.to_owned()),
        limit: Some(MAX_LIMIT),
        ..Filter::default()
    })?)
}

async fn records(State(d): State<Arc<Daemon>>, Query(p): Params) -> Response {
    blocking(move || {
        let w = match window(&p, d.now_ms()) {
            Ok(w) => w,
            Err(why) => return Ok(bad(why)),
        };
        let filter = Filter {
            since_ms: Some(w.since),
            until_ms: Some(w.until),
            session: p.get("session").cloned(),
            actor: p.get("actor").cloned(),
            verdict: p.get("verdict").cloned(),
            tool: p.get("tool").cloned(),
            alert: p.get("alert").cloned(),
            event: p.get("event").cloned(),
            after_seq: None,
            before_seq: None,
            limit: Some(w.limit),
        };
        let records = d.reader().query(&filter)?;
        Ok(axum::Json(json!({ "records": api_records(&records) })).into_response())
    })
    .await
}

async fn record(State(d): State<Arc<Daemon>>, Path(id): Path<String>) -> Response {
    blocking(move || {
        Ok(match d.reader().get(&id)? {
            Some(r) => axum::Json(ApiRecord::from(&r)).into_response(),
            None => not_found(format!("no record {id}")),
        })
    })
    .await
}

/// One agent session, summarised from its records.
pub fn session_summary(id: &str, records: &[&Record]) -> Value {
    let first = records.first();
    let last = records.last();
    let calls = records.iter().filter(|r| r.event == "decision").count();
    let refused = records
        .iter()
        .filter(|r| {
            r.event == "decision" && matches!(r.verdict.as_deref(), Some("deny" | "halt" | "ask"))
        })
        .count();
    let actor = records
        .iter()
        .find(|r| r.actor.kind != "dispatcher")
        .or(first)
        .map(|r| json!({ "kind": r.actor.kind, "id": r.actor.id }));
    let context = records
        .iter()
        .find(|r| r.context.alert_id.is_some())
        .or(first);
    json!({
        "id": id,
        "actor": actor,
        "started": first.map(|r| r.timestamp_text()),
        "ended": last.map(|r| r.timestamp_text()),
        "records": records.len(),
        "calls": calls,
        "refused": refused,
        "triggered_by": context.and_then(|r| r.context.triggered_by.clone()),
        "alert_id": context.and_then(|r| r.context.alert_id.clone()),
        "host": context.and_then(|r| r.context.host.clone()),
    })
}

async fn sessions(State(d): State<Arc<Daemon>>, Query(p): Params) -> Response {
    blocking(move || {
        let w = match window(&p, d.now_ms()) {
            Ok(w) => w,
            Err(why) => return Ok(bad(why)),
        };
        let records = records_between(&d, w.since, w.until, None, MAX_LIMIT)?;
        let mut by_session: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
        for r in &records {
            if let Some(s) = &r.session_id {
                by_session.entry(s).or_default().push(r);
            }
        }
        let mut list: Vec<Value> = by_session
            .iter()
            .map(|(id, rs)| session_summary(id, rs))
            .collect();
        list.sort_by(|a, b| a["started"].as_str().cmp(&b["started"].as_str()));
        list.truncate(w.limit);
        Ok(axum::Json(json!({ "sessions": list })).into_response())
    })
    .await
}

async fn session(State(d): State<Arc<Daemon>>, Path(id): Path<String>) -> Response {
    blocking(move || {
        let records = session_records(&d, &id)?;
        if records.is_empty() {
            return Ok(not_found(format!("no records for session {id}")));
        }
        let refs: Vec<&Record> = records.iter().collect();
        Ok(axum::Json(json!({
            "session": session_summary(&id, &refs),
            "records": api_records(&records),
        }))
        .into_response())
    })
    .await
}

pub fn task_json(task: &Task, events: Option<&[TaskEvent]>) -> Value {
    let life = &task.lifecycle;
    let mut v = json!({
        "id": task.id,
        "identity": task.identity,
        "route": task.route,
        "status": life.status.as_str(),
        "attempt": life.attempt,
        "created": nightwatch_ledger::rfc3339(task.created_at),
        "last_seen": nightwatch_ledger::rfc3339(task.last_seen),
        "repeats": task.repeats,
        "ready_at": (life.status == Status::Pending).then(|| nightwatch_ledger::rfc3339(life.ready_at)),
        "lease_until": life.lease_until.map(nightwatch_ledger::rfc3339),
        "worker": life.worker,
        "last_error": life.last_error,
        "finished": life.finished_at.map(nightwatch_ledger::rfc3339),
        "alert": serde_json::from_str::<Value>(&task.alert_json).unwrap_or(Value::Null),
    });
    if let Some(events) = events {
        v["events"] = events
            .iter()
            .map(|e| {
                json!({
                    "seq": e.seq,
                    "at": nightwatch_ledger::rfc3339(e.at),
                    "from": e.from.map(Status::as_str),
                    "to": e.to.as_str(),
                    "why": e.why,
                })
            })
            .collect();
    }
    v
}

async fn tasks(State(d): State<Arc<Daemon>>, Query(p): Params) -> Response {
    blocking(move || {
        let status = match p.get("status") {
            Some(s) => match Status::parse(s) {
                Some(s) => Some(s),
                None => {
                    return Ok(bad(format!(
                        "status {s:?} is not one of pending, running, done, cancelled, gave_up"
                    )));
                }
            },
            None => None,
        };
        let (after, limit) = match page(&p) {
            Ok(page) => page,
            Err(why) => return Ok(bad(why)),
        };
        let identity = p.get("identity").cloned();
        let list = d.tasks.tasks(&TaskFilter {
            identity: identity.clone(),
            status,
            after,
            limit: Some(limit),
        })?;
        let out: Vec<Value> = list.iter().map(|t| task_json(t, None)).collect();
        // A full page may have more after it: the cursor is the last id shown.
        let next = (list.len() == limit).then(|| {
            let last = list.last().map_or(0, |t| t.id);
            let mut query = format!("after={last}&limit={limit}");
            if let Some(status) = status {
                query.push_str(&format!("&status={}", status.as_str()));
            }
            if let Some(identity) = &identity {
                query.push_str(&format!(
                    "&identity={}",
                    percent_encoding::utf8_percent_encode(
                        identity,
                        percent_encoding::NON_ALPHANUMERIC
                    )
                ));
            }
            format!("/api/tasks?{query}")
        });
        Ok(axum::Json(json!({ "tasks": out, "next": next })).into_response())
    })
    .await
}

/// Tasks shown by `/api/tasks` unless `limit` asks for fewer, and the most it may ask for:
/// a page is read and sent whole, so it stays small however many tasks there are.
const TASK_PAGE: usize = 100;
const MAX_TASK_PAGE: usize = 1000;

/// `after` (the cursor: the last id of the page before) and `limit` (1 to the maximum).
fn page(params: &BTreeMap<String, String>) -> Result<(Option<i64>, usize), String> {
    let after = match params.get("after") {
        Some(text) => Some(
            text.trim_start_matches('t')
                .parse::<i64>()
                .map_err(|_| format!("after {text:?} is not a task id"))?,
        ),
        None => None,
    };
    let limit = limit_param(params, TASK_PAGE, MAX_TASK_PAGE)?;
    Ok((after, limit))
}

async fn task(State(d): State<Arc<Daemon>>, Path(id): Path<String>) -> Response {
    blocking(move || {
        let Ok(n) = id.trim_start_matches('t').parse::<i64>() else {
            return Ok(bad(format!("{id:?} is not a task id like 3 or t3")));
        };
        Ok(match d.tasks.task(n)? {
            Some(t) => {
                let events = d.tasks.events(n)?;
                axum::Json(task_json(&t, Some(&events))).into_response()
            }
            None => not_found(format!("no task {n}")),
        })
    })
    .await
}

async fn alerts(State(d): State<Arc<Daemon>>, Query(p): Params) -> Response {
    blocking(move || {
        let w = match window(&p, d.now_ms()) {
            Ok(w) => w,
            Err(why) => return Ok(bad(why)),
        };
        // With a cursor, every arrival after it, oldest first: paging by time would skip
        // arrivals that share a millisecond across a page's edge.
        if let Some(text) = p.get("after") {
            let Ok(after) = text.parse::<i64>() else {
                return Ok(bad(format!("after {text:?} is not an arrival id")));
            };
            let list = d.inbox.after(after, w.limit)?;
            let next = (list.len() == w.limit).then(|| {
                let last = list.last().map_or(after, |a| a.id);
                format!("/api/alerts?after={last}&limit={}", w.limit)
            });
            return Ok(axum::Json(json!({ "alerts": list, "next": next })).into_response());
        }
        let list = d.inbox.between(w.since, w.until, None, w.limit)?;
        // The newest `limit` of the window: say when older ones were left out.
        let truncated = list.len() == w.limit;
        Ok(axum::Json(json!({ "alerts": list, "truncated": truncated })).into_response())
    })
    .await
}

/// Everything about one alert id: its arrivals, its tasks with their events, its records.
pub struct AlertView {
    pub arrivals: Vec<AlertEvent>,
    pub tasks: Vec<(Task, Vec<TaskEvent>)>,
    pub records: Vec<Record>,
}

pub fn alert_view(daemon: &Daemon, alert_id: &str) -> Result<AlertView, ServeError> {
    let arrivals = daemon.inbox.for_alert(alert_id)?;
    let mut task_ids: Vec<i64> = arrivals.iter().filter_map(|a| a.task_id).collect();
    // Tasks a resolution never touched are found by the identity too.
    if let Some(first) = arrivals.first()
        && let Ok(alert) = serde_json::from_value::<nightwatch_intake::Alert>(first.alert.clone())
    {
        for t in daemon.tasks.tasks(&TaskFilter {
            identity: Some(crate::route::task_identity(&alert)),
            ..TaskFilter::default()
        })? {
            task_ids.push(t.id);
        }
    }
    task_ids.sort_unstable();
    task_ids.dedup();
    let mut tasks = Vec::new();
    for id in task_ids {
        if let Some(t) = daemon.tasks.task(id)? {
            let events = daemon.tasks.events(id)?;
            tasks.push((t, events));
        }
    }
    let records = daemon.reader().query(&Filter {
        alert: Some(alert_id.to_owned()),
        limit: Some(MAX_LIMIT),
        ..Filter::default()
    })?;
    Ok(AlertView {
        arrivals,
        tasks,
        records,
    })
}

async fn alert(State(d): State<Arc<Daemon>>, Path(id): Path<String>) -> Response {
    blocking(move || {
        let view = alert_view(&d, &id)?;
        if view.arrivals.is_empty() {
            return Ok(not_found(format!("no alert {id} has arrived")));
        }
        let tasks: Vec<Value> = view
            .tasks
            .iter()
            .map(|(t, e)| task_json(t, Some(e)))
            .collect();
        Ok(axum::Json(json!({
            "alert_id": id,
            "arrivals": view.arrivals,
            "tasks": tasks,
            "records": api_records(&view.records),
        }))
        .into_response())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API's own type shows a record as the API always has (the stored type's JSON), so
    /// separating them changed nothing for clients; a later change to either is deliberate.
    #[test]
    fn the_api_shows_a_record_as_it_always_has() {
        let record = Record {
            id: "r7".into(),
            seq: 7,
            event: "decision".into(),
            timestamp_ms: 1_771_039_042_000,
            session_id: Some("sess_1".into()),
            actor: nightwatch_ledger::RecordActor {
                kind: "agent".into(),
                id: "claude-code".into(),
            },
            tool: "exec".into(),
            inputs: json!({ "command": "df -h" }),
            outputs: Some(nightwatch_ledger::Outputs {
                exit_code: Some(0),
                stdout: "ok".into(),
                stderr: String::new(),
            }),
            context: nightwatch_ledger::RecordContext {
                triggered_by: Some("alert".into()),
                alert_id: None,
                host: Some("web-1".into()),
                task: None,
            },
            duration_ms: Some(12),
            verdict: Some("allow".into()),
            rule: Some("read-only".into()),
            reasons: vec!["read-only".into()],
            call_id: Some("toolu_1".into()),
            redacted: vec![],
            cwd: Some("/srv".into()),
            safeguards: Some(json!({ "fingerprint": "ab" })),
            prev_hash: "0".repeat(64),
            hash: "f".repeat(64),
        };
        let stored = serde_json::to_value(&record).unwrap();
        let shown = serde_json::to_value(ApiRecord::from(&record)).unwrap();
        assert_eq!(shown, stored);
        let bare = Record {
            safeguards: None,
            outputs: None,
            ..record
        };
        assert_eq!(
            serde_json::to_value(ApiRecord::from(&bare)).unwrap(),
            serde_json::to_value(&bare).unwrap()
        );
    }

    #[test]
    fn times_are_rfc3339_or_spans_back_from_now() {
        let now = 10 * 3_600_000;
        assert_eq!(parse_time("since", "2h", now).unwrap(), 8 * 3_600_000);
        assert_eq!(
            parse_time("since", "1970-01-01T01:00:00Z", now).unwrap(),
            3_600_000
        );
        assert!(
            parse_time("since", "soon", now)
                .unwrap_err()
                .contains("RFC 3339")
        );
    }

    /// The API reads times as the CLI does (it refused `2am` and `yesterday` before).
    #[test]
    fn times_take_the_clis_grammar() {
        // 2026-02-14T03:30:00Z; the daemon reads clock times in UTC.
        let now = 1_771_039_800_000;
        let at = |text: &str| parse_time("since", text, now).map(nightwatch_ledger::rfc3339);
        assert_eq!(at("2am").as_deref(), Ok("2026-02-14T02:00:00Z"));
        assert_eq!(at("11pm").as_deref(), Ok("2026-02-13T23:00:00Z"));
        assert_eq!(at("yesterday").as_deref(), Ok("2026-02-13T00:00:00Z"));
        assert_eq!(at("1h30m").as_deref(), Ok("2026-02-14T02:00:00Z"));
        assert_eq!(at("+1h").as_deref(), Ok("2026-02-14T04:30:00Z"));
    }

    #[test]
    fn the_openapi_document_is_json_and_names_every_route() {
        let doc: Value = serde_json::from_str(OPENAPI).expect("openapi.json is JSON");
        assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
        for path in [
            "/hooks/uptime-kuma",
            "/hooks/alertmanager",
            "/hooks/generic/{name}",
            "/healthz",
            "/readyz",
            "/metrics",
            "/api/records",
            "/api/records/{id}",
            "/api/sessions",
            "/api/sessions/{id}",
            "/api/tasks",
            "/api/tasks/{id}",
            "/api/alerts",
            "/api/alerts/{id}",
        ] {
            assert!(doc["paths"].get(path).is_some(), "{path} is not documented");
        }
    }
}
