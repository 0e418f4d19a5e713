//! `nightwatch serve`: the daemon that turns monitoring into agent work, and shows what
//! happened.
//!
//! ```text
//!  Uptime Kuma / Alertmanager / JSON hook
//!        | POST /hooks/...   (secret, size limit, timeout)      http.rs
//!        v
//!  parse (nightwatch-intake) -- 400 with why when it never can
//!        v
//!  dispatch: store the arrival, route it, offer a task, record   dispatch.rs, inbox.rs, route.rs
//!        |   (2xx only once stored; 503 when storage fails)
//!        v
//!  task queue (nightwatch-tasks): one live task per alert, cooldown, backoff, leases
//!        v
//!  workers: the runbook goes through the gate like any action,    runner.rs
//!           runs with the alert on stdin and in its environment,
//!           and every outcome is a dispatch record in the ledger
//! ```
//!
//! Beside it: the JSON API and its OpenAPI document (`api.rs`), the pages (`web.rs`), and
//! Prometheus metrics (`metrics.rs`). The daemon reads time, policy and the world only through
//! [`Edges`], which the binary supplies, so the same clock and guards serve hooks and daemon.

pub mod api;
pub mod batch;
pub mod config;
pub mod dispatch;
pub mod fleet;
pub mod fleet_clock;
pub mod guard;
pub mod http;
pub mod idle;
pub mod inbox;
pub mod metrics;
pub mod process;
pub mod robots;
pub mod route;
pub mod runner;
pub mod singleton;
pub mod watch;
pub mod web;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use nightwatch_store::{AlertInbox, Leases, Ledger, StoreError, TaskError, TaskQueue};

pub use config::Config;

