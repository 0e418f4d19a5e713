//! Policy as a whole: reading files, refusing bad ones at the right place, and deciding.

use super::*;
use nightwatch_core::{Actor, ActorKind, Arg, Context, Effects, Remote, RemoteKind};

/// An invocation from words the way the analyser leaves them: `-x` is a flag, `-x=v` a flag
/// with a value, anything else a positional.
fn invocation(words: &str) -> Invocation {
    let argv: Vec<String> = words.split_whitespace().map(str::to_owned).collect();
    let args = argv
        .iter()
        .skip(1)
        .map(|word| {
            if word.len() > 1 && word.starts_with('-') {
                match word.split_once('=') {
                    Some((name, value)) => Arg::Flag {
                        name: name.to_owned(),
                        value: Some(value.to_owned()),
                    },
                    None => Arg::Flag {
                        name: word.clone(),
                        value: None,
                    },
                }
            } else {
                Arg::Positional(word.clone())
            }
        })
        .collect();
    Invocation {
        argv,
        args,
        ..Invocation::default()
    }
}

/// Adds a flag whose value holds spaces, which `invocation` cannot spell.
fn with_flag(mut invocation: Invocation, name: &str, value: &str) -> Invocation {
    invocation.args.push(Arg::Flag {
        name: name.to_owned(),
        value: Some(value.to_owned()),
    });
    invocation
}

fn with_effects(mut invocation: Invocation, effects: Effects) -> Invocation {
    invocation.effects = effects;
    invocation
}

fn opaque(mut invocation: Invocation, why: &str) -> Invocation {
    invocation.opaque = Some(why.to_owned());
    invocation
}

fn deletes(paths: &[&str]) -> Effects {
    Effects {
        deletes: paths.iter().map(|p| (*p).to_owned()).collect(),
        ..Effects::default()
    }
}

fn writes(paths: &[&str]) -> Effects {
    Effects {
        writes: paths.iter().map(|p| (*p).to_owned()).collect(),
        ..Effects::default()
    }
}

fn reads(paths: &[&str]) -> Effects {
    Effects {
        reads: paths.iter().map(|p| (*p).to_owned()).collect(),
        ..Effects::default()
    }
}

fn policy(source: &str) -> Policy {
    match Policy::from_yaml(source, nightwatch_shell::analyse) {
        Ok(policy) => policy,
        Err(err) => panic!("policy did not load: {err}\n{source}"),
    }
}

fn error(source: &str) -> String {
    match Policy::from_yaml(source, nightwatch_shell::analyse) {
        Ok(_) => panic!("policy should have been refused:\n{source}"),
        Err(err) => err.to_string(),
    }
}

/// The verdict and deciding rule for hand-built invocations run as an agent's exec line.
fn judge(policy: &Policy, invocations: &[Invocation]) -> (Verdict, Option<String>) {
    let decision = policy.decide_analysed(&Action::exec("(hand-built)"), invocations);
    (decision.verdict, decision.rule)
}

fn judge_one(policy: &Policy, invocation: Invocation) -> (Verdict, Option<String>) {
    judge(policy, &[invocation])
}

fn rule(id: &str) -> Option<String> {
    Some(id.to_owned())
}

// ---------------------------------------------------------------------------------------------
// The built-in policy
// ---------------------------------------------------------------------------------------------

#[test]
fn builtin_policy_compiles() {
    let compiled = Policy::compile(DEFAULT_POLICY_YAML, nightwatch_shell::analyse);
    let policy = match compiled {
        Ok(policy) => policy,
        Err(err) => panic!("default.yaml:{err}"),
    };
    assert!(policy.rule_count() >= 20);
    assert!(policy.examples().len() >= 40, "{}", policy.examples().len());
    assert_eq!(policy.default_verdict(), Verdict::Ask);
    assert_eq!(policy.opaque_verdict(), Verdict::Ask);
    // builtin() is the same policy, not the ask-everything fallback.
    assert_eq!(
        Policy::builtin(nightwatch_shell::analyse).rule_count(),
        policy.rule_count()
    );
}

