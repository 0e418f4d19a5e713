//! The JSON API: records, sessions, tasks and alerts, read-only. Each route's reply is one of
//! the types in [`wire`], and the OpenAPI document served at `/api/openapi.json` is generated
//! from those types and the routes' annotations ([`openapi`]), so it cannot drift from what is
//! sent; a live test validates every route's replies against it.

pub mod wire;

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use nightwatch_ledger::{Filter, Record};
use nightwatch_store::{
    ArrivalCursor, FleetArrival, FleetCursor, FleetRecord, Task, TaskEvent, TaskFilter,
};
use nightwatch_tasks::Status;
use serde::Deserialize;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{IntoParams, Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::inbox::AlertEvent;
use crate::web::{clip, enc};
use crate::{Daemon, ServeError};
pub use wire::{
    AlertDetail, AlertsPage, ApiArrival, ApiRecord, ApiTask, ErrorBody, RecordsPage, SessionDetail,
    SessionSummary, SessionsPage, TasksPage,
};

/// Records returned when a request names no `limit`, and the most it may ask for.
const DEFAULT_LIMIT: usize = 500;
const MAX_LIMIT: usize = 5000;

/// The API's routes, each registered with its documentation.
pub fn routes() -> OpenApiRouter<Arc<Daemon>> {
    OpenApiRouter::new()
        .routes(routes!(openapi_document))
        .routes(routes!(records))
        .routes(routes!(record))
        .routes(routes!(sessions))
        .routes(routes!(session))
        .routes(routes!(tasks))
        .routes(routes!(task))
        .routes(routes!(alerts))
        .routes(routes!(alert))
}

/// The whole daemon's OpenAPI document (hooks, probes, metrics and the API), generated from
/// the documented routes of [`crate::http::documented_routes`].
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut doc = Document::openapi();
    doc.merge(crate::http::documented_routes().into_openapi());
    doc
}

/// The document as served, made once.
static OPENAPI_JSON: LazyLock<String> = LazyLock::new(|| {
    openapi().to_pretty_json().unwrap_or_else(|e| {
        format!("{{\"error\":\"the OpenAPI document did not serialise: {e}\"}}")
    })
});

#[derive(OpenApi)]
#[openapi(
    info(
        title = "nightwatch serve",
        description = "Monitoring webhooks in; tasks, runbook sessions and the ledger out. Read-only \
                       JSON API under /api. Each source may require its own secret (serve.yaml: \
                       sources.<name>.auth): a bearer token or a header of the operator's choosing. \
                       Reading (the API, the pages and /metrics) asks for the readers' secret when \
                       serve.yaml sets one (readers.auth); /healthz, /readyz and the hooks never do. \
                       Times in queries (since, until) take the CLI's grammar: RFC 3339, a date, \
                       `now`, `today`, `yesterday`, a clock time (`2am`, `14:30`, UTC), a span back \
                       from now (`12h`, `1h30m`, `2h ago`) or ahead (`+1h`).",
    ),
    modifiers(&SecuritySchemes),
    tags(
        (name = "hooks", description = "Monitoring senders deliver alerts here"),
        (name = "probes", description = "Liveness, readiness and metrics"),
        (name = "api", description = "The ledger, sessions, tasks and alerts, read-only"),
    )
)]
struct Document;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "header",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Nightwatch-Token",
                "Any header name configured in serve.yaml",
            ))),
        );
        components.add_security_scheme(
            "readers",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The readers' secret (serve.yaml: readers.auth), when set; a browser \
                         may send it as the Basic password",
                    ))
                    .build(),
            ),
        );
    }
}

/// A refusal or failure, sent as [`ErrorBody`].
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    why: String,
}

impl ApiError {
    pub fn new(status: StatusCode, why: impl Into<String>) -> ApiError {
        ApiError {
            status,
            why: why.into(),
        }
    }

    fn bad(why: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, why)
    }

    fn not_found(why: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, why)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(ErrorBody { error: self.why })).into_response()
    }
}

/// A store that cannot answer is a 503: the request may succeed later.
impl From<ServeError> for ApiError {
    fn from(e: ServeError) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> ApiError {
        ApiError::bad(format!(
            "the query string cannot be read: {}",
            e.body_text()
        ))
    }
}

type Reply<T> = Result<Json<T>, ApiError>;

/// Runs store reads off the async workers.
async fn blocking<T, F>(f: F) -> Reply<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result.map(Json),
        Err(e) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("reading failed: {e}"),
        )),
    }
}

/// `since`/`until`: as on the page and in the CLI (see [`crate::web`]): RFC 3339, `now`,
/// `yesterday`, a clock time (`2am`), or a span back from now (`12h`).
pub fn parse_time(key: &str, text: &str, now_ms: i64) -> Result<i64, String> {
    crate::web::instant(key, text, now_ms)
}

/// The window every time-bounded list takes. Values are read as text and parsed here, so a
/// bad one is refused with a sentence, not a deserializer's message.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WindowQuery {
    /// From this time (default: 12 hours before `until`'s default, now).
    #[param(example = "2am")]
    since: Option<String>,
    /// Up to this time (default: now).
    #[param(example = "now")]
    until: Option<String>,
    /// At most this many, the newest (default 500, at most 5000).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 5000)]
    limit: Option<String>,
}

/// Filters of `GET /api/records`; each narrows to exact matches.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RecordFilters {
    /// Only this host's records: in a fleet, those the host recorded (a host alone holds only
    /// its own, so another name finds none).
    #[param(example = "web-1")]
    host: Option<String>,
    /// A session id.
    session: Option<String>,
    /// An actor's kind or id (`agent`, `claude-code`, `janitor`).
    actor: Option<String>,
    /// `allow`, `ask`, `halt` or `deny`.
    verdict: Option<String>,
    /// A tool name (`Bash`, `exec`, `remove_container`).
    tool: Option<String>,
    /// An alert id (the records' `context.alert_id`).
    alert: Option<String>,
    /// `decision`, `result`, `dispatch`, ...
    event: Option<String>,
}

