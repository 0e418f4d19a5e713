//! `extends:`: a policy that builds on another (the built-in one, or a file). The base's rules
//! stay in force under the file's own: a rule added can only add or tighten, since the
//! strictest matching rule wins. Loosening is named one thing at a time in `loosen:` (a base
//! rule's id drops that rule; `default`, `opaque` and `egress` let the file's own replace the
//! base's), so an operator never drops a protection without writing its name.

use crate::PolicyError;
use crate::document::{PolicyFile, Scalar};
use crate::locate;
use nightwatch_core::Verdict;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// How deep policies may extend each other; deeper is almost surely a loop.
const MOST_NESTED: usize = 8;

/// What `extends:` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BaseName {
    Builtin,
    File(String),
}

impl Scalar for BaseName {
    const EXPECTING: &'static str = "builtin, or the path of a policy file";

    fn parse(text: &str) -> Result<BaseName, String> {
        match text.trim() {
            "" => Err("extends needs `builtin` or the path of a policy file".to_owned()),
            "builtin" => Ok(BaseName::Builtin),
            path => Ok(BaseName::File(path.to_owned())),
        }
    }
}

/// Reads the policy file an `extends:` names: given the path of the file that extends (None
/// for a policy given as text) and the name as written, the file's own path (for the next
/// level's relative names) and its text. The policy crate reads no file itself.
pub type ReadBase<'a> = &'a dyn Fn(Option<&Path>, &str) -> Result<(PathBuf, String), String>;

/// For a policy given as text: it can extend the built-in policy, not a file.
pub fn no_files(_: Option<&Path>, name: &str) -> Result<(PathBuf, String), String> {
    Err(format!(
        "cannot read {name:?}: this policy was given as text, so it can only extend `builtin`"
    ))
}

/// `file` with its base (and the base's base) folded in, or `file` itself when it extends
/// nothing. `source` is its text, for the positions of errors.
pub(crate) fn fold_in_base(
    file: PolicyFile,
    source: &str,
    at: Option<&Path>,
    read: ReadBase<'_>,
    depth: usize,
) -> Result<PolicyFile, PolicyError> {
    let at_key = |key: &str| (locate::top_level(source, key).unwrap_or(1), 1);
    let invalid = |key: &str, message: String| {
        let (line, column) = at_key(key);
        PolicyError::Invalid {
            line,
            column,
            message,
        }
    };
    let Some(name) = file.extends.clone() else {
        if file.loosen.is_empty() {
            return Ok(file);
        }
        return Err(invalid(
            "loosen",
            "`loosen:` names what to loosen of a base policy, and this one extends none \
             (add `extends: builtin`)"
                .to_owned(),
        ));
    };
    let (base, label) = match &name {
        BaseName::Builtin => (
            crate::Policy::builtin_file().map_err(|why| {
                invalid(
                    "extends",
                    format!("the built-in policy does not read: {why}"),
                )
            })?,
            "builtin".to_owned(),
        ),
        BaseName::File(path) => {
            if depth >= MOST_NESTED {
                return Err(invalid(
                    "extends",
                    format!(
                        "policies extend each other more than {MOST_NESTED} deep at {path:?}: \
                         is there a loop?"
                    ),
                ));
            }
            let (resolved, text) = read(at, path)
                .map_err(|why| invalid("extends", format!("extends {path:?}: {why}")))?;
            let in_base = |e: PolicyError| {
                invalid(
                    "extends",
                    format!("in the base policy {}: {e}", resolved.display()),
                )
            };
            let base = crate::Policy::read_file(&text).map_err(in_base)?;
            let base =
                fold_in_base(base, &text, Some(&resolved), read, depth + 1).map_err(in_base)?;
            crate::check_references(&base, &text).map_err(in_base)?;
            (base, resolved.display().to_string())
        }
    };
    merge(file, base, &label, source)
}

/// The base's declarations (checks, notifiers) added to the file's; a name both declare is an
/// error, since either meaning would surprise someone.
fn declare_once<V>(
    mine: &mut std::collections::BTreeMap<String, V>,
    theirs: std::collections::BTreeMap<String, V>,
    what: &str,
) -> Result<(), String> {
    for (id, value) in theirs {
        if mine.contains_key(&id) {
            return Err(format!(
                "{what} {id:?} is declared by the base policy too; give this one its own name"
            ));
        }
        mine.insert(id, value);
    }
    Ok(())
}

