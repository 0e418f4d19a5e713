//! Helpers shared by the binary's integration tests.
#![allow(dead_code)] // Each test file uses its own share of these helpers.
pub mod agents;
pub mod alertmanager;
pub mod daemon;
pub mod docker;
pub mod gate;
pub mod history;
pub mod openapi;
pub mod postgres;
pub mod sandbox;

pub use nightwatch_test_postgres::free_port;
use std::path::PathBuf;

/// A fresh, empty directory for one test: its data directory or project.
pub fn scratch(suite: &str, name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("nightwatch-{suite}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// A real HTTP server on 127.0.0.1 that records every request's body and answers each with
/// the next status of a script (the last one repeats), for notifier tests.
pub struct Receiver {
    pub url: String,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Receiver {
    pub fn start(statuses: &[u16]) -> Receiver {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let url = format!("http://{}/escalations", listener.local_addr().unwrap());
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = bodies.clone();
        let statuses = statuses.to_vec();
        std::thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
                let mut length = 0usize;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                    let lower = header.to_ascii_lowercase();
                    if let Some(value) = lower.strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&body).into_owned());
                let status = statuses.get(n).or(statuses.last()).copied().unwrap_or(200);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                );
            }
        });
        Receiver { url, bodies }
    }

    /// The bodies received so far, waiting up to `timeout` for at least `count`.
    pub fn wait_for(&self, count: usize, timeout: std::time::Duration) -> Vec<String> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let bodies = self.bodies.lock().unwrap().clone();
            if bodies.len() >= count || std::time::Instant::now() > deadline {
                return bodies;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Asserts that `nightwatch verify` finds the ledger in `home` intact and complete.
pub fn assert_ledger_verifies(home: &std::path::Path) {
    let verified = nightwatch(&["verify"], b"", &[("NIGHTWATCH_HOME", home.as_os_str())]);
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
}

/// Runs the real `nightwatch ARGS` with `stdin`, its environment cleared of every
/// `NIGHTWATCH_*` variable of the test process and set to `env`, and waits for it.
pub fn nightwatch(
    args: &[&str],
    stdin: &[u8],
    env: &[(&str, &std::ffi::OsStr)],
) -> std::process::Output {
    let mut command = nightwatch_command(args);
    for (key, value) in env {
        command.env(key, value);
    }
    run_with_input(command, stdin)
}

/// The real `nightwatch ARGS`, its output captured and no `NIGHTWATCH_*` variable of the
/// test process passed on, for the caller to set up further.
pub fn nightwatch_command(args: &[&str]) -> std::process::Command {
    use std::process::{Command, Stdio};
    let mut command = Command::new(env!("CARGO_BIN_EXE_nightwatch"));
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("NIGHTWATCH_") {
            command.env_remove(key);
        }
    }
    command
}

/// Starts `command`, writes `stdin` to it and waits for its output.
pub fn run_with_input(mut command: std::process::Command, stdin: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = command.spawn().expect("nightwatch runs");
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin);
    }
    child.wait_with_output().expect("nightwatch finishes")
}