/// What the daemon needs from the rest of nightwatch: the one clock, the policy, the world's
/// guards, the notifiers and the janitor. The binary implements it.
pub trait Edges: Send + Sync {
    /// The host's clock: what the engine judges and stamps records with.
    fn clock(&self) -> &dyn nightwatch_gate::Clock;
    /// This host's name, as records write it.
    fn host(&self) -> Option<String>;
    /// The policy as it is now (asked for each runbook, so edits apply; compiled again only
    /// when it changed).
    fn policy(&self) -> Result<Arc<nightwatch_policy::Policy>, String>;
    fn guards(&self) -> &(dyn nightwatch_gate::Guards + Sync);
    /// Delivers the escalation a record names (its `safeguards.notify`), in the background;
    /// every attempt is recorded by the delivery.
    fn escalator(&self) -> &dyn nightwatch_gate::Escalator;
    /// Runs one janitor sweep (plan, then apply what is still as planned) through `engine`;
    /// a summary line.
    fn sweep(&self, engine: &nightwatch_gate::Engine<'_>) -> Result<String, String>;
    /// Variables every runbook gets beside the alert's (the data directory, the policy), so
    /// the agent's hooks write to this daemon's ledger.
    fn runbook_env(&self) -> Vec<(String, String)>;
    /// Follows what the janitor must see as it happens (a container's exec, attach, start
    /// and stop events, which the Engine soon forgets) for about `span`, noting it in the
    /// janitor's state; how many were noted. `None` when there is nothing to follow here.
    fn follow_activity(&self, span: std::time::Duration) -> Option<Result<usize, String>> {
        let _ = span;
        None
    }
    /// The container engine the idle controller suspends and wakes apps through, or why
    /// there is none here (a daemon with `idle.apps` then refuses to start, saying so).
    fn idle_runtime(&self) -> Result<Arc<dyn nightwatch_idle::Runtime>, String> {
        Err("no container engine is available to this daemon".into())
    }
    /// The databases the `query:` watchers ask.
    fn databases(&self) -> Arc<dyn nightwatch_watch::Databases> {
        Arc::new(NoDatabases)
    }
    /// The containers the drift and state watchers read.
    fn containers(&self) -> Arc<dyn nightwatch_watch::Containers> {
        Arc::new(nightwatch_watch::NoContainers)
    }
}

/// For a daemon lent no database access: every query says why it cannot tell.
pub struct NoDatabases;

impl nightwatch_watch::Databases for NoDatabases {
    fn returns_row(&self, _url: &str, _sql: &str, _timeout: Duration) -> Result<bool, String> {
        Err("no database access was lent to this daemon".into())
    }
}

/// Why the daemon could not do something. Storage errors reach senders as 503.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{what}: {why}")]
    Storage { what: &'static str, why: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Tasks(#[from] TaskError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Runtime(String),
}

/// The stores the daemon works with, opened by the binary.
pub struct Stores {
    pub inbox: Arc<dyn AlertInbox>,
    pub tasks: Arc<dyn TaskQueue>,
    /// Appends from the intake path give up after a few seconds, so a wedged ledger becomes
    /// a 503 the sender retries, not a request that hangs.
    pub intake_ledger: Arc<dyn Ledger>,
    /// The workers' and readers' handle, with the ledger's usual patience.
    pub ledger: Arc<dyn Ledger>,
    /// The fleet store this host's ledger is shipped to, when the host is in a fleet.
    pub fleet: Option<FleetStore>,
    /// The leases of jobs that run in one place only ([`singleton`]): the fleet's in a fleet,
    /// the data directory's for a host alone.
    pub leases: Arc<dyn Leases>,
}

/// Where this host's records go to be held with the fleet's, and the name they go under; and
/// every host's arrivals, read together (the pages and the API show the fleet's).
#[derive(Clone)]
pub struct FleetStore {
    pub host: String,
    pub ledger: Arc<dyn nightwatch_store::FleetLedger>,
    pub inbox: Arc<dyn nightwatch_store::FleetInbox>,
}

/// The daemon's shared state.
pub struct Daemon {
    pub config: Config,
    pub data_dir: PathBuf,
    pub inbox: Arc<dyn AlertInbox>,
    pub tasks: Arc<dyn TaskQueue>,
    /// Written only through the engines ([`Daemon::engine`], [`Daemon::intake_engine`]);
    /// read through [`Daemon::reader`]. See [`Stores::intake_ledger`].
    intake_ledger: Arc<dyn Ledger>,
    ledger: Arc<dyn Ledger>,
    /// See [`Stores::fleet`].
    pub fleet: Option<FleetStore>,
    /// See [`Stores::leases`].
    pub leases: Arc<dyn Leases>,
    /// In a fleet, the fleet database's clock, which [`Daemon::now_ms`] reads.
    fleet_clock: fleet_clock::FleetClock,
    pub edges: Arc<dyn Edges>,
    pub metrics: metrics::Metrics,
    /// The idle controller, when `idle.apps` names any.
    pub idle: Option<Arc<idle::control::IdleControl>>,
    /// The memory guard, when serve.yaml has `memory_guard:` (see [`guard`]).
    pub guard: Option<Arc<nightwatch_guard::Guard>>,
    /// What the watchers saw last, and when each runs next.
    pub watching: watch::Watching,
    /// Workers running now; fewer than `queue.workers` is unhealthy (the heartbeat stops).
    pub workers_alive: std::sync::atomic::AtomicUsize,
    shutting_down: AtomicBool,
    wake: (Mutex<u64>, Condvar),
    /// How the last intake write went: what `/readyz` reports, and what tells housekeeping
    /// to check that writes work again when nothing else writes.
    last_write: Mutex<LastWrite>,
    /// Concurrent deliveries, written together (see [`dispatch`]).
    intake: batch::GroupCommit<dispatch::Prepared, dispatch::Dispatched>,
}

/// How the last intake write went, and when.
struct LastWrite {
    failure: Option<String>,
    at: std::time::Instant,
    /// When the writes failing now began to fail: the write checks' backoff.
    failing_since: Option<std::time::Instant>,
}

/// How long after a failed write, with nothing written since, housekeeping checks that
/// writes work again: as long as they have been failing, from the `Retry-After` a refused
/// sender is given (5 s) up to a minute, so checks space out while an outage lasts (a check
/// that gets as far as the inbox is an arrival).
fn write_check_wait(failing_for: std::time::Duration) -> std::time::Duration {
    failing_for.clamp(
        std::time::Duration::from_secs(5),
        std::time::Duration::from_secs(60),
    )
}

impl Daemon {
    /// The daemon over `stores`; `data_dir` is the data directory they are kept in.
    pub fn new(
        config: Config,
        data_dir: &Path,
        stores: Stores,
        edges: Arc<dyn Edges>,
    ) -> Result<Daemon, ServeError> {
        let mut config = config;
        if let Some(fleet) = &stores.fleet {
            config.localize_jobs(&fleet.host);
        }
        let idle = if config.idle.is_empty() {
            None
        } else {
            let runtime = edges.idle_runtime().map_err(|why| {
                ServeError::Runtime(format!(
                    "idle.apps names apps, but they cannot be suspended or woken: {why}"
                ))
            })?;
            Some(Arc::new(idle::control::IdleControl::new(
                config.idle.clone(),
                runtime,
            )))
        };
        let guard = config.memory_guard.clone().map(guard::new);
        let daemon = Daemon {
            idle,
            guard,
            config,
            data_dir: data_dir.to_path_buf(),
            inbox: stores.inbox,
            tasks: stores.tasks,
            intake_ledger: stores.intake_ledger,
            ledger: stores.ledger,
            fleet: stores.fleet,
            leases: stores.leases,
            fleet_clock: fleet_clock::FleetClock::default(),
            edges,
            metrics: metrics::Metrics::new(),
            watching: watch::Watching::default(),
            workers_alive: std::sync::atomic::AtomicUsize::new(0),
            shutting_down: AtomicBool::new(false),
            wake: (Mutex::new(0), Condvar::new()),
            last_write: Mutex::new(LastWrite {
                failure: None,
                at: std::time::Instant::now(),
                failing_since: None,
            }),
            intake: batch::GroupCommit::new(dispatch::BATCH_ALERTS),
        };
        // Before any worker claims: the queue's leases are judged on the fleet's clock.
        daemon.read_fleet_clock();
        Ok(daemon)
    }

