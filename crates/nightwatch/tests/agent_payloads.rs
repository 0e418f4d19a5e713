//! The hook payloads in `fixtures/payloads/` against what the pinned agents send today.
//!
//! Each test runs the real agent (the binaries `scripts/install-agents` pins) through a short
//! script against a scripted model, with a hook that only records its stdin and says nothing,
//! so every call goes ahead. Then, for every field the hook reads, the live payload must carry
//! it with the same JSON type as the committed fixture, or lack it as the fixture does: a new
//! pinned version that renames, drops, adds or retypes one of them fails here, and the
//! fixtures are to be recorded again. Every live tool call must also get a decision from the
//! real `nightwatch hook`.
//!
//! `NIGHTWATCH_PAYLOADS_OUT=DIR` also writes each live payload, as sent, to
//! `DIR/<agent>/<fixture>` (with `DIR/<agent>/world.json`, the scratch paths to scrub), which
//! is how the fixtures are recorded.

mod common;

use common::agents::{Agent, World, json_lines, path_str, run, text};
use nightwatch_scripted_model::{ScriptedModel, Step};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/payloads");

/// The Claude script's commands, the ones the fixtures were recorded with.
const VACUUM: &str = "journalctl --vacuum-time=7d --unit=app-worker";
const RESTART: &str = "systemctl restart app-worker";
const COMPOUND: &str = "cd /srv/app && docker compose up -d postgres";
/// Codex's: one that succeeds, one that exits 3, one refused by the default policy.
const HELLO: &str = "echo hello";
const EXIT_3: &str = "echo failing >&2; exit 3";
const FORCE_PUSH: &str = "bash -lc 'git status && git push --force origin main'";

/// A hook command that appends its stdin to `log` and exits 0 with no output: the agent goes
/// ahead as if there were no hook.
fn recorder(log: &Path) -> String {
    let log = path_str(log);
    assert!(!log.contains('\''), "{log}");
    format!("sh -c 'cat >> {log}; echo >> {log}'")
}

/// The payloads the recorder saw, in order, each with its text as sent.
fn recorded(log: &Path) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(log)
        .unwrap_or_else(|err| panic!("no hook ran ({}: {err})", log.display()));
    let mut payloads = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
    let mut start = 0;
    while let Some(payload) = stream.next() {
        let payload = payload.expect("each hook input is JSON");
        let end = stream.byte_offset();
        payloads.push((text[start..end].trim().to_owned(), payload));
        start = end;
    }
    payloads
}

/// The fields `nightwatch hook` reads from an event (see nightwatch-agents' event.rs and
/// tool.rs), as JSON pointers.
fn fields_read(payload: &Value) -> Vec<String> {
    let mut fields: Vec<String> = ["session_id", "cwd", "hook_event_name", "transcript_path"]
        .iter()
        .map(|key| format!("/{key}"))
        .collect();
    let event = payload["hook_event_name"].as_str().unwrap_or("");
    let tool = payload["tool_name"].as_str().unwrap_or("");
    let mut add = |keys: &[&str]| fields.extend(keys.iter().map(|key| format!("/{key}")));
    match event {
        "PreToolUse" | "PostToolUse" | "PostToolUseFailure" => {
            add(&[
                "tool_name",
                "tool_use_id",
                "tool_call_id",
                "call_id",
                "tool_input",
            ]);
            match tool {
                "Bash" => add(&["tool_input/command"]),
                "Read" | "Write" | "Edit" | "MultiEdit" => add(&["tool_input/file_path"]),
                _ => {}
            }
            if event != "PreToolUse" {
                add(&["tool_response", "error", "is_interrupt", "duration_ms"]);
                if tool == "Bash" {
                    add(&[
                        "tool_response/stdout",
                        "tool_response/output",
                        "tool_response/stderr",
                        "tool_response/interrupted",
                        "tool_response/exit_code",
                        "tool_response/exitCode",
                        "tool_response/error",
                        "tool_response/success",
                    ]);
                }
            }
        }
        "SessionStart" => add(&["source"]),
        "Stop" => add(&["stop_hook_active"]),
        "SessionEnd" => add(&["reason"]),
        "UserPromptSubmit" => add(&["prompt"]),
        _ => {}
    }
    fields
}

