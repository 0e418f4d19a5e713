//! The HTTP edge: routes, secrets, size and time limits, and the reply contract senders rely
//! on: 2xx once stored, 400 (with why) for what can never be parsed, 401 for a bad secret,
//! 413 for a body over the limit, 503 only when storage fails (so the sender retries).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{MatchedPath, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use nightwatch_intake::{Alert, IntakeError};
use nightwatch_store::{ArrivalCursor, FleetCursor};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::{ApiError, ErrorBody, wire::IntakeReply};
use crate::config::Auth;
use crate::{Daemon, api, web};

/// Which sender an intake endpoint is for.
#[derive(Clone, Debug)]
enum Sender {
    UptimeKuma,
    Alertmanager,
    Generic(String),
}

impl Sender {
    fn name(&self) -> &str {
        match self {
            Sender::UptimeKuma => "uptime-kuma",
            Sender::Alertmanager => "alertmanager",
            Sender::Generic(name) => name,
        }
    }
}

/// The most records and arrivals the timeline page reads for its window (the newest).
const PAGE_RECORDS: usize = 5000;
const PAGE_ARRIVALS: usize = 2000;
const PAGE_TASKS: usize = 2000;

/// How long a sender waits for its alerts to be stored before it is told 503 (and retries).
const STORE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// What one connection may take.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// Connections open at once; one more is answered 503 and closed.
    pub max_connections: usize,
    /// A connection must send a request's headers within this, and its next request's too:
    /// a trickling or idle client is closed, so it cannot hold a connection forever.
    pub header_read: std::time::Duration,
}

/// How long a connection refused for being one too many gets to take its 503.
const REFUSAL_WRITE: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a refused connection may take to show it is a liveness probe (`GET /healthz`),
/// which is answered 200 even when the daemon is full: the process is alive, and a supervisor
/// must not restart it because idle connections filled it.
const REFUSAL_PEEK: std::time::Duration = std::time::Duration::from_millis(200);

/// Refused connections that may wait for their request line at once; the others are refused
/// without looking, so a flood of idle connections holds no more files than this.
const REFUSALS_PEEKING: usize = 64;

/// Serves `app` on `listener` (HTTP/1.1, kept alive) within `limits` until `shutdown`
/// completes, then lets the requests in flight finish. A failure to accept (out of files,
/// say) is logged and retried after a pause, never a busy loop or an exit.
pub async fn serve_connections(
    listener: tokio::net::TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), crate::ServeError> {
    serve_with(listener, limits, Upgrades::Refused, shutdown, move |_| {
        hyper_util::service::TowerToHyperService::new(app.clone())
    })
    .await
}

/// Whether a connection may switch protocols (a websocket): the daemon's own routes never
/// do; a proxy passes an upgrade on to its app.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Upgrades {
    Refused,
    Served,
}

/// One accepted connection, as the service that serves it is given it.
#[derive(Clone, Debug)]
pub(crate) struct Accepted {
    /// The TCP peer: who is at the other end, whatever the requests' headers claim.
    pub peer: std::net::SocketAddr,
    /// The connection's place under `max_connections`. The connection holds it while it is
    /// served, and so does whatever it hands its stream on to (an upgraded websocket), so
    /// long-lived tunnels count against the limit too.
    pub slot: Arc<tokio::sync::OwnedSemaphorePermit>,
    /// Turns true when the server stops: what a connection handed its stream on to closes then.
    pub closing: tokio::sync::watch::Receiver<bool>,
}

