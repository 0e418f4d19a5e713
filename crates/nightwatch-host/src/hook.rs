//! The hook pipeline: one agent's hook call (its JSON, the caller's captured environment) in,
//! the reply the agent honours out: a verdict, a record, or a refusal, never a crash. The hook
//! process and the resident gate both answer through [`answer`] with their own [`World`], so
//! both give the same answer and write the same records through the same engine.

use crate::clock::Clock;
use crate::context;
use crate::environment::Environment;
use anyhow::Context as _;
use nightwatch_agents::{
    Agent, HookEvent, Reply, parse_event, reply_to_decision_with_input, reply_to_failure,
    reply_to_record,
};
use nightwatch_gate::{Engine, Escalator, Event, Failure, Proposal, Report};
use nightwatch_ledger::Outputs;
use nightwatch_policy::Policy;
use nightwatch_store::Ledger;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The message of the last panic, for the refusal's reason (the default hook's text on stderr
/// would become the agent's reason, with a backtrace).
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// Keeps each panic's message for the refusal's reason, instead of the default hook's text on
/// stderr. Set once by a process that answers hooks.
pub fn remember_panics() {
    std::panic::set_hook(Box::new(|info| {
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = info.to_string();
        }
    }));
}

/// Largest hook input read; a larger one is refused.
pub const MAX_INPUT: u64 = 16 * 1024 * 1024;

/// Reads one hook call from `input`, at most [`MAX_INPUT`] bytes; the refusal to answer with
/// when it cannot be read whole.
pub fn read_call(agent: Agent, input: impl std::io::Read) -> Result<Vec<u8>, Reply> {
    use std::io::Read as _;
    let mut call = Vec::new();
    match input.take(MAX_INPUT + 1).read_to_end(&mut call) {
        Err(error) => Err(reply_to_failure(
            agent,
            &format!("cannot read the hook input: {error}"),
        )),
        Ok(_) if call.len() as u64 > MAX_INPUT => Err(reply_to_failure(
            agent,
            "the hook input is larger than 16 MiB",
        )),
        Ok(_) => Ok(call),
    }
}

/// What answering a hook call needs from outside: the ledger, the policy, the guards, and a way
/// to escalate. The hook process opens them for one call; the resident gate keeps them.
pub trait World: Sync {
    fn ledger(&self) -> anyhow::Result<&dyn Ledger>;
    fn policy(&self, env: &Environment) -> anyhow::Result<Arc<Policy>>;
    /// The guards for a call from `env`: paths are resolved with its home, directory and the
    /// agents' config directories, not the answering process's.
    fn guards(&self, env: &Environment) -> nightwatch_gate::LiveGuards;
    /// Sends a halt's or ask's escalation without holding up the answer.
    fn escalate(&self, record_id: &str, env: &Environment);
}

/// The world of a hook process that answers one call and exits: the ledger is opened on first
/// use, the policy loaded once.
pub struct OneCall {
    data_dir: std::path::PathBuf,
    ledger: std::sync::OnceLock<Result<Arc<dyn Ledger>, String>>,
    guards: nightwatch_gate::LiveGuards,
}

impl OneCall {
    /// The world of a call from `env`, in its data directory.
    pub fn new(env: &Environment) -> OneCall {
        let data_dir = crate::home::data_dir_in(env);
        OneCall {
            guards: nightwatch_gate::LiveGuards::new(&data_dir),
            ledger: std::sync::OnceLock::new(),
            data_dir,
        }
    }
}

impl World for OneCall {
    fn ledger(&self) -> anyhow::Result<&dyn Ledger> {
        let opened = self.ledger.get_or_init(|| {
            crate::stores::ledger(&self.data_dir)
                .with_context(|| format!("cannot open the ledger in {}", self.data_dir.display()))
                .map_err(|e| format!("{e:#}"))
        });
        match opened {
            Ok(ledger) => Ok(ledger),
            Err(error) => Err(anyhow::anyhow!("{error}")),
        }
    }

    fn policy(&self, env: &Environment) -> anyhow::Result<Arc<Policy>> {
        let (policy, _) =
            crate::policies::load(crate::policies::policy_file(None, env).as_deref())?;
        let policy = Arc::new(policy);
        // This process answers one call and exits: freeing the compiled policy's thousands of
        // small allocations would cost more than deciding with it. The exit frees it.
        std::mem::forget(Arc::clone(&policy));
        Ok(policy)
    }

    fn guards(&self, env: &Environment) -> nightwatch_gate::LiveGuards {
        self.guards.with_places(crate::paths::places(env))
    }

    fn escalate(&self, record_id: &str, env: &Environment) {
        crate::host::send_escalation_in_background(record_id, env);
    }
}

