//! `nightwatch serve`: the daemon (`nightwatch-serve`), given this binary's clock, policy,
//! guards, notifiers and janitor, so the daemon's decisions are the hooks' decisions.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use nightwatch_serve::{Config, Edges};

use crate::cli::{PolicySource, ServeArgs};
use crate::clock::Clock;
use crate::commands::{load_policy, send_escalation_in_background};
use crate::environment::Environment;
use crate::home;

struct Binary {
    clock: Clock,
    source: PolicySource,
    data_dir: PathBuf,
    guards: nightwatch_gate::LiveGuards,
    env: Environment,
    host: Option<String>,
}

impl Edges for Binary {
    fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    fn minute_of_day(&self, ms: i64) -> u16 {
        let Ok(at) = jiff::Timestamp::from_millisecond(ms) else {
            return 0;
        };
        let local = at.to_zoned(self.clock.zone().clone());
        u16::try_from(i32::from(local.hour()) * 60 + i32::from(local.minute())).unwrap_or(0)
    }

    fn host(&self) -> Option<String> {
        self.host.clone()
    }

    fn policy(&self) -> Result<nightwatch_policy::Policy, String> {
        load_policy(&self.source)
            .map(|(policy, _)| policy)
            .map_err(|e| format!("{e:#}"))
    }

    fn guards(&self) -> &(dyn nightwatch_gate::Guards + Sync) {
        &self.guards
    }

    fn escalate(&self, record_id: &str) {
        send_escalation_in_background(record_id, &self.env);
    }

    /// The same two steps an operator runs, as child processes of this binary: a sweep that
    /// hangs or crashes cannot take the daemon with it, and it records its own decisions.
    fn sweep(&self) -> Result<String, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
        let plan = self.data_dir.join("scheduled-sweep-plan.json");
        let run = |args: &[&str]| -> Result<String, String> {
            let mut command = std::process::Command::new(&exe);
            command.args(args).envs(self.env.pairs());
            if let Some(policy) = &self.source.policy {
                command.arg("--policy").arg(policy);
            }
            let out = command
                .output()
                .map_err(|e| format!("cannot start `nightwatch {}`: {e}", args[0]))?;
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            if out.status.success() {
                Ok(stdout)
            } else {
                Err(format!(
                    "`nightwatch sweep {}` exited {}: {}",
                    args[1],
                    out.status.code().unwrap_or(-1),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        };
        let plan_text = plan.to_string_lossy().into_owned();
        run(&["sweep", "plan", "--out", &plan_text])?;
        let applied = run(&["sweep", "apply", "--plan", &plan_text, "--yes"])?;
        Ok(applied.lines().last().unwrap_or("").to_owned())
    }

    fn runbook_env(&self) -> Vec<(String, String)> {
        let mut vars = vec![(
            "NIGHTWATCH_HOME".to_owned(),
            self.data_dir.to_string_lossy().into_owned(),
        )];
        if let Some(policy) = &self.source.policy {
            vars.push((
                "NIGHTWATCH_POLICY".to_owned(),
                policy.to_string_lossy().into_owned(),
            ));
        }
        vars
    }
}

pub fn run(args: ServeArgs) -> anyhow::Result<u8> {
    let env = Environment::of_process();
    let data_dir = home::data_dir_in(&env);
    let config_path = args
        .config
        .clone()
        .unwrap_or_else(|| data_dir.join("serve.yaml"));
    if args.config.is_some() && !config_path.exists() {
        anyhow::bail!("the configuration {} does not exist", config_path.display());
    }
    let mut config = Config::load(&config_path, &|name| std::env::var(name).ok())?;
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    // The policy must load now: a daemon that would refuse every runbook should not start.
    let (policy, origin) = load_policy(&args.source)?;
    drop(policy);
    let clock = Clock::from_environment()?;
    let edges = Binary {
        clock,
        source: args.source,
        data_dir: data_dir.clone(),
        guards: nightwatch_gate::LiveGuards::new(&data_dir).with_places(crate::paths::places(&env)),
        host: crate::context::from_env(&env).host,
        env,
    };
    let shown_config = if config_path.exists() {
        config_path.display().to_string()
    } else {
        format!("defaults ({} not found)", config_path.display())
    };
    for line in describe(&config) {
        eprintln!("nightwatch serve: {line}");
    }
    eprintln!("nightwatch serve: configuration: {shown_config}; policy: {origin}");
    if args.check {
        println!("configuration and policy are valid");
        return Ok(0);
    }
    let stores = crate::stores::daemon(&data_dir, config.queue.policy.clone())
        .with_context(|| format!("cannot open the daemon's stores in {}", data_dir.display()))?;
    nightwatch_serve::run(config, &data_dir, stores, Arc::new(edges), &|addr| {
        // One line on stdout, for whoever started the daemon (tests read the port from it).
        println!("nightwatch serve: listening on http://{addr}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
    })
    .context("nightwatch serve stopped")?;
    eprintln!("nightwatch serve: stopped");
    Ok(0)
}

/// What the daemon will do, said before it starts, including what is open without a secret.
fn describe(config: &Config) -> Vec<String> {
    let mut lines = Vec::new();
    let open: Vec<&str> = [
        ("uptime-kuma", config.sources.uptime_kuma.auth.is_none()),
        ("alertmanager", config.sources.alertmanager.auth.is_none()),
    ]
    .into_iter()
    .filter_map(|(name, open)| open.then_some(name))
    .chain(
        config
            .sources
            .generic
            .iter()
            .filter(|(_, g)| g.auth.is_none())
            .map(|(n, _)| n.as_str()),
    )
    .collect();
    if !open.is_empty() {
        let warning = if config.listen.ip().is_loopback() {
            "only this host can reach them"
        } else {
            "WARNING: the daemon listens beyond this host; set sources.<name>.auth"
        };
        lines.push(format!(
            "hooks without a secret: {} ({warning})",
            open.join(", ")
        ));
    }
    if config.routes.is_empty() {
        lines.push(
            "no routes: every alert is stored and recorded as 'no matching route', nothing runs"
                .into(),
        );
    }
    for route in &config.routes {
        lines.push(format!("route {}: runs {:?}", route.id, route.run));
    }
    if let Some(every) = config.janitor_every {
        lines.push(format!("janitor: sweeps every {}s", every.as_secs()));
    }
    lines
}