/// The accept loop behind [`serve_connections`] and the idle proxy: each accepted connection
/// is served by the service `service` makes for it, within `limits`, until `shutdown`
/// completes; then connections stop taking requests, those in flight get a deadline to
/// finish, and what was handed on (see [`Accepted`]) is told to close.
pub(crate) async fn serve_with<F, S, B>(
    listener: tokio::net::TcpListener,
    limits: ConnectionLimits,
    upgrades: Upgrades,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    mut service: F,
) -> Result<(), crate::ServeError>
where
    F: FnMut(Accepted) -> S,
    S: hyper::service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = hyper::Response<B>,
        > + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    use hyper_util::rt::{TokioIo, TokioTimer};
    let open = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let peeking = Arc::new(tokio::sync::Semaphore::new(REFUSALS_PEEKING));
    let (stop, closing) = tokio::sync::watch::channel(false);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("cannot accept a connection: {e}; trying again in 100 ms");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        // A reply's head and body may go out as two writes (the proxy streams a body after
        // its head): with Nagle's algorithm the body then waits for the client's delayed ACK,
        // 40 ms a request. Measured in BENCHMARKS.md (idle control).
        let _ = stream.set_nodelay(true);
        let Ok(permit) = open.clone().try_acquire_owned() else {
            tokio::spawn(refuse_one_too_many(
                stream,
                limits.max_connections,
                peeking.clone(),
            ));
            continue;
        };
        let slot = Arc::new(permit);
        let served = service(Accepted {
            peer,
            slot: slot.clone(),
            closing: closing.clone(),
        });
        let connection = builder.serve_connection(TokioIo::new(stream), served);
        // A connection that ends badly (reset, timed out) ends only itself.
        match upgrades {
            Upgrades::Refused => {
                tokio::spawn(until_closing(connection, closing.clone(), slot));
            }
            Upgrades::Served => {
                tokio::spawn(until_closing(
                    connection.with_upgrades(),
                    closing.clone(),
                    slot,
                ));
            }
        }
    }
    drop(listener);
    stop.send_replace(true);
    // Requests in flight get the store's own deadline to finish; idle connections close now,
    // and so does what connections handed on. Every connection has ended once every place
    // under the limit is free again.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(STORE_DEADLINE, open.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!("some connections were still busy at shutdown and were dropped");
    }
    Ok(())
}

/// A hyper connection that can be asked to finish its request in flight and take no more.
trait Draining: std::future::Future {
    fn finish(self: std::pin::Pin<&mut Self>);
}