/// The world's escalation for calls from `env`.
struct Escalation<'a> {
    world: &'a dyn World,
    env: &'a Environment,
}

impl Escalator for Escalation<'_> {
    fn escalate(&self, record_id: &str) {
        self.world.escalate(record_id, self.env);
    }
}

/// The reply to one hook call: a verdict, a record, or a refusal, never a crash.
pub fn answer(agent: Agent, input: &[u8], env: &Environment, world: &dyn World) -> Reply {
    // The world holds a ledger connection and a policy cache behind locks that shrug off
    // poisoning, and a panic leaves neither half-updated: SQLite rolls back what a panic
    // interrupted, and a policy is cached only once it is whole.
    let world = std::panic::AssertUnwindSafe(world);
    match std::panic::catch_unwind(|| handle(agent, input, env, *world)) {
        Ok(Ok(reply)) => reply,
        Ok(Err(error)) => refuse(agent, input, env, *world, &format!("{error:#}")),
        Err(_) => {
            let message = LAST_PANIC.lock().map(|m| m.clone()).unwrap_or_default();
            refuse(
                agent,
                input,
                env,
                *world,
                &format!("internal error: {message}"),
            )
        }
    }
}

/// A refusal because nightwatch itself failed. It is recorded too when the ledger can still be
/// written, so that even this veto is not silent; when it cannot, stderr is all there is.
fn refuse(agent: Agent, input: &[u8], env: &Environment, world: &dyn World, reason: &str) -> Reply {
    let reply = reply_to_failure(agent, reason);
    let world = std::panic::AssertUnwindSafe(world);
    let _ = std::panic::catch_unwind(|| record_refusal(agent, input, env, *world, &reply.stderr));
    reply
}

fn record_refusal(
    agent: Agent,
    input: &[u8],
    env: &Environment,
    world: &dyn World,
    reason: &str,
) -> anyhow::Result<()> {
    let clock = Clock::from_env(env)?;
    let ledger = world.ledger()?;
    let guards = world.guards(env);
    let escalation = Escalation { world, env };
    let host = context::from_env(env).host;
    let engine = Engine::new(ledger, &guards, &clock, &escalation, host);
    let event = parse_event(agent, input).ok();
    let mut context = context::from_env(env);
    if context.session.is_none() {
        context.session = event
            .as_ref()
            .and_then(|e| e.session_id())
            .map(str::to_owned);
    }
    let (tool, inputs) = match &event {
        Some(
            HookEvent::BeforeTool { tool, inputs, .. } | HookEvent::AfterTool { tool, inputs, .. },
        ) => (tool.name().into_owned(), inputs.clone()),
        _ => (
            "unknown".to_owned(),
            serde_json::Value::String(String::from_utf8_lossy(input).chars().take(4096).collect()),
        ),
    };
    engine.record(Event::Refusal(Failure {
        actor: hook_actor(agent, env),
        tool,
        context,
        call_id: event.as_ref().and_then(|e| e.call_id()).map(str::to_owned),
        inputs,
        reason: reason.trim().to_owned(),
    }))?;
    Ok(())
}

/// The agent's actor, named as its launcher named it (`NIGHTWATCH_AGENT`) when it did.
fn hook_actor(agent: Agent, env: &Environment) -> nightwatch_core::Actor {
    let mut actor = agent.actor();
    if let Some(name) = context::agent_name_in(env) {
        actor.id = name;
    }
    actor
}

/// The input to run instead of the agent's, when it starts a container and the agent lets a
/// hook rewrite its input (Claude Code, Codex): the same call, its container labelled with who
/// started it (see `nightwatch_agents::ownership`).
fn ownership_labels(
    agent: Agent,
    tool_name: &str,
    inputs: &serde_json::Value,
    agent_id: &str,
    environment: &nightwatch_core::Context,
    cwd: Option<&str>,
    env: &Environment,
) -> Option<serde_json::Value> {
    use nightwatch_agents::ownership::{Owner, label_docker_run};
    // Claude Code and Codex run a rewritten input (`updatedInput`); Codex on allow only.
    if !matches!(agent, Agent::Claude | Agent::Codex) || tool_name != "Bash" {
        return None;
    }
    let command = inputs.get("command")?.as_str()?;
    let owner = Owner {
        agent: agent_id,
        session: environment.session.as_deref(),
        project: cwd,
    };
    let labelled = match label_docker_run(command, &owner) {
        Some(labelled) => labelled,
        None => label_compose_up(command, &owner, env, cwd)?,
    };
    let mut updated = inputs.clone();
    updated["command"] = serde_json::Value::from(labelled);
    Some(updated)
}

