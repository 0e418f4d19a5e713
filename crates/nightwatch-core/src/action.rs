use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// Who proposes to act.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActorKind {
    /// An AI agent session (Claude Code, Codex, Gemini CLI).
    Agent,
    /// A script or person going through `nightwatch exec`.
    Script,
    /// A human approving, rejecting or undoing.
    Human,
    /// nightwatch's sweeper of leftover containers, worktrees and paths.
    Janitor,
    /// nightwatch's alert-to-runbook dispatcher.
    Dispatcher,
    /// nightwatch's controller that suspends idle things.
    IdleController,
    /// nightwatch's watchers (drift, freshness, baselines, hazards, the memory guard).
    Watcher,
    /// A robot outside nightwatch (a backup job, a retrier, an autohealer) reporting its
    /// actions through the daemon's event API.
    Robot,
}

impl ActorKind {
    pub const ALL: [ActorKind; 8] = [
        ActorKind::Agent,
        ActorKind::Script,
        ActorKind::Human,
        ActorKind::Janitor,
        ActorKind::Dispatcher,
        ActorKind::IdleController,
        ActorKind::Watcher,
        ActorKind::Robot,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ActorKind::Agent => "agent",
            ActorKind::Script => "script",
            ActorKind::Human => "human",
            ActorKind::Janitor => "janitor",
            ActorKind::Dispatcher => "dispatcher",
            ActorKind::IdleController => "idle-controller",
            ActorKind::Watcher => "watcher",
            ActorKind::Robot => "robot",
        }
    }

    pub fn parse(text: &str) -> Option<ActorKind> {
        ActorKind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

impl fmt::Display for ActorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An actor: its kind, its id (`claude-code`, `janitor`, ...) and the trust tier it has earned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    pub kind: ActorKind,
    pub id: String,
    /// Trust tier (`observe`, `draft`, `nonprod`, `prod`, or the policy's own names).
    pub tier: Option<String>,
}

impl Actor {
    pub fn new(kind: ActorKind, id: impl Into<String>) -> Actor {
        Actor {
            kind,
            id: id.into(),
            tier: None,
        }
    }
}

/// What the actor proposes to use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Tool {
    /// Run a shell line.
    Exec { line: String },
    /// Read a file.
    Read { path: String },
    /// Create or overwrite a file.
    Write { path: String },
    /// Change part of a file.
    Edit { path: String },
    /// Fetch a URL.
    Fetch { url: String },
    /// Call a tool of an MCP server. `paths` are the file paths among its arguments (`path`,
    /// `file_path`, `source`, `destination`...), judged like a file tool's path.
    Mcp {
        server: String,
        tool: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        paths: Vec<String>,
    },
    /// Any other tool, decided by its name (`remove_container`, `run_runbook`, an agent's new tool).
    Named { name: String },
}

impl Tool {
    /// The name that policy's `tool:` patterns match against.
    pub fn name(&self) -> Cow<'_, str> {
        match self {
            Tool::Exec { .. } => Cow::Borrowed("exec"),
            Tool::Read { .. } => Cow::Borrowed("read"),
            Tool::Write { .. } => Cow::Borrowed("write"),
            Tool::Edit { .. } => Cow::Borrowed("edit"),
            Tool::Fetch { .. } => Cow::Borrowed("fetch"),
            Tool::Mcp { server, tool, .. } => Cow::Owned(format!("mcp__{server}__{tool}")),
            Tool::Named { name } => Cow::Borrowed(name),
        }
    }

    /// The file this tool reads or changes, for file tools.
    pub fn path(&self) -> Option<&str> {
        match self {
            Tool::Read { path } | Tool::Write { path } | Tool::Edit { path } => Some(path),
            _ => None,
        }
    }
}

/// Why and where an action happens.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Context {
    pub session: Option<String>,
    pub triggered_by: Option<String>,
    pub alert_id: Option<String>,
    pub task: Option<String>,
    /// The host the action runs on (the machine's name unless configured).
    pub host: Option<String>,
    /// Minutes since local midnight when the action was proposed, for time-of-day rules.
    /// Set by the edge that owns the clock; the core never reads one.
    pub minute_of_day: Option<u16>,
}

/// One proposal: an actor wants to use a tool, in a context.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    pub actor: Actor,
    pub tool: Tool,
    pub context: Context,
}

impl Action {
    pub fn new(actor: Actor, tool: Tool) -> Action {
        Action {
            actor,
            tool,
            context: Context::default(),
        }
    }

    /// An agent running one shell line: the most common action, and the one tests use most.
    pub fn exec(line: impl Into<String>) -> Action {
        Action::new(
            Actor::new(ActorKind::Agent, "agent"),
            Tool::Exec { line: line.into() },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_tools_are_named_like_claude_names_them() {
        let tool = Tool::Mcp {
            server: "github".into(),
            tool: "create_issue".into(),
            paths: Vec::new(),
        };
        assert_eq!(tool.name(), "mcp__github__create_issue");
    }

    #[test]
    fn actor_kinds_round_trip() {
        for kind in ActorKind::ALL {
            assert_eq!(ActorKind::parse(kind.as_str()), Some(kind));
        }
    }
}
