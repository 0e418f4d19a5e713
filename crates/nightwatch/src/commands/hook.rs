//! `nightwatch hook AGENT`: the agent's hook. Whatever happens here, the agent gets an answer it
//! honours: a verdict, or a refusal (exit 2 with the reason on stderr). Never exit 1, which every
//! agent reads as "go ahead".

use crate::cli::HookArgs;
use crate::clock::Clock;
use crate::commands::{load_policy, open_ledger, policy_from_environment};
use crate::context;
use anyhow::Context as _;
use nightwatch_agents::{
    Agent, HookEvent, Reply, parse_event, reply_to_decision, reply_to_failure, reply_to_record,
};
use nightwatch_gate::{Failure, Gate, Proposal, Report};
use nightwatch_ledger::Outputs;
use std::io::{Read, Write};
use std::sync::Mutex;

/// Largest hook input read; a larger one is refused.
const MAX_INPUT: u64 = 16 * 1024 * 1024;

/// The message of the last panic, for the refusal's reason (the default hook's text on stderr
/// would become the agent's reason, with a backtrace).
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

pub fn run(args: HookArgs) -> u8 {
    let agent = args.agent.into();
    std::panic::set_hook(Box::new(|info| {
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = info.to_string();
        }
    }));
    let mut input = Vec::new();
    let reply = match std::io::stdin().take(MAX_INPUT + 1).read_to_end(&mut input) {
        Err(error) => reply_to_failure(agent, &format!("cannot read the hook input: {error}")),
        Ok(_) if input.len() as u64 > MAX_INPUT => {
            reply_to_failure(agent, "the hook input is larger than 16 MiB")
        }
        Ok(_) => match std::panic::catch_unwind(|| handle(agent, &input)) {
            Ok(Ok(reply)) => reply,
            Ok(Err(error)) => refuse(agent, &input, &format!("{error:#}")),
            Err(_) => {
                let message = LAST_PANIC.lock().map(|m| m.clone()).unwrap_or_default();
                refuse(agent, &input, &format!("internal error: {message}"))
            }
        },
    };
    write_reply(&reply)
}

/// A refusal because nightwatch itself failed. It is recorded too when the ledger can still be
/// written, so that even this veto is not silent; when it cannot, stderr is all there is.
fn refuse(agent: Agent, input: &[u8], reason: &str) -> Reply {
    let reply = reply_to_failure(agent, reason);
    let _ = std::panic::catch_unwind(|| record_refusal(agent, input, &reply.stderr));
    reply
}

fn record_refusal(agent: Agent, input: &[u8], reason: &str) -> anyhow::Result<()> {
    let clock = Clock::from_environment()?;
    let ledger = open_ledger()?;
    let event = parse_event(agent, input).ok();
    let mut context = context::from_environment();
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
    nightwatch_gate::refuse(
        &ledger,
        Failure {
            actor: hook_actor(agent),
            tool,
            context,
            call_id: event.as_ref().and_then(|e| e.call_id()).map(str::to_owned),
            inputs,
            reason: reason.trim().to_owned(),
            timestamp_ms: clock.now_ms(),
        },
    )?;
    Ok(())
}

/// The agent's actor, named as its launcher named it (`NIGHTWATCH_AGENT`) when it did.
fn hook_actor(agent: Agent) -> nightwatch_core::Actor {
    let mut actor = agent.actor();
    if let Some(name) = context::agent_name() {
        actor.id = name;
    }
    actor
}

fn write_reply(reply: &Reply) -> u8 {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(reply.stdout.as_bytes());
    let _ = stdout.flush();
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(reply.stderr.as_bytes());
    let _ = stderr.flush();
    reply.exit_code
}

fn handle(agent: Agent, input: &[u8]) -> anyhow::Result<Reply> {
    let event = parse_event(agent, input)?;
    let clock = Clock::from_environment()?;
    let ledger = open_ledger()?;
    let mut environment = context::from_environment();
    environment.minute_of_day = Some(clock.minute_of_day());
    // The launcher's session (an alert's task, a runbook) ties calls together across agents;
    // otherwise the agent's own session id does.
    if environment.session.is_none() {
        environment.session = event.session_id().map(str::to_owned);
    }
    let actor = hook_actor(agent);
    let cwd = event.cwd().map(str::to_owned);
    let call_id = event.call_id().map(str::to_owned);
    match event {
        HookEvent::BeforeTool { tool, inputs, .. } => {
            let (policy, _) = load_policy(&policy_from_environment())?;
            let guards = super::live_guards();
            let gate = Gate::new(&policy, &ledger, &guards);
            let mut actor = actor;
            super::place_in_tier(&mut actor, &ledger, &policy)?;
            let action = nightwatch_core::Action {
                actor,
                tool,
                context: environment,
            };
            let ruling = gate
                .propose(Proposal {
                    action,
                    call_id,
                    inputs,
                    cwd,
                    timestamp_ms: clock.now_ms(),
                })
                .context("cannot record the decision in the ledger")?;
            let decision = &ruling.decision;
            if !ruling.notify.is_empty() {
                super::send_escalation_in_background(&ruling.record.id);
            }
            Ok(reply_to_decision(
                agent,
                decision.verdict,
                &decision.reason,
                decision.instead.as_deref(),
            ))
        }
        HookEvent::AfterTool {
            tool,
            inputs,
            outcome,
            ..
        } => {
            nightwatch_gate::report(
                &ledger,
                &super::live_guards(),
                Report {
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
                    timestamp_ms: clock.now_ms(),
                },
            )
            .context("cannot record the result in the ledger")?;
            Ok(reply_to_record(agent))
        }
        HookEvent::Lifecycle { name, details, .. } => {
            nightwatch_gate::note(
                &ledger,
                &lifecycle_step(&name),
                &actor,
                &environment,
                details,
                clock.now_ms(),
            )
            .context("cannot record the event in the ledger")?;
            Ok(reply_to_record(agent))
        }
    }
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