impl<I, S, B> Draining for hyper::server::conn::http1::Connection<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn finish(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl<I, S, B> Draining for hyper::server::conn::http1::UpgradeableConnection<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn finish(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// Completes once `closing` turns true (or its sender is gone: the server stopped).
pub(crate) async fn closed(closing: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = closing.wait_for(|closing| *closing).await;
}

/// Serves `connection` to its end, or, once `closing` turns true, lets it finish the request
/// in flight and close; then gives up its place under the limit.
async fn until_closing<C: Draining>(
    connection: C,
    mut closing: tokio::sync::watch::Receiver<bool>,
    slot: Arc<tokio::sync::OwnedSemaphorePermit>,
) {
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        () = closed(&mut closing) => {
            connection.as_mut().finish();
            let _ = connection.await;
        }
    }
    drop(slot);
}

/// Tells a connection past the limit why it is refused, then closes it; a liveness probe is
/// answered `ok` (see [`REFUSAL_PEEK`]).
async fn refuse_one_too_many(
    mut stream: tokio::net::TcpStream,
    max: usize,
    peeking: Arc<tokio::sync::Semaphore>,
) {
    use tokio::io::AsyncWriteExt;
    let probe = match peeking.try_acquire() {
        Ok(_looking) => is_liveness_probe(&stream).await,
        Err(_) => false,
    };
    let reply = if probe {
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 3\r\n\r\nok\n".to_owned()
    } else {
        let body = format!(
            "{{\"error\":\"{max} connections are open, the most this daemon takes (max_connections in serve.yaml); try again\"}}\n"
        );
        format!(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let _ = tokio::time::timeout(REFUSAL_WRITE, async {
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// Whether the connection's first bytes, within [`REFUSAL_PEEK`], ask for `/healthz`.
async fn is_liveness_probe(stream: &tokio::net::TcpStream) -> bool {
    let mut head = [0u8; 13];
    let deadline = tokio::time::Instant::now() + REFUSAL_PEEK;
    loop {
        let seen = match tokio::time::timeout_at(deadline, stream.peek(&mut head)).await {
            Ok(Ok(seen)) if seen > 0 => seen,
            _ => return false,
        };
        if seen == head.len() {
            return head[..12] == *b"GET /healthz" && matches!(head[12], b' ' | b'?');
        }
        if !b"GET /healthz ".starts_with(&head[..seen]) {
            return false;
        }
        // Part of the line so far: look again in a moment.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

pub fn router(daemon: Arc<Daemon>) -> Router {
    let (hooks, _) = hooks().split_for_parts();
    let (probes, _) = probes().split_for_parts();
    let (idle_auth, _) = crate::idle::http::auth_routes().split_for_parts();
    // The robots' reports carry their own secret (robots.auth), like the hooks.
    let (robots, _) = crate::robots::routes().split_for_parts();
    let (reads, _) = reads().split_for_parts();
    // What the readers' secret guards: everything but the hooks (each source has its own
    // secret) and the probes an orchestrator sends without one.
    let read = reads
        .route("/", get(timeline))
        .route("/sessions/{id}", get(session))
        .route("/alerts/{id}", get(alert))
        .fallback(|| async { page_error(StatusCode::NOT_FOUND, "no such page") })
        .layer(middleware::from_fn_with_state(daemon.clone(), readers_only));
    Router::new()
        .merge(hooks)
        .merge(probes)
        .merge(idle_auth)
        .merge(robots)
        .merge(read)
        .layer(middleware::from_fn_with_state(daemon.clone(), count))
        .with_state(daemon)
}

/// The routes whose replies are a contract (the hooks, the probes, `/metrics` and the JSON
/// API), each registered together with its OpenAPI annotation: the document
/// ([`api::openapi`]) is generated from them, so a route cannot be served undocumented.
/// The pages are for people and are not in it.
pub fn documented_routes() -> OpenApiRouter<Arc<Daemon>> {
    hooks()
        .merge(probes())
        .merge(crate::idle::http::auth_routes())
        .merge(crate::robots::routes())
        .merge(reads())
}

fn hooks() -> OpenApiRouter<Arc<Daemon>> {
    OpenApiRouter::new()
        .routes(routes!(uptime_kuma))
        .routes(routes!(alertmanager))
        .routes(routes!(generic))
}

fn probes() -> OpenApiRouter<Arc<Daemon>> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
}

fn reads() -> OpenApiRouter<Arc<Daemon>> {
    OpenApiRouter::new()
        .routes(routes!(metrics))
        .merge(api::routes())
        .merge(crate::idle::http::read_routes())
        .merge(crate::watch::http::read_routes())
}

/// Uptime Kuma's webhook notification: JSON, `multipart/form-data` with a `data` field, or a
/// custom template (any text, or form fields); Uptime Kuma 2.x may send a GET with everything
/// in the query. Null monitor/heartbeat (tests, certificate messages) are accepted.
#[utoipa::path(
    method(get, post),
    path = "/hooks/uptime-kuma",
    tag = "hooks",
    request_body(
        description = "Uptime Kuma's notification body, in any of its shapes",
        content(
            (serde_json::Value = "application/json"),
            (String = "multipart/form-data"),
            (String = "application/x-www-form-urlencoded"),
            (String = "text/plain"),
        ),
    ),
    responses(
        (status = 200, description = "Every alert in the request is stored, decided and recorded", body = IntakeReply),
        (status = 400, description = "The request can never be parsed; the error says why", body = ErrorBody),
        (status = 401, description = "Missing or wrong secret for this source", body = ErrorBody),
        (status = 408, description = "The body did not arrive within request_timeout", body = ErrorBody),
        (status = 413, description = "The body is larger than max_body_bytes", body = ErrorBody),
        (status = 503, description = "Storing failed or is slow; send it again (a redelivery is deduplicated)", body = ErrorBody),
    ),
    security(("bearer" = []), ("header" = []), ())
)]
async fn uptime_kuma(
    State(daemon): State<Arc<Daemon>>,
    headers: HeaderMap,
    request: Request,
) -> Response {
    intake(State(daemon), Sender::UptimeKuma, headers, request).await
}

/// Alertmanager's webhook (`webhook_configs`): a group of alerts, firing or resolved.
#[utoipa::path(
    post,
    path = "/hooks/alertmanager",
    tag = "hooks",
    request_body(content = serde_json::Value, content_type = "application/json", description = "Alertmanager's webhook payload (version 4)"),
    responses(
        (status = 200, description = "Every alert in the request is stored, decided and recorded", body = IntakeReply),
        (status = 400, description = "The request can never be parsed; the error says why. Alertmanager does not retry it.", body = ErrorBody),
        (status = 401, description = "Missing or wrong secret for this source", body = ErrorBody),
        (status = 408, description = "The body did not arrive within request_timeout", body = ErrorBody),
        (status = 413, description = "The body is larger than max_body_bytes", body = ErrorBody),
        (status = 503, description = "Storing failed or is slow; Alertmanager sends it again and the redelivery is deduplicated", body = ErrorBody),
    ),
    security(("bearer" = []), ("header" = []), ())
)]
async fn alertmanager(
    State(daemon): State<Arc<Daemon>>,
    headers: HeaderMap,
    request: Request,
) -> Response {
    intake(State(daemon), Sender::Alertmanager, headers, request).await
}

/// A generic JSON webhook, read by the mapping serve.yaml gives it (`sources.generic.<name>`).
#[utoipa::path(
    post,
    path = "/hooks/generic/{name}",
    tag = "hooks",
    params(("name" = String, Path, description = "The hook's name in serve.yaml")),
    request_body(content = serde_json::Value, content_type = "application/json", description = "Any JSON the hook's mapping reads"),
    responses(
        (status = 200, description = "The alert is stored, decided and recorded", body = IntakeReply),
        (status = 400, description = "The request can never be parsed by this hook's mapping; the error says why", body = ErrorBody),
        (status = 401, description = "Missing or wrong secret for this source", body = ErrorBody),
        (status = 404, description = "No generic hook of that name in serve.yaml", body = ErrorBody),
        (status = 408, description = "The body did not arrive within request_timeout", body = ErrorBody),
        (status = 413, description = "The body is larger than max_body_bytes", body = ErrorBody),
        (status = 503, description = "Storing failed or is slow; send it again (a redelivery is deduplicated)", body = ErrorBody),
    ),
    security(("bearer" = []), ("header" = []), ())
)]
async fn generic(
    State(daemon): State<Arc<Daemon>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    request: Request,
) -> Response {
    intake(State(daemon), Sender::Generic(name), headers, request).await
}

/// Liveness: the process answers. Never asks for a secret.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "probes",
    responses((status = 200, description = "ok", body = String, content_type = "text/plain")),
)]
async fn healthz() -> &'static str {
    "ok\n"
}

