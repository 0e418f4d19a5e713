//! Who is asking: a person (or an agent working for one), or a robot. Only a person's request
//! keeps an app awake; a robot's is counted by kind and answered without waking it.
//!
//! The order of the questions is the order of certainty: a configured network is the
//! operator's word; a known monitor's or crawler's user agent (or one the operator names)
//! names itself, so the count says which; a health path is a robot's whoever asks it;
//! `favicon.ico` and `robots.txt` are asked by browsers and crawlers on their own; a client asking the same
//! path on a fixed period is polling, whatever it calls itself (a dashboard tab, a script in a
//! loop). Everything else is a person. Every question is total: hostile text is only text.

use std::net::IpAddr;

use crate::polling::{PollKey, PollingShapes};
use crate::spec::AppSpec;

/// One request, as the proxy or a forward-auth call saw it.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub method: &'a str,
    /// The path, without the query.
    pub path: &'a str,
    pub user_agent: Option<&'a str>,
    pub client: IpAddr,
    /// Milliseconds on any clock that only moves forward (the daemon's monotonic one).
    pub at_ms: u64,
}

/// What kind of robot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RobotKind {
    /// An uptime monitor or health prober, by its user agent.
    Monitor,
    /// A search engine, preview fetcher or AI crawler, by its user agent.
    Crawler,
    /// `favicon.ico`, `robots.txt` and their kind: asked by software, not by a person.
    Probe,
    /// A path the app's configuration names as a health check.
    HealthPath,
    /// A client in a network the configuration names as robots.
    Network,
    /// The same client asking the same path on a fixed period.
    Polling,
    /// A user agent the app's configuration names as a robot.
    Configured,
}

impl RobotKind {
    pub const ALL: [RobotKind; 7] = [
        RobotKind::Monitor,
        RobotKind::Crawler,
        RobotKind::Probe,
        RobotKind::HealthPath,
        RobotKind::Network,
        RobotKind::Polling,
        RobotKind::Configured,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RobotKind::Monitor => "monitor",
            RobotKind::Crawler => "crawler",
            RobotKind::Probe => "probe",
            RobotKind::HealthPath => "health-path",
            RobotKind::Network => "network",
            RobotKind::Polling => "polling",
            RobotKind::Configured => "configured",
        }
    }
}

/// The verdict on one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Traffic {
    Person,
    /// A robot, and what gave it away (the monitor's name, the path, the period).
    Robot {
        kind: RobotKind,
        why: String,
    },
}

impl Traffic {
    pub fn is_person(&self) -> bool {
        matches!(self, Traffic::Person)
    }
}

/// Known monitors and health probers: a case-insensitive substring of the user agent, and
/// the name to report.
const MONITORS: &[(&str, &str)] = &[
    ("uptime-kuma", "Uptime Kuma"),
    ("uptimerobot", "UptimeRobot"),
    ("pingdom", "Pingdom"),
    ("better stack", "Better Stack"),
    ("betterstack", "Better Stack"),
    ("better uptime", "Better Stack"),
    ("betteruptime", "Better Stack"),
    ("datadog/synthetics", "Datadog Synthetics"),
    ("datadogsynthetics", "Datadog Synthetics"),
    ("new relic synthetics", "New Relic Synthetics"),
    ("newrelicsynthetics", "New Relic Synthetics"),
    ("newrelicpinger", "New Relic Synthetics"),
    ("blackbox exporter", "Prometheus blackbox"),
    ("blackbox-exporter", "Prometheus blackbox"),
    ("prometheus/", "Prometheus"),
    ("kube-probe/", "kube-probe"),
    ("googlehc/", "Google health check"),
    ("elb-healthchecker", "AWS ELB health check"),
    ("consul health check", "Consul health check"),
    ("site24x7", "Site24x7"),
    ("statuscake", "StatusCake"),
    ("checkly", "Checkly"),
    ("freshping", "Freshping"),
    ("hetrixtools", "HetrixTools"),
    ("updown.io", "updown.io"),
    ("gatus", "Gatus"),
    ("zabbix", "Zabbix"),
    ("check_http", "Nagios"),
    ("monit/", "Monit"),
    ("nodeping", "NodePing"),
    ("uptime.com", "Uptime.com"),
    ("cron-job.org", "cron-job.org"),
    ("healthchecks.io", "Healthchecks.io"),
];

