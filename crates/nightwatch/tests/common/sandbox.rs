//! A throwaway machine for path tests: a temp root with a home (`HOME`), a data directory
//! (`NIGHTWATCH_HOME`) and a project, real files and links in them, and the real binary's hook
//! (Claude, Codex, Gemini payloads) and `check` run there, each answer read back as a verdict.

use serde_json::{Value, json};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;

pub struct Sandbox {
    pub root: PathBuf,
    pub home: PathBuf,
    pub data: PathBuf,
    pub project: PathBuf,
    /// Extra variables for every run (an agent's config directory moved elsewhere).
    pub env: Vec<(String, OsString)>,
}

/// The agents whose hook payloads the sandbox speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    Claude,
    Codex,
    Gemini,
}

impl Agent {
    pub const ALL: [Agent; 3] = [Agent::Claude, Agent::Codex, Agent::Gemini];

    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }

    /// This agent's shell tool.
    pub fn shell(self) -> &'static str {
        match self {
            Agent::Claude | Agent::Codex => "Bash",
            Agent::Gemini => "run_shell_command",
        }
    }
}

/// Variables of the test process that would move what the sandbox sets up; blank is unset.
const CLEARED: [&str; 7] = [
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "GEMINI_CLI_HOME",
    "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
    "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
    "XDG_STATE_HOME",
    "NIGHTWATCH_POLICY",
];

impl Sandbox {
    /// An empty home, data directory and project (`home/project`) under a fresh temp root.
    pub fn new(suite: &str, name: &str) -> Sandbox {
        let root = std::fs::canonicalize(super::scratch(suite, name)).expect("scratch");
        let home = root.join("home");
        let data = root.join("data");
        let project = home.join("project");
        for dir in [&home, &data, &project] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        Sandbox {
            root,
            home,
            data,
            project,
            env: Vec::new(),
        }
    }

    /// Writes `text` at `path` (relative to the root), creating its directories.
    pub fn file(&self, path: &str, text: &str) -> PathBuf {
        let path = self.root.join(path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::fs::write(&path, text).expect("write");
        path
    }

    /// A symlink at `at` (relative to the root) pointing at `target` as given.
    pub fn link(&self, target: impl AsRef<Path>, at: &str) {
        let at = self.root.join(at);
        if let Some(dir) = at.parent() {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::os::unix::fs::symlink(target, at).expect("symlink");
    }

    pub fn set(&mut self, key: &str, value: impl Into<OsString>) {
        self.env.push((key.to_owned(), value.into()));
    }

    /// `nightwatch ARGS` with the sandbox's environment, in directory `cwd`.
    pub fn run(&self, args: &[&str], stdin: &[u8], cwd: &Path) -> Output {
        let mut command = super::nightwatch_command(args);
        command.current_dir(cwd);
        for key in CLEARED {
            command.env_remove(key);
        }
        command
            .env("HOME", &self.home)
            .env("NIGHTWATCH_HOME", &self.data)
            .env("NIGHTWATCH_NOW", "2026-02-14T12:00:00Z");
        for (key, value) in &self.env {
            command.env(key, value);
        }
        super::run_with_input(command, stdin)
    }

    /// The verdict the hook gives `agent`'s call of `tool` with `inputs`, made in the project
    /// (the payload names it as its `cwd`).
    pub fn hook(&self, agent: Agent, tool: &str, inputs: Value) -> String {
        self.hook_in(agent, tool, inputs, Some(&self.project), &self.project)
    }

    /// As [`Sandbox::hook`], with the reason the agent is given.
    pub fn hook_with_reason(&self, agent: Agent, tool: &str, inputs: Value) -> (String, String) {
        let output = self.hook_output(agent, tool, inputs, Some(&self.project), &self.project);
        let verdict = verdict_of(agent, &output);
        let stdout: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        let reason = match stdout["hookSpecificOutput"]["permissionDecisionReason"].as_str() {
            Some(reason) => reason.to_owned(),
            None => String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        };
        (verdict, reason)
    }

    /// As [`Sandbox::hook`], with the payload's `cwd` (None: left out) and the hook process's
    /// own directory given.
    pub fn hook_in(
        &self,
        agent: Agent,
        tool: &str,
        inputs: Value,
        payload_cwd: Option<&Path>,
        process_cwd: &Path,
    ) -> String {
        verdict_of(
            agent,
            &self.hook_output(agent, tool, inputs, payload_cwd, process_cwd),
        )
    }

    fn hook_output(
        &self,
        agent: Agent,
        tool: &str,
        inputs: Value,
        payload_cwd: Option<&Path>,
        process_cwd: &Path,
    ) -> Output {
        let mut payload = match agent {
            Agent::Claude | Agent::Codex => json!({
                "session_id": "sandbox",
                "hook_event_name": "PreToolUse",
                "tool_name": tool,
                "tool_input": inputs,
                "tool_use_id": "call-1",
            }),
            Agent::Gemini => json!({
                "session_id": "sandbox",
                "hook_event_name": "BeforeTool",
                "tool_name": tool,
                "tool_input": inputs,
            }),
        };
        if let Some(cwd) = payload_cwd {
            payload["cwd"] = json!(cwd);
        }
        self.run(
            &["hook", agent.name()],
            payload.to_string().as_bytes(),
            process_cwd,
        )
    }

    /// The verdict `nightwatch check LINE` gives in directory `cwd`.
    pub fn check(&self, line: &str, cwd: &Path) -> String {
        let output = self.run(&["check", line], b"", cwd);
        match output.status.code() {
            Some(0) => "allow",
            Some(2) => "deny",
            Some(3) => "ask",
            Some(4) => "halt",
            _ => panic!(
                "check {line:?} failed: {:?} {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ),
        }
        .to_owned()
    }
}

/// The verdict in a hook's reply, as each agent's protocol says it (an ask or a halt is a deny
/// with its own words for Codex and Gemini). A refusal because nightwatch failed is a test
/// failure, not a verdict.
pub fn verdict_of(agent: Agent, output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert!(
        !stderr.contains("nightwatch could not decide"),
        "the hook failed: {stderr}"
    );
    match output.status.code() {
        Some(0) => match agent {
            Agent::Claude => stdout["hookSpecificOutput"]["permissionDecision"]
                .as_str()
                .unwrap_or("no decision")
                .to_owned(),
            Agent::Codex => "allow".to_owned(),
            Agent::Gemini => stdout["decision"]
                .as_str()
                .unwrap_or("no decision")
                .to_owned(),
        },
        Some(2) if stderr.starts_with("needs a human's approval") => "ask".to_owned(),
        Some(2) if stderr.starts_with("halted") => "halt".to_owned(),
        Some(2) => "deny".to_owned(),
        other => panic!("the hook exited {other:?}: {stderr}"),
    }
}

/// A Codex `apply_patch` adding (`add`) or updating one file.
pub fn patch(path: &str, add: bool) -> Value {
    let body = if add {
        format!("*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch\n")
    } else {
        format!("*** Begin Patch\n*** Update File: {path}\n@@\n-a\n+b\n*** End Patch\n")
    };
    json!({ "command": body })
}
