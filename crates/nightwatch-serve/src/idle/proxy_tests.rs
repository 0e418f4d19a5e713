//! The idle proxy against real servers on 127.0.0.1: an axum app (and a websocket echo) as
//! the upstream, the proxy in front of it, and a hyper client, a websocket client or a raw
//! TCP stream as the client. The last tests put the controller's admission rules at the door
//! (what a sleeping app's robots and people get, by method and path).

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::{SinkExt, StreamExt};
use hyper::body::{Frame, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

use super::control::Admit;
use super::proxy::{Admission, Doorman, Facts, Upstream, serve_proxy};
use super::ready::ReadyAnswer;
use crate::ServeError;
use crate::http::ConnectionLimits;

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// Bodies are generated and checked in pieces of this size.
const PIECE: usize = 64 * 1024;
const BIG: u64 = 50 * 1024 * 1024;

// ---- the upstream: a real axum app ----

#[derive(Default)]
struct App {
    /// Requests that reached the app.
    hits: AtomicUsize,
    /// The app has the first piece of a lockstep upload.
    first_piece_up: Notify,
    /// The client has the first piece of a lockstep download: the app may send the rest.
    first_piece_down: Notify,
}

async fn start_app() -> (SocketAddr, Arc<App>) {
    let app = Arc::new(App::default());
    let router = Router::new()
        .route("/hello", get(hello))
        .route("/echo", post(echo))
        .route("/headers", get(headers))
        .route("/hop-reply", get(hop_reply))
        .route("/big", get(big))
        .route("/count", post(count))
        .route("/slow", get(slow))
        .route("/port", get(port))
        .route("/lockstep-down", get(lockstep_down))
        .route("/lockstep-up", post(lockstep_up))
        .layer(middleware::from_fn_with_state(app.clone(), hit))
        .with_state(app.clone());
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    (addr, app)
}

async fn hit(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    app.hits.fetch_add(1, Ordering::SeqCst);
    next.run(request).await
}

async fn hello(uri: Uri) -> Response {
    (
        [
            ("x-app", "yes"),
            ("content-type", "text/plain; charset=utf-8"),
        ],
        format!("hello, {}\n", uri.query().unwrap_or("")),
    )
        .into_response()
}

/// The request's body back as it streams in, with its content type, as 201.
async fn echo(request: Request) -> Response {
    let kind = request.headers().get(header::CONTENT_TYPE).cloned();
    let mut response = Response::new(Body::new(request.into_body()));
    *response.status_mut() = StatusCode::CREATED;
    if let Some(kind) = kind {
        response.headers_mut().insert(header::CONTENT_TYPE, kind);
    }
    response
        .headers_mut()
        .insert("x-echo", "1".parse().unwrap());
    response
}

/// The request's headers, one `name: value` a line, as the app received them.
async fn headers(headers: HeaderMap) -> String {
    headers
        .iter()
        .map(|(name, value)| format!("{name}: {}\n", value.to_str().unwrap()))
        .collect()
}

async fn hop_reply() -> Response {
    (
        [
            ("connection", "x-reply-hop"),
            ("x-reply-hop", "secret"),
            ("keep-alive", "timeout=5"),
            ("proxy-authenticate", "Basic realm=\"app\""),
            ("x-kept", "yes"),
        ],
        "ok",
    )
        .into_response()
}

async fn big() -> Response {
    Response::new(Body::new(Generated::new(BIG)))
}

/// Reads the body as it streams in and says how much came and whether it was the pattern.
async fn count(request: Request) -> String {
    let mut check = Check::default();
    let mut body = request.into_body();
    while let Some(frame) = next_frame(&mut body).await {
        if let Ok(data) = frame.unwrap().into_data() {
            check.feed(&data);
        }
    }
    format!("{} {}", check.offset, check.intact)
}

async fn slow() -> &'static str {
    tokio::time::sleep(Duration::from_secs(5)).await;
    "late"
}

