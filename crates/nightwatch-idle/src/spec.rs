//! The `idle:` section of `serve.yaml`: the apps under idle control, checked while they are
//! read, so a daemon never starts with an app it could not control.
//!
//! ```yaml
//! idle:
//!   apps:
//!     shop:
//!       container: shop-web           # or  compose: shop  (every container of the project)
//!       listen: 127.0.0.1:8080        # the proxy in front of it
//!       hosts: [shop.example.test]    # names it is reached by (forward-auth, the proxy)
//!       upstream: 127.0.0.1:18080     # where the app itself answers
//!       idle_after: 15m
//!       suspend: pause                # or stop
//!       ready: { http: /healthz }     # or { tcp: true }
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use globset::{Glob, GlobMatcher};
use ipnet::IpNet;
use serde::Deserialize;

/// The longest timeout or idle period an app may name: far beyond any, far below overflow.
const MAX_SPAN: Duration = Duration::from_secs(366 * 24 * 3600);

/// Why the `idle:` section was refused, naming the field.
#[derive(Debug, thiserror::Error)]
#[error("idle.apps.{app}: {message}")]
pub struct SpecError {
    pub app: String,
    pub message: String,
}

/// How an app is put to sleep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SuspendMode {
    /// Freeze its processes (`docker pause`): wakes in milliseconds, keeps its memory.
    Pause,
    /// Stop its containers (`docker stop`): frees the memory, wakes as fast as it starts.
    Stop,
}

impl SuspendMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SuspendMode::Pause => "pause",
            SuspendMode::Stop => "stop",
        }
    }
}

/// What says the app answers: "running" means this passes, not that a process exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// A GET of this path on the upstream answers 2xx or 3xx.
    Http { path: String },
    /// The upstream accepts a TCP connection.
    Tcp,
}

/// What a robot's health check (a GET or HEAD of a health path) gets while the app sleeps.
/// Any other request of a robot's gets 503 with `Retry-After` whatever this says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AsleepAnswer {
    /// The last answer the readiness check got while the app was awake, marked as asleep.
    LastReady,
    /// 503 with `Retry-After`.
    Unavailable,
}

/// Which containers an app is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Container(String),
    /// Every container labelled `com.docker.compose.project=NAME`.
    Compose(String),
}

impl Target {
    pub fn describe(&self) -> String {
        match self {
            Target::Container(name) => format!("container {name}"),
            Target::Compose(project) => format!("compose project {project}"),
        }
    }
}

/// One named activity signal besides requests.
#[derive(Clone, Debug)]
pub struct SignalSpec {
    pub name: String,
    pub kind: SignalKind,
    /// False: seen and reported, but it does not keep the app awake (an app's own backup must
    /// not hold it up forever; a pre-flight check can still veto the suspend while it runs).
    pub activity: bool,
}

#[derive(Clone, Debug)]
pub enum SignalKind {
    /// `docker exec` (or attach) sessions open in the app's containers.
    Exec,
    /// Established TCP connections into the app's containers on these ports (a database
    /// client connected directly, not through the proxy).
    Connections { ports: Vec<u16> },
    /// A process running in the app's containers whose command line matches.
    Process { pattern: String, glob: GlobMatcher },
}

impl SignalKind {
    pub fn name(&self) -> &'static str {
        match self {
            SignalKind::Exec => "exec",
            SignalKind::Connections { .. } => "connections",
            SignalKind::Process { .. } => "process",
        }
    }
}

/// How failed steps are retried before a person is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failures {
    pub initial: Duration,
    pub max: Duration,
    /// After this many failures in a row the app is quarantined: the controller stops acting
    /// on it and tells `notify` once.
    pub quarantine_after: u32,
    pub notify: Vec<String>,
}