/// The file's own settings over its base's, as the module's header says.
fn merge(
    mut file: PolicyFile,
    base: PolicyFile,
    label: &str,
    source: &str,
) -> Result<PolicyFile, PolicyError> {
    let invalid = |key: &str, message: String| {
        let line = locate::top_level(source, key).unwrap_or(1);
        PolicyError::Invalid {
            line,
            column: 1,
            message,
        }
    };
    let base_rules: BTreeSet<&str> = base.rules.iter().map(|r| r.id.as_str()).collect();
    let loosened: BTreeSet<String> = file.loosen.iter().map(|id| id.0.clone()).collect();
    for name in &loosened {
        let known = matches!(name.as_str(), "default" | "opaque" | "egress")
            || base_rules.contains(name.as_str());
        if !known {
            return Err(invalid(
                "loosen",
                format!(
                    "`loosen:` names {name:?}, which the base policy has no rule of (name a \
                     base rule's id, `default`, `opaque` or `egress`; `nightwatch policy \
                     explain` lists a policy's rules)"
                ),
            ));
        }
    }
    let strictness = |key: &str,
                      mine: Option<Verdict>,
                      theirs: Option<Verdict>|
     -> Result<Option<Verdict>, PolicyError> {
        let theirs_or_ask = theirs.unwrap_or(Verdict::Ask);
        match mine {
            Some(mine) if mine < theirs_or_ask && !loosened.contains(key) => Err(invalid(
                key,
                format!(
                    "`{key}: {mine}` is looser than the base policy's {theirs_or_ask}; to \
                     loosen it, name `{key}` in `loosen:`"
                ),
            )),
            Some(mine) => Ok(Some(mine)),
            None => Ok(theirs),
        }
    };
    let default = strictness(
        "default",
        file.default.as_ref().map(|v| v.0),
        base.default.as_ref().map(|v| v.0),
    )?;
    let opaque = strictness(
        "opaque",
        file.opaque.as_ref().map(|v| v.0),
        base.opaque.as_ref().map(|v| v.0),
    )?;
    file.default = default.map(crate::document::VerdictName);
    file.opaque = opaque.map(crate::document::OpaqueVerdict);

    for rule in &file.rules {
        if base_rules.contains(rule.id.as_str()) && !loosened.contains(&rule.id) {
            return Err(invalid(
                "rules",
                format!(
                    "rule {:?} has the id of a base policy rule; to replace that rule, name it \
                     in `loosen:` (or give this one its own id)",
                    rule.id
                ),
            ));
        }
    }
    // The file's rules first: ties between matching rules go to the earliest, so the file's
    // own reason explains a verdict both give.
    file.rules.extend(
        base.rules
            .into_iter()
            .filter(|rule| !loosened.contains(&rule.id))
            .map(|mut rule| {
                rule.from.get_or_insert_with(|| label.to_owned());
                rule
            }),
    );

    declare_once(&mut file.checks, base.checks, "check")
        .map_err(|message| invalid("checks", message))?;
    declare_once(&mut file.notifiers, base.notifiers, "notifier")
        .map_err(|message| invalid("notifiers", message))?;
    for id in base.always_check {
        if !file.always_check.contains(&id) {
            file.always_check.push(id);
        }
    }
    file.escalate = match (file.escalate.take(), base.escalate) {
        (Some(mut mine), Some(theirs)) => {
            for (into, from) in [
                (&mut mine.halt, theirs.halt),
                (&mut mine.ask, theirs.ask),
                (&mut mine.deny, theirs.deny),
            ] {
                for id in from {
                    if !into.contains(&id) {
                        into.push(id);
                    }
                }
            }
            Some(mine)
        }
        (mine, theirs) => mine.or(theirs),
    };
    file.backup = file.backup.take().or(base.backup);
    file.trust = file.trust.take().or(base.trust);
    file.sweep = file.sweep.take().or(base.sweep);
    file.egress = match (file.egress.take(), base.egress) {
        (Some(_), Some(_)) if !loosened.contains("egress") => {
            return Err(invalid(
                "egress",
                "the base policy has an `egress:` section; to replace it, name `egress` in \
                 `loosen:`"
                    .to_owned(),
            ));
        }
        (mine, theirs) => mine.or(theirs),
    };
    file.extends = None;
    file.loosen.clear();
    Ok(file)
}

#[cfg(test)]
mod tests {
    use crate::Policy;
    use nightwatch_core::{Action, Actor, Tool, Verdict};
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    fn compile(source: &str) -> Result<Policy, String> {
        Policy::from_yaml(source, nightwatch_shell::analyse).map_err(|e| e.to_string())
    }

