//! What Codex needs beyond the hook wire format: the trust it requires before it runs a hook,
//! and the exit code it leaves out of its `PostToolUse` input.
//!
//! Codex 0.163 runs a user or project hook only when `[hooks.state."KEY"] trusted_hash` in the
//! user's `config.toml` equals the hash of the hook as it is now (its `/hooks` review writes
//! them); an untrusted or changed hook is skipped without a word, also by `codex exec`. KEY is
//! `<absolute path of the hooks file>:<event label>:<group index>:<handler index>`, and the hash
//! is `sha256:` and the hex SHA-256 of a normalised identity of the hook (its event label,
//! matcher and handler, not its file), encoded as JSON with sorted keys and no spaces.

use crate::Agent;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// One hook of nightwatch's in a Codex hooks file: where Codex keeps its trust, and the hash
/// that trusts it as it is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodexHookTrust {
    /// `hooks.state`'s key.
    pub key: String,
    /// `trusted_hash`'s value.
    pub hash: String,
    /// The event as the file names it (`PreToolUse`).
    pub event: String,
}

/// The trust entries for every nightwatch handler in `settings`, a Codex hooks file at the
/// absolute path `hooks_file`.
pub fn codex_hook_trust(hooks_file: &str, settings: &Value) -> Vec<CodexHookTrust> {
    let mut found = Vec::new();
    let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
        return found;
    };
    for (event, groups) in events {
        let Some(label) = event_label(event) else {
            continue;
        };
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers.into_iter().flatten().enumerate() {
                if !crate::settings::is_ours(handler, "") {
                    continue;
                }
                found.push(CodexHookTrust {
                    key: format!("{hooks_file}:{label}:{g}:{h}"),
                    hash: hook_hash(event, label, group.get("matcher"), handler),
                    event: event.clone(),
                });
            }
        }
    }
    found
}

/// Codex's snake-case label of an event it knows; `None` for names it ignores.
fn event_label(event: &str) -> Option<&'static str> {
    Some(match event {
        "PreToolUse" => "pre_tool_use",
        "PermissionRequest" => "permission_request",
        "PostToolUse" => "post_tool_use",
        "PreCompact" => "pre_compact",
        "PostCompact" => "post_compact",
        "SessionStart" => "session_start",
        "SessionEnd" => "session_end",
        "UserPromptSubmit" => "user_prompt_submit",
        "SubagentStart" => "subagent_start",
        "SubagentStop" => "subagent_stop",
        "Stop" => "stop",
        "Interrupt" => "interrupt",
        _ => return None,
    })
}

/// The hash Codex compares `trusted_hash` with, for a command handler.
fn hook_hash(event: &str, label: &str, matcher: Option<&Value>, handler: &Value) -> String {
    // Codex ignores these events' matchers, in the hash too.
    let matcher = match event {
        "UserPromptSubmit" | "Stop" | "Interrupt" => None,
        _ => matcher.and_then(Value::as_str),
    };
    // Its normal form of the timeout: 600 s when unset, at least 1; SessionEnd and Interrupt
    // hooks get 1 s when unset and 3 s at most.
    let given = handler.get("timeout").and_then(Value::as_u64);
    let timeout = match event {
        "SessionEnd" | "Interrupt" => given.unwrap_or(1).clamp(1, 3),
        _ => given.unwrap_or(600).max(1),
    };
    let mut normal = Map::new();
    normal.insert("type".into(), "command".into());
    normal.insert(
        "command".into(),
        handler.get("command").cloned().unwrap_or_default(),
    );
    normal.insert("timeout".into(), timeout.into());
    normal.insert(
        "async".into(),
        handler
            .get("async")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            .into(),
    );
    if let Some(message) = handler.get("statusMessage").and_then(Value::as_str) {
        normal.insert("statusMessage".into(), message.into());
    }
    let mut identity = Map::new();
    identity.insert("event_name".into(), label.into());
    if let Some(matcher) = matcher {
        identity.insert("matcher".into(), matcher.into());
    }
    identity.insert("hooks".into(), Value::Array(vec![Value::Object(normal)]));
    let mut text = String::new();
    canonical(&Value::Object(identity), &mut text);
    format!("sha256:{:x}", Sha256::digest(text.as_bytes()))
}

