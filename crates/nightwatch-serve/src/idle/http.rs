//! Idle control over HTTP: forward-auth for operators who already run Caddy, nginx or
//! Traefik in front of their apps (`/idle/auth`: the same classification and wake-up as the
//! daemon's own proxy), the health endpoint those proxies route monitors' health checks to
//! (`/idle/health`: the app's own answer while it is awake, its kept answer while it sleeps,
//! never a wake), each app's state in the API (`/api/idle`), and the one way an [`Admit`]
//! becomes a reply.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::control::{Admit, AppControl, Health, IdleControl, Seen};
use super::ready::ReadyAnswer;
use crate::Daemon;
use crate::api::{ApiError, ErrorBody};

/// The header on every answer given for a sleeping app instead of the app's own.
pub const ASLEEP_HEADER: &str = "x-nightwatch-asleep";

/// One app under idle control, as the controller sees it now.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ApiIdleApp {
    pub app: String,
    /// awake, suspending, asleep, waking, half-awake, failed or quarantined.
    pub phase: String,
    /// Why it is in that phase.
    pub why: String,
    /// When it got there (ms since 1970).
    pub since_ms: i64,
    /// The last person's (or agent's) request, which is what keeps it awake.
    pub last_person: Option<ApiPerson>,
    /// Requests by people since the last flip.
    pub persons_since: u64,
    /// Robots' requests since the last flip, by kind (monitor, crawler, probe, polling, ...):
    /// seen, not counted as activity.
    pub robots_since: BTreeMap<String, u64>,
    /// Robots by name (`Uptime Kuma`) or kind, since the last flip.
    pub robots_by_name: BTreeMap<String, u64>,
    /// Robots' health checks given the kept readiness answer since the last flip.
    pub kept_since: u64,
    /// Robots' requests refused with 503 since the last flip, by method and path
    /// (`POST /orders/sync`), the first of each recorded in the ledger with why.
    pub refused_since: BTreeMap<String, u64>,
    /// Signals holding it awake at the last look (an exec session, a connection, a job).
    pub held_by: Vec<String>,
    /// Failed steps in a row.
    pub failures: u32,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ApiPerson {
    pub at_ms: i64,
    pub client: String,
    pub user_agent: String,
    pub path: String,
}

/// Every app under idle control.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct IdleApps {
    pub apps: Vec<ApiIdleApp>,
}

/// The documented routes the readers' secret guards.
pub fn read_routes() -> OpenApiRouter<Arc<Daemon>> {
    OpenApiRouter::new()
        .routes(routes!(idle_apps))
        .routes(routes!(idle_app))
}

/// The forward-auth and health routes: asked by a proxy in front of the apps, not by
/// readers.
pub fn auth_routes() -> OpenApiRouter<Arc<Daemon>> {
    OpenApiRouter::new()
        .routes(routes!(forward_auth))
        .routes(routes!(health))
}

fn api_app(control: &super::control::IdleControl, app: &super::control::AppControl) -> ApiIdleApp {
    let state = control.state(app);
    ApiIdleApp {
        app: app.spec.name.clone(),
        phase: state.phase.as_str().to_owned(),
        why: state.why,
        since_ms: state.since_ms,
        last_person: state.last_person.map(|p| ApiPerson {
            at_ms: p.at_ms,
            client: p.client,
            user_agent: p.user_agent,
            path: p.path,
        }),
        persons_since: state.seen.persons,
        robots_since: state
            .seen
            .robots
            .into_iter()
            .map(|(kind, n)| (kind.to_owned(), n))
            .collect(),
        robots_by_name: state.seen.robots_by_name,
        kept_since: state.seen.kept,
        refused_since: state.seen.refused,
        held_by: state.held_by,
        failures: state.failures,
    }
}