/// The port of the connection the request came on: the proxy's end of its pooled connection.
async fn port(ConnectInfo(peer): ConnectInfo<SocketAddr>) -> String {
    peer.port().to_string()
}

/// A first piece, then the rest only once the client says it has the first.
async fn lockstep_down(State(app): State<Arc<App>>) -> Response {
    let (send, receive) = mpsc::channel(1);
    tokio::spawn(async move {
        send.send(Bytes::from_static(b"first piece;"))
            .await
            .unwrap();
        app.first_piece_down.notified().await;
        send.send(Bytes::from_static(b"the rest")).await.unwrap();
    });
    Response::new(Body::new(Channel(receive)))
}

/// Says when the first piece of the body is in, then reads the rest.
async fn lockstep_up(State(app): State<Arc<App>>, request: Request) -> String {
    let mut body = request.into_body();
    let mut all = Vec::new();
    let mut told = false;
    while let Some(frame) = next_frame(&mut body).await {
        if let Ok(data) = frame.unwrap().into_data() {
            all.extend_from_slice(&data);
        }
        if !told {
            told = true;
            app.first_piece_up.notify_one();
        }
    }
    String::from_utf8(all).unwrap()
}

/// A websocket app that echoes every message back.
async fn start_websocket_echo() -> SocketAddr {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let Ok(mut socket) = tokio_tungstenite::accept_async(stream).await else {
                    return;
                };
                while let Some(Ok(message)) = socket.next().await {
                    if message.is_text() || message.is_binary() {
                        socket.send(message).await.unwrap();
                    }
                }
            });
        }
    });
    addr
}

// ---- bodies ----

/// `total` bytes of a pattern (byte `i` is `i % 251`, so pieces never line up with it),
/// made a piece at a time and never whole.
struct Generated {
    pattern: Bytes,
    sent: u64,
    total: u64,
}

impl Generated {
    fn new(total: u64) -> Generated {
        Generated {
            pattern: pattern(),
            sent: 0,
            total,
        }
    }
}

fn pattern() -> Bytes {
    (0..PIECE + 251).map(|i| (i % 251) as u8).collect()
}

impl hyper::body::Body for Generated {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.sent >= self.total {
            return Poll::Ready(None);
        }
        let n = (self.total - self.sent).min(PIECE as u64) as usize;
        let at = (self.sent % 251) as usize;
        let piece = self.pattern.slice(at..at + n);
        self.sent += n as u64;
        Poll::Ready(Some(Ok(Frame::data(piece))))
    }
}

/// Checks bytes against [`Generated`]'s pattern as they come.
struct Check {
    pattern: Bytes,
    offset: u64,
    intact: bool,
}

impl Default for Check {
    fn default() -> Check {
        Check {
            pattern: pattern(),
            offset: 0,
            intact: true,
        }
    }
}

impl Check {
    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let n = data.len().min(PIECE);
            let at = (self.offset % 251) as usize;
            self.intact &= data[..n] == self.pattern[at..at + n];
            self.offset += n as u64;
            data = &data[n..];
        }
    }
}

/// A body whose pieces are sent on a channel.
struct Channel(mpsc::Receiver<Bytes>);

impl hyper::body::Body for Channel {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|piece| piece.map(|p| Ok(Frame::data(p))))
    }
}

async fn next_frame<B>(body: &mut B) -> Option<Result<Frame<Bytes>, B::Error>>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
{
    std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await
}

async fn text(body: Incoming) -> String {
    let bytes = axum::body::to_bytes(Body::new(body), usize::MAX)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

// ---- the doorman and the proxy ----

/// Notes every request's facts; waits `wait` first; answers 503 itself when `answer`.
#[derive(Default)]
struct Door {
    wait: Duration,
    answer: bool,
    seen: Mutex<Vec<Facts>>,
}

impl Door {
    fn seen(&self) -> Vec<Facts> {
        self.seen.lock().unwrap().clone()
    }
}

impl Doorman for Door {
    fn admit<'a>(
        &'a self,
        facts: &'a Facts,
    ) -> Pin<Box<dyn Future<Output = Admission> + Send + 'a>> {
        Box::pin(async move {
            self.seen.lock().unwrap().push(facts.clone());
            if !self.wait.is_zero() {
                tokio::time::sleep(self.wait).await;
            }
            if self.answer {
                Admission::Answer(
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        [("retry-after", "30")],
                        "asleep; ask again later\n",
                    )
                        .into_response(),
                )
            } else {
                Admission::Forward
            }
        })
    }
}

