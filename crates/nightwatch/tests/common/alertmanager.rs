//! The real Prometheus Alertmanager (Debian's `prometheus-alertmanager`, 0.25) on loopback,
//! for tests of the daemon's webhook receiver.
//!
//! [`Alertmanager::start`] writes a configuration whose only receiver is one `webhook_config`
//! (`send_resolved: true`, `max_alerts: 0`, optionally with a bearer token), runs the binary
//! with clustering off, its storage and log in a fresh temporary directory and its web
//! interface on a free port of 127.0.0.1, and waits until `/-/ready` answers.
//!
//! The route groups by `['alertname', 'instance']`, as a real deployment would: alerts that
//! differ in one of those labels are separate groups, so separate webhook requests, while
//! alerts that share both are batched into one request. `group_wait` and `group_interval` are
//! 1 s and `repeat_interval` is 1 h, so a firing alert is delivered about 1 s after
//! [`Alertmanager::fire`], a resolution about 1 s after [`Alertmanager::resolve`], and a
//! delivered alert is not repeated during a test.
//!
//! What Alertmanager 0.25 was seen to do with this configuration (loopback, 2 CPUs):
//!
//! * The request is `POST` to the URL's path with headers `User-Agent: Alertmanager/0.25.0`,
//!   `Content-Type: application/json`, `Content-Length` and, when configured,
//!   `Authorization: Bearer TOKEN`; the body is a version `"4"` payload (`receiver`, `status`,
//!   `alerts[]` with `fingerprint`, `groupLabels`, `commonLabels`, `commonAnnotations`,
//!   `externalURL`, `groupKey`, `truncatedAlerts`). A firing alert's `endsAt` is
//!   `0001-01-01T00:00:00Z`.
//! * The first delivery arrives 1.0 s after `fire` (group_wait), a resolution 1.0 s after
//!   `resolve` (the next group_interval tick).
//! * On a 5xx reply or a refused connection it retries the same payload (byte for byte)
//!   inside one flush with an exponential, jittered backoff: the first retry came 0.3 to
//!   0.7 s after the failure, then gaps of about 0.5 to 1.5 s and 1.4 to 3.7 s. The flush
//!   gives up 10 s after it began (its timeout is max(group_interval, 10 s)), logging
//!   "Notify for alerts failed ... notify retry canceled after 7 attempts", and the next
//!   flush, right away, starts a new round: a receiver that keeps answering 500 got the
//!   alert 6 times per 10 s for as long as it fired. Five 500s then a 200: delivered on the
//!   sixth request, 8.1 s after the first ("Notify success attempts=6").
//! * On a 4xx reply it does not retry inside the flush ("unrecoverable error after 1
//!   attempts"), but nothing is recorded as sent, so the next flush sends it again: with a
//!   `group_interval` of 1 s a 4xx receiver gets the same alert once a second (with the
//!   default 5 m it would be every 5 minutes; inferred, not observed), for as long as it fires.
//! * A success is recorded in its notification log; the same alert is then not sent again
//!   before `repeat_interval`, and a resolution is sent once at the next flush.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where Debian's package installs Alertmanager.
pub const BINARY: &str = "/usr/bin/prometheus-alertmanager";

/// How long [`Alertmanager::start`] waits for `/-/ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// One running Alertmanager, killed and cleaned up when dropped.
pub struct Alertmanager {
    /// Its web interface and API: `http://127.0.0.1:PORT`.
    pub url: String,
    address: String,
    child: Child,
    dir: PathBuf,
    log: PathBuf,
    /// The alerts fired through this handle, so that [`Alertmanager::resolve`] ends the
    /// same alert.
    fired: Mutex<Vec<Fired>>,
}

/// One alert as [`Alertmanager::fire`] posted it.
struct Fired {
    /// Its labels, sorted.
    labels: Vec<(String, String)>,
    starts: String,
    annotations: serde_json::Value,
}