    /// The engine every worker proposes and records through.
    pub fn engine(&self) -> nightwatch_gate::Engine<'_> {
        self.engine_on(&self.ledger)
    }

    /// The engine of the intake path: its appends give up after a few seconds (see
    /// [`Daemon::intake_ledger`]).
    pub fn intake_engine(&self) -> nightwatch_gate::Engine<'_> {
        self.engine_on(&self.intake_ledger)
    }

    fn engine_on<'a>(&'a self, ledger: &'a Arc<dyn Ledger>) -> nightwatch_gate::Engine<'a> {
        nightwatch_gate::Engine::new(
            ledger.as_ref(),
            self.edges.guards(),
            self.edges.clock(),
            self.edges.escalator(),
            self.edges.host(),
        )
    }

    /// The ledger, for reading: the daemon writes only through its engines.
    pub fn reader(&self) -> &dyn nightwatch_store::LedgerReader {
        self.ledger.as_ref()
    }

    /// Now: what the daemon judges leases, readiness, schedules and windows at. A host alone
    /// takes it from the engine's clock; in a fleet it is the fleet's clock (see
    /// [`fleet_clock`]), shifted as far as the engine's clock is simulated (`NIGHTWATCH_NOW`).
    pub fn now_ms(&self) -> i64 {
        let clock = self.edges.clock();
        match self.fleet.as_ref().and(self.fleet_clock.now_ms()) {
            Some(fleet_ms) => fleet_ms.saturating_add(clock.now_ms() - clock.written_ms()),
            None => clock.now_ms(),
        }
    }

    /// Now by this host's own clock, for comparing it with others (the hazards watcher).
    pub fn host_now_ms(&self) -> i64 {
        self.edges.clock().now_ms()
    }

    /// Reads the fleet's clock when a reading is due (in a fleet); a failure is logged and
    /// the last reading, or until there is one the host's clock, goes on standing in.
    pub fn read_fleet_clock(&self) {
        let Some(fleet) = &self.fleet else { return };
        if !self.fleet_clock.due() {
            return;
        }
        let first = self.fleet_clock.now_ms().is_none();
        let read = self
            .fleet_clock
            .read(fleet.ledger.as_ref(), || self.host_now_ms());
        // The fleet keeps each host's offset, for `fleet status` to show beside its records.
        if let Ok(Some(skew_ms)) = read
            && let Err(e) = fleet.ledger.note_clock(&fleet.host, skew_ms)
        {
            tracing::debug!("cannot note this host's clock in the fleet: {e}");
        }
        match read {
            Ok(Some(skew_ms)) if first => tracing::info!(
                host = %fleet.host,
                "leases and schedules go by the fleet database's clock (this host's is {skew_ms} ms off it)"
            ),
            Ok(_) => {}
            Err(why) if first => tracing::warn!(
                host = %fleet.host,
                "cannot read the fleet database's clock; this host's stands in until it can: {why}"
            ),
            Err(why) => tracing::debug!("cannot read the fleet database's clock again: {why}"),
        }
    }

    /// Notes how the last intake write went: a failure is kept until a write succeeds.
    pub(crate) fn note_write(&self, outcome: Result<(), String>) {
        let mut last = self.last_write();
        let now = std::time::Instant::now();
        last.failing_since = match &outcome {
            Ok(()) => None,
            Err(_) => Some(last.failing_since.unwrap_or(now)),
        };
        last.failure = outcome.err();
        last.at = now;
    }

    /// Why the last intake write failed, while no write has succeeded since.
    pub fn write_failure(&self) -> Option<String> {
        self.last_write().failure.clone()
    }

    /// Why the last intake write failed, when it is time to check that writes work again:
    /// nothing has been written for [`write_check_wait`] since, and a daemon taken out of
    /// rotation for the failure gets no writes that could succeed.
    pub(crate) fn write_check_due(&self) -> Option<String> {
        let last = self.last_write();
        let failing_for = last.at - last.failing_since?;
        (last.at.elapsed() >= write_check_wait(failing_for))
            .then(|| last.failure.clone())
            .flatten()
    }

    fn last_write(&self) -> MutexGuard<'_, LastWrite> {
        self.last_write.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// Stops taking new work; running runbooks get a grace period (see [`runner`]).
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.wake_workers();
    }

    /// Tells idle workers a task may be ready.
    pub fn wake_workers(&self) {
        let (lock, cvar) = &self.wake;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        cvar.notify_all();
    }

    /// Waits until woken or `timeout` passes.
    fn wait_for_work(&self, timeout: Duration) {
        let (lock, cvar) = &self.wake;
        let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
        let seen = *guard;
        let _ = cvar
            .wait_timeout_while(guard, timeout, |n| {
                *n == seen && !self.shutting_down.load(Ordering::SeqCst)
            })
            .unwrap_or_else(|p| p.into_inner());
    }
}