struct Proxy {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<Result<(), ServeError>>,
}

impl Proxy {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stops the proxy and waits (at most 5 s) for it to return.
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(5), self.served)
            .await
            .expect("the proxy stops within 5 s")
            .unwrap()
            .unwrap();
    }
}

const LIMITS: ConnectionLimits = ConnectionLimits {
    max_connections: 64,
    header_read: Duration::from_secs(5),
};

async fn start_proxy(
    upstream: Upstream,
    door: Arc<dyn Doorman>,
    limits: ConnectionLimits,
) -> Proxy {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(serve_proxy(listener, upstream, door, limits, async move {
        let _ = stopped.await;
    }));
    Proxy {
        addr,
        stop: Some(stop),
        served,
    }
}

async fn proxy_to(app: SocketAddr, door: Arc<Door>) -> Proxy {
    start_proxy(Upstream::new(app), door, LIMITS).await
}

fn client() -> Client<HttpConnector, Body> {
    Client::builder(TokioExecutor::new()).build_http()
}

fn get_of(url: &str) -> hyper::Request<Body> {
    hyper::Request::get(url).body(Body::empty()).unwrap()
}

/// Sends `request` as raw bytes (it should ask `Connection: close`) and reads the whole reply:
/// its status line, its headers (names lower-cased) and its body.
async fn raw(addr: SocketAddr, request: &str) -> (String, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut reply))
        .await
        .expect("the reply comes within 5 s")
        .unwrap();
    let reply = String::from_utf8(reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().to_owned();
    let headers = lines
        .map(|line| {
            let (name, value) = line.split_once(':').unwrap();
            (name.trim().to_ascii_lowercase(), value.trim().to_owned())
        })
        .collect();
    (status, headers, body.to_owned())
}

fn names(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|line| {
            let (name, value) = line.split_once(": ").unwrap();
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

fn value<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

// ---- the tests ----

#[tokio::test]
async fn a_get_passes_through_with_the_apps_status_headers_and_body() {
    let (app, state) = start_app().await;
    let door = Arc::new(Door::default());
    let proxy = proxy_to(app, door.clone()).await;
    let request = hyper::Request::get(proxy.url("/hello?name=ada&x=1"))
        .header("host", "app.example")
        .header("user-agent", "Mozilla/5.0 (test)")
        .body(Body::empty())
        .unwrap();
    let response = client().request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["x-app"], "yes");
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert_eq!(response.headers()["content-length"], "20");
    assert_eq!(text(response.into_body()).await, "hello, name=ada&x=1\n");
    assert_eq!(state.hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        door.seen(),
        vec![Facts {
            method: "GET".into(),
            path: "/hello".into(),
            host: Some("app.example".into()),
            user_agent: Some("Mozilla/5.0 (test)".into()),
            client: LOCALHOST,
            upgrade: None,
        }]
    );
    proxy.stop().await;
}

#[tokio::test]
async fn a_post_body_passes_through_byte_for_byte() {
    let (app, _) = start_app().await;
    let proxy = proxy_to(app, Arc::new(Door::default())).await;
    // Every byte value, several times over, and not valid UTF-8.
    let sent: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 256) as u8).collect();
    let request = hyper::Request::post(proxy.url("/echo"))
        .header("content-type", "application/octet-stream")
        .body(Body::from(sent.clone()))
        .unwrap();
    let response = client().request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(
        response.headers()["content-type"],
        "application/octet-stream"
    );
    assert_eq!(response.headers()["x-echo"], "1");
    let back = axum::body::to_bytes(Body::new(response.into_body()), usize::MAX)
        .await
        .unwrap();
    assert_eq!(back.as_ref(), sent.as_slice());
    proxy.stop().await;
}