/// Lets a request through when no readers' secret is set or it carries it; otherwise 401,
/// asking a browser for the secret as a password.
async fn readers_only(State(daemon): State<Arc<Daemon>>, request: Request, next: Next) -> Response {
    let Some(auth) = &daemon.config.readers else {
        return next.run(request).await;
    };
    if admitted(auth, request.headers()) {
        return next.run(request).await;
    }
    let mut response = refusal(
        StatusCode::UNAUTHORIZED,
        "reading this daemon needs the readers' secret (readers.auth in serve.yaml): send it as a bearer token, or as the password in a browser",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"nightwatch\", charset=\"UTF-8\""),
    );
    response
}

/// Counts every reply by endpoint (the route's pattern, never the raw path) and status.
async fn count(State(daemon): State<Arc<Daemon>>, request: Request, next: Next) -> Response {
    let endpoint = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "other".into());
    let response = next.run(request).await;
    daemon
        .metrics
        .request(&endpoint, response.status().as_u16());
    response
}

/// A refusal with why, as every JSON route sends one ([`ErrorBody`]).
fn refusal(status: StatusCode, why: impl Into<String>) -> Response {
    ApiError::new(status, why).into_response()
}

async fn intake(
    State(daemon): State<Arc<Daemon>>,
    sender: Sender,
    headers: HeaderMap,
    request: Request,
) -> Response {
    let source = sender.name().to_owned();
    let (auth, mapping) = match &sender {
        Sender::UptimeKuma => (daemon.config.sources.uptime_kuma.auth.clone(), None),
        Sender::Alertmanager => (daemon.config.sources.alertmanager.auth.clone(), None),
        Sender::Generic(name) => match daemon.config.sources.generic.get(name) {
            Some(g) => (g.auth.clone(), Some(g.mapping.clone())),
            None => {
                daemon.metrics.reject(&source, "unknown_hook");
                return refusal(
                    StatusCode::NOT_FOUND,
                    format!("no generic hook named {name:?} in serve.yaml"),
                );
            }
        },
    };
    if let Some(auth) = &auth
        && !admitted(auth, &headers)
    {
        daemon.metrics.reject(&source, "unauthorized");
        let mut response = refusal(
            StatusCode::UNAUTHORIZED,
            format!("missing or wrong secret for the {source} hook"),
        );
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"nightwatch\""),
        );
        return response;
    }
    let method = request.method().clone();
    let raw_query = request.uri().query().map(str::to_owned);
    // A sender that trickles its body is cut off, so it cannot hold a connection forever. The
    // limit covers reading only: once the body is in, storing it is never cut short by a 4xx.
    let reading = axum::body::to_bytes(request.into_body(), daemon.config.max_body_bytes);
    let read = match tokio::time::timeout(daemon.config.request_timeout, reading).await {
        Ok(read) => read,
        Err(_) => {
            daemon.metrics.reject(&source, "timeout");
            return refusal(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the body did not arrive within {} ms (request_timeout in serve.yaml)",
                    daemon.config.request_timeout.as_millis()
                ),
            );
        }
    };
    let body = match read {
        Ok(b) => b,
        Err(e) => {
            let too_large = is_length_limit(&e);
            if too_large {
                daemon.metrics.reject(&source, "too_large");
                return refusal(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "the body is larger than the limit of {} bytes (max_body_bytes in serve.yaml)",
                        daemon.config.max_body_bytes
                    ),
                );
            }
            daemon.metrics.reject(&source, "unreadable");
            return refusal(
                StatusCode::BAD_REQUEST,
                format!("the body could not be read: {e}"),
            );
        }
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let parsed = parse(
        &sender,
        mapping.as_ref(),
        &method,
        &body,
        content_type.as_deref(),
        raw_query.as_deref(),
    );
    let alerts = match parsed {
        Ok(alerts) => alerts,
        Err(e) => {
            daemon.metrics.reject(&source, "unparseable");
            return refusal(
                StatusCode::BAD_REQUEST,
                format!("this {source} request can never be parsed: {e}"),
            );
        }
    };
    let done = match tokio::time::timeout(STORE_DEADLINE, daemon.dispatch_async(alerts)).await {
        Ok(done) => done,
        Err(_) => {
            daemon.metrics.reject(&source, "storage");
            let mut response = refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "storing the alert is taking too long; send it again (a redelivery is deduplicated)",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return response;
        }
    };
    match done {
        Ok(dispatched) => Json(IntakeReply::of(&dispatched)).into_response(),
        Err(e) => {
            daemon.metrics.reject(&source, "storage");
            tracing::error!("{source}: storage failed, replied 503: {e}");
            let mut response = refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the alert could not be stored: {e}; send it again"),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            response
        }
    }
}

