//! Apps under idle control on the Docker Engine: [`AppEngine`] observes, pauses or stops, and
//! wakes a container or a compose project, and looks at the signals that someone is using it
//! (exec sessions, connections, processes), as `nightwatch-idle`'s [`Runtime`].
//!
//! Invariants:
//!
//! - Nothing is ever removed: suspending is `pause` or `stop` (with a timeout, after which
//!   the Engine kills, as `docker stop` does), waking is `unpause` or `start`. Volumes,
//!   networks and images are never touched.
//! - An Engine that cannot be reached, or a target with no container, is an error, never an
//!   empty success: `suspend` of a missing app is not "nothing to do".
//! - No lock is held across an await: a call dropped midway (the caller's step timeout)
//!   leaves nothing behind but what the Engine already did, and the next call starts afresh.

use crate::containers::{inspect, plain_name};
use crate::engine::{DEFAULT_HOST, REQUEST_TIMEOUT, connect, engine_error, host_of, status_of};
use bollard::Docker;
use bollard::errors::Error as BollardError;
use bollard::models::{ContainerInspectResponse, ExecInspectResponse};
use bollard::query_parameters::{ListContainersOptionsBuilder, StopContainerOptionsBuilder};
use futures_util::StreamExt;
use nightwatch_idle::runtime::Step;
use nightwatch_idle::spec::SignalSpec;
use nightwatch_idle::{Observed, Runtime, SignalKind, SignalSeen, SuspendMode, Target};
use nightwatch_janitor::COMPOSE_PROJECT_LABEL;
use std::collections::HashSet;
use std::sync::OnceLock;
use std::time::Duration;

/// Compose sets this to `True` on the containers of `docker compose run`: one-off commands
/// (a migration, a shell), not the project's services. They are no part of the app: waking
/// must never start one again, and one left exited must not make the project look mixed.
pub const COMPOSE_ONEOFF_LABEL: &str = "com.docker.compose.oneoff";

/// Requests in flight at once for one app (inspects of its containers, of its exec sessions).
const IN_FLIGHT: usize = 8;

/// The apps' containers through the Docker Engine API, as the idle controller's [`Runtime`].
///
/// Async, on the caller's tokio runtime (keep to one runtime: a connection belongs to the
/// runtime it was opened on). `Send + Sync`, for use as `Arc<dyn Runtime>`. Nothing is sent to
/// the Engine until the first call, so it can be built while the Engine is down; every call
/// then says that it is, and a later call connects when it is back.
///
/// - `observe`: a container `restarting` (its process exited and the Engine will start it
///   again) is neither awake nor asleep, so it makes the app [`Observed::Mixed`], even alone
///   (`"1 restarting"`); so does one being removed. Exited, created and dead are stopped.
/// - A compose target is every container labelled `com.docker.compose.project=NAME`, except
///   Compose's one-off containers ([`COMPOSE_ONEOFF_LABEL`]).
/// - `suspend` acts on all containers at once; `resume` wakes them one after another, oldest
///   first (Compose creates dependencies first; the Engine's list gives creation to the
///   second, then names break ties) and leaves a restarting one to the Engine. Either tries
///   every container and then reports every failure together.
/// - Signals: `Exec` counts the exec sessions running in the containers (inspect's
///   `ExecIDs`, each inspected), leaving out the Engine's own health probes (also execs); a
///   `docker attach` makes no exec and is not seen. `Connections` counts established TCP
///   connections whose local port is one of the ports, in each container's network
///   namespace (read on this host from `/proc/PID/net/tcp` and `tcp6` of its main process,
///   so the daemon must see the host's `/proc`; a namespace shared by several containers is
///   read once). `Process` matches the glob against each process's command line as the
///   Engine's `top` shows it (`ps -ef`'s CMD on the Engine's host), whole or with the
///   program's directory left out (`/usr/bin/pg_dump -Fc` is also `pg_dump -Fc`). Stopped
///   containers count nothing; paused ones count as they stand.
pub struct AppEngine {
    host: String,
    stop_timeout: Duration,
    /// Connected and with the API version agreed with the Engine; empty until a call gets
    /// that far (a call dropped while connecting leaves it empty for the next).
    client: OnceLock<Docker>,
}