#[tokio::test]
async fn fifty_megabytes_stream_through_both_ways() {
    let (app, _) = start_app().await;
    let proxy = proxy_to(app, Arc::new(Door::default())).await;
    let client = client();

    let upload = hyper::Request::post(proxy.url("/count"))
        .body(Body::new(Generated::new(BIG)))
        .unwrap();
    let response = client.request(upload).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(text(response.into_body()).await, format!("{BIG} true"));

    let response = client.request(get_of(&proxy.url("/big"))).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut check = Check::default();
    while let Some(frame) = next_frame(&mut body).await {
        if let Ok(data) = frame.unwrap().into_data() {
            check.feed(&data);
        }
    }
    assert_eq!((check.offset, check.intact), (BIG, true));
    proxy.stop().await;
}

/// Bodies move piece by piece: the app has the first piece of an upload before the client
/// sends the second, and the client the first piece of a download before the app sends the
/// second. A proxy that gathered whole bodies would wait forever here.
#[tokio::test]
async fn bodies_are_streamed_not_gathered() {
    let (app, state) = start_app().await;
    let proxy = proxy_to(app, Arc::new(Door::default())).await;
    let client = client();
    let wait = Duration::from_secs(5);

    let (send, receive) = mpsc::channel(1);
    let upload = hyper::Request::post(proxy.url("/lockstep-up"))
        .body(Body::new(Channel(receive)))
        .unwrap();
    let answered = tokio::spawn(client.request(upload));
    send.send(Bytes::from_static(b"one;")).await.unwrap();
    tokio::time::timeout(wait, state.first_piece_up.notified())
        .await
        .expect("the app has the upload's first piece before the client sends the rest");
    send.send(Bytes::from_static(b"two")).await.unwrap();
    drop(send);
    let response = answered.await.unwrap().unwrap();
    assert_eq!(text(response.into_body()).await, "one;two");

    let response = client
        .request(get_of(&proxy.url("/lockstep-down")))
        .await
        .unwrap();
    let mut body = response.into_body();
    let first = tokio::time::timeout(wait, next_frame(&mut body))
        .await
        .expect("the client has the download's first piece before the app sends the rest")
        .unwrap()
        .unwrap();
    assert_eq!(first.into_data().unwrap(), "first piece;");
    state.first_piece_down.notify_one();
    assert_eq!(text(body).await, "the rest");
    proxy.stop().await;
}

