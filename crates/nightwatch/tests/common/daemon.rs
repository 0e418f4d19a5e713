//! `nightwatch serve` as a real process on 127.0.0.1, and a small HTTP/1.1 client to talk to it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One running daemon; SIGTERM and wait when dropped.
pub struct Daemon {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    pub addr: String,
    pub home: PathBuf,
    child: Option<Child>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Daemon {
    /// Starts `nightwatch serve --listen 127.0.0.1:0` with `home` as its data directory and
    /// `serve.yaml` (when given) written there; waits until it says where it listens.
    /// The child is waited for by [`Daemon::stop`], [`Daemon::crash`] or `Drop`.
    #[allow(clippy::zombie_processes)]
    pub fn start(home: &Path, serve_yaml: Option<&str>, env: &[(&str, &str)]) -> Daemon {
        std::fs::create_dir_all(home).unwrap();
        if let Some(text) = serve_yaml {
            std::fs::write(home.join("serve.yaml"), text).unwrap();
        }
        let mut command = Command::new(env!("CARGO_BIN_EXE_nightwatch"));
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("NIGHTWATCH_") {
                command.env_remove(key);
            }
        }
        command.env("NIGHTWATCH_HOME", home);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("nightwatch serve starts");
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = stderr.clone();
        let mut err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            line.clear();
            let n = out.read_line(&mut line).unwrap_or(0);
            if let Some(url) = line.trim().strip_prefix("nightwatch serve: listening on ") {
                let url = url.to_owned();
                std::thread::spawn(move || {
                    let mut rest = String::new();
                    let _ = out.read_to_string(&mut rest);
                });
                let addr = url.trim_start_matches("http://").to_owned();
                return Daemon {
                    url,
                    addr,
                    home: home.to_path_buf(),
                    child: Some(child),
                    stderr,
                };
            }
            if n == 0 || Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                std::thread::sleep(Duration::from_millis(100));
                panic!("nightwatch serve did not start: {}", stderr.lock().unwrap());
            }
        }
    }

    /// What the daemon wrote on stderr so far.
    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).expect("the daemon runs")
    }

    pub fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn get(&self, path: &str) -> Reply {
        request(&self.addr, "GET", path, &[], b"")
    }

    pub fn post(&self, path: &str, content_type: &str, body: &[u8]) -> Reply {
        request(
            &self.addr,
            "POST",
            path,
            &[("Content-Type", content_type)],
            body,
        )
    }

    pub fn json(&self, path: &str) -> serde_json::Value {
        let reply = self.get(path);
        assert_eq!(reply.status, 200, "GET {path}: {}", reply.text());
        reply.json()
    }

    /// Polls `path` (JSON) until `done` holds, for up to `secs`.
    pub fn wait_for(
        &self,
        path: &str,
        secs: u64,
        what: &str,
        done: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let v = self.json(path);
            if done(&v) {
                return v;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; last {path}: {v:#}\nlog:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Polls `done` until it holds, for up to `secs`; then fails naming `what`, with the log.
    pub fn wait_until(&self, secs: u64, what: &str, done: impl Fn(&Daemon) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "timed out after {secs} s waiting for {what}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// SIGTERM; the exit status and the log.
    pub fn stop(mut self) -> (Option<i32>, String) {
        let mut child = self.child.take().unwrap();
        unsafe {
            libc_kill(child.id() as i32, 15);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Ok(Some(s)) = child.try_wait() {
                break s.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(50));
        (status, self.log())
    }

    /// SIGKILL: a crash, nothing flushed or finished.
    pub fn crash(mut self) {
        let mut child = self.child.take().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            unsafe {
                libc_kill(child.id() as i32, 15);
            }
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

unsafe extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// One HTTP reply.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A blocking HTTP/1.1 request with `Connection: close`.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // The server may answer (413, 401) before reading everything; that is fine.
    let _ = stream.write_all(body);
    read_reply(&mut stream)
}

/// Reads a whole `Connection: close` reply.
pub fn read_reply(stream: &mut TcpStream) -> Reply {
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP reply: {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = data.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&data[..end])
                .split(';')
                .next()
                .unwrap()
                .trim(),
            16,
        )
        .unwrap_or(0);
        data = &data[end + 2..];
        if size == 0 || data.len() < size {
            break;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[(size + 2).min(data.len())..];
    }
    out
}

/// A shared payload from the operators' captures.
pub fn payload(relative: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/payloads")
        .join(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