impl AppEngine {
    /// The Engine a `DOCKER_HOST` value names (the caller reads its environment), or the
    /// default socket [`DEFAULT_HOST`] without one. Fails only for an address that is no
    /// Engine address; an Engine that is down fails the calls, not this.
    pub fn from_docker_host(docker_host: Option<&str>) -> Result<AppEngine, String> {
        let host = host_of(docker_host);
        let supported = ["unix://", "tcp://", "http://"]
            .iter()
            .any(|scheme| host.starts_with(scheme));
        if !supported {
            return Err(format!(
                "the Docker Engine at {host} cannot be used: only unix://, tcp:// and http:// \
                 addresses are supported; set DOCKER_HOST to one of those (unset, it is \
                 {DEFAULT_HOST})"
            ));
        }
        Ok(AppEngine {
            host,
            stop_timeout: nightwatch_idle::spec::STOP_GRACE,
            client: OnceLock::new(),
        })
    }

    /// How long `suspend(Stop)` lets a container stop before the Engine kills it (10 s).
    pub fn with_stop_timeout(mut self, timeout: Duration) -> AppEngine {
        self.stop_timeout = timeout;
        self
    }

    /// The Engine's address.
    pub fn host(&self) -> &str {
        &self.host
    }

    async fn client(&self) -> Result<&Docker, String> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let negotiated = connect(&self.host, REQUEST_TIMEOUT + self.stop_timeout)
            .await
            .map_err(|e| e.to_string())?;
        // A call racing here negotiated the same thing; either client will do.
        Ok(self.client.get_or_init(|| negotiated))
    }

    fn error(&self, doing: &str, e: BollardError) -> String {
        engine_error(&self.host, doing, e).to_string()
    }

    /// The target's containers, oldest first, inspected. None is `Ok(empty)`.
    async fn members(&self, client: &Docker, target: &Target) -> Result<Vec<Member>, String> {
        match target {
            Target::Container(name) => {
                if !plain_name(name) {
                    return Err(format!(
                        "container {name:?}: not a container name (letters, digits, _, . and - only)"
                    ));
                }
                let found = inspect(client, name)
                    .await
                    .map_err(|e| self.error(&format!("inspect container {name}"), e))?;
                Ok(found
                    .map(|response| Member::of(response, name))
                    .into_iter()
                    .collect())
            }
            Target::Compose(project) => {
                let label = format!("{COMPOSE_PROJECT_LABEL}={project}");
                let filters = std::collections::HashMap::from([("label", vec![label.as_str()])]);
                let options = ListContainersOptionsBuilder::new()
                    .all(true)
                    .filters(&filters)
                    .build();
                let mut listed = client.list_containers(Some(options)).await.map_err(|e| {
                    self.error(
                        &format!("list the containers of compose project {project}"),
                        e,
                    )
                })?;
                listed.retain(|c| {
                    let labels = c.labels.as_ref();
                    // The Engine filtered already; this keeps a look-alike label out anyway.
                    labels.and_then(|l| l.get(COMPOSE_PROJECT_LABEL)) == Some(project)
                        && labels
                            .and_then(|l| l.get(COMPOSE_ONEOFF_LABEL))
                            .is_none_or(|v| !v.eq_ignore_ascii_case("true"))
                });
                let mut ids: Vec<(i64, String, String)> = listed
                    .into_iter()
                    .filter_map(|c| {
                        let name = c
                            .names
                            .and_then(|n| n.into_iter().next())
                            .map(|n| n.trim_start_matches('/').to_owned());
                        let id = c.id?;
                        Some((
                            c.created.unwrap_or(0),
                            name.unwrap_or_else(|| id.clone()),
                            id,
                        ))
                    })
                    .collect();
                ids.sort();
                let inspected: Vec<_> = futures_util::stream::iter(ids)
                    .map(|(_, name, id)| async move { (inspect(client, &id).await, name) })
                    .buffered(IN_FLIGHT)
                    .collect()
                    .await;
                let mut members = Vec::with_capacity(inspected.len());
                for (result, name) in inspected {
                    match result {
                        Ok(Some(response)) => members.push(Member::of(response, &name)),
                        // Removed since the list: no longer part of the app.
                        Ok(None) => {}
                        Err(e) => return Err(self.error(&format!("inspect container {name}"), e)),
                    }
                }
                Ok(members)
            }
        }
    }

    /// As [`AppEngine::members`], but a target without containers is an error.
    async fn present(&self, client: &Docker, target: &Target) -> Result<Vec<Member>, String> {
        let members = self.members(client, target).await?;
        if members.is_empty() {
            return Err(missing(target));
        }
        Ok(members)
    }

    async fn suspend_one(
        &self,
        client: &Docker,
        m: &Member,
        mode: SuspendMode,
    ) -> Result<(), String> {
        match (mode, m.class()) {
            (SuspendMode::Pause, Class::Running) => match client.pause_container(&m.id).await {
                Ok(()) => Ok(()),
                // Paused by someone else since the inspect: as asked.
                Err(e) if status_of(&e) == Some(409) && message_has(&e, "already paused") => Ok(()),
                Err(e) if status_of(&e) == Some(404) => Err(gone(m)),
                Err(e) => Err(self.error(&format!("pause container {}", m.name), e)),
            },
            (SuspendMode::Pause, Class::Paused | Class::Stopped) => Ok(()),
            // The Engine delivers the stop signal to a paused container too (it thaws it), so
            // a paused container stops as gracefully as a running one. A restarting one is
            // stopped too: that also ends its restart loop.
            (SuspendMode::Stop, Class::Running | Class::Paused) => self.stop(client, m).await,
            (SuspendMode::Stop, Class::Other) if m.status == "restarting" => {
                self.stop(client, m).await
            }
            (SuspendMode::Stop, Class::Stopped) => Ok(()),
            (mode, _) => Err(format!(
                "container {} is {}: it cannot be {} now",
                m.name,
                m.status_text(),
                match mode {
                    SuspendMode::Pause => "paused",
                    SuspendMode::Stop => "stopped",
                }
            )),
        }
    }

    async fn stop(&self, client: &Docker, m: &Member) -> Result<(), String> {
        let seconds = i32::try_from(self.stop_timeout.as_secs()).unwrap_or(i32::MAX);
        let options = StopContainerOptionsBuilder::new().t(seconds).build();
        match client.stop_container(&m.id, Some(options)).await {
            Ok(()) => Ok(()),
            // 304: it had stopped already.
            Err(e) if status_of(&e) == Some(304) => Ok(()),
            Err(e) if status_of(&e) == Some(404) => Err(gone(m)),
            Err(e) => Err(self.error(&format!("stop container {}", m.name), e)),
        }
    }

    async fn resume_one(&self, client: &Docker, m: &Member) -> Result<(), String> {
        match m.class() {
            Class::Paused => match client.unpause_container(&m.id).await {
                Ok(()) => Ok(()),
                // Unpaused by someone else since the inspect.
                Err(e) if status_of(&e) == Some(409) && message_has(&e, "not paused") => Ok(()),
                Err(e) if status_of(&e) == Some(404) => Err(gone(m)),
                Err(e) => Err(self.error(&format!("unpause container {}", m.name), e)),
            },
            Class::Stopped => match client.start_container(&m.id, None).await {
                Ok(()) => Ok(()),
                // 304: started by someone else since the inspect.
                Err(e) if status_of(&e) == Some(304) => Ok(()),
                Err(e) if status_of(&e) == Some(404) => Err(gone(m)),
                Err(e) => Err(self.error(&format!("start container {}", m.name), e)),
            },
            Class::Running => Ok(()),
            // The Engine is starting it again by itself.
            Class::Other if m.status == "restarting" => Ok(()),
            Class::Other => Err(format!(
                "container {} is {}: it cannot be started now",
                m.name,
                m.status_text()
            )),
        }
    }

    /// Exec sessions running in `m`, the Engine's own health probes left out.
    async fn open_execs(&self, client: &Docker, m: &Member) -> Result<usize, String> {
        let inspected: Vec<_> = futures_util::stream::iter(m.exec_ids.clone())
            .map(|id| async move { (client.inspect_exec(&id).await, id) })
            .buffer_unordered(IN_FLIGHT)
            .collect()
            .await;
        let mut open = 0;
        for (result, id) in inspected {
            match result {
                Ok(exec) => {
                    if exec.running == Some(true) && !is_health_probe(&exec, m.health.as_deref()) {
                        open += 1;
                    }
                }
                // Ended and collected since the container was inspected.
                Err(e) if status_of(&e) == Some(404) => {}
                Err(e) => {
                    return Err(self.error(
                        &format!("inspect exec session {id} of container {}", m.name),
                        e,
                    ));
                }
            }
        }
        Ok(open)
    }

    /// The command lines of the processes in `m` (none unless it runs or is paused), from
    /// the Engine's `top` (`ps -ef` on the Engine's host: the CMD column).
    async fn command_lines(&self, client: &Docker, m: &Member) -> Result<Vec<String>, String> {
        if !matches!(m.class(), Class::Running | Class::Paused) {
            return Ok(Vec::new());
        }
        let top = match client.top_processes(&m.id, None).await {
            Ok(top) => top,
            // Stopped or removed since the inspect: no processes.
            Err(e) if matches!(status_of(&e), Some(404 | 409)) => return Ok(Vec::new()),
            Err(e) => {
                return Err(self.error(&format!("list the processes of container {}", m.name), e));
            }
        };
        let titles = top.titles.unwrap_or_default();
        let Some(column) = titles.iter().position(|t| t == "CMD" || t == "COMMAND") else {
            return Err(format!(
                "the Docker Engine at {}: the process list of container {} has no command \
                 column (columns: {})",
                self.host,
                m.name,
                titles.join(", ")
            ));
        };
        Ok(top
            .processes
            .unwrap_or_default()
            .into_iter()
            .filter_map(|mut row| (column < row.len()).then(|| row.swap_remove(column)))
            .collect())
    }
}

