//! `nightwatch install | uninstall | doctor`: point an agent's hooks at a stable nightwatch,
//! take them out again, and check the whole chain; `install systemd` writes hardened units.

use crate::cli::{AgentName, DoctorArgs, InstallArgs, InstallTarget, SettingsPlace, UninstallArgs};
use crate::environment::Environment;
use anyhow::{Context as _, bail};
use nightwatch_agents::{Agent, Base, Scope, install_hooks, settings_path, uninstall_hooks};
use std::path::{Path, PathBuf};

pub fn run(args: InstallArgs) -> anyhow::Result<u8> {
    let env = Environment::of_process();
    let agent = match args.target {
        InstallTarget::Claude => Agent::Claude,
        InstallTarget::Codex => Agent::Codex,
        InstallTarget::Gemini => Agent::Gemini,
        InstallTarget::Systemd => return systemd(&args, &env),
    };
    let path = settings_file(agent, &args.place, &env)?;
    let binary = stable_binary(args.binary.as_deref(), &env)?;
    let command = hook_command(&binary, agent, &env);

    let existing = read_settings(&path)?;
    let merged = install_hooks(agent, existing.clone(), &command)?;
    if merged == existing {
        println!(
            "{} already runs nightwatch: nothing to change",
            path.display()
        );
    } else {
        write_settings(&path, &merged)?;
        println!(
            "installed nightwatch's {} hooks in {}",
            agent.as_str(),
            path.display()
        );
    }
    println!("the hook runs: {command}");
    let in_effect = match agent {
        Agent::Codex => codex_trust(&path, &merged, args.trust, &args.place, &env)?,
        _ => true,
    };
    let data = crate::home::data_dir_in(&env);
    println!("data directory: {}", data.display());
    let policy = nightwatch_host::policies::policy_file(None, &env);
    match &policy {
        Some(file) => println!("policy: {}", file.display()),
        None => println!(
            "policy: the built-in one (write your own with `nightwatch init`; it goes to {})",
            crate::home::policy_file_in(&env).display()
        ),
    }
    if agent == Agent::Claude && !args.place.shared && !args.place.user {
        println!(
            "this is your local settings file, which Claude keeps out of git; --shared writes \
             the project's committed one"
        );
    }
    println!("check it: nightwatch doctor {}", agent.as_str());
    Ok(if in_effect { 0 } else { 1 })
}

