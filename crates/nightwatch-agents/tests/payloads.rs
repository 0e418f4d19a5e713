//! Every payload in the shared folder, as each agent sends it: parsed into the expected event,
//! and answered in the shape the agent's protocol documents.

use nightwatch_agents::{
    Agent, HookEvent, ToolOutcome, install_hooks, parse_event, reply_to_decision, reply_to_failure,
    reply_to_record,
};
use nightwatch_core::{Tool, Verdict};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn payloads() -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/payloads"
    ))
    .to_path_buf()
}

fn read(agent: &str, file: &str) -> Vec<u8> {
    let path = payloads().join(agent).join(file);
    std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// What a payload must parse into.
enum Expect {
    Before {
        call_id: Option<&'static str>,
        session: &'static str,
        cwd: &'static str,
        tool_name: &'static str,
        tool: Tool,
    },
    After {
        call_id: Option<&'static str>,
        session: &'static str,
        tool_name: &'static str,
        tool: Tool,
        outcome: ToolOutcome,
    },
    Lifecycle {
        name: &'static str,
        session: &'static str,
        detail: (&'static str, Value),
    },
    /// A call the agent declined after asking: it closes without running.
    Declined {
        call_id: &'static str,
        session: &'static str,
        tool: Tool,
        reason: &'static str,
    },
    /// Not a hook input (the settings example).
    Skip,
}

fn exec(line: &str) -> Tool {
    Tool::Exec { line: line.into() }
}

fn expected(agent: &str, file: &str) -> Expect {
    match (agent, file) {
        ("claude", "pre-bash.json") => Expect::Before {
            call_id: Some("toolu_01ABC123"),
            session: "sess_2a9f3b",
            cwd: "/opt/agent",
            tool_name: "Bash",
            tool: exec("journalctl --vacuum-time=7d --unit=app-worker"),
        },
        ("claude", "pre-bash-compound.json") => Expect::Before {
            call_id: Some("toolu_01DEF456"),
            session: "sess_2a9f3b",
            cwd: "/opt/agent",
            tool_name: "Bash",
            tool: exec("cd /srv/app && docker compose up -d postgres"),
        },
        ("claude", "pre-edit.json") => Expect::Before {
            call_id: Some("toolu_01JKL012"),
            session: "sess_2a9f3b",
            cwd: "/opt/agent",
            tool_name: "Edit",
            tool: Tool::Edit {
                path: "/opt/agent/app.conf".into(),
            },
        },
        ("claude", "pre-mcp.json") => Expect::Before {
            call_id: Some("toolu_8934790812cb478dac267d86"),
            session: "de97d7d4-226c-4380-9ebf-85b6a4afd64f",
            cwd: "/opt/agent",
            tool_name: "mcp__postgres__query",
            tool: Tool::Mcp {
                server: "postgres".into(),
                tool: "query".into(),
                paths: vec![],
            },
        },
        ("claude", "pre-read.json") => Expect::Before {
            call_id: Some("toolu_01MNO345"),
            session: "sess_2a9f3b",
            cwd: "/opt/agent",
            tool_name: "Read",
            tool: Tool::Read {
                path: "/opt/agent/README.md".into(),
            },
        },
        ("claude", "pre-write.json") => Expect::Before {
            call_id: Some("toolu_01GHI789"),
            session: "sess_2a9f3b",
            cwd: "/opt/agent",
            tool_name: "Write",
            tool: Tool::Write {
                path: "/opt/agent/app.conf".into(),
            },
        },
        ("claude", "post-bash.json") => Expect::After {
            call_id: Some("toolu_01ABC123"),
            session: "sess_2a9f3b",
            tool_name: "Bash",
            tool: exec("journalctl --vacuum-time=7d --unit=app-worker"),
            outcome: ToolOutcome {
                exit_code: Some(0),
                // Claude Code trims the command's output: no newline at the end.
                stdout:
                    "Vacuuming done, freed 4.2G of archived journals from /var/log/journal/3f2e."
                        .into(),
                stderr: String::new(),
                failed: false,
                interrupted: false,
                duration_ms: Some(847),
            },
        },
        ("claude", "post-bash-failure.json") => Expect::After {
            call_id: Some("toolu_01STU901"),
            session: "sess_2a9f3b",
            tool_name: "Bash",
            tool: exec("systemctl restart app-worker"),
            outcome: ToolOutcome {
                exit_code: Some(3),
                stdout: String::new(),
                stderr: "Exit code 3\nFailed to restart app-worker.service: Access denied".into(),
                failed: true,
                interrupted: false,
                duration_ms: Some(16),
            },
        },
        ("claude", "post-mcp.json") => Expect::After {
            call_id: Some("toolu_8934790812cb478dac267d86"),
            session: "de97d7d4-226c-4380-9ebf-85b6a4afd64f",
            tool_name: "mcp__postgres__query",
            tool: Tool::Mcp {
                server: "postgres".into(),
                tool: "query".into(),
                paths: vec![],
            },
            // Claude Code sends an MCP result as the server's content array: its text parts.
            outcome: ToolOutcome {
                exit_code: None,
                stdout: "pid | age | query\n(0 rows)".into(),
                stderr: String::new(),
                failed: false,
                interrupted: false,
                duration_ms: Some(6),
            },
        },
        ("claude", "session-start.json") => Expect::Lifecycle {
            name: "SessionStart",
            session: "sess_2a9f3b",
            detail: ("source", json!("startup")),
        },
        ("claude", "user-prompt-submit.json") => Expect::Lifecycle {
            name: "UserPromptSubmit",
            session: "sess_2a9f3b",
            detail: ("prompt", json!("go")),
        },
        ("claude", "stop.json") => Expect::Lifecycle {
            name: "Stop",
            session: "sess_2a9f3b",
            detail: ("stop_hook_active", json!(false)),
        },
        ("claude", "session-end.json") => Expect::Lifecycle {
            name: "SessionEnd",
            session: "sess_2a9f3b",
            detail: ("reason", json!("other")),
        },
        ("claude", "permission-denied.json") => Expect::Declined {
            call_id: "toolu_40fe66dcecda44318d795b4f",
            session: "5d4f49cc-1fc1-4392-a10f-fc9ce3ae3e57",
            tool: exec("python3 -c \"print(42)\""),
            reason: "Classifier unavailable",
        },
        ("claude", "settings-example.json") => Expect::Skip,
        ("codex", "pre-bash.json") => Expect::Before {
            call_id: Some("call_scripted_2"),
            session: "01a245c8-21e4-7a60-b7f5-943e610b372a",
            cwd: "/home/dev/project",
            tool_name: "Bash",
            tool: exec("bash -lc 'git status && git push --force origin main'"),
        },
        ("codex", "pre-apply-patch.json") => Expect::Before {
            call_id: Some("call_0"),
            session: "01a245c5-f69a-7221-bbc9-f8500a9c373e",
            cwd: "/home/dev/project",
            tool_name: "apply_patch",
            // The patch names the file relative to the session's cwd, and so does the tool.
            tool: Tool::Write {
                path: "notes.txt".into(),
            },
        },
        ("codex", "pre-mcp.json") => Expect::Before {
            call_id: Some("call_2"),
            session: "01a245c5-db95-7ef1-a8a3-8a8ce24b71fa",
            cwd: "/home/dev/project",
            tool_name: "mcp__demo__echo",
            tool: Tool::Mcp {
                server: "demo".into(),
                tool: "echo".into(),
                paths: vec![],
            },
        },
        // Codex's shell result is the command's output alone: the exit code is in the
        // transcript, which `nightwatch hook` reads, not in the payload.
        ("codex", "post-bash.json") => Expect::After {
            call_id: Some("call_scripted_0"),
            session: "01a245c8-21e4-7a60-b7f5-943e610b372a",
            tool_name: "Bash",
            tool: exec("echo hello"),
            outcome: ToolOutcome {
                stdout: "hello\n".into(),
                ..ToolOutcome::default()
            },
        },
        ("codex", "post-bash-failure.json") => Expect::After {
            call_id: Some("call_scripted_1"),
            session: "01a245c8-21e4-7a60-b7f5-943e610b372a",
            tool_name: "Bash",
            tool: exec("echo failing >&2; exit 3"),
            outcome: ToolOutcome {
                stdout: "failing\n".into(),
                ..ToolOutcome::default()
            },
        },
        ("codex", "permission-request.json") => Expect::Lifecycle {
            name: "PermissionRequest",
            session: "01a245c5-fc78-7ff2-9878-a4dad2038fb1",
            detail: ("tool_name", json!("Bash")),
        },
        ("codex", "session-start.json") => Expect::Lifecycle {
            name: "SessionStart",
            session: "01a245c8-21e4-7a60-b7f5-943e610b372a",
            detail: ("source", json!("startup")),
        },
        ("codex", "user-prompt-submit.json") => Expect::Lifecycle {
            name: "UserPromptSubmit",
            session: "01a245c8-21e4-7a60-b7f5-943e610b372a",
            detail: ("prompt", json!("go")),
        },
        ("codex", "stop.json") => Expect::Lifecycle {
            name: "Stop",
            session: "01a245c8-21e4-7a60-b7f5-943e610b372a",
            detail: ("stop_hook_active", json!(false)),
        },
        ("codex", "session-end.json") => Expect::Lifecycle {
            name: "SessionEnd",
            session: "01a245c8-21e4-7a60-b7f5-943e610b372a",
            detail: ("reason", json!("other")),
        },
        ("gemini", "before-tool.json") => Expect::Before {
            call_id: None,
            session: "gem-41a7",
            cwd: "/srv/app",
            tool_name: "run_shell_command",
            tool: exec("df -h && du -sh /var/log/*"),
        },
        ("gemini", "after-tool.json") => Expect::After {
            call_id: None,
            session: "gem-41a7",
            tool_name: "run_shell_command",
            tool: exec("df -h && du -sh /var/log/*"),
            outcome: ToolOutcome {
                exit_code: None,
                stdout: "Filesystem Size Used Avail Use% Mounted on\n/dev/vda 100G 86G 14G 86% /"
                    .into(),
                stderr: String::new(),
                failed: false,
                interrupted: false,
                duration_ms: None,
            },
        },
        _ => panic!(
            "payloads/{agent}/{file} has no expectation here: add one so every payload is checked"
        ),
    }
}

fn agent_of(folder: &str) -> Agent {
    folder.parse().expect("folder is an agent's name")
}

#[test]
fn every_agent_payload_parses_into_its_event() {
    let mut checked = 0;
    for folder in ["claude", "codex", "gemini"] {
        let agent = agent_of(folder);
        let mut files: Vec<String> = std::fs::read_dir(payloads().join(folder))
            .expect("payload folder")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        files.sort();
        for file in files {
            let label = format!("{folder}/{file}");
            let expect = expected(folder, &file);
            if matches!(expect, Expect::Skip) {
                continue;
            }
            let event = parse_event(agent, &read(folder, &file))
                .unwrap_or_else(|err| panic!("{label}: {err}"));
            check_event(&label, agent, &event, expect);
            check_replies(&label, agent, &event);
            checked += 1;
        }
    }
    assert_eq!(checked, 26, "every hook payload was checked");
}

fn check_event(label: &str, agent: Agent, event: &HookEvent, expect: Expect) {
    match (event, expect) {
        (
            HookEvent::BeforeTool {
                call_id,
                session_id,
                cwd,
                tool_name,
                tool,
                inputs,
            },
            Expect::Before {
                call_id: want_call,
                session,
                cwd: want_cwd,
                tool_name: want_name,
                tool: want_tool,
            },
        ) => {
            assert_eq!(call_id.as_deref(), want_call, "{label}");
            assert_eq!(session_id.as_deref(), Some(session), "{label}");
            assert_eq!(cwd.as_deref(), Some(want_cwd), "{label}");
            assert_eq!(tool_name, want_name, "{label}");
            assert_eq!(tool, &want_tool, "{label}");
            assert!(inputs.is_object(), "{label}: inputs kept");
            let action = event
                .action(agent)
                .expect("a tool event proposes an action");
            assert_eq!(action.tool, want_tool, "{label}");
            assert_eq!(action.context.session.as_deref(), Some(session), "{label}");
            assert_eq!(action.actor, agent.actor(), "{label}");
        }
        (
            HookEvent::AfterTool {
                call_id,
                session_id,
                tool_name,
                tool,
                outcome,
                ..
            },
            Expect::After {
                call_id: want_call,
                session,
                tool_name: want_name,
                tool: want_tool,
                outcome: want_outcome,
            },
        ) => {
            assert_eq!(call_id.as_deref(), want_call, "{label}");
            assert_eq!(session_id.as_deref(), Some(session), "{label}");
            assert_eq!(tool_name, want_name, "{label}");
            assert_eq!(tool, &want_tool, "{label}");
            assert_eq!(outcome, &want_outcome, "{label}");
        }
        (
            HookEvent::Lifecycle {
                name,
                session_id,
                details,
                ..
            },
            Expect::Lifecycle {
                name: want_name,
                session,
                detail: (key, value),
            },
        ) => {
            assert_eq!(name, want_name, "{label}");
            assert_eq!(session_id.as_deref(), Some(session), "{label}");
            assert_eq!(details[key], value, "{label}");
            assert!(details.get("hook_event_name").is_none(), "{label}");
            assert!(event.action(agent).is_none(), "{label}");
        }
        (
            HookEvent::Declined {
                call_id,
                session_id,
                tool,
                reason,
                ..
            },
            Expect::Declined {
                call_id: want_call,
                session,
                tool: want_tool,
                reason: want_reason,
            },
        ) => {
            assert_eq!(call_id.as_deref(), Some(want_call), "{label}");
            assert_eq!(session_id.as_deref(), Some(session), "{label}");
            assert_eq!(tool, &want_tool, "{label}");
            assert_eq!(reason, want_reason, "{label}");
        }
        (event, _) => panic!("{label}: parsed into the wrong kind of event: {event:?}"),
    }
}

/// Replies for every verdict: stdout empty or one JSON document of the agent's shape, exit 0
/// only when the call may go ahead (or Claude Code asks its user), exit 2 with a reason on
/// stderr for every refusal.
fn check_replies(label: &str, agent: Agent, event: &HookEvent) {
    if !matches!(event, HookEvent::BeforeTool { .. }) {
        let reply = reply_to_record(agent);
        assert_eq!(reply.exit_code, 0, "{label}");
        assert!(reply.stderr.is_empty(), "{label}");
        if !reply.stdout.is_empty() {
            let json: Value = serde_json::from_str(&reply.stdout).expect("record reply is JSON");
            assert!(json.is_object(), "{label}");
        }
        return;
    }
    for verdict in Verdict::ALL {
        let reply = reply_to_decision(agent, verdict, "rule says so", Some("ask the on-call"));
        let label = format!("{label} {verdict:?}");
        let goes_ahead = matches!(
            (agent, verdict),
            (_, Verdict::Allow) | (Agent::Claude, Verdict::Ask)
        );
        let refused = !goes_ahead;
        assert_eq!(reply.exit_code, if refused { 2 } else { 0 }, "{label}");
        if refused {
            assert!(reply.stderr.contains("rule says so"), "{label}");
            assert!(reply.stderr.contains("Instead: ask the on-call"), "{label}");
        } else {
            assert!(reply.stderr.is_empty(), "{label}");
        }
        if reply.stdout.is_empty() {
            assert!(
                agent == Agent::Codex && !refused,
                "{label}: only Codex allows in silence"
            );
            continue;
        }
        let json: Value = serde_json::from_str(&reply.stdout).expect("reply is JSON");
        let decision = match agent {
            Agent::Claude | Agent::Codex => {
                let output = &json["hookSpecificOutput"];
                assert_eq!(output["hookEventName"], "PreToolUse", "{label}");
                assert!(output["permissionDecisionReason"].is_string(), "{label}");
                output["permissionDecision"].clone()
            }
            Agent::Gemini => {
                if refused {
                    assert!(json["reason"].is_string(), "{label}");
                }
                json["decision"].clone()
            }
        };
        let want = match (refused, verdict) {
            (true, _) => "deny",
            (false, Verdict::Ask) => "ask",
            (false, _) => "allow",
        };
        assert_eq!(decision, want, "{label}");
    }
    let failure = reply_to_failure(agent, "policy file is unreadable");
    assert_eq!(failure.exit_code, 2, "{label}");
    assert!(
        failure.stderr.contains("policy file is unreadable"),
        "{label}"
    );
    let _: Value = serde_json::from_str(&failure.stdout).expect("failure reply is JSON");
}

#[test]
fn halt_is_a_deny_that_says_the_operator_knows() {
    for agent in Agent::ALL {
        let reply = reply_to_decision(agent, Verdict::Halt, "disk is full on prod", None);
        assert_eq!(reply.exit_code, 2);
        assert_eq!(
            reply.stderr,
            "halted by nightwatch policy, the operator has been notified: disk is full on prod\n"
        );
    }
}

#[test]
fn settings_example_merges_once_however_often_it_is_installed() {
    let example: Value =
        serde_json::from_slice(&read("claude", "settings-example.json")).expect("JSON");
    let command = "nightwatch hook claude";
    let once = install_hooks(Agent::Claude, example.clone(), command).expect("installs");
    let twice = install_hooks(Agent::Claude, once.clone(), command).expect("installs again");
    assert_eq!(once, twice, "installing twice equals installing once");

    // Other keys are kept as they were.
    assert_eq!(once["permissions"], example["permissions"]);

    // The existing nightwatch entries are updated, not duplicated.
    for event in ["PreToolUse", "PostToolUse"] {
        let groups = once["hooks"][event].as_array().expect("array");
        let ours: Vec<&Value> = groups
            .iter()
            .flat_map(|group| group["hooks"].as_array().into_iter().flatten())
            .filter(|handler| handler["command"] == command)
            .collect();
        assert_eq!(ours.len(), 1, "{event}: one nightwatch handler");
        assert_eq!(ours[0]["timeout"], 30, "{event}");
        assert_eq!(groups.len(), 1, "{event}: no empty group left behind");
    }
    for event in ["PostToolUseFailure", "SessionStart", "Stop", "SessionEnd"] {
        assert_eq!(once["hooks"][event][0]["hooks"][0]["command"], command);
    }

    // A new command path replaces the old one instead of running both.
    let moved = install_hooks(Agent::Claude, once, "/usr/local/bin/nightwatch hook claude")
        .expect("installs");
    let pre = moved["hooks"]["PreToolUse"].as_array().expect("array");
    assert_eq!(pre.len(), 1);
    assert_eq!(
        pre[0]["hooks"][0]["command"],
        "/usr/local/bin/nightwatch hook claude"
    );
}

#[test]
fn inputs_that_cannot_be_understood_are_errors_a_person_can_act_on() {
    let rows: [(&[u8], &str); 7] = [
        (b"", "hook input is empty"),
        (b" \n\t", "hook input is empty"),
        (b"[1, 2]", "hook input is an array, not a JSON object"),
        (
            b"\"PreToolUse\"",
            "hook input is a string, not a JSON object",
        ),
        (
            br#"{"hook_event_name": "PreToolUse"}"#,
            "hook input has no tool_name",
        ),
        (
            br#"{"hook_event_name": "PreToolUse", "tool_name": 7}"#,
            "hook input has no tool_name",
        ),
        (
            br#"{"session_id": "s"}"#,
            "hook input has no hook_event_name and no tool_name",
        ),
    ];
    for (input, message) in rows {
        let err = parse_event(Agent::Claude, input).unwrap_err();
        assert_eq!(
            err.to_string(),
            message,
            "{}",
            String::from_utf8_lossy(input)
        );
    }
    let err = parse_event(Agent::Gemini, b"{\"tool_name\": ").unwrap_err();
    assert!(
        err.to_string().starts_with("hook input is not JSON: "),
        "{err}"
    );
}

#[test]
fn unknown_fields_are_ignored_and_missing_new_ones_are_fine() {
    let input = br#"{
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "uptime", "sandbox": {"mode": "strict"}},
        "session_id": 42,
        "brand_new_field": [1, {"x": null}]
    }"#;
    let event = parse_event(Agent::Claude, input).expect("parses");
    let HookEvent::BeforeTool {
        tool,
        session_id,
        call_id,
        cwd,
        ..
    } = event
    else {
        panic!("a tool call")
    };
    assert_eq!(tool, exec("uptime"));
    assert_eq!((session_id, call_id, cwd), (None, None, None));
}