/// One app under idle control, checked.
#[derive(Clone, Debug)]
pub struct AppSpec {
    pub name: String,
    pub target: Target,
    /// The proxy's own listener for this app, if it has one.
    pub listen: Option<SocketAddr>,
    /// Host names (without port) it is reached by; the proxy and forward-auth match on them.
    pub hosts: Vec<String>,
    pub upstream: SocketAddr,
    pub idle_after: Duration,
    pub suspend: SuspendMode,
    pub ready: Readiness,
    pub asleep_answer: AsleepAnswer,
    /// A person's request waits at most this long for the app to wake.
    pub wake_timeout: Duration,
    /// Each step against the Engine (pause, stop, start, ...) gets this long.
    pub step_timeout: Duration,
    /// Paths that are health checks, whoever asks them (exact, or a glob): a robot's, never
    /// activity, and while the app sleeps a GET or HEAD of one is the only request given the
    /// kept readiness answer. Unsaid: the readiness check's path.
    pub health_paths: Vec<GlobMatcher>,
    /// Clients in these networks are robots.
    pub robot_networks: Vec<IpNet>,
    /// User agents (case-insensitive substrings) that are robots here, beside the known ones.
    pub robot_agents: Vec<String>,
    pub signals: Vec<SignalSpec>,
    pub failures: Failures,
}

impl AppSpec {
    /// True when the request's host (without port) names this app.
    pub fn answers_to(&self, host: &str) -> bool {
        let host = strip_port(host);
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    /// True when `path` (without the query) is one of the app's health paths.
    pub fn is_health_path(&self, path: &str) -> bool {
        self.health_paths.iter().any(|g| g.is_match(path))
    }

    /// The health paths as written, for reasons: `/healthz, /status`, or `none`.
    pub fn health_paths_shown(&self) -> String {
        if self.health_paths.is_empty() {
            return "none".into();
        }
        let shown: Vec<&str> = self.health_paths.iter().map(|g| g.glob().glob()).collect();
        shown.join(", ")
    }
}

/// `host:port`, `[v6]:port` or a bare host, without the port.
pub fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            name
        }
        _ => host,
    }
}

