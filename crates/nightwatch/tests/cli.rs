//! The real binary, as an operator or a script would run it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn nightwatch(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nightwatch"))
        .args(args)
        .env("NIGHTWATCH_HOME", home)
        .env_remove("NIGHTWATCH_POLICY")
        .output()
        .expect("the nightwatch binary runs")
}

fn scratch(name: &str) -> PathBuf {
    common::scratch("cli", name)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn example_policy() -> String {
    format!(
        "{}/../../examples/agent-vm.yaml",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn read_only_pipeline_is_allowed_with_exit_zero() {
    let home = scratch("allow");
    let output = nightwatch(&home, &["check", "ps aux | grep nginx | head -5"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(stdout(&output).starts_with("ALLOW: ps aux"));
}

#[test]
fn docker_hidden_after_cd_is_denied_with_where_to_go() {
    let home = scratch("docker");
    let policy = example_policy();
    let output = nightwatch(
        &home,
        &[
            "check",
            "--policy",
            &policy,
            "cd /srv/app && docker compose up -d",
        ],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    let text = stdout(&output);
    assert!(text.contains("docker-belongs-on-the-dev-host"), "{text}");
    assert!(
        text.contains("instead: run it on the shared dev host"),
        "{text}"
    );
}

#[test]
fn json_names_every_invocation_with_its_verdict_and_rule() {
    let home = scratch("json");
    let output = nightwatch(&home, &["check", "--json", "--", "ls && sudo rm -rf /etc"]);
    assert_eq!(output.status.code(), Some(2));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(value["verdict"], "deny");
    assert!(value["reason"].as_str().is_some_and(|r| !r.is_empty()));
    let invocations = value["invocations"].as_array().expect("invocations");
    let names: Vec<&str> = invocations
        .iter()
        .map(|i| i["argv"][0].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["ls", "sudo", "rm"]);
    let rm = &invocations[2];
    assert_eq!(rm["verdict"], "deny");
    assert_eq!(rm["via"][0], "sudo");
    assert_eq!(rm["effects"]["deletes"][0], "/etc");
    assert!(rm["rule"].as_str().is_some_and(|r| !r.is_empty()));
    assert_eq!(invocations[0]["verdict"], "allow");
}

#[test]
fn exit_status_is_zero_only_for_allow() {
    let home = scratch("exit");
    for (line, code) in [("uptime", 0), ("cargo build", 3), ("reboot", 2)] {
        let output = nightwatch(&home, &["check", line]);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{line}: {}",
            stdout(&output)
        );
    }
}

#[test]
fn broken_policy_is_refused_with_line_and_column() {
    let home = scratch("broken");
    let path = home.join("bad.yaml");
    std::fs::write(&path, "version: 1\nrules:\n  - id: x\n    verdict: maybe\n").expect("write");
    let output = nightwatch(
        &home,
        &["check", "--policy", path.to_str().unwrap_or_default(), "ls"],
    );
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(message.contains("bad.yaml:4:"), "{message}");
    assert!(message.contains("maybe"), "{message}");
}

#[test]
fn missing_policy_file_is_an_error_not_a_fallback() {
    let home = scratch("missing");
    let output = nightwatch(
        &home,
        &["check", "--policy", "/nonexistent/policy.yaml", "ls"],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("cannot read policy"));
}

#[test]
fn init_writes_the_default_policy_which_then_governs_check() {
    let home = scratch("init");
    let first = nightwatch(&home, &["init"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let written = std::fs::read_to_string(home.join("policy.yaml")).expect("policy written");
    assert!(
        written.starts_with('#'),
        "the written policy carries its comments"
    );
    let again = nightwatch(&home, &["init"]);
    assert_eq!(
        again.status.code(),
        Some(1),
        "init must not overwrite without --force"
    );

    // Replace it with a stricter one: the data directory's file is what `check` uses.
    std::fs::write(home.join("policy.yaml"), "version: 1\ndefault: deny\n").expect("rewrite");
    let output = nightwatch(&home, &["check", "--json", "make deploy"]);
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(value["verdict"], "deny");
    assert!(
        value["policy"]
            .as_str()
            .is_some_and(|p| p.ends_with("policy.yaml"))
    );
}

#[test]
fn policy_test_runs_every_example_and_reports_failures() {
    let home = scratch("policy-test");
    let ok = nightwatch(&home, &["policy", "test", "--policy", &example_policy()]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    assert!(
        stdout(&ok).contains("9 passed, 0 failed"),
        "{}",
        stdout(&ok)
    );

    let path = home.join("wrong.yaml");
    std::fs::write(
        &path,
        "version: 1\ndefault: ask\nexamples:\n  - command: ls\n    expect: ask\n  - command: reboot\n    expect: allow\n",
    )
    .expect("write");
    let failing = nightwatch(
        &home,
        &[
            "policy",
            "test",
            "--policy",
            path.to_str().unwrap_or_default(),
        ],
    );
    assert_eq!(failing.status.code(), Some(1));
    let text = stdout(&failing);
    assert!(text.contains("FAIL"), "{text}");
    assert!(text.contains("1 passed, 1 failed"), "{text}");
}

#[test]
fn usage_errors_do_not_look_like_a_verdict() {
    let home = scratch("usage");
    let output = nightwatch(&home, &["check"]);
    assert_eq!(output.status.code(), Some(1));
    let help = nightwatch(&home, &["check", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    let flowed = stdout(&help)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flowed.contains("Exit status: 0 allow, 2 deny, 3 ask, 4 halt, 1 error"),
        "{flowed}"
    );
}

/// `nightwatch ... | head`: when the reader has gone, a command ends quietly (killed by
/// SIGPIPE, as `cat` is), never with a panic or an "internal error". The hook is the exception
/// on purpose: its every failure is a refusal, exit 2.
#[test]
fn a_reader_that_has_gone_ends_the_output_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let home = scratch("closed-pipe");
    let init = nightwatch(&home, &["init"]);
    assert!(init.status.success(), "{}", stderr(&init));
    for args in [
        &["check", "ps aux | grep nginx"][..],
        &["check", "--json", "rm -rf /"][..],
        &["log", "--json"][..],
        &["--help"][..],
    ] {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        // The reader is gone before the command writes a byte.
        drop(reader);
        let output = Command::new(env!("CARGO_BIN_EXE_nightwatch"))
            .args(args)
            .env("NIGHTWATCH_HOME", &home)
            .env_remove("NIGHTWATCH_POLICY")
            .stdout(writer)
            .output()
            .expect("the nightwatch binary runs");
        let err = stderr(&output);
        assert!(
            !err.contains("panicked") && !err.contains("internal error"),
            "{args:?}: {err}"
        );
        assert!(
            output.status.signal() == Some(libc::SIGPIPE) || output.status.code() == Some(0),
            "{args:?}: {:?} {err}",
            output.status
        );
    }
}

/// A line nightwatch cannot read is asked about, and the text says why, as the JSON does.
#[test]
fn an_unparseable_line_says_why_it_was_asked() {
    let home = scratch("opaque-text");
    let output = nightwatch(&home, &["check", "echo \"unterminated"]);
    assert_eq!(output.status.code(), Some(3), "{}", stdout(&output));
    let text = stdout(&output);
    assert!(text.contains("does not parse as bash"), "{text}");
    assert!(text.contains("unterminated double quote"), "{text}");
}

/// The check command `examples/serve.yaml` prints, run exactly as printed (from the
/// repository's root, this binary first on PATH), passes.
#[test]
fn the_check_command_the_serve_example_prints_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let example = std::fs::read_to_string(root.join("examples/serve.yaml")).unwrap();
    let command = example
        .lines()
        .find_map(|l| l.strip_prefix("# Check it with: "))
        .expect("the example prints its check command");
    let bin = Path::new(env!("CARGO_BIN_EXE_nightwatch"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("sh")
        .args(["-c", command])
        .current_dir(&root)
        .env("PATH", path)
        .env("NIGHTWATCH_HOME", scratch("serve-example"))
        .env_remove("NIGHTWATCH_POLICY")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{command}: {}{}",
        stdout(&output),
        stderr(&output)
    );
}

/// `policy diff` decides nightwatch's corpora under two policies: the example that extends the
/// built-in policy only tightens it (Docker), and a file that loosens is listed LOOSER first.
#[test]
fn policy_diff_lists_what_a_policy_changes_looser_first() {
    let home = scratch("policy-diff");
    let same = nightwatch(&home, &["policy", "diff", "builtin", "builtin"]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    assert!(stdout(&same).contains(": 0 differ"), "{}", stdout(&same));

    let example = example_policy();
    let tightened = nightwatch(&home, &["policy", "diff", "builtin", &example, "--json"]);
    assert_eq!(tightened.status.code(), Some(3), "{}", stderr(&tightened));
    let report: serde_json::Value = serde_json::from_slice(&tightened.stdout).unwrap();
    assert_eq!(report["looser"], 0, "{report}");
    assert!(report["lines"].as_u64().unwrap() > 1500, "{report}");
    let docker = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["line"] == "docker ps")
        .expect("docker ps changes");
    assert_eq!(docker["old"]["verdict"], "allow");
    assert_eq!(docker["new"]["verdict"], "deny");
    assert_eq!(docker["new"]["rule"], "docker-belongs-on-the-dev-host");

    let loose = home.join("loose.yaml");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        &loose,
        "extends: builtin\nloosen: [no-force-push-to-main]\nrules:\n  - id: no-curl\n    verdict: deny\n    command: [\"curl *\"]\n",
    )
    .unwrap();
    let mine = home.join("lines.txt");
    std::fs::write(
        &mine,
        "# mine\ngit push --force origin main\ncurl https://example.com\n",
    )
    .unwrap();
    let loosened = nightwatch(
        &home,
        &[
            "policy",
            "diff",
            "builtin",
            loose.to_str().unwrap(),
            "--lines",
            mine.to_str().unwrap(),
        ],
    );
    assert_eq!(loosened.status.code(), Some(3), "{}", stderr(&loosened));
    let text = stdout(&loosened);
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("LOOSER"), "looser first: {text}");
    assert!(text.contains("git push --force origin main"), "{text}");
    let last = text.lines().last().unwrap_or_default();
    assert!(!last.contains(" 0 looser"), "{text}");
}

/// `policy explain` lists a policy's rules with where each was written, and explains one rule
/// with the corpus lines it decides; an unknown rule is an error that says how to find them.
#[test]
fn policy_explain_shows_each_rule_where_it_comes_from_and_what_it_decides() {
    let home = scratch("policy-explain");
    let example = example_policy();
    let listed = nightwatch(&home, &["policy", "explain", "--policy", &example]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let text = stdout(&listed);
    assert!(
        text.lines().any(|l| l.contains("deny") && l.trim_end().ends_with("docker-belongs-on-the-dev-host")),
        "{text}"
    );
    assert!(
        text.contains("no-reading-secrets  (from builtin)"),
        "{text}"
    );

    let one = nightwatch(
        &home,
        &[
            "policy",
            "explain",
            "--policy",
            &example,
            "no-reading-secrets",
        ],
    );
    assert_eq!(one.status.code(), Some(0), "{}", stderr(&one));
    let text = stdout(&one);
    assert!(text.starts_with("no-reading-secrets (builtin)"), "{text}");
    assert!(text.contains("verdict: deny"), "{text}");
    assert!(text.contains("cat .env"), "{text}");

    let unknown = nightwatch(&home, &["policy", "explain", "no-reading-secret"]);
    assert_eq!(unknown.status.code(), Some(1), "{}", stdout(&unknown));
    assert!(
        stderr(&unknown).contains("did you mean no-reading-secrets"),
        "{}",
        stderr(&unknown)
    );
}
