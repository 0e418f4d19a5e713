//! What the ledger holds: an [`Entry`] is what a caller hands in, a [`Record`] is what the store
//! keeps (the entry, redacted and capped, plus its id, sequence number and hash chain).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kinds of step a record can be. The field is free text so later steps (undo, sweep, ...)
/// need no schema change; these are the ones written today.
pub mod event {
    /// A verdict given before an action ran.
    pub const DECISION: &str = "decision";
    /// The result of an action, joined to its decision by the call id.
    pub const RESULT: &str = "result";
    /// A result whose call id has no recorded decision: the hook was bypassed or missing.
    pub const UNGUARDED_RESULT: &str = "unguarded-result";
    pub const SESSION_START: &str = "session-start";
    pub const STOP: &str = "stop";
    pub const SESSION_END: &str = "session-end";
    /// A human placed an agent in a trust tier: inputs `{agent, tier, why}`.
    pub const TRUST: &str = "trust";
    /// A human let one asked call through: inputs `{record, fingerprint, expires_ms, why}`.
    pub const APPROVAL: &str = "approval";
    /// A human refused an asked call: inputs `{record, fingerprint, why}`.
    pub const REJECTION: &str = "rejection";
    /// The agent declined a call it had asked about (a person said no at its prompt, or its
    /// own classifier did): the call closed without running. Joined to its decision by the
    /// call id; the tool's input in `inputs`, the agent's reason in `reasons`.
    pub const DECLINED: &str = "declined";
    /// A record's changes were restored from its backup: inputs `{record, snapshot}`.
    pub const UNDO: &str = "undo";
    /// An escalation sent (or not) to one notifier: inputs `{record, notifier}`; every
    /// attempt in `safeguards.delivery`.
    pub const NOTIFICATION: &str = "notification";
    /// Backups removed by retention, and those kept because an undo may still need them.
    pub const BACKUP_PRUNED: &str = "backup-pruned";
    /// The janitor left something in place: inputs `{kind, id, name}`, why in `reasons`.
    pub const SWEEP_KEEP: &str = "sweep-keep";
    /// `sweep plan` decided an item, nothing done yet: inputs `{kind, id, name, decision}`
    /// (`keep` or `remove`), why in `reasons`.
    pub const SWEEP_PLAN: &str = "sweep-plan";
    /// The janitor stopped trying to remove something after repeated failures.
    pub const QUARANTINED: &str = "quarantined";
    /// A scheduled sweep that could not run at all; why in `reasons`.
    pub const SWEEP_FAILED: &str = "sweep-failed";
    /// A worker caught a panic while handling a task; the task is retried or given up.
    pub const INTERNAL_ERROR: &str = "internal-error";
    /// A host declined a job that runs in one place only: inputs `{job, holder, until_ms}`
    /// (who holds its lease, until when, when known), why in `reasons`.
    pub const STOOD_DOWN: &str = "stood-down";
    /// A job that runs in one place only started here: inputs `{job, holder, token,
    /// until_ms}` (its lease).
    pub const SINGLETON_START: &str = "singleton-start";
    /// That job ended: inputs `{job, holder, token}`, how it went and what became of its
    /// lease in `reasons`.
    pub const SINGLETON_END: &str = "singleton-end";
    /// The idle controller's word on an app: a state flip (`awake`, `asleep`, `half-awake`,
    /// `quarantined`, ...) or what holds it awake. Inputs `{app, from, to, ...}` (the last
    /// person's request, the robots seen, the signals on), why in `reasons`.
    pub const IDLE: &str = "idle";
    /// A watcher's word on a subject: inputs `{watcher, kind, subject, seen, runs, ...}`
    /// (`seen`: ok, found or unknown; `runs`: the runs this record stands for, when it rolls
    /// up unchanged ones), the summary in `reasons`.
    pub const WATCH: &str = "watch";