/// Compose's CLI takes no labels, so `docker compose up` gets one more compose file, last,
/// that labels every service its files declare (written under the data directory, named by
/// its content). The files the line names, or Compose's default ones, are read for the
/// service names; anything unclear (`COMPOSE_FILE` set, a file that does not read, no
/// services) leaves the line as written, and the janitor's ledger join still finds the stack.
fn label_compose_up(
    command: &str,
    owner: &nightwatch_agents::ownership::Owner<'_>,
    env: &Environment,
    cwd: Option<&str>,
) -> Option<String> {
    use nightwatch_agents::ownership::{compose_labels_file, compose_up, with_compose_files};
    use std::path::{Path, PathBuf};
    let up = compose_up(command)?;
    if env.var("COMPOSE_FILE").is_some_and(|f| !f.is_empty()) {
        return None;
    }
    let cwd = Path::new(cwd?);
    let base = up
        .project_directory
        .map_or(cwd.to_path_buf(), |d| cwd.join(d));
    let named: Vec<PathBuf> = up.files.iter().map(|f| cwd.join(f)).collect();
    let defaults: Vec<PathBuf> = if named.is_empty() {
        let first = |names: &[&str]| names.iter().map(|n| base.join(n)).find(|p| p.is_file());
        let main = first(&[
            "compose.yaml",
            "compose.yml",
            "docker-compose.yaml",
            "docker-compose.yml",
        ])?;
        let overrides = first(&[
            "compose.override.yaml",
            "compose.override.yml",
            "docker-compose.override.yaml",
            "docker-compose.override.yml",
        ]);
        std::iter::once(main).chain(overrides).collect()
    } else {
        Vec::new()
    };
    let mut services: Vec<String> = Vec::new();
    for file in named.iter().chain(&defaults) {
        let text = std::fs::read_to_string(file).ok()?;
        let doc: serde_json::Value = yaml_serde::from_str(&text).ok()?;
        for name in doc.get("services")?.as_object()?.keys() {
            if !services.contains(name) {
                services.push(name.clone());
            }
        }
    }
    if services.is_empty() {
        return None;
    }
    let labels = compose_labels_file(&services, owner);
    let dir = crate::home::data_dir_in(env).join("compose-labels");
    let path = dir.join(format!("{:016x}.yaml", content_hash(&labels)));
    if !path.is_file() {
        std::fs::create_dir_all(&dir).ok()?;
        let tmp = dir.join(format!(".{}.tmp", std::process::id()));
        std::fs::write(&tmp, &labels).ok()?;
        std::fs::rename(&tmp, &path).ok()?;
    }
    let mut added: Vec<String> = defaults
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    added.push(path.to_string_lossy().into_owned());
    Some(with_compose_files(command, &up, &added))
}

