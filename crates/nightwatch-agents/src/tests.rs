//! Data-driven tables: tool mapping per agent, reply shapes per verdict, settings merges.

use crate::tool::{map_tool, shell_quote};
use crate::{Agent, Base, HookError, Scope, install_hooks, reply_to_decision, settings_path};
use nightwatch_core::{Tool, Verdict};
use serde_json::{Value, json};

/// A tool as one line: `exec: ls`, `read: /etc/hosts`, `mcp: github/create_issue`,
/// `named: Task`, or the error's message.
fn show(result: Result<Tool, HookError>) -> String {
    match result {
        Ok(Tool::Exec { line }) => format!("exec: {line}"),
        Ok(Tool::Read { path }) => format!("read: {path}"),
        Ok(Tool::Write { path }) => format!("write: {path}"),
        Ok(Tool::Edit { path }) => format!("edit: {path}"),
        Ok(Tool::Fetch { url }) => format!("fetch: {url}"),
        Ok(Tool::Mcp {
            server,
            tool,
            paths,
        }) if paths.is_empty() => format!("mcp: {server}/{tool}"),
        // Sorted: the order of an object's keys is not the agent's to keep.
        Ok(Tool::Mcp {
            server,
            tool,
            mut paths,
        }) => {
            paths.sort();
            format!("mcp: {server}/{tool} {}", paths.join(" "))
        }
        Ok(Tool::Named { name }) => format!("named: {name}"),
        Err(err) => format!("error: {err}"),
    }
}

/// Each row: tool name, `tool_input`, expected mapping. The session's directory is `/work`.
#[track_caller]
fn check(agent: Agent, rows: &[(&str, &str, &str)]) {
    for (name, inputs, expected) in rows {
        let inputs: Value = serde_json::from_str(inputs).expect("row input is JSON");
        let got = show(map_tool(agent, name, &inputs, Some("/work")));
        assert_eq!(&got, expected, "{agent} {name} {inputs}");
    }
}

