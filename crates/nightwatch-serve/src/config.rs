//! `serve.yaml`: where the daemon listens, which senders it accepts and with what secret, how
//! the queue retries, and which alert runs which runbook.
//!
//! Every field has a default, so `nightwatch serve` runs with no file at all: loopback, both
//! senders open (they are only reachable from this host), no routes (every alert is recorded
//! as "no matching route"). Unknown keys are refused: a misspelt `max_attempts` must not
//! silently become the default.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use globset::{Glob, GlobMatcher};
use serde::Deserialize;

/// The longest wait, timeout or period the file may name: far beyond any job, far below any
/// overflow.
const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

/// Why `serve.yaml` was refused. The daemon does not start.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// Connections open at once unless `max_connections` says otherwise: well under the usual
/// 1024-file soft limit, leaving files for the stores, runbooks and their pipes.
pub const DEFAULT_MAX_CONNECTIONS: usize = 768;

/// The daemon's configuration, checked.
#[derive(Clone, Debug)]
pub struct Config {
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    /// A request (headers and body) must arrive within this; slow senders get 408 for a body,
    /// and a connection that sends no complete headers in it (idle between requests too) is
    /// closed.
    pub request_timeout: Duration,
    /// Connections open at once; one past it is answered 503 and closed, so a flood of idle
    /// connections cannot use up the process's files.
    pub max_connections: usize,
    pub sources: Sources,
    /// The secret that reading the API, the pages and `/metrics` asks for; `None`: anyone who
    /// can reach the daemon reads them. The hooks keep their own secrets, per source.
    pub readers: Option<Auth>,
    pub queue: Queue,
    pub routes: Vec<Route>,
    /// Run the janitor's sweep this often, when set.
    pub janitor_every: Option<Duration>,
    /// Run the scheduled sweep on one host of all that share the daemon's leases (a fleet's
    /// database, or one data directory), under the `janitor-sweep` lease; the others record
    /// that they stood down. False (the default): every host sweeps its own.
    pub janitor_singleton: bool,
    /// The apps under idle control (`idle.apps`), each fronted by the daemon's proxy.
    pub idle: Vec<nightwatch_idle::AppSpec>,
    /// Watchers, scheduled jobs and the heartbeat (`watch:`). Each job is also a route
    /// (`job:NAME`, first in `routes`), so its slots run through the queue and the gate.
    pub watch: nightwatch_watch::WatchSpec,
    /// The memory guard (`memory_guard:`): runbooks in cgroups with limits, stopped under
    /// memory pressure. `None`: no section, no guard, runbooks run as before.
    pub memory_guard: Option<nightwatch_guard::GuardConfig>,
    /// The robots' event API (`robots:`, see [`crate::robots`]); `None`: it is off.
    pub robots: Option<Robots>,
}

/// Robots reporting their actions (`POST /api/robots/{robot}/actions`).
#[derive(Clone, Debug)]
pub struct Robots {
    /// `None` only when the daemon listens on loopback.
    pub auth: Option<Auth>,
}

#[derive(Clone, Debug, Default)]
pub struct Sources {
    pub uptime_kuma: Source,
    pub alertmanager: Source,
    /// Generic JSON hooks by name, served at `/hooks/generic/{name}`.
    pub generic: BTreeMap<String, GenericSource>,
}

#[derive(Clone, Debug, Default)]
pub struct Source {
    /// `None`: no secret asked (fine on loopback; the daemon warns otherwise).
    pub auth: Option<Auth>,
}

#[derive(Clone, Debug)]
pub struct GenericSource {
    pub auth: Option<Auth>,
    pub mapping: nightwatch_intake::GenericMapping,
}

/// How a sender proves it is who the source is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// A header of the operator's choosing carrying the secret (Uptime Kuma can add headers;
    /// Alertmanager can send `authorization` credentials).
    Header { name: String, value: String },
}