/// Each agent's MCP call to a filesystem server carries its paths, so policy judges them like
/// a file tool's; a blank shell command is a line that runs nothing, a missing one an error.
#[test]
fn mcp_paths_and_blank_commands_as_each_agent_sends_them() {
    let rows: [(Agent, &[u8], Result<Tool, &str>); 6] = [
        (
            Agent::Claude,
            br#"{"hook_event_name": "PreToolUse", "tool_name": "mcp__filesystem__write_file", "tool_input": {"path": "/srv/app/.claude/settings.json", "content": "{}"}}"#,
            Ok(Tool::Mcp {
                server: "filesystem".into(),
                tool: "write_file".into(),
                paths: vec!["/srv/app/.claude/settings.json".into()],
            }),
        ),
        (
            Agent::Gemini,
            br#"{"hook_event_name": "BeforeTool", "tool_name": "mcp__filesystem__move_file", "tool_input": {"source": "s/id_rsa"}}"#,
            Ok(Tool::Mcp {
                server: "filesystem".into(),
                tool: "move_file".into(),
                paths: vec!["s/id_rsa".into()],
            }),
        ),
        (
            Agent::Claude,
            br#"{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": " "}}"#,
            Ok(exec(" ")),
        ),
        (
            Agent::Codex,
            br#"{"hook_event_name": "PreToolUse", "tool_name": "shell", "tool_input": {"command": []}}"#,
            Ok(exec("")),
        ),
        (
            Agent::Gemini,
            br#"{"hook_event_name": "BeforeTool", "tool_name": "run_shell_command", "tool_input": {"command": ""}}"#,
            Ok(exec("")),
        ),
        (
            Agent::Claude,
            br#"{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}}"#,
            Err("hook input for tool Bash has no tool_input.command"),
        ),
    ];
    for (agent, input, expected) in rows {
        let label = String::from_utf8_lossy(input);
        match (parse_event(agent, input), expected) {
            (Ok(HookEvent::BeforeTool { tool, .. }), Ok(want)) => assert_eq!(tool, want, "{label}"),
            (Err(err), Err(message)) => assert_eq!(err.to_string(), message, "{label}"),
            (got, want) => panic!("{label}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn a_tool_call_without_an_event_name_is_decided_not_recorded() {
    let input = br#"{"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}"#;
    let event = parse_event(Agent::Claude, input).expect("parses");
    assert!(matches!(event, HookEvent::BeforeTool { .. }), "{event:?}");
}

#[test]
fn other_claude_events_are_recorded_as_lifecycle() {
    for name in [
        "UserPromptSubmit",
        "Notification",
        "SubagentStop",
        "PreCompact",
    ] {
        let input =
            format!(r#"{{"hook_event_name": "{name}", "session_id": "s", "prompt": "hi"}}"#);
        let event = parse_event(Agent::Claude, input.as_bytes()).expect("parses");
        assert_eq!(event.name(), name);
        assert!(matches!(event, HookEvent::Lifecycle { .. }));
    }
}

#[test]
fn gemini_after_tool_errors_mark_the_call_failed() {
    let input = br#"{
        "hook_event_name": "AfterTool",
        "tool_name": "write_file",
        "tool_input": {"file_path": "/etc/hosts"},
        "tool_response": {"llmContent": [{"text": "could not write"}], "error": {"message": "EACCES", "type": "io"}}
    }"#;
    let HookEvent::AfterTool { outcome, tool, .. } =
        parse_event(Agent::Gemini, input).expect("parses")
    else {
        panic!("a tool result")
    };
    assert_eq!(
        tool,
        Tool::Write {
            path: "/etc/hosts".into()
        }
    );
    assert!(outcome.failed);
    assert_eq!(outcome.stdout, "could not write");
    assert_eq!(outcome.stderr, "EACCES");
}

#[test]
fn codex_post_tool_use_takes_a_plain_string_response() {
    let input = br#"{
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "false"},
        "tool_use_id": "call_1",
        "tool_response": "Exit code: 1"
    }"#;
    let HookEvent::AfterTool {
        outcome, call_id, ..
    } = parse_event(Agent::Codex, input).expect("parses")
    else {
        panic!("a tool result")
    };
    assert_eq!(call_id.as_deref(), Some("call_1"));
    assert_eq!(outcome.stdout, "Exit code: 1");
}