/// Codex runs a hook only once its hash is trusted in the user's `config.toml` (and a
/// project's hooks only in a project the user trusts). With `--trust`, records that trust the
/// way Codex's own review does; then asks Codex itself, when it is on PATH, which of the hooks
/// it will run. Whether the hooks are in effect: without trust they are not, and install says
/// what to run instead of reporting success.
fn codex_trust(
    hooks_file: &Path,
    settings: &serde_json::Value,
    trust: bool,
    place: &SettingsPlace,
    env: &Environment,
) -> anyhow::Result<bool> {
    let codex_home = user_dir("CODEX_HOME", ".codex", env)
        .context("Codex's trust needs $CODEX_HOME or $HOME")?;
    let config = codex_home.join("config.toml");
    let hooks_file = std::path::absolute(hooks_file)?;
    let wanted = nightwatch_agents::codex_hook_trust(&hooks_file.to_string_lossy(), settings);
    let text = match std::fs::read_to_string(&config) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => bail!("cannot read {}: {e}", config.display()),
    };
    let mut document: toml_edit::DocumentMut = text.parse().with_context(|| {
        format!(
            "{} is not TOML; fix it by hand, then try again",
            config.display()
        )
    })?;
    let untrusted: Vec<&nightwatch_agents::CodexHookTrust> = wanted
        .iter()
        .filter(|hook| trusted_hash(&document, &hook.key) != Some(hook.hash.as_str()))
        .collect();
    if !untrusted.is_empty() && trust {
        for hook in &untrusted {
            let state = document
                .entry("hooks")
                .or_insert_with(implicit_table)
                .as_table_like_mut()
                .context("`hooks` in config.toml is not a table")?
                .entry("state")
                .or_insert(implicit_table());
            let state = state
                .as_table_like_mut()
                .context("`hooks.state` in config.toml is not a table")?;
            let entry = state.entry(&hook.key).or_insert(toml_edit::table());
            entry
                .as_table_like_mut()
                .context("a `hooks.state` entry in config.toml is not a table")?
                .insert("trusted_hash", toml_edit::value(hook.hash.as_str()));
        }
        write_text(&config, &document.to_string())?;
        println!(
            "trusted nightwatch's {} Codex hooks in {} (as Codex's /hooks review records it)",
            untrusted.len(),
            config.display()
        );
    }
    let mut in_effect = true;
    if !untrusted.is_empty() && !trust {
        in_effect = false;
        println!(
            "NOT IN EFFECT: Codex runs no hook you have not trusted, and skips them without a \
             word ({} of nightwatch's hooks are not trusted in {}).",
            untrusted.len(),
            config.display()
        );
        println!(
            "  trust them: nightwatch install codex --trust{}   (or review them in Codex: /hooks)",
            place_flags(place)
        );
    }
    if !place.user {
        let project = hooks_file
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        if !codex_trusts_project(&document, &project) {
            in_effect = false;
            println!(
                "NOT IN EFFECT: Codex reads a project's hooks only in a project you trust, and {} \
                 is not trusted in {}.",
                project.display(),
                config.display()
            );
            println!(
                "  trust the project in Codex (start `codex` there and accept), or install for \
                 every project: nightwatch install codex --user --trust"
            );
        }
    }
    if in_effect && let Some(codex) = on_path("codex") {
        let project = place
            .project
            .clone()
            .or_else(|| env.cwd().map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("/"));
        match super::agent_probe::codex_hooks(&codex, &codex_home, &project) {
            Ok(hooks) => {
                let ours: Vec<_> = hooks.iter().filter(|h| h.is_nightwatch()).collect();
                let off: Vec<_> = ours.iter().filter(|h| !h.will_run()).collect();
                if ours.is_empty() || !off.is_empty() {
                    in_effect = false;
                    println!(
                        "NOT IN EFFECT: Codex ({}) says it will not run {} of nightwatch's hooks: {}",
                        codex.display(),
                        if ours.is_empty() {
                            "any".to_owned()
                        } else {
                            off.len().to_string()
                        },
                        off.iter()
                            .map(|h| format!("{} ({})", h.key, h.trust_status))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                } else {
                    println!(
                        "Codex ({}) confirms it runs nightwatch's {} hooks",
                        codex.display(),
                        ours.len()
                    );
                }
            }
            Err(e) => println!(
                "could not ask Codex ({}) which hooks it runs: {e:#}",
                codex.display()
            ),
        }
    }
    Ok(in_effect)
}

fn implicit_table() -> toml_edit::Item {
    let mut table = toml_edit::Table::new();
    table.set_implicit(true);
    toml_edit::Item::Table(table)
}

/// `hooks.state."KEY".trusted_hash` in a Codex config.
fn trusted_hash<'a>(document: &'a toml_edit::DocumentMut, key: &str) -> Option<&'a str> {
    document
        .get("hooks")?
        .get("state")?
        .get(key)?
        .get("trusted_hash")?
        .as_str()
}

/// Whether the config trusts `project` or a directory above it (`[projects."DIR"]
/// trust_level = "trusted"`).
fn codex_trusts_project(document: &toml_edit::DocumentMut, project: &Path) -> bool {
    let Some(projects) = document.get("projects").and_then(|p| p.as_table_like()) else {
        return false;
    };
    project.ancestors().any(|dir| {
        projects
            .get(&dir.to_string_lossy())
            .and_then(|p| p.get("trust_level"))
            .and_then(|t| t.as_str())
            == Some("trusted")
    })
}

/// The flags that name the same settings file again.
fn place_flags(place: &SettingsPlace) -> String {
    let mut flags = String::new();
    if place.user {
        flags.push_str(" --user");
    }
    if place.shared {
        flags.push_str(" --shared");
    }
    if let Some(project) = &place.project {
        flags.push_str(&format!(" --project {}", project.display()));
    }
    flags
}