#[tokio::test]
async fn hop_by_hop_headers_are_dropped_and_forwarding_headers_set() {
    let (app, _) = start_app().await;
    let door = Arc::new(Door::default());
    let proxy = proxy_to(app, door.clone()).await;
    let (status, _, body) = raw(
        proxy.addr,
        "GET /headers HTTP/1.1\r\n\
         Host: app.example:8443\r\n\
         User-Agent: curl/8.5.0\r\n\
         Connection: close, X-Hop\r\n\
         X-Hop: secret\r\n\
         Keep-Alive: timeout=5\r\n\
         TE: trailers\r\n\
         Trailer: X-Checksum\r\n\
         Upgrade: h2c\r\n\
         Proxy-Authorization: Basic Zm9vOmJhcg==\r\n\
         Proxy-Connection: keep-alive\r\n\
         X-Forwarded-For: 10.9.9.9\r\n\
         X-Forwarded-Host: claimed.example\r\n\
         X-Forwarded-Proto: https\r\n\
         X-Kept: yes\r\n\
         \r\n",
    )
    .await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    let seen = names(&body);
    for gone in [
        "connection",
        "x-hop",
        "keep-alive",
        "te",
        "trailer",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
        "transfer-encoding",
    ] {
        assert_eq!(value(&seen, gone), None, "{gone} reached the app: {seen:?}");
    }
    assert_eq!(value(&seen, "host"), Some("app.example:8443"));
    assert_eq!(value(&seen, "user-agent"), Some("curl/8.5.0"));
    assert_eq!(value(&seen, "x-kept"), Some("yes"));
    assert_eq!(value(&seen, "x-forwarded-for"), Some("10.9.9.9, 127.0.0.1"));
    assert_eq!(value(&seen, "x-forwarded-proto"), Some("http"));
    assert_eq!(value(&seen, "x-forwarded-host"), Some("app.example:8443"));
    // The doorman is told the TCP peer, not what X-Forwarded-For claims.
    assert_eq!(door.seen()[0].client, LOCALHOST);

    let (status, headers, body) = raw(
        proxy.addr,
        "GET /hop-reply HTTP/1.1\r\nHost: app.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(body, "ok");
    assert_eq!(value(&headers, "x-kept"), Some("yes"));
    for gone in ["x-reply-hop", "keep-alive", "proxy-authenticate"] {
        assert_eq!(
            value(&headers, gone),
            None,
            "{gone} reached the client: {headers:?}"
        );
    }
    proxy.stop().await;
}

#[tokio::test]
async fn an_answer_from_the_doorman_never_reaches_the_app() {
    let (app, state) = start_app().await;
    let door = Arc::new(Door {
        answer: true,
        ..Door::default()
    });
    let proxy = proxy_to(app, door.clone()).await;
    let client = client();
    for _ in 0..3 {
        let response = client.request(get_of(&proxy.url("/hello"))).await.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()["retry-after"], "30");
        assert_eq!(
            text(response.into_body()).await,
            "asleep; ask again later\n"
        );
    }
    assert_eq!(door.seen().len(), 3);
    assert_eq!(state.hits.load(Ordering::SeqCst), 0);
    proxy.stop().await;
}

#[tokio::test]
async fn a_doorman_that_waits_delays_the_request_then_it_is_forwarded() {
    let (app, state) = start_app().await;
    let door = Arc::new(Door {
        wait: Duration::from_millis(200),
        ..Door::default()
    });
    let proxy = proxy_to(app, door).await;
    let began = Instant::now();
    let response = client()
        .request(get_of(&proxy.url("/hello")))
        .await
        .unwrap();
    assert!(began.elapsed() >= Duration::from_millis(200));
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(text(response.into_body()).await, "hello, \n");
    assert_eq!(state.hits.load(Ordering::SeqCst), 1);
    proxy.stop().await;
}

#[tokio::test]
async fn connections_to_the_app_are_kept_alive_and_reused() {
    let (app, _) = start_app().await;
    let proxy = proxy_to(app, Arc::new(Door::default())).await;
    let client = client();
    let mut ports = Vec::new();
    for _ in 0..5 {
        let response = client.request(get_of(&proxy.url("/port"))).await.unwrap();
        ports.push(text(response.into_body()).await);
    }
    ports.dedup();
    assert_eq!(
        ports.len(),
        1,
        "one pooled connection to the app: {ports:?}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn websocket_messages_pass_through_both_ways() {
    let app = start_websocket_echo().await;
    let door = Arc::new(Door::default());
    let proxy = proxy_to(app, door.clone()).await;
    let stream = TcpStream::connect(proxy.addr).await.unwrap();
    let (mut socket, response) =
        tokio_tungstenite::client_async(format!("ws://{}/socket", proxy.addr), stream)
            .await
            .unwrap();
    assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
    for message in [
        Message::text("hello through the proxy"),
        Message::binary(vec![0u8, 1, 2, 255]),
        Message::text("x".repeat(200_000)),
    ] {
        socket.send(message.clone()).await.unwrap();
        let back = tokio::time::timeout(Duration::from_secs(5), socket.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(back, message);
    }
    socket.close(None).await.unwrap();
    let seen = door.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].upgrade.as_deref(), Some("websocket"));
    assert_eq!(seen[0].path, "/socket");
    proxy.stop().await;
}