/// Every app under idle control and why it is in its state.
#[utoipa::path(
    get,
    path = "/api/idle",
    tag = "idle",
    responses(
        (status = 200, description = "Each app's state, last person, robots seen and holds", body = IdleApps),
        (status = 401, description = "The readers' secret is missing or wrong", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn idle_apps(State(daemon): State<Arc<Daemon>>) -> Response {
    let apps = match &daemon.idle {
        Some(control) => control.apps.iter().map(|a| api_app(control, a)).collect(),
        None => Vec::new(),
    };
    Json(IdleApps { apps }).into_response()
}

/// One app under idle control.
#[utoipa::path(
    get,
    path = "/api/idle/{app}",
    tag = "idle",
    params(("app" = String, Path, description = "The app's name in serve.yaml's idle.apps")),
    responses(
        (status = 200, description = "The app's state, last person, robots seen and holds", body = ApiIdleApp),
        (status = 401, description = "The readers' secret is missing or wrong", body = ErrorBody),
        (status = 404, description = "No app of that name is under idle control", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn idle_app(State(daemon): State<Arc<Daemon>>, Path(name): Path<String>) -> Response {
    let found = daemon
        .idle
        .as_ref()
        .and_then(|c| c.app(&name).map(|a| api_app(c, a)));
    match found {
        Some(app) => Json(app).into_response(),
        None => ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no app named {name:?} is under idle control (serve.yaml: idle.apps)"),
        )
        .into_response(),
    }
}

/// Forward-auth for a proxy in front of the apps (Caddy's `forward_auth`, nginx's
/// `auth_request`, Traefik's `forwardAuth`). The app is found by `X-Forwarded-Host` (or
/// `Host`), the request by `X-Forwarded-Method`/`X-Forwarded-Uri` (or `X-Original-Method`/
/// `X-Original-URI`), the client by `X-Real-IP` or the last `X-Forwarded-For` entry (the one
/// the proxy added). 200: forward it (the app is awake, or was woken for this person). 503
/// with `Retry-After`: a robot asking a sleeping app (with `X-Nightwatch-Asleep`), or a wake
/// that failed; the proxy hands it to the client. A 2xx would send the request on to the
/// sleeping app, so a monitor's health check gets its kept answer at `/idle/health`, where
/// the proxy routes the app's health paths.
#[utoipa::path(
    method(get, post),
    path = "/idle/auth",
    tag = "idle",
    responses(
        (status = 200, description = "Forward the request: the app is awake"),
        (status = 404, description = "No app under idle control answers to that host", body = ErrorBody),
        (status = 503, description = "The app sleeps and this is a robot, or it could not be woken; Retry-After says when to ask again", body = ErrorBody),
    ),
)]
async fn forward_auth(
    State(daemon): State<Arc<Daemon>>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    let text = |name: &str| header_text(&headers, name);
    let (control, app) = match app_of(&daemon, &headers) {
        Ok(found) => found,
        Err(refused) => return refused.into_response(),
    };
    let uri = text("x-forwarded-uri")
        .or_else(|| text("x-original-uri"))
        .unwrap_or("/");
    let method = text("x-forwarded-method")
        .or_else(|| text("x-original-method"))
        .map(str::to_owned)
        .unwrap_or_else(|| method.to_string());
    let seen = Seen {
        method,
        path: path_of(uri).to_owned(),
        user_agent: text("user-agent").map(str::to_owned),
        client: client_of(&headers),
    };
    match control.admit(&daemon, &app, &seen).await {
        Admit::Forward => StatusCode::OK.into_response(),
        // A 2xx here would send the request on to a sleeping app: the kept answer is given
        // at /idle/health instead.
        Admit::Kept(_) => unavailable(
            &app.spec.name,
            nightwatch_idle::admission::RETRY_AFTER.as_secs(),
            true,
            format!(
                "{} is asleep; its kept health answer is at /idle/health, where the proxy in front of it routes its health paths ({})",
                app.spec.name,
                app.spec.health_paths_shown()
            ),
        ),
        Admit::Unavailable {
            why,
            retry_after,
            asleep,
        } => unavailable(&app.spec.name, retry_after, asleep, why),
    }
}

/// A monitor's health check of an app, routed here by the proxy in front of it (Caddy,
/// nginx, Traefik) so that it is answered while the app sleeps without waking it. The app
/// is found by `X-Forwarded-Host` (or `Host`), the health path asked by `X-Forwarded-Uri`,
/// `X-Original-URI` or `X-Replaced-Path` (Traefik's `replacePath`); it must be one of the
/// app's health paths. Awake, the app answers it now (its own status and body); asleep, the
/// answer is the one its readiness check kept while it was awake, with
/// `X-Nightwatch-Asleep`. It is counted as a robot's request and never wakes the app.
#[utoipa::path(
    get,
    path = "/idle/health",
    tag = "idle",
    responses(
        (status = 200, description = "The app's health answer: its own while it is awake, the kept one (with X-Nightwatch-Asleep) while it sleeps; any other status the app itself gives is passed on as it is"),
        (status = 400, description = "The proxy did not say which path was asked (X-Forwarded-Uri)", body = ErrorBody),
        (status = 404, description = "No app under idle control answers to that host, or the path is not one of its health paths", body = ErrorBody),
        (status = 503, description = "The app sleeps and no answer was kept (or asleep_answer is unavailable), or it is failed; Retry-After says when to ask again", body = ErrorBody),
    ),
)]
async fn health(State(daemon): State<Arc<Daemon>>, method: Method, headers: HeaderMap) -> Response {
    let text = |name: &str| header_text(&headers, name);
    let (control, app) = match app_of(&daemon, &headers) {
        Ok(found) => found,
        Err(refused) => return refused.into_response(),
    };
    let Some(target) = text("x-forwarded-uri")
        .or_else(|| text("x-original-uri"))
        .or_else(|| text("x-replaced-path"))
    else {
        return ApiError::new(
            StatusCode::BAD_REQUEST,
            "say which health path was asked: the proxy sets X-Forwarded-Uri (README: Idle control)",
        )
        .into_response();
    };
    let path = path_of(target);
    if !app.spec.is_health_path(path) {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "{:?} is not a health path of {} (idle.apps.{}.health_paths: {}); only those are answered here",
                nightwatch_idle::clipped(path, 120),
                app.spec.name,
                app.spec.name,
                app.spec.health_paths_shown()
            ),
        )
        .into_response();
    }
    let seen = Seen {
        method: method.to_string(),
        path: path.to_owned(),
        user_agent: text("user-agent").map(str::to_owned),
        client: client_of(&headers),
    };
    let host = text("x-forwarded-host").or_else(|| text("host"));
    match control.health(&daemon, &app, &seen, target, host).await {
        Health::Live(answer) => kept_reply(answer),
        Health::Answer(admit) => answer(&app.spec.name, admit)
            .unwrap_or_else(|| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
    }
}