/// Writes a file whole (a temporary file renamed over), the old one backed up first.
fn write_text(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    if path.exists() {
        let backup = backup_path(path);
        std::fs::copy(path, &backup).with_context(|| {
            format!("cannot back up {} to {}", path.display(), backup.display())
        })?;
        println!("backed up {} to {}", path.display(), backup.display());
    }
    let temporary = path.with_extension("nightwatch-tmp");
    std::fs::write(&temporary, text)
        .with_context(|| format!("cannot write {}", temporary.display()))?;
    std::fs::rename(&temporary, path)
        .with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}

pub fn uninstall(args: UninstallArgs) -> anyhow::Result<u8> {
    let env = Environment::of_process();
    let agent: Agent = args.agent.into();
    let path = settings_file(agent, &args.place, &env)?;
    let existing = read_settings(&path)?;
    let removed = uninstall_hooks(agent, existing.clone())?;
    if removed == existing {
        println!(
            "{} does not run nightwatch: nothing to change",
            path.display()
        );
        return Ok(0);
    }
    write_settings(&path, &removed)?;
    println!(
        "took nightwatch's {} hooks out of {}",
        agent.as_str(),
        path.display()
    );
    Ok(0)
}

/// The settings file `place` names for `agent`.
fn settings_file(
    agent: Agent,
    place: &SettingsPlace,
    env: &Environment,
) -> anyhow::Result<PathBuf> {
    let scope = if place.user {
        Scope::User
    } else if place.shared {
        Scope::Project
    } else {
        Scope::Local
    };
    let location = settings_path(agent, scope);
    let base = match location.base {
        Base::User { var, default } => {
            user_dir(var, default, env).with_context(|| format!("--user needs ${var} or $HOME"))?
        }
        Base::Project => project_dir(place.project.as_deref(), env)?,
    };
    Ok(base.join(location.path))
}

/// The agent's directory for this user: `$var`, else `$HOME/default`; absolute.
fn user_dir(var: &str, default: &str, env: &Environment) -> Option<PathBuf> {
    let dir = match env.var(var).filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env.var("HOME").filter(|h| !h.is_empty())?).join(default),
    };
    std::path::absolute(&dir).ok()
}

fn project_dir(given: Option<&Path>, env: &Environment) -> anyhow::Result<PathBuf> {
    match given {
        Some(dir) => Ok(dir.to_path_buf()),
        None => env
            .cwd()
            .map(PathBuf::from)
            .context("cannot read the current directory"),
    }
}

/// The nightwatch the hook runs, at a path that stays put: the one given; else `nightwatch`
/// on PATH; else this binary unless it is a build's output (`target/release/...`, replaced by
/// every build and gone with `cargo clean`); else a copy of it in the data directory's `bin/`.
fn stable_binary(given: Option<&Path>, env: &Environment) -> anyhow::Result<PathBuf> {
    let this = std::env::current_exe().context("cannot find this binary's path")?;
    if let Some(given) = given {
        let given = std::path::absolute(given)
            .with_context(|| format!("cannot resolve {}", given.display()))?;
        if !is_executable(&given) {
            bail!("{} is not an executable file", given.display());
        }
        return Ok(given);
    }
    if let Some(on_path) = on_path("nightwatch") {
        if !same_file(&on_path, &this) {
            println!(
                "note: the nightwatch on PATH ({}) is not this binary ({}); the hook runs the \
                 one on PATH (--binary chooses another)",
                on_path.display(),
                this.display()
            );
        }
        return Ok(on_path);
    }
    if !is_build_output(&this) {
        return Ok(this);
    }
    let bin = crate::home::data_dir_in(env).join("bin");
    std::fs::create_dir_all(&bin).with_context(|| format!("cannot create {}", bin.display()))?;
    let copy = bin.join("nightwatch");
    if !same_file(&copy, &this) {
        let temporary = bin.join(".nightwatch.tmp");
        std::fs::copy(&this, &temporary)
            .with_context(|| format!("cannot copy this binary to {}", temporary.display()))?;
        std::fs::rename(&temporary, &copy)
            .with_context(|| format!("cannot replace {}", copy.display()))?;
    }
    println!(
        "this binary is a build's output ({}), replaced by the next build: the hook runs a \
         copy, {} (install again after an upgrade, or put nightwatch on PATH)",
        this.display(),
        copy.display()
    );
    Ok(copy)
}

