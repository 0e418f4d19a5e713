//! Which runbook an alert goes to, and the names every record about it carries. Pure.

use nightwatch_intake::{Alert, Source};
use sha2::{Digest, Sha256};

use crate::config::Route;

/// The source name of what nightwatch's watchers raise.
pub const WATCH_SOURCE: &str = "watch";
/// The source name of a scheduled job's slot.
pub const SCHEDULE_SOURCE: &str = "schedule";
/// The source name of the daemon's own checks (a write check after intake writes failed).
pub const DAEMON_SOURCE: &str = "nightwatch";

/// The source's name as routes, records and URLs write it.
pub fn source_name(source: &Source) -> String {
    match source {
        Source::UptimeKuma => "uptime-kuma".into(),
        Source::Alertmanager => "alertmanager".into(),
        Source::Generic(name) => name.clone(),
        Source::Watch => WATCH_SOURCE.into(),
        Source::Schedule => SCHEDULE_SOURCE.into(),
        Source::Nightwatch => DAEMON_SOURCE.into(),
    }
}

/// The task queue's key for "the same problem": the sender's identity, scoped by sender so
/// Uptime Kuma monitor 12 and a generic hook's id 12 never share a task.
pub fn task_identity(alert: &Alert) -> String {
    format!("{}/{}", source_name(&alert.source), alert.identity)
}

/// The short id every record about this alert carries (`alert_88c2d1`, as in the operators'
/// log schema): stable across the firing and the resolved notification.
pub fn alert_id(alert: &Alert) -> String {
    let digest = Sha256::digest(task_identity(alert).as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("alert_{hex}")
}

/// Why the agent is running: `uptime_kuma_alert`, `alertmanager_alert`, `<hook>_alert`.
pub fn triggered_by(alert: &Alert) -> String {
    format!("{}_alert", source_name(&alert.source).replace('-', "_"))
}

/// The host the alert is about, when its labels say (`host`, `hostname`, then `instance`
/// without its port); for Uptime Kuma, whose labels are the monitor's tags, the monitor's
/// hostname (ping, port and DNS monitors) or its URL's host (HTTP monitors).
pub fn alert_host(alert: &Alert) -> Option<String> {
    for key in ["host", "hostname", "nodename"] {
        if let Some(v) = alert.labels.get(key).filter(|v| !v.is_empty()) {
            return Some(v.clone());
        }
    }
    if alert.source == Source::UptimeKuma {
        let monitored = alert
            .annotations
            .get("hostname")
            .filter(|h| !h.trim().is_empty())
            .map(|h| h.trim().to_owned())
            .or_else(|| {
                let link = url::Url::parse(alert.link.as_deref()?).ok()?;
                link.host_str()
                    .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned())
            });
        if monitored.is_some() {
            return monitored;
        }
    }
    let instance = alert.labels.get("instance")?;
    let host = match instance.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => instance,
    };
    (!host.is_empty()).then(|| host.to_owned())
}

/// The first route whose conditions all hold for the alert, in file order.
pub fn first_match<'a>(routes: &'a [Route], alert: &Alert) -> Option<&'a Route> {
    routes.iter().find(|r| matches(r, alert))
}

