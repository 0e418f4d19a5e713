//! A Docker daemon with unbounded logs: the default `json-file` driver keeps every line a
//! container ever printed unless `log-opts.max-size` says otherwise, until the disk is
//! full. `local` rotates by default; `journald`, `syslog` and the remote drivers leave the
//! size to their own system. Per-container `--log-opt`s cannot be seen from here; this is
//! the daemon's default, which every container without its own gets.

use serde_json::{Value, json};

use crate::{Check, Hazard, Seen};

const SUBJECT: &str = "/etc/docker/daemon.json";
const FIX: &str = "set a limit in /etc/docker/daemon.json: {\"log-driver\": \"local\"} or \
                   {\"log-driver\": \"json-file\", \"log-opts\": {\"max-size\": \"10m\", \"max-file\": \"3\"}}, \
                   then systemctl restart docker (existing containers keep their settings until recreated)";

/// `daemon.json` as found: `None` when Docker is installed without one.
pub fn judge(daemon_json: Option<&str>) -> Check {
    let check = |seen, what: String, fix: &str| {
        Check::new(Hazard::DockerUnboundedLogs, SUBJECT, seen, what, fix)
    };
    let Some(text) = daemon_json else {
        return check(
            Seen::Found,
            "Docker runs without /etc/docker/daemon.json: containers log with json-file and no size limit".into(),
            FIX,
        );
    };
    let config: Value = match serde_json::from_str(text) {
        Ok(config) => config,
        Err(e) => {
            return check(
                Seen::Found,
                format!(
                    "/etc/docker/daemon.json does not parse ({e}): dockerd refuses to start with it"
                ),
                &format!(
                    "make it valid JSON (python3 -m json.tool /etc/docker/daemon.json); {FIX}"
                ),
            )
            .with(json!({"error": e.to_string()}));
        }
    };
    let Some(config) = config.as_object() else {
        return check(
            Seen::Found,
            "/etc/docker/daemon.json is not a JSON object: dockerd refuses to start with it".into(),
            FIX,
        );
    };
    let driver = config
        .get("log-driver")
        .and_then(Value::as_str)
        .unwrap_or("json-file");
    let max_size = config
        .get("log-opts")
        .and_then(|o| o.get("max-size"))
        .and_then(Value::as_str);
    let evidence = json!({"log_driver": driver, "max_size": max_size, "max_file": config.get("log-opts").and_then(|o| o.get("max-file"))});
    let bounded = |size: &str| {
        let size = size.trim();
        !size.is_empty()
            && size != "-1"
            && size
                .trim_start_matches('0')
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
    };
    match driver {
        "json-file" => match max_size {
            Some(size) if bounded(size) => check(Seen::Ok, format!("json-file logs are limited to {size} per file"), ""),
            Some(size) => check(
                Seen::Found,
                format!("json-file logs have max-size {size:?}, which is no limit"),
                FIX,
            ),
            None => check(
                Seen::Found,
                "the log driver is json-file with no log-opts.max-size: container logs grow without limit".into(),
                FIX,
            ),
        },
        "local" => match max_size {
            Some(size) if !bounded(size) => check(
                Seen::Found,
                format!("the local log driver has max-size {size:?}, which is no limit"),
                FIX,
            ),
            _ => check(Seen::Ok, "the local log driver rotates its logs".into(), ""),
        },
        other => check(
            Seen::Ok,
            format!("the {other} log driver keeps no growing files of Docker's own"),
            "",
        ),
    }
    .with(evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants() {
        for (text, seen) in [
            (None, Seen::Found),
            (Some("{}"), Seen::Found),
            (Some("{\"log-driver\": \"json-file\"}"), Seen::Found),
            (Some("{\"log-opts\": {\"max-size\": \"10m\"}}"), Seen::Ok),
            (Some("{\"log-opts\": {\"max-size\": \"-1\"}}"), Seen::Found),
            (Some("{\"log-opts\": {\"max-size\": \"0\"}}"), Seen::Found),
            (Some("{\"log-driver\": \"local\"}"), Seen::Ok),
            (Some("{\"log-driver\": \"journald\"}"), Seen::Ok),
            (Some("{\"log-driver\": \"json-file\",}"), Seen::Found),
            (Some("[]"), Seen::Found),
        ] {
            assert_eq!(judge(text).seen, seen, "{text:?}");
        }
    }
}