/// True when reading the body stopped at the size limit (the error's chain says so).
pub(crate) fn is_length_limit(e: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.to_string().contains("length limit") {
            return true;
        }
        cause = c.source();
    }
    false
}

/// Where the page before starts for one source read newest first, `size` at most: before its
/// oldest shown when the page filled, nothing (0) when the source was read to its end.
fn page_before<T, K: Default>(page: &[T], size: usize, key: impl Fn(&T) -> K) -> K {
    match page.first() {
        Some(oldest) if page.len() >= size => key(oldest),
        _ => K::default(),
    }
}

pub(crate) fn admitted(auth: &Auth, headers: &HeaderMap) -> bool {
    auth.admits(&|name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    })
}

fn parse(
    sender: &Sender,
    mapping: Option<&nightwatch_intake::GenericMapping>,
    method: &Method,
    body: &Bytes,
    content_type: Option<&str>,
    query: Option<&str>,
) -> Result<Vec<Alert>, IntakeError> {
    match sender {
        Sender::UptimeKuma => {
            // Uptime Kuma 2.x GET carries everything in the query.
            let query = if *method == Method::GET || body.is_empty() {
                query
            } else {
                None
            };
            nightwatch_intake::parse_uptime_kuma(body, content_type, query).map(|a| vec![a])
        }
        Sender::Alertmanager => nightwatch_intake::parse_alertmanager(body, content_type),
        Sender::Generic(_) => match mapping {
            Some(m) => nightwatch_intake::parse_generic(body, m).map(|a| vec![a]),
            None => Err(IntakeError::Mapping("no mapping".into())),
        },
    }
}