/// The cursor of `GET /api/records`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RecordsBefore {
    /// Only records older than this place (the `next` link of the page before carries it).
    before: Option<String>,
}

/// The longest host name a request may name: a DNS name's 253 characters, and a little room.
const MAX_HOST: usize = 255;

/// A host's name as a request gives it (`host=`): as the host names itself in the fleet
/// (`NIGHTWATCH_HOST`, else its machine name), 1 to 255 bytes without spaces, control
/// characters or bytes that are not UTF-8. The error is a sentence for a 400.
pub fn host_param(text: &str) -> Result<String, String> {
    let host = text.trim();
    if host.is_empty() {
        return Err(
            "host is empty: name a host (host=web-1), or leave host out for every host".into(),
        );
    }
    if host.len() > MAX_HOST {
        return Err(format!(
            "host is {} bytes long; a host's name is at most {MAX_HOST}",
            host.len()
        ));
    }
    // U+FFFD is what bytes that are not UTF-8 were read as: no host's name.
    let odd = |c: &char| c.is_whitespace() || c.is_control() || *c == char::REPLACEMENT_CHARACTER;
    if let Some(c) = host.chars().find(odd) {
        return Err(format!(
            "host {:?} holds {c:?}, which no host's name has",
            clip(host, 64).0
        ));
    }
    Ok(host.to_owned())
}

/// The `host=` a request gave, if any, read by [`host_param`]; a refusal is a 400.
fn host_filter(given: Option<&str>) -> Result<Option<String>, ApiError> {
    given.map(host_param).transpose().map_err(ApiError::bad)
}

/// A place in the records' order as a link carries it: `<timestamp_ms>.<seq>.<host>` (see
/// [`record_cursor`]).
pub fn cursor_text(cursor: &FleetCursor) -> String {
    format!("{}.{}.{}", cursor.timestamp_ms, cursor.seq, cursor.host)
}

/// Reads what [`cursor_text`] wrote; `key` names the parameter in the error.
pub fn record_cursor(key: &str, text: &str) -> Result<FleetCursor, String> {
    let (timestamp_ms, seq, host) = place(key, text, "the records")?;
    Ok(FleetCursor {
        timestamp_ms,
        host,
        seq: seq as u64,
    })
}

/// A place in the arrivals' order as a link carries it: `<received_ms>.<id>.<host>` (see
/// [`arrival_cursor`]).
pub fn arrival_cursor_text(cursor: &ArrivalCursor) -> String {
    format!("{}.{}.{}", cursor.received_ms, cursor.id, cursor.host)
}

/// Reads what [`arrival_cursor_text`] wrote; `key` names the parameter in the error.
pub fn arrival_cursor(key: &str, text: &str) -> Result<ArrivalCursor, String> {
    let (received_ms, id, host) = place(key, text, "the arrivals")?;
    Ok(ArrivalCursor {
        received_ms,
        host,
        id,
    })
}

