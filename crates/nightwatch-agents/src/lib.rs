//! The AI agents' hook protocols, in one place.
//!
//! Claude Code, Codex and Gemini CLI each run a command before (and after) a tool call, hand it
//! a JSON document on stdin and read its answer from the exit code, stdout and stderr. This
//! crate turns those documents into nightwatch's core types and decisions back into those
//! answers:
//!
//! - [`parse_event`]: stdin bytes in, a [`HookEvent`] out (a tool call to decide, a tool call
//!   that ran, or a lifecycle event to record), with the call's [`Tool`] already mapped.
//! - [`reply_to_decision`], [`reply_to_failure`], [`reply_to_record`]: the [`Reply`] (stdout,
//!   stderr, exit code) each agent understands.
//! - [`install_hooks`] and [`settings_path`]: where each agent reads its hook settings and the
//!   entries that make it call nightwatch.
//!
//! Everything here is pure: no files, no clock, no environment, and no function panics on any
//! input. The binary reads stdin and settings files and writes the reply.
//!
//! # Failing closed
//!
//! Every agent lets a call proceed when its hook crashes, times out or exits with a code other
//! than 0 or 2. So every refusal here exits 2 with its reason on stderr (the one signal all
//! three honour), never relies on JSON alone, and never has an empty reason (Codex ignores an
//! exit 2 without one). Input that cannot be understood is an error, which the binary answers
//! with [`reply_to_failure`]: a refusal. A tool input that names several files or URLs where
//! the core [`Tool`] holds one is mapped to [`Tool::Named`] rather than judged by its first.

mod codex;
mod event;
pub mod ownership;
mod record;
mod reply;
mod settings;
mod tool;

#[cfg(test)]
mod tests;

use nightwatch_core::{Actor, ActorKind};
use std::fmt;
use std::str::FromStr;

pub use codex::{CodexHookTrust, codex_exit_code, codex_hook_trust, requires_trust};
pub use event::{HookEvent, ToolOutcome, parse_event};
pub use nightwatch_core::Tool;
pub use record::{tool_from_record, tool_from_record_in};
pub use reply::{
    Reply, reply_to_decision, reply_to_decision_with_input, reply_to_failure, reply_to_record,
};
pub use settings::{
    Base, Scope, SettingsLocation, before_tool_event, command_words, install_hooks,
    installed_commands, runs_nightwatch, settings_path, uninstall_hooks,
};

/// An agent whose hook protocol nightwatch speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Agent {
    /// Claude Code: `PreToolUse` / `PostToolUse` hooks, `permissionDecision` allow, ask, deny.
    Claude,
    /// Codex CLI: Claude Code's wire format, but only a deny (exit 2) is honoured.
    Codex,
    /// Gemini CLI: `BeforeTool` / `AfterTool` hooks, `decision` allow or deny.
    Gemini,
}

impl Agent {
    pub const ALL: [Agent; 3] = [Agent::Claude, Agent::Codex, Agent::Gemini];

    /// The name used on the command line (`nightwatch hook claude`).
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }

    /// The actor this agent's calls are recorded and decided as.
    pub fn actor(self) -> Actor {
        let id = match self {
            Agent::Claude => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini-cli",
        };
        Actor::new(ActorKind::Agent, id)
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Agent {
    type Err = HookError;

    fn from_str(text: &str) -> Result<Agent, HookError> {
        Agent::ALL
            .into_iter()
            .find(|agent| agent.as_str() == text)
            .ok_or_else(|| HookError::UnknownAgent(clip(text)))
    }
}

/// Why a hook input or a settings document could not be used. Each message says what was
/// expected, so the person reading the agent's transcript or the installer's output can act.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    #[error("unknown agent {0:?}: expected claude, codex or gemini")]
    UnknownAgent(String),
    #[error("hook input is empty")]
    Empty,
    #[error("hook input is not JSON: {0}")]
    NotJson(String),
    #[error("hook input is {0}, not a JSON object")]
    NotObject(&'static str),
    #[error("hook input has no hook_event_name and no tool_name")]
    NoEventName,
    #[error("hook input has no tool_name")]
    NoToolName,
    #[error("hook input for tool {tool} has no tool_input.{field}")]
    MissingInput { tool: String, field: &'static str },
    #[error("{place} is {found}, not {expected}; fix it by hand and install again")]
    Settings {
        place: String,
        found: &'static str,
        expected: &'static str,
    },
}

/// Text from the input quoted in an error, kept short so a huge field cannot flood a message.
pub(crate) fn clip(text: &str) -> String {
    const MAX: usize = 120;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

/// What kind of JSON value this is, for messages.
pub(crate) fn kind_of(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