/// Readiness: alerts are being stored (the last write succeeded and each store answers a
/// point read). Never asks for a secret.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "probes",
    responses(
        (status = 200, description = "ready", body = String, content_type = "text/plain"),
        (status = 503, description = "Shutting down, or the last write failed, or a store does not answer; the text says which", body = String, content_type = "text/plain"),
    ),
)]
async fn readyz(State(daemon): State<Arc<Daemon>>) -> Response {
    if daemon.is_shutting_down() {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    }
    // Ready means alerts are being stored: a daemon whose last write failed (a full disk, a
    // locked or broken store) is not, until a write succeeds again.
    if let Some(why) = daemon.write_failure() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: the last write failed: {why}\n"),
        )
            .into_response();
    }
    // Each store answers a point read: no scan, however long the history.
    let d = daemon.clone();
    let probe = tokio::task::spawn_blocking(move || -> Result<(), String> {
        d.inbox.get(1).map_err(|e| e.to_string())?;
        d.tasks.task(1).map_err(|e| e.to_string())?;
        nightwatch_store::LedgerReader::head_checkpoint(&d.ledger).map_err(|e| e.to_string())?;
        Ok(())
    })
    .await;
    match probe {
        Ok(Ok(())) => (StatusCode::OK, "ready\n").into_response(),
        Ok(Err(why)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        )
            .into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {e}\n")).into_response(),
    }
}