#[test]
fn claude_tools_map_to_core_tools() {
    check(
        Agent::Claude,
        &[
            ("Bash", r#"{"command": "ls -la"}"#, "exec: ls -la"),
            (
                "Bash",
                r#"{"description": "x"}"#,
                "error: hook input for tool Bash has no tool_input.command",
            ),
            (
                "Bash",
                r#"{"command": ["ls"]}"#,
                "error: hook input for tool Bash has no tool_input.command",
            ),
            // Present but blank: a line that runs nothing, decided as `nightwatch check ''`.
            ("Bash", r#"{"command": "  "}"#, "exec:   "),
            ("Bash", r#"{"command": ""}"#, "exec: "),
            (
                "Bash",
                r#"{"command": null}"#,
                "error: hook input for tool Bash has no tool_input.command",
            ),
            (
                "Write",
                r#"{"file_path": "/etc/motd", "content": "hi"}"#,
                "write: /etc/motd",
            ),
            (
                "Edit",
                r#"{"file_path": "/etc/app.yaml"}"#,
                "edit: /etc/app.yaml",
            ),
            (
                "MultiEdit",
                r#"{"file_path": "/etc/app.yaml", "edits": []}"#,
                "edit: /etc/app.yaml",
            ),
            (
                "NotebookEdit",
                r#"{"notebook_path": "/n.ipynb"}"#,
                "edit: /n.ipynb",
            ),
            (
                "NotebookEdit",
                r#"{"file_path": "/n.ipynb"}"#,
                "error: hook input for tool NotebookEdit has no tool_input.notebook_path",
            ),
            (
                "Write",
                r#"{}"#,
                "error: hook input for tool Write has no tool_input.file_path",
            ),
            (
                "Read",
                r#"{"file_path": "/var/log/syslog", "limit": 10}"#,
                "read: /var/log/syslog",
            ),
            (
                "Glob",
                r#"{"pattern": "**/*.rs", "path": "/srv"}"#,
                "read: /srv",
            ),
            ("Glob", r#"{"pattern": "**/*.rs"}"#, "read: /work"),
            (
                "Grep",
                r#"{"pattern": "TODO", "path": "/etc"}"#,
                "read: /etc",
            ),
            ("LS", r#"{"path": "/root"}"#, "read: /root"),
            (
                "WebFetch",
                r#"{"url": "https://example.com", "prompt": "x"}"#,
                "fetch: https://example.com",
            ),
            ("WebSearch", r#"{"query": "x"}"#, "named: WebSearch"),
            ("Task", r#"{"prompt": "x"}"#, "named: Task"),
            (
                "mcp__postgres__query",
                r#"{"sql": "select 1"}"#,
                "mcp: postgres/query",
            ),
            (
                "mcp__my_server__do_thing",
                r#"{}"#,
                "mcp: my_server/do_thing",
            ),
            ("mcp__srv__tool__x", r#"{}"#, "mcp: srv/tool__x"),
            ("mcp__srv", r#"{}"#, "named: mcp__srv"),
            ("mcp____tool", r#"{}"#, "named: mcp____tool"),
            ("mcp__srv__", r#"{}"#, "named: mcp__srv__"),
            (
                "run_shell_command",
                r#"{"command": "ls"}"#,
                "named: run_shell_command",
            ),
        ],
    );
}

#[test]
fn codex_tools_map_to_core_tools() {
    check(
        Agent::Codex,
        &[
            ("Bash", r#"{"command": "git status"}"#, "exec: git status"),
            (
                "shell",
                r#"{"command": ["bash", "-lc", "git push --force"]}"#,
                "exec: bash -lc 'git push --force'",
            ),
            (
                "local_shell",
                r#"{"command": ["echo", "it's"]}"#,
                r#"exec: echo 'it'\''s'"#,
            ),
            (
                "exec_command",
                r#"{"cmd": "rm -rf /tmp/x"}"#,
                "exec: rm -rf /tmp/x",
            ),
            ("shell", r#"{"command": []}"#, "exec: "),
            ("shell", r#"{"command": " "}"#, "exec:  "),
            (
                "shell",
                r#"{"command": {}}"#,
                "error: hook input for tool shell has no tool_input.command",
            ),
            (
                "shell",
                r#"{"command": ["ls", 1]}"#,
                "error: hook input for tool shell has no tool_input.command",
            ),
            (
                "apply_patch",
                r#"{"command": "*** Begin Patch\n*** Update File: src/main.rs\n@@\n-a\n+b\n*** End Patch"}"#,
                "edit: src/main.rs",
            ),
            (
                "apply_patch",
                r#"{"command": "*** Begin Patch\n*** Add File: notes.md\n+hi\n*** End Patch"}"#,
                "write: notes.md",
            ),
            (
                "apply_patch",
                r#"{"command": "*** Begin Patch\n*** Update File: a\n*** Delete File: /etc/passwd\n*** End Patch"}"#,
                "named: apply_patch",
            ),
            (
                "apply_patch",
                r#"{"command": "*** Begin Patch\n*** Update File: a\n*** Move to: /etc/cron.d/x\n*** End Patch"}"#,
                "named: apply_patch",
            ),
            (
                "apply_patch",
                r#"{"command": "garbage"}"#,
                "named: apply_patch",
            ),
            (
                "apply_patch",
                r#"{}"#,
                "error: hook input for tool apply_patch has no tool_input.command",
            ),
            (
                "mcp__github__create_issue",
                r#"{"title": "x"}"#,
                "mcp: github/create_issue",
            ),
            ("Write", r#"{"file_path": "/x"}"#, "write: /x"),
            ("update_plan", r#"{}"#, "named: update_plan"),
        ],
    );
}

#[test]
fn gemini_tools_map_to_core_tools() {
    check(
        Agent::Gemini,
        &[
            (
                "run_shell_command",
                r#"{"command": "df -h", "description": "disk"}"#,
                "exec: df -h",
            ),
            (
                "run_shell_command",
                r#"{}"#,
                "error: hook input for tool run_shell_command has no tool_input.command",
            ),
            ("run_shell_command", r#"{"command": "\t"}"#, "exec: \t"),
            (
                "write_file",
                r#"{"file_path": "/etc/hosts", "content": ""}"#,
                "write: /etc/hosts",
            ),
            (
                "replace",
                r#"{"file_path": "/a.ts", "old_string": "a", "new_string": "b"}"#,
                "edit: /a.ts",
            ),
            (
                "read_file",
                r#"{"absolute_path": "/etc/shadow"}"#,
                "read: /etc/shadow",
            ),
            (
                "read_file",
                r#"{"file_path": "/etc/shadow"}"#,
                "read: /etc/shadow",
            ),
            (
                "read_file",
                r#"{}"#,
                "error: hook input for tool read_file has no tool_input.absolute_path",
            ),
            (
                "read_many_files",
                r#"{"paths": ["/srv/.env"]}"#,
                "read: /srv/.env",
            ),
            (
                "read_many_files",
                r#"{"paths": ["README.md", "/srv/.env"]}"#,
                "named: read_many_files",
            ),
            (
                "read_many_files",
                r#"{"paths": ["src"], "include": ["**/*.pem"]}"#,
                "named: read_many_files",
            ),
            ("read_many_files", r#"{}"#, "named: read_many_files"),
            (
                "glob",
                r#"{"pattern": "*.log", "path": "/var/log"}"#,
                "read: /var/log",
            ),
            ("glob", r#"{"pattern": "*.log"}"#, "read: /work"),
            (
                "search_file_content",
                r#"{"pattern": "password", "path": "/etc"}"#,
                "read: /etc",
            ),
            (
                "grep",
                r#"{"pattern": "x", "dir_path": "/home"}"#,
                "read: /home",
            ),
            ("list_directory", r#"{"path": "/root"}"#, "read: /root"),
            (
                "web_fetch",
                r#"{"prompt": "Summarise https://example.com/a, please."}"#,
                "fetch: https://example.com/a",
            ),
            (
                "web_fetch",
                r#"{"prompt": "see HTTP://Example.com/x and http://example.com/x"}"#,
                "named: web_fetch",
            ),
            (
                "web_fetch",
                r#"{"prompt": "compare https://a.example and https://b.example"}"#,
                "named: web_fetch",
            ),
            (
                "web_fetch",
                r#"{"prompt": "no link here"}"#,
                "named: web_fetch",
            ),
            (
                "web_fetch",
                r#"{"url": "https://example.com"}"#,
                "fetch: https://example.com",
            ),
            (
                "google_web_search",
                r#"{"query": "x"}"#,
                "named: google_web_search",
            ),
            ("mcp__github__list_prs", r#"{}"#, "mcp: github/list_prs"),
            ("mcp_github_list_prs", r#"{}"#, "named: mcp_github_list_prs"),
            ("save_memory", r#"{"fact": "x"}"#, "named: save_memory"),
            ("Bash", r#"{"command": "ls"}"#, "named: Bash"),
        ],
    );
}

/// MCP tools' path arguments: the keys that name a path (any case, `_` or `-`), lists, one
/// level of nesting, `file://` URLs; other URLs and other keys are not paths.
#[test]
fn mcp_tools_carry_the_paths_among_their_inputs() {
    check(
        Agent::Claude,
        &[
            (
                "mcp__filesystem__write_file",
                r#"{"path": "/home/u/.claude/settings.json", "content": "{}"}"#,
                "mcp: filesystem/write_file /home/u/.claude/settings.json",
            ),
            (
                "mcp__filesystem__read_multiple_files",
                r#"{"paths": ["a.txt", "~/.ssh/id_rsa", 3, "a.txt"]}"#,
                "mcp: filesystem/read_multiple_files a.txt ~/.ssh/id_rsa",
            ),
            (
                "mcp__filesystem__move_file",
                r#"{"source": "s/id_rsa", "destination": "/tmp/k"}"#,
                "mcp: filesystem/move_file /tmp/k s/id_rsa",
            ),
            (
                "mcp__fs__edit",
                r#"{"filePath": "a", "File-Name": "b", "notebook_path": "c.ipynb", "absolute_path": "/d"}"#,
                "mcp: fs/edit /d a b c.ipynb",
            ),
            (
                "mcp__fs__apply",
                r#"{"edits": [{"path": "x.rs", "old": "a"}, {"new_path": "y.rs"}], "options": {"cwd": "/srv"}}"#,
                "mcp: fs/apply /srv x.rs y.rs",
            ),
            (
                "mcp__fs__deep",
                r#"{"a": {"b": {"path": "/too/deep"}}}"#,
                "mcp: fs/deep",
            ),
            (
                "mcp__web__fetch",
                r#"{"source": "https://example.com/x", "target": "file:///etc/passwd", "src": "git+ssh://h/r"}"#,
                "mcp: web/fetch /etc/passwd",
            ),
            (
                "mcp__fs__copy",
                r#"{"src": " ", "dst": "", "files": ["b", {"path": "c"}], "dir": 7}"#,
                "mcp: fs/copy b c",
            ),
            (
                "mcp__postgres__query",
                r#"{"sql": "select '/etc/passwd'", "pathology": "/x"}"#,
                "mcp: postgres/query",
            ),
        ],
    );
    check(
        Agent::Gemini,
        &[(
            "mcp__filesystem__write_file",
            r#"{"path": "~/.gemini/settings.json"}"#,
            "mcp: filesystem/write_file ~/.gemini/settings.json",
        )],
    );
}

#[test]
fn argv_is_quoted_so_the_shell_reads_it_back() {
    let rows = [
        ("ls", "ls"),
        ("/usr/bin/env", "/usr/bin/env"),
        ("a b", "'a b'"),
        ("", "''"),
        ("it's", r"'it'\''s'"),
        ("$HOME", "'$HOME'"),
        ("a;b", "'a;b'"),
        ("--opt=x", "--opt=x"),
        ("*.log", "'*.log'"),
    ];
    for (word, quoted) in rows {
        assert_eq!(shell_quote(word), quoted, "{word:?}");
    }
}

/// One row of the reply table: agent, verdict, exit code, stdout as JSON (None: empty), and
/// stderr (None: empty).
type ReplyRow<'a> = (Agent, Verdict, u8, Option<Value>, Option<&'a str>);

#[test]
fn replies_follow_each_agents_contract() {
    let reason = "pushes to main are reviewed";
    let instead = Some("open a pull request");
    let full = "pushes to main are reviewed. Instead: open a pull request";
    let claude = |decision: &str, reason: &str| {
        Some(json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }}))
    };
    let halted = format!("halted by nightwatch policy, the operator has been notified: {full}");
    let approval = format!(
        "needs a human's approval under nightwatch policy: {full} (a person approves it with \
         `nightwatch approve ID`, the id in `nightwatch log --verdict ask`; then the same call \
         goes through once)"
    );
    let refused = format!("refused by nightwatch policy: {full}");
    let refused = refused.as_str();
    let rows: Vec<ReplyRow<'_>> = vec![
        (
            Agent::Claude,
            Verdict::Allow,
            0,
            claude("allow", full),
            None,
        ),
        (Agent::Claude, Verdict::Ask, 0, claude("ask", full), None),
        (
            Agent::Claude,
            Verdict::Deny,
            2,
            claude("deny", refused),
            Some(refused),
        ),
        (
            Agent::Claude,
            Verdict::Halt,
            2,
            claude("deny", &halted),
            Some(&halted),
        ),
        (Agent::Codex, Verdict::Allow, 0, None, None),
        (
            Agent::Codex,
            Verdict::Ask,
            2,
            claude("deny", &approval),
            Some(&approval),
        ),
        (
            Agent::Codex,
            Verdict::Deny,
            2,
            claude("deny", refused),
            Some(refused),
        ),
        (
            Agent::Codex,
            Verdict::Halt,
            2,
            claude("deny", &halted),
            Some(&halted),
        ),
        (
            Agent::Gemini,
            Verdict::Allow,
            0,
            Some(json!({"decision": "allow"})),
            None,
        ),
        (
            Agent::Gemini,
            Verdict::Ask,
            2,
            Some(json!({"decision": "deny", "reason": approval})),
            Some(&approval),
        ),
        (
            Agent::Gemini,
            Verdict::Deny,
            2,
            Some(json!({"decision": "deny", "reason": refused})),
            Some(refused),
        ),
        (
            Agent::Gemini,
            Verdict::Halt,
            2,
            Some(json!({"decision": "deny", "reason": halted})),
            Some(&halted),
        ),
    ];
    for (agent, verdict, exit_code, stdout, stderr) in rows {
        let reply = reply_to_decision(agent, verdict, reason, instead);
        let label = format!("{agent} {verdict:?}");
        assert_eq!(reply.exit_code, exit_code, "{label}");
        match stdout {
            None => assert_eq!(reply.stdout, "", "{label}"),
            Some(expected) => {
                let got: Value = serde_json::from_str(&reply.stdout).expect("stdout is JSON");
                assert_eq!(got, expected, "{label}");
            }
        }
        assert_eq!(reply.stderr.trim_end(), stderr.unwrap_or(""), "{label}");
    }
}

#[test]
fn a_refusal_never_has_an_empty_reason() {
    for agent in Agent::ALL {
        for verdict in [Verdict::Deny, Verdict::Halt] {
            let reply = reply_to_decision(agent, verdict, "  ", Some(""));
            assert_eq!(reply.exit_code, 2);
            assert!(!reply.stderr.trim().is_empty(), "{agent} {verdict:?}");
        }
        let reply = crate::reply_to_failure(agent, "");
        assert_eq!(reply.exit_code, 2);
        assert!(!reply.stderr.trim().is_empty());
    }
}

#[test]
fn a_reason_ending_a_sentence_gets_no_second_full_stop() {
    let reply = reply_to_decision(Agent::Claude, Verdict::Deny, "No.", Some("ask first"));
    assert_eq!(
        reply.stderr,
        "refused by nightwatch policy: No. Instead: ask first\n"
    );
}

#[test]
fn settings_live_where_each_agent_reads_them() {
    let user = |var, default| Base::User { var, default };
    let rows = [
        (
            Agent::Claude,
            Scope::Project,
            Base::Project,
            ".claude/settings.json",
        ),
        (
            Agent::Claude,
            Scope::Local,
            Base::Project,
            ".claude/settings.local.json",
        ),
        (
            Agent::Claude,
            Scope::User,
            user("CLAUDE_CONFIG_DIR", ".claude"),
            "settings.json",
        ),
        (
            Agent::Codex,
            Scope::Project,
            Base::Project,
            ".codex/hooks.json",
        ),
        (
            Agent::Codex,
            Scope::User,
            user("CODEX_HOME", ".codex"),
            "hooks.json",
        ),
        (
            Agent::Gemini,
            Scope::Project,
            Base::Project,
            ".gemini/settings.json",
        ),
        (
            Agent::Gemini,
            Scope::User,
            user("GEMINI_CLI_HOME", ""),
            ".gemini/settings.json",
        ),
    ];
    for (agent, scope, base, path) in rows {
        let location = settings_path(agent, scope);
        assert_eq!(
            (location.base, location.path),
            (base, path),
            "{agent} {scope:?}"
        );
    }
}

#[test]
fn install_into_nothing_creates_each_agents_events() {
    let rows: [(Agent, &[&str]); 3] = [
        (
            Agent::Claude,
            &[
                "PermissionDenied",
                "PostToolUse",
                "PostToolUseFailure",
                "PreToolUse",
                "SessionEnd",
                "SessionStart",
                "Stop",
            ],
        ),
        (
            Agent::Codex,
            &[
                "PermissionRequest",
                "PostToolUse",
                "PreToolUse",
                "SessionEnd",
                "SessionStart",
                "Stop",
                "UserPromptSubmit",
            ],
        ),
        (
            Agent::Gemini,
            &["AfterTool", "BeforeTool", "SessionEnd", "SessionStart"],
        ),
    ];
    for (agent, events) in rows {
        let command = format!("nightwatch hook {agent}");
        let settings = install_hooks(agent, Value::Null, &command).expect("installs");
        let hooks = settings["hooks"].as_object().expect("hooks object");
        let mut names: Vec<&str> = hooks.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, events, "{agent}");
        let keys: Vec<&String> = settings.as_object().expect("object").keys().collect();
        assert_eq!(
            keys,
            ["hooks"],
            "{agent}: Codex allows only hooks and description"
        );
        for groups in hooks.values() {
            assert_eq!(groups.as_array().map(Vec::len), Some(1));
            assert_eq!(groups[0]["hooks"][0]["command"], command.as_str());
        }
    }
    let gemini = install_hooks(Agent::Gemini, Value::Null, "nightwatch hook gemini").unwrap();
    assert_eq!(gemini["hooks"]["BeforeTool"][0]["matcher"], "*");
    assert_eq!(
        gemini["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"],
        30_000
    );
    assert_eq!(
        gemini["hooks"]["BeforeTool"][0]["hooks"][0]["name"],
        "nightwatch"
    );
    assert!(gemini["hooks"]["SessionStart"][0].get("matcher").is_none());
}

#[test]
fn install_keeps_other_hooks_and_replaces_old_nightwatch_commands() {
    let settings = json!({
        "hooks": {
            "disabled": ["secret-scanner"],
            "BeforeTool": [
                {"matcher": "write_file", "hooks": [
                    {"type": "command", "command": "./lint.sh"},
                    {"type": "command", "command": "/opt/old/nightwatch hook gemini"}
                ]},
                {"matcher": "*", "hooks": [{"type": "command", "command": "nightwatch --home /x hook gemini"}]}
            ]
        },
        "theme": "dark"
    });
    let merged = install_hooks(Agent::Gemini, settings, "/usr/bin/nightwatch hook gemini").unwrap();
    assert_eq!(merged["theme"], "dark");
    assert_eq!(merged["hooks"]["disabled"], json!(["secret-scanner"]));
    assert_eq!(
        merged["hooks"]["BeforeTool"],
        json!([
            {"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh"}]},
            {"matcher": "*", "hooks": [{
                "name": "nightwatch", "type": "command",
                "command": "/usr/bin/nightwatch hook gemini", "timeout": 30000
            }]}
        ])
    );
}

#[test]
fn install_refuses_settings_of_another_shape() {
    let rows = [
        (
            json!([]),
            "the settings file is an array, not a JSON object; fix it by hand and install again",
        ),
        (
            json!({"hooks": []}),
            "\"hooks\" in the settings file is an array, not a JSON object; fix it by hand and install again",
        ),
        (
            json!({"hooks": {"PreToolUse": {"matcher": "*"}}}),
            "\"hooks.PreToolUse\" in the settings file is an object, not a JSON array; fix it by hand and install again",
        ),
    ];
    for (settings, message) in rows {
        let err = install_hooks(Agent::Claude, settings, "nightwatch hook claude").unwrap_err();
        assert_eq!(err.to_string(), message);
    }
}

#[test]
fn agents_are_named_as_on_the_command_line() {
    for agent in Agent::ALL {
        assert_eq!(agent.as_str().parse::<Agent>(), Ok(agent));
    }
    assert_eq!(
        "cursor".parse::<Agent>().unwrap_err().to_string(),
        "unknown agent \"cursor\": expected claude, codex or gemini"
    );
    assert_eq!(Agent::Claude.actor().id, "claude-code");
}

#[test]
fn claude_has_a_local_settings_file_the_others_use_their_project_file() {
    assert_eq!(
        settings_path(Agent::Claude, Scope::Local).path,
        ".claude/settings.local.json"
    );
    assert_eq!(
        settings_path(Agent::Claude, Scope::Project).path,
        ".claude/settings.json"
    );
    for agent in [Agent::Codex, Agent::Gemini] {
        assert_eq!(
            settings_path(agent, Scope::Local),
            settings_path(agent, Scope::Project)
        );
    }
}

#[test]
fn uninstall_takes_out_only_nightwatch_and_what_it_leaves_empty() {
    for agent in [Agent::Claude, Agent::Codex, Agent::Gemini] {
        let event = crate::before_tool_event(agent);
        let theirs = json!({ "type": "command", "command": "/usr/local/bin/audit-log" });
        let mut settings =
            json!({ "model": "x", "hooks": { event: [ { "matcher": "*", "hooks": [theirs] } ] } });
        let command = format!(
            "env NIGHTWATCH_HOME=/srv/nw /opt/nw/bin/nightwatch hook {}",
            agent.as_str()
        );
        settings = install_hooks(agent, settings, &command).unwrap();
        let installed = crate::installed_commands(agent, &settings);
        assert!(!installed.is_empty(), "{agent:?}: {settings}");
        assert!(
            installed.iter().all(|(_, c)| *c == command),
            "{installed:?}"
        );
        // Installing again with another path replaces, never duplicates.
        let again = install_hooks(agent, settings.clone(), "nightwatch hook claude").unwrap();
        assert_eq!(
            crate::installed_commands(agent, &again).len(),
            installed.len(),
            "{again}"
        );

        let removed = crate::uninstall_hooks(agent, settings).unwrap();
        assert!(
            crate::installed_commands(agent, &removed).is_empty(),
            "{removed}"
        );
        assert_eq!(removed["model"], "x");
        assert_eq!(
            removed["hooks"][event][0]["hooks"][0]["command"], "/usr/local/bin/audit-log",
            "{removed}"
        );
        assert_eq!(removed["hooks"].as_object().unwrap().len(), 1, "{removed}");
    }
}

#[test]
fn a_hook_command_splits_into_its_environment_and_its_words() {
    let (vars, words) = crate::command_words(
        "env NIGHTWATCH_HOME=/srv/nw NIGHTWATCH_POLICY=/etc/p.yaml /usr/bin/nightwatch hook claude",
    );
    assert_eq!(
        vars,
        vec![
            ("NIGHTWATCH_HOME".to_owned(), "/srv/nw".to_owned()),
            ("NIGHTWATCH_POLICY".to_owned(), "/etc/p.yaml".to_owned())
        ]
    );
    assert_eq!(words, ["/usr/bin/nightwatch", "hook", "claude"]);
    let (vars, words) = crate::command_words("nightwatch hook gemini");
    assert!(vars.is_empty());
    assert_eq!(words, ["nightwatch", "hook", "gemini"]);
}

/// What a person approves in Claude's prompt is the input nightwatch decided (its ownership
/// labels included); Codex runs a rewritten input only with an explicit allow.
#[test]
fn a_rewritten_input_rides_on_claudes_ask_and_allow_and_on_codexs_allow_only() {
    let labelled = json!({"command": "docker run --label nightwatch.agent=x img"});
    let output = |agent, verdict| {
        let reply =
            crate::reply_to_decision_with_input(agent, verdict, "why", None, Some(&labelled));
        (
            reply.exit_code,
            serde_json::from_str::<Value>(&reply.stdout).ok(),
        )
    };
    for verdict in [Verdict::Allow, Verdict::Ask] {
        let (code, stdout) = output(Agent::Claude, verdict);
        assert_eq!(code, 0);
        assert_eq!(
            stdout.unwrap()["hookSpecificOutput"]["updatedInput"],
            labelled
        );
    }
    let (code, stdout) = output(Agent::Codex, Verdict::Allow);
    assert_eq!(code, 0);
    let stdout = stdout.unwrap();
    assert_eq!(stdout["hookSpecificOutput"]["permissionDecision"], "allow");
    assert_eq!(stdout["hookSpecificOutput"]["updatedInput"], labelled);
    let (code, stdout) = output(Agent::Codex, Verdict::Ask);
    assert_eq!(code, 2);
    assert!(
        stdout.unwrap()["hookSpecificOutput"]
            .get("updatedInput")
            .is_none()
    );
    assert_eq!(output(Agent::Claude, Verdict::Deny).0, 2);
}
