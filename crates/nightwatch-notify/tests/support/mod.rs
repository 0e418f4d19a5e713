//! A small HTTP server on 127.0.0.1 for tests: it records each request and answers from a script.

#![allow(dead_code)] // Each test file uses its own part of this.

use nightwatch_notify::{Escalation, NotifierSpec};
use std::cell::RefCell;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What the server does with the next request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Status, extra headers, body.
    Answer(u16, Vec<(&'static str, &'static str)>, &'static str),
    /// Read the request and never answer (until the server is dropped).
    Silence,
}

pub fn status(code: u16, body: &'static str) -> Reply {
    Reply::Answer(code, Vec::new(), body)
}

/// Listens on 127.0.0.1:0 and serves one connection at a time, replying from `replies` in order
/// (the last reply repeats once they run out).
pub struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let requests = Arc::clone(&requests);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || serve(listener, replies, requests, stop))
        };
        Server {
            addr,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("requests lock").clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(
    listener: TcpListener,
    replies: Vec<Reply>,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
) {
    // Connections left unanswered on purpose, kept open until the server stops.
    let mut silent = Vec::new();
    let mut next = 0;
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("read timeout");
        let Some(request) = read_request(&stream) else {
            continue;
        };
        requests.lock().expect("requests lock").push(request);
        let reply = replies
            .get(next)
            .or(replies.last())
            .cloned()
            .unwrap_or(Reply::Silence);
        next += 1;
        match reply {
            Reply::Silence => silent.push(stream),
            Reply::Answer(code, headers, body) => {
                let mut stream = stream;
                let mut head = format!(
                    "HTTP/1.1 {code} Scripted\r\nContent-Length: {}\r\nConnection: close\r\n",
                    body.len()
                );
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body.as_bytes());
                let _ = stream.flush();
            }
        }
    }
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

/// A port that was just open and is now closed: connecting to it is refused.
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// The halt from the seed story: an agent restarting the app in the middle of the night.
pub fn halt() -> Escalation {
    Escalation {
        verdict: "halt".into(),
        record_id: "r1842".into(),
        who: "agent claude-code (session abc)".into(),
        what: "exec: systemctl restart app".into(),
        why: "rule no-restarts-at-night: restarts wait for a human".into(),
        where_: "web-1:/srv/app".into(),
        when: "2026-02-14T03:17:00Z".into(),
        approve: None,
        inspect: "nightwatch show r1842".into(),
    }
}

/// The same action, asked instead of halted, with its approve command.
pub fn ask() -> Escalation {
    Escalation {
        verdict: "ask".into(),
        approve: Some("nightwatch approve r1842".into()),
        ..halt()
    }
}

/// One notifier from its YAML, as the policy file would hold it.
pub fn notifier(yaml: &str) -> NotifierSpec {
    yaml_serde::from_str(yaml).unwrap_or_else(|e| panic!("{yaml}\n{e}"))
}

/// An environment with these variables only.
pub fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + Sync + use<> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

/// A sleep that records what it was asked to wait, and returns at once.
#[derive(Default)]
pub struct Sleeps(RefCell<Vec<Duration>>);

impl Sleeps {
    pub fn record(&self) -> impl Fn(Duration) + '_ {
        |d| self.0.borrow_mut().push(d)
    }

    pub fn taken(&self) -> Vec<Duration> {
        self.0.borrow().clone()
    }
}
