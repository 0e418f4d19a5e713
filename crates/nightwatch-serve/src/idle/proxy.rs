//! The reverse proxy in front of one app: every request is shown to a [`Doorman`] (the idle
//! controller) before anything reaches the app, and is then forwarded or answered here.
//!
//! ```text
//!  client --HTTP/1.1--> serve_proxy --(admit?)--> Doorman
//!                           |  Forward: hop-by-hop headers dropped, X-Forwarded-* set,
//!                           |           bodies streamed both ways, kept-alive pool
//!                           v
//!                          app (upstream) --101--> both upgraded streams joined (websockets)
//! ```
//!
//! Replies the proxy makes itself: 502 when the app cannot be reached (the reason in JSON),
//! 504 when it does not start answering within [`Upstream::answer_within`] of the request's
//! last byte reaching it.

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, StatusCode, Uri, Version};
use axum::response::{IntoResponse, Response};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

use crate::ServeError;
use crate::api::ApiError;
use crate::http::{Accepted, ConnectionLimits, Upgrades, closed, serve_with};

/// What the proxy knows of a request before forwarding it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The `Host` the client sent (or the authority of an absolute request line).
    pub host: Option<String>,
    pub user_agent: Option<String>,
    /// The TCP peer's address. Never taken from `X-Forwarded-For`, which the client writes.
    pub client: IpAddr,
    /// The protocol the client asks to switch to (`websocket`), when it asks.
    pub upgrade: Option<String>,
}

/// The controller's answer.
pub enum Admission {
    /// Forward to the app's upstream now.
    Forward,
    /// Answer here without reaching the app (a robot asking a sleeping app; a wake that
    /// failed).
    Answer(Response),
}

/// The idle controller, as the proxy sees it.
pub trait Doorman: Send + Sync + 'static {
    /// Called once per request (and so once per websocket upgrade) before anything is
    /// forwarded; may wait (a wake in progress), bounded by the doorman itself.
    fn admit<'a>(
        &'a self,
        facts: &'a Facts,
    ) -> Pin<Box<dyn Future<Output = Admission> + Send + 'a>>;
}

/// The app a proxy forwards to, and how long it is waited for.
#[derive(Clone, Debug)]
pub struct Upstream {
    /// Where the app listens (HTTP/1.1, plain).
    pub addr: SocketAddr,
    /// How long the app may take to start answering (its status and headers), counted from
    /// the last byte of the request's body reaching it, so a slow upload is not cut short;
    /// past it the client gets 504.
    pub answer_within: Duration,
    /// How long connecting to the app may take; past it the client gets 502.
    pub connect_within: Duration,
}

impl Upstream {
    /// The app at `addr`, waited 60 s for an answer and 10 s for a connection.
    pub fn new(addr: SocketAddr) -> Upstream {
        Upstream {
            addr,
            answer_within: Duration::from_secs(60),
            connect_within: Duration::from_secs(10),
        }
    }
}

/// How long a connection to the app is kept for the next request. Below the 5 s that Node.js
/// servers keep an idle connection by default, so the proxy seldom sends a request on a
/// connection the app is closing at that moment (which would fail it with 502).
const POOL_IDLE: Duration = Duration::from_secs(4);

/// Serves one app's proxy on `listener` within `limits` until `shutdown` completes, forwarding
/// the requests `doorman` admits to `upstream`. At shutdown, requests in flight get a
/// deadline to finish (as the daemon's own do) and websockets are closed.
pub async fn serve_proxy(
    listener: tokio::net::TcpListener,
    upstream: Upstream,
    doorman: Arc<dyn Doorman>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let proxy = Arc::new(Proxy::new(upstream, doorman, &limits));
    serve_with(
        listener,
        limits,
        Upgrades::Served,
        shutdown,
        move |accepted| {
            let proxy = proxy.clone();
            hyper::service::service_fn(move |request| {
                let proxy = proxy.clone();
                let accepted = accepted.clone();
                async move { Ok::<_, Infallible>(proxy.handle(request, &accepted).await) }
            })
        },
    )
    .await
}

type Pool = Client<HttpConnector, Tracked>;

struct Proxy {
    upstream: Upstream,
    /// `addr` as a URI's authority.
    authority: axum::http::uri::Authority,
    doorman: Arc<dyn Doorman>,
    pool: Pool,
}