/// The section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleFile {
    #[serde(default)]
    pub apps: BTreeMap<String, AppFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppFile {
    container: Option<String>,
    compose: Option<String>,
    listen: Option<String>,
    #[serde(default)]
    hosts: Vec<String>,
    upstream: String,
    #[serde(deserialize_with = "nightwatch_time::serde::duration")]
    idle_after: Duration,
    #[serde(default = "default_suspend")]
    suspend: SuspendMode,
    ready: ReadyFile,
    #[serde(default = "default_asleep")]
    asleep_answer: AsleepAnswer,
    #[serde(default, deserialize_with = "optional_duration")]
    wake_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "optional_duration")]
    step_timeout: Option<Duration>,
    health_paths: Option<Vec<String>>,
    #[serde(default)]
    robot_networks: Vec<String>,
    #[serde(default)]
    robot_agents: Vec<String>,
    #[serde(default)]
    signals: Option<BTreeMap<String, SignalFile>>,
    #[serde(default)]
    failures: FailuresFile,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadyFile {
    http: Option<String>,
    tcp: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignalFile {
    #[serde(default)]
    exec: bool,
    connections: Option<Vec<u16>>,
    process: Option<String>,
    #[serde(default = "yes")]
    activity: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FailuresFile {
    #[serde(default, deserialize_with = "optional_duration")]
    initial: Option<Duration>,
    #[serde(default, deserialize_with = "optional_duration")]
    max: Option<Duration>,
    quarantine_after: Option<u32>,
    #[serde(default)]
    notify: Vec<String>,
}

fn default_suspend() -> SuspendMode {
    SuspendMode::Pause
}

fn default_asleep() -> AsleepAnswer {
    AsleepAnswer::LastReady
}

fn yes() -> bool {
    true
}

fn optional_duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    nightwatch_time::serde::duration(d).map(Some)
}

/// A person's request waits this long for a wake unless the app says otherwise.
pub const DEFAULT_WAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stop lets the app exit before the engine kills it (Docker's default).
pub const STOP_GRACE: Duration = Duration::from_secs(10);
/// Each Engine step gets this long unless the app says otherwise.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(20);

impl IdleFile {
    /// The apps, checked: one target each, addresses that parse, no two apps on one
    /// listener or host name, spans within a year.
    pub fn check(self) -> Result<Vec<AppSpec>, SpecError> {
        let mut apps = Vec::new();
        let mut listeners: BTreeMap<SocketAddr, String> = BTreeMap::new();
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        for (name, file) in self.apps {
            let app = file.check(&name)?;
            let fail = |message: String| SpecError {
                app: name.clone(),
                message,
            };
            if let Some(listen) = app.listen
                && let Some(other) = listeners.insert(listen, name.clone())
            {
                return Err(fail(format!("listen: {listen} is also app {other}'s")));
            }
            for host in &app.hosts {
                if let Some(other) = names.insert(host.to_ascii_lowercase(), name.clone()) {
                    return Err(fail(format!("hosts: {host} is also app {other}'s")));
                }
            }
            apps.push(app);
        }
        Ok(apps)
    }
}

impl AppFile {
    fn check(self, name: &str) -> Result<AppSpec, SpecError> {
        let fail = |message: String| SpecError {
            app: name.to_owned(),
            message,
        };
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        {
            return Err(fail(
                "an app's name must be letters, digits, '.', '-' and '_' (it is a metric label and a URL path)".into(),
            ));
        }
        let target = match (self.container, self.compose) {
            (Some(c), None) if !c.trim().is_empty() => Target::Container(c),
            (None, Some(p)) if !p.trim().is_empty() => Target::Compose(p),
            (Some(_), Some(_)) => return Err(fail("give container or compose, not both".into())),
            _ => return Err(fail("name its container (or compose project)".into())),
        };
        let address = |field: &str, text: &str| -> Result<SocketAddr, SpecError> {
            text.parse().map_err(|_| {
                fail(format!(
                    "{field}: {text:?} is not an address and port like 127.0.0.1:8080"
                ))
            })
        };
        let listen = self
            .listen
            .as_deref()
            .map(|l| address("listen", l))
            .transpose()?;
        let upstream = address("upstream", &self.upstream)?;
        if listen == Some(upstream) {
            return Err(fail(
                "listen and upstream are the same address: the proxy would call itself".into(),
            ));
        }
        if listen.is_none() && self.hosts.is_empty() {
            return Err(fail(
                "give listen (the proxy's address for it) or hosts (its names, for forward-auth), or both".into(),
            ));
        }
        let mut hosts = Vec::new();
        for host in self.hosts {
            let bare = host.trim();
            if bare.is_empty() || bare.contains(['/', ' ', '*']) {
                return Err(fail(format!("hosts: {host:?} is not a host name")));
            }
            hosts.push(strip_port(bare).to_ascii_lowercase());
        }
        let span = |field: &str, d: Duration| -> Result<Duration, SpecError> {
            if d.is_zero() {
                Err(fail(format!("{field}: must be longer than zero")))
            } else if d > MAX_SPAN {
                Err(fail(format!("{field}: longer than a year")))
            } else {
                Ok(d)
            }
        };
        let idle_after = span("idle_after", self.idle_after)?;
        let wake_timeout = span(
            "wake_timeout",
            self.wake_timeout.unwrap_or(DEFAULT_WAKE_TIMEOUT),
        )?;
        let step_timeout = span(
            "step_timeout",
            self.step_timeout.unwrap_or(DEFAULT_STEP_TIMEOUT),
        )?;
        if self.suspend == SuspendMode::Stop && step_timeout <= STOP_GRACE {
            return Err(fail(format!(
                "step_timeout: with suspend: stop it must be longer than the {}s a stop gives the app to exit before it is killed",
                STOP_GRACE.as_secs()
            )));
        }
        let ready = match (self.ready.http, self.ready.tcp) {
            (Some(path), None | Some(false)) if path.starts_with('/') => Readiness::Http { path },
            (Some(path), None | Some(false)) => {
                return Err(fail(format!("ready.http: {path:?} must start with '/'")));
            }
            (None, Some(true)) => Readiness::Tcp,
            _ => {
                return Err(fail(
                    "ready: give { http: /path } or { tcp: true }: \"running\" means it answers"
                        .into(),
                ));
            }
        };
        let mut health_paths = Vec::new();
        match (self.health_paths, &ready) {
            (Some(paths), _) => {
                for path in paths {
                    let glob = Glob::new(&path)
                        .map_err(|e| fail(format!("health_paths: {path:?}: {e}")))?
                        .compile_matcher();
                    if glob.is_match("/") {
                        // A health path is a robot's whoever asks it, and never wakes the app.
                        return Err(fail(format!(
                            "health_paths: {path:?} takes in /, where people arrive: they would get the kept health answer and never wake the app; name the path your monitor asks, such as /healthz"
                        )));
                    }
                    health_paths.push(glob);
                }
            }
            // Unsaid: the readiness check's own path, whose answer is the one kept. Not `/`,
            // where people arrive.
            (None, Readiness::Http { path }) => {
                let path = path.split(['?', '#']).next().unwrap_or(path);
                if path != "/" {
                    let exact = Glob::new(&globset::escape(path))
                        .map_err(|e| fail(format!("ready.http: {path:?}: {e}")))?
                        .compile_matcher();
                    health_paths.push(exact);
                }
            }
            (None, Readiness::Tcp) => {}
        }
        let mut robot_networks = Vec::new();
        for net in self.robot_networks {
            let parsed = net
                .parse::<IpNet>()
                .or_else(|_| net.parse::<std::net::IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    fail(format!(
                        "robot_networks: {net:?} is not an address or network like 10.0.0.0/8"
                    ))
                })?;
            robot_networks.push(parsed.trunc());
        }
        let mut robot_agents = Vec::new();
        for agent in self.robot_agents {
            if agent.trim().is_empty() {
                return Err(fail(
                    "robot_agents: an empty pattern would match everyone".into(),
                ));
            }
            robot_agents.push(agent.to_ascii_lowercase());
        }
        let signals = match self.signals {
            // Unsaid: an open exec session is someone at work in the app.
            None => vec![SignalSpec {
                name: "exec".into(),
                kind: SignalKind::Exec,
                activity: true,
            }],
            Some(declared) => {
                let mut signals = Vec::new();
                for (signal, file) in declared {
                    let kind = match (file.exec, file.connections, file.process) {
                        (true, None, None) => SignalKind::Exec,
                        (false, Some(ports), None) if !ports.is_empty() => {
                            SignalKind::Connections { ports }
                        }
                        (false, None, Some(pattern)) if !pattern.trim().is_empty() => {
                            let glob = Glob::new(&pattern)
                                .map_err(|e| {
                                    fail(format!("signals.{signal}.process: {pattern:?}: {e}"))
                                })?
                                .compile_matcher();
                            SignalKind::Process { pattern, glob }
                        }
                        _ => {
                            return Err(fail(format!(
                                "signals.{signal}: give one of exec: true, connections: [ports], process: \"command glob\""
                            )));
                        }
                    };
                    signals.push(SignalSpec {
                        name: signal,
                        kind,
                        activity: file.activity,
                    });
                }
                signals
            }
        };
        let failures = Failures {
            initial: span(
                "failures.initial",
                self.failures.initial.unwrap_or(Duration::from_secs(30)),
            )?,
            max: span(
                "failures.max",
                self.failures.max.unwrap_or(Duration::from_secs(30 * 60)),
            )?,
            quarantine_after: match self.failures.quarantine_after {
                Some(0) => return Err(fail("failures.quarantine_after: at least 1".into())),
                Some(n) => n,
                None => 5,
            },
            notify: self.failures.notify,
        };
        Ok(AppSpec {
            name: name.to_owned(),
            target,
            listen,
            hosts,
            upstream,
            idle_after,
            suspend: self.suspend,
            ready,
            asleep_answer: self.asleep_answer,
            wake_timeout,
            step_timeout,
            health_paths,
            robot_networks,
            robot_agents,
            signals,
            failures,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apps(yaml: &str) -> Result<Vec<AppSpec>, String> {
        let file: IdleFile = yaml_serde::from_str(yaml).map_err(|e| e.to_string())?;
        file.check().map_err(|e| e.to_string())
    }

    const SHOP: &str = "
apps:
  shop:
    container: shop-web
    listen: 127.0.0.1:8080
    upstream: 127.0.0.1:18080
    idle_after: 15m
    ready: { http: /healthz }
";

    #[test]
    fn a_minimal_app_gets_the_defaults() {
        let apps = apps(SHOP).unwrap();
        let shop = &apps[0];
        assert_eq!(shop.target, Target::Container("shop-web".into()));
        assert_eq!(shop.suspend, SuspendMode::Pause);
        assert_eq!(shop.asleep_answer, AsleepAnswer::LastReady);
        assert_eq!(shop.idle_after, Duration::from_secs(900));
        assert_eq!(shop.wake_timeout, DEFAULT_WAKE_TIMEOUT);
        assert_eq!(shop.signals.len(), 1);
        assert_eq!(shop.signals[0].kind.name(), "exec");
        assert_eq!(shop.failures.quarantine_after, 5);
    }

    #[test]
    fn mistakes_are_refused_naming_the_field() {
        let cases = [
            (SHOP.replace("container: shop-web", ""), "container"),
            (SHOP.replace("15m", "15"), "unit"),
            (SHOP.replace("15m", "0s"), "idle_after"),
            (SHOP.replace("/healthz", "healthz"), "ready.http"),
            (
                SHOP.replace("ready: { http: /healthz }", "ready: {}"),
                "ready",
            ),
            (SHOP.replace("127.0.0.1:18080", "localhost"), "upstream"),
            (
                SHOP.replace("127.0.0.1:18080", "127.0.0.1:8080"),
                "call itself",
            ),
            (SHOP.replace("idle_after", "idle_afterr"), "unknown field"),
            (
                SHOP.to_owned() + "    suspend: stop\n    step_timeout: 10s\n",
                "longer than the 10s a stop gives",
            ),
            (
                SHOP.replace("suspend_mode", "") + "    suspend: freeze\n",
                "freeze",
            ),
            (
                SHOP.to_owned() + "    robot_networks: [\"10.0.0.0/33\"]\n",
                "robot_networks",
            ),
            (
                SHOP.to_owned() + "    signals: { backup: { exec: true, process: pg } }\n",
                "signals.backup",
            ),
            (
                SHOP.to_owned() + "    robot_agents: [\" \"]\n",
                "robot_agents",
            ),
            (SHOP.replace("shop:", "\"sh op\":"), "name"),
            (
                SHOP.to_owned() + "    health_paths: [/]\n",
                "where people arrive",
            ),
            (
                SHOP.to_owned() + "    health_paths: [/status, \"*\"]\n",
                "health_paths: \"*\"",
            ),
        ];
        for (yaml, needle) in cases {
            let err = apps(&yaml).expect_err(&yaml);
            assert!(err.contains(needle), "{err:?} should mention {needle}");
        }
    }

    #[test]
    fn the_health_paths_are_the_readiness_path_unless_named() {
        let shop = &apps(SHOP).unwrap()[0];
        assert_eq!(shop.health_paths_shown(), "/healthz");
        assert!(shop.is_health_path("/healthz"));
        assert!(!shop.is_health_path("/healthz/deep"));
        assert!(!shop.is_health_path("/"));
        let named = SHOP.to_owned() + "    health_paths: [/status, \"/api/health*\"]\n";
        let shop = &apps(&named).unwrap()[0];
        assert_eq!(shop.health_paths_shown(), "/status, /api/health*");
        assert!(shop.is_health_path("/api/healthz"));
        assert!(
            !shop.is_health_path("/healthz"),
            "named paths replace the default"
        );
        // A readiness check of / (where people arrive) or of TCP names no health path.
        let root = SHOP.replace("/healthz", "\"/?full=1\"");
        assert_eq!(apps(&root).unwrap()[0].health_paths_shown(), "none");
        let tcp = SHOP.replace("{ http: /healthz }", "{ tcp: true }");
        assert_eq!(apps(&tcp).unwrap()[0].health_paths_shown(), "none");
        // A readiness path with a query or glob characters is matched as written.
        let query = SHOP.replace("/healthz", "\"/health[1]?deep=1\"");
        let shop = &apps(&query).unwrap()[0];
        assert!(shop.is_health_path("/health[1]"));
        assert!(!shop.is_health_path("/health1"));
    }

    #[test]
    fn two_apps_cannot_share_a_listener_or_a_name() {
        let two = SHOP.to_owned()
            + "
  cart:
    container: cart
    listen: 127.0.0.1:8080
    upstream: 127.0.0.1:18081
    idle_after: 1m
    ready: { tcp: true }
";
        assert!(apps(&two).unwrap_err().contains("also app"));
    }

    #[test]
    fn hosts_match_without_port_and_case() {
        let yaml = SHOP.to_owned() + "    hosts: [Shop.Example.test]\n";
        let shop = &apps(&yaml).unwrap()[0];
        assert!(shop.answers_to("shop.example.test:443"));
        assert!(shop.answers_to("SHOP.example.test"));
        assert!(!shop.answers_to("cart.example.test"));
        assert_eq!(strip_port("[::1]:80"), "::1");
        assert_eq!(strip_port("::1"), "::1");
    }
}
