//! A recorded call back to the core [`Tool`] it was decided as.
//!
//! A decision record keeps the core tool's name (`exec`, `read`, `mcp__github__create_issue`,
//! ...) and the agent's raw inputs, not the `Tool` itself. Replaying a record under another
//! policy needs that `Tool` again; this is the one place that rebuilds it, from the same input
//! fields the hook mappings in `tool.rs` read, so a replay judges what the hook judged.

use crate::tool::{mcp, patch_tool, shell_quote, urls_in};
use nightwatch_core::Tool;
use serde_json::Value;

/// The core [`Tool`] a recorded call (its tool name and inputs) was decided as, or `None`
/// when the inputs no longer say (a refusal of unreadable hook input, a field missing).
///
/// Searches and listings recorded without a directory were judged at the session's
/// directory; [`tool_from_record_in`] takes it from the record.
pub fn tool_from_record(tool: &str, inputs: &Value) -> Option<Tool> {
    tool_from_record_in(tool, inputs, None)
}

/// As [`tool_from_record`], with the recorded working directory (the record's `cwd`) for
/// reads whose inputs name no path.
pub fn tool_from_record_in(tool: &str, inputs: &Value, cwd: Option<&str>) -> Option<Tool> {
    // Every agent's tool input is an object; anything else is a refusal's raw text.
    let fields = inputs.as_object()?;
    let text = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.trim().is_empty())
    };
    let owned = |text: &str| Some(text.to_owned());
    match tool {
        "exec" => exec_line(fields.get("command").or_else(|| fields.get("cmd"))?)
            .map(|line| Tool::Exec { line }),
        "read" => {
            let single = match fields.get("paths") {
                Some(Value::Array(paths)) if paths.len() == 1 => paths[0].as_str(),
                _ => None,
            };
            let path = [
                "absolute_path",
                "file_path",
                "notebook_path",
                "path",
                "dir_path",
            ]
            .into_iter()
            .find_map(text)
            .or(single)
            .or(cwd)
            .or_else(|| text("pattern"))?;
            owned(path).map(|path| Tool::Read { path })
        }
        "write" | "edit" => {
            let path = match ["file_path", "notebook_path"].into_iter().find_map(text) {
                Some(path) => path.to_owned(),
                None => {
                    // Codex's apply_patch: the one file the patch touches.
                    let patch = ["command", "input", "patch"].into_iter().find_map(text)?;
                    patch_tool(patch).path()?.to_owned()
                }
            };
            Some(if tool == "write" {
                Tool::Write { path }
            } else {
                Tool::Edit { path }
            })
        }
        "fetch" => {
            let url = match text("url") {
                Some(url) => url.to_owned(),
                None => match urls_in(text("prompt")?).as_slice() {
                    [url] => (*url).to_owned(),
                    _ => return None,
                },
            };
            Some(Tool::Fetch { url })
        }
        "" => None,
        name if name.starts_with("mcp__") => mcp(name, inputs),
        name => Some(Tool::Named {
            name: name.to_owned(),
        }),
    }
}