impl Proxy {
    fn new(upstream: Upstream, doorman: Arc<dyn Doorman>, limits: &ConnectionLimits) -> Proxy {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(upstream.connect_within));
        let pool = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE)
            .pool_max_idle_per_host(limits.max_connections)
            .build(connector);
        let authority = upstream
            .addr
            .to_string()
            .parse()
            .expect("a socket address is an authority");
        Proxy {
            upstream,
            authority,
            doorman,
            pool,
        }
    }

    async fn handle(&self, mut request: hyper::Request<Incoming>, conn: &Accepted) -> Response {
        if request.method() == Method::CONNECT {
            return refusal(
                StatusCode::METHOD_NOT_ALLOWED,
                "this proxy forwards to one app; it does not open tunnels (CONNECT)",
            );
        }
        let upgrade = upgrade_asked(request.headers());
        let facts = Facts::of(&request, conn.peer.ip().to_canonical(), upgrade.as_ref());
        match self.doorman.admit(&facts).await {
            Admission::Forward => {}
            Admission::Answer(response) => return response,
        }
        drop(facts);

        let client_side = upgrade.is_some().then(|| hyper::upgrade::on(&mut request));
        let (mut parts, body) = request.into_parts();
        let host = parts
            .headers
            .get(header::HOST)
            .cloned()
            .or_else(|| parts.uri.authority().and_then(|a| a.as_str().parse().ok()));
        strip_hop_by_hop(&mut parts.headers);
        if let Some(protocol) = upgrade {
            parts
                .headers
                .insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
            parts.headers.insert(header::UPGRADE, protocol);
        }
        forwarded_headers(&mut parts.headers, conn.peer.ip().to_canonical(), host);
        let path = parts
            .uri
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| axum::http::uri::PathAndQuery::from_static("/"));
        parts.uri = match Uri::builder()
            .scheme("http")
            .authority(self.authority.clone())
            .path_and_query(path)
            .build()
        {
            Ok(uri) => uri,
            Err(e) => {
                return refusal(
                    StatusCode::BAD_REQUEST,
                    format!("the request's target cannot be forwarded: {e}"),
                );
            }
        };
        parts.version = Version::HTTP_11;
        let progress = Arc::new(Progress::new());
        let forwarded = hyper::Request::from_parts(
            parts,
            Tracked {
                inner: body,
                progress: progress.clone(),
            },
        );

        let mut response = match self.answer(forwarded, &progress).await {
            Ok(response) => response,
            Err(refused) => return refused,
        };
        if response.status() == StatusCode::SWITCHING_PROTOCOLS {
            let Some(client_side) = client_side else {
                return refusal(
                    StatusCode::BAD_GATEWAY,
                    format!(
                        "the app at {} switched protocols though the request did not ask to",
                        self.upstream.addr
                    ),
                );
            };
            let app_side = hyper::upgrade::on(&mut response);
            tokio::spawn(tunnel(
                client_side,
                app_side,
                conn.closing.clone(),
                conn.slot.clone(),
            ));
            let kept = response.headers().get(header::UPGRADE).cloned();
            strip_hop_by_hop(response.headers_mut());
            if let Some(protocol) = kept {
                let headers = response.headers_mut();
                headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
                headers.insert(header::UPGRADE, protocol);
            }
        } else {
            strip_hop_by_hop(response.headers_mut());
        }
        response.map(Body::new)
    }

    /// The app's answer to `request`, or the proxy's 502 or 504 when there is none.
    async fn answer(
        &self,
        request: hyper::Request<Tracked>,
        progress: &Progress,
    ) -> Result<hyper::Response<Incoming>, Response> {
        let within = self.upstream.answer_within;
        let asked = self.pool.request(request);
        tokio::pin!(asked);
        let mut deadline = tokio::time::Instant::now() + within;
        loop {
            tokio::select! {
                answered = &mut asked => {
                    return answered.map_err(|e| refusal(
                        StatusCode::BAD_GATEWAY,
                        format!("the app at {} does not answer: {}", self.upstream.addr, why(&e)),
                    ));
                }
                () = tokio::time::sleep_until(deadline) => {
                    // The clock starts again at each piece of the body the app takes.
                    let last = progress.last();
                    if last + within > deadline.into_std() {
                        deadline = (last + within).into();
                        continue;
                    }
                    return Err(refusal(
                        StatusCode::GATEWAY_TIMEOUT,
                        format!(
                            "the app at {} did not answer within {} ms",
                            self.upstream.addr,
                            within.as_millis()
                        ),
                    ));
                }
            }
        }
    }
}

impl Facts {
    fn of(
        request: &hyper::Request<Incoming>,
        client: IpAddr,
        upgrade: Option<&HeaderValue>,
    ) -> Facts {
        let text = |v: &HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
        let headers = request.headers();
        Facts {
            method: request.method().as_str().to_owned(),
            path: request.uri().path().to_owned(),
            host: headers
                .get(header::HOST)
                .map(text)
                .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned())),
            user_agent: headers.get(header::USER_AGENT).map(text),
            client,
            upgrade: upgrade.map(text),
        }
    }
}

/// A refusal with why, as the daemon's JSON routes send one: `{"error": "..."}`.
fn refusal(status: StatusCode, why: impl Into<String>) -> Response {
    ApiError::new(status, why).into_response()
}

