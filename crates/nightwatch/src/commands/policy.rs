use crate::cli::{PolicyDiffArgs, PolicyExplainArgs, PolicyTestArgs};

pub fn test(args: PolicyTestArgs) -> anyhow::Result<u8> {
    // Compile without running the examples at load, so that every failing one is listed.
    let (policy, origin) =
        nightwatch_host::policies::load_for_test(super::policy_file(&args.source).as_deref())?;
    let outcomes = policy.run_examples();
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    for outcome in &outcomes {
        if args.json {
            println!("{}", serde_json::to_string(outcome)?);
            continue;
        }
        let mark = if outcome.passed { "ok  " } else { "FAIL" };
        let line = outcome.line.map(|l| format!(":{l}")).unwrap_or_default();
        let rule = outcome.rule.as_deref().unwrap_or("(default)");
        if outcome.passed {
            println!(
                "{mark} {} -> {} by {rule}",
                outcome.description, outcome.actual
            );
        } else {
            println!(
                "{mark} {origin}{line}: {} expected {} but got {} by {rule}: {}",
                outcome.description, outcome.expected, outcome.actual, outcome.reason
            );
        }
    }
    if !args.json {
        println!("{} passed, {} failed", outcomes.len() - failed, failed);
    }
    Ok(if failed == 0 {
        0
    } else {
        crate::cli::EXIT_ERROR
    })
}

/// nightwatch's own command corpora, built into the binary: what `explain` and `diff` decide.
/// The files are the tests' (`tests/corpus/`), so the lines are the ones the project checks.
const CORPORA: [(&str, &str); 12] = [
    ("everyday", include_str!("../../tests/corpus/everyday.yaml")),
    ("hostile", include_str!("../../tests/corpus/hostile.yaml")),
    (
        "credential-stores",
        include_str!("../../tests/corpus/threats/01-credential-stores.yaml"),
    ),
    (
        "searches",
        include_str!("../../tests/corpus/threats/02-searches.yaml"),
    ),
    (
        "globs",
        include_str!("../../tests/corpus/threats/03-globs.yaml"),
    ),
    (
        "relative-paths",
        include_str!("../../tests/corpus/threats/04-relative-paths.yaml"),
    ),
    (
        "env-secrets",
        include_str!("../../tests/corpus/threats/05-env-secrets.yaml"),
    ),
    (
        "env-poisoning",
        include_str!("../../tests/corpus/threats/06-env-poisoning.yaml"),
    ),
    (
        "abbreviated-options",
        include_str!("../../tests/corpus/threats/07-abbreviated-options.yaml"),
    ),
    (
        "self-protection",
        include_str!("../../tests/corpus/threats/08-self-protection.yaml"),
    ),
    (
        "egress",
        include_str!("../../tests/corpus/threats/09-egress.yaml"),
    ),
    (
        "edges",
        include_str!("../../tests/corpus/threats/10-edges.yaml"),
    ),
];

/// One corpus entry; only shell lines are decided here (entries for other tools are skipped).
#[derive(serde::Deserialize)]
struct CorpusEntry {
    #[serde(default)]
    line: Option<String>,
}

/// Every shell line of the corpora, each once, in corpus order.
fn corpus_lines() -> anyhow::Result<Vec<String>> {
    let mut seen = std::collections::HashSet::new();
    let mut lines = Vec::new();
    for (name, text) in CORPORA {
        let entries: Vec<CorpusEntry> = yaml_serde::from_str(text)
            .map_err(|e| anyhow::anyhow!("the built-in corpus {name} does not read: {e}"))?;
        for line in entries.into_iter().filter_map(|e| e.line) {
            if seen.insert(line.clone()) {
                lines.push(line);
            }
        }
    }
    Ok(lines)
}

/// An agent's call running `line`, as the corpora's verdicts assume.
fn agent_runs(line: &str) -> nightwatch_core::Action {
    nightwatch_core::Action::new(
        nightwatch_core::Actor::new(nightwatch_core::ActorKind::Agent, "claude-code"),
        nightwatch_core::Tool::Exec {
            line: line.to_owned(),
        },
    )
}