/// Prometheus metrics, as OpenMetrics text.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "probes",
    responses(
        (status = 200, description = "Requests, alerts by disposition, tasks by state, queue age, decisions by verdict", body = String, content_type = "application/openmetrics-text"),
        (status = 401, description = "The readers' secret is set and the request did not carry it", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn metrics(State(daemon): State<Arc<Daemon>>) -> Response {
    let d = daemon.clone();
    let text = tokio::task::spawn_blocking(move || {
        let now = d.now_ms();
        let counts = d.tasks.counts().unwrap_or_default();
        let age = d
            .tasks
            .oldest_ready(now)
            .ok()
            .flatten()
            .map_or(0.0, |ready| (now - ready).max(0) as f64 / 1000.0);
        if let Some(idle) = &d.idle {
            d.metrics.idle_phases(&idle.phases());
        }
        d.metrics.render(&counts, age)
    })
    .await
    .unwrap_or_default();
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

fn page_error(status: StatusCode, message: &str) -> Response {
    (status, Html(web::error_page(status.as_u16(), message))).into_response()
}

async fn timeline(
    State(daemon): State<Arc<Daemon>>,
    Query(params): Query<BTreeMap<String, String>>,
) -> Response {
    let d = daemon.clone();
    blocking_page(move || {
        let now = d.now_ms();
        let mut query = match web::TimelineQuery::from_params(&params, now) {
            Ok(q) => q,
            Err(why) => return Err((StatusCode::BAD_REQUEST, why)),
        };
        let (since, until, before) = (query.since_ms, query.until_ms, query.before.clone());
        // `limit` on the page asks for shorter pages, never longer ones.
        let (page_records, page_arrivals, page_tasks) = (
            query.page_size(PAGE_RECORDS),
            query.page_size(PAGE_ARRIVALS),
            query.page_size(PAGE_TASKS),
        );
        // In a fleet, every host's records (see `api::ledger_page`); oldest first here.
        let window = nightwatch_ledger::Filter {
            since_ms: Some(since),
            until_ms: Some(until),
            limit: Some(page_records),
            ..nightwatch_ledger::Filter::default()
        };
        let mut records =
            api::ledger_page(&d, None, &window, before.records.as_ref()).map_err(internal)?;
        records.reverse();
        // In a fleet, every host's arrivals (see `api::arrivals_between`).
        let alerts = api::arrivals_between(
            &d,
            None,
            since,
            until,
            before.arrivals.as_ref(),
            page_arrivals,
        )
        .map_err(internal)?;
        let tasks = d
            .tasks
            .active_between(since, until, before.tasks, page_tasks)
            .map_err(internal)?;
        let earlier = web::PageCursor {
            records: Some(match records.first() {
                Some(oldest) if records.len() >= page_records => FleetCursor::of(oldest),
                _ => FleetCursor::end(),
            }),
            arrivals: Some(match alerts.first() {
                Some(oldest) if alerts.len() >= page_arrivals => ArrivalCursor::of(oldest),
                _ => ArrivalCursor::end(),
            }),
            tasks: Some(page_before(&tasks, page_tasks, |t| t.id)),
        };
        let nothing_before = web::PageCursor {
            records: Some(FleetCursor::end()),
            arrivals: Some(ArrivalCursor::end()),
            tasks: Some(0),
        };
        query.earlier = (earlier != nothing_before).then_some(earlier);
        Ok(web::timeline_page(&query, now, &records, &alerts, &tasks))
    })
    .await
}

async fn session(State(daemon): State<Arc<Daemon>>, Path(id): Path<String>) -> Response {
    let d = daemon.clone();
    blocking_page(move || {
        let records = api::session_records(&d, &id).map_err(internal)?;
        if records.is_empty() {
            return Err((
                StatusCode::NOT_FOUND,
                format!("no records for session {id}"),
            ));
        }
        Ok(web::session_page(&id, &records, d.now_ms()))
    })
    .await
}

async fn alert(State(daemon): State<Arc<Daemon>>, Path(id): Path<String>) -> Response {
    let d = daemon.clone();
    blocking_page(move || {
        let view = api::alert_view(&d, &id).map_err(internal)?;
        if view.arrivals.is_empty() {
            return Err((StatusCode::NOT_FOUND, format!("no alert {id} has arrived")));
        }
        Ok(web::alert_page(
            &id,
            &view.arrivals,
            &view.tasks,
            &view.records,
            d.now_ms(),
        ))
    })
    .await
}

fn internal(e: impl std::fmt::Display) -> (StatusCode, String) {
    (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

async fn blocking_page<F>(render: F) -> Response
where
    F: FnOnce() -> Result<String, (StatusCode, String)> + Send + 'static,
{
    match tokio::task::spawn_blocking(render).await {
        Ok(Ok(html)) => Html(html).into_response(),
        Ok(Err((status, why))) => page_error(status, &why),
        Err(e) => page_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}
