//! Every runner against the real thing: real processes, real files with real mtimes, a real
//! HTTP server on 127.0.0.1, real commands.

mod common;

use common::*;
use nightwatch_checks::{Outcome, run_checks, strictest_effect};
use nightwatch_core::Verdict;
use std::fs::{File, FileTimes};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

fn assert_matched(yaml: &str, want: &[&str]) {
    let f = run_one(yaml);
    match &f.outcome {
        Outcome::Matched { detail } => {
            for w in want {
                assert!(detail.contains(w), "{yaml}: wanted {w:?} in {detail:?}");
            }
        }
        other => panic!("{yaml}: expected matched, got {other:?}"),
    }
    assert_eq!(f.effect, Some(Verdict::Halt), "{yaml}");
}

fn assert_clear(yaml: &str) {
    let f = run_one(yaml);
    assert!(f.outcome.is_clear(), "{yaml}: {f:?}");
    assert_eq!(f.effect, None);
}

fn assert_unknown(yaml: &str, want: &str) -> Duration {
    let start = Instant::now();
    let f = run_one(yaml);
    let took = start.elapsed();
    match &f.outcome {
        Outcome::Unknown { reason } => assert!(reason.contains(want), "{yaml}: {reason}"),
        other => panic!("{yaml}: expected unknown, got {other:?}"),
    }
    // Could not tell is not a pass.
    assert_eq!(f.effect, Some(Verdict::Halt), "{yaml}");
    took
}

// ---- process ----------------------------------------------------------------------------

#[test]
fn running_migration_is_found_by_name_and_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let name = format!("fake-migrate-{}", std::process::id());
    let migrate = start(&renamed_sleep(dir.path(), &name), &["300.25"]);
    let pid = migrate.pid().to_string();
    // comm is cut to 15 bytes ("fake-migrate-12"); the full name is found through argv[0].
    assert_matched(
        &format!("process: {{ name: \"{name}\", min_age: 0s }}"),
        &[&pid, "300.25", "running for"],
    );
    assert_matched(
        &format!("process: {{ command: \"*{name} 300.25\", min_age: 0s }}"),
        &[&pid],
    );
    assert_matched("process: { command: \"*fake-migrate-* 300.25\" }", &[&pid]);
    // Not old enough.
    assert_clear(&format!("process: {{ name: \"{name}\", min_age: 1h }}"));
    assert_clear(&format!(
        "process: {{ command: \"*{name} 300.25\", min_age: 1h }}"
    ));
    // Not there.
    assert_clear("process: { name: no-such-process-anywhere }");
    drop(migrate);
    assert_clear(&format!(
        "process: {{ command: \"*{name} 300.25\", min_age: 0s }}"
    ));
}

#[test]
fn the_checker_does_not_find_itself() {
    // This test binary's own command line matches `*probes*`, but the current process is
    // excluded.
    let me = std::process::id().to_string();
    let f = run_one("process: { command: \"*nightwatch*probes*\" }");
    if let Outcome::Matched { detail } = &f.outcome {
        assert!(!detail.starts_with(&format!("pid {me} ")), "{detail}");
    }
}

// ---- lock_file --------------------------------------------------------------------------

fn touch(path: &std::path::Path, age: Duration) {
    let file = File::create(path).expect("create");
    let when = SystemTime::now() - age;
    file.set_times(FileTimes::new().set_modified(when).set_accessed(when))
        .expect("set mtime");
}

