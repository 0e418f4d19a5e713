//! The real agents for end-to-end tests: the pinned Claude Code and Codex binaries that
//! `scripts/install-agents` fetches from PyPI, each run in a world of its own (a home, the
//! agent's config directory, a project, nightwatch's data directory) against a
//! [`ScriptedModel`] on 127.0.0.1, with nightwatch installed the way the README says.

use nightwatch_scripted_model::ScriptedModel;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Bytes that must never reach the model: the content of the world's private key, and the
/// value of a token in the agent's environment.
pub const KEY_CANARY: &str = "NWCANARY-PRIVATE-KEY-5f0c2a7e91";
pub const TOKEN_CANARY: &str = "ghp_NWCANARYTOKEN0000000000000000000000";

/// The cache `scripts/install-agents` fills.
fn cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("NIGHTWATCH_AGENTS_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    base.join("nightwatch/agents")
}

/// The pinned binary of `name` (`claude`, `codex`). A missing one fails the test: these tests
/// exist to prove the real agent, so they never pass without it.
pub fn binary(name: &str) -> PathBuf {
    let path = cache().join(name);
    assert!(
        path.is_file(),
        "the pinned {name} is not in {}: run scripts/install-agents (scripts/test does)",
        cache().display()
    );
    path
}

/// The real `mcp-server-time` that `scripts/install-agents` installs at the version it pins:
/// a python3 that imports it, and the directory it was installed into (its `PYTHONPATH`).
/// Its real executable, not a shim: a world's PATH and HOME are not this user's.
pub struct TimeServer {
    pub python: String,
    pub site: PathBuf,
}

pub fn time_server() -> TimeServer {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install-agents");
    let script = std::fs::read_to_string(&script).expect("scripts/install-agents");
    let version = script
        .lines()
        .find_map(|l| l.strip_prefix("MCP_SERVER_TIME_VERSION="))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("scripts/install-agents pins MCP_SERVER_TIME_VERSION");
    let site = cache().join(format!("mcp-server-time-{version}"));
    assert!(
        site.is_dir(),
        "mcp-server-time {version} is not in {}: run scripts/install-agents",
        site.display()
    );
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("python3"))
                .collect()
        })
        .unwrap_or_default();
    candidates.extend(["/usr/local/bin/python3", "/usr/bin/python3"].map(PathBuf::from));
    let python = candidates
        .iter()
        .filter(|candidate| candidate.is_file())
        .find_map(|candidate| {
            let output = Command::new(candidate)
                .args(["-c", "import sys, mcp_server_time; print(sys.executable)"])
                .env("PYTHONPATH", &site)
                .output()
                .ok()?;
            let executable = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            (output.status.success() && !executable.is_empty()).then_some(executable)
        })
        .unwrap_or_else(|| {
            panic!(
                "no python3 imports mcp_server_time from {}: run scripts/install-agents",
                site.display()
            )
        });
    TimeServer { python, site }
}

/// Where the agent keeps its settings in a [`World`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Agent {
    Claude,
    Codex,
}

impl Agent {
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
        }
    }

    /// The variable that moves the agent's config directory.
    pub fn config_var(self) -> &'static str {
        match self {
            Agent::Claude => "CLAUDE_CONFIG_DIR",
            Agent::Codex => "CODEX_HOME",
        }
    }
}

/// One user's machine, in a scratch directory.
pub struct World {
    pub root: PathBuf,
    pub home: PathBuf,
    /// `CLAUDE_CONFIG_DIR` / `CODEX_HOME`.
    pub config: PathBuf,
    pub project: PathBuf,
    /// `NIGHTWATCH_HOME`.
    pub data: PathBuf,
    pub agent: Agent,
}