/// Known crawlers and link-preview fetchers, the same way.
const CRAWLERS: &[(&str, &str)] = &[
    ("googlebot", "Googlebot"),
    ("google-inspectiontool", "Google"),
    ("adsbot-google", "Google"),
    ("bingbot", "Bingbot"),
    ("duckduckbot", "DuckDuckBot"),
    ("baiduspider", "Baiduspider"),
    ("yandexbot", "YandexBot"),
    ("applebot", "Applebot"),
    ("ahrefsbot", "AhrefsBot"),
    ("semrushbot", "SemrushBot"),
    ("mj12bot", "MJ12bot"),
    ("dotbot", "DotBot"),
    ("petalbot", "PetalBot"),
    ("bytespider", "Bytespider"),
    ("gptbot", "GPTBot"),
    ("chatgpt-user", "ChatGPT-User"),
    ("claudebot", "ClaudeBot"),
    ("ccbot", "CCBot"),
    ("perplexitybot", "PerplexityBot"),
    ("amazonbot", "Amazonbot"),
    ("facebookexternalhit", "Facebook preview"),
    ("twitterbot", "Twitterbot"),
    ("slackbot", "Slackbot"),
    ("discordbot", "Discordbot"),
    ("telegrambot", "TelegramBot"),
    ("linkedinbot", "LinkedInBot"),
    ("whatsapp", "WhatsApp preview"),
    ("seznambot", "SeznamBot"),
    ("censysinspect", "Censys"),
    ("expanse", "Palo Alto Expanse"),
    ("zgrab", "zgrab scanner"),
    ("masscan", "masscan"),
];

/// Paths software asks for on its own.
const PROBE_PATHS: &[&str] = &[
    "/favicon.ico",
    "/robots.txt",
    "/sitemap.xml",
    "/apple-touch-icon.png",
    "/apple-touch-icon-precomposed.png",
    "/.well-known/security.txt",
    "/ads.txt",
];

/// Generic words in a user agent that mark software that says it is one.
const ROBOT_WORDS: &[&str] = &["bot/", "bot;", "crawler", "spider", "headlesschrome"];

/// Classifies requests for one app; it remembers clients' recent requests to see polling.
#[derive(Debug)]
pub struct Classifier {
    polling: PollingShapes,
}

impl Default for Classifier {
    fn default() -> Self {
        Classifier::new()
    }
}

impl Classifier {
    pub fn new() -> Classifier {
        Classifier {
            polling: PollingShapes::default(),
        }
    }

    /// Classifies one request for `app`.
    pub fn classify(&mut self, app: &AppSpec, request: &Request<'_>) -> Traffic {
        let agent = request
            .user_agent
            .map(|a| a.to_ascii_lowercase())
            .unwrap_or_default();
        // Polling is noted for every request, so a client is known by the time it repeats.
        let polled = self.polling.observe(
            PollKey::new(request.client, &agent, request.method, request.path),
            request.at_ms,
        );
        if let Some(net) = app
            .robot_networks
            .iter()
            .find(|n| n.contains(&canonical(request.client)))
        {
            return robot(RobotKind::Network, format!("from {net}"));
        }
        if let Some((_, name)) = MONITORS.iter().find(|(needle, _)| agent.contains(needle)) {
            return robot(RobotKind::Monitor, (*name).to_owned());
        }
        if let Some((_, name)) = CRAWLERS.iter().find(|(needle, _)| agent.contains(needle)) {
            return robot(RobotKind::Crawler, (*name).to_owned());
        }
        if let Some(needle) = app.robot_agents.iter().find(|n| agent.contains(n.as_str())) {
            return robot(RobotKind::Configured, format!("user agent has {needle:?}"));
        }
        if app.is_health_path(request.path) {
            return robot(
                RobotKind::HealthPath,
                format!("{} is a health path", shown(request.path)),
            );
        }
        if let Some(path) = PROBE_PATHS
            .iter()
            .find(|p| request.path.eq_ignore_ascii_case(p))
        {
            return robot(RobotKind::Probe, (*path).to_owned());
        }
        if let Some(word) = ROBOT_WORDS.iter().find(|w| agent.contains(*w)) {
            return robot(RobotKind::Crawler, format!("user agent says {word:?}"));
        }
        if let Some(period_ms) = polled {
            return robot(
                RobotKind::Polling,
                format!(
                    "asks {} every {:.0}s",
                    shown(request.path),
                    period_ms as f64 / 1000.0
                ),
            );
        }
        Traffic::Person
    }
}

fn robot(kind: RobotKind, why: String) -> Traffic {
    Traffic::Robot { kind, why }
}