/// An open websocket holds its connection's place under the limit until it closes, and is
/// closed when the proxy stops.
#[tokio::test]
async fn a_websocket_counts_against_the_limit_and_closes_at_shutdown() {
    let app = start_websocket_echo().await;
    let limits = ConnectionLimits {
        max_connections: 1,
        ..LIMITS
    };
    let proxy = start_proxy(Upstream::new(app), Arc::new(Door::default()), limits).await;
    let stream = TcpStream::connect(proxy.addr).await.unwrap();
    let (mut socket, _) = tokio_tungstenite::client_async(format!("ws://{}/", proxy.addr), stream)
        .await
        .unwrap();
    socket.send(Message::text("ping")).await.unwrap();
    assert_eq!(socket.next().await.unwrap().unwrap(), Message::text("ping"));
    let (status, _, _) = raw(
        proxy.addr,
        "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable");

    proxy.stop().await;
    let ended = tokio::time::timeout(Duration::from_secs(5), socket.next())
        .await
        .expect("the websocket is closed when the proxy stops");
    assert!(
        !matches!(ended, Some(Ok(Message::Text(_) | Message::Binary(_)))),
        "{ended:?}"
    );
}

#[tokio::test]
async fn an_app_that_does_not_listen_is_a_502_saying_why() {
    let gone = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let app = gone.local_addr().unwrap();
    drop(gone);
    let proxy = proxy_to(app, Arc::new(Door::default())).await;
    let response = client().request(get_of(&proxy.url("/"))).await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(
        text(response.into_body()).await,
        format!("{{\"error\":\"the app at {app} does not answer: connection refused\"}}")
    );
    proxy.stop().await;
}

#[tokio::test]
async fn an_app_that_hangs_up_without_answering_is_a_502() {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let app = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request).await;
            drop(stream);
        }
    });
    let proxy = proxy_to(app, Arc::new(Door::default())).await;
    let response = tokio::time::timeout(
        Duration::from_secs(5),
        client().request(get_of(&proxy.url("/"))),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    let why = text(response.into_body()).await;
    assert!(
        why.starts_with(&format!("{{\"error\":\"the app at {app} does not answer: ")),
        "{why}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn an_app_slow_to_answer_is_a_504_in_time() {
    let (app, _) = start_app().await;
    let upstream = Upstream {
        answer_within: Duration::from_millis(300),
        ..Upstream::new(app)
    };
    let proxy = start_proxy(upstream, Arc::new(Door::default()), LIMITS).await;
    let began = Instant::now();
    let response = client().request(get_of(&proxy.url("/slow"))).await.unwrap();
    let took = began.elapsed();
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_eq!(
        text(response.into_body()).await,
        format!("{{\"error\":\"the app at {app} did not answer within 300 ms\"}}")
    );
    proxy.stop().await;
}

/// The answer's deadline counts from the request's last byte: an upload slower than it is
/// not cut short.
#[tokio::test]
async fn a_slow_upload_is_not_cut_short_by_the_answer_deadline() {
    let (app, _) = start_app().await;
    let upstream = Upstream {
        answer_within: Duration::from_millis(300),
        ..Upstream::new(app)
    };
    let proxy = start_proxy(upstream, Arc::new(Door::default()), LIMITS).await;
    let (send, receive) = mpsc::channel(1);
    let upload = hyper::Request::post(proxy.url("/lockstep-up"))
        .body(Body::new(Channel(receive)))
        .unwrap();
    let answered = tokio::spawn(client().request(upload));
    for piece in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        send.send(Bytes::from(piece)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(send);
    let response = answered.await.unwrap().unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(text(response.into_body()).await, "abcdefgh");
    proxy.stop().await;
}

/// A client that asks `Expect: 100-continue` (curl does for large uploads) is told to go on
/// and its body reaches the app.
#[tokio::test]
async fn an_upload_that_expects_100_continue_goes_through() {
    let (app, _) = start_app().await;
    let proxy = proxy_to(app, Arc::new(Door::default())).await;
    let mut stream = TcpStream::connect(proxy.addr).await.unwrap();
    stream
        .write_all(
            b"POST /echo HTTP/1.1\r\nHost: app.example\r\nContent-Length: 5\r\n\
              Expect: 100-continue\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
    let mut interim = [0u8; 25];
    tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut interim))
        .await
        .expect("told to continue within 5 s")
        .unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    stream.write_all(b"hello").await.unwrap();
    let mut reply = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut reply))
        .await
        .expect("answered within 5 s")
        .unwrap();
    assert!(reply.starts_with("HTTP/1.1 201 Created\r\n"), "{reply}");
    assert!(reply.ends_with("\r\n\r\nhello"), "{reply}");
    proxy.stop().await;
}