    /// Every name this version writes, so a reader can tell a known event from a later one.
    pub const ALL: &[&str] = &[
        DECISION,
        RESULT,
        UNGUARDED_RESULT,
        SESSION_START,
        STOP,
        SESSION_END,
        TRUST,
        APPROVAL,
        REJECTION,
        DECLINED,
        UNDO,
        NOTIFICATION,
        BACKUP_PRUNED,
        SWEEP_KEEP,
        SWEEP_PLAN,
        QUARANTINED,
        SWEEP_FAILED,
        INTERNAL_ERROR,
        DISPATCH,
        STOOD_DOWN,
        SINGLETON_START,
        SINGLETON_END,
        IDLE,
        WATCH,
    ];
    /// What `nightwatch serve` did with an alert or its task: inputs `{disposition, alert_id,
    /// route, task, ...}`, why in `reasons` (routed, deduplicated, no route, ran, failed, ...).
    pub const DISPATCH: &str = "dispatch";
}

/// Who acted: an actor kind (`agent`, `script`, `janitor`, ...) and its id (`claude-code`, ...).
///
/// Kept as text rather than [`nightwatch_core::ActorKind`] so that records written by a later
/// version with a new kind of actor stay readable.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordActor {
    pub kind: String,
    pub id: String,
}

impl From<&nightwatch_core::Actor> for RecordActor {
    fn from(actor: &nightwatch_core::Actor) -> RecordActor {
        RecordActor {
            kind: actor.kind.as_str().to_string(),
            id: actor.id.clone(),
        }
    }
}

/// What an action produced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outputs {
    pub exit_code: Option<i64>,
    pub stdout: String,
    pub stderr: String,
}

/// Why and where the step happened (seed 004's `context`, plus the task).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordContext {
    pub triggered_by: Option<String>,
    pub alert_id: Option<String>,
    pub host: Option<String>,
    pub task: Option<String>,
}

/// What a caller appends. The store assigns `id`, `seq`, `prev_hash` and `hash`, redacts secrets
/// (adding their kinds to `redacted`) and caps `stdout`/`stderr`.
///
/// The caller supplies `timestamp_ms` (unix milliseconds): the ledger reads no clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// One of [`event`]'s names, or a later free-form one.
    pub event: String,
    pub timestamp_ms: i64,
    pub session_id: Option<String>,
    pub actor: RecordActor,
    /// The tool's name (`exec`, `write`, `mcp__github__create_issue`, `remove_container`, ...).
    pub tool: String,
    /// The tool's inputs as the agent or actor gave them.
    pub inputs: Value,
    pub outputs: Option<Outputs>,
    pub context: RecordContext,
    pub duration_ms: Option<u64>,
    /// `allow`, `ask`, `halt`, `deny` for decisions; `None` for results and session events.
    pub verdict: Option<String>,
    /// The policy rule that decided.
    pub rule: Option<String>,
    pub reasons: Vec<String>,
    /// The agent's id for the call (Claude's `tool_use_id`), joining a decision to its result.
    pub call_id: Option<String>,
    /// Kinds of secret already removed by the caller; the store adds the ones it removes.
    pub redacted: Vec<String>,
    pub cwd: Option<String>,
    /// What guarded the action beside policy: the pre-flight checks that ran and what they
    /// found, the backup taken before a write, the approval that let an ask through.
    pub safeguards: Option<Value>,
}

impl Entry {
    /// An entry for `event` by `actor` using `tool` at `timestamp_ms`; everything else empty.
    pub fn new(
        event: impl Into<String>,
        timestamp_ms: i64,
        actor: RecordActor,
        tool: impl Into<String>,
    ) -> Entry {
        Entry {
            event: event.into(),
            timestamp_ms,
            actor,
            tool: tool.into(),
            inputs: Value::Null,
            ..Entry::default()
        }
    }
}

