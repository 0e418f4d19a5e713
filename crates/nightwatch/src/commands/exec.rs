//! `nightwatch exec -- CMD ARGS...`: the gate for scripts and agents without hooks.

use crate::cli::ExecArgs;
use crate::commands::load_policy;
use crate::context;
use crate::host::Host;
use anyhow::Context as _;
use nightwatch_core::{Action, Actor, ActorKind, Tool, Verdict};
use nightwatch_gate::{Event, Failure, Proposal, Report};
use nightwatch_ledger::Outputs;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Output kept in memory per stream for the ledger (which caps it again when storing).
const CAPTURE_LIMIT: usize = 1024 * 1024;

pub fn run(args: ExecArgs) -> anyhow::Result<u8> {
    let host = Host::open()?;
    let engine = host.engine();

    let line = shell_join(&args.command);
    let mut environment = context::from_env(&host.env);
    if args.session.is_some() {
        environment.session = args.session.clone();
    }
    let actor = Actor::new(
        ActorKind::Script,
        context::agent_name_in(&host.env).unwrap_or_else(|| "exec".to_owned()),
    );
    let call_id = format!("exec-{}-{}", std::process::id(), engine.now_ms());
    let cwd = host.env.cwd().map(str::to_owned);
    let inputs = serde_json::json!({ "command": line, "argv": args.command });
    let policy = match load_policy(&args.source) {
        Ok((policy, _)) => policy,
        Err(error) => {
            // Nothing runs, and the refusal is recorded like any other.
            let _ = engine.record(Event::Refusal(Failure {
                actor,
                tool: "exec".to_owned(),
                context: environment,
                call_id: Some(call_id),
                inputs,
                reason: format!("{error:#}"),
            }));
            return Err(error.context("nothing was run"));
        }
    };
    let ruling = engine
        .propose(
            &policy,
            Proposal {
                action: Action {
                    actor: actor.clone(),
                    tool: Tool::Exec { line: line.clone() },
                    context: environment.clone(),
                },
                call_id: Some(call_id.clone()),
                inputs: inputs.clone(),
                cwd: cwd.clone(),
            },
        )
        .context("cannot record the decision; nothing was run")?;
    let decision = &ruling.decision;
    if decision.verdict != Verdict::Allow {
        eprintln!(
            "nightwatch: {} ({}): {}",
            decision.verdict, ruling.record.id, decision.reason
        );
        if let Some(instead) = &decision.instead {
            eprintln!("nightwatch: instead: {instead}");
        }
        return Ok(crate::cli::EXEC_NOT_RUN);
    }

    let started = Instant::now();
    let mut child = Command::new(&args.command[0])
        .args(&args.command[1..])
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let (exit_code, stdout, stderr) = match &mut child {
        Ok(child) => {
            let stdout = child.stdout.take().map(|out| tee(out, std::io::stdout()));
            let stderr = child.stderr.take().map(|err| tee(err, std::io::stderr()));
            let status = child.wait().context("waiting for the command")?;
            let collect = |handle: Option<std::thread::JoinHandle<String>>| {
                handle.and_then(|h| h.join().ok()).unwrap_or_default()
            };
            let code = status.code().or_else(|| {
                std::os::unix::process::ExitStatusExt::signal(&status).map(|s| 128 + s)
            });
            (code, collect(stdout), collect(stderr))
        }
        Err(error) => {
            let message = format!("nightwatch: cannot run {}: {error}", args.command[0]);
            eprintln!("{message}");
            (Some(127), String::new(), message)
        }
    };
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let recorded = engine.record(Event::Result(Report {
        actor,
        tool: "exec".to_owned(),
        session_id: environment.session.clone(),
        call_id: Some(call_id),
        inputs,
        outputs: Outputs {
            exit_code: exit_code.map(i64::from),
            stdout,
            stderr,
        },
        duration_ms: Some(duration_ms),
        context: environment,
        cwd,
    }));
    // It ran: its own status is the truth, whatever became of the record.
    if let Err(error) = recorded {
        eprintln!("nightwatch: the command ran, but its result could not be recorded: {error:#}");
    }
    Ok(exit_code.map_or(1, |c| u8::try_from(c.clamp(0, 255)).unwrap_or(1)))
}

/// Copies a child's stream to ours as it comes, keeping the first [`CAPTURE_LIMIT`] bytes.
fn tee(
    mut from: impl Read + Send + 'static,
    mut to: impl Write + Send + 'static,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buffer = [0u8; 8192];
        while let Ok(n) = from.read(&mut buffer) {
            if n == 0 {
                break;
            }
            let _ = to.write_all(&buffer[..n]);
            let _ = to.flush();
            let room = CAPTURE_LIMIT.saturating_sub(kept.len());
            kept.extend_from_slice(&buffer[..n.min(room)]);
        }
        String::from_utf8_lossy(&kept).into_owned()
    })
}

/// The words as one shell line that would run them unchanged.
pub fn shell_join(words: &[String]) -> String {
    words
        .iter()
        .map(|word| {
            let plain = !word.is_empty()
                && word
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b));
            if plain {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::shell_join;

    #[test]
    fn words_are_quoted_only_when_needed() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(shell_join(&words(&["ls", "-la", "/tmp"])), "ls -la /tmp");
        assert_eq!(
            shell_join(&words(&["echo", "a b", "it's"])),
            "echo 'a b' 'it'\\''s'"
        );
        assert_eq!(shell_join(&words(&["rm", "$(x)"])), "rm '$(x)'");
        assert_eq!(shell_join(&words(&[""])), "''");
    }
}
