//! Hook input: the JSON an agent writes on the hook's stdin, read leniently (unknown fields
//! ignored, newer fields optional, a field of an unexpected type treated as absent) and
//! strictly only where deciding needs it.

use crate::tool::map_tool;
use crate::{Agent, HookError, clip, kind_of};
use nightwatch_core::{Action, Context, Tool};
use serde_json::{Map, Value};

/// One hook event, parsed from the agent's stdin JSON.
#[derive(Clone, Debug, PartialEq)]
pub enum HookEvent {
    /// Before a tool runs: to be decided.
    BeforeTool {
        /// The agent's id for this call (`tool_use_id`), joining the decision to its result.
        call_id: Option<String>,
        session_id: Option<String>,
        cwd: Option<String>,
        /// The tool's name as the agent calls it (`Bash`, `run_shell_command`).
        tool_name: String,
        tool: Tool,
        /// `tool_input` as sent.
        inputs: Value,
    },
    /// After a tool ran (success or failure).
    AfterTool {
        call_id: Option<String>,
        session_id: Option<String>,
        cwd: Option<String>,
        tool_name: String,
        tool: Tool,
        inputs: Value,
        outcome: ToolOutcome,
        /// The agent's session transcript (`transcript_path`), where Codex writes the exit
        /// code its hook input leaves out.
        transcript_path: Option<String>,
    },
    /// The agent declined a call it had asked about (Claude Code's `PermissionDenied`: a
    /// person said no, or its auto mode's classifier did). The call closes without running.
    Declined {
        call_id: Option<String>,
        session_id: Option<String>,
        cwd: Option<String>,
        tool_name: String,
        tool: Tool,
        inputs: Value,
        /// The agent's reason (`reason`), or a plain one when it gave none.
        reason: String,
    },
    /// Anything else the agent reports (`SessionStart`, `Stop`, `SessionEnd`,
    /// `UserPromptSubmit`, ...), recorded as such.
    Lifecycle {
        /// `hook_event_name` as sent.
        name: String,
        session_id: Option<String>,
        cwd: Option<String>,
        /// The rest of the input: every field but `hook_event_name`, `session_id` and `cwd`.
        details: Value,
    },
}

/// What happened when a tool ran, as far as the agent tells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolOutcome {
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub failed: bool,
    pub interrupted: bool,
    pub duration_ms: Option<u64>,
}

impl HookEvent {
    /// `BeforeTool`, `AfterTool`, or the lifecycle event's own name.
    pub fn name(&self) -> &str {
        match self {
            HookEvent::BeforeTool { .. } => "BeforeTool",
            HookEvent::AfterTool { .. } => "AfterTool",
            HookEvent::Declined { .. } => "Declined",
            HookEvent::Lifecycle { name, .. } => name,
        }
    }

    pub fn session_id(&self) -> Option<&str> {
        match self {
            HookEvent::BeforeTool { session_id, .. }
            | HookEvent::AfterTool { session_id, .. }
            | HookEvent::Declined { session_id, .. }
            | HookEvent::Lifecycle { session_id, .. } => session_id.as_deref(),
        }
    }

    pub fn cwd(&self) -> Option<&str> {
        match self {
            HookEvent::BeforeTool { cwd, .. }
            | HookEvent::AfterTool { cwd, .. }
            | HookEvent::Declined { cwd, .. }
            | HookEvent::Lifecycle { cwd, .. } => cwd.as_deref(),
        }
    }

    pub fn call_id(&self) -> Option<&str> {
        match self {
            HookEvent::BeforeTool { call_id, .. }
            | HookEvent::AfterTool { call_id, .. }
            | HookEvent::Declined { call_id, .. } => call_id.as_deref(),
            HookEvent::Lifecycle { .. } => None,
        }
    }

    /// The action a tool event proposes (or proposed), as `agent`'s actor in this session.
    /// Lifecycle events propose nothing. Host and time of day are the edge's to fill in.
    pub fn action(&self, agent: Agent) -> Option<Action> {
        let (tool, session_id) = match self {
            HookEvent::BeforeTool {
                tool, session_id, ..
            }
            | HookEvent::AfterTool {
                tool, session_id, ..
            }
            | HookEvent::Declined {
                tool, session_id, ..
            } => (tool, session_id),
            HookEvent::Lifecycle { .. } => return None,
        };
        Some(Action {
            actor: agent.actor(),
            tool: tool.clone(),
            context: Context {
                session: session_id.clone(),
                ..Context::default()
            },
        })
    }
}

/// How the agent named the event.
enum Kind {
    Before,
    After { failed: bool },
    Declined,
    Other(String),
}

