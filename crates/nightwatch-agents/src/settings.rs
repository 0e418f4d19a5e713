//! Where each agent reads its hooks, and the entries that make it call nightwatch.
//!
//! All three use the same shape, `hooks.<Event>: [{matcher, hooks: [{type: "command",
//! command, timeout}]}]`; they differ in the file, the event names and the timeout's unit.
//!
//! - Claude Code: `.claude/settings.json` in the project (shared: committed with it) or the
//!   home directory, and `.claude/settings.local.json` in the project (this user's, which
//!   Claude keeps out of git); timeout in seconds.
//! - Codex: `.codex/hooks.json` beside the project's or the user's `config.toml` (the same
//!   tables may also be written inline in `config.toml` as `[[hooks.PreToolUse]]`); the file
//!   allows only `hooks` and `description` at its top; timeout in seconds; `*` matches all.
//! - Gemini CLI: `.gemini/settings.json` in the project or the home directory, events
//!   `BeforeTool` / `AfterTool`; timeout in milliseconds; a `name` identifies the hook for
//!   `/hooks enable|disable`.

use crate::{Agent, HookError, kind_of};
use serde_json::{Map, Value, json};

/// Whose settings to change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// This project, for this user only: Claude's `.claude/settings.local.json`. Codex and
    /// Gemini have no such file; for them it is the project's file.
    Local,
    /// This project only, in the settings file committed with it.
    Project,
    /// Every project of this user.
    User,
}

/// The directory a settings path is relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Base {
    /// The project's root directory.
    Project,
    /// The user's directory for the agent: `$var` when it is set and not empty, else
    /// `$HOME/default` (the agents move it with `CLAUDE_CONFIG_DIR`, `CODEX_HOME` and
    /// `GEMINI_CLI_HOME`).
    User {
        var: &'static str,
        default: &'static str,
    },
}

/// Where an agent's hook settings live: `path` relative to `base`. The binary joins them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SettingsLocation {
    pub base: Base,
    pub path: &'static str,
}

pub fn settings_path(agent: Agent, scope: Scope) -> SettingsLocation {
    if scope == Scope::User {
        let (var, default, path) = match agent {
            // `CLAUDE_CONFIG_DIR` replaces `~/.claude`; Claude then ignores the other.
            Agent::Claude => ("CLAUDE_CONFIG_DIR", ".claude", "settings.json"),
            // `CODEX_HOME` replaces `~/.codex`, where `config.toml` and its trust live too.
            Agent::Codex => ("CODEX_HOME", ".codex", "hooks.json"),
            // `GEMINI_CLI_HOME` replaces the home directory Gemini CLI reads `.gemini` in.
            Agent::Gemini => ("GEMINI_CLI_HOME", "", ".gemini/settings.json"),
        };
        return SettingsLocation {
            base: Base::User { var, default },
            path,
        };
    }
    let path = match agent {
        Agent::Claude if scope == Scope::Local => ".claude/settings.local.json",
        Agent::Claude => ".claude/settings.json",
        Agent::Codex => ".codex/hooks.json",
        Agent::Gemini => ".gemini/settings.json",
    };
    SettingsLocation {
        base: Base::Project,
        path,
    }
}

/// One hook entry nightwatch installs.
struct Entry {
    event: &'static str,
    /// `*` for tool events; lifecycle events take none.
    matcher: Option<&'static str>,
}

const ALL_TOOLS: Option<&str> = Some("*");

fn entries(agent: Agent) -> &'static [Entry] {
    match agent {
        Agent::Claude => &[
            Entry {
                event: "PreToolUse",
                matcher: ALL_TOOLS,
            },
            Entry {
                event: "PostToolUse",
                matcher: ALL_TOOLS,
            },
            Entry {
                event: "PostToolUseFailure",
                matcher: ALL_TOOLS,
            },
            Entry {
                event: "SessionStart",
                matcher: None,
            },
            Entry {
                event: "Stop",
                matcher: None,
            },
            Entry {
                event: "SessionEnd",
                matcher: None,
            },
            // Claude's auto mode refusing a call: the call's end, recorded.
            Entry {
                event: "PermissionDenied",
                matcher: ALL_TOOLS,
            },
        ],
        // Codex 0.163's events: a person's approval (PermissionRequest) and the prompt are
        // recorded; PermissionRequest carries no call id, so it decides nothing.
        Agent::Codex => &[
            Entry {
                event: "PreToolUse",
                matcher: ALL_TOOLS,
            },
            Entry {
                event: "PostToolUse",
                matcher: ALL_TOOLS,
            },
            Entry {
                event: "PermissionRequest",
                matcher: ALL_TOOLS,
            },
            Entry {
                event: "UserPromptSubmit",
                matcher: None,
            },
            Entry {
                event: "SessionStart",
                matcher: None,
            },
            Entry {
                event: "Stop",
                matcher: None,
            },
            Entry {
                event: "SessionEnd",
                matcher: None,
            },
        ],
        Agent::Gemini => &[
            Entry {
                event: "BeforeTool",
                matcher: ALL_TOOLS,
            },
            Entry {
                event: "AfterTool",
                matcher: ALL_TOOLS,
            },
            Entry {
                event: "SessionStart",
                matcher: None,
            },
            Entry {
                event: "SessionEnd",
                matcher: None,
            },
        ],
    }
}