#[test]
fn builtin_examples_pass_with_the_shell_analyser() {
    let failures: Vec<String> = Policy::compile(DEFAULT_POLICY_YAML, nightwatch_shell::analyse)
        .expect("default.yaml compiles")
        .run_examples()
        .into_iter()
        .filter(|outcome| !outcome.passed)
        .map(|o| {
            format!(
                "default.yaml:{}: {} expects {} but got {} ({})",
                o.line.unwrap_or(0),
                o.description,
                o.expected,
                o.actual,
                o.reason
            )
        })
        .collect();
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

/// `builtin()` reads the JSON that `build.rs` makes from default.yaml: it must be the same
/// policy, rule for rule and decision for decision, as reading the YAML.
#[test]
fn builtin_from_json_decides_as_the_yaml_does() {
    let yaml = Policy::compile(DEFAULT_POLICY_YAML, nightwatch_shell::analyse)
        .expect("default.yaml compiles");
    let json = Policy::builtin(nightwatch_shell::analyse);
    assert!(
        json.examples().is_empty(),
        "examples are run by the tests, not at load"
    );
    assert_eq!(
        json.rule_ids().collect::<Vec<_>>(),
        yaml.rule_ids().collect::<Vec<_>>()
    );
    assert_eq!(json.default_verdict(), yaml.default_verdict());
    assert_eq!(json.opaque_verdict(), yaml.opaque_verdict());
    for example in yaml.examples() {
        let (from_yaml, from_json) = (yaml.decide(&example.action), json.decide(&example.action));
        assert_eq!(
            (from_json.verdict, &from_json.rule, &from_json.reason),
            (from_yaml.verdict, &from_yaml.rule, &from_yaml.reason),
            "{}",
            example.description()
        );
    }
}

/// The default rules against invocations shaped by hand as the analyser shapes them, so that
/// the policy's intent is tested whatever state the analyser is in.
#[test]
fn builtin_rules_decide_hand_built_invocations() {
    let policy = Policy::builtin(nightwatch_shell::analyse);
    let table: Vec<(Invocation, Verdict, Option<&str>)> = vec![
        (invocation("ls -l -a"), Verdict::Allow, Some("inspection")),
        (
            with_effects(invocation("cat README.md"), reads(&["README.md"])),
            Verdict::Allow,
            Some("inspection"),
        ),
        (
            with_effects(invocation("ls"), writes(&["listing.txt"])),
            Verdict::Ask,
            None,
        ),
        (
            invocation("git status"),
            Verdict::Allow,
            Some("git-reading"),
        ),
        (
            invocation("git -C=repo status"),
            Verdict::Allow,
            Some("git-reading"),
        ),
        (
            invocation("git branch -a"),
            Verdict::Allow,
            Some("git-reading"),
        ),
        (invocation("git branch topic"), Verdict::Ask, None),
        (
            invocation("git branch -D topic"),
            Verdict::Ask,
            Some("git-commands-that-change-things"),
        ),
        (
            invocation("git branch --set-upstream-to=origin/main"),
            Verdict::Ask,
            Some("git-commands-that-change-things"),
        ),
        (invocation("git tag"), Verdict::Allow, Some("git-reading")),
        (invocation("git tag v1.0"), Verdict::Ask, None),
        (
            invocation("git remote -v"),
            Verdict::Allow,
            Some("git-reading"),
        ),
        (invocation("git remote -v add x url"), Verdict::Ask, None),
        (
            invocation("git diff --output=patch.txt"),
            Verdict::Ask,
            Some("git-commands-that-change-things"),
        ),
        (
            invocation("systemctl status nginx"),
            Verdict::Allow,
            Some("systemd-reading"),
        ),
        (
            invocation("systemctl"),
            Verdict::Allow,
            Some("systemd-reading"),
        ),
        (
            with_effects(
                invocation("systemctl restart nginx"),
                Effects {
                    service_control: true,
                    ..Effects::default()
                },
            ),
            Verdict::Ask,
            None,
        ),
        (
            invocation("journalctl --vacuum-time=2d"),
            Verdict::Ask,
            Some("inspection-commands-that-change-things"),
        ),
        (
            invocation("journalctl -u=nginx -f"),
            Verdict::Allow,
            Some("systemd-reading"),
        ),
        (
            invocation("docker ps -a"),
            Verdict::Allow,
            Some("docker-reading"),
        ),
        (invocation("docker stats"), Verdict::Ask, None),
        (
            invocation("docker stats --no-stream"),
            Verdict::Allow,
            Some("docker-reading"),
        ),
        (
            invocation("docker compose ps"),
            Verdict::Allow,
            Some("docker-reading"),
        ),
        (invocation("docker compose up -d"), Verdict::Ask, None),
        (
            invocation("kubectl get pods"),
            Verdict::Allow,
            Some("kubernetes-reading"),
        ),
        (
            invocation("kubectl get secret db -o=yaml"),
            Verdict::Ask,
            Some("kubernetes-secrets"),
        ),
        (
            invocation("ip addr"),
            Verdict::Allow,
            Some("network-inspection"),
        ),
        (
            invocation("ip route show"),
            Verdict::Allow,
            Some("network-inspection"),
        ),
        (invocation("ip link set eth0 down"), Verdict::Ask, None),
        (
            invocation("top -b -n=1"),
            Verdict::Allow,
            Some("inspection"),
        ),
        (invocation("top"), Verdict::Ask, None),
        (invocation("hostname"), Verdict::Allow, Some("inspection")),
        (invocation("hostname newname"), Verdict::Ask, None),
        (
            invocation("date -s=2020-01-01"),
            Verdict::Ask,
            Some("inspection-commands-that-change-things"),
        ),
        (
            invocation("find . -name=x -delete"),
            Verdict::Ask,
            Some("inspection-commands-that-change-things"),
        ),
        (invocation("["), Verdict::Allow, Some("inspection")),
        (invocation("true"), Verdict::Allow, Some("inspection")),
        (
            invocation("env"),
            Verdict::Ask,
            Some("printing-the-environment"),
        ),
        (
            invocation("env A=1"),
            Verdict::Ask,
            Some("printing-the-environment"),
        ),
        (
            invocation("env A=1 make"),
            Verdict::Allow,
            Some("harmless-wrappers"),
        ),
        (
            invocation("printenv"),
            Verdict::Ask,
            Some("printing-the-environment"),
        ),
        // Destructive classics.
        (
            with_effects(invocation("rm -r -f /"), deletes(&["/"])),
            Verdict::Deny,
            Some("no-deleting-system-directories"),
        ),
        (
            with_effects(invocation("rm -r -f /etc/*"), deletes(&["/etc/*"])),
            Verdict::Deny,
            Some("no-deleting-system-directories"),
        ),
        (
            with_effects(invocation("rm -r -f ~/*"), deletes(&["~/*"])),
            Verdict::Deny,
            Some("no-deleting-system-directories"),
        ),
        (
            with_effects(invocation("rm -r -f /usr/lib"), deletes(&["/usr/lib"])),
            Verdict::Deny,
            Some("no-deleting-system-directories"),
        ),
        (
            with_effects(invocation("rm -r -f build"), deletes(&["build"])),
            Verdict::Ask,
            None,
        ),
        (
            with_effects(invocation("find / -delete"), deletes(&["/"])),
            Verdict::Deny,
            Some("no-deleting-system-directories"),
        ),
        (
            with_effects(invocation("chmod -R 777 /"), writes(&["/"])),
            Verdict::Deny,
            Some("no-recursive-permission-changes-on-system-directories"),
        ),
        (
            with_effects(invocation("chmod 644 /srv/app/x"), writes(&["/srv/app/x"])),
            Verdict::Ask,
            None,
        ),
        (
            invocation("mkfs.ext4 /dev/sdb1"),
            Verdict::Deny,
            Some("no-formatting-disks"),
        ),
        (
            with_effects(
                invocation("dd if=/dev/zero of=/dev/sda"),
                writes(&["/dev/sda"]),
            ),
            Verdict::Deny,
            Some("no-writing-to-disk-devices"),
        ),
        (invocation("reboot"), Verdict::Deny, Some("no-powering-off")),
        (
            invocation("systemctl --force reboot"),
            Verdict::Deny,
            Some("no-powering-off"),
        ),
        (invocation("init 0"), Verdict::Deny, Some("no-powering-off")),
        (
            invocation("iptables -F"),
            Verdict::Deny,
            Some("no-dropping-the-firewall"),
        ),
        (
            invocation("iptables -t=nat -F"),
            Verdict::Deny,
            Some("no-dropping-the-firewall"),
        ),
        (
            invocation("nft flush ruleset"),
            Verdict::Deny,
            Some("no-dropping-the-firewall"),
        ),
        (
            invocation("crontab -r"),
            Verdict::Deny,
            Some("no-wiping-crontabs"),
        ),
        (invocation("crontab -l"), Verdict::Ask, None),
        (
            invocation("kill -9 1"),
            Verdict::Deny,
            Some("no-killing-init-or-everything"),
        ),
        (
            invocation("kill 1"),
            Verdict::Deny,
            Some("no-killing-init-or-everything"),
        ),
        (
            invocation("kill -9 -1"),
            Verdict::Deny,
            Some("no-killing-init-or-everything"),
        ),
        (invocation("kill -9 1234"), Verdict::Ask, None),
        (invocation("kill -1 1234"), Verdict::Ask, None),
        (
            invocation("pkill -f sshd"),
            Verdict::Deny,
            Some("no-stopping-ssh"),
        ),
        (
            invocation("killall sshd"),
            Verdict::Deny,
            Some("no-stopping-ssh"),
        ),
        (
            invocation("systemctl stop ssh"),
            Verdict::Deny,
            Some("no-stopping-ssh"),
        ),
        (
            invocation("systemctl disable --now sshd.service"),
            Verdict::Deny,
            Some("no-stopping-ssh"),
        ),
        (
            invocation("service sshd stop"),
            Verdict::Deny,
            Some("no-stopping-ssh"),
        ),
        (
            invocation("git push --force origin main"),
            Verdict::Deny,
            Some("no-force-push-to-main"),
        ),
        (
            invocation("git push origin main --force"),
            Verdict::Deny,
            Some("no-force-push-to-main"),
        ),
        (
            invocation("git push --force-with-lease origin master"),
            Verdict::Deny,
            Some("no-force-push-to-main"),
        ),
        (
            invocation("git push --force origin HEAD:main"),
            Verdict::Deny,
            Some("no-force-push-to-main"),
        ),
        (
            invocation("git push origin +main"),
            Verdict::Deny,
            Some("no-force-push-to-main"),
        ),
        (
            invocation("git push origin +HEAD:refs/heads/main"),
            Verdict::Deny,
            Some("no-force-push-to-main"),
        ),
        (
            invocation("git push origin :main"),
            Verdict::Deny,
            Some("no-force-push-to-main"),
        ),
        (
            invocation("git push -d origin main"),
            Verdict::Deny,
            Some("no-force-push-to-main"),
        ),
        (
            invocation("git push --force origin feature"),
            Verdict::Ask,
            None,
        ),
        (invocation("git push origin main"), Verdict::Ask, None),
        (
            invocation("git push origin main:feature"),
            Verdict::Ask,
            None,
        ),
        (
            with_flag(invocation("psql"), "-c", "DROP DATABASE app"),
            Verdict::Deny,
            Some("no-dropping-databases"),
        ),
        (
            with_flag(invocation("psql"), "-c", "select 1"),
            Verdict::Ask,
            None,
        ),
        (
            with_flag(invocation("mysql"), "-e", "drop schema app"),
            Verdict::Deny,
            Some("no-dropping-databases"),
        ),
        (
            invocation("dropdb app"),
            Verdict::Deny,
            Some("no-dropping-databases"),
        ),
        (
            with_effects(invocation("tee -a /etc/sudoers"), writes(&["/etc/sudoers"])),
            Verdict::Deny,
            Some("no-rewriting-accounts-or-keys"),
        ),
        (
            with_effects(invocation("echo key"), writes(&["~/.ssh/authorized_keys"])),
            Verdict::Deny,
            Some("no-rewriting-accounts-or-keys"),
        ),
        (
            with_effects(
                invocation("rm /etc/sudoers.d/agent"),
                deletes(&["/etc/sudoers.d/agent"]),
            ),
            Verdict::Deny,
            Some("no-deleting-accounts-or-keys"),
        ),
        (
            opaque(
                with_effects(
                    invocation(""),
                    Effects {
                        network: true,
                        runs_code: true,
                        ..Effects::default()
                    },
                ),
                "`bash` runs a script piped from the network",
            ),
            Verdict::Deny,
            Some("no-running-code-from-the-network"),
        ),
        // Secrets.
        (
            with_effects(invocation("cat ~/.ssh/id_rsa"), reads(&["~/.ssh/id_rsa"])),
            Verdict::Deny,
            Some("no-reading-secrets"),
        ),
        (
            with_effects(
                invocation("cat ~/.ssh/id_rsa.pub"),
                reads(&["~/.ssh/id_rsa.pub"]),
            ),
            Verdict::Allow,
            Some("inspection"),
        ),
        (
            with_effects(invocation("cat .env"), reads(&[".env"])),
            Verdict::Deny,
            Some("no-reading-secrets"),
        ),
        (
            with_effects(invocation("cat app/.env.local"), reads(&["app/.env.local"])),
            Verdict::Deny,
            Some("no-reading-secrets"),
        ),
        (
            with_effects(invocation("cat .env.example"), reads(&[".env.example"])),
            Verdict::Allow,
            Some("inspection"),
        ),
        (
            with_effects(invocation("cat /etc/shadow"), reads(&["/etc/shadow"])),
            Verdict::Deny,
            Some("no-reading-secrets"),
        ),
        (
            with_effects(invocation("cat /etc/passwd"), reads(&["/etc/passwd"])),
            Verdict::Allow,
            Some("inspection"),
        ),
        (
            with_effects(invocation("cat ~/.kube/config"), reads(&["~/.kube/config"])),
            Verdict::Deny,
            Some("no-reading-secrets"),
        ),
        (
            with_effects(invocation("cat tls/server.pem"), reads(&["tls/server.pem"])),
            Verdict::Ask,
            Some("may-hold-secrets"),
        ),
        (
            invocation("getent shadow"),
            Verdict::Deny,
            Some("no-dumping-password-hashes"),
        ),
        (
            invocation("getent passwd alice"),
            Verdict::Allow,
            Some("inspection"),
        ),
        // Anything else.
        (invocation("make build"), Verdict::Ask, None),
        (invocation(""), Verdict::Ask, None),
    ];
    let mut failures = Vec::new();
    for (invocation, expected, expected_rule) in table {
        let shown = invocation.argv.join(" ");
        let (verdict, rule) = judge_one(&policy, invocation);
        if verdict != expected || rule.as_deref() != expected_rule {
            failures.push(format!(
                "`{shown}`: expected {expected} by {expected_rule:?}, got {verdict} by {rule:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

#[test]
fn builtin_file_tools() {
    let policy = Policy::builtin(nightwatch_shell::analyse);
    let decide = |tool: Tool| {
        let decision = policy.decide(&Action::new(
            Actor::new(ActorKind::Agent, "claude-code"),
            tool,
        ));
        (decision.verdict, decision.rule)
    };
    let read = |path: &str| Tool::Read { path: path.into() };
    assert_eq!(
        decide(read("/srv/app/main.rs")),
        (Verdict::Allow, rule("reading-files"))
    );
    assert_eq!(
        decide(read("/root/.ssh/id_ed25519")),
        (Verdict::Deny, rule("no-reading-secrets"))
    );
    assert_eq!(
        decide(read("/srv/app/.env")),
        (Verdict::Deny, rule("no-reading-secrets"))
    );
    assert_eq!(
        decide(read("/home/a/.kube/config")),
        (Verdict::Deny, rule("no-reading-secrets"))
    );
    assert_eq!(
        decide(read("/srv/tls/server.pem")),
        (Verdict::Ask, rule("may-hold-secrets"))
    );
    assert_eq!(
        decide(Tool::Write {
            path: "/etc/sudoers.d/agent".into()
        }),
        (Verdict::Deny, rule("no-rewriting-accounts-or-keys"))
    );
    assert_eq!(
        decide(Tool::Edit {
            path: "/srv/app/main.rs".into()
        }),
        (Verdict::Ask, None)
    );
    assert_eq!(
        decide(Tool::Mcp {
            server: "github".into(),
            tool: "create_issue".into(),
            paths: vec![],
        }),
        (Verdict::Ask, None)
    );
}

#[test]
fn simple_lines_are_decided_end_to_end() {
    let policy = Policy::builtin(nightwatch_shell::analyse);
    let decision = policy.decide(&Action::exec("ls -la"));
    assert_eq!(decision.verdict, Verdict::Allow);
    assert_eq!(decision.rule.as_deref(), Some("inspection"));
    assert_eq!(decision.invocations.len(), 1);
    assert_eq!(
        policy.decide(&Action::exec("make deploy")).verdict,
        Verdict::Ask
    );
    assert_eq!(
        policy.decide(&Action::exec("reboot")).verdict,
        Verdict::Deny
    );
}

// ---------------------------------------------------------------------------------------------
// Refusing bad files, at the right place
// ---------------------------------------------------------------------------------------------

#[test]
fn bad_policies_are_refused_at_their_line_and_column() {
    let table: &[(&str, &str, &str)] = &[
        (
            "unknown key in a rule",
            "rules:\n  - id: a\n    verdict: deny\n    comand: ls\n",
            "4:5: unknown field `comand`",
        ),
        (
            "unknown top-level key",
            "version: 1\nrulez: []\n",
            "2:1: unknown field `rulez`",
        ),
        (
            "bad verdict",
            "rules:\n  - id: a\n    verdict: maybe\n",
            "3:14: unknown verdict \"maybe\" (expected allow, ask, halt or deny)",
        ),
        (
            "bad default",
            "default: sure\n",
            "1:10: unknown verdict \"sure\"",
        ),
        (
            "opaque allow",
            "default: ask\nopaque: allow\n",
            "2:9: `opaque: allow` is not possible",
        ),
        (
            "bad path glob in a list",
            "rules:\n  - id: a\n    verdict: deny\n    reads:\n      - /etc/*\n      - /etc/[\n",
            "6:9: bad glob \"/etc/[\"",
        ),
        (
            "bad command glob",
            "rules:\n  - id: a\n    verdict: deny\n    command: \"ls [a\"\n",
            "4:14: bad glob \"[a\"",
        ),
        (
            "unknown effect",
            "rules:\n  - id: a\n    verdict: deny\n    effects: [network, telepathy]\n",
            "4:24: unknown effect \"telepathy\"",
        ),
        (
            "bad time window",
            "rules:\n  - id: a\n    verdict: deny\n    time: \"25:00-06:00\"\n",
            "4:11: bad time window \"25:00-06:00\"",
        ),
        (
            "unknown actor kind",
            "rules:\n  - id: a\n    verdict: deny\n    actor: { kind: droid }\n",
            "4:20: unknown actor kind \"droid\"",
        ),
        (
            "missing verdict",
            "rules:\n  - id: a\n    command: ls\n",
            "2:5: missing field `verdict`",
        ),
        (
            "duplicate id",
            "rules:\n  - id: same\n    verdict: deny\n  - id: other\n    verdict: ask\n  - verdict: allow\n    id: same\n",
            "7:9: duplicate rule id \"same\" (already used by rule 1 at line 2)",
        ),
        (
            "empty list",
            "rules:\n  - id: a\n    verdict: deny\n    command: []\n",
            "4:14: an empty list matches nothing",
        ),
        (
            "unsupported version",
            "version: 2\n",
            "1:10: unsupported policy version \"2\"",
        ),
        (
            "only exceptions in a path list",
            "rules:\n  - id: a\n    verdict: deny\n    reads: [\"!*.pub\"]\n",
            "2:5: a path list needs at least one glob without `!`",
        ),
        (
            "not a policy at all",
            "[]\n",
            "1:1: invalid type: sequence, expected a policy",
        ),
        (
            "example without command or tool",
            "examples:\n  - expect: deny\n",
            "2:5: an example needs `command:`",
        ),
        (
            "yaml syntax",
            "rules:\n  - id: a\n    verdict: [deny\n",
            "4:1: ",
        ),
        (
            "tabs are not yaml",
            "rules:\n\t- id: a\n",
            "2:1: found character that cannot start any token",
        ),
    ];
    let mut failures = Vec::new();
    for (what, source, expected) in table {
        match Policy::from_yaml(source, nightwatch_shell::analyse) {
            Ok(_) => failures.push(format!("{what}: accepted")),
            Err(err) => {
                let shown = err.to_string();
                if !shown.starts_with(expected) {
                    failures.push(format!(
                        "{what}:\n  expected: {expected}\n  got:      {shown}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

#[test]
fn syntax_errors_are_told_apart_from_invalid_policies() {
    assert!(matches!(
        Policy::from_yaml("rules: [\n", nightwatch_shell::analyse),
        Err(PolicyError::Syntax { .. })
    ));
    assert!(matches!(
        Policy::from_yaml("default: maybe\n", nightwatch_shell::analyse),
        Err(PolicyError::Invalid {
            line: 1,
            column: 10,
            ..
        })
    ));
}

#[test]
fn a_failing_example_refuses_the_policy_and_says_which() {
    let source = "\
rules:
  - id: no-reboot
    verdict: deny
    command: reboot
examples:
  - command: reboot
    expect: deny
  - command: ls
    expect: allow
";
    let err = error(source);
    assert_eq!(
        err,
        "8:3: example 2 (`ls`) expects allow but policy says ask (no rule matched)"
    );
    match Policy::from_yaml(source, nightwatch_shell::analyse) {
        Err(PolicyError::ExampleFailed {
            index,
            expected,
            actual,
            rule,
            ..
        }) => {
            assert_eq!(index, 1);
            assert_eq!(
                (expected, actual, rule),
                (Verdict::Allow, Verdict::Ask, None)
            );
        }
        other => panic!("expected ExampleFailed, got {other:?}"),
    }
}

#[test]
fn examples_can_describe_other_tools_and_contexts() {
    let source = "\
rules:
  - id: no-shadow
    verdict: deny
    reads: /etc/shadow
  - id: night-halt
    verdict: halt
    time: \"22:00-06:00\"
    host: \"prod-*\"
  - id: mcp-github
    verdict: allow
    tool: \"mcp__github__*\"
examples:
  - tool: read
    path: /etc/shadow
    expect: deny
  - tool: fetch
    url: https://example.com
    time: \"23:00\"
    host: prod-1
    expect: halt
  - tool: fetch
    url: https://example.com
    time: \"12:00\"
    host: prod-1
    expect: ask
  - tool: mcp__github__create_issue
    time: \"12:00\"
    host: dev
    expect: allow
  - tool: deploy_app
    actor: { kind: dispatcher, id: nightwatch }
    tier: prod
    time: \"12:00\"
    host: dev
    expect: ask
";
    let policy = policy(source);
    assert_eq!(policy.examples().len(), 5);
    assert!(policy.run_examples().iter().all(|o| o.passed));
    assert_eq!(
        policy.examples()[4].action.tool,
        Tool::Named {
            name: "deploy_app".into()
        }
    );
}

#[test]
fn example_shape_errors_point_at_the_example() {
    let table: &[(&str, &str)] = &[
        (
            "examples:\n  - tool: read\n    expect: deny\n",
            "2:5: an example of tool \"read\" needs `path:`",
        ),
        (
            "examples:\n  - command: ls\n    path: x\n    expect: deny\n",
            "2:5: an example of tool \"exec\" takes no `path:`",
        ),
        (
            "examples:\n  - command: ls\n    time: \"7pm\"\n    expect: ask\n",
            "3:11: bad time \"7pm\"",
        ),
    ];
    for (source, expected) in table {
        let shown = error(source);
        assert!(
            shown.starts_with(expected),
            "expected {expected}\ngot      {shown}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Deciding
// ---------------------------------------------------------------------------------------------

const LAYERED: &str = "\
default: ask
rules:
  - id: allow-git
    verdict: allow
    command: git
  - id: ask-git-push
    verdict: ask
    command: git push
  - id: halt-git-push-prod
    verdict: halt
    command: git push prod
  - id: deny-git-push-force
    verdict: deny
    command: git push --force
  - id: deny-git-push-force-again
    verdict: deny
    command: git push --force
  - id: allow-anything-read-only
    verdict: allow
    read_only: true
";

#[test]
fn the_strictest_matching_rule_wins_and_ties_go_to_the_first() {
    let policy = policy(LAYERED);
    let table = [
        ("git status", Verdict::Allow, "allow-git"),
        ("git push origin", Verdict::Ask, "ask-git-push"),
        ("git push prod", Verdict::Halt, "halt-git-push-prod"),
        (
            "git push prod --force",
            Verdict::Deny,
            "deny-git-push-force",
        ),
        ("ls", Verdict::Allow, "allow-anything-read-only"),
    ];
    for (words, verdict, id) in table {
        assert_eq!(
            judge_one(&policy, invocation(words)),
            (verdict, rule(id)),
            "{words}"
        );
    }
}

#[test]
fn a_line_gets_its_strictest_invocation_and_names_it() {
    let policy = policy(LAYERED);
    let mut sudo = invocation("sudo git push prod");
    sudo.effects.privilege = true;
    let mut inner = invocation("git push prod");
    inner.via = vec!["sudo".into()];
    let decision = policy.decide_analysed(
        &Action::exec("git status && sudo git push prod"),
        &[invocation("git status"), sudo, inner],
    );
    assert_eq!(decision.verdict, Verdict::Halt);
    assert_eq!(decision.rule.as_deref(), Some("halt-git-push-prod"));
    assert_eq!(
        decision.reason,
        "`git push prod` (via sudo): rule halt-git-push-prod (halt)"
    );
    let verdicts: Vec<Verdict> = decision.invocations.iter().map(|j| j.verdict).collect();
    assert_eq!(verdicts, [Verdict::Allow, Verdict::Ask, Verdict::Halt]);
}

#[test]
fn a_line_that_runs_nothing_gets_the_default() {
    let policy = policy("default: halt\n");
    let decision = policy.decide_analysed(&Action::exec("X=1"), &[]);
    assert_eq!(decision.verdict, Verdict::Halt);
    assert_eq!(decision.rule, None);
    assert_eq!(
        decision.reason,
        "nothing to run; the policy's default is halt"
    );
}

#[test]
fn no_rule_means_the_default_with_a_reason() {
    let policy = policy("default: deny\n");
    let decision = policy.decide_analysed(&Action::exec("ls"), &[invocation("ls")]);
    assert_eq!(decision.verdict, Verdict::Deny);
    assert_eq!(
        decision.reason,
        "no rule matched; the policy's default is deny"
    );
}

#[test]
fn reasons_and_instead_come_from_the_rule() {
    let policy = policy(
        "rules:\n  - id: docker-belongs-on-the-dev-host\n    verdict: deny\n    reason: this VM is not a home for apps\n    instead: \"ssh devbox 'docker ...'\"\n    command: \"docker *\"\n",
    );
    let decision =
        policy.decide_analysed(&Action::exec("docker run x"), &[invocation("docker run x")]);
    assert_eq!(decision.verdict, Verdict::Deny);
    assert_eq!(
        decision.reason,
        "rule docker-belongs-on-the-dev-host: this VM is not a home for apps"
    );
    assert_eq!(decision.instead.as_deref(), Some("ssh devbox 'docker ...'"));
}

#[test]
fn an_opaque_invocation_is_never_allowed() {
    let everything_allowed =
        policy("default: allow\nopaque: halt\nrules:\n  - id: all\n    verdict: allow\n");
    let why = "the command name `$CMD` is only known at runtime";
    let decision = everything_allowed
        .decide_analysed(&Action::exec("$CMD"), &[opaque(invocation("$CMD"), why)]);
    assert_eq!(decision.verdict, Verdict::Halt);
    assert_eq!(decision.rule, None);
    assert_eq!(
        decision.reason,
        format!("cannot be judged from the text: {why} (rule all alone would allow it)")
    );
    // By default too, and for a parse error's empty invocation.
    let by_default = policy("default: allow\n");
    let parse_error = opaque(Invocation::default(), "the line does not parse");
    assert_eq!(judge_one(&by_default, parse_error).0, Verdict::Ask);
}

#[test]
fn command_and_read_only_matchers_never_match_an_opaque_invocation() {
    let policy = policy(
        "rules:\n  - id: deny-rm\n    verdict: deny\n    command: rm\n  - id: ask-read-only\n    verdict: halt\n    read_only: true\n",
    );
    assert_eq!(
        judge_one(&policy, opaque(invocation("rm x"), "?")),
        (Verdict::Ask, None)
    );
    assert_eq!(
        judge_one(&policy, invocation("rm x")),
        (Verdict::Deny, rule("deny-rm"))
    );
    assert_eq!(
        judge_one(&policy, invocation("ls")),
        (Verdict::Halt, rule("ask-read-only"))
    );
}

#[test]
fn a_stricter_opaque_verdict_stays() {
    let policy = policy("rules:\n  - id: deny-network\n    verdict: deny\n    effects: network\n");
    let mut piped = opaque(Invocation::default(), "piped");
    piped.effects.network = true;
    assert_eq!(
        judge_one(&policy, piped),
        (Verdict::Deny, rule("deny-network"))
    );
}

const CONTEXTUAL: &str = "\
rules:
  - id: allow-in-office-hours
    verdict: allow
    time: \"09:00-17:00\"
  - id: halt-at-night
    verdict: halt
    time: \"22:00-06:00\"
  - id: deny-prod-for-observers
    verdict: deny
    tier: observe
    host: \"prod-*\"
";

fn contextual_action(minute: Option<u16>, tier: Option<&str>, host: Option<&str>) -> Action {
    let mut actor = Actor::new(ActorKind::Agent, "claude-code");
    actor.tier = tier.map(str::to_owned);
    Action {
        actor,
        tool: Tool::Exec {
            line: "deploy".into(),
        },
        context: Context {
            host: host.map(str::to_owned),
            minute_of_day: minute,
            ..Context::default()
        },
    }
}

#[test]
fn matchers_that_cannot_tell_fail_closed() {
    let policy = policy(CONTEXTUAL);
    let decide = |action: Action| {
        let decision = policy.decide_analysed(&action, &[invocation("deploy")]);
        (decision.verdict, decision.rule)
    };
    let noon = Some(12 * 60);
    let night = Some(23 * 60);
    // Everything known.
    assert_eq!(
        decide(contextual_action(noon, Some("prod"), Some("dev"))),
        (Verdict::Allow, rule("allow-in-office-hours"))
    );
    assert_eq!(
        decide(contextual_action(night, Some("prod"), Some("dev"))),
        (Verdict::Halt, rule("halt-at-night"))
    );
    assert_eq!(
        decide(contextual_action(Some(19 * 60), Some("prod"), Some("dev"))),
        (Verdict::Ask, None)
    );
    assert_eq!(
        decide(contextual_action(noon, Some("observe"), Some("prod-1"))),
        (Verdict::Deny, rule("deny-prod-for-observers"))
    );
    // No clock: the allow window does not hold, the halt window does.
    assert_eq!(
        decide(contextual_action(None, Some("prod"), Some("dev"))),
        (Verdict::Halt, rule("halt-at-night"))
    );
    // No tier or no host: the deny holds when the other matcher does not rule it out.
    assert_eq!(
        decide(contextual_action(noon, None, Some("prod-1"))),
        (Verdict::Deny, rule("deny-prod-for-observers"))
    );
    assert_eq!(
        decide(contextual_action(noon, Some("observe"), None)),
        (Verdict::Deny, rule("deny-prod-for-observers"))
    );
    assert_eq!(
        decide(contextual_action(noon, None, Some("dev"))),
        (Verdict::Allow, rule("allow-in-office-hours"))
    );
    // A minute outside the day is not a time of day.
    assert_eq!(
        decide(contextual_action(Some(5000), Some("prod"), Some("dev"))),
        (Verdict::Halt, rule("halt-at-night"))
    );
}

#[test]
fn an_invocation_running_elsewhere_is_judged_by_its_remote_host() {
    let policy = policy("rules:\n  - id: halt-prod\n    verdict: halt\n    host: \"prod-*\"\n");
    let mut remote = invocation("systemctl restart app");
    remote.remote = Some(Remote {
        kind: RemoteKind::Ssh,
        target: "deploy@prod-2".into(),
    });
    let here = contextual_action(Some(600), None, Some("dev"));
    assert_eq!(
        policy.decide_analysed(&here, &[remote]).verdict,
        Verdict::Halt
    );
    assert_eq!(
        policy.decide_analysed(&here, &[invocation("ls")]).verdict,
        Verdict::Ask
    );
}

#[test]
fn actors_are_matched_by_kind_and_id() {
    let policy = policy(
        "rules:\n  - id: janitor-may-remove\n    verdict: allow\n    tool: remove_container\n    actor: { kind: janitor }\n  - id: claude-asks\n    verdict: deny\n    actor: { kind: [agent, script], id: \"claude*\" }\n",
    );
    let decide = |kind: ActorKind, id: &str, tool: Tool| {
        policy
            .decide(&Action::new(Actor::new(kind, id), tool))
            .verdict
    };
    let remove = || Tool::Named {
        name: "remove_container".into(),
    };
    assert_eq!(
        decide(ActorKind::Janitor, "janitor", remove()),
        Verdict::Allow
    );
    assert_eq!(decide(ActorKind::Agent, "codex", remove()), Verdict::Ask);
    assert_eq!(
        decide(ActorKind::Agent, "claude-code", remove()),
        Verdict::Deny
    );
    assert_eq!(decide(ActorKind::Human, "claude", remove()), Verdict::Ask);
}

#[test]
fn file_tools_are_one_subject() {
    let policy = policy(
        "\
rules:
  - id: commands-never-match-tools
    verdict: deny
    command: \"*\"
  - id: reading-is-read-only
    verdict: allow
    read_only: true
  - id: writes-to-etc
    verdict: halt
    writes: /etc/**
  - id: anything-under-srv
    verdict: ask
    paths: /srv/**
  - id: fetch-is-network
    verdict: halt
    effects: network
",
    );
    let decide = |tool: Tool| {
        let decision = policy.decide(&Action::new(Actor::new(ActorKind::Agent, "a"), tool));
        (decision.verdict, decision.rule, decision.invocations.len())
    };
    assert_eq!(
        decide(Tool::Read {
            path: "/etc/hosts".into()
        }),
        (Verdict::Allow, rule("reading-is-read-only"), 0)
    );
    assert_eq!(
        decide(Tool::Write {
            path: "/etc/hosts".into()
        }),
        (Verdict::Halt, rule("writes-to-etc"), 0)
    );
    assert_eq!(
        decide(Tool::Edit {
            path: "/srv/x".into()
        }),
        (Verdict::Ask, rule("anything-under-srv"), 0)
    );
    assert_eq!(
        decide(Tool::Read {
            path: "/srv/x".into()
        }),
        (Verdict::Ask, rule("anything-under-srv"), 0)
    );
    assert_eq!(
        decide(Tool::Fetch {
            url: "https://x".into()
        }),
        (Verdict::Halt, rule("fetch-is-network"), 0)
    );
    assert_eq!(
        decide(Tool::Named { name: "x".into() }),
        (Verdict::Ask, None, 0)
    );
}

#[test]
fn tool_globs_pick_tools_and_keep_rules_off_exec() {
    let policy = policy(
        "rules:\n  - id: mcp-deny\n    verdict: deny\n    tool: \"mcp__*\"\n  - id: exec-ask-all\n    verdict: halt\n    tool: exec\n",
    );
    let mcp = Tool::Mcp {
        server: "s".into(),
        tool: "t".into(),
        paths: vec![],
    };
    assert_eq!(
        policy
            .decide(&Action::new(Actor::new(ActorKind::Agent, "a"), mcp))
            .verdict,
        Verdict::Deny
    );
    assert_eq!(
        judge_one(&policy, invocation("ls")),
        (Verdict::Halt, rule("exec-ask-all"))
    );
}

#[test]
fn effects_any_and_all() {
    let policy = policy(
        "rules:\n  - id: any\n    verdict: ask\n    effects: [privilege, process_control]\n  - id: all\n    verdict: deny\n    effects_all: [network, runs_code]\n  - id: rest\n    verdict: allow\n",
    );
    let effects = |network: bool, runs_code: bool, privilege: bool| Effects {
        network,
        runs_code,
        privilege,
        ..Effects::default()
    };
    assert_eq!(
        judge_one(
            &policy,
            with_effects(invocation("x"), effects(true, true, false))
        )
        .0,
        Verdict::Deny
    );
    assert_eq!(
        judge_one(
            &policy,
            with_effects(invocation("x"), effects(true, false, false))
        )
        .0,
        Verdict::Allow
    );
    assert_eq!(
        judge_one(
            &policy,
            with_effects(invocation("x"), effects(false, false, true))
        )
        .0,
        Verdict::Ask
    );
}

#[test]
fn a_rule_without_matchers_matches_everything() {
    let policy = policy("default: deny\nrules:\n  - id: everything\n    verdict: ask\n");
    assert_eq!(
        judge_one(&policy, invocation("anything at all")).0,
        Verdict::Ask
    );
    let read = Action::new(
        Actor::new(ActorKind::Agent, "a"),
        Tool::Read { path: "x".into() },
    );
    assert_eq!(policy.decide(&read).verdict, Verdict::Ask);
}

#[test]
fn the_index_finds_what_a_full_scan_finds() {
    // Rules by literal name, by glob and without a command, interleaved, so the merge of the
    // indexed and unindexed lists is exercised.
    let policy = policy(
        "\
rules:
  - id: g1
    verdict: ask
    command: git
  - id: star
    verdict: halt
    command: \"g*\"
  - id: paths
    verdict: deny
    deletes: /
  - id: g2
    verdict: deny
    command: [git push, gpg]
  - id: free
    verdict: allow
",
    );
    assert_eq!(
        judge_one(&policy, invocation("git status")),
        (Verdict::Halt, rule("star"))
    );
    assert_eq!(
        judge_one(&policy, invocation("git push")),
        (Verdict::Deny, rule("g2"))
    );
    assert_eq!(
        judge_one(&policy, invocation("gpg")),
        (Verdict::Deny, rule("g2"))
    );
    assert_eq!(
        judge_one(&policy, invocation("ls")),
        (Verdict::Allow, rule("free"))
    );
    assert_eq!(
        judge_one(
            &policy,
            with_effects(invocation("rm -r /"), deletes(&["/"]))
        ),
        (Verdict::Deny, rule("paths"))
    );
}

#[test]
fn patterns_normalise_flags_like_the_analyser() {
    // `--recursive` in a pattern is `-r` for rm, as the analyser writes it.
    let policy = policy("rules:\n  - id: rr\n    verdict: deny\n    command: rm --recursive\n");
    let canonical = nightwatch_core::normalise_flag("rm", "--recursive").into_owned();
    let words = format!("rm {canonical} x");
    assert_eq!(judge_one(&policy, invocation(&words)).0, Verdict::Deny);
}

#[test]
fn policy_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Policy>();
    assert_send_sync::<Decision>();
}

#[test]
fn decisions_serialise() {
    let policy = Policy::builtin(nightwatch_shell::analyse);
    let decision = policy.decide_analysed(&Action::exec("ls"), &[invocation("ls")]);
    let json = match serde_json_like(&decision) {
        Some(json) => json,
        None => panic!("decision did not serialise"),
    };
    assert!(json.contains("verdict: allow"), "{json}");
}

/// Serialises through yaml_serde (already a dependency) to check the derive works.
fn serde_json_like(decision: &Decision) -> Option<String> {
    yaml_serde::to_string(decision).ok()
}

// ---------------------------------------------------------------------------------------------
// Property: no input makes deciding panic, and nothing opaque is ever allowed
// ---------------------------------------------------------------------------------------------

mod properties {
    use super::*;
    use proptest::prelude::*;
    use std::sync::LazyLock;

    static BUILTIN: LazyLock<Policy> = LazyLock::new(|| Policy::builtin(nightwatch_shell::analyse));

    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{1,8}",
            Just("-r".to_owned()),
            Just("--force".to_owned()),
            Just("/".to_owned()),
            Just("~/*".to_owned()),
            Just("/etc/*".to_owned()),
            Just("main".to_owned()),
            Just("+main".to_owned()),
            Just("1".to_owned()),
            Just("-1".to_owned()),
            Just("".to_owned()),
            ".{0,12}",
        ]
    }

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("rm".to_owned()),
            Just("git".to_owned()),
            Just("ls".to_owned()),
            Just("kill".to_owned()),
            Just("systemctl".to_owned()),
            Just("find".to_owned()),
            Just("cat".to_owned()),
            Just("".to_owned()),
            ".{0,10}",
        ]
    }

    fn arg() -> impl Strategy<Value = Arg> {
        prop_oneof![
            word().prop_map(Arg::Positional),
            (word(), proptest::option::of(word()))
                .prop_map(|(name, value)| Arg::Flag { name, value }),
        ]
    }

    fn paths() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::vec(word(), 0..3)
    }

    prop_compose! {
        fn effects()(
            reads in paths(),
            writes in paths(),
            deletes in paths(),
            searches in paths(),
            sets_env in paths(),
            reveals_env in paths(),
            hosts in paths(),
            flags in proptest::array::uniform5(any::<bool>()),
        ) -> Effects {
            Effects {
                reads,
                writes,
                deletes,
                searches,
                sets_env,
                reveals_env,
                hosts,
                network: flags[0],
                privilege: flags[1],
                process_control: flags[2],
                service_control: flags[3],
                runs_code: flags[4],
            }
        }
    }

    prop_compose! {
        fn any_invocation()(
            name in name(),
            args in proptest::collection::vec(arg(), 0..6),
            path in proptest::option::of(".{0,12}"),
            opaque in proptest::option::of(".{0,12}"),
            effects in effects(),
            remote in proptest::option::of(".{0,8}"),
        ) -> Invocation {
            let mut argv = vec![name];
            argv.extend(args.iter().map(|a| match a {
                Arg::Positional(p) => p.clone(),
                Arg::Flag { name, .. } => name.clone(),
            }));
            Invocation {
                argv,
                path,
                args,
                via: Vec::new(),
                remote: remote.map(|target| Remote { kind: RemoteKind::Ssh, target }),
                opaque,
                effects,
            }
        }
    }

    proptest! {
        #[test]
        fn deciding_never_panics_and_never_allows_the_opaque(
            invocations in proptest::collection::vec(any_invocation(), 0..4),
            minute in proptest::option::of(any::<u16>()),
            tier in proptest::option::of("[a-z]{0,6}"),
        ) {
            let policy = &*BUILTIN;
            let mut action = Action::exec("(generated)");
            action.context.minute_of_day = minute;
            action.actor.tier = tier;
            let decision = policy.decide_analysed(&action, &invocations);
            prop_assert_eq!(decision.invocations.len(), invocations.len());
            for judged in &decision.invocations {
                if judged.invocation.is_opaque() {
                    prop_assert_ne!(judged.verdict, Verdict::Allow);
                }
                prop_assert!(judged.verdict <= decision.verdict);
            }
        }

        #[test]
        fn whole_lines_never_panic(line in ".{0,80}") {
            let decision = BUILTIN.decide(&Action::exec(line));
            for judged in &decision.invocations {
                if judged.invocation.is_opaque() {
                    prop_assert_ne!(judged.verdict, Verdict::Allow);
                }
            }
        }

        #[test]
        fn reading_any_text_never_panics(source in "[a-z:\\-\\[\\]{}*\"' \n]{0,80}") {
            let _ = Policy::from_yaml(&source, nightwatch_shell::analyse);
        }

        #[test]
        fn any_command_pattern_compiles_or_is_refused(pattern in ".{0,30}") {
            let source = format!("rules:\n  - id: p\n    verdict: deny\n    command: {:?}\n", pattern);
            let _ = Policy::from_yaml(&source, nightwatch_shell::analyse);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Safeguards: checks, notifiers, escalation, backup and trust settings
// ---------------------------------------------------------------------------------------------

const GUARDED: &str = r#"
version: 1
default: ask
checks:
  active-migration:
    process: { command: "*migrate*", min_age: 30m }
    on_match: halt
    message: a migration is running
  retry-storm:
    circuit_breaker: { failures: 5, within: 10m }
always_check: [retry-storm]
notifiers:
  oncall:
    webhook: { url: "http://127.0.0.1:9/escalations" }
escalate:
  halt: [oncall]
backup:
  limits: { max_file_bytes: 1MiB }
  retention: { keep_days: 7 }
trust:
  tiers: [observe, prod]
  default: observe
  promote: { min_actions: 10 }
rules:
  - id: restarts
    verdict: allow
    command: ["systemctl restart *"]
    checks: [active-migration]
    notify: [oncall]
  - id: reads
    verdict: allow
    command: ["ls *"]
"#;

fn exec(line: &str) -> Action {
    Action::new(
        Actor::new(ActorKind::Agent, "claude-code"),
        Tool::Exec {
            line: line.to_owned(),
        },
    )
}

#[test]
fn safeguards_are_read_with_the_rules() {
    let policy =
        Policy::compile(GUARDED, nightwatch_shell::analyse).unwrap_or_else(|e| panic!("{e}"));
    let guards = policy.safeguards();
    assert_eq!(guards.checks.len(), 2);
    assert_eq!(guards.always_check, ["retry-storm"]);
    assert!(guards.notifiers.contains_key("oncall"));
    assert_eq!(guards.escalate.for_verdict(Verdict::Halt), ["oncall"]);
    assert_eq!(guards.backup.limits.max_file_bytes.0, 1 << 20);
    assert_eq!(guards.backup.retention.keep_days, 7);
    assert_eq!(guards.trust.starting_tier(), Some("observe"));
    assert_eq!(guards.trust.promote.min_actions, Some(10));
}

#[test]
fn the_deciding_rules_bring_their_checks_and_notifiers() {
    let policy = Policy::compile(GUARDED, nightwatch_shell::analyse).unwrap();
    let restart = policy.decide(&exec("systemctl restart app && ls /srv"));
    assert_eq!(restart.verdict, Verdict::Allow);
    assert_eq!(restart.checks, ["active-migration", "retry-storm"]);
    assert_eq!(restart.notify, ["oncall"]);
    let list = policy.decide(&exec("ls /srv"));
    assert_eq!(list.checks, ["retry-storm"]);
    assert!(list.notify.is_empty());
}

#[test]
fn a_safeguard_named_but_not_declared_is_refused_where_it_is_named() {
    let typo = GUARDED.replace("checks: [active-migration]", "checks: [active-migraton]");
    let err = Policy::compile(&typo, nightwatch_shell::analyse)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("28:13:"), "{err}");
    assert!(err.contains("\"active-migraton\""), "{err}");
    let typo = GUARDED.replace("halt: [oncall]", "halt: [on-call]");
    let err = Policy::compile(&typo, nightwatch_shell::analyse)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("15:1:"), "{err}");
    let typo = GUARDED.replace("default: observe", "default: root");
    let err = Policy::compile(&typo, nightwatch_shell::analyse)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not one of `trust.tiers`"), "{err}");
    let bad_check = GUARDED.replace("on_match: halt", "on_match: allow");
    assert!(Policy::compile(&bad_check, nightwatch_shell::analyse).is_err());
}

#[test]
fn the_builtin_policy_has_no_safeguards_but_the_defaults() {
    let policy = Policy::builtin(nightwatch_shell::analyse);
    assert!(policy.safeguards().checks.is_empty());
    assert_eq!(policy.safeguards().trust.tiers.len(), 4);
}

#[test]
fn environment_matchers_see_variables_set_and_revealed() {
    let policy = policy(
        "rules:\n  - id: loader\n    verdict: deny\n    sets_env: [LD_PRELOAD, \"DYLD_*\"]\n  - id: secrets\n    verdict: deny\n    reveals_env: [\"*TOKEN*\"]\n  - id: rest\n    verdict: allow\n",
    );
    let with = |sets: &[&str], reveals: &[&str]| {
        with_effects(
            invocation("git status"),
            Effects {
                sets_env: sets.iter().map(|s| (*s).to_owned()).collect(),
                reveals_env: reveals.iter().map(|s| (*s).to_owned()).collect(),
                ..Effects::default()
            },
        )
    };
    type Row<'a> = (&'a [&'a str], &'a [&'a str], Verdict, Option<&'a str>);
    let table: &[Row<'_>] = &[
        (&["LD_PRELOAD"], &[], Verdict::Deny, Some("loader")),
        (
            &["DYLD_INSERT_LIBRARIES"],
            &[],
            Verdict::Deny,
            Some("loader"),
        ),
        (&["LANG"], &[], Verdict::Allow, Some("rest")),
        // `sudo -E` keeps the environment without naming a variable.
        (&["*"], &[], Verdict::Allow, Some("rest")),
        (&[], &["GITHUB_TOKEN"], Verdict::Deny, Some("secrets")),
        (&[], &["github_token"], Verdict::Deny, Some("secrets")),
        (&[], &["HOME"], Verdict::Allow, Some("rest")),
        // A dump of the whole environment reveals every secret in it.
        (&[], &["*"], Verdict::Deny, Some("secrets")),
    ];
    for (sets, reveals, verdict, by) in table {
        assert_eq!(
            judge_one(&policy, with(sets, reveals)),
            (*verdict, by.map(str::to_owned)),
            "sets {sets:?} reveals {reveals:?}"
        );
    }
    // Other tools carry no environment.
    let read = Action::new(
        Actor::new(ActorKind::Agent, "agent"),
        Tool::Read { path: "x".into() },
    );
    assert_eq!(policy.decide(&read).rule.as_deref(), Some("rest"));
}

#[test]
fn egress_limits_network_effects_to_the_allowed_hosts() {
    let policy = policy(
        "egress:\n  allow: [github.com, \"*.internal\", 10.0.0.0/8]\n  otherwise: deny\nrules:\n  - id: net\n    verdict: allow\n    effects: [network]\n  - id: strict\n    verdict: halt\n    command: \"curl -x\"\n",
    );
    let net = |hosts: &[&str]| {
        with_effects(
            invocation("curl https://x/"),
            Effects {
                network: true,
                hosts: hosts.iter().map(|s| (*s).to_owned()).collect(),
                ..Effects::default()
            },
        )
    };
    assert_eq!(
        judge_one(&policy, net(&["github.com"])),
        (Verdict::Allow, rule("net"))
    );
    assert_eq!(
        judge_one(&policy, net(&["db.internal", "10.2.3.4"])),
        (Verdict::Allow, rule("net"))
    );
    assert_eq!(
        judge_one(&policy, net(&["evil.example"])),
        (Verdict::Deny, rule("egress"))
    );
    // No host known from the text: outside the list.
    assert_eq!(
        judge_one(&policy, net(&[])),
        (Verdict::Deny, rule("egress"))
    );
    // Without a network effect, egress says nothing.
    assert_eq!(judge_one(&policy, invocation("ls")), (Verdict::Ask, None));
    let fetch = |url: &str| {
        policy
            .decide(&Action::new(
                Actor::new(ActorKind::Agent, "agent"),
                Tool::Fetch { url: url.into() },
            ))
            .rule
    };
    assert_eq!(fetch("https://github.com/x").as_deref(), Some("net"));
    assert_eq!(fetch("https://evil.example/x").as_deref(), Some("egress"));

    // The built-in policy asks about every host, as before.
    let builtin = Policy::builtin(nightwatch_shell::analyse);
    assert_eq!(judge_one(&builtin, net(&["github.com"])).0, Verdict::Ask);
    // A bad entry is refused where it is written.
    let message = error("egress:\n  allow: [10.0.0.0/40]\n  otherwise: deny\n");
    assert!(message.starts_with("2:"), "{message}");
}

#[test]
fn mcp_tools_are_judged_by_their_path_arguments() {
    let policy = Policy::builtin(nightwatch_shell::analyse);
    let mcp = |tool: &str, path: &str| {
        policy
            .decide(&Action::new(
                Actor::new(ActorKind::Agent, "agent"),
                Tool::Mcp {
                    server: "filesystem".into(),
                    tool: tool.into(),
                    paths: vec![path.into()],
                },
            ))
            .verdict
    };
    assert_eq!(mcp("read_file", "/home/a/.ssh/id_rsa"), Verdict::Deny);
    assert_eq!(mcp("read_text_file", "/srv/app/README.md"), Verdict::Ask);
    assert_eq!(
        mcp("write_file", "/var/lib/nightwatch/policy.yaml"),
        Verdict::Deny
    );
    assert_eq!(
        mcp("move_file", "/home/a/.claude/settings.json"),
        Verdict::Ask
    );
    assert_eq!(mcp("search_files", "/home/a"), Verdict::Deny);
    assert_eq!(
        rule::mcp_path_use("delete_file"),
        nightwatch_core::PathUse::Delete
    );
    assert_eq!(
        rule::mcp_path_use("list_directory"),
        nightwatch_core::PathUse::Read
    );
    assert_eq!(
        rule::mcp_path_use("readTextFile"),
        nightwatch_core::PathUse::Read
    );
    assert_eq!(
        rule::mcp_path_use("allocate"),
        nightwatch_core::PathUse::Write
    );
}

/// Facts for tests: each path's other names from a table.
struct Table(&'static [(&'static str, &'static str)]);

impl PathFacts for Table {
    fn aliases(&self, path: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(from, _)| *from == path)
            .map(|(_, to)| (*to).to_owned())
            .collect()
    }
}

#[test]
fn paths_are_judged_by_every_name_they_go_by() {
    let policy = Policy::builtin(nightwatch_shell::analyse);
    let facts = Table(&[
        ("s/deploy", "/home/alice/.ssh/deploy"),
        ("notes.txt", "/srv/app/notes.txt"),
    ]);
    let exec = Action::exec("cat s/deploy");
    assert_eq!(policy.decide(&exec).verdict, Verdict::Allow);
    assert_eq!(policy.decide_with(&exec, &facts).verdict, Verdict::Deny);
    assert_eq!(
        policy
            .decide_with(&Action::exec("cat notes.txt"), &facts)
            .verdict,
        Verdict::Allow
    );
    let read = Action::new(
        Actor::new(ActorKind::Agent, "agent"),
        Tool::Read {
            path: "s/deploy".into(),
        },
    );
    assert_eq!(policy.decide_with(&read, &facts).verdict, Verdict::Deny);
    assert_eq!(policy.decide_with(&read, &NoFacts).verdict, Verdict::Allow);
}

/// The commented `sweep:` section `nightwatch init` writes is the real thing: uncommented, it
/// reads, and says what the built-in rules are.
#[test]
fn the_commented_sweep_section_reads_and_states_the_defaults() {
    let lines: Vec<&str> = DEFAULT_POLICY_YAML
        .lines()
        .skip_while(|l| *l != "# sweep:")
        .take_while(|l| l.starts_with('#'))
        .map(|l| l.strip_prefix("# ").unwrap_or(l.trim_start_matches('#')))
        .collect();
    assert!(
        lines.len() > 10,
        "the sweep section is in the built-in policy"
    );
    let section: serde_json::Value =
        yaml_serde::from_str(&lines.join("\n")).expect("the commented section is YAML");
    let rules: nightwatch_spec::sweep::SweepRules =
        serde_json::from_value(section["sweep"].clone()).expect("it reads as sweep rules");
    let built_in = nightwatch_spec::sweep::SweepRules::default();
    assert_eq!(rules.containers.max_idle, built_in.containers.max_idle);
    assert_eq!(rules.containers.keep_label, built_in.containers.keep_label);
    assert_eq!(rules.worktrees.min_age, built_in.worktrees.min_age);
    assert!(!rules.containers.scope.all);
}
