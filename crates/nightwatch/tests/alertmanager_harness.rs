//! The Alertmanager harness against a plain recording HTTP receiver: what the real
//! Alertmanager 0.25 sends to a webhook, before `nightwatch serve` is put in its place.

mod common;

use common::alertmanager::Alertmanager;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a test waits for a delivery; Alertmanager sends within about 1 s.
const DELIVERY: Duration = Duration::from_secs(30);

/// One request the receiver got.
#[derive(Clone, Debug)]
struct Request {
    method: String,
    path: String,
    /// Header names in lower case, in the order sent.
    headers: Vec<(String, String)>,
    body: String,
    /// The status it was answered with.
    status: u16,
    at: Instant,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|error| panic!("webhook body is not JSON ({error}): {}", self.body))
    }
}

/// An HTTP server on 127.0.0.1 that records every request and answers each with the next
/// status of a script (the last one repeats), one request per connection.
struct Hook {
    url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Hook {
    fn start(statuses: &[u16]) -> Hook {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let url = format!("http://{}/alertmanager", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let statuses = statuses.to_vec();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let Some(mut request) = read_request(&stream) else {
                    continue;
                };
                let mut seen = seen.lock().unwrap();
                let status = statuses
                    .get(seen.len())
                    .or(statuses.last())
                    .copied()
                    .unwrap_or(200);
                request.status = status;
                seen.push(request);
                drop(seen);
                let _ = (&stream).write_all(
                    format!(
                        "HTTP/1.1 {status} Scripted\r\nContent-Type: text/plain\r\n\
                         Content-Length: 2\r\nConnection: close\r\n\r\nok"
                    )
                    .as_bytes(),
                );
            }
        });
        Hook { url, requests }
    }

    /// Waits up to [`DELIVERY`] for a request that `wanted` accepts; all requests so far.
    fn wait(&self, what: &str, am: &Alertmanager, wanted: impl Fn(&[Request]) -> bool) {
        let deadline = Instant::now() + DELIVERY;
        loop {
            let requests = self.requests();
            if wanted(&requests) {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "no {what} within {DELIVERY:?}; the webhook got {requests:#?}\n\
                     --- alertmanager log ---\n{}",
                    am.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

/// One HTTP/1.1 request (its `status` still 0), `None` if it is cut short.
fn read_request(stream: &std::net::TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let method = words.next()?.to_string();
    let path = words.next()?.to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_string());
        if name == "content-length" {
            length = value.parse().ok()?;
        }
        headers.push((name, value));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        status: 0,
        at: Instant::now(),
    })
}

