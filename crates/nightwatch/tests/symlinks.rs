//! Symlinks at decision time, through the real binary: a project that ships `s -> ~/.ssh`,
//! `creds -> ~/.aws/credentials` and `up -> ..` does not turn reading a secret into reading a
//! project file, whichever agent asks, by which tool, and `nightwatch check` in the same
//! directory and environment says what the hook says.

mod common;

use common::sandbox::{Agent, Sandbox, patch};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A home with an SSH key, AWS and gcloud credentials, and a project inside it that links to
/// them.
fn sandbox(name: &str) -> Sandbox {
    let sandbox = Sandbox::new("symlinks", name);
    sandbox.file("home/.ssh/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----");
    sandbox.file("home/.ssh/authorized_keys", "ssh-ed25519 AAAA ops");
    sandbox.file(
        "home/.aws/credentials",
        "[default]\naws_secret_access_key = x",
    );
    // A store matched by where it is, not by its file name.
    sandbox.file("home/.config/gcloud/credentials.db", "tokens");
    sandbox.file("home/project/README.md", "# project");
    sandbox.file("home/project/docs/guide.md", "read me");
    sandbox.file("shared/notes.txt", "harmless");
    sandbox.link(sandbox.home.join(".ssh"), "home/project/s");
    sandbox.link(sandbox.home.join(".aws/credentials"), "home/project/creds");
    sandbox.link("..", "home/project/up");
    sandbox.link(sandbox.home.join(".config"), "home/project/g");
    sandbox.link("../s", "home/project/docs/keys");
    // Dangling: what a write through it would create.
    sandbox.link(
        sandbox.home.join(".ssh/authorized_keys2"),
        "home/project/later",
    );
    sandbox.link(sandbox.root.join("shared/notes.txt"), "home/project/notes");
    sandbox
}

/// `!allow` means any verdict but allow.
fn matches(got: &str, expected: &str) -> bool {
    match expected.strip_prefix('!') {
        Some(not) => got != not,
        None => got == expected,
    }
}

/// Shell lines through a symlink into a secret, and the project's own files beside them.
const LINES: &[(&str, &str)] = &[
    ("cat s/id_rsa", "deny"),
    ("cd s && cat id_rsa", "deny"),
    ("cat g/gcloud/credentials.db", "deny"),
    ("cd g && cat gcloud/credentials.db", "deny"),
    ("cat creds", "deny"),
    ("cat ./creds", "deny"),
    ("cat up/.aws/credentials", "deny"),
    ("cat docs/keys/id_rsa", "deny"),
    ("head -c 100 s/id_*", "deny"),
    ("cp creds /tmp/stolen", "deny"),
    ("base64 < creds", "deny"),
    ("grep -r aws_secret_access_key up", "!allow"),
    ("echo ssh-ed25519 AAAA me >> s/authorized_keys", "deny"),
    ("echo x > later", "deny"),
    ("cat README.md", "allow"),
    ("cat docs/guide.md", "allow"),
    ("cat notes", "allow"),
    ("grep -rn TODO docs", "allow"),
];