/// The hook's command line: the program, `hook`, the agent; with the data directory and
/// policy this shell names, so the agent's hook uses them whatever its own environment says.
fn hook_command(binary: &Path, agent: Agent, env: &Environment) -> String {
    let mut vars = Vec::new();
    for name in ["NIGHTWATCH_HOME", "NIGHTWATCH_POLICY"] {
        if let Some(value) = env.var(name).filter(|v| !v.is_empty()) {
            let absolute = std::path::absolute(value)
                .map_or_else(|_| value.to_owned(), |p| p.display().to_string());
            vars.push(format!("{name}={absolute}"));
        }
    }
    let program = format!("{} hook {}", binary.display(), agent.as_str());
    if vars.is_empty() {
        program
    } else {
        format!("env {} {program}", vars.join(" "))
    }
}

/// `program` in a directory of this process's PATH.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = crate::environment::configured_var("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn is_build_output(path: &Path) -> bool {
    let parts: Vec<_> = path
        .components()
        .map(|c| c.as_os_str().to_owned())
        .collect();
    parts
        .windows(2)
        .any(|pair| pair[0] == "target" && (pair[1] == "release" || pair[1] == "debug"))
        || parts.iter().any(|p| p == "deps")
}

/// The same binary: the same file, or the same bytes.
fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(x), Ok(y)) = (a.canonicalize(), b.canonicalize())
        && x == y
    {
        return true;
    }
    match (std::fs::read(a), std::fs::read(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

fn read_settings(path: &Path) -> anyhow::Result<serde_json::Value> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(serde_json::Value::Null),
        Ok(text) => serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not JSON; fix it by hand, then try again",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(serde_json::Value::Null),
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    }
}

/// Writes the settings whole (a temporary file renamed over), the old file backed up first.
fn write_settings(path: &Path, settings: &serde_json::Value) -> anyhow::Result<()> {
    write_text(path, &(serde_json::to_string_pretty(settings)? + "\n"))
}

/// `settings.json.nightwatch-backup`, or `...-backup.2` and on when one exists already.
fn backup_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let first = path.with_file_name(format!("{name}.nightwatch-backup"));
    if !first.exists() {
        return first;
    }
    (2..)
        .map(|n| path.with_file_name(format!("{name}.nightwatch-backup.{n}")))
        .find(|candidate| !candidate.exists())
        .unwrap_or(first)
}