impl Runtime for AppEngine {
    fn observe<'a>(&'a self, target: &'a Target) -> Step<'a, Observed> {
        Box::pin(async move {
            let client = self.client().await?;
            let members = self.members(client, target).await?;
            Ok(observed(&members))
        })
    }

    /// Pause: every running container is paused (paused and stopped ones are left as they
    /// are). Stop: every running, paused or restarting one is stopped, with the stop timeout.
    fn suspend<'a>(&'a self, target: &'a Target, mode: SuspendMode) -> Step<'a, ()> {
        Box::pin(async move {
            let client = self.client().await?;
            let members = self.present(client, target).await?;
            let results = futures_util::future::join_all(
                members.iter().map(|m| self.suspend_one(client, m, mode)),
            )
            .await;
            all_ok(results)
        })
    }

    /// Paused containers are unpaused, stopped ones started, running ones left alone.
    fn resume<'a>(&'a self, target: &'a Target) -> Step<'a, ()> {
        Box::pin(async move {
            let client = self.client().await?;
            let members = self.present(client, target).await?;
            let mut results = Vec::with_capacity(members.len());
            for m in &members {
                results.push(self.resume_one(client, m).await);
            }
            all_ok(results)
        })
    }

    /// Each signal counted over the target's containers (none found: all zero), in the
    /// order asked; see [`AppEngine`] for how each kind is counted.
    fn signals<'a>(
        &'a self,
        target: &'a Target,
        signals: &'a [SignalSpec],
    ) -> Step<'a, Vec<SignalSeen>> {
        Box::pin(async move {
            let client = self.client().await?;
            let members = self.members(client, target).await?;
            let wants = |f: fn(&SignalKind) -> bool| signals.iter().any(|s| f(&s.kind));

            let mut execs = 0;
            if wants(|k| matches!(k, SignalKind::Exec)) {
                for m in &members {
                    execs += self.open_execs(client, m).await?;
                }
            }
            let mut tables = Vec::new();
            if wants(|k| matches!(k, SignalKind::Connections { .. })) {
                let mut namespaces = HashSet::new();
                for m in &members {
                    tables.extend(tcp_tables(m, &mut namespaces)?);
                }
            }
            let mut commands = Vec::new();
            if wants(|k| matches!(k, SignalKind::Process { .. })) {
                for m in &members {
                    commands.extend(self.command_lines(client, m).await?);
                }
            }

            Ok(signals
                .iter()
                .map(|signal| SignalSeen {
                    name: signal.name.clone(),
                    count: match &signal.kind {
                        SignalKind::Exec => execs,
                        SignalKind::Connections { ports } => tables
                            .iter()
                            .map(|t| nightwatch_idle::sockets::established_on(t, ports))
                            .sum(),
                        SignalKind::Process { glob, .. } => commands
                            .iter()
                            .filter(|c| glob.is_match(c.as_str()) || glob.is_match(without_dir(c)))
                            .count(),
                    },
                    activity: signal.activity,
                })
                .collect())
        })
    }
}