/// A value's JSON type, or its absence; integers apart, as the hook reads them as such.
fn type_of(value: Option<&Value>) -> &'static str {
    match value {
        None => "absent",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(n)) if n.is_u64() => "unsigned integer",
        Some(Value::Number(n)) if n.is_i64() => "integer",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "array",
        Some(Value::Object(_)) => "object",
    }
}

/// The committed fixture, or why there is none.
fn fixture(agent: Agent, file: &str) -> Result<Value, String> {
    let path = Path::new(FIXTURES).join(agent.name()).join(file);
    let bytes = std::fs::read(&path).map_err(|err| format!("{}: {err}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|err| format!("{}: {err}", path.display()))
}

/// Compares every live payload that has a fixture with it; returns the fixtures seen.
/// `fixture_of` names the fixture a live payload is recorded as, if any.
fn compare(
    agent: Agent,
    world: &World,
    live: &[(String, Value)],
    fixture_of: impl Fn(&Value) -> Option<&'static str>,
    wanted: &[&str],
) {
    let out = std::env::var_os("NIGHTWATCH_PAYLOADS_OUT").map(|dir| {
        let dir = PathBuf::from(dir).join(agent.name());
        std::fs::create_dir_all(&dir).expect("NIGHTWATCH_PAYLOADS_OUT is writable");
        let paths = json!({
            "root": path_str(&world.root),
            "home": path_str(&world.home),
            "config": path_str(&world.config),
            "project": path_str(&world.project),
        });
        std::fs::write(dir.join("world.json"), paths.to_string()).unwrap();
        dir
    });
    let mut seen: Vec<&str> = Vec::new();
    let mut differences = Vec::new();
    for (sent, payload) in live {
        let Some(file) = fixture_of(payload) else {
            continue;
        };
        if let Some(dir) = &out
            && !seen.contains(&file)
        {
            std::fs::write(dir.join(file), format!("{sent}\n")).unwrap();
        }
        seen.push(file);
        let committed = match fixture(agent, file) {
            Ok(committed) => committed,
            Err(err) => {
                differences.push(err);
                continue;
            }
        };
        for field in fields_read(payload) {
            let (want, got) = (
                type_of(committed.pointer(&field)),
                type_of(payload.pointer(&field)),
            );
            if want != got {
                differences.push(format!(
                    "{}/{file} {field}: the fixture has {want}, {} {} sent {got}",
                    agent.name(),
                    agent.name(),
                    version(agent)
                ));
            }
        }
    }
    for file in wanted {
        assert!(
            seen.contains(file),
            "{} sent no payload recorded as {file}; it sent: {:#?}",
            agent.name(),
            live.iter()
                .map(|(_, p)| (p["hook_event_name"].clone(), p["tool_name"].clone()))
                .collect::<Vec<_>>()
        );
    }
    assert!(
        differences.is_empty(),
        "the pinned agent no longer sends what the fixtures say; record them again \
         (NIGHTWATCH_PAYLOADS_OUT, see fixtures/payloads/README.md):\n{}",
        differences.join("\n")
    );
}

fn version(agent: Agent) -> String {
    let output = std::process::Command::new(common::agents::binary(agent.name()))
        .arg("--version")
        .output()
        .expect("the agent runs");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Every live payload through the real `nightwatch hook AGENT`: a tool call gets a decision
/// (exit 0 with the agent's JSON, or Codex's silent allow; or exit 2 with a reason), and
/// anything else is recorded. Never another exit code.
fn assert_nightwatch_answers(agent: Agent, world: &World, live: &[(String, Value)]) {
    for (sent, payload) in live {
        let mut command = common::nightwatch_command(&["hook", agent.name()]);
        command
            .env("NIGHTWATCH_HOME", &world.data)
            .current_dir(&world.project);
        let output = common::run_with_input(command, sent.as_bytes());
        let label = format!("{sent}\n{}", text(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        match output.status.code() {
            Some(0) if payload["hook_event_name"] == "PreToolUse" => {
                if stdout.trim().is_empty() {
                    assert_eq!(agent, Agent::Codex, "only Codex allows in silence: {label}");
                    continue;
                }
                let reply: Value = serde_json::from_str(&stdout)
                    .unwrap_or_else(|err| panic!("reply is not JSON ({err}): {label}"));
                let decision = &reply["hookSpecificOutput"]["permissionDecision"];
                assert!(
                    ["allow", "ask", "deny"].contains(&decision.as_str().unwrap_or("")),
                    "no decision: {label}"
                );
            }
            Some(0) => {}
            Some(2) => assert!(
                !output.stderr.is_empty(),
                "exit 2 without a reason: {label}"
            ),
            _ => panic!(
                "nightwatch hook {} answered {:?}: {label}",
                agent.name(),
                output.status
            ),
        }
    }
}

fn hooks_for(events: &[&str], command: &str, matcher: bool) -> Value {
    let mut hooks = serde_json::Map::new();
    for event in events {
        let mut group =
            json!({ "hooks": [{ "type": "command", "command": command, "timeout": 30 }] });
        if matcher && !["UserPromptSubmit", "Stop"].contains(event) {
            group["matcher"] = json!("*");
        }
        hooks.insert((*event).to_owned(), json!([group]));
    }
    json!({ "hooks": hooks })
}

/// A program of the world's PATH that prints `stdout`, `stderr` and exits `code`.
fn stand_in(world: &World, name: &str, stdout: &str, stderr: &str, code: i32) {
    use std::os::unix::fs::PermissionsExt;
    let path = world.root.join("bin").join(name);
    std::fs::create_dir_all(world.root.join("bin")).unwrap();
    std::fs::write(
        &path,
        format!("#!/bin/sh\nprintf '%s' '{stdout}'\nprintf '%s' '{stderr}' >&2\nexit {code}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn bash(command: &str) -> Step {
    Step::call(
        "Bash",
        json!({ "command": command, "description": "scripted" }),
    )
}

#[test]
fn claude_payloads_still_carry_the_fields_the_hook_reads() {
    let world = World::new(Agent::Claude, "payloads");
    let log = world.root.join("hooks.jsonl");
    let events = [
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "SessionStart",
        "UserPromptSubmit",
        "Stop",
        "SessionEnd",
    ];
    let settings = world.project.join(".claude");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("settings.json"),
        hooks_for(&events, &recorder(&log), true).to_string(),
    )
    .unwrap();
    // The commands the fixtures name, made harmless: stand-ins that answer as the real ones.
    stand_in(
        &world,
        "journalctl",
        "Vacuuming done, freed 4.2G of archived journals from /var/log/journal/3f2e.\n",
        "",
        0,
    );
    stand_in(
        &world,
        "systemctl",
        "",
        "Failed to restart app-worker.service: Access denied\n",
        3,
    );
    stand_in(&world, "docker", "", "", 0);
    let conf = world.project.join("app.conf");
    let model = ScriptedModel::start(vec![
        bash(VACUUM),
        bash(RESTART),
        bash(COMPOUND),
        Step::call(
            "Read",
            json!({ "file_path": path_str(&world.project.join("README.md")) }),
        ),
        Step::call(
            "Write",
            json!({ "file_path": path_str(&conf), "content": "server { listen 80; }\n" }),
        ),
        Step::call(
            "Edit",
            json!({
                "file_path": path_str(&conf),
                "old_string": "listen 80;",
                "new_string": "listen 8080;",
                "replace_all": false,
            }),
        ),
        Step::Say("done".into()),
    ])
    .unwrap();
    let mut command = world.agent_command(
        &model,
        &[
            "-p",
            "go",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "bypassPermissions",
        ],
    );
    // Claude refuses bypassPermissions as root unless told it is in a sandbox, which a
    // scratch world with a scripted model is.
    command.env("IS_SANDBOX", "1");
    let output = run(command, LIMIT);
    assert!(output.status.success(), "claude failed: {}", text(&output));
    assert!(!json_lines(&output).is_empty(), "{}", text(&output));
    assert_eq!(
        std::fs::read_to_string(&conf).unwrap(),
        "server { listen 8080; }\n",
        "the calls went ahead"
    );

    let live = recorded(&log);
    compare(
        Agent::Claude,
        &world,
        &live,
        |payload| {
            let command = payload["tool_input"]["command"].as_str().unwrap_or("");
            Some(
                match (
                    payload["hook_event_name"].as_str()?,
                    payload["tool_name"].as_str().unwrap_or(""),
                ) {
                    ("PreToolUse", "Bash") if command == VACUUM => "pre-bash.json",
                    ("PreToolUse", "Bash") if command == COMPOUND => "pre-bash-compound.json",
                    ("PostToolUse", "Bash") if command == VACUUM => "post-bash.json",
                    ("PostToolUseFailure", "Bash") if command == RESTART => {
                        "post-bash-failure.json"
                    }
                    ("PreToolUse", "Read") => "pre-read.json",
                    ("PreToolUse", "Write") => "pre-write.json",
                    ("PreToolUse", "Edit") => "pre-edit.json",
                    ("SessionStart", _) => "session-start.json",
                    ("UserPromptSubmit", _) => "user-prompt-submit.json",
                    ("Stop", _) => "stop.json",
                    ("SessionEnd", _) => "session-end.json",
                    _ => return None,
                },
            )
        },
        &[
            "pre-bash.json",
            "pre-bash-compound.json",
            "post-bash.json",
            "post-bash-failure.json",
            "pre-read.json",
            "pre-write.json",
            "pre-edit.json",
            "session-start.json",
            "user-prompt-submit.json",
            "stop.json",
            "session-end.json",
        ],
    );
    // The failure is the exit code of the command, in the words the hook reads it from.
    let (_, failure) = live
        .iter()
        .find(|(_, p)| {
            p["hook_event_name"] == "PostToolUseFailure" && p["tool_input"]["command"] == RESTART
        })
        .expect("the failing call was reported");
    assert!(
        failure["error"]
            .as_str()
            .unwrap_or("")
            .starts_with("Exit code 3"),
        "{failure:#}"
    );
    assert_nightwatch_answers(Agent::Claude, &world, &live);
}

#[test]
fn codex_payloads_still_carry_the_fields_the_hook_reads() {
    let world = World::new(Agent::Codex, "payloads");
    let log = world.root.join("hooks.jsonl");
    let model = ScriptedModel::start(vec![
        Step::call("exec_command", json!({ "cmd": HELLO })),
        Step::call("exec_command", json!({ "cmd": EXIT_3 })),
        Step::call("exec_command", json!({ "cmd": FORCE_PUSH })),
        Step::Say("done".into()),
    ])
    .unwrap();
    std::fs::write(
        world.config.join("config.toml"),
        format!(
            "model = \"gpt-5.1-codex\"\nmodel_provider = \"scripted\"\n\n\
             [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{}/v1\"\n",
            model.url()
        ),
    )
    .unwrap();
    let events = [
        "PreToolUse",
        "PostToolUse",
        "SessionStart",
        "UserPromptSubmit",
        "Stop",
        "SessionEnd",
    ];
    std::fs::write(
        world.config.join("hooks.json"),
        hooks_for(&events, &recorder(&log), true).to_string(),
    )
    .unwrap();
    // Codex runs only hooks the user trusted; this recorder is trusted for this run alone.
    let command = world.agent_command(
        &model,
        &[
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            "-s",
            "danger-full-access",
            "-m",
            "gpt-5.1-codex",
            "go",
        ],
    );
    let output = run(command, LIMIT);
    assert!(output.status.success(), "codex failed: {}", text(&output));

    let live = recorded(&log);
    compare(
        Agent::Codex,
        &world,
        &live,
        |payload| {
            let command = payload["tool_input"]["command"].as_str().unwrap_or("");
            Some(
                match (
                    payload["hook_event_name"].as_str()?,
                    payload["tool_name"].as_str().unwrap_or(""),
                ) {
                    ("PreToolUse", "Bash") if command == FORCE_PUSH => "pre-bash.json",
                    ("PostToolUse", "Bash") if command == HELLO => "post-bash.json",
                    ("PostToolUse", "Bash") if command == EXIT_3 => "post-bash-failure.json",
                    ("SessionStart", _) => "session-start.json",
                    ("UserPromptSubmit", _) => "user-prompt-submit.json",
                    ("Stop", _) => "stop.json",
                    ("SessionEnd", _) => "session-end.json",
                    _ => return None,
                },
            )
        },
        &[
            "pre-bash.json",
            "post-bash.json",
            "post-bash-failure.json",
            "session-start.json",
            "user-prompt-submit.json",
            "stop.json",
            "session-end.json",
        ],
    );
    // Each call's PreToolUse carried the command as the model gave it.
    for wanted in [HELLO, EXIT_3, FORCE_PUSH] {
        assert!(
            live.iter()
                .any(|(_, p)| p["hook_event_name"] == "PreToolUse"
                    && p["tool_input"]["command"] == wanted),
            "no PreToolUse for {wanted}"
        );
    }
    assert_nightwatch_answers(Agent::Codex, &world, &live);
}
