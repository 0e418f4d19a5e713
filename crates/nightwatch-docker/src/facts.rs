//! Containers as the drift and state watchers read them: state, environment and labels,
//! through the Docker Engine API, for callers outside any async runtime (the watchers' pool).

use crate::containers::{inspect, plain_name};
use crate::engine::{connect, engine_error, host_of};
use bollard::Docker;
use nightwatch_watch::{ContainerFacts, Containers};
use std::sync::Mutex;
use std::time::Duration;

/// How long one look may take, connection included.
const LOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads containers from the Engine a `DOCKER_HOST` value names. Each look runs on a small
/// runtime of its own (a connection belongs to the runtime it was opened on), one look at a
/// time; nothing is sent to the Engine before the first.
pub struct ContainerReader {
    host: String,
    inner: Mutex<Option<(tokio::runtime::Runtime, Docker)>>,
}

impl ContainerReader {
    pub fn from_docker_host(docker_host: Option<&str>) -> ContainerReader {
        ContainerReader {
            host: host_of(docker_host),
            inner: Mutex::new(None),
        }
    }
}

impl Containers for ContainerReader {
    fn inspect(&self, name: &str) -> Result<Option<ContainerFacts>, String> {
        if !plain_name(name) {
            return Err(format!(
                "container {name:?}: not a container name (letters, digits, _, . and - only)"
            ));
        }
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if inner.is_none() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime to ask the Docker Engine: {e}"))?;
            let client = runtime
                .block_on(connect(&self.host, LOOK_TIMEOUT))
                .map_err(|e| e.to_string())?;
            *inner = Some((runtime, client));
        }
        let Some((runtime, client)) = inner.as_ref() else {
            return Err("no connection to the Docker Engine".into());
        };
        let looked = runtime
            .block_on(async { tokio::time::timeout(LOOK_TIMEOUT, inspect(client, name)).await });
        let found = match looked {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => {
                let why = engine_error(&self.host, &format!("inspect container {name}"), e);
                // A broken connection is made again on the next look.
                *inner = None;
                return Err(why.to_string());
            }
            Err(_) => {
                *inner = None;
                return Err(format!(
                    "the Docker Engine at {} did not answer within {}s",
                    self.host,
                    LOOK_TIMEOUT.as_secs()
                ));
            }
        };
        Ok(found.map(|response| {
            let config = response.config.unwrap_or_default();
            let env = config
                .env
                .unwrap_or_default()
                .into_iter()
                .map(|pair| match pair.split_once('=') {
                    Some((k, v)) => (k.to_owned(), v.to_owned()),
                    None => (pair, String::new()),
                })
                .collect();
            let state = response
                .state
                .and_then(|s| s.status)
                .map(|s| s.to_string())
                .unwrap_or_else(|| "unknown".into());
            ContainerFacts {
                state,
                env,
                labels: config.labels.unwrap_or_default().into_iter().collect(),
            }
        }))
    }
}
