//! Self-protection, through the real binary's hook: no agent, by any tool, changes, removes,
//! moves, links over or truncates its hook settings (wherever its config-dir variable put
//! them) or nightwatch's own policy, ledger, head checkpoint and binary. Writes into the data
//! directory are denied; settings are never allowed without a person. Reading them is fine.

mod common;

use common::sandbox::{Agent, Sandbox, patch};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A home with every agent's settings, a project with its own, Claude's and Codex's config
/// directories moved by their variables, and a data directory with a policy, a ledger and its
/// head checkpoint.
fn sandbox(name: &str) -> Sandbox {
    let mut sandbox = Sandbox::new("self-protection", name);
    let hooks = r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "nightwatch hook claude"}]}]}}"#;
    for file in [
        "home/.claude/settings.json",
        "home/.codex/config.toml",
        "home/.codex/hooks.json",
        "home/.gemini/settings.json",
        "home/project/.claude/settings.json",
        "home/project/.claude/settings.local.json",
        "home/project/.gemini/settings.json",
        "claude-config/settings.json",
        "codex-home/hooks.json",
        "codex-home/config.toml",
        "gemini-home/.gemini/settings.json",
        "gemini-system.json",
    ] {
        sandbox.file(file, hooks);
    }
    sandbox.file("home/project/README.md", "# project");
    let claude_config = sandbox.root.join("claude-config");
    let codex_home = sandbox.root.join("codex-home");
    sandbox.set("CLAUDE_CONFIG_DIR", claude_config);
    sandbox.set("CODEX_HOME", codex_home);
    sandbox.set("GEMINI_CLI_HOME", sandbox.root.join("gemini-home"));
    sandbox.set(
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
        sandbox.root.join("gemini-system.json"),
    );
    // The data directory as a running install has it: a policy and a ledger with its head.
    let init = sandbox.run(&["init"], b"", &sandbox.root);
    assert_eq!(init.status.code(), Some(0), "{init:?}");
    let first = sandbox.hook(Agent::Claude, "Bash", json!({ "command": "ls" }));
    assert_eq!(first, "allow");
    for file in ["policy.yaml", "ledger.db", "ledger.head"] {
        assert!(
            sandbox.data.join(file).exists(),
            "{file} in the data directory"
        );
    }
    // Links a project could ship into both.
    sandbox.link(&sandbox.data, "home/project/state");
    sandbox.link(sandbox.root.join("claude-config"), "home/project/cfg");
    sandbox.link(exe(), "home/project/nw");
    sandbox
}

fn exe() -> PathBuf {
    std::fs::canonicalize(env!("CARGO_BIN_EXE_nightwatch")).expect("the binary")
}

/// Every way a shell line takes a file away or rewrites it.
fn tampering(file: &str) -> Vec<String> {
    [
        format!("rm {file}"),
        format!("rm -f {file}"),
        format!("mv {file} /tmp/moved"),
        format!("ln -sf /dev/null {file}"),
        format!("> {file}"),
        format!("echo '{{}}' > {file}"),
        format!("truncate -s 0 {file}"),
        format!("sed -i s/nightwatch/true/ {file}"),
        format!("cp /dev/null {file}"),
    ]
    .into()
}

/// The verdict for an agent's settings: not allow, by the built-in rule about them.
const SETTINGS: &str = "settings";

/// Whether a reply misses its expectation. `rm x` is asked about anyway, so for settings the
/// rule that decided is what shows the file was recognised as one.
fn wrong(expected: &str, verdict: &str, reason: &str) -> bool {
    match expected {
        SETTINGS => {
            verdict == "allow" || verdict != "deny" && !reason.contains("rule agent-hook-settings")
        }
        _ => verdict != expected,
    }
}

/// Files as an agent may name them (absolute, `~`, a variable, relative to the project,
/// through a link the project ships), and the verdict: deny for the data directory and the
/// binary, [`SETTINGS`] for an agent's settings.
fn targets(sandbox: &Sandbox) -> Vec<(String, &'static str)> {
    let at = |path: &Path| path.display().to_string();
    vec![
        (at(&sandbox.data.join("policy.yaml")), "deny"),
        (at(&sandbox.data.join("ledger.db")), "deny"),
        ("$NIGHTWATCH_HOME/ledger.head".to_owned(), "deny"),
        ("state/ledger.db".to_owned(), "deny"),
        (at(&exe()), "deny"),
        ("nw".to_owned(), "deny"),
        ("~/.claude/settings.json".to_owned(), SETTINGS),
        (at(&sandbox.home.join(".claude/settings.json")), SETTINGS),
        (".claude/settings.local.json".to_owned(), SETTINGS),
        (".claude/settings.json".to_owned(), SETTINGS),
        ("$CLAUDE_CONFIG_DIR/settings.json".to_owned(), SETTINGS),
        (
            at(&sandbox.root.join("claude-config/settings.json")),
            SETTINGS,
        ),
        ("cfg/settings.json".to_owned(), SETTINGS),
        ("$CODEX_HOME/hooks.json".to_owned(), SETTINGS),
        (at(&sandbox.root.join("codex-home/hooks.json")), SETTINGS),
        (at(&sandbox.root.join("codex-home/config.toml")), SETTINGS),
        ("~/.codex/config.toml".to_owned(), SETTINGS),
        ("~/.gemini/settings.json".to_owned(), SETTINGS),
        (".gemini/settings.json".to_owned(), SETTINGS),
        (
            "$GEMINI_CLI_HOME/.gemini/settings.json".to_owned(),
            SETTINGS,
        ),
        (at(&sandbox.root.join("gemini-system.json")), SETTINGS),
    ]
}