pub fn explain(args: PolicyExplainArgs) -> anyhow::Result<u8> {
    let (policy, origin) = super::load_policy(&args.source)?;
    let Some(id) = args.rule else {
        if args.json {
            let rules: Vec<_> = policy.rules().collect();
            println!(
                "{}",
                serde_json::json!({
                    "policy": origin.to_string(),
                    "default": policy.default_verdict(),
                    "opaque": policy.opaque_verdict(),
                    "rules": rules,
                })
            );
            return Ok(0);
        }
        println!(
            "{origin}: {} rules, tried together (the strictest verdict that matches wins); \
             no rule: {}; an opaque line that would be allowed: {}",
            policy.rule_count(),
            policy.default_verdict(),
            policy.opaque_verdict()
        );
        for rule in policy.rules() {
            let from = rule
                .from
                .map(|f| format!("  (from {f})"))
                .unwrap_or_default();
            println!("  {:<5} {}{from}", rule.verdict.to_string(), rule.id);
        }
        return Ok(0);
    };
    let Some(rule) = policy.rules().find(|r| r.id == id) else {
        let near: Vec<&str> = policy
            .rule_ids()
            .filter(|known| known.contains(id.as_str()) || id.contains(known))
            .collect();
        let hint = if near.is_empty() {
            "`nightwatch policy explain` lists them".to_owned()
        } else {
            format!("did you mean {}?", near.join(", "))
        };
        anyhow::bail!("{origin} has no rule {id:?}; {hint}");
    };
    let decided: Vec<(String, nightwatch_core::Verdict)> = corpus_lines()?
        .into_iter()
        .filter_map(|line| {
            let decision = policy.decide(&agent_runs(&line));
            (decision.rule.as_deref() == Some(id.as_str())).then_some((line, decision.verdict))
        })
        .collect();
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "policy": origin.to_string(),
                "rule": rule,
                "decides": decided.iter().map(|(line, verdict)| {
                    serde_json::json!({ "line": line, "verdict": verdict })
                }).collect::<Vec<_>>(),
            })
        );
        return Ok(0);
    }
    println!("{} ({})", rule.id, rule.from.unwrap_or(&origin.to_string()));
    println!("  verdict: {}", rule.verdict);
    if let Some(reason) = rule.reason {
        println!("  reason:  {reason}");
    }
    if let Some(instead) = rule.instead {
        println!("  instead: {instead}");
    }
    if !rule.checks.is_empty() {
        println!("  checks first: {}", rule.checks.join(", "));
    }
    if !rule.notify.is_empty() {
        println!("  notifies on halt or ask: {}", rule.notify.join(", "));
    }
    const SHOWN: usize = 12;
    println!(
        "  decides {} of the {} lines of nightwatch's corpora{}",
        decided.len(),
        corpus_lines()?.len(),
        if decided.is_empty() {
            " (it may be for other tools, actors or hosts, or another rule is stricter)"
        } else {
            ":"
        }
    );
    for (line, verdict) in decided.iter().take(SHOWN) {
        println!("    {:<5} {line}", verdict.to_string());
    }
    if decided.len() > SHOWN {
        println!(
            "    ... and {} more (--json lists all)",
            decided.len() - SHOWN
        );
    }
    Ok(0)
}

/// A policy named on the command line: `builtin`, or a file.
fn named_policy(name: &str) -> anyhow::Result<(nightwatch_policy::Policy, String)> {
    if name == "builtin" {
        let (policy, origin) = nightwatch_host::policies::load(None)?;
        return Ok((policy, origin.to_string()));
    }
    let (policy, origin) = nightwatch_host::policies::load(Some(std::path::Path::new(name)))?;
    Ok((policy, origin.to_string()))
}

pub fn diff(args: PolicyDiffArgs) -> anyhow::Result<u8> {
    let (old, old_name) = named_policy(&args.old)?;
    let (new, new_name) = named_policy(&args.new)?;
    let mut lines = corpus_lines()?;
    if let Some(file) = &args.lines {
        let text = std::fs::read_to_string(file)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
        lines.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_owned),
        );
    }
    let mut changes: Vec<serde_json::Value> = Vec::new();
    let (mut looser, mut stricter) = (0usize, 0usize);
    for line in &lines {
        let action = agent_runs(line);
        let (was, now) = (old.decide(&action), new.decide(&action));
        if was.verdict == now.verdict {
            continue;
        }
        let loosens = now.verdict < was.verdict;
        if loosens {
            looser += 1;
        } else {
            stricter += 1;
        }
        changes.push(serde_json::json!({
            "line": line,
            "looser": loosens,
            "old": { "verdict": was.verdict, "rule": was.rule },
            "new": { "verdict": now.verdict, "rule": now.rule, "reason": now.reason },
        }));
    }
    // Looser first: those are the ones to read before adopting the new policy.
    changes.sort_by_key(|c| !c["looser"].as_bool().unwrap_or(false));
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "old": old_name, "new": new_name, "lines": lines.len(),
                "looser": looser, "stricter": stricter, "changes": changes,
            })
        );
    } else {
        let rule = |v: &serde_json::Value| v.as_str().unwrap_or("(default)").to_owned();
        for c in &changes {
            println!(
                "{} {:>5} -> {:<5} {}   ({} -> {})",
                if c["looser"].as_bool() == Some(true) {
                    "LOOSER "
                } else {
                    "stricter"
                },
                c["old"]["verdict"].as_str().unwrap_or("?"),
                c["new"]["verdict"].as_str().unwrap_or("?"),
                c["line"].as_str().unwrap_or(""),
                rule(&c["old"]["rule"]),
                rule(&c["new"]["rule"]),
            );
        }
        println!(
            "{} lines decided under {old_name} and {new_name}: {} differ ({looser} looser, {stricter} stricter)",
            lines.len(),
            changes.len()
        );
    }
    Ok(if changes.is_empty() { 0 } else { 3 })
}