fn matches(route: &Route, alert: &Alert) -> bool {
    let when = &route.when;
    if !when.status.contains(&alert.status) {
        return false;
    }
    if let Some(source) = &when.source
        && *source != source_name(&alert.source)
    {
        return false;
    }
    for (name, pattern) in &when.labels {
        match alert.labels.get(name) {
            Some(value) if pattern.is_match(value) => {}
            _ => return false,
        }
    }
    for tag in &when.tags {
        // `disk` matches the tag `disk` and `disk:<any value>`; `disk:sda` only that value.
        let found = alert.tags.iter().any(|t| {
            t == tag || (!tag.contains(':') && t.split_once(':').is_some_and(|(n, _)| n == tag))
        });
        if !found {
            return false;
        }
    }
    if let Some(pattern) = &when.monitor {
        match &alert.monitor {
            Some(m) if pattern.is_match(m) => {}
            _ => return false,
        }
    }
    if let Some(pattern) = &when.title
        && !pattern.is_match(&alert.title)
    {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use nightwatch_intake::Status;
    use std::collections::BTreeMap;

    fn alert(source: Source, identity: &str) -> Alert {
        Alert {
            source,
            identity: identity.into(),
            status: Status::Firing,
            title: "Disk usage above 90% on prod-worker-01".into(),
            message: String::new(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            tags: Vec::new(),
            monitor: None,
            starts_at_ms: None,
            ends_at_ms: None,
            group_key: None,
            receiver: None,
            link: None,
            raw: serde_json::Value::Null,
        }
    }

    fn routes(yaml: &str) -> Vec<Route> {
        Config::from_text(yaml, "serve.yaml", &|_| None)
            .unwrap()
            .routes
    }

    /// Uptime Kuma's labels are the monitor's tags: the host comes from the monitor itself,
    /// its hostname (a ping or port monitor, as in the recorded payload) or its URL's host.
    #[test]
    fn uptime_kuma_alerts_name_the_monitored_host() {
        let body = include_bytes!("../../../fixtures/payloads/uptime-kuma/down.json");
        let down = nightwatch_intake::parse_uptime_kuma(body, Some("application/json"), None)
            .expect("the recorded payload parses");
        assert_eq!(alert_host(&down).as_deref(), Some("prod-worker-01.tailnet"));
        let mut http = alert(Source::UptimeKuma, "7");
        http.link = Some("https://user:pw@shop.example.com:8443/health".into());
        assert_eq!(alert_host(&http).as_deref(), Some("shop.example.com"));
        http.link = Some("http://[fd00::7]:80/".into());
        assert_eq!(alert_host(&http).as_deref(), Some("fd00::7"));
        // A tag named `host` still says first; other senders' links never name the host.
        http.labels.insert("host".into(), "db-1".into());
        assert_eq!(alert_host(&http).as_deref(), Some("db-1"));
        let mut am = alert(Source::Alertmanager, "x");
        am.link = Some("http://prometheus:9090/graph".into());
        assert_eq!(alert_host(&am), None);
    }

    #[test]
    fn ids_are_short_stable_and_scoped_by_sender() {
        let kuma = alert(Source::UptimeKuma, "12");
        let generic = alert(Source::Generic("12".into()), "12");
        assert_eq!(alert_id(&kuma), alert_id(&alert(Source::UptimeKuma, "12")));
        assert_ne!(alert_id(&kuma), alert_id(&generic));
        assert!(alert_id(&kuma).starts_with("alert_") && alert_id(&kuma).len() == 14);
        assert_eq!(task_identity(&kuma), "uptime-kuma/12");
        assert_eq!(triggered_by(&kuma), "uptime_kuma_alert");
    }

    #[test]
    fn the_first_route_whose_conditions_all_hold_wins() {
        let routes = routes(
            r#"
routes:
  - id: kuma-disk
    when: { source: uptime-kuma, tags: [disk], monitor: "prod-*" }
    run: [disk.sh]
  - id: critical
    when: { labels: { severity: "crit*" } }
    run: [page.sh]
  - id: anything-disk
    when: { title: "*Disk*" }
    run: [look.sh]
"#,
        );
        let mut kuma = alert(Source::UptimeKuma, "12");
        kuma.tags = vec!["disk:sda".into()];
        kuma.monitor = Some("prod-worker-01 disk".into());
        assert_eq!(first_match(&routes, &kuma).unwrap().id, "kuma-disk");
        kuma.monitor = Some("staging disk".into());
        assert_eq!(first_match(&routes, &kuma).unwrap().id, "anything-disk");

        let mut am = alert(Source::Alertmanager, "fp");
        am.labels.insert("severity".into(), "critical".into());
        assert_eq!(first_match(&routes, &am).unwrap().id, "critical");
        am.labels.insert("severity".into(), "warning".into());
        am.title = "HighLatency".into();
        assert!(first_match(&routes, &am).is_none());
    }

    #[test]
    fn routes_take_firing_alerts_unless_they_say_resolved() {
        let routes = routes(
            r#"
routes:
  - id: fix
    run: [fix.sh]
  - id: write-up
    when: { status: [resolved] }
    run: [note.sh]
"#,
        );
        let mut a = alert(Source::Alertmanager, "fp");
        assert_eq!(first_match(&routes, &a).unwrap().id, "fix");
        a.status = Status::Resolved;
        assert_eq!(first_match(&routes, &a).unwrap().id, "write-up");
        a.status = Status::Test;
        assert!(
            first_match(&routes, &a).is_none(),
            "a test never runs anything"
        );
    }

    #[test]
    fn the_host_comes_from_labels() {
        let mut a = alert(Source::Alertmanager, "fp");
        assert_eq!(alert_host(&a), None);
        a.labels
            .insert("instance".into(), "db1.tailnet:9100".into());
        assert_eq!(alert_host(&a).as_deref(), Some("db1.tailnet"));
        a.labels.insert("host".into(), "prod-worker-01".into());
        assert_eq!(alert_host(&a).as_deref(), Some("prod-worker-01"));
    }
}