#[test]
fn a_projects_symlinks_to_secrets_are_the_secrets_for_every_agents_shell() {
    let sandbox = sandbox("shell");
    let mut failures = Vec::new();
    for (line, expected) in LINES {
        for agent in Agent::ALL {
            // Codex and Gemini have no ask: theirs is a deny that says so.
            let got = sandbox.hook(agent, agent.shell(), json!({ "command": line }));
            if !matches(&got, expected) {
                failures.push(format!("{agent:?}: {line} -> {got}, want {expected}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn check_in_the_same_directory_agrees_with_the_hook() {
    let sandbox = sandbox("check");
    for (line, _) in LINES {
        let hook = sandbox.hook(Agent::Claude, "Bash", json!({ "command": line }));
        let check = sandbox.check(line, &sandbox.project);
        assert_eq!(check, hook, "check and hook on {line}");
    }
}

#[test]
fn file_tools_are_judged_where_their_path_leads() {
    let sandbox = sandbox("tools");
    let project = |rest: &str| sandbox.project.join(rest).display().to_string();
    let rows: Vec<(Agent, &str, Value, &str)> = vec![
        (
            Agent::Claude,
            "Read",
            json!({ "file_path": project("s/id_rsa") }),
            "deny",
        ),
        (
            Agent::Claude,
            "Read",
            json!({ "file_path": "creds" }),
            "deny",
        ),
        (
            Agent::Claude,
            "Read",
            json!({ "file_path": project("up/.ssh/id_rsa") }),
            "deny",
        ),
        (
            Agent::Gemini,
            "read_file",
            json!({ "absolute_path": project("s/id_rsa") }),
            "deny",
        ),
        (
            Agent::Gemini,
            "read_file",
            json!({ "absolute_path": project("creds") }),
            "deny",
        ),
        (
            Agent::Codex,
            "apply_patch",
            patch("s/authorized_keys", false),
            "deny",
        ),
        (Agent::Codex, "apply_patch", patch("later", true), "deny"),
        (
            Agent::Claude,
            "Write",
            json!({ "file_path": project("later"), "content": "ssh-ed25519 AAAA x" }),
            "deny",
        ),
        (
            Agent::Claude,
            "Edit",
            json!({ "file_path": project("s/authorized_keys"), "old_string": "a", "new_string": "b" }),
            "deny",
        ),
        (
            Agent::Gemini,
            "write_file",
            json!({ "file_path": project("docs/keys/authorized_keys"), "content": "x" }),
            "deny",
        ),
        (
            Agent::Claude,
            "mcp__filesystem__read_file",
            json!({ "path": project("creds") }),
            "deny",
        ),
        (
            Agent::Claude,
            "Read",
            json!({ "file_path": project("README.md") }),
            "allow",
        ),
        (
            Agent::Gemini,
            "read_file",
            json!({ "absolute_path": project("notes") }),
            "allow",
        ),
    ];
    let mut failures = Vec::new();
    for (agent, tool, inputs, expected) in rows {
        let got = sandbox.hook(agent, tool, inputs.clone());
        if !matches(&got, expected) {
            failures.push(format!(
                "{agent:?} {tool} {inputs} -> {got}, want {expected}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_call_without_a_directory_is_judged_in_the_hooks_own() {
    let sandbox = sandbox("no-cwd");
    let hook = |line: &str| {
        sandbox.hook_in(
            Agent::Claude,
            "Bash",
            json!({ "command": line }),
            None,
            &sandbox.project,
        )
    };
    assert_eq!(hook("cat creds"), "deny");
    assert_eq!(hook("cat README.md"), "allow");
}

/// `nightwatch gate` started elsewhere, with another home, stopped when dropped.
struct ResidentGate(Child);

impl ResidentGate {
    fn start(sandbox: &Sandbox, home: &Path) -> ResidentGate {
        let child = Command::new(env!("CARGO_BIN_EXE_nightwatch"))
            .arg("gate")
            .current_dir(&sandbox.root)
            .env("NIGHTWATCH_HOME", &sandbox.data)
            .env("HOME", home)
            .env_remove("NIGHTWATCH_POLICY")
            .stderr(Stdio::null())
            .spawn()
            .expect("the gate starts");
        let socket = sandbox.data.join("gate.sock");
        let started = Instant::now();
        while !socket.exists() {
            assert!(started.elapsed() < Duration::from_secs(10), "no socket");
            std::thread::sleep(Duration::from_millis(10));
        }
        ResidentGate(child)
    }
}

impl Drop for ResidentGate {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_resident_gate_resolves_paths_where_the_hook_runs() {
    let sandbox = sandbox("resident");
    let elsewhere = sandbox.root.join("gate-home");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let gate = ResidentGate::start(&sandbox, &elsewhere);
    let hook = |line: &str, payload_cwd: Option<&Path>| {
        sandbox.hook_in(
            Agent::Claude,
            "Bash",
            json!({ "command": line }),
            payload_cwd,
            &sandbox.project,
        )
    };
    for cwd in [Some(sandbox.project.as_path()), None] {
        assert_eq!(hook("cat creds", cwd), "deny", "cwd {cwd:?}");
        assert_eq!(hook("cd s && cat id_rsa", cwd), "deny", "cwd {cwd:?}");
        assert_eq!(hook("cat README.md", cwd), "allow", "cwd {cwd:?}");
    }
    assert!(
        sandbox.data.join("gate.sock").exists(),
        "the gate answered, not the hook alone"
    );
    drop(gate);
}

/// `./~` is a directory named `~`, not home; blank lines are a line that runs nothing, for the
/// hook as for `check`.
#[test]
fn edges_check_and_hook_agree_on() {
    let sandbox = sandbox("edges");
    sandbox.file("home/project/~/notes.txt", "a directory named ~");
    sandbox.file("home/project/tilde/notes.txt", "a directory named tilde");
    for line in ["", "   ", "\t", "rm -rf ./~", "cat ./~/notes.txt"] {
        let hook = sandbox.hook(Agent::Claude, "Bash", json!({ "command": line }));
        let check = sandbox.check(line, &sandbox.project);
        assert_eq!(hook, check, "check and hook on {line:?}");
    }
    assert_eq!(sandbox.check("", &sandbox.project), "ask", "nothing to run");
    assert_eq!(
        sandbox.check("rm -rf ./~", &sandbox.project),
        sandbox.check("rm -rf ./tilde", &sandbox.project),
        "./~ is a project directory like any other"
    );
    assert_eq!(
        sandbox.check("cat ./~/notes.txt", &sandbox.project),
        "allow"
    );
}
