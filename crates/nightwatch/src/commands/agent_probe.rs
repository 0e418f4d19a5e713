//! Asking the agents themselves whether they run nightwatch, for `install` and `doctor`: a
//! hook file that says so proves nothing if the agent skips it.
//!
//! - [`codex_hooks`]: Codex's app-server `hooks/list`, the list of hooks Codex will run with
//!   their trust, the same answer its `/hooks` review shows.
//! - [`live_canary`]: the agent run once against a scripted canary model on 127.0.0.1 that
//!   asks it to read a canary key under `~/.ssh`; proven only when nightwatch refused that
//!   call and recorded the refusal.

use crate::environment::Environment;
use anyhow::{Context as _, bail};
use nightwatch_agents::Agent;
use nightwatch_scripted_model::{ScriptedModel, Step};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long an agent may take to answer before it counts as not answering.
const AGENT_LIMIT: Duration = Duration::from_secs(60);

/// One hook as Codex lists it.
#[derive(Clone, Debug)]
pub struct CodexHook {
    pub key: String,
    pub command: String,
    pub enabled: bool,
    /// `trusted`, `managed`, `untrusted` or `modified`.
    pub trust_status: String,
}

impl CodexHook {
    pub fn is_nightwatch(&self) -> bool {
        nightwatch_agents::runs_nightwatch(&self.command)
    }

    /// What Codex 0.163 requires to run a hook: enabled, and trusted or managed.
    pub fn will_run(&self) -> bool {
        self.enabled && matches!(self.trust_status.as_str(), "trusted" | "managed")
    }
}

/// The hooks `codex` (with `CODEX_HOME=codex_home`) will consider in `project`, from its
/// app-server's `hooks/list`.
pub fn codex_hooks(
    codex: &Path,
    codex_home: &Path,
    project: &Path,
) -> anyhow::Result<Vec<CodexHook>> {
    let mut child = Command::new(codex)
        .arg("app-server")
        .env("CODEX_HOME", codex_home)
        .current_dir(project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {} app-server", codex.display()))?;
    let answer = (|| {
        let mut stdin = child.stdin.take().context("no stdin")?;
        let project = project.to_string_lossy();
        for message in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"clientInfo": {"name": "nightwatch", "version": env!("CARGO_PKG_VERSION")}}}),
            json!({"jsonrpc": "2.0", "method": "initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [project]}}),
        ] {
            writeln!(stdin, "{message}")?;
        }
        stdin.flush()?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + AGENT_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = receive
                .recv_timeout(left)
                .map_err(|_| anyhow::anyhow!("no answer to hooks/list within {AGENT_LIMIT:?}"))?;
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["id"] != 2 {
                continue;
            }
            if let Some(error) = message.get("error") {
                bail!("hooks/list failed: {error}");
            }
            return Ok(parse_hooks_list(&message["result"]));
        }
    })();
    let _ = child.kill();
    let _ = child.wait();
    answer
}

fn parse_hooks_list(result: &Value) -> Vec<CodexHook> {
    result["data"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|cwd| cwd["hooks"].as_array().into_iter().flatten())
        .map(|hook| CodexHook {
            key: hook["key"].as_str().unwrap_or_default().to_owned(),
            command: hook["command"].as_str().unwrap_or_default().to_owned(),
            enabled: hook["enabled"].as_bool().unwrap_or(false),
            trust_status: hook["trustStatus"].as_str().unwrap_or("unknown").to_owned(),
        })
        .collect()
}