/// The two units, hardened as seed 004's: the daemon, and the resident gate.
fn systemd(args: &InstallArgs, env: &Environment) -> anyhow::Result<u8> {
    let binary = stable_binary(args.binary.as_deref(), env)?;
    let user = &args.service_user;
    if user.is_empty()
        || !user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
    {
        bail!("--service-user {user:?} is not a user name");
    }
    std::fs::create_dir_all(&args.unit_dir)
        .with_context(|| format!("cannot create {}", args.unit_dir.display()))?;
    for (name, description, command) in [
        (
            "nightwatch-serve.service",
            "nightwatch daemon: webhooks, runbooks, the janitor's schedule, the timeline",
            format!("{} serve", binary.display()),
        ),
        (
            "nightwatch-gate.service",
            "nightwatch resident gate: answers the agents' hooks on the data directory's socket",
            format!("{} gate", binary.display()),
        ),
    ] {
        let unit = unit_text(description, &command, user);
        let path = args.unit_dir.join(name);
        let temporary = args.unit_dir.join(format!(".{name}.tmp"));
        std::fs::write(&temporary, unit)
            .with_context(|| format!("cannot write {}", temporary.display()))?;
        std::fs::rename(&temporary, &path)
            .with_context(|| format!("cannot replace {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    println!(
        "the units run as {user}: create it first with \
         `useradd --system --home-dir /var/lib/nightwatch --shell /usr/sbin/nologin {user}`"
    );
    println!(
        "then: systemctl daemon-reload && systemctl enable --now nightwatch-serve nightwatch-gate"
    );
    Ok(0)
}

/// One hardened unit. The data directory is systemd's StateDirectory (/var/lib/nightwatch),
/// the only place it may write; no capability, no new privileges, no view of /home.
fn unit_text(description: &str, command: &str, user: &str) -> String {
    format!(
        "# Written by `nightwatch install systemd`. Runbooks run inside this sandbox: add
# ReadWritePaths= for what they may change, and SupplementaryGroups=docker for the janitor's
# Docker socket, in a drop-in (systemctl edit), so installing again keeps them.
[Unit]
Description={description}
After=network-online.target
Wants=network-online.target
# Restarted however often it fails: a fleet's daemon that starts before its database is up
# exits, and must still be running once the database is.
StartLimitIntervalSec=0

[Service]
Type=simple
ExecStart={command}
User={user}
Group={user}
Environment=NIGHTWATCH_HOME=/var/lib/nightwatch
StateDirectory=nightwatch
StateDirectoryMode=0750
UMask=0077
Restart=on-failure
RestartSec=5s

NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
RestrictSUIDSGID=yes
RestrictRealtime=yes
RestrictNamespaces=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
RemoveIPC=yes
CapabilityBoundingSet=
AmbientCapabilities=
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources

[Install]
WantedBy=multi-user.target
"
    )
}

/// One line of the doctor's report.
struct Finding {
    ok: bool,
    what: String,
    fix: Option<String>,
}

impl Finding {
    fn ok(what: impl Into<String>) -> Finding {
        Finding {
            ok: true,
            what: what.into(),
            fix: None,
        }
    }

    fn fix(what: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding {
            ok: false,
            what: what.into(),
            fix: Some(fix.into()),
        }
    }
}

pub fn doctor(args: DoctorArgs) -> anyhow::Result<u8> {
    let env = Environment::of_process();
    let mut findings = Vec::new();
    let this = std::env::current_exe().context("cannot find this binary's path")?;
    findings.push(Finding::ok(format!("this nightwatch: {}", this.display())));
    match on_path("nightwatch") {
        Some(path) => findings.push(Finding::ok(format!(
            "nightwatch on PATH: {}",
            path.display()
        ))),
        None => findings.push(Finding {
            ok: true,
            what: "no nightwatch on PATH (hooks name their program by its full path)".to_owned(),
            fix: None,
        }),
    }

    let data = crate::home::data_dir_in(&env);
    findings.push(match crate::stores::ledger(&data) {
        Ok(ledger) => match ledger.head_checkpoint() {
            Ok(_) => Finding::ok(format!("data directory and ledger: {}", data.display())),
            Err(e) => Finding::fix(
                format!("the ledger in {} does not read: {e}", data.display()),
                "run `nightwatch verify` to see what is wrong with it",
            ),
        },
        Err(e) => Finding::fix(
            format!("the ledger in {} does not open: {e}", data.display()),
            format!(
                "make {} writable by this user, or set NIGHTWATCH_HOME to a directory that is",
                data.display()
            ),
        ),
    });

    let policy_file = nightwatch_host::policies::policy_file(None, &env);
    findings.push(
        match nightwatch_host::policies::load(policy_file.as_deref()) {
            Ok((policy, origin)) => Finding::ok(format!(
                "policy: {origin} ({} rules, its examples pass)",
                policy.rule_count()
            )),
            Err(e) => Finding::fix(
                format!("the policy does not load: {e:#}"),
                "fix the file at the line given (`nightwatch policy test` lists every example)",
            ),
        },
    );

    let socket = nightwatch_host::resident::socket_path(&data);
    findings.push(match std::os::unix::net::UnixStream::connect(&socket) {
        Ok(_) => Finding::ok(format!("resident gate answering on {}", socket.display())),
        Err(_) => Finding::ok(format!(
            "no resident gate on {} (hooks decide in their own process; `nightwatch gate` \
             makes them faster)",
            socket.display()
        )),
    });

    let agents: Vec<Agent> = if args.agents.is_empty() {
        vec![Agent::Claude, Agent::Codex, Agent::Gemini]
    } else {
        args.agents.iter().copied().map(AgentName::into).collect()
    };
    let project = project_dir(args.project.as_deref(), &env)?;
    for agent in agents {
        check_agent(agent, &project, &env, args.live, &mut findings);
    }

    let broken = findings.iter().filter(|f| !f.ok).count();
    for finding in &findings {
        let mark = if finding.ok { "ok  " } else { "FIX " };
        println!("{mark} {}", finding.what);
        if let Some(fix) = &finding.fix {
            println!("     -> {fix}");
        }
    }
    if broken == 0 {
        println!("nothing to fix");
        Ok(0)
    } else {
        println!("{broken} to fix");
        Ok(1)
    }
}

/// Each settings file of `agent` that exists: it parses, names nightwatch, its program runs,
/// and the hook answers a harmless line with allow and a secret's read with a refusal. Then
/// the agent itself, when it is on PATH, is asked: which hooks it will run (Codex), and with
/// `live`, a run against the canary model.
fn check_agent(
    agent: Agent,
    project: &Path,
    env: &Environment,
    live: bool,
    findings: &mut Vec<Finding>,
) {
    let mut places: Vec<PathBuf> = Vec::new();
    for scope in [Scope::Local, Scope::Project, Scope::User] {
        let location = settings_path(agent, scope);
        let base = match location.base {
            Base::Project => Some(project.to_path_buf()),
            Base::User { var, default } => user_dir(var, default, env),
        };
        if let Some(path) = base.map(|b| b.join(location.path))
            && !places.contains(&path)
        {
            places.push(path);
        }
    }
    let name = agent.as_str();
    let mut installed = false;
    for path in places.iter().filter(|p| p.exists()) {
        let settings = match read_settings(path) {
            Ok(settings) => settings,
            Err(e) => {
                findings.push(Finding::fix(
                    format!("{name}: {e:#}"),
                    "fix the JSON by hand; the agent cannot read it either",
                ));
                continue;
            }
        };
        let commands = nightwatch_agents::installed_commands(agent, &settings);
        if commands.is_empty() {
            continue;
        }
        installed = true;
        let before = nightwatch_agents::before_tool_event(agent);
        let Some((_, command)) = commands.iter().find(|(event, _)| *event == before) else {
            findings.push(Finding::fix(
                format!(
                    "{name}: {} runs nightwatch, but not on {before}",
                    path.display()
                ),
                format!("nightwatch install {name} (again)"),
            ));
            continue;
        };
        findings.push(hook_answers(agent, path, command));
    }
    if !installed {
        findings.push(Finding::ok(format!(
            "{name}: not installed here (nightwatch install {name})"
        )));
        return;
    }
    let Some(binary) = on_path(agent_program(agent)) else {
        findings.push(Finding::ok(format!(
            "{name}: its binary ({}) is not on PATH, so it was not asked which hooks it runs",
            agent_program(agent)
        )));
        return;
    };
    if agent == Agent::Codex {
        findings.push(codex_runs_the_hooks(&binary, project, env));
    }
    if live {
        findings.push(
            match super::agent_probe::live_canary(agent, &binary, project, env) {
                Ok(proof) => {
                    Finding::ok(format!("{name}: live run of {}: {proof}", binary.display()))
                }
                Err(e) => Finding::fix(
                    format!("{name}: live run of {}: {e:#}", binary.display()),
                    format!(
                        "nightwatch install {name}{} (and see the findings above)",
                        if agent == Agent::Codex {
                            " --trust"
                        } else {
                            ""
                        }
                    ),
                ),
            },
        );
    }
}

/// The program each agent is started as.
fn agent_program(agent: Agent) -> &'static str {
    match agent {
        Agent::Claude => "claude",
        Agent::Codex => "codex",
        Agent::Gemini => "gemini",
    }
}

/// Codex's own answer (app-server `hooks/list`) to which of nightwatch's hooks it runs in
/// `project`: each must be enabled and trusted (or managed).
fn codex_runs_the_hooks(codex: &Path, project: &Path, env: &Environment) -> Finding {
    let Some(codex_home) = user_dir("CODEX_HOME", ".codex", env) else {
        return Finding::fix("codex: no $CODEX_HOME or $HOME", "set HOME");
    };
    let hooks = match super::agent_probe::codex_hooks(codex, &codex_home, project) {
        Ok(hooks) => hooks,
        Err(e) => {
            return Finding::fix(
                format!(
                    "codex: could not ask {} which hooks it runs: {e:#}",
                    codex.display()
                ),
                "run `codex app-server` by hand to see why it does not answer",
            );
        }
    };
    let ours: Vec<_> = hooks.iter().filter(|h| h.is_nightwatch()).collect();
    let off: Vec<String> = ours
        .iter()
        .filter(|h| !h.will_run())
        .map(|h| {
            format!(
                "{} is {}{}",
                h.key,
                h.trust_status,
                if h.enabled { "" } else { ", disabled" }
            )
        })
        .collect();
    if ours.is_empty() {
        Finding::fix(
            format!(
                "codex: {} lists none of nightwatch's hooks for {} (a project's hooks load only in a project you trust)",
                codex.display(),
                project.display()
            ),
            "nightwatch install codex --user --trust, or trust the project in Codex",
        )
    } else if !off.is_empty() {
        Finding::fix(
            format!(
                "codex: {} will NOT run {} of nightwatch's {} hooks: {}",
                codex.display(),
                off.len(),
                ours.len(),
                off.join("; ")
            ),
            "nightwatch install codex --trust (same --user/--project as installed), or review them in Codex: /hooks",
        )
    } else {
        Finding::ok(format!(
            "codex: {} says it runs all {} of nightwatch's hooks (trusted)",
            codex.display(),
            ours.len()
        ))
    }
}

/// Runs the installed hook command on a harmless line and on a secret's read, as the agent
/// would, and checks the answers. Both calls are decided and recorded like any other.
fn hook_answers(agent: Agent, settings: &Path, command: &str) -> Finding {
    let name = agent.as_str();
    let (vars, words) = nightwatch_agents::command_words(command);
    let Some(program) = words.first() else {
        return Finding::fix(
            format!(
                "{name}: the hook in {} has an empty command",
                settings.display()
            ),
            format!("nightwatch install {name}"),
        );
    };
    let resolved = if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        on_path(program)
    };
    let Some(resolved) = resolved.filter(|p| is_executable(p)) else {
        return Finding::fix(
            format!(
                "{name}: the hook in {} runs {program}, which is not there or not executable: \
                 the agent's calls would go through unchecked",
                settings.display()
            ),
            format!("nightwatch install {name} (records a program that stays put)"),
        );
    };
    let answer = |line: &str| -> Result<(Option<i32>, String), String> {
        let event = nightwatch_agents::before_tool_event(agent);
        let tool = if agent == Agent::Gemini {
            "run_shell_command"
        } else {
            "Bash"
        };
        let payload = serde_json::json!({
            "session_id": "nightwatch-doctor",
            "cwd": "/",
            "hook_event_name": event,
            "tool_name": tool,
            "tool_input": { "command": line },
            "tool_use_id": format!("doctor-{}", line.len()),
        });
        let mut child = std::process::Command::new(&resolved);
        child
            .args(&words[1..])
            .envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = child.spawn().map_err(|e| format!("cannot start it: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write as _;
            let _ = stdin.write_all(payload.to_string().as_bytes());
        }
        let output = child.wait_with_output().map_err(|e| e.to_string())?;
        Ok((
            output.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        ))
    };
    let harmless = answer("ls");
    let secret = answer("cat /etc/shadow");
    match (harmless, secret) {
        (Ok((Some(0), allowed)), Ok((code, refused)))
            if !allowed.contains("\"deny\"") && (code == Some(2) || refused.contains("deny")) =>
        {
            Finding::ok(format!(
                "{name}: {} runs {}; it allows `ls` and refuses `cat /etc/shadow`",
                settings.display(),
                resolved.display()
            ))
        }
        (harmless, secret) => Finding::fix(
            format!(
                "{name}: the hook in {} did not answer as it should (ls: {harmless:?}; cat \
                 /etc/shadow: {secret:?})",
                settings.display()
            ),
            format!("run `{command}` by hand with a hook payload on stdin, or install again"),
        ),
    }
}