/// The payloads' alerts as `(status of the payload, the alert)`, in the order received.
fn alerts(requests: &[Request]) -> Vec<(String, serde_json::Value)> {
    requests
        .iter()
        .flat_map(|request| {
            let payload = request.json();
            let status = payload["status"].as_str().unwrap_or("").to_string();
            payload["alerts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |alert| (status.clone(), alert))
        })
        .collect()
}

#[test]
fn fires_and_resolves_into_a_webhook() {
    let hook = Hook::start(&[200]);
    let am = Alertmanager::start(&hook.url, None);
    let labels = [
        ("alertname", "NightwatchDiskFull"),
        ("instance", "web1:9100"),
        ("severity", "critical"),
    ];
    let fired = Instant::now();
    am.fire(&labels, &[("summary", "/var is 97% full")]);
    hook.wait("firing payload", &am, |requests| !requests.is_empty());
    let first = hook.requests()[0].clone();
    eprintln!(
        "firing delivered {:?} after fire: {} {} {:?}\n{}",
        first.at - fired,
        first.method,
        first.path,
        first.headers,
        first.body
    );
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/alertmanager");
    assert_eq!(first.header("content-type"), Some("application/json"));
    assert!(
        first
            .header("user-agent")
            .is_some_and(|agent| agent.starts_with("Alertmanager/")),
        "user agent: {:?}",
        first.header("user-agent")
    );
    assert_eq!(
        first.header("authorization"),
        None,
        "no bearer was configured"
    );
    let payload = first.json();
    assert_eq!(payload["version"], "4", "{payload:#}");
    assert_eq!(payload["status"], "firing", "{payload:#}");
    assert_eq!(payload["receiver"], "webhook", "{payload:#}");
    assert_eq!(
        payload["groupLabels"],
        serde_json::json!({"alertname": "NightwatchDiskFull", "instance": "web1:9100"}),
        "grouped by alertname and instance: {payload:#}"
    );
    let alert = &payload["alerts"][0];
    assert_eq!(
        payload["alerts"].as_array().map(Vec::len),
        Some(1),
        "{payload:#}"
    );
    assert_eq!(alert["status"], "firing", "{payload:#}");
    for (key, value) in labels {
        assert_eq!(alert["labels"][key], value, "label {key}: {payload:#}");
    }
    assert_eq!(
        alert["annotations"]["summary"], "/var is 97% full",
        "{payload:#}"
    );
    let fingerprint = alert["fingerprint"]
        .as_str()
        .filter(|fingerprint| !fingerprint.is_empty())
        .unwrap_or_else(|| panic!("no fingerprint: {payload:#}"))
        .to_string();

    let resolved = Instant::now();
    am.resolve(&labels);
    hook.wait("resolved payload", &am, |requests| {
        alerts(requests).iter().any(|(status, alert)| {
            status == "resolved"
                && alert["status"] == "resolved"
                && alert["fingerprint"] == fingerprint.as_str()
        })
    });
    let requests = hook.requests();
    let last = requests.last().unwrap();
    let payload = last.json();
    assert_eq!(payload["version"], "4", "{payload:#}");
    let alert = &payload["alerts"][0];
    assert_eq!(alert["fingerprint"], fingerprint.as_str(), "{payload:#}");
    assert_eq!(
        alert["annotations"]["summary"], "/var is 97% full",
        "{payload:#}"
    );
    assert_ne!(alert["endsAt"], "0001-01-01T00:00:00Z", "{payload:#}");
    eprintln!(
        "resolution delivered {:?} after resolve:\n{}",
        last.at - resolved,
        last.body
    );
    let firing = alerts(&requests)
        .iter()
        .filter(|(status, _)| status == "firing")
        .count();
    assert_eq!(firing, 1, "the firing alert was sent once: {requests:#?}");
}

#[test]
fn a_500_reply_is_redelivered() {
    let hook = Hook::start(&[500, 200]);
    let am = Alertmanager::start(&hook.url, None);
    let labels = [("alertname", "NightwatchRetry"), ("instance", "db1:9100")];
    am.fire(&labels, &[("summary", "retried after a 500")]);
    hook.wait("redelivery after a 500", &am, |requests| {
        requests.len() >= 2
    });
    let requests = hook.requests();
    let (first, second) = (&requests[0], &requests[1]);
    eprintln!(
        "redelivered {:?} after the 500; {} request(s) in all",
        second.at - first.at,
        requests.len()
    );
    assert_eq!((first.status, second.status), (500, 200));
    assert!(second.at > first.at);
    let fingerprints: Vec<_> = alerts(&requests[..2])
        .into_iter()
        .map(|(status, alert)| {
            assert_eq!(status, "firing", "{requests:#?}");
            alert["fingerprint"].clone()
        })
        .collect();
    assert_eq!(
        fingerprints.len(),
        2,
        "one alert per payload: {requests:#?}"
    );
    assert_eq!(
        fingerprints[0], fingerprints[1],
        "the same alert: {requests:#?}"
    );
    assert_eq!(first.body, second.body, "the same payload is sent again");
}

#[test]
fn bearer_token_is_sent() {
    let hook = Hook::start(&[200]);
    let am = Alertmanager::start(&hook.url, Some("s3cret"));
    am.fire(
        &[("alertname", "NightwatchBearer"), ("instance", "web2:9100")],
        &[],
    );
    hook.wait("delivery", &am, |requests| !requests.is_empty());
    let request = &hook.requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some("Bearer s3cret"),
        "headers: {:?}",
        request.headers
    );
}