/// The hook's time limit. An agent lets the call proceed when the hook times out, so it is
/// generous; a decision takes milliseconds.
const TIMEOUT_SECONDS: u64 = 30;

/// Codex clamps a SessionEnd hook's limit to 3 s and says so as an error on every session's
/// output; recording the end takes milliseconds.
const CODEX_SESSION_END_SECONDS: u64 = 3;

fn handler(agent: Agent, event: &str, command: &str) -> Value {
    match agent {
        Agent::Codex if event == "SessionEnd" => json!({
            "type": "command",
            "command": command,
            "timeout": CODEX_SESSION_END_SECONDS,
        }),
        Agent::Claude | Agent::Codex => json!({
            "type": "command",
            "command": command,
            "timeout": TIMEOUT_SECONDS,
        }),
        Agent::Gemini => json!({
            "name": "nightwatch",
            "type": "command",
            "command": command,
            "timeout": TIMEOUT_SECONDS * 1000,
        }),
    }
}

/// Merge nightwatch's hook entries into the agent's settings document (`Value::Null` for a file
/// that does not exist yet). Idempotent: nightwatch's existing handlers (any whose command runs
/// `nightwatch ... hook`, or the given command) are removed wherever they are in the events it
/// installs, then one group per event is appended. Everything else is kept as it was. A
/// settings document of an unexpected shape is an error, never overwritten.
pub fn install_hooks(agent: Agent, settings: Value, command: &str) -> Result<Value, HookError> {
    let mut settings = match settings {
        Value::Null => Map::new(),
        Value::Object(settings) => settings,
        other => return Err(shape("the settings file", &other, "a JSON object")),
    };
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    if hooks.is_null() {
        *hooks = Value::Object(Map::new());
    }
    let Value::Object(hooks) = hooks else {
        return Err(shape(
            "\"hooks\" in the settings file",
            hooks,
            "a JSON object",
        ));
    };

    for entry in entries(agent) {
        let groups = hooks
            .entry(entry.event)
            .or_insert_with(|| Value::Array(Vec::new()));
        if groups.is_null() {
            *groups = Value::Array(Vec::new());
        }
        let Value::Array(groups) = groups else {
            return Err(shape(
                &format!("\"hooks.{}\" in the settings file", entry.event),
                groups,
                "a JSON array",
            ));
        };
        // A group that is only nightwatch's is replaced where it stands: Codex keys each
        // hook's trust by its place, so moving it (or the user's hooks after it) would turn
        // them off.
        let place = groups.iter().position(|group| is_only_ours(group, command));
        remove_ours(groups, command);
        let mut group = Map::new();
        if let Some(matcher) = entry.matcher {
            group.insert("matcher".into(), matcher.into());
        }
        group.insert(
            "hooks".into(),
            Value::Array(vec![handler(agent, entry.event, command)]),
        );
        match place {
            Some(place) if place <= groups.len() => groups.insert(place, Value::Object(group)),
            _ => groups.push(Value::Object(group)),
        }
    }
    Ok(Value::Object(settings))
}

/// Takes nightwatch's hook entries out of the agent's settings document: every handler that
/// runs nightwatch's hook, the groups they leave empty, and the events those leave empty.
/// Everything else is kept as it was.
pub fn uninstall_hooks(agent: Agent, settings: Value) -> Result<Value, HookError> {
    let mut settings = match settings {
        Value::Null => return Ok(Value::Null),
        Value::Object(settings) => settings,
        other => return Err(shape("the settings file", &other, "a JSON object")),
    };
    if let Some(Value::Object(hooks)) = settings.get_mut("hooks") {
        for entry in entries(agent) {
            if let Some(Value::Array(groups)) = hooks.get_mut(entry.event) {
                let before = groups.len();
                remove_ours(groups, "");
                if groups.is_empty() && before > 0 {
                    hooks.remove(entry.event);
                }
            }
        }
    }
    Ok(Value::Object(settings))
}

