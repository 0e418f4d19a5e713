//! Installing like a system tool, through the real binary: each agent's hooks into temporary
//! settings files (a stable program, the local file by default), `doctor` running the hook for
//! real, `uninstall`, and hardened systemd units checked by `systemd-analyze`.

mod common;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;

/// A user's world: a home, a project, a data directory, and a PATH without nightwatch on it.
struct World {
    home: PathBuf,
    project: PathBuf,
    data: PathBuf,
}

impl World {
    fn new(name: &str) -> World {
        let dir = common::scratch("install", name);
        let world = World {
            home: dir.join("home"),
            project: dir.join("project"),
            data: dir.join("data"),
        };
        for d in [&world.home, &world.project] {
            std::fs::create_dir_all(d).unwrap();
        }
        world
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut command = common::nightwatch_command(args);
        command
            .env("HOME", &self.home)
            .env("NIGHTWATCH_HOME", &self.data)
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&self.project);
        common::run_with_input(command, b"")
    }

    fn settings(&self, relative: &str) -> Value {
        let text = std::fs::read_to_string(self.project.join(relative))
            .unwrap_or_else(|e| panic!("{relative}: {e}"));
        serde_json::from_str(&text).expect("settings are JSON")
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Every hook command in a settings document.
fn commands(settings: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for groups in settings["hooks"]
        .as_object()
        .into_iter()
        .flat_map(|h| h.values())
    {
        for group in groups.as_array().into_iter().flatten() {
            for handler in group["hooks"].as_array().into_iter().flatten() {
                if let Some(c) = handler["command"].as_str() {
                    found.push(c.to_owned());
                }
            }
        }
    }
    found
}

/// Issue 15: installing from a build baked in `target/release/...`, which the next build
/// replaces; it wrote the committed settings; it said nothing of where the hook's data goes.
#[test]
fn install_claude_writes_the_local_file_with_a_stable_program_and_says_where_things_go() {
    let world = World::new("claude-local");
    let installed = world.run(&["install", "claude"]);
    assert_eq!(installed.status.code(), Some(0), "{}", text(&installed));
    let said = text(&installed);
    assert!(
        !world.project.join(".claude/settings.json").exists(),
        "{said}"
    );
    let settings = world.settings(".claude/settings.local.json");
    let copy = world.data.join("bin/nightwatch");
    let expected = format!(
        "env NIGHTWATCH_HOME={} {} hook claude",
        world.data.display(),
        copy.display()
    );
    let all = commands(&settings);
    assert!(
        !all.is_empty() && all.iter().all(|c| *c == expected),
        "{all:?}"
    );
    assert!(copy.exists(), "the binary was copied to a fixed place");
    assert!(
        said.contains(&format!("data directory: {}", world.data.display())),
        "{said}"
    );
    assert!(said.contains("policy: the built-in one"), "{said}");

    // Again: nothing changes.
    let again = world.run(&["install", "claude"]);
    assert!(
        text(&again).contains("nothing to change"),
        "{}",
        text(&again)
    );
    assert_eq!(world.settings(".claude/settings.local.json"), settings);

    // --shared writes the committed file.
    let shared = world.run(&["install", "claude", "--shared"]);
    assert_eq!(shared.status.code(), Some(0), "{}", text(&shared));
    assert!(!commands(&world.settings(".claude/settings.json")).is_empty());
}

/// `doctor` runs the installed hook as the agent would, for each agent, and says what to fix
/// when the chain is broken; `uninstall` takes the hooks out again.
#[test]
fn doctor_checks_each_agents_hook_for_real_and_uninstall_takes_it_out() {
    let world = World::new("doctor");
    for agent in ["claude", "codex", "gemini"] {
        let installed = world.run(&["install", agent]);
        // Codex runs no hook until it is trusted: install says so and does not succeed.
        let in_effect = if agent == "codex" { 1 } else { 0 };
        assert_eq!(
            installed.status.code(),
            Some(in_effect),
            "{}",
            text(&installed)
        );
        let doctor = world.run(&["doctor", agent]);
        assert_eq!(doctor.status.code(), Some(0), "{agent}: {}", text(&doctor));
        assert!(
            text(&doctor).contains("it allows `ls` and refuses `cat /etc/shadow`"),
            "{agent}: {}",
            text(&doctor)
        );
    }

    // The program the hooks run goes away: doctor says so, and what to do.
    std::fs::remove_file(world.data.join("bin/nightwatch")).unwrap();
    let broken = world.run(&["doctor", "claude"]);
    assert_eq!(broken.status.code(), Some(1), "{}", text(&broken));
    assert!(
        text(&broken).contains("not there or not executable"),
        "{}",
        text(&broken)
    );
    assert!(
        text(&broken).contains("nightwatch install claude"),
        "{}",
        text(&broken)
    );

    // A policy that does not load is found too.
    std::fs::write(
        world.data.join("policy.yaml"),
        "rules: [ {id: x, verdict: maybe} ]\n",
    )
    .unwrap();
    let bad_policy = world.run(&["doctor", "codex"]);
    assert_eq!(bad_policy.status.code(), Some(1), "{}", text(&bad_policy));
    assert!(
        text(&bad_policy).contains("the policy does not load"),
        "{}",
        text(&bad_policy)
    );
    std::fs::remove_file(world.data.join("policy.yaml")).unwrap();

    for agent in ["claude", "codex", "gemini"] {
        let removed = world.run(&["uninstall", agent]);
        assert_eq!(removed.status.code(), Some(0), "{}", text(&removed));
        assert!(
            text(&removed).contains("took nightwatch's"),
            "{}",
            text(&removed)
        );
    }
    assert!(commands(&world.settings(".claude/settings.local.json")).is_empty());
    assert!(commands(&world.settings(".codex/hooks.json")).is_empty());
    assert!(commands(&world.settings(".gemini/settings.json")).is_empty());
    let after = world.run(&["doctor"]);
    assert_eq!(after.status.code(), Some(0), "{}", text(&after));
    assert!(
        text(&after).contains("claude: not installed here"),
        "{}",
        text(&after)
    );
}

/// Seed 004's hardened unit, for the daemon and the resident gate: systemd's own tools accept
/// the units and rate their exposure low.
#[test]
fn install_systemd_writes_units_systemd_analyze_verifies_and_rates_safe() {
    let world = World::new("systemd");
    let units = world.project.join("units");
    let binary = env!("CARGO_BIN_EXE_nightwatch");
    let written = world.run(&[
        "install",
        "systemd",
        "--unit-dir",
        units.to_str().unwrap(),
        "--binary",
        binary,
    ]);
    assert_eq!(written.status.code(), Some(0), "{}", text(&written));
    for name in ["nightwatch-serve.service", "nightwatch-gate.service"] {
        let unit = units.join(name);
        let body = std::fs::read_to_string(&unit).unwrap();
        for setting in [
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "ProtectHome=yes",
            "PrivateTmp=yes",
            "CapabilityBoundingSet=\n",
            "User=nightwatch",
            "Restart=on-failure",
            "StartLimitIntervalSec=0",
        ] {
            assert!(body.contains(setting), "{name} lacks {setting:?}");
        }
        let verify = analyze(&["verify", unit.to_str().unwrap()]);
        assert_eq!(verify.status.code(), Some(0), "{name}: {}", text(&verify));
        // Exit status 0 only when the exposure is at most 2.0 ("OK").
        let security = analyze(&[
            "security",
            "--offline=true",
            "--threshold=20",
            unit.to_str().unwrap(),
        ]);
        assert_eq!(
            security.status.code(),
            Some(0),
            "{name}: {}",
            text(&security)
        );
        assert!(
            text(&security).contains("Overall exposure level"),
            "{}",
            text(&security)
        );
    }
}

fn analyze(args: &[&str]) -> Output {
    std::process::Command::new("systemd-analyze")
        .args(args)
        .output()
        .expect("systemd-analyze is installed (Debian: systemd); the test needs it")
}

/// Completions and man pages come from the CLI's definitions: bash accepts the script and
/// completes the commands, and `man` renders a page per command.
#[test]
fn completions_and_man_pages_are_generated_from_the_cli() {
    let world = World::new("manual");
    let script = world.run(&["completions", "bash"]);
    assert_eq!(script.status.code(), Some(0), "{}", text(&script));
    let path = world.project.join("nightwatch.bash");
    std::fs::write(&path, &script.stdout).unwrap();
    let sourced = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {} && complete -p nightwatch && COMP_WORDS=(nightwatch do) COMP_CWORD=1 \
             && _nightwatch nightwatch do nightwatch && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            path.display()
        ))
        .output()
        .expect("bash runs");
    assert_eq!(sourced.status.code(), Some(0), "{}", text(&sourced));
    assert!(
        String::from_utf8_lossy(&sourced.stdout)
            .lines()
            .any(|l| l == "doctor"),
        "{}",
        text(&sourced)
    );

    let pages = world.project.join("man1");
    let written = world.run(&["man", "--dir", pages.to_str().unwrap()]);
    assert_eq!(written.status.code(), Some(0), "{}", text(&written));
    for page in [
        "nightwatch.1",
        "nightwatch-check.1",
        "nightwatch-doctor.1",
        "nightwatch-policy-diff.1",
    ] {
        let file = pages.join(page);
        assert!(file.exists(), "{page}: {}", text(&written));
        let rendered = std::process::Command::new("man")
            .args(["-l", "-Tutf8"])
            .arg(&file)
            .env("MANWIDTH", "100")
            .output()
            .expect("man runs");
        assert_eq!(
            rendered.status.code(),
            Some(0),
            "{page}: {}",
            text(&rendered)
        );
        assert!(!rendered.stdout.is_empty(), "{page} renders");
    }
    let check = std::fs::read_to_string(pages.join("nightwatch-check.1")).unwrap();
    assert!(
        check.contains("strictest"),
        "the page carries the command's long help"
    );
}