/// Compact JSON with every object's keys sorted, non-ASCII text as it is: Codex's encoding.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            out.push('{');
            for (n, key) in keys.into_iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                canonical(&fields[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The exit code Codex wrote for call `call_id` in its session transcript (the rollout file
/// its hook input names as `transcript_path`): the `CommandExecution` item completed with that
/// id. Codex's `PostToolUse` input for a shell call carries only the output, so this is where
/// the exit code is proven; `None` when the transcript does not say.
pub fn codex_exit_code(transcript: &str, call_id: &str) -> Option<i32> {
    // The newest line for the call wins; a line that is not JSON (one being written) is skipped.
    transcript
        .lines()
        .rev()
        .filter(|line| line.contains(call_id) && line.contains("exit_code"))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|line| {
            let item = &line["payload"]["item"];
            (item["type"] == "CommandExecution" && item["id"] == call_id)
                .then(|| item["exit_code"].as_i64())
                .flatten()
                .and_then(|code| i32::try_from(code).ok())
        })
}

/// Whether `agent` requires a hook's trust before it runs it.
pub fn requires_trust(agent: Agent) -> bool {
    agent == Agent::Codex
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Pinned to the `currentHash` that Codex 0.163's own `hooks/list` reported for this hook
    /// (and `trustStatus: trusted` once that hash was written under this key).
    #[test]
    fn the_trust_hash_is_the_one_codex_computes() {
        let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "/usr/local/bin/nightwatch hook codex", "timeout": 30}
        ]}]}});
        let trust = codex_hook_trust("/h/hooks.json", &settings);
        assert_eq!(trust.len(), 1);
        assert_eq!(trust[0].key, "/h/hooks.json:pre_tool_use:0:0");
        let mut other = settings.clone();
        other["hooks"]["PreToolUse"][0]["hooks"][0]["command"] =
            json!("/usr/local/bin/policy-hook");
        other["hooks"]["PreToolUse"][0]["hooks"][0]["other"] = json!("kept out of the hash");
        // is_ours() only lists nightwatch's handlers, so hash the other one directly.
        assert_eq!(
            hook_hash(
                "PreToolUse",
                "pre_tool_use",
                Some(&json!("Bash")),
                &other["hooks"]["PreToolUse"][0]["hooks"][0]
            ),
            "sha256:38fc73208f79db231f1923f9a69112c3fda889b3a2989dc188290b983fa5c08d"
        );
    }

    #[test]
    fn matchers_codex_ignores_and_its_timeout_bounds_are_hashed_as_codex_does() {
        let hook = |event: &str, matcher: Value, timeout: u64| {
            let settings = json!({"hooks": {event: [{"matcher": matcher, "hooks": [
                {"type": "command", "command": "nightwatch hook codex", "timeout": timeout}
            ]}]}});
            codex_hook_trust("/f", &settings)[0].hash.clone()
        };
        assert_eq!(hook("Stop", json!("*"), 30), hook("Stop", json!("x"), 30));
        assert_ne!(
            hook("PreToolUse", json!("*"), 30),
            hook("PreToolUse", json!("x"), 30)
        );
        assert_eq!(
            hook("SessionEnd", json!("*"), 30),
            hook("SessionEnd", json!("*"), 3)
        );
        assert_ne!(
            hook("SessionEnd", json!("*"), 2),
            hook("SessionEnd", json!("*"), 3)
        );
    }

    #[test]
    fn only_nightwatch_handlers_are_listed_with_their_places() {
        let settings = json!({"hooks": {
            "PreToolUse": [
                {"matcher": "*", "hooks": [{"type": "command", "command": "other-guard"}]},
                {"matcher": "*", "hooks": [
                    {"type": "command", "command": "other"},
                    {"type": "command", "command": "/bin/nightwatch hook codex"}
                ]}
            ],
            "Notification": [{"hooks": [{"type": "command", "command": "nightwatch hook codex"}]}]
        }});
        let keys: Vec<String> = codex_hook_trust("/c/hooks.json", &settings)
            .into_iter()
            .map(|t| t.key)
            .collect();
        assert_eq!(keys, ["/c/hooks.json:pre_tool_use:1:1"]);
    }

    #[test]
    fn exit_codes_are_read_from_the_transcript_line_of_that_call() {
        let transcript = [
            r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"call_0","exit_code":0}}}"#,
            r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"call_1","exit_code":3}}}"#,
            r#"{"type":"event_msg","payload":{"type":"item_comp"#,
        ]
        .join("\n");
        assert_eq!(codex_exit_code(&transcript, "call_0"), Some(0));
        assert_eq!(codex_exit_code(&transcript, "call_1"), Some(3));
        assert_eq!(codex_exit_code(&transcript, "call_2"), None);
        assert_eq!(codex_exit_code("not json\n", "call_0"), None);
    }
}