/// Runs the daemon until SIGINT or SIGTERM. `announce` is told the bound address once the
/// daemon listens (the binary prints it).
pub fn run(
    config: Config,
    data_dir: &Path,
    stores: Stores,
    edges: Arc<dyn Edges>,
    announce: &dyn Fn(std::net::SocketAddr),
) -> Result<(), ServeError> {
    let daemon = Arc::new(Daemon::new(config, data_dir, stores, edges)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| ServeError::Runtime(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let listener = listen(daemon.config.listen).map_err(|source| ServeError::Listen {
            addr: daemon.config.listen,
            source,
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| ServeError::Runtime(e.to_string()))?;
        serve(daemon.clone(), listener, signal(), || announce(addr)).await
    })
}

/// Connections the kernel holds for the daemon before it accepts them (capped by
/// `net.core.somaxconn`). The usual 128 overflowed when many senders connected at once: each
/// connection past it waited a second for its SYN to be sent again.
const LISTEN_BACKLOG: u32 = 4096;

fn listen(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = match addr {
        std::net::SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        std::net::SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves `daemon` on `listener` until `shutdown` completes: records what a crash left
/// unrecorded, starts the workers, calls `ready`, answers HTTP, then stops taking work, lets
/// running runbooks finish (see [`runner`]) and joins the workers. In process, so tests can
/// run a whole daemon on a port of their own and stop it.
pub async fn serve(
    daemon: Arc<Daemon>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ready: impl FnOnce(),
) -> Result<(), ServeError> {
    // Arrivals a crash left unrecorded are recorded before new ones come in; then the workers
    // start (after stopping what a dead daemon left running). On the blocking pool, as every
    // store call is: a store may block on a runtime of its own, as PostgreSQL's driver does.
    let starting = daemon.clone();
    let mut threads = tokio::task::spawn_blocking(move || {
        let recovered = starting.record_unrecorded(0)?;
        if recovered > 0 {
            tracing::info!("recorded {recovered} arrival(s) a previous run left unrecorded");
        }
        let mut threads = runner::start(&starting);
        threads.extend(watch::start(&starting));
        Ok::<_, ServeError>(threads)
    })
    .await
    .map_err(|e| ServeError::Runtime(format!("starting the daemon failed: {e}")))??;
    threads.extend(guard::start(&daemon));
    let limits = http::ConnectionLimits {
        max_connections: daemon.config.max_connections,
        header_read: daemon.config.request_timeout,
    };
    // Each app under idle control gets its proxy's listener before the daemon says it is
    // ready, so a listener that cannot be had stops the start, not a request later.
    let (stop_proxies, proxies_stop) = tokio::sync::watch::channel(false);
    let mut proxies = Vec::new();
    if let Some(control) = daemon.idle.clone() {
        for app in &control.apps {
            let Some(addr) = app.spec.listen else {
                continue;
            };
            let listener = listen(addr).map_err(|source| ServeError::Listen { addr, source })?;
            let door = Arc::new(idle::control::Door::new(
                daemon.clone(),
                control.clone(),
                app.clone(),
            ));
            let mut stop = proxies_stop.clone();
            proxies.push(tokio::spawn(idle::proxy::serve_proxy(
                listener,
                idle::proxy::Upstream::new(app.spec.upstream),
                door,
                limits,
                async move {
                    let _ = stop.wait_for(|stopped| *stopped).await;
                },
            )));
        }
        tokio::spawn(control.run(daemon.clone()));
    }
    ready();

    let app = http::router(daemon.clone());
    let served = http::serve_connections(listener, app, limits, shutdown).await;
    let _ = stop_proxies.send(true);
    for proxy in proxies {
        if let Ok(Err(e)) = proxy.await {
            tracing::warn!("an idle app's proxy ended badly: {e}");
        }
    }
    tracing::info!("shutting down; finishing requests and running runbooks");
    daemon.begin_shutdown();
    let joined = tokio::task::spawn_blocking(move || {
        for thread in threads {
            let _ = thread.join();
        }
    })
    .await;
    if let Err(e) = joined {
        tracing::error!("the workers did not stop cleanly: {e}");
    }
    served
}

/// SIGINT or SIGTERM.
async fn signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
}

#[cfg(test)]
mod tests {
    use super::write_check_wait;
    use std::time::Duration;

    #[test]
    fn write_checks_space_out_as_an_outage_lasts_from_five_seconds_to_a_minute() {
        // Each check that fails is the last failed write; the next waits as long as the
        // writes have been failing, within its bounds.
        let mut at = 0;
        let mut checks = Vec::new();
        while at < 300 {
            at += write_check_wait(Duration::from_secs(at)).as_secs();
            checks.push(at);
        }
        assert_eq!(checks, [5, 10, 20, 40, 80, 140, 200, 260, 320]);
    }
}