/// An IPv4 address written as IPv6 (`::ffff:10.0.0.1`, a dual-stack listener's view) is the
/// IPv4 address, so an IPv4 network matches it.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// A path as reasons show it: bounded, so a hostile path cannot bloat a record.
fn shown(path: &str) -> String {
    crate::clipped(path, 120)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn app(extra: &str) -> AppSpec {
        crate::test_app(extra)
    }

    fn ask(c: &mut Classifier, app: &AppSpec, agent: &str, path: &str, at_ms: u64) -> Traffic {
        c.classify(
            app,
            &Request {
                method: "GET",
                path,
                user_agent: Some(agent),
                client: "192.0.2.7".parse().unwrap(),
                at_ms,
            },
        )
    }

    const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

    #[test]
    fn monitors_are_known_by_their_user_agents() {
        let app = app("");
        let mut c = Classifier::new();
        for (agent, name) in [
            ("Uptime-Kuma/1.23.16", "Uptime Kuma"),
            (
                "Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)",
                "UptimeRobot",
            ),
            (
                "Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)",
                "Pingdom",
            ),
            ("Better Stack Better Uptime Bot Mozilla/5.0", "Better Stack"),
            ("Datadog/Synthetics", "Datadog Synthetics"),
            ("Blackbox Exporter/0.25.0", "Prometheus blackbox"),
            ("kube-probe/1.30", "kube-probe"),
        ] {
            assert_eq!(
                ask(&mut c, &app, agent, "/", 0),
                Traffic::Robot {
                    kind: RobotKind::Monitor,
                    why: name.into()
                },
                "{agent}"
            );
        }
    }

    #[test]
    fn a_monitor_asking_a_health_path_is_counted_by_its_name() {
        let app = app("");
        let mut c = Classifier::new();
        assert_eq!(
            ask(&mut c, &app, "Uptime-Kuma/2.0.2", "/healthz", 0),
            Traffic::Robot {
                kind: RobotKind::Monitor,
                why: "Uptime Kuma".into()
            }
        );
        // Anyone else asking it is a robot too: the readiness path is a health path unsaid.
        assert_eq!(
            ask(&mut c, &app, FIREFOX, "/healthz", 0),
            Traffic::Robot {
                kind: RobotKind::HealthPath,
                why: "/healthz is a health path".into()
            }
        );
    }

    #[test]
    fn crawlers_probes_and_health_paths_are_robots() {
        let app = app("    health_paths: [/status, \"/api/health*\"]\n");
        let mut c = Classifier::new();
        let kind = |t: Traffic| match t {
            Traffic::Robot { kind, .. } => Some(kind),
            Traffic::Person => None,
        };
        let googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
        assert_eq!(
            kind(ask(&mut c, &app, googlebot, "/", 0)),
            Some(RobotKind::Crawler)
        );
        assert_eq!(
            kind(ask(&mut c, &app, FIREFOX, "/favicon.ico", 0)),
            Some(RobotKind::Probe)
        );
        assert_eq!(
            kind(ask(&mut c, &app, FIREFOX, "/robots.txt", 0)),
            Some(RobotKind::Probe)
        );
        assert_eq!(
            kind(ask(&mut c, &app, FIREFOX, "/status", 0)),
            Some(RobotKind::HealthPath)
        );
        assert_eq!(
            kind(ask(&mut c, &app, FIREFOX, "/api/healthz", 0)),
            Some(RobotKind::HealthPath)
        );
        assert_eq!(kind(ask(&mut c, &app, FIREFOX, "/cart", 0)), None);
        assert_eq!(kind(ask(&mut c, &app, "curl/8.5.0", "/cart", 0)), None);
    }

    #[test]
    fn configured_networks_and_agents_are_robots() {
        let app = app(
            "    robot_networks: [10.0.0.0/8, \"2001:db8::/32\"]\n    robot_agents: [internal-poller]\n",
        );
        let mut c = Classifier::new();
        let from = |c: &mut Classifier, ip: &str, agent: &str| {
            c.classify(
                &app,
                &Request {
                    method: "GET",
                    path: "/",
                    user_agent: Some(agent),
                    client: ip.parse().unwrap(),
                    at_ms: 0,
                },
            )
        };
        assert!(!from(&mut c, "10.1.2.3", FIREFOX).is_person());
        assert!(!from(&mut c, "::ffff:10.1.2.3", FIREFOX).is_person());
        assert!(!from(&mut c, "2001:db8::1", FIREFOX).is_person());
        assert!(!from(&mut c, "192.0.2.1", "Internal-Poller/2").is_person());
        assert!(from(&mut c, "192.0.2.1", FIREFOX).is_person());
    }

    #[test]
    fn a_dashboard_polling_status_every_30s_becomes_a_robot() {
        let app = app("");
        let mut c = Classifier::new();
        let mut verdicts = Vec::new();
        for i in 0..6u64 {
            // A little jitter, as timers in a browser tab have.
            let at = i * 30_000 + (i % 2) * 400;
            verdicts.push(ask(&mut c, &app, FIREFOX, "/api/status", at));
        }
        assert!(verdicts[0].is_person());
        assert!(
            matches!(
                verdicts[5],
                Traffic::Robot {
                    kind: RobotKind::Polling,
                    ..
                }
            ),
            "{verdicts:?}"
        );
        // The same person clicking around at irregular times stays a person.
        let mut c = Classifier::new();
        for at in [0u64, 4_000, 31_000, 33_000, 90_000, 91_500, 200_000] {
            assert!(ask(&mut c, &app, FIREFOX, "/cart", at).is_person());
        }
    }

    proptest! {
        #[test]
        fn any_text_is_classified_without_panic(
            agent in ".{0,300}",
            path in ".{0,300}",
            method in "[A-Z]{0,10}",
            at in any::<u64>(),
            v6 in any::<u128>(),
        ) {
            let app = app("    health_paths: [\"/h*\"]\n    robot_networks: [10.0.0.0/8]\n");
            let mut c = Classifier::new();
            let request = Request {
                method: &method,
                path: &path,
                user_agent: Some(&agent),
                client: IpAddr::V6(v6.into()),
                at_ms: at,
            };
            let first = c.classify(&app, &request);
            if let Traffic::Robot { why, .. } = &first {
                prop_assert!(why.len() < 200);
            }
        }
    }
}