/// The controller and the app a fronting proxy's request names by `X-Forwarded-Host` (or
/// `Host`), or the 404 saying why not.
fn app_of(
    daemon: &Daemon,
    headers: &HeaderMap,
) -> Result<(Arc<IdleControl>, Arc<AppControl>), ApiError> {
    let Some(control) = daemon.idle.clone() else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no app is under idle control here (serve.yaml: idle.apps)",
        ));
    };
    let host = ["x-forwarded-host", "host"]
        .iter()
        .filter_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()))
        .map(str::trim)
        .find(|v| !v.is_empty())
        .unwrap_or("");
    match control.app_for_host(host).cloned() {
        Some(app) => Ok((control, app)),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no app under idle control answers to host {host:?} (idle.apps.*.hosts)"),
        )),
    }
}

/// A request target's path, without the query or fragment.
fn path_of(uri: &str) -> &str {
    uri.split(['?', '#']).next().unwrap_or("/")
}

/// The client a fronting proxy says it served: `X-Real-IP`, else the last `X-Forwarded-For`
/// entry (the one that proxy added; earlier ones are the client's own claims).
fn client_of(headers: &HeaderMap) -> IpAddr {
    let real = headers
        .get("x-real-ip")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok());
    let forwarded = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|v| v.trim().parse::<IpAddr>().ok())
        .next_back();
    real.or(forwarded)
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
}

/// How an [`Admit`] other than forward becomes the daemon proxy's reply (and
/// `/idle/health`'s): the kept answer marked `X-Nightwatch-Asleep`, or 503 with
/// `Retry-After` and why. Never a 2xx but the app's own kept one.
pub fn answer(app: &str, admit: Admit) -> Option<Response> {
    match admit {
        Admit::Forward => None,
        Admit::Kept(Some(kept)) => {
            let mut response = kept_reply(kept);
            mark_asleep(response.headers_mut(), app);
            Some(response)
        }
        Admit::Kept(None) => Some(unavailable(
            app,
            nightwatch_idle::admission::RETRY_AFTER.as_secs(),
            true,
            format!("{app} is asleep (no answer of its own was kept to give)"),
        )),
        Admit::Unavailable {
            why,
            retry_after,
            asleep,
        } => Some(unavailable(app, retry_after, asleep, why)),
    }
}

/// An answer the app gave its readiness check (or a health check passed on), as a reply.
fn kept_reply(kept: ReadyAnswer) -> Response {
    let mut response = (
        StatusCode::from_u16(kept.status).unwrap_or(StatusCode::BAD_GATEWAY),
        kept.body,
    )
        .into_response();
    if let Some(kind) = kept
        .content_type
        .as_deref()
        .and_then(|c| HeaderValue::from_str(c).ok())
    {
        response.headers_mut().insert(header::CONTENT_TYPE, kind);
    }
    response
}

fn unavailable(app: &str, retry_after: u64, asleep: bool, why: String) -> Response {
    let mut response = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, why).into_response();
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    if asleep {
        mark_asleep(headers, app);
    }
    response
}

fn mark_asleep(headers: &mut HeaderMap, app: &str) {
    if let Ok(v) = HeaderValue::from_str(app) {
        headers.insert(ASLEEP_HEADER, v);
    }
}

/// A header's value, trimmed; `None` when absent, empty or not text.
fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_is_the_one_the_fronting_proxy_added() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "10.9.9.9, 192.0.2.4".parse().unwrap());
        assert_eq!(client_of(&h), "192.0.2.4".parse::<IpAddr>().unwrap());
        h.insert("x-real-ip", "198.51.100.2".parse().unwrap());
        assert_eq!(client_of(&h), "198.51.100.2".parse::<IpAddr>().unwrap());
        assert!(client_of(&HeaderMap::new()).is_unspecified());
        let mut junk = HeaderMap::new();
        junk.insert("x-forwarded-for", "not an address".parse().unwrap());
        assert!(client_of(&junk).is_unspecified());
    }

    #[test]
    fn a_kept_answer_is_given_marked_asleep() {
        let kept = ReadyAnswer {
            status: 200,
            content_type: Some("application/json".into()),
            body: bytes::Bytes::from_static(b"{\"status\":\"ok\"}"),
        };
        let r = answer("shop", Admit::Kept(Some(kept))).unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[ASLEEP_HEADER], "shop");
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        let r = answer("shop", Admit::Kept(None)).unwrap();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "30");
        assert!(answer("shop", Admit::Forward).is_none());
    }
}
