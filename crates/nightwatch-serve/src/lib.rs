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
pub mod config;
pub mod dispatch;
pub mod http;
pub mod inbox;
pub mod metrics;
pub mod route;
pub mod runner;
pub mod web;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use nightwatch_store::{AlertInbox, Ledger, StoreError, TaskError, TaskQueue};

pub use config::Config;

/// What the daemon needs from the rest of nightwatch: the one clock, the policy, the world's
/// guards, the notifiers and the janitor. The binary implements it.
pub trait Edges: Send + Sync {
    fn now_ms(&self) -> i64;
    /// Minutes since local midnight at `ms`, for policies scoped by time of day.
    fn minute_of_day(&self, ms: i64) -> u16;
    /// This host's name, as records write it.
    fn host(&self) -> Option<String>;
    /// The policy as it is now (read again for each runbook, so edits apply).
    fn policy(&self) -> Result<nightwatch_policy::Policy, String>;
    fn guards(&self) -> &(dyn nightwatch_gate::Guards + Sync);
    /// Delivers the escalation a record names (its `safeguards.notify`), in the background;
    /// every attempt is recorded by the delivery.
    fn escalate(&self, record_id: &str);
    /// Runs one janitor sweep (plan, then apply what is still as planned); a summary line.
    fn sweep(&self) -> Result<String, String>;
    /// Variables every runbook gets beside the alert's (the data directory, the policy), so
    /// the agent's hooks write to this daemon's ledger.
    fn runbook_env(&self) -> Vec<(String, String)>;
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
}

/// The daemon's shared state.
pub struct Daemon {
    pub config: Config,
    pub data_dir: PathBuf,
    pub inbox: Arc<dyn AlertInbox>,
    pub tasks: Arc<dyn TaskQueue>,
    /// See [`Stores::intake_ledger`].
    pub intake_ledger: Arc<dyn Ledger>,
    pub ledger: Arc<dyn Ledger>,
    pub edges: Arc<dyn Edges>,
    pub metrics: metrics::Metrics,
    shutting_down: AtomicBool,
    wake: (Mutex<u64>, Condvar),
}

impl Daemon {
    /// The daemon over `stores`; `data_dir` is the data directory they are kept in.
    pub fn new(
        config: Config,
        data_dir: &Path,
        stores: Stores,
        edges: Arc<dyn Edges>,
    ) -> Result<Daemon, ServeError> {
        Ok(Daemon {
            config,
            data_dir: data_dir.to_path_buf(),
            inbox: stores.inbox,
            tasks: stores.tasks,
            intake_ledger: stores.intake_ledger,
            ledger: stores.ledger,
            edges,
            metrics: metrics::Metrics::new(),
            shutting_down: AtomicBool::new(false),
            wake: (Mutex::new(0), Condvar::new()),
        })
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
    let listener = runtime.block_on(async {
        tokio::net::TcpListener::bind(daemon.config.listen)
            .await
            .map_err(|source| ServeError::Listen {
                addr: daemon.config.listen,
                source,
            })
    })?;
    let addr = listener
        .local_addr()
        .map_err(|e| ServeError::Runtime(e.to_string()))?;

    // Arrivals a crash left unrecorded are recorded before new ones come in.
    let recovered = daemon.record_unrecorded(0)?;
    if recovered > 0 {
        tracing::info!("recorded {recovered} arrival(s) a previous run left unrecorded");
    }
    let threads = runner::start(&daemon);
    announce(addr);

    let app = http::router(daemon.clone());
    let served = runtime.block_on(async {
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown_signal(daemon.clone()))
            .await
    });
    daemon.begin_shutdown();
    for thread in threads {
        let _ = thread.join();
    }
    served.map_err(|e| ServeError::Runtime(format!("the HTTP server failed: {e}")))
}

async fn shutdown_signal(daemon: Arc<Daemon>) {
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
    eprintln!("nightwatch serve: shutting down; finishing requests and running runbooks");
    daemon.begin_shutdown();
}
