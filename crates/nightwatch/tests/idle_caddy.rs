//! Forward-auth through Debian's Caddy: an operator who already fronts the app with Caddy
//! gets the same classification and wake-up as the daemon's own proxy. Caddy asks
//! `nightwatch serve`'s `/idle/auth` before each request, and routes the app's health path to
//! `/idle/health`, so a monitor is answered while the app sleeps; the Caddyfile is the
//! README's; the app is a real container.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::daemon::{Daemon, read_reply};
use common::docker::{Containers, httpd_app, state};

const KUMA: &str = "Uptime-Kuma/2.0.2";
/// The Accept header Uptime Kuma's HTTP monitor sends (server/model/monitor.js).
const KUMA_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.9";
const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

struct Caddy(Child);

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn caddy_forward_auth_lets_the_app_sleep_under_a_monitor_and_wakes_it_for_a_person() {
    let caddy_bin = Command::new("caddy").arg("version").output();
    assert!(
        caddy_bin.is_ok_and(|o| o.status.success()),
        "caddy is required by this test (scripts/test installs Debian's caddy)"
    );
    let run = format!("caddy{}", std::process::id());
    let containers = Containers(run.clone());
    let name = format!("nw-caddy-shop-{run}");
    let upstream = httpd_app(&containers, &name);
    let home = common::scratch("idle", "caddy");
    let config = format!(
        "idle:\n  apps:\n    shop:\n      container: {name}\n      hosts: [shop.test]\n      upstream: {upstream}\n      ready: {{ http: /healthz }}\n      idle_after: 3s\n"
    );
    let daemon = Daemon::start(&home, Some(&config), &[]);
    daemon.wait_for("/api/idle/shop", 20, "awake", |v| v["phase"] == "awake");

    let port = common::free_port();
    let caddyfile = home.join("Caddyfile");
    // The README's Caddyfile (Idle control), on a port of the test's own.
    let nightwatch = &daemon.addr;
    std::fs::write(
        &caddyfile,
        format!(
            "{{
\tadmin off
\tauto_https off
}}

:{port} {{
\thandle /healthz {{
\t\trewrite * /idle/health
\t\treverse_proxy {nightwatch} {{
\t\t\theader_up X-Forwarded-Uri {{http.request.orig_uri}}
\t\t}}
\t}}
\thandle {{
\t\tforward_auth {nightwatch} {{
\t\t\turi /idle/auth
\t\t}}
\t\treverse_proxy {upstream}
\t}}
}}
"
        ),
    )
    .unwrap();
    let _caddy = Caddy(
        Command::new("caddy")
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&caddyfile)
            .env("HOME", &home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(home.join("caddy.log")).unwrap())
            .spawn()
            .expect("caddy starts"),
    );
    let front = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(&front).is_err() {
        assert!(
            Instant::now() < deadline,
            "caddy never listened: {}",
            std::fs::read_to_string(home.join("caddy.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // To the app's name, which Caddy passes on as X-Forwarded-Host.
    let send = |method: &str, path: &str, headers: &[(&str, &str)]| {
        use std::io::Write;
        let mut stream = std::net::TcpStream::connect(&front).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: shop.test\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("Content-Length: 0\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        read_reply(&mut stream)
    };
    let get = |agent: &str, path: &str| send("GET", path, &[("User-Agent", agent)]);
    // Uptime Kuma's HTTP monitor, as it sends its request (axios in Node.js).
    let kuma = |path: &str| {
        send(
            "GET",
            path,
            &[
                ("Accept", KUMA_ACCEPT),
                ("User-Agent", KUMA),
                ("Accept-Encoding", "gzip, compress, deflate, br"),
            ],
        )
    };

    // The monitor polls through Caddy: answered by the app while it is awake, and it sleeps.
    let started = Instant::now();
    while state(&name) != "paused" {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the app never slept\n{}",
            daemon.log()
        );
        let reply = kuma("/healthz");
        if reply.header("x-nightwatch-asleep").is_none() {
            assert_eq!(reply.status, 200, "{}", reply.text());
            assert_eq!(reply.text(), "ok\n");
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    daemon.wait_for("/api/idle/shop", 10, "asleep", |v| v["phase"] == "asleep");

    // Asleep: the monitor's health check is answered 2xx by the daemon, through Caddy, with
    // the app's kept answer marked as nightwatch's, so nobody is paged; it wakes nothing.
    for _ in 0..3 {
        let reply = kuma("/healthz");
        assert_eq!(reply.status, 200, "{}\n{}", reply.text(), daemon.log());
        assert_eq!(reply.text(), "ok\n");
        assert_eq!(reply.header("x-nightwatch-asleep"), Some("shop"));
    }
    // Anything else a robot asks is refused with why, never a 2xx: the monitor's home page,
    // a POST of a robot's.
    for (method, path) in [("GET", "/"), ("POST", "/orders/sync")] {
        let reply = send(method, path, &[("User-Agent", KUMA)]);
        assert_eq!(reply.status, 503, "{method} {path}: {}", reply.text());
        assert_eq!(reply.header("x-nightwatch-asleep"), Some("shop"));
        assert!(reply.header("retry-after").is_some());
        assert!(
            reply.text().contains("does not wake it"),
            "{method} {path}: {}",
            reply.text()
        );
    }
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(state(&name), "paused");
    let app = daemon.json("/api/idle/shop");
    assert_eq!(app["kept_since"], 3, "{app:#}");
    assert_eq!(app["refused_since"]["GET /"], 1, "{app:#}");

    // A person through Caddy wakes it and gets the app's answer.
    let reply = get(FIREFOX, "/");
    assert_eq!(reply.status, 200, "{}\n{}", reply.text(), daemon.log());
    assert_eq!(reply.text(), "shop\n");
    assert_eq!(state(&name), "running");
    let app = daemon.json("/api/idle/shop");
    assert_eq!(app["phase"], "awake");
    assert_eq!(app["last_person"]["path"], "/");
    assert_eq!(
        app["last_person"]["client"], "127.0.0.1",
        "the client Caddy served: {app:#}"
    );
    let records = daemon.json("/api/records?limit=200");
    let wakes = records["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "decision" && r["tool"] == "wake_app")
        .count();
    assert_eq!(wakes, 1, "one wake, for the person");

    // Awake, the health check Caddy routes to the daemon is the app's own answer, now.
    let reply = kuma("/healthz");
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.text(), "ok\n");
    assert_eq!(reply.header("x-nightwatch-asleep"), None);
}