#[test]
fn stale_lock_file_is_found_and_fresh_one_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().display().to_string();
    let glob = format!("{root}/migration_batch_*.lock");
    let check = format!("lock_file: {{ glob: \"{glob}\", min_age: 30m }}");

    assert_clear(&check);
    touch(
        &dir.path().join("migration_batch_2026Q2.lock"),
        Duration::ZERO,
    );
    assert_clear(&check);
    touch(
        &dir.path().join("unrelated.lock"),
        Duration::from_secs(7200),
    );
    assert_clear(&check);
    touch(
        &dir.path().join("migration_batch_2026Q1.lock"),
        Duration::from_secs(40 * 60),
    );
    assert_matched(&check, &["migration_batch_2026Q1.lock", "40m"]);
    // `*` does not cross `/`; `**` does.
    std::fs::create_dir_all(dir.path().join("a/b")).expect("mkdir");
    touch(&dir.path().join("a/b/deep.lock"), Duration::from_secs(3600));
    assert_clear(&format!(
        "lock_file: {{ glob: \"{root}/*deep.lock\", min_age: 50m }}"
    ));
    assert_clear(&format!(
        "lock_file: {{ glob: \"{root}/*/deep.lock\", min_age: 50m }}"
    ));
    assert_matched(
        &format!("lock_file: {{ glob: \"{root}/**/deep.lock\", min_age: 50m }}"),
        &["a/b/deep.lock", "1h"],
    );
    assert_matched(
        &format!("lock_file: {{ glob: \"{root}/a/*/deep.lock\", min_age: 50m }}"),
        &["a/b/deep.lock"],
    );
    // A literal path: one stat.
    assert_matched(
        &format!("lock_file: {{ glob: \"{root}/a/b/deep.lock\", min_age: 50m }}"),
        &["deep.lock"],
    );
    assert_clear(&format!("lock_file: {{ glob: \"{root}/a/b/none.lock\" }}"));
    // The glob's directory does not exist: nothing is locked.
    assert_clear(&format!(
        "lock_file: {{ glob: \"{root}/missing/dir/*.lock\" }}"
    ));
}

#[test]
fn unreadable_lock_directory_is_unknown() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // Root reads every directory; nothing to test.
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).expect("mkdir");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    let yaml = format!("lock_file: {{ glob: \"{}/*.lock\" }}", locked.display());
    assert_unknown(&yaml, "cannot read");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

// ---- http -------------------------------------------------------------------------------

/// A server on 127.0.0.1 that answers every request with `response`, for `count` connections.
fn serve(response: &'static str, count: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    thread::spawn(move || {
        for stream in listener.incoming().take(count) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(response.as_bytes());
        }
    });
    format!("http://127.0.0.1:{port}")
}

const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\nstatus ok";
const FAILING: &str =
    "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\nConnection: close\r\n\r\nfail";
const NOT_OK_BODY: &str =
    "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\ndegraded";
const NOT_HTTP: &str = "SSH-2.0-OpenSSH_9.6\r\n";

#[test]
fn health_endpoint_answers_decide_the_check() {
    let url = serve(OK, 2);
    assert_clear(&format!(
        "http: {{ url: \"{url}/healthz\", expect_status: 200, body_contains: ok }}"
    ));
    assert_clear(&format!("http: {{ url: \"{url}/healthz\" }}"));

    let url = serve(FAILING, 2);
    assert_matched(
        &format!("http: {{ url: \"{url}/healthz\", expect_status: 200 }}"),
        &["500", "expected 200"],
    );
    assert_matched(
        &format!("http: {{ url: \"{url}/healthz\" }}"),
        &["500", "2xx"],
    );

    let url = serve(NOT_OK_BODY, 1);
    assert_matched(
        &format!("http: {{ url: \"{url}/healthz\", body_contains: ok }}"),
        &["without \"ok\""],
    );

    let url = serve(NOT_HTTP, 1);
    assert_matched(&format!("http: {{ url: \"{url}/\" }}"), &["failed"]);
}

#[test]
fn closed_port_is_a_failed_probe() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    assert_matched(
        &format!("http: {{ url: \"http://127.0.0.1:{port}/healthz\" }}"),
        &["failed"],
    );
}

#[test]
fn silent_server_is_unknown_at_the_deadline() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    // Accept and hold the connection without ever answering.
    thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(1).collect();
        thread::sleep(Duration::from_secs(3));
        drop(held);
    });
    let took = assert_unknown(
        &format!("http: {{ url: \"http://127.0.0.1:{port}/healthz\" }}\ntimeout: 300ms"),
        "timeout",
    );
    assert!(
        took >= Duration::from_millis(290) && took < Duration::from_millis(800),
        "{took:?}"
    );
}

// ---- command ----------------------------------------------------------------------------