    fn verdict(policy: &Policy, line: &str) -> (Verdict, Option<String>) {
        let action = Action::new(
            Actor::new(nightwatch_core::ActorKind::Agent, "claude-code"),
            Tool::Exec {
                line: line.to_owned(),
            },
        );
        let decision = policy.decide(&action);
        (decision.verdict, decision.rule)
    }

    /// The example policy's shape: a VM for agents, no Docker on it.
    const AGENT_VM: &str = "
extends: builtin
rules:
  - id: docker-belongs-on-the-dev-host
    verdict: deny
    command: [\"docker *\"]
    instead: run it on the dev host
";

    #[test]
    fn a_policy_extending_builtin_keeps_every_builtin_protection() {
        let policy = compile(AGENT_VM).unwrap();
        let builtin = Policy::builtin(nightwatch_shell::analyse);
        for line in [
            "cat /etc/shadow",
            "cat .env",
            "cat ~/.ssh/id_rsa",
            "rm -rf /",
            "git push --force origin main",
            "ls -la",
            "cargo build",
        ] {
            assert_eq!(
                verdict(&policy, line).0,
                verdict(&builtin, line).0,
                "{line}: the extended policy decides as the built-in one"
            );
        }
        assert_eq!(verdict(&builtin, "rm -rf /").0, Verdict::Deny);
        assert_eq!(
            verdict(&policy, "docker compose up -d"),
            (
                Verdict::Deny,
                Some("docker-belongs-on-the-dev-host".to_owned())
            )
        );
    }

    #[test]
    fn an_added_rule_tightens_but_cannot_loosen_a_builtin_one() {
        let policy = compile(
            "extends: builtin
rules:
  - id: everything-goes
    verdict: allow
  - id: no-curl
    verdict: deny
    command: [\"curl *\"]
",
        )
        .unwrap();
        assert_eq!(verdict(&policy, "rm -rf /").0, Verdict::Deny);
        assert_eq!(verdict(&policy, "cat /etc/shadow").0, Verdict::Deny);
        assert_eq!(
            verdict(&policy, "curl https://example.com").0,
            Verdict::Deny
        );
        assert_eq!(verdict(&policy, "cargo build").0, Verdict::Allow);
    }

    #[test]
    fn loosening_is_named_rule_by_rule() {
        let before = compile("extends: builtin\n").unwrap();
        assert_eq!(
            verdict(&before, "git push --force origin main").0,
            Verdict::Deny
        );
        let loosened = compile(
            "extends: builtin
loosen: [no-force-push-to-main]
rules:
  - id: force-push-asks
    verdict: ask
    command: [\"git push -f *\"]
",
        )
        .unwrap();
        assert_eq!(
            verdict(&loosened, "git push --force origin main"),
            (Verdict::Ask, Some("force-push-asks".to_owned()))
        );
        // Everything else the built-in policy refuses still is.
        assert_eq!(verdict(&loosened, "rm -rf /").0, Verdict::Deny);
        // A named rule may be replaced under its own id.
        let replaced = compile(
            "extends: builtin
loosen: [no-force-push-to-main]
rules:
  - id: no-force-push-to-main
    verdict: halt
    command: [\"git push -f *\"]
",
        )
        .unwrap();
        assert_eq!(
            verdict(&replaced, "git push --force origin main").0,
            Verdict::Halt
        );
    }

    #[test]
    fn loosening_without_naming_it_is_refused_with_where() {
        for (source, says) in [
            (
                "extends: builtin\nrules:\n  - id: no-force-push-to-main\n    verdict: allow\n",
                "name it in `loosen:`",
            ),
            (
                "extends: builtin\ndefault: allow\n",
                "name `default` in `loosen:`",
            ),
            ("extends: builtin\nloosen: [no-such-rule]\n", "no rule of"),
            ("loosen: [default]\nrules: []\n", "extends none"),
            (
                "extends: builtin\negress: { allow: [example.com], otherwise: ask }\n",
                "name `egress` in `loosen:`",
            ),
            ("extends: ./base.yaml\n", "given as text"),
            ("extends: \"\"\n", "extends needs"),
        ] {
            let error = compile(source).expect_err(source);
            assert!(error.contains(says), "{source}: {error}");
            assert!(
                error.chars().next().is_some_and(|c| c.is_ascii_digit()),
                "{source}: the error has a position: {error}"
            );
        }
        let loosened = compile("extends: builtin\nloosen: [default]\ndefault: allow\n").unwrap();
        assert_eq!(verdict(&loosened, "cargo build").0, Verdict::Allow);
        assert_eq!(verdict(&loosened, "rm -rf /").0, Verdict::Deny);
    }

    #[test]
    fn the_file_s_own_examples_run_on_the_merged_policy() {
        let error = compile(
            "extends: builtin\nexamples:\n  - command: \"cat /etc/shadow\"\n    expect: allow\n",
        )
        .unwrap_err();
        assert!(error.contains("expects allow"), "{error}");
    }

    /// Files in memory, read as a caller reads them from disk: relative to the extending file.
    fn files(
        map: &[(&str, &str)],
    ) -> impl Fn(Option<&Path>, &str) -> Result<(PathBuf, String), String> + use<> {
        let map: BTreeMap<PathBuf, String> = map
            .iter()
            .map(|(p, t)| (PathBuf::from(p), (*t).to_owned()))
            .collect();
        move |at, name| {
            let dir = at.and_then(Path::parent).unwrap_or(Path::new("/"));
            let path = dir.join(name);
            map.get(&path)
                .map(|text| (path.clone(), text.clone()))
                .ok_or_else(|| format!("no file {}", path.display()))
        }
    }

    #[test]
    fn a_policy_extends_a_file_that_extends_builtin() {
        let read = files(&[
            (
                "/etc/nightwatch/team.yaml",
                "extends: builtin\nrules:\n  - id: no-docker\n    verdict: deny\n    command: [\"docker *\"]\n",
            ),
            (
                "/srv/app/strict.yaml",
                "extends: /etc/nightwatch/team.yaml\nrules:\n  - id: no-curl\n    verdict: deny\n    command: [\"curl *\"]\n",
            ),
        ]);
        let text = "extends: strict.yaml\n";
        let policy = Policy::from_yaml_at(
            text,
            Some(Path::new("/srv/app/policy.yaml")),
            nightwatch_shell::analyse,
            &read,
        )
        .unwrap();
        assert_eq!(verdict(&policy, "docker ps").0, Verdict::Deny);
        assert_eq!(verdict(&policy, "curl https://x").0, Verdict::Deny);
        assert_eq!(verdict(&policy, "rm -rf /").0, Verdict::Deny);
    }

    #[test]
    fn a_loop_of_extends_and_a_broken_base_are_errors_that_say_where() {
        let read = files(&[
            ("/p/a.yaml", "extends: b.yaml\n"),
            ("/p/b.yaml", "extends: a.yaml\n"),
            ("/p/bad.yaml", "rules:\n  - id: x\n    verdict: maybe\n"),
        ]);
        let at = Some(Path::new("/p/main.yaml"));
        let looped =
            Policy::from_yaml_at("extends: a.yaml\n", at, nightwatch_shell::analyse, &read)
                .unwrap_err()
                .to_string();
        assert!(looped.contains("a loop"), "{looped}");
        let broken =
            Policy::from_yaml_at("extends: bad.yaml\n", at, nightwatch_shell::analyse, &read)
                .unwrap_err()
                .to_string();
        assert!(
            broken.contains("/p/bad.yaml") && broken.contains("maybe"),
            "{broken}"
        );
        let missing =
            Policy::from_yaml_at("extends: gone.yaml\n", at, nightwatch_shell::analyse, &read)
                .unwrap_err()
                .to_string();
        assert!(missing.contains("no file /p/gone.yaml"), "{missing}");
    }

    #[test]
    fn a_check_declared_by_the_base_and_the_file_is_an_error_and_base_checks_can_be_named() {
        let check = "checks:\n  storm:\n    circuit_breaker: { failures: 3, within: 10m }\n    on_match: halt\n";
        let read = files(&[("/p/base.yaml", check)]);
        let at = Some(Path::new("/p/main.yaml"));
        let twice = Policy::from_yaml_at(
            &format!("extends: base.yaml\n{check}"),
            at,
            nightwatch_shell::analyse,
            &read,
        )
        .unwrap_err()
        .to_string();
        assert!(
            twice.contains("check \"storm\" is declared by the base policy too"),
            "{twice}"
        );
        // The file's rules may name what the base declares.
        let uses = Policy::from_yaml_at(
            "extends: base.yaml\nrules:\n  - id: restarts\n    verdict: allow\n    command: [\"systemctl restart *\"]\n    checks: [storm]\n",
            at,
            nightwatch_shell::analyse,
            &read,
        );
        assert!(uses.is_ok(), "{:?}", uses.err());
    }
}
