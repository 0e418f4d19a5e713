//! The idle proxy's overhead: `cargo bench -p nightwatch-serve --bench proxy`.
//!
//! Starts on 127.0.0.1 a trivial app (axum; `GET /` answers a fixed 13-byte body) on a
//! runtime of one thread, as a separate process would be, and the idle proxy in front of it on
//! a runtime of two threads, as the daemon runs, with a doorman that always forwards. Debian's
//! `wrk` then sends `GET /` to the app directly and through the proxy, at 1 and 16
//! connections, for `BENCH_SECONDS` (default 10) each after a 1 s warm-up, and the figures of
//! both are printed with their difference (the proxy's overhead). All of it shares the
//! machine's cores with wrk, so the figures are of the whole loop on this machine, not of the
//! proxy alone.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use nightwatch_serve::http::ConnectionLimits;

#[path = "../../nightwatch/benches/support/wrk.rs"]
mod wrk;

use nightwatch_serve::idle::proxy::{Admission, Doorman, Facts, Upstream, serve_proxy};
use wrk::Wrk;

const CONNECTIONS: [u32; 2] = [1, 16];
const BODY: &str = "hello, world\n";

struct AlwaysForward;

impl Doorman for AlwaysForward {
    fn admit<'a>(&'a self, _: &'a Facts) -> Pin<Box<dyn Future<Output = Admission> + Send + 'a>> {
        Box::pin(std::future::ready(Admission::Forward))
    }
}

fn main() {
    if Command::new("wrk").arg("--version").output().is_err() {
        eprintln!("wrk is not installed (Debian: apt-get install wrk); nothing measured");
        std::process::exit(1);
    }
    let seconds: u32 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);

    let app_runtime = runtime(1);
    let app = app_runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = axum::Router::new().route("/", axum::routing::get(|| async { BODY }));
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        addr
    });

    let proxy_runtime = runtime(2);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (proxy, served) = proxy_runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = ConnectionLimits {
            max_connections: 1024,
            header_read: Duration::from_secs(30),
        };
        let served = tokio::spawn(serve_proxy(
            listener,
            Upstream::new(app),
            Arc::new(AlwaysForward),
            limits,
            async move {
                let _ = stopped.await;
            },
        ));
        (addr, served)
    });

    println!(
        "machine: {} cores, load average {} at start; {seconds} s a row, GET / ({} bytes)",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_default(),
        BODY.len(),
    );
    println!(
        "{:>7} {:>11} {:>10} {:>9} {:>9} {:>9}",
        "target", "connections", "req/s", "p50 ms", "p90 ms", "p99 ms"
    );
    let mut rows = Vec::new();
    for connections in CONNECTIONS {
        let direct = measure(app, connections, seconds);
        let proxied = measure(proxy, connections, seconds);
        for (name, w) in [("direct", &direct), ("proxy", &proxied)] {
            println!(
                "{name:>7} {connections:>11} {:>10.0} {:>9.3} {:>9.3} {:>9.3}",
                w.rate, w.p50, w.p90, w.p99
            );
        }
        rows.push((connections, direct, proxied));
    }
    println!("overhead of the proxy (through it minus direct):");
    for (connections, direct, proxied) in rows {
        println!(
            "  {connections:>2} connection(s): median {:+.3} ms, p99 {:+.3} ms, requests/s {:+.1}%",
            proxied.p50 - direct.p50,
            proxied.p99 - direct.p99,
            (proxied.rate / direct.rate - 1.0) * 100.0
        );
    }

    let _ = stop.send(());
    proxy_runtime
        .block_on(served)
        .expect("the proxy's task ends")
        .expect("the proxy stops cleanly");
}

fn runtime(threads: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// wrk's figures for `GET /` at `addr`, after a 1 s warm-up (not counted). Fails the run on
/// any error or non-2xx reply: a figure with errors in it is not a figure.
fn measure(addr: SocketAddr, connections: u32, seconds: u32) -> Wrk {
    let url = format!("http://{addr}/");
    let run = |seconds: u32| {
        let out = Command::new("wrk")
            .args([
                "-t",
                &connections.min(2).to_string(),
                "-c",
                &connections.to_string(),
                "-d",
                &format!("{seconds}s"),
                "--latency",
                &url,
            ])
            .output()
            .expect("wrk runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(1);
    let text = run(seconds);
    let w = Wrk::parse(&text);
    assert!(
        w.requests > 0 && w.errors == 0 && w.non_2xx == 0,
        "wrk saw errors or no replies:\n{text}"
    );
    w
}