/// `<time>.<number>.<host>`: a time in Unix milliseconds, a number from 0 to `i64::MAX`, and
/// a host's name as `host=` takes it (empty only at the end); `among` names what it is a
/// place among, for the error.
fn place(key: &str, text: &str, among: &str) -> Result<(i64, i64, String), String> {
    let bad = || {
        format!(
            "{key} {:?} is not a place among {among} (the `next` link of the page before \
             carries one)",
            clip(text, 64).0
        )
    };
    let mut parts = text.splitn(3, '.');
    let (Some(at), Some(number), Some(host)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let at = at.parse::<i64>().map_err(|_| bad())?;
    let number = number
        .parse::<u64>()
        .ok()
        .and_then(|n| i64::try_from(n).ok())
        .ok_or_else(bad)?;
    // The end names no host; any other place names one as `host=` would.
    if !host.is_empty() && host_param(host).ok().as_deref() != Some(host) {
        return Err(bad());
    }
    Ok((at, number, host.to_owned()))
}

struct Window {
    since: i64,
    until: i64,
    limit: usize,
}

/// `limit` as asked (kept within 1 and `max`), else `default`.
fn limit_param(limit: Option<&str>, default: usize, max: usize) -> Result<usize, ApiError> {
    match limit {
        Some(text) => Ok(text
            .trim()
            .parse::<usize>()
            .map_err(|_| ApiError::bad(format!("limit {text:?} is not a number")))?
            .clamp(1, max)),
        None => Ok(default),
    }
}

impl WindowQuery {
    fn window(&self, now: i64) -> Result<Window, ApiError> {
        let since = match &self.since {
            Some(t) => parse_time("since", t, now).map_err(ApiError::bad)?,
            None => now - 12 * 3_600_000,
        };
        let until = match &self.until {
            Some(t) => parse_time("until", t, now).map_err(ApiError::bad)?,
            None => now + 1,
        };
        let limit = limit_param(self.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
        Ok(Window {
            since,
            until,
            limit,
        })
    }
}

/// The ledger as the daemon shows it, newest first: in a fleet, every host's records as the
/// fleet holds them (a host's newest arrive as it ships them, within seconds), or only
/// `host`'s; a host alone, its own ledger (another `host` has none there), in `seq` order.
/// At most `filter.limit`, after `before` (the last record of the page before).
pub fn ledger_page(
    daemon: &Daemon,
    host: Option<&str>,
    filter: &Filter,
    before: Option<&FleetCursor>,
) -> Result<Vec<FleetRecord>, ServeError> {
    if let Some(fleet) = &daemon.fleet {
        return Ok(fleet.ledger.records(host, filter, before)?);
    }
    let own = daemon.edges.host().unwrap_or_default();
    if host.is_some_and(|h| h != own) {
        return Ok(Vec::new());
    }
    let before_seq = match (before.map(|b| b.seq), filter.before_seq) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut records = daemon.reader().query(&Filter {
        before_seq,
        ..filter.clone()
    })?;
    records.reverse();
    Ok(records
        .into_iter()
        .map(|record| FleetRecord {
            host: own.clone(),
            record,
        })
        .collect())
}

/// The inbox as the daemon shows it: in a fleet, every host's arrivals (or only `host`'s),
/// each with the host that received it; a host alone, its own (another `host` has none
/// there), paged by its own arrival numbers. Received in `[since_ms, until_ms)`, oldest first,
/// at most `limit` (the newest), before `before` (the oldest of the page after).
pub fn arrivals_between(
    daemon: &Daemon,
    host: Option<&str>,
    since_ms: i64,
    until_ms: i64,
    before: Option<&ArrivalCursor>,
    limit: usize,
) -> Result<Vec<FleetArrival>, ServeError> {
    if let Some(fleet) = &daemon.fleet {
        return Ok(fleet
            .inbox
            .between(host, since_ms, until_ms, before, limit)?);
    }
    own_arrivals(daemon, host, |inbox| {
        inbox.between(since_ms, until_ms, before.map(|b| b.id), limit)
    })
}

/// Every arrival after `after`, oldest first, at most `limit`, as [`arrivals_between`] reads
/// them.
pub fn arrivals_after(
    daemon: &Daemon,
    host: Option<&str>,
    after: &ArrivalCursor,
    limit: usize,
) -> Result<Vec<FleetArrival>, ServeError> {
    if let Some(fleet) = &daemon.fleet {
        return Ok(fleet.inbox.after(host, after, limit)?);
    }
    own_arrivals(daemon, host, |inbox| inbox.after(after.id, limit))
}

/// Every arrival of `alert_id`: in a fleet, on every host.
pub fn alert_arrivals(daemon: &Daemon, alert_id: &str) -> Result<Vec<FleetArrival>, ServeError> {
    if let Some(fleet) = &daemon.fleet {
        return Ok(fleet.inbox.for_alert(alert_id)?);
    }
    own_arrivals(daemon, None, |inbox| inbox.for_alert(alert_id))
}

/// A host alone: what `read` finds in its own inbox, named by its own host (none for another).
fn own_arrivals(
    daemon: &Daemon,
    host: Option<&str>,
    read: impl FnOnce(
        &dyn crate::inbox::AlertInbox,
    ) -> Result<Vec<AlertEvent>, nightwatch_store::StoreError>,
) -> Result<Vec<FleetArrival>, ServeError> {
    let own = daemon.edges.host().unwrap_or_default();
    if host.is_some_and(|h| h != own) {
        return Ok(Vec::new());
    }
    Ok(read(daemon.inbox.as_ref())?
        .into_iter()
        .map(|arrival| FleetArrival {
            host: own.clone(),
            arrival,
        })
        .collect())
}

pub fn session_records(daemon: &Daemon, id: &str) -> Result<Vec<FleetRecord>, ServeError> {
    let filter = Filter {
        session: Some(id.to_owned()),
        limit: Some(MAX_LIMIT),
        ..Filter::default()
    };
    let own = daemon.edges.host().unwrap_or_default();
    let mut records: Vec<FleetRecord> = daemon
        .reader()
        .query(&filter)?
        .into_iter()
        .map(|record| FleetRecord {
            host: own.clone(),
            record,
        })
        .collect();
    if let Some(fleet) = &daemon.fleet {
        records = with_unshipped(fleet.ledger.records(None, &filter, None)?, records);
    }
    Ok(records)
}

/// A session's records as the fleet holds them, with this host's own as written: what it has
/// not shipped yet shows at once, what it has shipped shows once. In the fleet's order, the
/// newest [`MAX_LIMIT`] of them.
fn with_unshipped(fleet: Vec<FleetRecord>, own: Vec<FleetRecord>) -> Vec<FleetRecord> {
    let mut records = fleet;
    records.extend(own);
    records.sort_by_key(FleetCursor::of);
    records.dedup_by(|a, b| a.host == b.host && a.record.seq == b.record.seq);
    let keep_from = records.len().saturating_sub(MAX_LIMIT);
    records.drain(..keep_from);
    records
}

/// This document.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "api",
    responses(
        (status = 200, description = "The OpenAPI 3.1 document of this daemon", body = serde_json::Value),
        (status = 401, description = "The readers' secret is set and the request did not carry it", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn openapi_document() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        OPENAPI_JSON.as_str(),
    )
        .into_response()
}

/// Ledger records in a time window, filtered: in a fleet, every host's.
#[utoipa::path(
    get,
    path = "/api/records",
    tag = "api",
    params(WindowQuery, RecordFilters, RecordsBefore),
    responses(
        (status = 200, description = "The newest `limit` records of the window, oldest first, and the path of the older ones", body = RecordsPage),
        (status = 400, description = "A parameter is refused; the error says why", body = ErrorBody),
        (status = 401, description = "The readers' secret is set and the request did not carry it", body = ErrorBody),
        (status = 503, description = "The ledger cannot be read now", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn records(
    State(d): State<Arc<Daemon>>,
    window: Result<Query<WindowQuery>, QueryRejection>,
    filters: Result<Query<RecordFilters>, QueryRejection>,
    cursor: Result<Query<RecordsBefore>, QueryRejection>,
) -> Reply<RecordsPage> {
    let Query(window) = window?;
    let Query(f) = filters?;
    let Query(cursor) = cursor?;
    let host = host_filter(f.host.as_deref())?;
    let before = cursor
        .before
        .as_deref()
        .map(|text| record_cursor("before", text))
        .transpose()
        .map_err(ApiError::bad)?;
    blocking(move || {
        let w = window.window(d.now_ms())?;
        let filter = Filter {
            since_ms: Some(w.since),
            until_ms: Some(w.until),
            session: f.session,
            actor: f.actor,
            verdict: f.verdict,
            tool: f.tool,
            alert: f.alert,
            event: f.event,
            after_seq: None,
            before_seq: None,
            limit: Some(w.limit),
        };
        let mut page = ledger_page(&d, host.as_deref(), &filter, before.as_ref())?;
        // A full page may have older records: the next page goes on from its oldest, in the
        // same window (as times, so it does not move) and filters.
        let next = page.last().filter(|_| page.len() == w.limit).map(|oldest| {
            let mut query = format!(
                "since={}&until={}&limit={}&before={}",
                enc(&nightwatch_ledger::rfc3339(w.since)),
                enc(&nightwatch_ledger::rfc3339(w.until)),
                w.limit,
                enc(&cursor_text(&FleetCursor::of(oldest)))
            );
            for (key, value) in [
                ("host", &host),
                ("session", &filter.session),
                ("actor", &filter.actor),
                ("verdict", &filter.verdict),
                ("tool", &filter.tool),
                ("alert", &filter.alert),
                ("event", &filter.event),
            ] {
                if let Some(value) = value {
                    query.push_str(&format!("&{key}={}", enc(value)));
                }
            }
            format!("/api/records?{query}")
        });
        page.reverse();
        Ok(RecordsPage {
            records: page
                .iter()
                .map(|r| ApiRecord::of(&r.host, &r.record))
                .collect(),
            next,
        })
    })
    .await
}

/// Whose ledger `GET /api/records/{id}` reads.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RecordHost {
    /// The host whose ledger holds the record (every host numbers its own: `r42` is on each).
    /// This daemon's host unless given; in a fleet, any host's as the fleet holds it. Every
    /// record the API and pages show names its `host`, and their links carry it.
    #[param(example = "web-1")]
    host: Option<String>,
}

/// One record by id, from this host's ledger or `host`'s.
#[utoipa::path(
    get,
    path = "/api/records/{id}",
    tag = "api",
    params(("id" = String, Path, description = "A record id, such as r42"), RecordHost),
    responses(
        (status = 200, description = "The record", body = ApiRecord),
        (status = 400, description = "A parameter is refused; the error says why", body = ErrorBody),
        (status = 401, description = "The readers' secret is set and the request did not carry it", body = ErrorBody),
        (status = 404, description = "No such record", body = ErrorBody),
        (status = 503, description = "The ledger cannot be read now", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn record(
    State(d): State<Arc<Daemon>>,
    Path(id): Path<String>,
    place: Result<Query<RecordHost>, QueryRejection>,
) -> Reply<ApiRecord> {
    let Query(place) = place?;
    let host = host_filter(place.host.as_deref())?;
    blocking(move || {
        let own = d.edges.host().unwrap_or_default();
        let found = match (&d.fleet, host) {
            (Some(fleet), Some(other)) if other != own => fleet
                .ledger
                .host_ledger(&other)
                .and_then(|chain| chain.get(&id))
                .map_err(ServeError::from)?
                .map(|r| (other, r)),
            (None, Some(other)) if other != own => {
                return Err(ApiError::not_found(format!(
                    "no record {id} on {other}: this daemon is not in a fleet, and holds only its own host's records"
                )));
            }
            _ => d
                .reader()
                .get(&id)
                .map_err(ServeError::from)?
                .map(|r| (own, r)),
        };
        match found {
            Some((host, r)) => Ok(ApiRecord::of(&host, &r)),
            None => Err(ApiError::not_found(format!("no record {id}"))),
        }
    })
    .await
}

/// Agent sessions and runbook runs that have records in a time window: in a fleet, every host's.
#[utoipa::path(
    get,
    path = "/api/sessions",
    tag = "api",
    params(WindowQuery),
    responses(
        (status = 200, description = "Sessions by start, oldest first", body = SessionsPage),
        (status = 400, description = "A parameter is refused; the error says why", body = ErrorBody),
        (status = 401, description = "The readers' secret is set and the request did not carry it", body = ErrorBody),
        (status = 503, description = "The ledger cannot be read now", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn sessions(
    State(d): State<Arc<Daemon>>,
    window: Result<Query<WindowQuery>, QueryRejection>,
) -> Reply<SessionsPage> {
    let Query(window) = window?;
    blocking(move || {
        let w = window.window(d.now_ms())?;
        // In a fleet, every host's sessions (see `ledger_page`).
        let window = Filter {
            since_ms: Some(w.since),
            until_ms: Some(w.until),
            limit: Some(MAX_LIMIT),
            ..Filter::default()
        };
        let mut records = ledger_page(&d, None, &window, None)?;
        records.reverse();
        let mut by_session: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
        for r in records.iter().map(|r| &r.record) {
            if let Some(s) = &r.session_id {
                by_session.entry(s).or_default().push(r);
            }
        }
        let mut sessions: Vec<SessionSummary> = by_session
            .iter()
            .map(|(id, rs)| SessionSummary::of(id, rs))
            .collect();
        sessions.sort_by(|a, b| a.started.cmp(&b.started));
        sessions.truncate(w.limit);
        Ok(SessionsPage { sessions })
    })
    .await
}

/// One session: its summary and every record, each naming the host that holds it (in a
/// fleet, every host's records of the session).
#[utoipa::path(
    get,
    path = "/api/sessions/{id}",
    tag = "api",
    params(("id" = String, Path, description = "A session id")),
    responses(
        (status = 200, description = "The session and its records, in order", body = SessionDetail),
        (status = 401, description = "The readers' secret is set and the request did not carry it", body = ErrorBody),
        (status = 404, description = "No records carry this session id", body = ErrorBody),
        (status = 503, description = "The ledger cannot be read now", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn session(State(d): State<Arc<Daemon>>, Path(id): Path<String>) -> Reply<SessionDetail> {
    blocking(move || {
        let records = session_records(&d, &id)?;
        if records.is_empty() {
            return Err(ApiError::not_found(format!("no records for session {id}")));
        }
        let refs: Vec<&Record> = records.iter().map(|r| &r.record).collect();
        Ok(SessionDetail {
            session: SessionSummary::of(&id, &refs),
            records: records
                .iter()
                .map(|r| ApiRecord::of(&r.host, &r.record))
                .collect(),
        })
    })
    .await
}

/// Tasks shown by `/api/tasks` unless `limit` asks for fewer, and the most it may ask for:
/// a page is read and sent whole, so it stays small however many tasks there are.
const TASK_PAGE: usize = 100;
const MAX_TASK_PAGE: usize = 1000;

/// A page of `GET /api/tasks`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TaskQuery {
    /// `pending`, `running`, `done`, `cancelled` or `gave_up`.
    #[param(value_type = Option<wire::TaskState>)]
    status: Option<String>,
    /// The alert identity (`source/identity`).
    identity: Option<String>,
    /// Only tasks a worker of this host claimed last (in a fleet, any host's daemon shows
    /// every host's tasks).
    #[param(example = "web-1")]
    host: Option<String>,
    /// The cursor: only tasks after this id (the last id of the page before; `next` carries it).
    #[param(value_type = Option<i64>)]
    after: Option<String>,
    /// Tasks in the page: 100 unless given, at most 1000.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    limit: Option<String>,
}

/// Tasks, oldest first, a page at a time.
#[utoipa::path(
    get,
    path = "/api/tasks",
    tag = "api",
    params(TaskQuery),
    responses(
        (status = 200, description = "A page of tasks and the next page's path", body = TasksPage),
        (status = 400, description = "A parameter is refused; the error says why", body = ErrorBody),
        (status = 401, description = "The readers' secret is set and the request did not carry it", body = ErrorBody),
        (status = 503, description = "The task queue cannot be read now", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn tasks(
    State(d): State<Arc<Daemon>>,
    query: Result<Query<TaskQuery>, QueryRejection>,
) -> Reply<TasksPage> {
    let Query(q) = query?;
    let status = match &q.status {
        Some(s) => Some(Status::parse(s).ok_or_else(|| {
            ApiError::bad(format!(
                "status {s:?} is not one of pending, running, done, cancelled, gave_up"
            ))
        })?),
        None => None,
    };
    let after = match &q.after {
        Some(text) => Some(
            text.trim_start_matches('t')
                .parse::<i64>()
                .map_err(|_| ApiError::bad(format!("after {text:?} is not a task id")))?,
        ),
        None => None,
    };
    let limit = limit_param(q.limit.as_deref(), TASK_PAGE, MAX_TASK_PAGE)?;
    let host = host_filter(q.host.as_deref())?;
    blocking(move || {
        let list = d
            .tasks
            .tasks(&TaskFilter {
                identity: q.identity.clone(),
                status,
                after,
                worker_prefix: host.as_deref().map(crate::runner::workers_of),
                limit: Some(limit),
            })
            .map_err(ServeError::from)?;
        // A full page may have more after it: the cursor is the last id shown.
        let next = (list.len() == limit).then(|| {
            let last = list.last().map_or(0, |t| t.id);
            let mut query = format!("after={last}&limit={limit}");
            if let Some(status) = status {
                query.push_str(&format!("&status={}", status.as_str()));
            }
            if let Some(host) = &host {
                query.push_str(&format!("&host={}", enc(host)));
            }
            if let Some(identity) = &q.identity {
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
        Ok(TasksPage {
            tasks: list.iter().map(|t| ApiTask::of(t, None)).collect(),
            next,
        })
    })
    .await
}

/// One task with its lifecycle.
#[utoipa::path(
    get,
    path = "/api/tasks/{id}",
    tag = "api",
    params(("id" = String, Path, description = "A task id, such as 3 or t3")),
    responses(
        (status = 200, description = "The task and its events", body = ApiTask),
        (status = 400, description = "Not a task id", body = ErrorBody),
        (status = 401, description = "The readers' secret is set and the request did not carry it", body = ErrorBody),
        (status = 404, description = "No such task", body = ErrorBody),
        (status = 503, description = "The task queue cannot be read now", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn task(State(d): State<Arc<Daemon>>, Path(id): Path<String>) -> Reply<ApiTask> {
    let Ok(n) = id.trim_start_matches('t').parse::<i64>() else {
        return Err(ApiError::bad(format!(
            "{id:?} is not a task id like 3 or t3"
        )));
    };
    blocking(move || match d.tasks.task(n).map_err(ServeError::from)? {
        Some(t) => {
            let events = d.tasks.events(n).map_err(ServeError::from)?;
            Ok(ApiTask::of(&t, Some(&events)))
        }
        None => Err(ApiError::not_found(format!("no task {n}"))),
    })
    .await
}

/// The host and cursor of `GET /api/alerts`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ArrivalsQuery {
    /// Only the arrivals this host's daemon received (a host alone holds only its own, so
    /// another name finds none).
    #[param(example = "web-1")]
    host: Option<String>,
    /// Every arrival after this place, oldest first, instead of the window's newest: the
    /// `next` link of the page before carries it (`<received_ms>.<id>.<host>`, the fleet's
    /// order: time received, host name, the host's arrival number); `0` starts from the
    /// first. A host alone also takes an arrival number, as before.
    #[param(example = "0")]
    after: Option<String>,
}

/// Where `GET /api/alerts?after=` starts: a place, or (a host alone's, as before) an arrival
/// number; in a fleet, where arrivals are numbered per host, a number other than 0 names no
/// one place and is refused.
fn arrivals_after_param(text: &str, fleet: bool) -> Result<ArrivalCursor, String> {
    if let Ok(id) = text.parse::<i64>() {
        if fleet && id > 0 {
            return Err(format!(
                "after {id} is an arrival number, and in a fleet each host numbers its own: \
                 start from after=0 and follow `next` (it carries <received_ms>.<id>.<host>)"
            ));
        }
        return Ok(ArrivalCursor {
            id,
            ..ArrivalCursor::end()
        });
    }
    arrival_cursor("after", text).map_err(|_| {
        format!(
            "after {:?} is not an arrival number or a place among the arrivals (the `next` \
             link of the page before carries one)",
            clip(text, 64).0
        )
    })
}

/// Alert arrivals: the newest of a time window, or every arrival after a cursor. In a fleet,
/// every host's, each naming the host that received it.
#[utoipa::path(
    get,
    path = "/api/alerts",
    tag = "api",
    params(WindowQuery, ArrivalsQuery),
    responses(
        (status = 200, description = "Arrivals, oldest first, each with what became of it", body = AlertsPage),
        (status = 400, description = "A parameter is refused; the error says why", body = ErrorBody),
        (status = 401, description = "The readers' secret is set and the request did not carry it", body = ErrorBody),
        (status = 503, description = "The inbox cannot be read now", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn alerts(
    State(d): State<Arc<Daemon>>,
    window: Result<Query<WindowQuery>, QueryRejection>,
    query: Result<Query<ArrivalsQuery>, QueryRejection>,
) -> Reply<AlertsPage> {
    let Query(window) = window?;
    let Query(query) = query?;
    let host = host_filter(query.host.as_deref())?;
    let after = query
        .after
        .as_deref()
        .map(|text| arrivals_after_param(text, d.fleet.is_some()))
        .transpose()
        .map_err(ApiError::bad)?;
    blocking(move || {
        let w = window.window(d.now_ms())?;
        let shown = |list: &[FleetArrival]| {
            list.iter()
                .map(|a| ApiArrival::of(&a.host, &a.arrival))
                .collect()
        };
        // With a cursor, every arrival after it, oldest first, by a place that is total
        // across hosts: paging by time alone would skip arrivals that share a millisecond
        // across a page's edge, and by number would mix hosts' numbers.
        if let Some(after) = after {
            let list = arrivals_after(&d, host.as_deref(), &after, w.limit)?;
            let next = list.last().filter(|_| list.len() == w.limit).map(|last| {
                let mut next = format!(
                    "/api/alerts?after={}&limit={}",
                    enc(&arrival_cursor_text(&ArrivalCursor::of(last))),
                    w.limit
                );
                if let Some(host) = &host {
                    next.push_str(&format!("&host={}", enc(host)));
                }
                next
            });
            return Ok(AlertsPage {
                alerts: shown(&list),
                next,
                truncated: false,
            });
        }
        let list = arrivals_between(&d, host.as_deref(), w.since, w.until, None, w.limit)?;
        // The newest `limit` of the window: say when older ones were left out.
        Ok(AlertsPage {
            truncated: list.len() == w.limit,
            alerts: shown(&list),
            next: None,
        })
    })
    .await
}

/// Everything about one alert id: its arrivals (in a fleet, on every host), its tasks with
/// their events, its records (this host's ledger).
pub struct AlertView {
    pub arrivals: Vec<FleetArrival>,
    pub tasks: Vec<(Task, Vec<TaskEvent>)>,
    /// Oldest first; in a fleet, every host's as the fleet holds them (see [`ledger_page`]).
    pub records: Vec<FleetRecord>,
}

pub fn alert_view(daemon: &Daemon, alert_id: &str) -> Result<AlertView, ServeError> {
    let arrivals = alert_arrivals(daemon, alert_id)?;
    let mut task_ids: Vec<i64> = arrivals.iter().filter_map(|a| a.arrival.task_id).collect();
    // Tasks a resolution never touched are found by the identity too.
    if let Some(first) = arrivals.first()
        && let Ok(alert) =
            serde_json::from_value::<nightwatch_intake::Alert>(first.arrival.alert.clone())
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
    let mut records = ledger_page(
        daemon,
        None,
        &Filter {
            alert: Some(alert_id.to_owned()),
            limit: Some(MAX_LIMIT),
            ..Filter::default()
        },
        None,
    )?;
    records.reverse();
    Ok(AlertView {
        arrivals,
        tasks,
        records,
    })
}

/// One alert from arrival to resolution.
#[utoipa::path(
    get,
    path = "/api/alerts/{id}",
    tag = "api",
    params(("id" = String, Path, description = "An alert id, such as alert_88c2d1")),
    responses(
        (status = 200, description = "Its arrivals (in a fleet, on every host), tasks and records", body = AlertDetail),
        (status = 401, description = "The readers' secret is set and the request did not carry it", body = ErrorBody),
        (status = 404, description = "No alert with this id has arrived", body = ErrorBody),
        (status = 503, description = "A store cannot be read now", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn alert(State(d): State<Arc<Daemon>>, Path(id): Path<String>) -> Reply<AlertDetail> {
    blocking(move || {
        let view = alert_view(&d, &id)?;
        if view.arrivals.is_empty() {
            return Err(ApiError::not_found(format!("no alert {id} has arrived")));
        }
        Ok(AlertDetail {
            alert_id: id,
            arrivals: view
                .arrivals
                .iter()
                .map(|a| ApiArrival::of(&a.host, &a.arrival))
                .collect(),
            tasks: view
                .tasks
                .iter()
                .map(|(t, e)| ApiTask::of(t, Some(e)))
                .collect(),
            records: view
                .records
                .iter()
                .map(|r| ApiRecord::of(&r.host, &r.record))
                .collect(),
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let mut shown = serde_json::to_value(ApiRecord::of("web-1", &record)).unwrap();
        // Beside the stored fields, the host whose ledger holds it (in a fleet, any host).
        assert_eq!(shown["host"], "web-1");
        shown.as_object_mut().unwrap().remove("host");
        assert_eq!(shown, stored);
        let bare = Record {
            safeguards: None,
            outputs: None,
            ..record
        };
        let mut shown = serde_json::to_value(ApiRecord::of("", &bare)).unwrap();
        assert_eq!(
            shown["host"],
            serde_json::Value::Null,
            "a host with no name"
        );
        shown.as_object_mut().unwrap().remove("host");
        assert_eq!(shown, serde_json::to_value(&bare).unwrap());
    }

    /// A session's page in a fleet: this host's records that have not reached the fleet store
    /// yet show beside every host's shipped ones, each record once, in the fleet's order, the
    /// newest `MAX_LIMIT` kept.
    #[test]
    fn a_session_shows_this_hosts_unshipped_records_and_each_record_once() {
        let at = |host: &str, seq: u64, ms: i64| FleetRecord {
            host: host.into(),
            record: Record {
                id: format!("{host}-{seq}"),
                seq,
                event: "decision".into(),
                timestamp_ms: ms,
                session_id: Some("s".into()),
                actor: nightwatch_ledger::RecordActor::default(),
                tool: "exec".into(),
                inputs: json!({}),
                outputs: None,
                context: nightwatch_ledger::RecordContext::default(),
                duration_ms: None,
                verdict: None,
                rule: None,
                reasons: vec![],
                call_id: None,
                redacted: vec![],
                cwd: None,
                safeguards: None,
                prev_hash: String::new(),
                hash: String::new(),
            },
        };
        let places = |records: &[FleetRecord]| -> Vec<String> {
            records.iter().map(|r| r.record.id.clone()).collect()
        };
        // The fleet holds web-1's first two and db-1's one; web-1 has written four.
        let fleet = vec![at("web-1", 1, 100), at("db-1", 7, 150), at("web-1", 2, 200)];
        let own = (1..=4)
            .map(|seq| at("web-1", seq, seq as i64 * 100))
            .collect();
        let merged = with_unshipped(fleet, own);
        assert_eq!(
            places(&merged),
            ["web-1-1", "db-1-7", "web-1-2", "web-1-3", "web-1-4"]
        );
        // A host's record with the same sequence number as another host's is a different one.
        let merged = with_unshipped(vec![at("db-1", 3, 300)], vec![at("web-1", 3, 300)]);
        assert_eq!(places(&merged), ["db-1-3", "web-1-3"]);
        // Past the page's size, the oldest go.
        let own = (1..=MAX_LIMIT as u64 + 5)
            .map(|seq| at("web-1", seq, seq as i64))
            .collect();
        let merged = with_unshipped(Vec::new(), own);
        assert_eq!(merged.len(), MAX_LIMIT);
        assert_eq!(merged[0].record.seq, 6);
    }

    /// `host=` comes from whoever asks: empty, overlong or odd text is a 400 that says why,
    /// never a panic, and the error never repeats more than a little of it.
    #[test]
    fn a_host_parameter_names_one_host_or_is_refused_with_why() {
        assert_eq!(host_param("web-1").as_deref(), Ok("web-1"));
        assert_eq!(
            host_param(" db1.example.com ").as_deref(),
            Ok("db1.example.com")
        );
        assert_eq!(host_param(&"h".repeat(255)).map(|h| h.len()), Ok(255));
        let long = "h".repeat(256);
        let huge = "é".repeat(100_000);
        let cases: [(&str, &str); 9] = [
            ("db\u{fffd}\u{fffd}", "no host's name has"),
            ("", "empty"),
            ("   ", "empty"),
            (&long, "at most 255"),
            (&huge, "at most 255"),
            ("web 1", "no host's name has"),
            ("web\u{0}1", "no host's name has"),
            ("a\u{1b}[31m", "no host's name has"),
            ("db\u{202e}1\u{7f}", "no host's name has"),
        ];
        for (text, why) in cases {
            let err = host_param(text).expect_err(text);
            assert!(err.contains(why), "{text:?}: {err}");
            assert!(err.len() < 300, "the error repeats at most a little: {err}");
        }
        assert!(
            host_param("web-1\n").is_ok(),
            "surrounding space is trimmed"
        );
    }

    /// A `before` cursor reads back as written, whatever the host's name holds; anything
    /// else is refused with the parameter's name.
    #[test]
    fn a_record_cursor_reads_back_and_nothing_else_is_one() {
        for cursor in [
            FleetCursor {
                timestamp_ms: 1_771_039_042_000,
                host: "db-1.example.com".into(),
                seq: 42,
            },
            FleetCursor {
                timestamp_ms: -5,
                host: "a.b:9100&x=y".into(),
                seq: 1,
            },
            FleetCursor::end(),
        ] {
            let text = cursor_text(&cursor);
            assert_eq!(record_cursor("before", &text), Ok(cursor), "{text}");
        }
        for bad in not_places().iter().map(String::as_str).chain(["42"]) {
            let err = record_cursor("before", bad).expect_err(bad);
            assert!(err.starts_with("before "), "{bad:?}: {err}");
            assert!(err.len() < 300, "{err}");
        }
    }

    /// Texts that are no place in any order (`<time>.<number>.<host>`): missing parts, numbers
    /// out of range or negative, a host no host could have, and one far too long.
    fn not_places() -> Vec<String> {
        [
            "",
            "1.2",
            "x.2.web-1",
            "1.-2.web-1",
            "1.99999999999999999999.web-1",
            "1.9223372036854775808.web-1",
            "99999999999999999999.2.web-1",
            "1.2.web 1",
            "1.2.web\u{0}",
            "1.2. web-1",
        ]
        .into_iter()
        .map(str::to_owned)
        .chain([format!("1.2.{}", "h".repeat(10_000))])
        .collect()
    }

    /// An arrival's place reads back as written; `after` also takes an arrival number where
    /// it names one arrival (a host alone) or the start (0); anything else is refused with
    /// the parameter's name, never a panic, repeating at most a little of what was sent.
    #[test]
    fn an_arrival_cursor_reads_back_and_nothing_else_is_one() {
        for cursor in [
            ArrivalCursor {
                received_ms: 1_771_039_042_000,
                host: "db-1.example.com".into(),
                id: 42,
            },
            ArrivalCursor {
                received_ms: -5,
                host: "a.b:9100&x=y".into(),
                id: 1,
            },
            ArrivalCursor::end(),
        ] {
            let text = arrival_cursor_text(&cursor);
            assert_eq!(arrival_cursor("after", &text), Ok(cursor.clone()), "{text}");
            for fleet in [false, true] {
                assert_eq!(arrivals_after_param(&text, fleet), Ok(cursor.clone()));
            }
        }
        let number = |id| ArrivalCursor {
            id,
            ..ArrivalCursor::end()
        };
        assert_eq!(arrivals_after_param("7", false), Ok(number(7)));
        assert_eq!(arrivals_after_param("0", true), Ok(number(0)));
        let err = arrivals_after_param("7", true).unwrap_err();
        assert!(err.contains("each host numbers its own"), "{err}");
        let odd = ["soon", "1.2.db\u{fffd}", "1.2.\u{1b}[31m"];
        for bad in not_places().iter().map(String::as_str).chain(odd) {
            let err = arrival_cursor("arrivals_before", bad).expect_err(bad);
            assert!(err.starts_with("arrivals_before "), "{bad:?}: {err}");
            assert!(err.len() < 300, "{err}");
            for fleet in [false, true] {
                let err = arrivals_after_param(bad, fleet).expect_err(bad);
                assert!(err.starts_with("after "), "{bad:?}: {err}");
                assert!(err.len() < 300, "{err}");
            }
        }
    }

    /// An arrival names the host that received it (a host alone itself; `null` when it has no
    /// name), beside the host the alert is about.
    #[test]
    fn an_arrival_names_the_host_that_received_it() {
        let a = AlertEvent {
            id: 3,
            received_ms: 1_771_039_042_000,
            source: "alertmanager".into(),
            alert_id: "alert_88c2d1".into(),
            status: "firing".into(),
            title: "DiskFull".into(),
            host: Some("db-7".into()),
            alert: json!({}),
            disposition: None,
            reason: None,
            route: None,
            task_id: None,
            record: None,
        };
        let shown = serde_json::to_value(ApiArrival::of("web-1", &a)).unwrap();
        assert_eq!(
            (&shown["received_by"], &shown["host"]),
            (&json!("web-1"), &json!("db-7"))
        );
        let shown = serde_json::to_value(ApiArrival::of("", &a)).unwrap();
        assert_eq!(shown["received_by"], serde_json::Value::Null);
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

    /// Every route the daemon serves is in the generated document, with its methods: the
    /// document is made from the same annotations the routes are registered with.
    #[test]
    fn the_generated_document_names_every_route_and_method() {
        let doc = serde_json::to_value(openapi()).expect("the document serialises");
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
        for (path, method) in [
            ("/hooks/uptime-kuma", "post"),
            ("/hooks/uptime-kuma", "get"),
            ("/hooks/alertmanager", "post"),
            ("/hooks/generic/{name}", "post"),
            ("/healthz", "get"),
            ("/readyz", "get"),
            ("/metrics", "get"),
            ("/api/openapi.json", "get"),
            ("/api/records", "get"),
            ("/api/records/{id}", "get"),
            ("/api/sessions", "get"),
            ("/api/sessions/{id}", "get"),
            ("/api/tasks", "get"),
            ("/api/tasks/{id}", "get"),
            ("/api/alerts", "get"),
            ("/api/alerts/{id}", "get"),
        ] {
            assert!(
                doc["paths"][path].get(method).is_some(),
                "{method} {path} is not documented"
            );
        }
        for scheme in ["bearer", "header", "readers"] {
            assert!(
                doc["components"]["securitySchemes"].get(scheme).is_some(),
                "no {scheme} security scheme"
            );
        }
        // The wire types are named as clients know them.
        for schema in [
            "Record",
            "Session",
            "Task",
            "TaskEvent",
            "AlertEvent",
            "Dispatched",
        ] {
            assert!(
                doc["components"]["schemas"].get(schema).is_some(),
                "no {schema} schema: {:?}",
                doc["components"]["schemas"]
                    .as_object()
                    .map(|o| o.keys().collect::<Vec<_>>())
            );
        }
    }
}