impl Auth {
    /// True when `header` (a lookup by lowercase name) carries the secret. Compared in
    /// constant time so the reply time says nothing about how much of a guess was right.
    pub fn admits(&self, header: &dyn Fn(&str) -> Option<String>) -> bool {
        match self {
            // A browser asked for a password sends it as Basic (any user name): so the pages
            // open in a browser with the bearer token as the password.
            Auth::Bearer(token)
                if header("authorization")
                    .and_then(|v| basic_password(&v))
                    .is_some_and(|given| same_secret(&given, token)) =>
            {
                true
            }
            Auth::Bearer(token) => header("authorization")
                .and_then(|v| {
                    let v = v.trim();
                    let (scheme, rest) = v.split_once(' ')?;
                    scheme
                        .eq_ignore_ascii_case("bearer")
                        .then(|| rest.trim().to_owned())
                })
                .is_some_and(|given| same_secret(&given, token)),
            Auth::Header { name, value } => header(&name.to_ascii_lowercase())
                .is_some_and(|given| same_secret(given.trim(), value)),
        }
    }
}

/// The password of an `Authorization: Basic` header.
fn basic_password(value: &str) -> Option<String> {
    use base64::Engine;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    Some(text.split_once(':')?.1.to_owned())
}

fn same_secret(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    let mut diff = u8::from(a.len() != b.len());
    for (i, byte) in b.iter().enumerate() {
        diff |= byte ^ a.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// The queue's knobs, in the units the task store takes.
#[derive(Clone, Debug)]
pub struct Queue {
    pub policy: nightwatch_tasks::Policy,
    pub lease: Duration,
    pub workers: usize,
    /// How often a task whose runbook policy asked about looks for a person's answer.
    pub approval_poll: Duration,
    /// How long it waits for one before it gives up and goes to a person.
    pub approval_timeout: Duration,
}

/// Which alerts a route takes, and the runbook it runs for them.
#[derive(Clone, Debug)]
pub struct Route {
    pub id: String,
    pub when: When,
    /// The runbook's argv: a script, or an agent (`claude -p "..."`).
    pub run: Vec<String>,
    pub cwd: Option<String>,
    pub timeout: Duration,
    /// At most this many tasks per hour from this route; more alerts are throttled.
    pub max_per_hour: Option<u32>,
    /// Notifiers (declared in the policy) told when a task gives up or needs approval.
    pub notify: Vec<String>,
    /// In a fleet, the hosts (name globs) whose daemons may run this route's tasks; empty:
    /// any host.
    pub hosts: Vec<GlobMatcher>,
}

impl Route {
    /// Whether a daemon on `host` may run this route's tasks.
    pub fn runs_on(&self, host: &str) -> bool {
        self.hosts.is_empty() || self.hosts.iter().any(|h| h.is_match(host))
    }
}

/// A route's conditions; all set ones must hold.
#[derive(Clone, Debug, Default)]
pub struct When {
    /// The alert statuses the route takes: `firing` unless it says (`resolved` runs a
    /// runbook when a problem clears, e.g. to write the incident note).
    pub status: Vec<nightwatch_intake::Status>,
    /// `uptime-kuma`, `alertmanager` or a generic hook's name.
    pub source: Option<String>,
    pub labels: Vec<(String, GlobMatcher)>,
    /// Uptime Kuma tags that must all be present (`name` or `name:value`).
    pub tags: Vec<String>,
    pub monitor: Option<GlobMatcher>,
    pub title: Option<GlobMatcher>,
}

// ---- the file as written ----

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct File {
    listen: Option<String>,
    max_body_bytes: Option<usize>,
    request_timeout: Option<String>,
    max_connections: Option<usize>,
    #[serde(default)]
    sources: FileSources,
    readers: Option<FileSource>,
    #[serde(default)]
    queue: FileQueue,
    #[serde(default)]
    routes: Vec<FileRoute>,
    janitor: Option<FileJanitor>,
    #[serde(default)]
    idle: nightwatch_idle::IdleFile,
    #[serde(default)]
    watch: nightwatch_watch::WatchFile,
    #[serde(default, deserialize_with = "nightwatch_guard::spec::section")]
    memory_guard: Option<nightwatch_guard::GuardConfig>,
    robots: Option<FileSource>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileSources {
    #[serde(rename = "uptime-kuma", default)]
    uptime_kuma: FileSource,
    #[serde(default)]
    alertmanager: FileSource,
    #[serde(default)]
    generic: BTreeMap<String, FileGeneric>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileSource {
    auth: Option<FileAuth>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileGeneric {
    auth: Option<FileAuth>,
    mapping: nightwatch_intake::GenericMapping,
}

/// `bearer`/`value` hold the secret itself; `*_env` name the variable holding it, so the
/// file can be shared without it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAuth {
    bearer: Option<String>,
    bearer_env: Option<String>,
    header: Option<String>,
    value: Option<String>,
    value_env: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileQueue {
    cooldown: Option<String>,
    resolve_delay: Option<String>,
    max_attempts: Option<u32>,
    backoff_base: Option<String>,
    backoff_cap: Option<String>,
    lease: Option<String>,
    workers: Option<usize>,
    approval_poll: Option<String>,
    approval_timeout: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRoute {
    id: String,
    #[serde(default)]
    when: FileWhen,
    run: Vec<String>,
    cwd: Option<String>,
    timeout: Option<String>,
    max_per_hour: Option<u32>,
    #[serde(default)]
    notify: Vec<String>,
    #[serde(default)]
    hosts: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileWhen {
    #[serde(default)]
    status: Vec<String>,
    source: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    tags: Vec<String>,
    monitor: Option<String>,
    title: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJanitor {
    every: String,
    #[serde(default)]
    singleton: bool,
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";

/// How a scheduled job's route id begins: `job:NAME`.
pub const JOB_ROUTE_PREFIX: &str = "job:";

/// The route a scheduled job's slots go to.
pub fn job_route(job: &str) -> String {
    format!("{JOB_ROUTE_PREFIX}{job}")
}

impl Config {
    /// In a fleet, a job every host runs (not `singleton`) runs on the host that fired its
    /// slot: its route becomes `job:NAME@HOST` and takes only the slots labelled with this
    /// host, so no other host's worker claims them from the shared queue.
    pub fn localize_jobs(&mut self, host: &str) {
        let Ok(this_host) = Glob::new(&globset::escape(host)) else {
            return;
        };
        for job in self.watch.jobs.iter().filter(|j| !j.singleton) {
            let id = job_route(&job.name);
            if let Some(route) = self.routes.iter_mut().find(|r| r.id == id) {
                route.id = format!("{id}@{host}");
                route
                    .when
                    .labels
                    .push(("host".to_owned(), this_host.compile_matcher()));
            }
        }
    }
}

impl Route {
    /// Makes a relative `cwd`, and a relative program path (one with a `/`: a bare name is
    /// looked up on PATH), relative to `dir`.
    fn anchor_at(&mut self, dir: &Path) {
        if let Some(cwd) = &self.cwd
            && Path::new(cwd).is_relative()
        {
            self.cwd = Some(dir.join(cwd).display().to_string());
        }
        if let Some(program) = self.run.first_mut()
            && program.contains('/')
            && Path::new(program.as_str()).is_relative()
        {
            *program = dir.join(program.as_str()).display().to_string();
        }
    }
}

impl Config {
    /// The configuration with every default: what `nightwatch serve` uses with no file.
    pub fn defaults() -> Config {
        Config::from_text("", "(defaults)", &|_| None).expect("the defaults are valid")
    }

    /// Reads `path`; a missing file means the defaults. A route's relative `cwd`, and a
    /// relative program path (`./runbooks/disk.sh`, `runbooks/disk.sh`), are relative to the
    /// file's directory, so a configuration and its runbooks move together.
    pub fn load(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let shown = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let mut config = Config::from_text(&text, &shown, env)?;
                let beside = path.parent().unwrap_or(Path::new("."));
                for route in &mut config.routes {
                    route.anchor_at(beside);
                }
                Ok(config)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::defaults()),
            Err(source) => Err(ConfigError::Read {
                path: shown,
                source,
            }),
        }
    }

    /// Parses and checks a configuration; `env` resolves `*_env` secrets.
    pub fn from_text(
        text: &str,
        path: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let file: File = if text.trim().is_empty() {
            File::default()
        } else {
            yaml_serde::from_str(text).map_err(|e| ConfigError::Parse {
                path: path.to_owned(),
                message: e.to_string(),
            })?
        };
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        let listen_text = file.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
        let listen: SocketAddr = listen_text.parse().map_err(|_| {
            invalid(format!(
                "listen: {listen_text:?} is not an address and port like {DEFAULT_LISTEN}"
            ))
        })?;
        let duration = |field: &str, text: Option<&str>, default: Duration| match text {
            None => Ok(default),
            // The one reading of `30s`, `5m`, `1h30m`, as in policy files; a year at most.
            Some(t) => match nightwatch_time::parse_duration(t) {
                Ok(d) if d > MAX_DURATION => {
                    Err(invalid(format!("{field}: {t:?} is longer than a year")))
                }
                Ok(d) => Ok(d),
                Err(why) => Err(invalid(format!("{field}: {why}"))),
            },
        };
        // Every secret variable that is not set, so one run names them all.
        let unset: std::cell::RefCell<Vec<String>> = std::cell::RefCell::new(Vec::new());
        let auth = |field: &str, auth: Option<FileAuth>| -> Result<Option<Auth>, ConfigError> {
            let Some(a) = auth else { return Ok(None) };
            let from_env = |var: &str| -> Result<String, ConfigError> {
                Ok(env(var).filter(|v| !v.is_empty()).unwrap_or_else(|| {
                    unset.borrow_mut().push(format!("{var} (for {field}.auth)"));
                    // Stands in until the end of the file, where the unset ones are reported.
                    "(unset)".to_owned()
                }))
            };
            let bearer = match (a.bearer, a.bearer_env) {
                (Some(t), None) => Some(t),
                (None, Some(var)) => Some(from_env(&var)?),
                (None, None) => None,
                (Some(_), Some(_)) => {
                    return Err(invalid(format!(
                        "{field}.auth: give bearer or bearer_env, not both"
                    )));
                }
            };
            let value = match (a.value, a.value_env) {
                (Some(t), None) => Some(t),
                (None, Some(var)) => Some(from_env(&var)?),
                (None, None) => None,
                (Some(_), Some(_)) => {
                    return Err(invalid(format!(
                        "{field}.auth: give value or value_env, not both"
                    )));
                }
            };
            let parsed = match (bearer, a.header, value) {
                (Some(token), None, None) => Auth::Bearer(token),
                (None, Some(name), Some(value)) => Auth::Header { name, value },
                _ => {
                    return Err(invalid(format!(
                        "{field}.auth: write either bearer (or bearer_env), or header with value (or value_env)"
                    )));
                }
            };
            let secret = match &parsed {
                Auth::Bearer(t) => t,
                Auth::Header { value, .. } => value,
            };
            if secret.trim().is_empty() {
                return Err(invalid(format!("{field}.auth: the secret is empty")));
            }
            Ok(Some(parsed))
        };

        let mut generic = BTreeMap::new();
        for (name, g) in file.sources.generic {
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(invalid(format!(
                    "sources.generic: {name:?} must be letters, digits, - and _ (it is a URL path)"
                )));
            }
            if [
                crate::route::WATCH_SOURCE,
                crate::route::SCHEDULE_SOURCE,
                crate::route::DAEMON_SOURCE,
            ]
            .contains(&name.as_str())
            {
                return Err(invalid(format!(
                    "sources.generic: {name:?} is the name of nightwatch's own alerts; choose another"
                )));
            }
            let auth = auth(&format!("sources.generic.{name}"), g.auth)?;
            let mut mapping = g.mapping;
            mapping.name = name.clone();
            generic.insert(name, GenericSource { auth, mapping });
        }
        let sources = Sources {
            uptime_kuma: Source {
                auth: auth("sources.uptime-kuma", file.sources.uptime_kuma.auth)?,
            },
            alertmanager: Source {
                auth: auth("sources.alertmanager", file.sources.alertmanager.auth)?,
            },
            generic,
        };

        let defaults = nightwatch_tasks::Policy::default();
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let q = file.queue;
        let policy = nightwatch_tasks::Policy {
            cooldown_ms: ms(duration(
                "queue.cooldown",
                q.cooldown.as_deref(),
                Duration::from_millis(defaults.cooldown_ms as u64),
            )?),
            resolve_delay_ms: ms(duration(
                "queue.resolve_delay",
                q.resolve_delay.as_deref(),
                Duration::ZERO,
            )?),
            max_attempts: q.max_attempts.unwrap_or(3),
            backoff_base_ms: ms(duration(
                "queue.backoff_base",
                q.backoff_base.as_deref(),
                Duration::from_millis(defaults.backoff_base_ms as u64),
            )?),
            backoff_cap_ms: ms(duration(
                "queue.backoff_cap",
                q.backoff_cap.as_deref(),
                Duration::from_millis(defaults.backoff_cap_ms as u64),
            )?),
        };
        if policy.max_attempts == 0 {
            return Err(invalid("queue.max_attempts must be at least 1".into()));
        }
        let lease = duration("queue.lease", q.lease.as_deref(), Duration::from_secs(60))?;
        if lease < Duration::from_millis(300) {
            return Err(invalid(
                "queue.lease must be at least 300ms: the worker renews it a third of the way"
                    .into(),
            ));
        }
        let workers = q.workers.unwrap_or(2);
        if !(1..=64).contains(&workers) {
            return Err(invalid("queue.workers must be between 1 and 64".into()));
        }

        let watch = file.watch.check().map_err(|e| invalid(e.to_string()))?;
        // Each scheduled job is a route of its own, ahead of the file's, so its slots reach
        // its runbook whatever the other routes take.
        let mut routes = Vec::new();
        for job in &watch.jobs {
            let field = format!("watch.jobs.{}", job.name);
            let matcher = |pattern: &str| {
                Glob::new(pattern)
                    .map(|g| g.compile_matcher())
                    .map_err(|e| invalid(format!("{field}: {e}")))
            };
            routes.push(Route {
                id: job_route(&job.name),
                when: When {
                    status: vec![nightwatch_intake::Status::Firing],
                    source: Some(crate::route::SCHEDULE_SOURCE.to_owned()),
                    labels: vec![("job".to_owned(), matcher(&job.name)?)],
                    ..When::default()
                },
                run: job.run.clone(),
                cwd: job.cwd.clone(),
                timeout: job.timeout.unwrap_or(Duration::from_secs(30 * 60)),
                max_per_hour: None,
                notify: job.notify.clone(),
                hosts: job
                    .hosts
                    .iter()
                    .map(|p| matcher(p))
                    .collect::<Result<_, _>>()?,
            });
        }
        for r in file.routes {
            let field = format!("routes[{}]", r.id);
            if r.id.trim().is_empty() {
                return Err(invalid("routes: every route needs an id".into()));
            }
            if r.id.starts_with(JOB_ROUTE_PREFIX) {
                return Err(invalid(format!(
                    "{field}: ids starting {JOB_ROUTE_PREFIX:?} are the scheduled jobs' routes"
                )));
            }
            if routes.iter().any(|x: &Route| x.id == r.id) {
                return Err(invalid(format!("{field}: the id is used twice")));
            }
            if r.run.is_empty() || r.run[0].trim().is_empty() {
                return Err(invalid(format!(
                    "{field}.run: give the runbook's command as a list, e.g. [\"/opt/runbooks/disk.sh\"] or [claude, -p, \"...\"]"
                )));
            }
            let glob = |what: &str, pattern: &str| {
                Glob::new(pattern)
                    .map(|g| g.compile_matcher())
                    .map_err(|e| invalid(format!("{field}.when.{what}: {e}")))
            };
            let mut labels = Vec::new();
            for (name, pattern) in &r.when.labels {
                labels.push((name.clone(), glob(&format!("labels.{name}"), pattern)?));
            }
            let mut status = Vec::new();
            for s in &r.when.status {
                status.push(match s.as_str() {
                    "firing" => nightwatch_intake::Status::Firing,
                    "resolved" => nightwatch_intake::Status::Resolved,
                    other => {
                        return Err(invalid(format!(
                            "{field}.when.status: {other:?} is not firing or resolved"
                        )));
                    }
                });
            }
            if status.is_empty() {
                status.push(nightwatch_intake::Status::Firing);
            }
            routes.push(Route {
                when: When {
                    status,
                    source: r.when.source,
                    labels,
                    tags: r.when.tags,
                    monitor: r
                        .when
                        .monitor
                        .as_deref()
                        .map(|p| glob("monitor", p))
                        .transpose()?,
                    title: r
                        .when
                        .title
                        .as_deref()
                        .map(|p| glob("title", p))
                        .transpose()?,
                },
                run: r.run,
                cwd: r.cwd,
                timeout: duration(
                    &format!("{field}.timeout"),
                    r.timeout.as_deref(),
                    Duration::from_secs(30 * 60),
                )?,
                max_per_hour: r.max_per_hour,
                notify: r.notify,
                hosts: r
                    .hosts
                    .iter()
                    .map(|p| {
                        Glob::new(p)
                            .map(|g| g.compile_matcher())
                            .map_err(|e| invalid(format!("{field}.hosts: {e}")))
                    })
                    .collect::<Result<_, _>>()?,
                id: r.id,
            });
        }
        let janitor_singleton = file.janitor.as_ref().is_some_and(|j| j.singleton);
        let janitor_every = match file.janitor {
            Some(j) => {
                let every = duration("janitor.every", Some(&j.every), Duration::ZERO)?;
                if every < Duration::from_secs(1) {
                    return Err(invalid("janitor.every must be at least 1s".into()));
                }
                Some(every)
            }
            None => None,
        };
        let idle = file.idle.check().map_err(|e| invalid(e.to_string()))?;
        if let Some(app) = idle.iter().find(|a| a.listen == Some(listen)) {
            return Err(invalid(format!(
                "idle.apps.{}: listen {listen} is the daemon's own address",
                app.name
            )));
        }
        if let Some(guard) = &file.memory_guard {
            let ids: Vec<&str> = routes.iter().map(|r| r.id.as_str()).collect();
            guard.check(Some(&ids)).map_err(invalid)?;
        }
        let robots = match file.robots {
            None => None,
            Some(r) => {
                let auth = auth("robots", r.auth)?;
                // Robots' reports decide actions: never open beyond this host without a secret.
                if auth.is_none() && !listen.ip().is_loopback() {
                    return Err(invalid(format!(
                        "robots: the daemon listens on {listen}, beyond this host; give robots.auth (e.g. {{ bearer_env: NIGHTWATCH_ROBOTS_TOKEN }})"
                    )));
                }
                Some(Robots { auth })
            }
        };
        let max_connections = file.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
        if max_connections == 0 {
            return Err(invalid("max_connections must be at least 1".into()));
        }
        let config = Config {
            listen,
            max_connections,
            max_body_bytes: file.max_body_bytes.unwrap_or(1024 * 1024),
            request_timeout: duration(
                "request_timeout",
                file.request_timeout.as_deref(),
                Duration::from_secs(10),
            )?,
            sources,
            readers: match file.readers {
                Some(readers) => {
                    let auth = auth("readers", readers.auth)?;
                    if auth.is_none() {
                        return Err(invalid(
                            "readers: give its auth (bearer or bearer_env, or header with value), or leave readers out".into(),
                        ));
                    }
                    auth
                }
                None => None,
            },
            queue: Queue {
                policy,
                lease,
                workers,
                approval_poll: duration(
                    "queue.approval_poll",
                    q.approval_poll.as_deref(),
                    Duration::from_secs(30),
                )?,
                approval_timeout: duration(
                    "queue.approval_timeout",
                    q.approval_timeout.as_deref(),
                    Duration::from_secs(4 * 3600),
                )?,
            },
            routes,
            janitor_every,
            janitor_singleton,
            idle,
            watch,
            memory_guard: file.memory_guard,
            robots,
        };
        // After every secret was looked up (none stands in for a real one past this point).
        let unset = unset.take();
        if !unset.is_empty() {
            return Err(invalid(format!(
                "the environment variable{} holding {} secret{} not set: {}",
                if unset.len() == 1 { "" } else { "s" },
                if unset.len() == 1 { "a" } else { "these" },
                if unset.len() == 1 { " is" } else { "s are" },
                unset.join(", ")
            )));
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn no_file_means_loopback_and_no_routes() {
        let c = Config::defaults();
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert!(c.listen.ip().is_loopback());
        assert!(c.routes.is_empty());
        assert!(c.sources.alertmanager.auth.is_none());
    }

    #[test]
    fn a_full_file_is_read() {
        let text = r#"
listen: 127.0.0.1:9999
max_body_bytes: 4096
sources:
  uptime-kuma: { auth: { bearer: kuma-token } }
  alertmanager: { auth: { header: X-Token, value_env: AM_SECRET } }
  generic:
    grafana:
      mapping: { identity: /ruleId, status: /state }
queue: { cooldown: 10m, max_attempts: 4, backoff_base: 1s, backoff_cap: 1m, lease: 30s, workers: 3 }
routes:
  - id: disk-full
    when: { source: uptime-kuma, tags: [disk], monitor: "prod-*" }
    run: [/opt/runbooks/disk.sh]
    timeout: 5m
    max_per_hour: 4
    notify: [oncall]
janitor: { every: 1h }
"#;
        let env = |k: &str| (k == "AM_SECRET").then(|| "am-secret".to_string());
        let c = Config::from_text(text, "serve.yaml", &env).unwrap();
        assert_eq!(c.listen.port(), 9999);
        assert_eq!(c.max_body_bytes, 4096);
        assert_eq!(
            c.sources.uptime_kuma.auth,
            Some(Auth::Bearer("kuma-token".into()))
        );
        assert_eq!(
            c.sources.alertmanager.auth,
            Some(Auth::Header {
                name: "X-Token".into(),
                value: "am-secret".into()
            })
        );
        assert_eq!(c.sources.generic["grafana"].mapping.name, "grafana");
        assert_eq!(c.queue.policy.max_attempts, 4);
        assert_eq!(c.queue.policy.cooldown_ms, 600_000);
        assert_eq!(c.queue.workers, 3);
        assert_eq!(c.routes[0].timeout, Duration::from_secs(300));
        assert_eq!(c.janitor_every, Some(Duration::from_secs(3600)));
        assert!(!c.janitor_singleton, "per host unless asked");
        let c = Config::from_text(
            "janitor: { every: 1h, singleton: true }",
            "serve.yaml",
            &no_env,
        )
        .unwrap();
        assert!(c.janitor_singleton);
    }

    #[test]
    fn mistakes_are_refused_with_where() {
        for (text, says) in [
            ("listen: nowhere", "listen"),
            ("queue: { max_atempts: 3 }", "max_atempts"),
            ("queue: { max_attempts: 0 }", "max_attempts"),
            ("routes: [{ id: a, run: [] }]", "routes[a].run"),
            (
                "routes: [{ id: a, run: [x] }, { id: a, run: [y] }]",
                "used twice",
            ),
            (
                "sources: { alertmanager: { auth: { bearer_env: NOPE } } }",
                "NOPE",
            ),
            (
                "sources: { alertmanager: { auth: { header: X } } }",
                "either",
            ),
            ("queue: { cooldown: soon }", "queue.cooldown"),
            (
                "routes: [{ id: a, run: [x], when: { monitor: 'a[' } }]",
                "monitor",
            ),
            // The names of nightwatch's own alerts: a hook must not pass for them.
            (
                "sources: { generic: { watch: { mapping: { identity: /id, status: /s } } } }",
                "own alerts",
            ),
            (
                "sources: { generic: { schedule: { mapping: { identity: /id, status: /s } } } }",
                "own alerts",
            ),
            (
                "sources: { generic: { nightwatch: { mapping: { identity: /id, status: /s } } } }",
                "own alerts",
            ),
        ] {
            let err = Config::from_text(text, "serve.yaml", &no_env)
                .err()
                .unwrap_or_else(|| panic!("{text} was accepted"))
                .to_string();
            assert!(err.contains(says), "{text}: {err}");
            assert!(err.starts_with("serve.yaml"), "{err}");
        }
    }

    #[test]
    fn secrets_are_checked_exactly() {
        let bearer = Auth::Bearer("s3cret".into());
        let with =
            |v: &'static str| move |name: &str| (name == "authorization").then(|| v.to_string());
        assert!(bearer.admits(&with("Bearer s3cret")));
        assert!(bearer.admits(&with("bearer  s3cret ")));
        assert!(!bearer.admits(&with("Bearer s3cre")));
        assert!(!bearer.admits(&with("Bearer s3crett")));
        assert!(!bearer.admits(&with("Basic s3cret")));
        assert!(!bearer.admits(&|_| None));
        let header = Auth::Header {
            name: "X-Token".into(),
            value: "abc".into(),
        };
        assert!(header.admits(&|n: &str| (n == "x-token").then(|| "abc".to_string())));
        assert!(!header.admits(&|n: &str| (n == "x-token").then(|| "abd".to_string())));
    }

    #[test]
    fn a_browser_gives_the_bearer_token_as_its_basic_password() {
        use base64::Engine;
        let bearer = Auth::Bearer("s3cret".into());
        let basic = |user_pass: &str| {
            let encoded = base64::engine::general_purpose::STANDARD.encode(user_pass);
            move |name: &str| (name == "authorization").then(|| format!("Basic {encoded}"))
        };
        assert!(bearer.admits(&basic("dana:s3cret")));
        assert!(bearer.admits(&basic(":s3cret")));
        assert!(!bearer.admits(&basic("dana:s3cre")));
        assert!(!bearer.admits(&basic("s3cret")), "no password at all");
        assert!(!bearer.admits(&|_: &str| Some("Basic !!not base64!!".to_string())));
        let header = Auth::Header {
            name: "authorization".into(),
            value: "abc".into(),
        };
        assert!(
            !header.admits(&basic("x:abc")),
            "only a bearer token is also a password"
        );
    }

    #[test]
    fn readers_take_a_secret_like_a_source_and_nothing_else() {
        let env = |k: &str| (k == "READ_TOKEN").then(|| "r34d".to_string());
        let c = Config::from_text(
            "readers: { auth: { bearer_env: READ_TOKEN } }",
            "serve.yaml",
            &env,
        )
        .unwrap();
        assert_eq!(c.readers, Some(Auth::Bearer("r34d".into())));
        assert_eq!(
            Config::from_text("", "serve.yaml", &no_env)
                .unwrap()
                .readers,
            None
        );
        for (text, says) in [
            ("readers: {}", "readers: give its auth"),
            (
                "readers: { auth: { bearer: \"\" } }",
                "readers.auth: the secret is empty",
            ),
            ("readers: { auth: { bearer_env: NOPE } }", "NOPE"),
            ("readers: { token: x }", "unknown field"),
        ] {
            let err = Config::from_text(text, "serve.yaml", &no_env)
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn every_unset_secret_is_named_at_once() {
        let text = "readers: { auth: { bearer_env: READ_TOKEN } }
sources:
  alertmanager: { auth: { header: X-Token, value_env: AM_SECRET } }
  uptime-kuma: { auth: { bearer_env: KUMA_TOKEN } }
";
        let err = Config::from_text(text, "serve.yaml", &no_env)
            .unwrap_err()
            .to_string();
        for named in [
            "READ_TOKEN (for readers.auth)",
            "AM_SECRET (for sources.alertmanager.auth)",
            "KUMA_TOKEN (for sources.uptime-kuma.auth)",
        ] {
            assert!(err.contains(named), "{err}");
        }
    }
    #[test]
    fn scheduled_jobs_are_routes_and_a_fleets_per_host_jobs_stay_on_their_host() {
        let text = "watch:\n  jobs:\n    triage:\n      cron: \"0 3 * * *\"\n      run: [t.sh]\n    sweep:\n      every: 1h\n      run: [s.sh]\n      singleton: true\nroutes:\n  - id: all\n    run: [a.sh]\n";
        let mut config = Config::from_text(text, "serve.yaml", &|_| None).unwrap();
        let ids: Vec<&str> = config.routes.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["job:sweep", "job:triage", "all"]);
        config.localize_jobs("web-[1]");
        let triage = config
            .routes
            .iter()
            .find(|r| r.id.starts_with("job:triage"))
            .unwrap();
        assert_eq!(triage.id, "job:triage@web-[1]");
        let host = &triage
            .when
            .labels
            .iter()
            .find(|(k, _)| k == "host")
            .unwrap()
            .1;
        assert!(host.is_match("web-[1]") && !host.is_match("web-1"));
        // A singleton's slot runs wherever a worker claims it: it fired on one host only.
        assert!(config.routes.iter().any(|r| r.id == "job:sweep"));
        let refused =
            Config::from_text("routes:\n  - id: \"job:x\"\n    run: [a]\n", "f", &|_| None);
        assert!(refused.unwrap_err().to_string().contains("scheduled jobs"));
    }

    #[test]
    fn idle_apps_are_read_checked_and_kept_off_the_daemons_own_address() {
        let app = "idle:\n  apps:\n    shop:\n      container: shop\n      listen: 127.0.0.1:8080\n      upstream: 127.0.0.1:18080\n      idle_after: 15m\n      ready: { http: /healthz }\n";
        let c = Config::from_text(app, "serve.yaml", &|_| None).unwrap();
        assert_eq!(c.idle.len(), 1);
        assert_eq!(c.idle[0].name, "shop");
        assert!(Config::defaults().idle.is_empty());
        let own = format!("listen: 127.0.0.1:8080\n{app}");
        let err = Config::from_text(&own, "serve.yaml", &|_| None).unwrap_err();
        assert!(
            err.to_string().contains("the daemon's own address"),
            "{err}"
        );
        let bad = app.replace("15m", "soon");
        let err = Config::from_text(&bad, "serve.yaml", &|_| None).unwrap_err();
        assert!(err.to_string().contains("idle_after"), "{err}");
    }
}