/// Runs `agent` once in `project` against a canary model that asks it to read a canary key
/// that does not exist under `~/.ssh`. Proven when the model was told nightwatch's policy
/// refused the call and nightwatch's ledger holds that refusal; what was proven, or why not.
pub fn live_canary(
    agent: Agent,
    binary: &Path,
    project: &Path,
    env: &Environment,
) -> anyhow::Result<String> {
    let clock = crate::clock::Clock::from_env(env)?;
    let nonce = format!(
        "nightwatch-canary-{}-{}",
        std::process::id(),
        clock.written_ms()
    );
    let line = format!("cat ~/.ssh/{nonce}");
    let call = match agent {
        Agent::Claude => Step::call("Bash", json!({"command": line, "description": "canary"})),
        Agent::Codex => Step::call("exec_command", json!({"cmd": line})),
        Agent::Gemini => bail!("Gemini CLI is not driven live by this version (no pinned binary)"),
    };
    let model = ScriptedModel::start(vec![call, Step::Say("done".into())])
        .context("cannot start the canary model on 127.0.0.1")?;
    let started = clock.written_ms();
    let mut command = Command::new(binary);
    command
        .current_dir(project)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Nothing but the canary model on loopback is reachable for this run.
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost");
    match agent {
        Agent::Claude => {
            command
                .args([
                    "-p",
                    "nightwatch doctor canary",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                ])
                .env("ANTHROPIC_BASE_URL", model.url())
                .env("ANTHROPIC_API_KEY", "nightwatch-canary")
                .env_remove("ANTHROPIC_AUTH_TOKEN")
                .env("DISABLE_TELEMETRY", "1")
                .env("DISABLE_AUTOUPDATER", "1")
                .env("DISABLE_ERROR_REPORTING", "1")
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        }
        _ => {
            command.args([
                "exec",
                "--json",
                "--skip-git-repo-check",
                "-s",
                "read-only",
                "-c",
                "model_provider=\"nightwatch-canary\"",
                "-c",
                &format!(
                    "model_providers.nightwatch-canary={{name=\"nightwatch-canary\", base_url=\"{}/v1\"}}",
                    model.url()
                ),
                "nightwatch doctor canary",
            ]);
        }
    }
    let output = run_with_limit(command, AGENT_LIMIT)?;
    let told = model.requests().iter().any(|request| {
        request.body.contains(&nonce) && request.body.contains("by nightwatch policy")
    });
    let recorded = refusal_recorded(&nonce, started, env)?;
    match (told, recorded) {
        (true, Some(where_)) => Ok(format!(
            "the canary `{line}` was refused by nightwatch and recorded ({where_})"
        )),
        (told, recorded) => bail!(
            "the canary `{line}` was {} and {}; the agent said: {}",
            if told {
                "refused by nightwatch"
            } else {
                "NOT refused by nightwatch (the agent did not run its hook, or ignored it)"
            },
            if recorded.is_some() {
                "recorded"
            } else {
                "NOT recorded in the ledger"
            },
            tail(&output)
        ),
    }
}

/// Runs `command`, killed after `limit`.
fn run_with_limit(mut command: Command, limit: Duration) -> anyhow::Result<std::process::Output> {
    let mut child = command.spawn().context("cannot start the agent")?;
    let deadline = Instant::now() + limit;
    while child.try_wait()?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output()?;
            bail!(
                "the agent did not finish within {limit:?}: {}",
                tail(&output)
            );
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    Ok(child.wait_with_output()?)
}

fn tail(output: &std::process::Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let start = text.char_indices().rev().nth(600).map_or(0, |(i, _)| i);
    text[start..].trim().to_owned()
}

/// The refusal of the canary call in a ledger: this user's data directory, where hooks
/// installed from this shell record.
fn refusal_recorded(
    nonce: &str,
    since_ms: i64,
    env: &Environment,
) -> anyhow::Result<Option<String>> {
    let data: PathBuf = crate::home::data_dir_in(env);
    let ledger = crate::stores::ledger(&data)
        .with_context(|| format!("cannot open the ledger in {}", data.display()))?;
    let filter = nightwatch_ledger::Filter {
        since_ms: Some(since_ms),
        event: Some("decision".into()),
        ..Default::default()
    };
    let records = ledger.query(&filter)?;
    Ok(records
        .iter()
        .find(|r| r.inputs.to_string().contains(nonce) && r.verdict.as_deref() != Some("allow"))
        .map(|r| {
            format!(
                "record {} in {}, {} by rule {}",
                r.id,
                data.display(),
                r.verdict.as_deref().unwrap_or("?"),
                r.rule.as_deref().unwrap_or("?")
            )
        }))
}