/// One step in the ledger. Never updated: a result is a new record joined by `call_id`.
///
/// Serialises (for `--json` and `export --format jsonl`) with `timestamp` as RFC 3339 UTC text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// `r` followed by `seq` in decimal (`r42`): unique, stable, and readable in a terminal.
    pub id: String,
    /// 1, 2, 3, ... with no gaps.
    pub seq: u64,
    pub event: String,
    #[serde(rename = "timestamp", with = "timestamp_text")]
    pub timestamp_ms: i64,
    pub session_id: Option<String>,
    pub actor: RecordActor,
    pub tool: String,
    pub inputs: Value,
    pub outputs: Option<Outputs>,
    pub context: RecordContext,
    pub duration_ms: Option<u64>,
    pub verdict: Option<String>,
    pub rule: Option<String>,
    pub reasons: Vec<String>,
    pub call_id: Option<String>,
    /// Kinds of secret removed before storage (`github-token`, `url-password`, ...), sorted.
    pub redacted: Vec<String>,
    pub cwd: Option<String>,
    /// Checks, backup and approval (see [`Entry::safeguards`]); absent when there were none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safeguards: Option<Value>,
    /// The previous record's `hash`; 64 zeros for the first record.
    pub prev_hash: String,
    /// SHA-256, lowercase hex, of the record's canonical encoding (see the crate docs).
    pub hash: String,
}

impl Record {
    /// The id a record with this sequence number gets.
    pub fn id_for(seq: u64) -> String {
        format!("r{seq}")
    }

    /// What the call acted on: its command, else the file, path, URL, name or idle app its
    /// inputs give.
    pub fn target(&self) -> Option<&str> {
        [
            "command",
            "file_path",
            "notebook_path",
            "path",
            "url",
            "name",
            "app",
        ]
        .iter()
        .find_map(|key| self.inputs.get(key).and_then(serde_json::Value::as_str))
    }

    /// The call in one line for people: the command of an exec, else the tool and its target,
    /// else the tool; newlines flattened, at most 100 characters.
    pub fn what(&self) -> String {
        let text = match self.target() {
            Some(target) if self.tool == "exec" => target.to_owned(),
            Some(target) => format!("{} {target}", self.tool),
            None => self.tool.clone(),
        };
        let flat: String = text
            .chars()
            .map(|c| if c == '\n' { ' ' } else { c })
            .collect();
        if flat.chars().count() > 100 {
            format!("{}...", flat.chars().take(97).collect::<String>())
        } else {
            flat
        }
    }

    /// The RFC 3339 UTC text of the record's timestamp.
    pub fn timestamp_text(&self) -> String {
        nightwatch_time::rfc3339(self.timestamp_ms)
    }

    /// The SHA-256 this record's fields (all but `hash`) should have, in lowercase hex.
    pub fn expected_hash(&self) -> String {
        let mut buf = Vec::with_capacity(512);
        crate::canonical::encode_record(self, &mut buf);
        crate::canonical::sha256_hex(&buf)
    }
}

mod timestamp_text {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(ms: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&nightwatch_time::rfc3339(*ms))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        let text = String::deserialize(d)?;
        nightwatch_time::parse_rfc3339(&text)
            .ok_or_else(|| D::Error::custom(format!("not an RFC 3339 timestamp: {text:?}")))
    }
}

/// Which records a store's `query` (`nightwatch_store::LedgerReader::query`) returns. Every
/// set field must match; results come in `seq` order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Records at or after this time (unix milliseconds).
    pub since_ms: Option<i64>,
    /// Records strictly before this time (unix milliseconds).
    pub until_ms: Option<i64>,
    pub session: Option<String>,
    /// Matches the actor's kind or its id.
    pub actor: Option<String>,
    pub verdict: Option<String>,
    pub tool: Option<String>,
    /// Matches `context.alert_id`.
    pub alert: Option<String>,
    pub event: Option<String>,
    /// Records after this sequence number: a cursor that reads only what is new.
    pub after_seq: Option<u64>,
    /// Records before this sequence number: the cursor of pages read newest first.
    pub before_seq: Option<u64>,
    /// Keep only the most recent `limit` matching records (still returned in `seq` order).
    pub limit: Option<usize>,
}
