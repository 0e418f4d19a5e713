//! The daemon's edges: `nightwatch serve` hands `nightwatch-serve` this host's clock, policy,
//! guards, escalator and janitor, so the daemon's decisions are the hooks' decisions.

use crate::clock::Clock;
use crate::environment::Environment;
use crate::host::Background;
use std::path::PathBuf;
use std::sync::Arc;

pub struct HostEdges {
    clock: Clock,
    /// The `--policy` the daemon was started with, passed on to runbooks.
    explicit_policy: Option<PathBuf>,
    data_dir: PathBuf,
    guards: nightwatch_gate::LiveGuards,
    env: Environment,
    host: Option<String>,
    escalator: Background,
    policies: crate::Policies,
    /// Where following the Engine's events got to (Engine time, ms since 1970).
    followed_until: std::sync::Mutex<Option<i64>>,
    /// The Docker Engine the idle controller suspends and wakes apps through.
    apps: Result<Arc<nightwatch_docker::AppEngine>, String>,
    /// The containers the drift and state watchers read, on the same Engine.
    containers: Arc<nightwatch_docker::ContainerReader>,
}

impl HostEdges {
    /// The edges of a daemon started with `env`'s variables and `explicit_policy`.
    pub fn new(env: Environment, explicit_policy: Option<PathBuf>) -> anyhow::Result<HostEdges> {
        let data_dir = crate::home::data_dir_in(&env);
        Ok(HostEdges {
            clock: Clock::from_env(&env)?,
            explicit_policy,
            guards: nightwatch_gate::LiveGuards::new(&data_dir)
                .with_places(crate::paths::places(&env)),
            host: crate::context::from_env(&env).host,
            escalator: Background { env: env.clone() },
            policies: crate::Policies::default(),
            followed_until: std::sync::Mutex::new(None),
            // Nothing is sent to the Engine before the first call: a daemon without idle apps
            // never talks to it. A `DOCKER_HOST` that cannot name an Engine is an error then.
            apps: nightwatch_docker::AppEngine::from_docker_host(env.var("DOCKER_HOST"))
                .map(Arc::new),
            containers: Arc::new(nightwatch_docker::ContainerReader::from_docker_host(
                env.var("DOCKER_HOST"),
            )),
            data_dir,
            env,
        })
    }

    /// The policy file that applies (None: the built-in policy).
    pub fn policy_file(&self) -> Option<PathBuf> {
        crate::policies::policy_file(self.explicit_policy.as_deref(), &self.env)
    }
}

impl nightwatch_serve::Edges for HostEdges {
    fn clock(&self) -> &dyn nightwatch_gate::Clock {
        &self.clock
    }

    fn host(&self) -> Option<String> {
        self.host.clone()
    }

    fn policy(&self) -> Result<Arc<nightwatch_policy::Policy>, String> {
        self.policies
            .get(self.policy_file())
            .map_err(|e| format!("{e:#}"))
    }

    fn guards(&self) -> &(dyn nightwatch_gate::Guards + Sync) {
        &self.guards
    }

    fn escalator(&self) -> &dyn nightwatch_gate::Escalator {
        &self.escalator
    }

    /// The same plan and apply an operator runs, in process and through the daemon's engine.
    fn sweep(&self, engine: &nightwatch_gate::Engine<'_>) -> Result<String, String> {
        let policy = nightwatch_serve::Edges::policy(self)?;
        crate::sweep::sweep_once(engine, &policy, &self.data_dir, &self.env)
            .map_err(|e| format!("{e:#}"))
    }

    /// The Engine's container events, from where the last span ended, so none falls between.
    fn follow_activity(&self, span: std::time::Duration) -> Option<Result<usize, String>> {
        // A policy that does not load now may load later: retried, not given up.
        let policy = match nightwatch_serve::Edges::policy(self) {
            Ok(policy) => policy,
            Err(e) => return Some(Err(format!("the policy cannot be read: {e}"))),
        };
        let docker = match crate::sweep::docker_here(policy.sweep(), &self.env) {
            Ok(Some(docker)) => docker,
            Ok(None) => return None,
            Err(e) => return Some(Err(e.to_string())),
        };
        let now = self.clock.written_ms();
        let since = {
            let mut followed = self
                .followed_until
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            // From the daemon's start (and a day back, what the Engine still holds).
            *followed.get_or_insert(now - 24 * 3600 * 1000)
        };
        let until = now + i64::try_from(span.as_millis()).unwrap_or(i64::MAX);
        let result = crate::stores::janitor_state(&self.data_dir)
            .map_err(|e| format!("cannot open the janitor's state: {e}"))
            .and_then(|store| {
                docker
                    .record_activity(store.as_ref(), since, until)
                    .map_err(|e| e.to_string())
            });
        if result.is_ok() {
            *self
                .followed_until
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(until);
        }
        Some(result)
    }

    fn idle_runtime(&self) -> Result<Arc<dyn nightwatch_idle::Runtime>, String> {
        self.apps
            .clone()
            .map(|engine| engine as Arc<dyn nightwatch_idle::Runtime>)
    }

    fn databases(&self) -> Arc<dyn nightwatch_watch::Databases> {
        Arc::new(crate::stores::HostDatabases)
    }

    fn containers(&self) -> Arc<dyn nightwatch_watch::Containers> {
        self.containers.clone()
    }

    fn runbook_env(&self) -> Vec<(String, String)> {
        let mut vars = vec![(
            "NIGHTWATCH_HOME".to_owned(),
            self.data_dir.to_string_lossy().into_owned(),
        )];
        if let Some(policy) = &self.explicit_policy {
            vars.push((
                "NIGHTWATCH_POLICY".to_owned(),
                policy.to_string_lossy().into_owned(),
            ));
        }
        vars
    }
}