impl World {
    pub fn new(agent: Agent, name: &str) -> World {
        let root = super::scratch(&format!("agent-{}", agent.name()), name);
        let world = World {
            home: root.join("home"),
            config: root.join("agent-config"),
            project: root.join("project"),
            data: root.join("nightwatch"),
            root,
            agent,
        };
        for dir in [&world.home, &world.config, &world.project] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let ssh = world.home.join(".ssh");
        std::fs::create_dir_all(&ssh).unwrap();
        std::fs::write(
            ssh.join("id_rsa"),
            format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_CANARY}\n-----END OPENSSH PRIVATE KEY-----\n"),
        )
        .unwrap();
        std::fs::write(world.project.join("README.md"), "a project\n").unwrap();
        // The agent is on this user's PATH, so install and doctor can ask it.
        std::fs::create_dir_all(world.root.join("bin")).unwrap();
        std::os::unix::fs::symlink(
            binary(agent.name()),
            world.root.join("bin").join(agent.name()),
        )
        .unwrap();
        world
    }

    /// Points Codex at `model` in the user's `config.toml` (a model provider of its own), under
    /// a slug Codex has no metadata for: it offers its fallback tool set (the shell, MCP
    /// servers' tools up front, no `apply_patch`).
    pub fn use_codex_model(&self, model: &ScriptedModel) {
        self.use_codex_model_as(model, "gpt-5.1-codex");
    }

    /// As [`World::use_codex_model`], as the model `slug` from Codex's own catalog, so Codex
    /// offers that model's tools (`gpt-5.5`: the freeform `apply_patch`).
    pub fn use_codex_model_as(&self, model: &ScriptedModel, slug: &str) {
        let config = self.config.join("config.toml");
        let mut text = std::fs::read_to_string(&config).unwrap_or_default();
        text.insert_str(
            0,
            &format!(
                "model = \"{slug}\"\nmodel_provider = \"scripted\"\n\n\
                 [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{}/v1\"\n\n",
                model.url()
            ),
        );
        std::fs::write(config, text).unwrap();
    }

    /// `nightwatch ARGS` as this user, from the project's directory.
    pub fn nightwatch(&self, args: &[&str]) -> Output {
        self.nightwatch_with(args, &[])
    }

    /// As [`World::nightwatch`], with `vars` set on top (another data directory, a policy).
    pub fn nightwatch_with(&self, args: &[&str], vars: &[(&str, &Path)]) -> Output {
        let mut command = super::nightwatch_command(args);
        self.user_env(&mut command);
        command.env("NIGHTWATCH_HOME", &self.data);
        for (name, value) in vars {
            command.env(name, value);
        }
        super::run_with_input(command, b"")
    }

    /// The README's install step for this world's agent, with `extra` flags; asserts it
    /// succeeded and returns what it printed.
    pub fn install(&self, extra: &[&str]) -> String {
        let mut args = vec!["install", self.agent.name()];
        args.extend_from_slice(extra);
        let output = self.nightwatch(&args);
        let text = text(&output);
        assert!(output.status.success(), "install failed: {text}");
        text
    }

    /// The environment every program of this user gets: no variable of the test process
    /// but these.
    fn user_env(&self, command: &mut Command) {
        command
            .env_clear()
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/bin:/usr/bin:/bin",
                    self.root.join("bin").display()
                ),
            )
            .env("HOME", &self.home)
            .env("LANG", "C.UTF-8")
            .env(self.agent.config_var(), &self.config)
            .current_dir(&self.project);
    }

    /// The agent's process, pointed at `model`, with a secret token in its environment and
    /// every other address than loopback unreachable.
    pub fn agent_command(&self, model: &ScriptedModel, args: &[&str]) -> Command {
        let mut command = Command::new(binary(self.agent.name()));
        command.args(args);
        self.user_env(&mut command);
        command
            .env("GITHUB_TOKEN", TOKEN_CANARY)
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .env("HTTP_PROXY", "http://127.0.0.1:9")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match self.agent {
            Agent::Claude => {
                command
                    .env("ANTHROPIC_BASE_URL", model.url())
                    .env("ANTHROPIC_API_KEY", "scripted-model-key")
                    .env("DISABLE_TELEMETRY", "1")
                    .env("DISABLE_AUTOUPDATER", "1")
                    .env("DISABLE_ERROR_REPORTING", "1")
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
            }
            Agent::Codex => {
                command.env("SCRIPTED_MODEL_KEY", "scripted-model-key");
            }
        }
        command
    }

    /// Every record in the ledger, as `nightwatch export` writes them.
    pub fn records(&self) -> Vec<Value> {
        let output = self.nightwatch(&["export", "--format", "jsonl"]);
        assert!(output.status.success(), "export: {}", text(&output));
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| serde_json::from_str(line).expect("export is JSON lines"))
            .collect()
    }

    pub fn assert_ledger_verifies(&self) {
        super::assert_ledger_verifies(&self.data);
    }
}

/// Runs `command` to its end, killed after `limit`; its output.
pub fn run(mut command: Command, limit: Duration) -> Output {
    let mut child = command.spawn().expect("the agent starts");
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!("the agent did not finish in {limit:?}: {}", text(&output));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The JSON lines an agent printed (`--output-format stream-json`, `exec --json`).
pub fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Asserts no request to the model carried a secret of the world.
pub fn assert_no_secret_reached(model: &ScriptedModel) {
    let requests = model.requests();
    assert!(!requests.is_empty(), "the agent never called the model");
    for canary in [KEY_CANARY, TOKEN_CANARY] {
        let leaks = model.requests_containing(canary);
        assert!(
            leaks.is_empty(),
            "{canary} reached the model in {} of {} requests; first: {}",
            leaks.len(),
            requests.len(),
            leaks[0].body.chars().take(2000).collect::<String>()
        );
    }
}

/// The records of `event` kind (`decision`, `result`, ...) in one session.
pub fn of_session<'a>(records: &'a [Value], session: &str, event: &str) -> Vec<&'a Value> {
    records
        .iter()
        .filter(|r| r["session_id"] == session && r["event"] == event)
        .collect()
}

pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}