/// A name for a file by its content (FNV-1a: stable across builds, unlike std's hasher).
fn content_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn handle(
    agent: Agent,
    input: &[u8],
    env: &Environment,
    world: &dyn World,
) -> anyhow::Result<Reply> {
    let event = parse_event(agent, input)?;
    let clock = Clock::from_env(env)?;
    let ledger = world.ledger()?;
    let guards = world.guards(env);
    let escalation = Escalation { world, env };
    let mut environment = context::from_env(env);
    let engine = Engine::new(
        ledger,
        &guards,
        &clock,
        &escalation,
        environment.host.clone(),
    );
    // The launcher's session (an alert's task, a runbook) ties calls together across agents;
    // otherwise the agent's own session id does.
    if environment.session.is_none() {
        environment.session = event.session_id().map(str::to_owned);
    }
    let actor = hook_actor(agent, env);
    let cwd = event.cwd().map(str::to_owned);
    let call_id = event.call_id().map(str::to_owned);
    match event {
        HookEvent::BeforeTool {
            tool,
            inputs,
            tool_name,
            ..
        } => {
            let labelled = ownership_labels(
                agent,
                &tool_name,
                &inputs,
                &actor.id,
                &environment,
                cwd.as_deref(),
                env,
            );
            // What runs is the labelled line: that is what is decided and recorded.
            let (tool, inputs) = match (&labelled, tool) {
                (Some(updated), nightwatch_core::Tool::Exec { line }) => {
                    let line = updated
                        .get("command")
                        .and_then(serde_json::Value::as_str)
                        .map_or(line, str::to_owned);
                    (nightwatch_core::Tool::Exec { line }, updated.clone())
                }
                (_, tool) => (tool, inputs),
            };
            let policy = world.policy(env)?;
            let action = nightwatch_core::Action {
                actor,
                tool,
                context: environment,
            };
            let ruling = engine
                .propose(
                    &policy,
                    Proposal {
                        action,
                        call_id,
                        inputs,
                        cwd,
                    },
                )
                .context("cannot record the decision in the ledger")?;
            let decision = &ruling.decision;
            Ok(reply_to_decision_with_input(
                agent,
                decision.verdict,
                &decision.reason,
                decision.instead.as_deref(),
                labelled.as_ref(),
            ))
        }
        HookEvent::AfterTool {
            tool,
            inputs,
            mut outcome,
            transcript_path,
            ..
        } => {
            if agent == Agent::Codex
                && outcome.exit_code.is_none()
                && let (Some(transcript), Some(call)) = (transcript_path, call_id.as_deref())
            {
                outcome.exit_code = codex_exit_code_in(Path::new(&transcript), call);
                if outcome.exit_code.is_some_and(|code| code != 0) {
                    outcome.failed = true;
                }
            }
            engine
                .record(Event::Result(Report {
                    actor,
                    tool: tool.name().into_owned(),
                    session_id: environment.session.clone(),
                    call_id,
                    inputs,
                    outputs: Outputs {
                        exit_code: outcome.exit_code.map(i64::from),
                        stdout: outcome.stdout,
                        stderr: outcome.stderr,
                    },
                    duration_ms: outcome.duration_ms,
                    context: environment,
                    cwd,
                }))
                .context("cannot record the result in the ledger")?;
            Ok(reply_to_record(agent))
        }
        HookEvent::Declined {
            tool,
            inputs,
            reason,
            ..
        } => {
            engine
                .record(Event::Declined(Failure {
                    actor,
                    tool: tool.name().into_owned(),
                    context: environment,
                    call_id,
                    inputs,
                    reason,
                }))
                .context("cannot record the declined call in the ledger")?;
            Ok(reply_to_record(agent))
        }
        HookEvent::Lifecycle {
            name, mut details, ..
        } => {
            if name == "SessionEnd"
                && let Some(session) = environment.session.as_deref()
                && let Some(reaping) = reap_at_session_end(world, env, session)
                && let serde_json::Value::Object(fields) = &mut details
            {
                fields.insert("reaping".to_owned(), reaping.into());
            }
            engine
                .record(Event::Lifecycle {
                    step: lifecycle_step(&name),
                    actor,
                    context: environment,
                    details,
                })
                .context("cannot record the event in the ledger")?;
            Ok(reply_to_record(agent))
        }
    }
}

/// The exit code Codex wrote for `call` in its transcript: read from the file's last 4 MiB,
/// where the call just completed. `None` when the file does not say (the result is then
/// recorded without one, never with a guessed one).
fn codex_exit_code_in(transcript: &Path, call: &str) -> Option<i32> {
    use std::io::{Read, Seek, SeekFrom};
    const TAIL: u64 = 4 << 20;
    let mut file = std::fs::File::open(transcript).ok()?;
    let length = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(length.saturating_sub(TAIL)))
        .ok()?;
    let mut bytes = Vec::new();
    file.take(TAIL).read_to_end(&mut bytes).ok()?;
    nightwatch_agents::codex_exit_code(&String::from_utf8_lossy(&bytes), call)
}

/// When the policy says so (`sweep.containers.reap_at_session_end`), starts reaping what the
/// ended session left behind, in the background (the sweep records each item itself); what
/// became of the start, for the session-end record. `None` when the policy does not ask.
fn reap_at_session_end(world: &dyn World, env: &Environment, session: &str) -> Option<String> {
    let policy = match world.policy(env) {
        Ok(policy) => policy,
        Err(error) => return Some(format!("not started: the policy did not load: {error:#}")),
    };
    if !policy.sweep().containers.reap_at_session_end {
        return None;
    }
    let args = [
        "sweep",
        "apply",
        "--session",
        session,
        "--yes",
        "--wait",
        "300",
    ];
    Some(match crate::host::start_in_background(&args, env) {
        Ok(pid) => format!("started: nightwatch {} (pid {pid})", args.join(" ")),
        Err(error) => format!("not started: nightwatch {}: {error}", args.join(" ")),
    })
}

/// `SessionStart` is recorded as `session-start`, and so on.
fn lifecycle_step(name: &str) -> String {
    match name {
        "SessionStart" => nightwatch_ledger::event::SESSION_START.to_owned(),
        "Stop" => nightwatch_ledger::event::STOP.to_owned(),
        "SessionEnd" => nightwatch_ledger::event::SESSION_END.to_owned(),
        other => {
            let mut step = String::new();
            for (i, c) in other.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    step.push('-');
                }
                step.push(c.to_ascii_lowercase());
            }
            step
        }
    }
}
