//! Skew against a real HTTP server on 127.0.0.1 whose `Date` header the test sets.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;

use nightwatch_hazards::{Hazard, Options, Seen, scan};

/// A server that answers every request with `Date` = the real time moved by `offset_s`
/// (or no `Date` at all), and its URL.
fn date_server(offset_s: Option<i64>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
            }
            let date = offset_s.map(|offset| {
                let at = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(offset);
                let text = jiff::fmt::rfc2822::DateTimePrinter::new()
                    .timestamp_to_rfc9110_string(&at)
                    .unwrap();
                format!("Date: {text}\r\n")
            });
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\n{}Content-Length: 0\r\nConnection: close\r\n\r\n",
                date.unwrap_or_default()
            );
        }
    });
    url
}

fn skew_checks(urls: Vec<String>) -> Vec<nightwatch_hazards::Check> {
    let root = tempfile::tempdir().unwrap();
    let options = Options {
        date_urls: urls,
        timedatectl: None,
        probe_timeout: Duration::from_secs(5),
        ignore: Hazard::ALL
            .into_iter()
            .filter(|h| *h != Hazard::ClockSkew)
            .collect(),
        ..Options::at(root.path())
    };
    // The test's own reading of the real clock stands for the host's.
    scan(&options, jiff::Timestamp::now().as_millisecond())
}

#[test]
fn a_server_an_hour_ahead_is_skew_and_one_at_now_is_not() {
    let ahead = date_server(Some(3600));
    let behind = date_server(Some(-90));
    let right = date_server(Some(0));
    let checks = skew_checks(vec![ahead.clone(), behind.clone(), right.clone()]);
    assert_eq!(checks.len(), 3, "{checks:#?}");
    assert_eq!(checks[0].subject, format!("Date of {ahead}"));
    assert_eq!(checks[0].seen, Seen::Found, "{:#?}", checks[0]);
    assert!(
        checks[0].what.contains("behind"),
        "the host is behind a server an hour ahead: {}",
        checks[0].what
    );
    let skew = checks[0].evidence["skew_ms"].as_i64().unwrap();
    assert!((-3_602_000..=-3_598_000).contains(&skew), "{skew}");
    assert_eq!(checks[1].seen, Seen::Found, "{:#?}", checks[1]);
    assert!(checks[1].what.contains("ahead"));
    assert_eq!(checks[2].seen, Seen::Ok, "{:#?}", checks[2]);
    assert!(checks.iter().all(|c| c.hazard == Hazard::ClockSkew));
}

#[test]
fn no_date_header_or_no_server_is_unknown() {
    let silent = date_server(None);
    // A port nothing listens on: bound, then released.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/", l.local_addr().unwrap())
    };
    let checks = skew_checks(vec![silent, closed]);
    assert_eq!(checks[0].seen, Seen::Unknown, "{:#?}", checks[0]);
    assert!(checks[0].what.contains("without a Date header"));
    assert_eq!(checks[1].seen, Seen::Unknown, "{:#?}", checks[1]);
    assert!(checks[1].what.contains("failed"));
}

#[test]
fn a_reference_clock_and_a_jump_back() {
    let root = tempfile::tempdir().unwrap();
    let now_ms = 1_710_324_942_000;
    let options = Options {
        timedatectl: None,
        reference_clock_ms: Some(now_ms - 5_000),
        // Read ten seconds "later" by the wall clock, an instant ago by the monotonic one...
        last_seen: Some((now_ms + 10_000, std::time::Instant::now())),
        ignore: vec![
            Hazard::CloudInitReprovision,
            Hazard::UnattendedReboot,
            Hazard::NoMemoryGuard,
            Hazard::DiskNearFull,
            Hazard::DockerUnboundedLogs,
        ],
        ..Options::at(root.path())
    };
    let checks = scan(&options, now_ms);
    let reference = checks
        .iter()
        .find(|c| c.subject == "reference clock")
        .unwrap();
    assert_eq!(reference.seen, Seen::Found, "{reference:#?}");
    let jump = checks
        .iter()
        .find(|c| c.hazard == Hazard::ClockJumpBackwards)
        .unwrap();
    assert_eq!(jump.seen, Seen::Found, "{jump:#?}");
    assert!(jump.what.contains("backwards"));
    // ...and one read a minute ago by both clocks is fine.
    let options = Options {
        reference_clock_ms: Some(now_ms + 1_000),
        last_seen: Some((now_ms, std::time::Instant::now())),
        ..options
    };
    let checks = scan(&options, now_ms + 50);
    assert!(checks.iter().all(|c| c.seen == Seen::Ok), "{checks:#?}");
}
