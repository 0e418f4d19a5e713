//! The connection: which Engine, the runtime that drives bollard, and Engine errors turned
//! into errors a person can act on.

use bollard::Docker;
use bollard::errors::Error as BollardError;
use nightwatch_janitor::{ContainerRules, InventoryError};
use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

/// The Engine used when `DOCKER_HOST` is unset or empty.
pub const DEFAULT_HOST: &str = "unix:///var/run/docker.sock";

/// How long to wait for the Engine's answer to a request. A stop waits its own timeout on
/// top; an event stream's length is bounded by its `until`, not by this.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Containers through the Docker Engine API, as the janitor's [`nightwatch_janitor::Inventory`].
///
/// Nothing is sent to the Engine until the first call: an inventory can be built when the
/// Engine is down, and every call then reports that it is.
pub struct DockerInventory {
    host: String,
    /// The labels that keep a container, checked again at remove time.
    pub(crate) rules: ContainerRules,
    pub(crate) stop_timeout: Duration,
    runtime: tokio::runtime::Runtime,
    /// Connected and with the API version agreed with the Engine.
    client: OnceLock<Docker>,
}

impl DockerInventory {
    /// The Engine a `DOCKER_HOST` value names (the caller reads its environment), or the
    /// default socket [`DEFAULT_HOST`] without one. `rules` supplies the keep labels that
    /// `remove` checks once more before acting.
    pub fn from_docker_host(
        docker_host: Option<&str>,
        rules: &ContainerRules,
    ) -> Result<DockerInventory, InventoryError> {
        DockerInventory::at(&host_of(docker_host), rules)
    }

    /// The Engine at `host`: `unix:///path/to/docker.sock`, `tcp://host:2375` or `http://...`.
    pub fn at(host: &str, rules: &ContainerRules) -> Result<DockerInventory, InventoryError> {
        // One thread is enough: requests are few and concurrency comes from the futures.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                InventoryError::Other(format!("cannot start the Docker client's runtime: {e}"))
            })?;
        Ok(DockerInventory {
            host: host.trim().to_owned(),
            rules: rules.clone(),
            stop_timeout: Duration::from_secs(10),
            runtime,
            client: OnceLock::new(),
        })
    }

    /// How long `remove` lets a running container stop before the Engine kills it (10 s).
    pub fn with_stop_timeout(mut self, timeout: Duration) -> DockerInventory {
        self.stop_timeout = timeout;
        self
    }

    /// The Engine's address, as given.
    pub fn host(&self) -> &str {
        &self.host
    }

    pub(crate) fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// The client, connecting and agreeing on an API version on first use (see [`connect`]).
    pub(crate) fn client(&self) -> Result<&Docker, InventoryError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let negotiated = self.block_on(connect(&self.host, REQUEST_TIMEOUT + self.stop_timeout))?;
        // A second caller racing here negotiated the same thing; either client will do.
        Ok(self.client.get_or_init(|| negotiated))
    }

    /// An Engine error as an inventory error (see [`engine_error`]).
    pub(crate) fn error(&self, doing: &str, e: BollardError) -> InventoryError {
        engine_error(&self.host, doing, e)
    }
}

/// The Engine a `DOCKER_HOST` value names, or [`DEFAULT_HOST`] when it is unset or blank.
pub(crate) fn host_of(docker_host: Option<&str>) -> String {
    docker_host
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .unwrap_or(DEFAULT_HOST)
        .to_owned()
}

/// A client of the Engine at `host` whose requests give up after `timeout`, with the API
/// version agreed: bollard speaks a newer API than a 20.10 Engine (1.41) accepts, and newer
/// Engines refuse very old ones, so the version is the lower of the two. This is the first
/// request sent to the Engine.
pub(crate) async fn connect(host: &str, timeout: Duration) -> Result<Docker, InventoryError> {
    let connected = Docker::connect_with_host(host).map_err(|e| {
        if matches!(e, BollardError::UnsupportedURISchemeError { .. }) {
            InventoryError::Unavailable {
                what: format!("the Docker Engine at {host}"),
                reason: "only unix://, tcp:// and http:// addresses are supported; \
                         set DOCKER_HOST to one of those"
                    .to_owned(),
            }
        } else {
            engine_error(host, "connect", e)
        }
    })?;
    connected
        .with_timeout(timeout)
        .negotiate_version()
        .await
        .map_err(|e| engine_error(host, "ask the Engine's API version", e))
}

/// An Engine error as an inventory error: "cannot reach" when the Engine at `host` could not
/// be talked to, the Engine's own message when it answered.
pub(crate) fn engine_error(host: &str, doing: &str, e: BollardError) -> InventoryError {
    match e {
        BollardError::DockerResponseServerError {
            status_code,
            message,
        } => InventoryError::Other(format!(
            "the Docker Engine at {host} could not {doing}: {} (HTTP {status_code})",
            message.trim()
        )),
        BollardError::SocketNotFoundError(_)
        | BollardError::HyperLegacyError { .. }
        | BollardError::HyperResponseError { .. }
        | BollardError::HttpClientError { .. }
        | BollardError::IOError { .. }
        | BollardError::RequestTimeoutError => InventoryError::Unavailable {
            what: format!("the Docker Engine at {host}"),
            reason: format!(
                "cannot {doing}: {}; is the daemon running, and may this user open its \
                 socket? (DOCKER_HOST names another Engine)",
                chain(&e)
            ),
        },
        other => InventoryError::Other(format!(
            "the Docker Engine at {host}: cannot {doing}: {}",
            chain(&other)
        )),
    }
}

/// The HTTP status of an Engine answer, when the Engine answered.
pub(crate) fn status_of(e: &BollardError) -> Option<u16> {
    match e {
        BollardError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// An error and its causes, `outer: inner: innermost`: hyper's outer message alone
/// ("client error (Connect)") does not say that the socket is missing.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}