impl Alertmanager {
    /// Starts Alertmanager with a single webhook receiver that posts to `webhook_url`
    /// (`send_resolved: true`, `max_alerts: 0`), sending `Authorization: Bearer TOKEN` when
    /// `bearer` is `Some(TOKEN)`, routes grouped by `['alertname', 'instance']`, `group_wait`
    /// and `group_interval` 1 s and `repeat_interval` 1 h. Clustering is off, storage is a
    /// temporary directory and the web interface is on a free port of 127.0.0.1. Waits (up
    /// to 20 s) until `/-/ready` answers 200; panics with Alertmanager's log otherwise.
    pub fn start(webhook_url: &str, bearer: Option<&str>) -> Alertmanager {
        let mut webhook = serde_json::json!({
            "url": webhook_url,
            "send_resolved": true,
            "max_alerts": 0,
        });
        if let Some(token) = bearer {
            webhook["http_config"] =
                serde_json::json!({ "authorization": { "credentials": token } });
        }
        // JSON is YAML: written this way, no URL or token needs YAML quoting.
        let config = serde_json::json!({
            "route": {
                "receiver": "webhook",
                "group_by": ["alertname", "instance"],
                "group_wait": "1s",
                "group_interval": "1s",
                "repeat_interval": "1h",
            },
            "receivers": [{ "name": "webhook", "webhook_configs": [webhook] }],
        });
        let config = serde_json::to_string_pretty(&config).expect("configuration as JSON");

        // The free port is released before Alertmanager binds it, so another process may
        // take it in between: try again with a new one when that happens.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut alertmanager = Alertmanager::spawn(&config);
            match alertmanager.wait_ready() {
                Ok(()) => return alertmanager,
                Err(reason) => {
                    let log = alertmanager.log();
                    drop(alertmanager);
                    if attempt < 3 && log.contains("address already in use") {
                        continue;
                    }
                    panic!("alertmanager did not start: {reason}\n--- alertmanager log ---\n{log}");
                }
            }
        }
    }

    /// Runs the binary with `config` in a fresh directory, on a free port.
    fn spawn(config: &str) -> Alertmanager {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let port = super::free_port();
        let dir = std::env::temp_dir().join(format!(
            "nightwatch-alertmanager-{}-{}-{port}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let storage = dir.join("data");
        std::fs::create_dir_all(&storage).expect("alertmanager's temporary directory");
        let config_file = dir.join("alertmanager.yml");
        std::fs::write(&config_file, config).expect("alertmanager's configuration");
        let log = dir.join("alertmanager.log");
        let log_file = std::fs::File::create(&log).expect("alertmanager's log file");
        let address = format!("127.0.0.1:{port}");
        let url = format!("http://{address}");
        let child = Command::new(BINARY)
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!("--storage.path={}", storage.display()))
            .arg(format!("--web.listen-address={address}"))
            .arg(format!("--web.external-url={url}"))
            .arg("--cluster.listen-address=")
            .arg("--log.level=debug")
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log_file.try_clone().expect("log file handle")))
            .stderr(Stdio::from(log_file))
            .spawn()
            .unwrap_or_else(|error| {
                let _ = std::fs::remove_dir_all(&dir);
                panic!("cannot run {BINARY} (Debian package prometheus-alertmanager): {error}")
            });
        Alertmanager {
            url,
            address,
            child,
            dir,
            log,
            fired: Mutex::new(Vec::new()),
        }
    }

    /// Polls `/-/ready` until it answers 200, the process exits or the time is up.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("it exited with {status}"));
            }
            let last = match http(&self.address, "GET", "/-/ready", None) {
                Ok((200, _)) => return Ok(()),
                Ok((status, body)) => format!("/-/ready answered {status}: {body}"),
                Err(error) => format!("/-/ready: {error}"),
            };
            if Instant::now() > deadline {
                return Err(format!("not ready after {READY_TIMEOUT:?} ({last})"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Posts one firing alert to `/api/v2/alerts`: these labels and annotations, `startsAt`
    /// now and no `endsAt`. Panics, with the log, unless Alertmanager answers 200.
    pub fn fire(&self, labels: &[(&str, &str)], annotations: &[(&str, &str)]) {
        let starts = rfc3339(SystemTime::now());
        let key = owned(labels);
        {
            let mut fired = self.fired.lock().unwrap();
            fired.retain(|alert| alert.labels != key);
            fired.push(Fired {
                labels: key,
                starts: starts.clone(),
                annotations: object(annotations),
            });
        }
        let alert = serde_json::json!([{
            "labels": object(labels),
            "annotations": object(annotations),
            "startsAt": starts,
        }]);
        self.post_alerts(&alert);
    }

    /// Posts the alert with these labels again with `endsAt` just past, which resolves it,
    /// as Prometheus does: with the `startsAt` and annotations [`Alertmanager::fire`] gave it
    /// (`startsAt` = `endsAt` and no annotations if it was not fired through this handle).
    pub fn resolve(&self, labels: &[(&str, &str)]) {
        let ends = rfc3339(SystemTime::now() - Duration::from_millis(1));
        let key = owned(labels);
        let (starts, annotations) = self
            .fired
            .lock()
            .unwrap()
            .iter()
            .find(|alert| alert.labels == key)
            // Both are in the same format, so the strings compare as the times do.
            .filter(|alert| alert.starts <= ends)
            .map(|alert| (alert.starts.clone(), alert.annotations.clone()))
            .unwrap_or_else(|| (ends.clone(), serde_json::json!({})));
        let alert = serde_json::json!([{
            "labels": object(labels),
            "annotations": annotations,
            "startsAt": starts,
            "endsAt": ends,
        }]);
        self.post_alerts(&alert);
    }

    /// Posts `count` firing alerts in one call, sharing the `common` labels (so, grouped by
    /// `alertname` and `instance`, one group) and each with its own value of `varying`
    /// (`0`, `1`, ...). Not remembered for [`Alertmanager::resolve`].
    pub fn fire_group(&self, common: &[(&str, &str)], varying: &str, count: usize) {
        let starts = rfc3339(SystemTime::now());
        let alerts: Vec<serde_json::Value> = (0..count)
            .map(|i| {
                let mut labels = object(common);
                labels[varying] = i.to_string().into();
                serde_json::json!({ "labels": labels, "startsAt": starts })
            })
            .collect();
        self.post_alerts(&serde_json::Value::Array(alerts));
    }

    fn post_alerts(&self, alerts: &serde_json::Value) {
        let body = alerts.to_string();
        match http(&self.address, "POST", "/api/v2/alerts", Some(&body)) {
            Ok((200, _)) => {}
            Ok((status, answer)) => panic!(
                "alertmanager answered {status} to {body}: {answer}\n--- alertmanager log ---\n{}",
                self.log()
            ),
            Err(error) => panic!(
                "posting {body} to alertmanager: {error}\n--- alertmanager log ---\n{}",
                self.log()
            ),
        }
    }

    /// Everything Alertmanager has logged so far (debug level), for assertion messages.
    pub fn log(&self) -> String {
        std::fs::read(&self.log)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_else(|error| format!("(no log: {error})"))
    }
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
    pairs.sort();
    pairs
}

fn object(pairs: &[(&str, &str)]) -> serde_json::Value {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), serde_json::Value::from(*value)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// `time` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).expect("a time after 1970");
    let seconds = since.as_secs();
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// One HTTP/1.1 request to `address` (`HOST:PORT`) with `Connection: close`: the status and
/// the body of the answer.
fn http(
    address: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Result<(u16, String), String> {
    let socket: std::net::SocketAddr = address.parse().map_err(|error| format!("{error}"))?;
    let mut stream = std::net::TcpStream::connect_timeout(&socket, Duration::from_secs(2))
        .map_err(|error| format!("connect {address}: {error}"))?;
    let timeout = Some(Duration::from_secs(10));
    stream
        .set_read_timeout(timeout)
        .and_then(|()| stream.set_write_timeout(timeout))
        .map_err(|error| format!("{error}"))?;
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nUser-Agent: nightwatch-tests\r\n\
         Accept: application/json\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|error| format!("send {method} {path}: {error}"))?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .map_err(|error| format!("read the answer to {method} {path}: {error}"))?;
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .ok_or_else(|| format!("no HTTP status in {answer:?}"))?;
    let body = answer
        .split_once("\r\n\r\n")
        .map_or("", |(_, body)| body)
        .to_string();
    Ok((status, body))
}