// ---- the admission rules at the door ----

/// The controller's rules at the door: nightwatch-idle's classifier and admission, and the
/// reply `http::answer` makes of them, for an app asleep until a person's request wakes it
/// (no container engine here: a wake is a flag).
struct Rules {
    spec: nightwatch_idle::AppSpec,
    classifier: Mutex<nightwatch_idle::Classifier>,
    phase: Mutex<nightwatch_idle::Phase>,
    kept: ReadyAnswer,
    wakes: AtomicUsize,
}

impl Rules {
    fn asleep() -> Rules {
        let yaml = "apps:\n  shop:\n    container: shop\n    listen: 127.0.0.1:8080\n    upstream: 127.0.0.1:18080\n    idle_after: 15m\n    ready: { http: /healthz }\n    robot_agents: [orders-sync]\n";
        let file: nightwatch_idle::IdleFile = yaml_serde::from_str(yaml).unwrap();
        Rules {
            spec: file.check().unwrap().remove(0),
            classifier: Mutex::new(nightwatch_idle::Classifier::new()),
            phase: Mutex::new(nightwatch_idle::Phase::Asleep),
            kept: ReadyAnswer {
                status: 200,
                content_type: Some("application/json".into()),
                body: Bytes::from_static(b"{\"status\":\"ok\"}"),
            },
            wakes: AtomicUsize::new(0),
        }
    }
}

impl Doorman for Rules {
    fn admit<'a>(
        &'a self,
        facts: &'a Facts,
    ) -> Pin<Box<dyn Future<Output = Admission> + Send + 'a>> {
        Box::pin(async move {
            let request = nightwatch_idle::Request {
                method: &facts.method,
                path: &facts.path,
                user_agent: facts.user_agent.as_deref(),
                client: facts.client,
                at_ms: 0,
            };
            let traffic = self
                .classifier
                .lock()
                .unwrap()
                .classify(&self.spec, &request);
            let mut phase = self.phase.lock().unwrap();
            let admit = match nightwatch_idle::admission(
                &self.spec,
                *phase,
                &traffic,
                &facts.method,
                &facts.path,
            ) {
                nightwatch_idle::Admission::Forward => Admit::Forward,
                nightwatch_idle::Admission::Wake => {
                    self.wakes.fetch_add(1, Ordering::SeqCst);
                    *phase = nightwatch_idle::Phase::Awake;
                    Admit::Forward
                }
                nightwatch_idle::Admission::Kept => Admit::Kept(Some(self.kept.clone())),
                nightwatch_idle::Admission::Refused(refusal) => Admit::from(refusal),
            };
            match super::http::answer(&self.spec.name, admit) {
                None => Admission::Forward,
                Some(reply) => Admission::Answer(reply),
            }
        })
    }
}

const KUMA: &str = "Uptime-Kuma/2.0.2";
const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

fn asked(method: &str, url: &str, agent: &str, body: &'static str) -> hyper::Request<Body> {
    hyper::Request::builder()
        .method(method)
        .uri(url)
        .header("user-agent", agent)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap()
}

/// Asserts a refusal by nightwatch for a sleeping app: 503, `Retry-After`,
/// `X-Nightwatch-Asleep`, and why in the body, which names `asked`.
async fn assert_refused_asleep(response: hyper::Response<Incoming>, asked: &str) {
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()["retry-after"], "30");
    assert_eq!(response.headers()["x-nightwatch-asleep"], "shop");
    assert_eq!(response.headers()["content-type"], "application/json");
    let why = text(response.into_body()).await;
    assert!(why.contains(asked), "{why}");
    assert!(why.contains("does not wake it"), "{why}");
}