fn event_kind(name: &str) -> Kind {
    match name {
        "PreToolUse" | "BeforeTool" => Kind::Before,
        "PostToolUse" | "AfterTool" => Kind::After { failed: false },
        "PostToolUseFailure" => Kind::After { failed: true },
        "PermissionDenied" => Kind::Declined,
        other => Kind::Other(other.to_string()),
    }
}

/// Parse one hook input. The agent decides which tool names are understood (`Bash` for
/// Claude Code, `run_shell_command` for Gemini CLI); the event names of all three are accepted
/// from any of them.
pub fn parse_event(agent: Agent, stdin: &[u8]) -> Result<HookEvent, HookError> {
    if stdin.iter().all(u8::is_ascii_whitespace) {
        return Err(HookError::Empty);
    }
    let value: Value =
        serde_json::from_slice(stdin).map_err(|err| HookError::NotJson(err.to_string()))?;
    let Value::Object(mut fields) = value else {
        return Err(HookError::NotObject(kind_of(&value)));
    };

    let session_id = string(&fields, "session_id");
    let cwd = string(&fields, "cwd");
    let event_name = string(&fields, "hook_event_name").filter(|name| !name.trim().is_empty());
    let tool_name = fields.get("tool_name").and_then(Value::as_str);

    // Without an event name (or with a blank one), a tool name means a call that may be about to run: decide it
    // rather than wave it through as something to record.
    let kind = match (&event_name, tool_name) {
        (Some(name), _) => event_kind(name),
        (None, Some(_)) => Kind::Before,
        (None, None) => return Err(HookError::NoEventName),
    };
    if let Kind::Other(name) = kind {
        for key in ["hook_event_name", "session_id", "cwd"] {
            fields.remove(key);
        }
        return Ok(HookEvent::Lifecycle {
            name,
            session_id,
            cwd,
            details: Value::Object(fields),
        });
    }

    let tool_name = match tool_name {
        Some(name) if !name.trim().is_empty() => name.to_string(),
        _ => return Err(HookError::NoToolName),
    };
    let call_id = ["tool_use_id", "tool_call_id", "call_id"]
        .into_iter()
        .find_map(|key| string(&fields, key));
    let inputs = match fields.remove("tool_input") {
        Some(Value::Null) | None => Value::Object(Map::new()),
        Some(inputs) => inputs,
    };
    let tool = map_tool(agent, &tool_name, &inputs, cwd.as_deref())?;

    Ok(match kind {
        Kind::Declined => HookEvent::Declined {
            reason: string(&fields, "reason")
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| "declined, no reason given".to_owned()),
            call_id,
            session_id,
            cwd,
            tool_name,
            tool,
            inputs,
        },
        Kind::After { failed } => HookEvent::AfterTool {
            outcome: {
                let mut outcome = outcome(&fields, failed);
                // Claude Code reports a shell command that exited non-zero as
                // PostToolUseFailure ("Exit code N"), so its PostToolUse of a Bash call that
                // was not interrupted is an exit 0: its protocol says so, nothing guessed.
                if agent == Agent::Claude
                    && tool_name == "Bash"
                    && !outcome.failed
                    && !outcome.interrupted
                    && outcome.exit_code.is_none()
                {
                    outcome.exit_code = Some(0);
                }
                outcome
            },
            transcript_path: string(&fields, "transcript_path"),
            call_id,
            session_id,
            cwd,
            tool_name,
            tool,
            inputs,
        },
        _ => HookEvent::BeforeTool {
            call_id,
            session_id,
            cwd,
            tool_name,
            tool,
            inputs,
        },
    })
}