/// One container of an app, as inspected.
struct Member {
    id: String,
    name: String,
    /// The Engine's status: running, paused, exited, created, restarting, removing, dead.
    status: String,
    /// The main process on the Engine's host; 0 when it is not running.
    pid: i64,
    exec_ids: Vec<String>,
    /// The health check's `Test` (`["CMD-SHELL", "..."]`, `["CMD", ...]`), if it has one.
    health: Option<Vec<String>>,
}

/// What a status means for idle control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Running,
    Paused,
    Stopped,
    /// Restarting, removing, or a status this code does not know.
    Other,
}

impl Member {
    fn of(response: ContainerInspectResponse, fallback_name: &str) -> Member {
        let state = response.state.unwrap_or_default();
        Member {
            id: response.id.unwrap_or_else(|| fallback_name.to_owned()),
            name: response
                .name
                .map(|n| n.trim_start_matches('/').to_owned())
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| fallback_name.to_owned()),
            status: state.status.map(|s| s.to_string()).unwrap_or_default(),
            pid: state.pid.unwrap_or(0),
            exec_ids: response.exec_ids.unwrap_or_default(),
            health: response
                .config
                .and_then(|c| c.healthcheck)
                .and_then(|h| h.test),
        }
    }

    fn class(&self) -> Class {
        class_of(&self.status)
    }

    fn status_text(&self) -> &str {
        if self.status.is_empty() {
            "in an unknown state"
        } else {
            &self.status
        }
    }
}

