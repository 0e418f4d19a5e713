//! Liveness against real files, real processes and a real HTTP server on 127.0.0.1.

mod support;

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant, UNIX_EPOCH};

use nightwatch_store::memory::MemoryLedger;
use nightwatch_watch::live::{CommandSpec, FreshSpec, HttpSpec, QuerySpec};
use nightwatch_watch::{Env, NoContainers, Seen};
use support::{AnsweringDatabases, NOW_MS, env, only};

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

fn with_env<T>(timeout: Duration, f: impl FnOnce(&Env<'_>) -> T) -> T {
    let ledger = MemoryLedger::new();
    let dbs = AnsweringDatabases::default();
    let mut e = env(NOW_MS, &ledger, &dbs, &NoContainers);
    e.timeout = timeout;
    f(&e)
}

fn touch(path: &std::path::Path, bytes: usize, mtime_ms: i64) {
    let file = File::create(path).unwrap();
    file.set_len(bytes as u64).unwrap();
    file.set_modified(UNIX_EPOCH + Duration::from_millis(mtime_ms as u64))
        .unwrap();
}

/// Fourteen nightly dumps, the newest written 3 days and 2 hours before now: the job stopped.
fn stale_backups() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for day in 0..14 {
        let name = format!("db-2026-11-{:02}.dump", 16 + day);
        let mtime = NOW_MS - (3 * DAY_MS + 2 * HOUR_MS) - (13 - day) * DAY_MS;
        touch(&dir.path().join(name), 2 << 20, mtime);
    }
    dir
}

#[test]
fn backups_that_exist_but_stopped_being_refreshed_are_stale() {
    let dir = stale_backups();
    let glob = format!("{}/*.dump", dir.path().display());
    // A "backups exist" check passes: fourteen files match.
    let pattern = nightwatch_checks::PathGlob::new(&glob).unwrap();
    let mut exist = 0;
    nightwatch_checks::walk_glob(
        &pattern,
        Instant::now() + Duration::from_secs(5),
        &mut |_, _| exist += 1,
    )
    .unwrap();
    assert_eq!(exist, 14);

    let fresh: FreshSpec = yaml_serde::from_str(&format!(
        "{{ glob: \"{glob}\", younger_than: 26h, larger_than: 1MiB }}"
    ))
    .unwrap();
    let seen = only(
        with_env(Duration::from_secs(5), |e| fresh.run(e)),
        Seen::Found,
    );
    assert_eq!(
        seen.summary,
        "14 files match, but the newest, db-2026-11-29.dump, is 3d2h old; expected younger than 1d2h"
    );
    assert_eq!(seen.subject, glob);
    assert_eq!(seen.details["matched"], 14);

    // The job runs again: a new dump, written an hour ago.
    touch(
        &dir.path().join("db-2026-12-01.dump"),
        2 << 20,
        NOW_MS - HOUR_MS,
    );
    let seen = only(with_env(Duration::from_secs(5), |e| fresh.run(e)), Seen::Ok);
    assert_eq!(
        seen.summary,
        "15 files match; the newest, db-2026-12-01.dump, is 1h old and 2 MiB"
    );
}

#[test]
fn a_fresh_but_tiny_or_lonely_file_and_no_file_at_all_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let glob = format!("{}/**/*.dump", dir.path().display());
    let fresh: FreshSpec = yaml_serde::from_str(&format!(
        "{{ glob: \"{glob}\", younger_than: 26h, larger_than: 1MiB, min_files: 2 }}"
    ))
    .unwrap();
    let seen = only(
        with_env(Duration::from_secs(5), |e| fresh.run(e)),
        Seen::Found,
    );
    assert!(
        seen.summary.starts_with("no file matches"),
        "{}",
        seen.summary
    );

    std::fs::create_dir(dir.path().join("nightly")).unwrap();
    touch(&dir.path().join("nightly/db.dump"), 120, NOW_MS - HOUR_MS);
    let seen = only(
        with_env(Duration::from_secs(5), |e| fresh.run(e)),
        Seen::Found,
    );
    assert_eq!(
        seen.summary,
        "1 file matches, but the newest, db.dump, is 120 B; expected larger than 1 MiB; \
         expected at least 2 files"
    );
}

#[test]
fn a_command_must_exit_as_expected_and_say_what_it_should() {
    let spec = |yaml: &str| -> CommandSpec { yaml_serde::from_str(yaml).unwrap() };
    let run = |s: &CommandSpec| with_env(Duration::from_secs(5), |e| s.run(e));
    let seen = only(
        run(&spec(
            "{ argv: [sh, -c, 'echo restored 42 tables'], stdout_contains: restored }",
        )),
        Seen::Ok,
    );
    assert!(
        seen.summary.starts_with("sh exited with 0"),
        "{}",
        seen.summary
    );
    let seen = only(
        run(&spec(
            "{ argv: [sh, -c, 'echo pg_restore: bad archive >&2; exit 3'] }",
        )),
        Seen::Found,
    );
    assert_eq!(
        seen.summary,
        "sh exited with 3; expected 0; stderr: pg_restore: bad archive"
    );
    only(
        run(&spec("{ argv: [sh, -c, 'exit 3'], expect_exit: 3 }")),
        Seen::Ok,
    );
    let seen = only(
        run(&spec(
            "{ argv: [sh, -c, 'echo nothing'], stdout_contains: restored }",
        )),
        Seen::Found,
    );
    assert!(
        seen.summary.contains("did not print \"restored\""),
        "{}",
        seen.summary
    );
    let seen = only(
        run(&spec("{ argv: [/nonexistent/test-restore] }")),
        Seen::Unknown,
    );
    assert!(seen.summary.contains("could not start"), "{}", seen.summary);
}

