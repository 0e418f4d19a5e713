//! A PostgreSQL server for the tests, started by the tests themselves: `cargo test -p
//! nightwatch-postgres` needs nothing running beforehand.
//!
//! One throwaway cluster per test binary: Debian's binaries (`pg_config --bindir`, else the
//! newest `/usr/lib/postgresql/*/bin`), `initdb` into a temp directory, `postgres` on
//! 127.0.0.1 only, on a free port, its socket in that directory, durability off (nothing
//! here needs to survive a crash). As root, both run as Debian's `postgres` user, since
//! `initdb` refuses root. Each test gets a database of its own, so tests run in parallel.
//!
//! No stray postmaster: the server is started by a small shell that holds the read end of a
//! pipe whose write end only this process has. When this process ends, however it ends
//! (normally, by a panic, or killed), the pipe closes, the shell stops the server (`SIGINT`,
//! PostgreSQL's fast shutdown), waits for it and removes the directory. At a normal exit an
//! `atexit` hook closes the pipe itself and waits, so nothing outlives the test run.
//!
//! `NIGHTWATCH_TEST_DATABASE_URL` names an existing server to use instead: each test then
//! creates (and drops) a database of its own there. Missing binaries fail the tests, saying
//! how to get them; nothing is skipped.
//!
//! Finding the binaries, the owner, the port and TLS certificates is `nightwatch-test-postgres`'s,
//! shared with the fleet tests' cluster.

#![allow(dead_code)]

use nightwatch_test_postgres::{SERVER_BINARIES_MISSING, find_bindir, init_cluster};
pub use nightwatch_test_postgres::{cluster_owner, free_port};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const URL_VARIABLE: &str = "NIGHTWATCH_TEST_DATABASE_URL";

/// The server the tests use, and a connection to it for creating their databases.
pub struct Server {
    /// A URL of the server, its database part replaced per test.
    url: String,
    admin: Mutex<postgres::Client>,
}

/// A database made for one test, dropped with this guard.
pub struct TestDatabase {
    pub url: String,
    pub name: String,
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let mut admin = server().admin.lock().unwrap_or_else(|p| p.into_inner());
        let _ = admin.batch_execute(&format!(
            "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
            self.name
        ));
    }
}

static SERVER: OnceLock<Server> = OnceLock::new();
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The shared server, started on first use.
pub fn server() -> &'static Server {
    SERVER.get_or_init(|| match std::env::var(URL_VARIABLE) {
        Ok(url) if !url.is_empty() => Server::at(url),
        _ => Server::at(start_throwaway_cluster()),
    })
}

/// The tests' own throwaway cluster, even when `NIGHTWATCH_TEST_DATABASE_URL` names a
/// server: for tests that change the server's settings, which must not touch anyone else's.
pub fn own_server() -> &'static Server {
    let server = SERVER.get_or_init(|| Server::at(start_throwaway_cluster()));
    assert!(
        std::env::var(URL_VARIABLE).ok().as_deref() != Some(server.url.as_str()),
        "this test changes the server's settings: it runs on its own cluster only"
    );
    server
}

/// A new, empty database for one test.
pub fn database() -> TestDatabase {
    server().database()
}

impl Server {
    fn at(url: String) -> Server {
        let admin = postgres::Client::connect(&url, postgres::NoTls).unwrap_or_else(|e| {
            panic!("cannot connect to the test server at {url}: {e}");
        });
        Server {
            url,
            admin: Mutex::new(admin),
        }
    }

    pub fn database(&self) -> TestDatabase {
        let name = format!(
            "nightwatch_test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin = self.admin.lock().unwrap_or_else(|p| p.into_inner());
        admin
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .unwrap_or_else(|e| panic!("cannot create the test database {name}: {e}"));
        TestDatabase {
            url: with_database(&self.url, &name),
            name,
        }
    }

    /// A plain connection to `db`, for what the stores do not offer (tampering, LISTEN).
    pub fn client(&self, db: &TestDatabase) -> postgres::Client {
        postgres::Client::connect(&db.url, postgres::NoTls).unwrap()
    }
}

/// `url` pointing at database `name` instead: a URL's path replaced, or `dbname=` added to
/// `key=value` pairs (the last one given wins).
fn with_database(url: &str, name: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, query) = match rest.find(['/', '?']) {
                Some(at) => {
                    let (authority, tail) = rest.split_at(at);
                    (authority, tail.find('?').map_or("", |q| &tail[q..]))
                }
                None => (rest, ""),
            };
            format!("{scheme}://{authority}/{name}{query}")
        }
        None => format!("{url} dbname={name}"),
    }
}

/// The running cluster's shell, kept for the `atexit` hook.
struct Watcher {
    pipe: ChildStdin,
    shell: Child,
}

static WATCHER: Mutex<Option<Watcher>> = Mutex::new(None);

extern "C" fn stop_at_exit() {
    let watcher = WATCHER.lock().ok().and_then(|mut w| w.take());
    if let Some(Watcher { pipe, mut shell }) = watcher {
        drop(pipe);
        let _ = shell.wait();
    }
}

/// What the shell runs: `$1` bindir, `$2` the cluster's directory, `$3` the port.
const SHELL: &str = r#"
"$1/postgres" -D "$2/data" -p "$3" -c listen_addresses=127.0.0.1 \
    -c unix_socket_directories="$2" -c fsync=off -c synchronous_commit=off \
    -c full_page_writes=off -c max_connections=300 \
    </dev/null >>"$2/server.log" 2>&1 &
pid=$!
# A signal to the whole process group (Ctrl-C, timeout) must not stop the cleanup below; the
# test process dying closes the pipe anyway.
trap '' INT TERM HUP
read _ignored
kill -INT "$pid" 2>/dev/null
wait "$pid"
rm -rf "$2"
"#;

fn start_throwaway_cluster() -> String {
    let bindir = find_bindir().unwrap_or_else(|| {
        panic!(
            "{SERVER_BINARIES_MISSING}, or set {URL_VARIABLE} to a server the tests may create \
             databases on"
        )
    });
    let owner = cluster_owner();
    let dir = tempfile::Builder::new()
        .prefix("nightwatch-pg-")
        .tempdir()
        .expect("a temp directory for the cluster")
        .keep();
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).expect("the cluster's directory");
    }
    let as_owner = |program: &Path| {
        let mut command = Command::new(program);
        command.current_dir(&dir);
        if let Some((uid, gid)) = owner {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(gid);
        }
        command
    };
    init_cluster(&bindir, &dir.join("data"), owner);
    let port = free_port();
    let mut shell = as_owner(Path::new("/bin/sh"))
        .args(["-c", SHELL, "sh"])
        .arg(&bindir)
        .arg(&dir)
        .arg(port.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the cluster's shell starts");
    let pipe = shell.stdin.take().expect("the shell's stdin");
    *WATCHER.lock().unwrap() = Some(Watcher { pipe, shell });
    unsafe {
        libc::atexit(stop_at_exit);
    }
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match postgres::Client::connect(&url, postgres::NoTls) {
            Ok(_) => return url,
            Err(e) if Instant::now() > deadline => {
                let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
                panic!("the test cluster did not start: {e}\n{log}");
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}