/// The outcome of a call that ran: Claude Code's and Codex's `tool_response` (`stdout`,
/// `stderr`, `interrupted`), an MCP tool's result (Claude Code passes the server's content
/// parts, Codex the whole `CallToolResult` with `content` and `isError`), Codex's `apply_patch`
/// result (`summary`, `success`), Claude Code's failure `error` ("Exit code N\n..."), Gemini
/// CLI's `tool_response` (`llmContent`, `error`).
fn outcome(fields: &Map<String, Value>, failed: bool) -> ToolOutcome {
    let mut outcome = ToolOutcome {
        failed,
        duration_ms: fields.get("duration_ms").and_then(Value::as_u64),
        interrupted: fields.get("is_interrupt").and_then(Value::as_bool) == Some(true),
        ..ToolOutcome::default()
    };

    match fields.get("tool_response") {
        Some(Value::String(text)) => outcome.stdout = text.clone(),
        Some(parts @ Value::Array(_)) => outcome.stdout = text_of(parts).unwrap_or_default(),
        Some(Value::Object(response)) => {
            outcome.stdout = ["stdout", "output", "llmContent", "content", "summary"]
                .into_iter()
                .find_map(|key| response.get(key).and_then(text_of))
                .unwrap_or_default();
            outcome.stderr = response.get("stderr").and_then(text_of).unwrap_or_default();
            if response.get("interrupted").and_then(Value::as_bool) == Some(true) {
                outcome.interrupted = true;
            }
            outcome.exit_code = ["exit_code", "exitCode"]
                .into_iter()
                .find_map(|key| response.get(key).and_then(as_i32));
            if let Some(error) = response.get("error").and_then(error_text) {
                outcome.failed = true;
                append_line(&mut outcome.stderr, &error);
            }
            if response.get("success").and_then(Value::as_bool) == Some(false)
                || ["isError", "is_error"]
                    .into_iter()
                    .any(|key| response.get(key).and_then(Value::as_bool) == Some(true))
            {
                outcome.failed = true;
            }
        }
        _ => {}
    }

    if let Some(error) = fields.get("error").and_then(error_text) {
        outcome.failed = true;
        if outcome.exit_code.is_none() {
            outcome.exit_code = exit_code_in(&error);
        }
        append_line(&mut outcome.stderr, &error);
    }
    if outcome.exit_code.is_some_and(|code| code != 0) {
        outcome.failed = true;
    }
    outcome
}

/// The code in Claude Code's "Exit code 1\n..." failure text.
fn exit_code_in(error: &str) -> Option<i32> {
    let rest = error.trim_start().strip_prefix("Exit code")?.trim_start();
    let end = rest
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
        .map_or(rest.len(), |(i, _)| i);
    rest[..end].parse().ok()
}

fn append_line(to: &mut String, text: &str) {
    if !to.is_empty() && !to.ends_with('\n') {
        to.push('\n');
    }
    to.push_str(text);
}

/// A string field, or None when absent or of another type.
pub(crate) fn string(fields: &Map<String, Value>, key: &str) -> Option<String> {
    fields.get(key).and_then(Value::as_str).map(str::to_string)
}

fn as_i32(value: &Value) -> Option<i32> {
    value.as_i64().and_then(|n| i32::try_from(n).ok())
}

/// Text content: a string, or the texts of an array of strings or `{ "text": ... }` parts
/// (Gemini CLI's `llmContent` may be either).
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|part| match part {
                    Value::String(text) => Some(text.as_str()),
                    Value::Object(part) => part.get("text").and_then(Value::as_str),
                    _ => None,
                })
                .collect();
            Some(texts.join("\n"))
        }
        _ => None,
    }
}

/// An error as text: a non-empty string, or an object's `message`. Null, false and "" are no
/// error.
fn error_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) if !text.trim().is_empty() => Some(text.clone()),
        Value::Object(error) => Some(
            error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| clip(&value.to_string())),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{exit_code_in, outcome};
    use serde_json::{Map, Value, json};

    fn response(tool_response: Value) -> Map<String, Value> {
        let Value::Object(fields) = json!({ "tool_response": tool_response }) else {
            unreachable!()
        };
        fields
    }

    #[test]
    fn mcp_results_are_read_in_either_agents_shape() {
        let parts = json!([{ "type": "text", "text": "{\"timezone\": \"UTC\"}" }]);
        let claude = outcome(&response(parts.clone()), false);
        assert_eq!(claude.stdout, "{\"timezone\": \"UTC\"}");
        assert!(!claude.failed);

        let codex = outcome(
            &response(json!({ "content": parts, "isError": false })),
            false,
        );
        assert_eq!(codex.stdout, "{\"timezone\": \"UTC\"}");
        assert!(!codex.failed);

        let failed =
            json!({ "content": [{ "type": "text", "text": "no such zone" }], "isError": true });
        let codex = outcome(&response(failed), false);
        assert_eq!(codex.stdout, "no such zone");
        assert!(codex.failed, "an MCP error result is a failure");
    }

    #[test]
    fn exit_codes_are_read_from_the_start_of_claude_failures() {
        let rows = [
            ("Exit code 1\nFailed to restart", Some(1)),
            ("Exit code 127", Some(127)),
            ("  Exit code -1\n", Some(-1)),
            ("Exit code", None),
            ("Exit code x", None),
            ("Exit code 99999999999", None),
            ("Command timed out", None),
            ("Failed: Exit code 2", None),
        ];
        for (error, expected) in rows {
            assert_eq!(exit_code_in(error), expected, "{error:?}");
        }
    }
}