/// The commands of nightwatch's handlers in these settings, for each event nightwatch
/// installs: what `nightwatch doctor` checks. Empty when nightwatch is not installed there.
pub fn installed_commands(agent: Agent, settings: &Value) -> Vec<(&'static str, String)> {
    let mut found = Vec::new();
    for entry in entries(agent) {
        let groups = settings
            .get("hooks")
            .and_then(|h| h.get(entry.event))
            .and_then(Value::as_array);
        for handler in groups
            .into_iter()
            .flatten()
            .filter_map(|g| g.get("hooks").and_then(Value::as_array))
            .flatten()
        {
            if is_ours(handler, "")
                && let Some(command) = handler.get("command").and_then(Value::as_str)
            {
                found.push((entry.event, command.to_owned()));
            }
        }
    }
    found
}

/// The event nightwatch decides tool calls on, for this agent.
pub fn before_tool_event(agent: Agent) -> &'static str {
    match agent {
        Agent::Claude | Agent::Codex => "PreToolUse",
        Agent::Gemini => "BeforeTool",
    }
}

/// A group whose handlers are all nightwatch's.
fn is_only_ours(group: &Value, command: &str) -> bool {
    group
        .get("hooks")
        .and_then(Value::as_array)
        .is_some_and(|handlers| {
            !handlers.is_empty() && handlers.iter().all(|handler| is_ours(handler, command))
        })
}

/// Drop nightwatch's handlers from these groups, and the groups they leave empty.
fn remove_ours(groups: &mut Vec<Value>, command: &str) {
    groups.retain_mut(|group| {
        let Some(Value::Array(handlers)) = group.get_mut("hooks") else {
            return true;
        };
        let before = handlers.len();
        handlers.retain(|handler| !is_ours(handler, command));
        !(handlers.is_empty() && before > 0)
    });
}

/// A handler that runs nightwatch's hook: the command being installed, or any command whose
/// program is `nightwatch` and which has a `hook` argument (an older path or agent name).
pub(crate) fn is_ours(handler: &Value, command: &str) -> bool {
    let Some(existing) = handler.get("command").and_then(Value::as_str) else {
        return false;
    };
    if !command.trim().is_empty() && existing.trim() == command.trim() {
        return true;
    }
    // `env NIGHTWATCH_HOME=... /path/nightwatch hook claude` is ours too.
    let mut words = existing
        .split_whitespace()
        .skip_while(|w| *w == "env" || w.ends_with("/env") || is_assignment(w));
    let program = words.next().unwrap_or_default().trim_matches(['"', '\'']);
    let program = program.rsplit(['/', '\\']).next().unwrap_or(program);
    let is_nightwatch = program == "nightwatch" || program == "nightwatch.exe";
    is_nightwatch && words.any(|word| word == "hook")
}

/// `NAME=value`, as `env` takes it.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The program and arguments of a hook command as nightwatch writes it (words split on
/// spaces; `env` and its `NAME=value` words kept apart): for `nightwatch doctor` to run it.
pub fn command_words(command: &str) -> (Vec<(String, String)>, Vec<String>) {
    let mut vars = Vec::new();
    let mut words = command.split_whitespace().peekable();
    if words
        .peek()
        .is_some_and(|w| *w == "env" || w.ends_with("/env"))
    {
        words.next();
    }
    while let Some(word) = words.peek() {
        if !is_assignment(word) {
            break;
        }
        if let Some((name, value)) = word.split_once('=') {
            vars.push((name.to_owned(), value.to_owned()));
        }
        words.next();
    }
    (vars, words.map(str::to_owned).collect())
}

fn shape(place: &str, found: &Value, expected: &'static str) -> HookError {
    HookError::Settings {
        place: place.to_string(),
        found: kind_of(found),
        expected,
    }
}

/// Whether a hook command runs nightwatch's hook (as nightwatch installs it, at any path).
pub fn runs_nightwatch(command: &str) -> bool {
    is_ours(&serde_json::json!({ "command": command }), "")
}
