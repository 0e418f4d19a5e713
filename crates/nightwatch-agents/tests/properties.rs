//! Property tests: nothing here panics on any input, and every refusal exits 2 with a reason.
//!
//! Raise the case count with `PROPTEST_CASES=10000 cargo test -p nightwatch-agents --test
//! properties`.

use nightwatch_agents::{
    Agent, HookEvent, install_hooks, parse_event, reply_to_decision, reply_to_failure,
};
use nightwatch_core::Verdict;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn agent() -> impl Strategy<Value = Agent> {
    prop::sample::select(Agent::ALL.to_vec())
}

fn verdict() -> impl Strategy<Value = Verdict> {
    prop::sample::select(Verdict::ALL.to_vec())
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,40}".prop_map(Value::String),
        Just(json!("*** Add File: a\n*** Update File: b")),
        Just(json!("see https://example.com and http://x")),
        Just(json!("file:///etc/passwd")),
        Just(json!("://")),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(field_name(), inner, 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// Field names the parser looks at, and others.
fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "command",
            "cmd",
            "file_path",
            "absolute_path",
            "notebook_path",
            "path",
            "paths",
            "filePath",
            "source",
            "files",
            "edits",
            "include",
            "pattern",
            "url",
            "prompt",
            "stdout",
            "stderr",
            "error",
            "llmContent",
            "exit_code",
            "interrupted",
            "message",
            "text",
        ])
        .prop_map(str::to_string),
        "[a-z_]{1,12}",
    ]
}

/// A hook input shaped like the real ones, with random parts.
fn hook_input() -> impl Strategy<Value = Value> {
    let event = prop::sample::select(vec![
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "BeforeTool",
        "AfterTool",
        "SessionStart",
        "Stop",
        "",
    ]);
    let tool = prop::sample::select(vec![
        "Bash",
        "Write",
        "Edit",
        "MultiEdit",
        "NotebookEdit",
        "Read",
        "Glob",
        "Grep",
        "LS",
        "WebFetch",
        "shell",
        "local_shell",
        "exec_command",
        "apply_patch",
        "run_shell_command",
        "write_file",
        "replace",
        "read_file",
        "read_many_files",
        "glob",
        "search_file_content",
        "web_fetch",
        "mcp__a__b",
        "mcp__",
        "mcp____",
        "",
    ]);
    (
        prop::option::of(event),
        prop::option::of(tool),
        json_value(),
        json_value(),
        json_value(),
        json_value(),
    )
        .prop_map(|(event, tool, inputs, response, error, cwd)| {
            let mut fields = Map::new();
            if let Some(event) = event {
                fields.insert("hook_event_name".into(), event.into());
            }
            if let Some(tool) = tool {
                fields.insert("tool_name".into(), tool.into());
            }
            fields.insert("tool_input".into(), inputs);
            fields.insert("tool_response".into(), response);
            fields.insert("error".into(), error);
            fields.insert("cwd".into(), cwd);
            Value::Object(fields)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parse_event_never_panics_on_bytes(agent in agent(), bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_event(agent, &bytes);
    }

    #[test]
    fn parse_event_never_panics_on_hook_shaped_json(agent in agent(), input in hook_input()) {
        let bytes = serde_json::to_vec(&input).expect("serialises");
        if let Ok(event) = parse_event(agent, &bytes) {
            // A tool call is never mistaken for something only to record.
            let event_name = input.get("hook_event_name").and_then(Value::as_str);
            if matches!(event_name, Some("PreToolUse" | "BeforeTool" | "") | None) {
                prop_assert!(matches!(event, HookEvent::BeforeTool { .. }), "{:?}", event);
            }
        }
    }

    #[test]
    fn every_refusal_exits_2_with_a_reason(
        agent in agent(),
        verdict in verdict(),
        reason in ".{0,80}",
        instead in prop::option::of(".{0,40}"),
    ) {
        let reply = reply_to_decision(agent, verdict, &reason, instead.as_deref());
        if !reply.stdout.is_empty() {
            prop_assert!(serde_json::from_str::<Value>(&reply.stdout).is_ok());
        }
        let allowed = verdict == Verdict::Allow || (agent == Agent::Claude && verdict == Verdict::Ask);
        if allowed {
            prop_assert_eq!(reply.exit_code, 0);
        } else {
            prop_assert_eq!(reply.exit_code, 2);
            prop_assert!(!reply.stderr.trim().is_empty());
        }
        let failure = reply_to_failure(agent, &reason);
        prop_assert_eq!(failure.exit_code, 2);
        prop_assert!(!failure.stderr.trim().is_empty());
    }

    #[test]
    fn install_hooks_never_panics_and_is_idempotent(agent in agent(), settings in json_value()) {
        let command = format!("nightwatch hook {agent}");
        if let Ok(once) = install_hooks(agent, settings, &command) {
            let twice = install_hooks(agent, once.clone(), &command).expect("a merged document merges again");
            prop_assert_eq!(once, twice);
        }
    }
}