#[test]
fn command_exit_codes_decide_the_check() {
    assert_clear("command: { argv: [true] }");
    assert_matched("command: { argv: [false] }", &["false exited with code 1"]);
    assert_matched("command: { argv: [true], match_on: zero }", &["code 0"]);
    assert_clear("command: { argv: [false], match_on: zero }");
    assert_matched(
        "command: { argv: [sh, -c, \"echo migration 42 running >&2; exit 3\"], match_on: 3 }",
        &["code 3", "migration 42 running"],
    );
    assert_clear("command: { argv: [sh, -c, \"exit 4\"], match_on: 3 }");
    // No shell: the metacharacters are arguments, not syntax.
    assert_clear("command: { argv: [echo, \"$(false)\", \";\", false] }");
}

#[test]
fn command_that_cannot_start_or_dies_is_unknown() {
    assert_unknown(
        "command: { argv: [/nonexistent/safe-to-restart] }",
        "could not start",
    );
    assert_unknown("command: { argv: [sh, -c, \"kill -9 $$\"] }", "signal 9");
}

#[test]
fn slow_command_is_killed_at_its_timeout() {
    let took = assert_unknown(
        "command: { argv: [sleep, \"10.125\"] }\ntimeout: 200ms",
        "timeout",
    );
    assert!(took < Duration::from_millis(700), "{took:?}");
    // The runner kills it on its own thread right at the deadline; give it a moment.
    let gone = (0..50).any(|_| {
        thread::sleep(Duration::from_millis(20));
        run_one("process: { command: \"sleep 10.125\" }")
            .outcome
            .is_clear()
    });
    assert!(gone, "sleep 10.125 is still running");
}

// ---- run_checks -------------------------------------------------------------------------

#[test]
fn checks_run_concurrently_each_to_its_own_deadline() {
    let slow = spec("command: { argv: [sleep, \"5.375\"] }\ntimeout: 300ms");
    let slower = spec("command: { argv: [sleep, \"5.375\"] }\ntimeout: 500ms");
    let quick = spec("command: { argv: [true] }");
    let history = NO_FAILURES;
    let probe = probe_at(now_ms(), &history);
    let start = Instant::now();
    let findings = run_checks(
        &[("a", &slow), ("b", &slow), ("c", &slower), ("d", &quick)],
        &probe,
    );
    let took = start.elapsed();
    assert!(took < Duration::from_millis(1000), "{took:?}");
    let ids: Vec<&str> = findings.iter().map(|f| f.check.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    assert!(
        findings[..3].iter().all(|f| f.outcome.is_unknown()),
        "{findings:?}"
    );
    assert!(findings[3].outcome.is_clear());
    assert!(
        findings[0].elapsed_ms >= 290 && findings[2].elapsed_ms >= 490,
        "{findings:?}"
    );
    assert!(findings[3].elapsed_ms < 290, "{findings:?}");
    assert_eq!(strictest_effect(&findings), Some(Verdict::Halt));
}

#[test]
fn finding_is_recorded_as_flat_json() {
    let f = run_one("command: { argv: [false] }\non_match: deny\nmessage: not safe now");
    let json = serde_json::to_value(&f).expect("serializes");
    assert_eq!(json["check"], "c");
    assert_eq!(json["kind"], "command");
    assert_eq!(json["outcome"], "matched");
    assert_eq!(json["effect"], "deny");
    assert_eq!(json["message"], "not safe now");
    assert!(
        json["detail"]
            .as_str()
            .is_some_and(|d| d.contains("code 1"))
    );
    assert!(json["elapsed_ms"].is_u64());
    let back: nightwatch_checks::Finding = serde_json::from_value(json).expect("round trip");
    assert_eq!(back, f);

    let unknown = run_one("command: { argv: [/nonexistent] }\nmessage: not safe now");
    let json = serde_json::to_value(&unknown).expect("serializes");
    assert_eq!(json["outcome"], "unknown");
    assert!(json["reason"].is_string());
    assert!(
        json["message"]
            .as_str()
            .is_some_and(|m| m.contains("could not tell") && m.contains("not safe now"))
    );
}