/// The tester's sync client: a robot (here by its configured user agent) POSTing to a
/// sleeping app is told 503 with when to ask again, never a 200 the app did not send, and
/// nothing reaches the app.
#[tokio::test]
async fn a_robots_post_to_a_sleeping_app_is_503_with_retry_after_never_200() {
    let (app, state) = start_app().await;
    let rules = Arc::new(Rules::asleep());
    let proxy = start_proxy(Upstream::new(app), rules.clone(), LIMITS).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
    for path in ["/orders/sync", "/healthz"] {
        let response = client
            .request(asked(
                "POST",
                &proxy.url(path),
                "orders-sync/1.0",
                "{\"order\":1}",
            ))
            .await
            .unwrap();
        assert_refused_asleep(response, &format!("POST {path}")).await;
    }
    assert_eq!(
        state.hits.load(Ordering::SeqCst),
        0,
        "nothing reached the app"
    );
    assert_eq!(
        rules.wakes.load(Ordering::SeqCst),
        0,
        "a robot wakes nothing"
    );
    proxy.stop().await;
}

/// A monitor's GET or HEAD of the health path gets the kept readiness answer, marked as
/// nightwatch's; the same monitor asking any other path is refused.
#[tokio::test]
async fn a_robots_health_check_gets_the_kept_answer_and_nothing_else_does() {
    let (app, state) = start_app().await;
    let rules = Arc::new(Rules::asleep());
    let proxy = start_proxy(Upstream::new(app), rules.clone(), LIMITS).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();

    let response = client
        .request(asked("GET", &proxy.url("/healthz?full=1"), KUMA, ""))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["x-nightwatch-asleep"], "shop");
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(text(response.into_body()).await, "{\"status\":\"ok\"}");

    let (status, headers, body) = raw(
        proxy.addr,
        &format!("HEAD /healthz HTTP/1.1\r\nHost: shop\r\nUser-Agent: {KUMA}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(value(&headers, "x-nightwatch-asleep"), Some("shop"));
    assert_eq!(body, "", "a HEAD gets no body");

    for (agent, path) in [(KUMA, "/"), (KUMA, "/cart"), (FIREFOX, "/favicon.ico")] {
        let response = client
            .request(asked("GET", &proxy.url(path), agent, ""))
            .await
            .unwrap();
        assert_refused_asleep(response, &format!("GET {path}")).await;
    }
    assert_eq!(state.hits.load(Ordering::SeqCst), 0);
    assert_eq!(rules.wakes.load(Ordering::SeqCst), 0);
    proxy.stop().await;
}

/// A person's request, whatever its method, wakes the app and is forwarded to it.
#[tokio::test]
async fn a_persons_request_wakes_the_app_and_is_forwarded() {
    let (app, state) = start_app().await;
    let rules = Arc::new(Rules::asleep());
    let proxy = start_proxy(Upstream::new(app), rules.clone(), LIMITS).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
    let response = client
        .request(asked("POST", &proxy.url("/echo"), FIREFOX, "{\"cart\":2}"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(response.headers()["x-echo"], "1", "the app's own answer");
    assert!(response.headers().get("x-nightwatch-asleep").is_none());
    assert_eq!(text(response.into_body()).await, "{\"cart\":2}");
    assert_eq!(rules.wakes.load(Ordering::SeqCst), 1);
    // Awake now: the robot's POST that was refused is forwarded to the app.
    let response = client
        .request(asked(
            "POST",
            &proxy.url("/echo"),
            "orders-sync/1.0",
            "{\"order\":1}",
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(text(response.into_body()).await, "{\"order\":1}");
    assert_eq!(state.hits.load(Ordering::SeqCst), 2);
    assert_eq!(rules.wakes.load(Ordering::SeqCst), 1);
    proxy.stop().await;
}
