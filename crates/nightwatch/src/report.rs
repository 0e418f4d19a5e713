//! How a decision is shown: a few readable lines for people, one JSON object for programs.
//! The JSON here is the command line's wire format, built from the core types at this edge.

use nightwatch_core::{Effects, Invocation, Remote};
use nightwatch_host::Origin;
use nightwatch_policy::{Decision, JudgedInvocation};
use serde::Serialize;
use std::fmt::Write;

#[derive(Serialize)]
struct DecisionJson<'a> {
    line: &'a str,
    verdict: &'static str,
    reason: &'a str,
    rule: Option<&'a str>,
    instead: Option<&'a str>,
    policy: String,
    invocations: Vec<InvocationJson<'a>>,
}

#[derive(Serialize)]
struct InvocationJson<'a> {
    argv: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    via: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    remote: Option<&'a Remote>,
    #[serde(skip_serializing_if = "Option::is_none")]
    opaque: Option<&'a str>,
    effects: &'a Effects,
    verdict: &'static str,
    rule: Option<&'a str>,
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instead: Option<&'a str>,
}

pub fn decision_json(
    line: &str,
    decision: &Decision,
    origin: &Origin,
) -> serde_json::Result<String> {
    let invocations = decision
        .invocations
        .iter()
        .map(|judged| InvocationJson {
            argv: &judged.invocation.argv,
            path: judged.invocation.path.as_deref(),
            via: &judged.invocation.via,
            remote: judged.invocation.remote.as_ref(),
            opaque: judged.invocation.opaque.as_deref(),
            effects: &judged.invocation.effects,
            verdict: judged.verdict.as_str(),
            rule: judged.rule.as_deref(),
            reason: &judged.reason,
            instead: judged.instead.as_deref(),
        })
        .collect();
    serde_json::to_string(&DecisionJson {
        line,
        verdict: decision.verdict.as_str(),
        reason: &decision.reason,
        rule: decision.rule.as_deref(),
        instead: decision.instead.as_deref(),
        policy: origin.to_string(),
        invocations,
    })
}

/// The verdict first, then why, then each command the line runs with its own verdict.
pub fn decision_text(line: &str, decision: &Decision, origin: &Origin) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {}",
        decision.verdict.as_str().to_uppercase(),
        one_line(line)
    );
    let _ = writeln!(out, "  why: {}", decision.reason);
    if let Some(instead) = &decision.instead {
        let _ = writeln!(out, "  instead: {instead}");
    }
    // One plain command says it all in `why`; several, or one nightwatch could not see into
    // (a line that does not parse, a script built at runtime), are listed with why each.
    let opaque = decision
        .invocations
        .iter()
        .any(|judged| judged.invocation.opaque.is_some());
    if decision.invocations.len() > 1 || opaque {
        let _ = writeln!(out, "  commands:");
        for judged in &decision.invocations {
            let _ = writeln!(
                out,
                "    {:<5} {}  ({})",
                judged.verdict.as_str(),
                describe(&judged.invocation),
                decided_by(judged)
            );
        }
    }
    if !decision.checks.is_empty() && decision.verdict != nightwatch_core::Verdict::Deny {
        // `check` only reads policy; the hook and exec run these before acting.
        let _ = writeln!(
            out,
            "  pre-flight checks before it runs: {}",
            decision.checks.join(", ")
        );
    }
    let _ = writeln!(out, "  policy: {origin}");
    out
}

fn decided_by(judged: &JudgedInvocation) -> String {
    match (&judged.rule, &judged.invocation.opaque) {
        (_, Some(why)) => format!("opaque: {why}"),
        (Some(rule), None) => format!("rule {rule}"),
        (None, None) => "no rule matched".to_owned(),
    }
}

fn describe(invocation: &Invocation) -> String {
    let mut text = String::new();
    if let Some(remote) = &invocation.remote {
        let _ = write!(text, "[on {}] ", remote.target);
    }
    if invocation.argv.is_empty() {
        text.push_str(if invocation.opaque.is_some() {
            "(script)"
        } else {
            "(redirection)"
        });
    } else {
        text.push_str(&one_line(&invocation.argv.join(" ")));
    }
    if !invocation.via.is_empty() {
        let _ = write!(text, " via {}", invocation.via.join(" > "));
    }
    text
}

/// Long or multi-line commands are shortened for the terminal; `--json` has them whole.
fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' { '⏎' } else { c })
        .collect();
    if flat.chars().count() > 120 {
        let cut: String = flat.chars().take(117).collect();
        format!("{cut}...")
    } else {
        flat
    }
}
