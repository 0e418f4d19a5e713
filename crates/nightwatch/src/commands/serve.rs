//! `nightwatch serve`: the daemon (`nightwatch-serve`), given this binary's clock, policy,
//! guards, notifiers and janitor, so the daemon's decisions are the hooks' decisions.

use std::sync::Arc;

use anyhow::Context as _;
use nightwatch_host::daemon::HostEdges;
use nightwatch_serve::Config;

use crate::cli::ServeArgs;
use crate::environment::Environment;
use crate::home;

/// The daemon's log: one line per event on stderr, `info` and above unless `NIGHTWATCH_LOG`
/// names another level (`error`, `warn`, `info`, `debug`, `trace`).
fn start_logging() {
    let level = crate::environment::configured_var("NIGHTWATCH_LOG")
        .and_then(|text| text.trim().parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO);
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

pub fn run(args: ServeArgs) -> anyhow::Result<u8> {
    start_logging();
    let env = Environment::of_process();
    let data_dir = home::data_dir_in(&env);
    let config_path = args
        .config
        .clone()
        .unwrap_or_else(|| data_dir.join("serve.yaml"));
    if args.config.is_some() && !config_path.exists() {
        anyhow::bail!("the configuration {} does not exist", config_path.display());
    }
    let mut config = Config::load(&config_path, &crate::environment::configured_var)?;
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    let fleet = nightwatch_host::stores::fleet(&env)?;
    let edges = HostEdges::new(env, args.source.policy)?;
    // The policy must load now: a daemon that would refuse every runbook should not start.
    let (_, origin) = nightwatch_host::policies::load(edges.policy_file().as_deref())?;
    let shown_config = if config_path.exists() {
        config_path.display().to_string()
    } else {
        format!("defaults ({} not found)", config_path.display())
    };
    for line in describe(&config) {
        eprintln!("nightwatch serve: {line}");
    }
    eprintln!("nightwatch serve: configuration: {shown_config}; policy: {origin}");
    let problems = runbook_problems(&config);
    for problem in &problems {
        eprintln!("nightwatch serve: {problem}");
    }
    if args.check {
        if !problems.is_empty() {
            anyhow::bail!(
                "{} route{} cannot start {} runbook (above)",
                problems.len(),
                if problems.len() == 1 { "" } else { "s" },
                if problems.len() == 1 { "its" } else { "their" },
            );
        }
        println!("configuration and policy are valid; every runbook's program and directory exist");
        return Ok(0);
    }
    if let Some(fleet) = &fleet {
        eprintln!(
            "nightwatch serve: in a fleet as host {}: the queue and the inbox are the fleet's; this host's ledger is shipped there",
            fleet.host
        );
    }
    let stores = crate::stores::daemon(&data_dir, config.queue.policy.clone(), fleet.as_ref())
        .with_context(|| match &fleet {
            Some(_) => format!(
                "cannot open the daemon's stores (in {} and the fleet's database)",
                data_dir.display()
            ),
            None => format!("cannot open the daemon's stores in {}", data_dir.display()),
        })?;
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

/// Each route whose runbook could not start as the daemon starts it: a working directory that
/// is not one, a program that is not there or not executable (a bare name looked up on PATH).
/// All of them, so one check names every one.
fn runbook_problems(config: &Config) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    let executable = |path: &Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let mut problems = Vec::new();
    for route in &config.routes {
        let id = &route.id;
        let cwd = route.cwd.as_deref().map(PathBuf::from);
        if let Some(dir) = &cwd
            && !dir.is_dir()
        {
            problems.push(format!(
                "route {id}: its cwd {} is not a directory",
                dir.display()
            ));
        }
        let Some(program) = route.run.first() else {
            continue;
        };
        if program.contains('/') {
            let path = PathBuf::from(program);
            let path = match &cwd {
                Some(dir) if path.is_relative() => dir.join(path),
                _ => path,
            };
            if !executable(&path) {
                let why = if path.exists() {
                    "is not an executable file"
                } else {
                    "does not exist"
                };
                problems.push(format!("route {id}: its program {} {why}", path.display()));
            }
        } else {
            // The daemon's own PATH: its runbooks inherit it.
            let found = crate::environment::configured_var("PATH").is_some_and(|paths| {
                std::env::split_paths(&paths).any(|dir| executable(&dir.join(program)))
            });
            if !found {
                problems.push(format!(
                    "route {id}: its program {program:?} is not on the daemon's PATH"
                ));
            }
        }
    }
    problems
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
    for app in &config.idle {
        let front = match (app.listen, app.hosts.is_empty()) {
            (Some(listen), true) => format!("proxied at {listen}"),
            (Some(listen), false) => {
                format!(
                    "proxied at {listen} and by forward-auth for {}",
                    app.hosts.join(", ")
                )
            }
            (None, _) => format!("forward-auth for {}", app.hosts.join(", ")),
        };
        lines.push(format!(
            "idle app {}: {}, {front}, to {}; {} after {} without a person",
            app.name,
            app.target.describe(),
            app.upstream,
            app.suspend.as_str(),
            nightwatch_time::format_duration(app.idle_after)
        ));
    }
    let watch = &config.watch;
    for w in &watch.watchers {
        let notify = if w.notify.is_empty() {
            String::new()
        } else {
            format!("; tells {}", w.notify.join(", "))
        };
        lines.push(format!(
            "watcher {}: {} {}{notify}",
            w.name,
            w.kind.name(),
            w.schedule.describe()
        ));
    }
    for job in &watch.jobs {
        lines.push(format!(
            "job {}: runs {:?} {}{}",
            job.name,
            job.run,
            job.schedule.describe(),
            if job.singleton {
                ", on one host of all"
            } else {
                ""
            }
        ));
    }
    if let Some(beat) = &watch.heartbeat {
        lines.push(format!(
            "heartbeat: every {} while healthy",
            nightwatch_time::format_duration(beat.every)
        ));
    }
    lines
}