#[test]
fn no_agents_shell_tampers_with_nightwatch_or_its_hook_settings() {
    let sandbox = sandbox("shell");
    let mut failures = Vec::new();
    for (file, expected) in targets(&sandbox) {
        for line in tampering(&file) {
            for agent in Agent::ALL {
                let (got, why) =
                    sandbox.hook_with_reason(agent, agent.shell(), json!({ "command": line }));
                if wrong(expected, &got, &why) {
                    failures.push(format!(
                        "{agent:?}: {line} -> {got} ({why}), want {expected}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn no_file_tool_tampers_with_nightwatch_or_its_hook_settings() {
    let sandbox = sandbox("tools");
    let mut failures = Vec::new();
    for (file, expected) in targets(&sandbox) {
        // File tools take paths as written, never a variable: only real and relative ones.
        if file.starts_with('$') {
            continue;
        }
        let absolute = if file.starts_with('/') {
            file.clone()
        } else if let Some(rest) = file.strip_prefix("~/") {
            sandbox.home.join(rest).display().to_string()
        } else {
            sandbox.project.join(&file).display().to_string()
        };
        let calls: Vec<(Agent, &str, Value)> = vec![
            (
                Agent::Claude,
                "Write",
                json!({ "file_path": absolute, "content": "{}" }),
            ),
            (
                Agent::Claude,
                "Edit",
                json!({ "file_path": absolute, "old_string": "nightwatch", "new_string": "true" }),
            ),
            (Agent::Codex, "apply_patch", patch(&absolute, false)),
            (Agent::Codex, "apply_patch", patch(&file, true)),
            (
                Agent::Gemini,
                "write_file",
                json!({ "file_path": absolute, "content": "" }),
            ),
            (
                Agent::Gemini,
                "replace",
                json!({ "file_path": absolute, "old_string": "a", "new_string": "b" }),
            ),
            (
                Agent::Claude,
                "mcp__filesystem__write_file",
                json!({ "path": absolute, "content": "{}" }),
            ),
            (
                Agent::Gemini,
                "mcp__filesystem__edit_file",
                json!({ "path": file, "edits": [] }),
            ),
            (
                Agent::Claude,
                "mcp__filesystem__move_file",
                json!({ "source": absolute, "destination": "/tmp/moved" }),
            ),
        ];
        for (agent, tool, inputs) in calls {
            let (got, why) = sandbox.hook_with_reason(agent, tool, inputs.clone());
            if wrong(expected, &got, &why) {
                failures.push(format!(
                    "{agent:?} {tool} {inputs} -> {got} ({why}), want {expected}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn reading_settings_and_the_policy_stays_allowed() {
    let sandbox = sandbox("reading");
    let lines = [
        "cat ~/.claude/settings.json",
        "cat .claude/settings.local.json",
        "cat $CODEX_HOME/hooks.json",
        "cat ~/.gemini/settings.json",
        "cat cfg/settings.json",
        "cat $NIGHTWATCH_HOME/policy.yaml",
        "cat README.md",
    ];
    for line in lines {
        for agent in Agent::ALL {
            let got = sandbox.hook(agent, agent.shell(), json!({ "command": line }));
            assert_eq!(got, "allow", "{agent:?}: {line}");
        }
        assert_eq!(
            sandbox.check(line, &sandbox.project),
            "allow",
            "check {line}"
        );
    }
    let read = sandbox.hook(
        Agent::Claude,
        "Read",
        json!({ "file_path": sandbox.home.join(".claude/settings.json") }),
    );
    assert_eq!(read, "allow");
}

/// `nightwatch gate` started with none of the agents' variables and another home, stopped
/// when dropped: it must protect what the hook's environment names.
struct ResidentGate(Child);

impl Drop for ResidentGate {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_resident_gate_protects_the_hooks_config_directories() {
    let sandbox = sandbox("resident");
    let elsewhere = sandbox.root.join("gate-home");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let child = Command::new(env!("CARGO_BIN_EXE_nightwatch"))
        .arg("gate")
        .current_dir(&sandbox.root)
        .env("NIGHTWATCH_HOME", &sandbox.data)
        .env("HOME", &elsewhere)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("NIGHTWATCH_POLICY")
        .stderr(Stdio::null())
        .spawn()
        .expect("the gate starts");
    let gate = ResidentGate(child);
    let started = Instant::now();
    while !sandbox.data.join("gate.sock").exists() {
        assert!(started.elapsed() < Duration::from_secs(10), "no socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    let moved = sandbox.root.join("claude-config/settings.json");
    for line in [
        format!("rm {}", moved.display()),
        "echo '{}' > $CLAUDE_CONFIG_DIR/settings.json".to_owned(),
        "rm $CODEX_HOME/hooks.json".to_owned(),
        "rm cfg/settings.json".to_owned(),
    ] {
        let got = sandbox.hook(Agent::Claude, "Bash", json!({ "command": line }));
        assert_ne!(got, "allow", "through the gate: {line}");
    }
    let got = sandbox.hook(
        Agent::Claude,
        "Bash",
        json!({ "command": "rm state/ledger.db" }),
    );
    assert_eq!(got, "deny", "through the gate");
    drop(gate);
}