/// The protocol a request asks to switch to: its `Upgrade`, when `Connection` names
/// `upgrade`.
fn upgrade_asked(headers: &HeaderMap) -> Option<HeaderValue> {
    let asks = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"));
    if asks {
        headers.get(header::UPGRADE).cloned()
    } else {
        None
    }
}

/// Removes the headers meant for one hop only: `Connection` and those it names, `Keep-Alive`,
/// `Proxy-*`, `TE`, `Trailer`, `Transfer-Encoding` and `Upgrade` (which an upgrade sets again).
/// `Host` stays even when `Connection` names it: the app is told the host the client asked.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    if headers.contains_key(header::CONNECTION) {
        let named: Vec<HeaderName> = headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
            .filter(|name| *name != header::HOST)
            .collect();
        for name in named {
            headers.remove(name);
        }
    }
    for name in [
        header::CONNECTION,
        HeaderName::from_static("keep-alive"),
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
    if headers
        .keys()
        .any(|name| name.as_str().starts_with("proxy-"))
    {
        let proxies: Vec<HeaderName> = headers
            .keys()
            .filter(|name| name.as_str().starts_with("proxy-"))
            .cloned()
            .collect();
        for name in proxies {
            headers.remove(name);
        }
    }
}

static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
static X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
static X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");

/// Appends the client's address to `X-Forwarded-For` (what came before it is the client's own
/// claim, passed on as such) and sets `X-Forwarded-Proto` and `X-Forwarded-Host`.
fn forwarded_headers(headers: &mut HeaderMap, client: IpAddr, host: Option<HeaderValue>) {
    let mut chain = String::new();
    for earlier in headers.get_all(&X_FORWARDED_FOR) {
        let earlier = String::from_utf8_lossy(earlier.as_bytes());
        let earlier = earlier.trim();
        if !earlier.is_empty() {
            chain.push_str(earlier);
            chain.push_str(", ");
        }
    }
    chain.push_str(&client.to_string());
    match HeaderValue::from_str(&chain) {
        Ok(value) => {
            headers.insert(X_FORWARDED_FOR.clone(), value);
        }
        Err(_) => {
            // An earlier hop's bytes that cannot be written back: only the client then.
            let alone = HeaderValue::from_str(&client.to_string()).expect("an address is ASCII");
            headers.insert(X_FORWARDED_FOR.clone(), alone);
        }
    }
    headers.insert(X_FORWARDED_PROTO.clone(), HeaderValue::from_static("http"));
    match host {
        Some(host) => {
            headers.insert(X_FORWARDED_HOST.clone(), host);
        }
        None => {
            headers.remove(&X_FORWARDED_HOST);
        }
    }
}

/// Why a request to the app failed, in a few words: `connection refused`, not the client's
/// chain of wrappers.
fn why(error: &hyper_util::client::legacy::Error) -> String {
    use std::error::Error;
    use std::io::ErrorKind;
    let mut cause: Option<&(dyn Error + 'static)> = Some(error);
    let mut deepest = error.to_string();
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                ErrorKind::ConnectionRefused => "connection refused".into(),
                ErrorKind::ConnectionReset => "connection reset".into(),
                ErrorKind::ConnectionAborted => "connection aborted".into(),
                ErrorKind::TimedOut => "connecting timed out".into(),
                ErrorKind::HostUnreachable => "host unreachable".into(),
                ErrorKind::NetworkUnreachable => "network unreachable".into(),
                _ => io.to_string(),
            };
        }
        deepest = c.to_string();
        cause = c.source();
    }
    deepest
}

/// Joins the client's and the app's upgraded streams until either side closes or the proxy
/// stops; holds the client connection's place under the limit meanwhile.
async fn tunnel(
    client: hyper::upgrade::OnUpgrade,
    app: hyper::upgrade::OnUpgrade,
    mut closing: tokio::sync::watch::Receiver<bool>,
    slot: Arc<tokio::sync::OwnedSemaphorePermit>,
) {
    let (client, app) = match tokio::try_join!(client, app) {
        Ok(both) => both,
        Err(e) => {
            tracing::debug!("an upgrade through the proxy did not complete: {e}");
            return;
        }
    };
    let mut client = TokioIo::new(client);
    let mut app = TokioIo::new(app);
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut app) => {}
        () = closed(&mut closing) => {}
    }
    drop(slot);
}

/// When the app last took a piece of the request's body.
struct Progress {
    start: Instant,
    /// Milliseconds from `start`.
    last_ms: AtomicU64,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// The client's request body on its way to the app, piece by piece (never whole), noting
/// each piece the app takes.
struct Tracked {
    inner: Incoming,
    progress: Arc<Progress>,
}

impl hyper::body::Body for Tracked {
    type Data = axum::body::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if polled.is_ready() {
            self.progress.touch();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