/// A shell tool's command: a line, or argv (Codex, `nightwatch exec`) quoted back into one. A
/// blank one was decided as a line that runs nothing, and is rebuilt as one.
fn exec_line(command: &Value) -> Option<String> {
    match command {
        Value::String(line) => Some(line.clone()),
        Value::Array(argv) => Some(
            argv.iter()
                .map(|word| word.as_str().map(shell_quote))
                .collect::<Option<Vec<_>>>()?
                .join(" "),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Agent;
    use crate::tool::map_tool;
    use serde_json::json;

    /// Each row: an agent's tool call as its hook sends it. What the hook maps it to must come
    /// back from the recorded name and inputs, with the session's directory `/work`.
    const CALLS: &[(Agent, &str, &str)] = &[
        (
            Agent::Claude,
            "Bash",
            r#"{"command": "ls -la /srv", "description": "list"}"#,
        ),
        (
            Agent::Claude,
            "Write",
            r#"{"file_path": "/etc/motd", "content": "hi"}"#,
        ),
        (
            Agent::Claude,
            "Edit",
            r#"{"file_path": "/etc/app.yaml", "old_string": "a"}"#,
        ),
        (
            Agent::Claude,
            "MultiEdit",
            r#"{"file_path": "/etc/app.yaml", "edits": []}"#,
        ),
        (
            Agent::Claude,
            "NotebookEdit",
            r#"{"notebook_path": "/n.ipynb"}"#,
        ),
        (
            Agent::Claude,
            "Read",
            r#"{"file_path": "/var/log/syslog", "limit": 20}"#,
        ),
        (Agent::Claude, "Glob", r#"{"pattern": "**/*.rs"}"#),
        (
            Agent::Claude,
            "Grep",
            r#"{"pattern": "TODO", "path": "/srv/app"}"#,
        ),
        (Agent::Claude, "LS", r#"{"path": "/etc"}"#),
        (
            Agent::Claude,
            "WebFetch",
            r#"{"url": "https://example.com/a", "prompt": "x"}"#,
        ),
        (
            Agent::Claude,
            "mcp__github__create_issue",
            r#"{"title": "t"}"#,
        ),
        (
            Agent::Claude,
            "mcp__filesystem__move_file",
            r#"{"source": "a.txt", "destination": "/etc/cron.d/x"}"#,
        ),
        (Agent::Claude, "Bash", r#"{"command": "  "}"#),
        (Agent::Codex, "shell", r#"{"command": []}"#),
        (Agent::Claude, "Task", r#"{"prompt": "do it"}"#),
        (
            Agent::Codex,
            "shell",
            r#"{"command": ["bash", "-lc", "rm -rf /tmp/x"]}"#,
        ),
        (Agent::Codex, "exec_command", r#"{"cmd": "git status"}"#),
        (
            Agent::Codex,
            "apply_patch",
            r#"{"command": "*** Begin Patch\n*** Add File: /srv/new.txt\n+hi\n*** End Patch"}"#,
        ),
        (
            Agent::Codex,
            "apply_patch",
            r#"{"input": "*** Begin Patch\n*** Update File: /srv/a.txt\n@@\n-a\n+b\n*** End Patch"}"#,
        ),
        (
            Agent::Codex,
            "apply_patch",
            r#"{"patch": "*** Update File: /a\n*** Update File: /b\n"}"#,
        ),
        (
            Agent::Gemini,
            "run_shell_command",
            r#"{"command": "df -h"}"#,
        ),
        (
            Agent::Gemini,
            "write_file",
            r#"{"file_path": "/tmp/x", "content": "y"}"#,
        ),
        (
            Agent::Gemini,
            "replace",
            r#"{"file_path": "/tmp/x", "old_string": "a"}"#,
        ),
        (
            Agent::Gemini,
            "read_file",
            r#"{"absolute_path": "/etc/hosts"}"#,
        ),
        (Agent::Gemini, "list_directory", r#"{"dir_path": "/var"}"#),
        (Agent::Gemini, "glob", r#"{"pattern": "*.log"}"#),
        (
            Agent::Gemini,
            "read_many_files",
            r#"{"paths": ["/etc/passwd"]}"#,
        ),
        (
            Agent::Gemini,
            "read_many_files",
            r#"{"paths": ["/a", "/b"]}"#,
        ),
        (
            Agent::Gemini,
            "web_fetch",
            r#"{"prompt": "summarise https://example.com/x please"}"#,
        ),
        (
            Agent::Gemini,
            "web_fetch",
            r#"{"prompt": "compare https://a.example and https://b.example"}"#,
        ),
    ];

    #[test]
    fn a_recorded_call_rebuilds_the_tool_the_hook_decided() {
        for (agent, name, inputs) in CALLS {
            let inputs: Value = serde_json::from_str(inputs).expect("row input is JSON");
            let mapped = map_tool(*agent, name, &inputs, Some("/work"))
                .unwrap_or_else(|e| panic!("{agent} {name}: {e}"));
            let rebuilt = tool_from_record_in(&mapped.name(), &inputs, Some("/work"));
            assert_eq!(rebuilt.as_ref(), Some(&mapped), "{agent} {name} {inputs}");
        }
    }

    #[test]
    fn records_from_nightwatch_exec_and_other_actors_rebuild() {
        let rows = [
            (
                "exec",
                json!({"command": "uname -s", "argv": ["uname", "-s"]}),
                "exec uname -s",
            ),
            ("exec", json!({"command": ["rm", "a b"]}), "exec rm 'a b'"),
            (
                "remove_container",
                json!({"id": "c1"}),
                "named remove_container",
            ),
            ("mcp__pg__query", json!({}), "mcp pg/query"),
            ("read", json!({"pattern": "*.rs"}), "read *.rs"),
        ];
        for (tool, inputs, expected) in rows {
            let got = match tool_from_record(tool, &inputs) {
                Some(Tool::Exec { line }) => format!("exec {line}"),
                Some(Tool::Named { name }) => format!("named {name}"),
                Some(Tool::Mcp { server, tool, .. }) => format!("mcp {server}/{tool}"),
                Some(Tool::Read { path }) => format!("read {path}"),
                other => format!("{other:?}"),
            };
            assert_eq!(got, expected, "{tool} {inputs}");
        }
    }

    #[test]
    fn records_that_no_longer_say_what_ran_are_not_rebuilt() {
        let rows = [
            ("unknown", json!("{not json")),
            ("exec", json!({"description": "no command"})),
            ("exec", json!({"command": ["ls", 3]})),
            ("write", json!({"content": "where?"})),
            (
                "edit",
                json!({"patch": "*** Update File: /a\n*** Update File: /b\n"}),
            ),
            ("fetch", json!({"prompt": "no link here"})),
            ("read", json!({})),
            ("mcp__broken", json!({})),
            ("", json!({})),
            ("exec", Value::Null),
        ];
        for (tool, inputs) in rows {
            assert_eq!(tool_from_record(tool, &inputs), None, "{tool} {inputs}");
        }
    }
}