#[test]
fn a_command_that_hangs_is_killed_at_its_timeout() {
    let spec: CommandSpec =
        yaml_serde::from_str("{ argv: [sh, -c, 'sleep 30'], timeout: 300ms }").unwrap();
    let start = Instant::now();
    let seen = only(
        with_env(Duration::from_secs(5), |e| spec.run(e)),
        Seen::Unknown,
    );
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(seen.summary.contains("killed"), "{}", seen.summary);
    // The watcher's own timeout bounds a longer declared one.
    let spec: CommandSpec =
        yaml_serde::from_str("{ argv: [sh, -c, 'sleep 30'], timeout: 1h }").unwrap();
    let start = Instant::now();
    only(
        with_env(Duration::from_millis(300), |e| spec.run(e)),
        Seen::Unknown,
    );
    assert!(start.elapsed() < Duration::from_secs(3));
}

/// A server on 127.0.0.1 answering `/healthz` (200, a JSON body), `/down` (503) and `/slow`
/// (after 3 s).
fn server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut line = String::new();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                reader.read_line(&mut line).unwrap();
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (status, body) = match path.as_str() {
                    "/healthz" => ("200 OK", "{\"db\": \"up\", \"queue\": 3}"),
                    "/down" => ("503 Service Unavailable", "{\"db\": \"down\"}"),
                    "/slow" => {
                        std::thread::sleep(Duration::from_secs(3));
                        ("200 OK", "late")
                    }
                    _ => ("404 Not Found", "no"),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    format!("http://{addr}")
}

#[test]
fn an_endpoint_must_answer_with_a_matching_body() {
    let base = server();
    let spec = |yaml: String| -> HttpSpec { yaml_serde::from_str(&yaml).unwrap() };
    let run = |s: &HttpSpec| with_env(Duration::from_secs(5), |e| s.run(e));
    let seen = only(
        run(&spec(format!(
            "{{ url: \"{base}/healthz\", body_matches: '\"db\":\\s*\"up\"' }}"
        ))),
        Seen::Ok,
    );
    assert!(seen.summary.contains("answered 200"), "{}", seen.summary);
    only(
        run(&spec(format!(
            "{{ url: \"{base}/healthz\", body_contains: queue }}"
        ))),
        Seen::Ok,
    );
    let seen = only(
        run(&spec(format!(
            "{{ url: \"{base}/healthz\", body_contains: \"\\\"db\\\": \\\"down\\\"\" }}"
        ))),
        Seen::Found,
    );
    assert!(seen.summary.contains("without"), "{}", seen.summary);
    let seen = only(
        run(&spec(format!("{{ url: \"{base}/down\" }}"))),
        Seen::Found,
    );
    assert_eq!(
        seen.summary,
        format!("GET {base}/down answered 503; expected a 2xx")
    );
    only(
        run(&spec(format!(
            "{{ url: \"{base}/down\", expect_status: 503 }}"
        ))),
        Seen::Ok,
    );
    // Nothing listens: the endpoint is down.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    only(
        run(&spec(format!("{{ url: \"http://{closed}/\" }}"))),
        Seen::Found,
    );
    // No answer within the watcher's timeout: it cannot tell.
    let slow = spec(format!("{{ url: \"{base}/slow\" }}"));
    let start = Instant::now();
    only(
        with_env(Duration::from_millis(300), |e| slow.run(e)),
        Seen::Unknown,
    );
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_query_must_return_a_row_and_its_password_is_never_said() {
    let ledger = MemoryLedger::new();
    let dbs = AnsweringDatabases::default();
    let e = env(NOW_MS, &ledger, &dbs, &NoContainers);
    let spec: QuerySpec = yaml_serde::from_str(
        "{ database: \"postgres://monitor:hunter2@db/app\", sql: \"SELECT 1 FROM jobs WHERE ok\" }",
    )
    .unwrap();
    *dbs.answer.lock().unwrap() = Some(Ok(true));
    only(spec.run(&e), Seen::Ok);
    *dbs.answer.lock().unwrap() = Some(Ok(false));
    let seen = only(spec.run(&e), Seen::Found);
    assert!(seen.summary.contains("returned no row"), "{}", seen.summary);
    *dbs.answer.lock().unwrap() = Some(Err(
        "cannot connect to postgres://monitor:hunter2@db/app".into()
    ));
    let seen = only(spec.run(&e), Seen::Unknown);
    let said = serde_json::to_string(&seen).unwrap();
    assert!(!said.contains("hunter2"), "{said}");
    // The query went out with the URL as written.
    let asked = dbs.asked.lock().unwrap();
    assert_eq!(asked[0].0, "postgres://monitor:hunter2@db/app");
    assert_eq!(asked.len(), 3);
}