fn class_of(status: &str) -> Class {
    match status {
        "running" => Class::Running,
        "paused" => Class::Paused,
        "exited" | "created" | "dead" => Class::Stopped,
        _ => Class::Other,
    }
}

/// The app's state from its containers' statuses.
fn observed(members: &[Member]) -> Observed {
    let statuses: Vec<&str> = members.iter().map(|m| m.status.as_str()).collect();
    observed_of(&statuses)
}

fn observed_of(statuses: &[&str]) -> Observed {
    if statuses.is_empty() {
        return Observed::Missing;
    }
    let mut counts: Vec<(String, usize)> = Vec::new();
    for status in statuses {
        let word = match class_of(status) {
            Class::Running => "running",
            Class::Paused => "paused",
            Class::Stopped => "stopped",
            Class::Other if status.is_empty() => "unknown",
            Class::Other => status,
        };
        match counts.iter_mut().find(|(w, _)| w == word) {
            Some((_, n)) => *n += 1,
            None => counts.push((word.to_owned(), 1)),
        }
    }
    if let [(word, _)] = counts.as_slice() {
        match word.as_str() {
            "running" => return Observed::Running,
            "paused" => return Observed::Paused,
            "stopped" => return Observed::Stopped,
            _ => {}
        }
    }
    let rank = |w: &str| match w {
        "running" => 0,
        "paused" => 1,
        "stopped" => 2,
        _ => 3,
    };
    counts.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    Observed::Mixed(
        counts
            .iter()
            .map(|(word, n)| format!("{n} {word}"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// Whether a running exec is the Engine's own health probe: it runs the health check's
/// command (`CMD`: that argv; `CMD-SHELL`: a shell given that text).
fn is_health_probe(exec: &ExecInspectResponse, health: Option<&[String]>) -> bool {
    let Some((kind, test)) = health.and_then(|t| t.split_first()) else {
        return false;
    };
    let Some(process) = exec.process_config.as_ref() else {
        return false;
    };
    let mut argv: Vec<&str> = process.entrypoint.as_deref().into_iter().collect();
    argv.extend(process.arguments.iter().flatten().map(String::as_str));
    match kind.as_str() {
        "CMD" => !test.is_empty() && argv.iter().copied().eq(test.iter().map(String::as_str)),
        "CMD-SHELL" => match test {
            [command] => argv.len() >= 2 && argv.last() == Some(&command.as_str()),
            _ => false,
        },
        _ => false,
    }
}

/// The TCP tables (IPv4 and IPv6) of `m`'s network namespace, unless another container of
/// the app shares that namespace and was read already. None when it is not running.
fn tcp_tables(
    m: &Member,
    namespaces: &mut HashSet<std::path::PathBuf>,
) -> Result<Vec<String>, String> {
    if m.pid <= 0 {
        return Ok(Vec::new());
    }
    let proc_dir = std::path::PathBuf::from(format!("/proc/{}", m.pid));
    // Unreadable (another user's process): counted, possibly twice, rather than skipped.
    if let Ok(namespace) = std::fs::read_link(proc_dir.join("ns/net"))
        && !namespaces.insert(namespace)
    {
        return Ok(Vec::new());
    }
    let mut tables = Vec::new();
    for table in ["tcp", "tcp6"] {
        let path = proc_dir.join("net").join(table);
        match std::fs::read_to_string(&path) {
            Ok(text) => tables.push(text),
            // The process ended since the inspect, or the kernel has no IPv6: nothing there.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(format!(
                    "cannot read {} (container {}): {e}; counting connections needs the \
                     host's /proc, so the daemon must run in the host's PID namespace",
                    path.display(),
                    m.name
                ));
            }
        }
    }
    Ok(tables)
}

/// A command line with its program's directory left out: `/usr/bin/pg_dump -Fc db` is
/// `pg_dump -Fc db`, so a glob can name the program either way.
fn without_dir(command: &str) -> &str {
    let program = command.split(' ').next().unwrap_or(command);
    match program.rfind('/') {
        Some(slash) => &command[slash + 1..],
        None => command,
    }
}

fn missing(target: &Target) -> String {
    match target {
        Target::Container(name) => format!("container {name}: no such container"),
        Target::Compose(project) => format!(
            "compose project {project}: no container is labelled \
             {COMPOSE_PROJECT_LABEL}={project}"
        ),
    }
}

fn gone(m: &Member) -> String {
    format!(
        "container {}: no such container (it was removed meanwhile)",
        m.name
    )
}

fn message_has(e: &BollardError, text: &str) -> bool {
    match e {
        BollardError::DockerResponseServerError { message, .. } => {
            message.to_ascii_lowercase().contains(text)
        }
        _ => false,
    }
}

fn all_ok(results: Vec<Result<(), String>>) -> Result<(), String> {
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::ProcessConfig;

    #[test]
    fn one_state_for_all_or_mixed_with_counts() {
        assert_eq!(observed_of(&[]), Observed::Missing);
        assert_eq!(observed_of(&["running", "running"]), Observed::Running);
        assert_eq!(observed_of(&["paused"]), Observed::Paused);
        assert_eq!(
            observed_of(&["exited", "created", "dead"]),
            Observed::Stopped
        );
        assert_eq!(
            observed_of(&["paused", "running", "running"]),
            Observed::Mixed("2 running, 1 paused".into())
        );
        assert_eq!(
            observed_of(&["restarting"]),
            Observed::Mixed("1 restarting".into())
        );
        assert_eq!(
            observed_of(&["removing", "exited", "restarting", "running", ""]),
            Observed::Mixed("1 running, 1 stopped, 1 removing, 1 restarting, 1 unknown".into())
        );
    }

    fn exec(entrypoint: &str, arguments: &[&str]) -> ExecInspectResponse {
        ExecInspectResponse {
            running: Some(true),
            process_config: Some(ProcessConfig {
                entrypoint: Some(entrypoint.into()),
                arguments: Some(arguments.iter().map(|a| a.to_string()).collect()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn test_of(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn health_probes_are_told_from_sessions() {
        let shell = test_of(&["CMD-SHELL", "wget -q -O- localhost"]);
        let probe = exec("/bin/sh", &["-c", "wget -q -O- localhost"]);
        assert!(is_health_probe(&probe, Some(&shell)));
        assert!(!is_health_probe(&exec("sh", &[]), Some(&shell)));
        assert!(!is_health_probe(&probe, None));
        let cmd = test_of(&["CMD", "pg_isready", "-q"]);
        assert!(is_health_probe(&exec("pg_isready", &["-q"]), Some(&cmd)));
        assert!(!is_health_probe(&exec("pg_isready", &[]), Some(&cmd)));
        assert!(!is_health_probe(&exec("psql", &["-q"]), Some(&cmd)));
        assert!(!is_health_probe(&exec("x", &[]), Some(&test_of(&["NONE"]))));
        assert!(!is_health_probe(&exec("x", &[]), Some(&[])));
    }

    #[test]
    fn a_programs_directory_is_optional() {
        assert_eq!(without_dir("/usr/bin/pg_dump -Fc db"), "pg_dump -Fc db");
        assert_eq!(without_dir("sleep 1234"), "sleep 1234");
        assert_eq!(without_dir("sh -c a/b"), "sh -c a/b");
        assert_eq!(without_dir("/bin/"), "");
        assert_eq!(without_dir(""), "");
    }
}
