//! Hook output: what each agent reads back from the hook.
//!
//! - Claude Code: exit 0 with `hookSpecificOutput.permissionDecision` allow, ask or deny.
//! - Codex: only a block is honoured; `permissionDecision` allow or ask without more is
//!   reported as an invalid hook output, so allow is silence and ask is a deny.
//! - Gemini CLI: `decision` allow or deny; no ask.
//!
//! Every refusal also exits 2 with its reason on stderr, which all three treat as a block
//! whatever stdout says.

use crate::Agent;
use nightwatch_core::Verdict;
use serde_json::json;

/// What the hook process prints and how it exits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: u8,
}

/// The exit code that blocks a call in every agent's protocol.
const BLOCK: u8 = 2;

// Each refusal says it is nightwatch's policy speaking: Claude Code shows every PreToolUse
// refusal to the model as "PreToolUse:Bash hook error: ...", which without this reads like a
// broken hook to retry.
const REFUSED: &str = "refused by nightwatch policy: ";
const HALTED: &str = "halted by nightwatch policy, the operator has been notified: ";
const NEEDS_APPROVAL: &str = "needs a human's approval under nightwatch policy: ";
const APPROVE_HOW: &str = " (a person approves it with `nightwatch approve ID`, the id in \
                           `nightwatch log --verdict ask`; then the same call goes through once)";

/// The reply to a `BeforeTool` event for this verdict, in the agent's protocol.
pub fn reply_to_decision(
    agent: Agent,
    verdict: Verdict,
    reason: &str,
    instead: Option<&str>,
) -> Reply {
    reply_to_decision_with_input(agent, verdict, reason, instead, None)
}

/// As [`reply_to_decision`]; an allowed or asked call runs with `updated_input` in place of
/// the input the agent sent, where the agent lets a hook say so (Claude Code's `updatedInput`,
/// which it applies to allow and ask and shows the person in its prompt; the others run what
/// they sent). So what a person approves is what was decided and recorded.
pub fn reply_to_decision_with_input(
    agent: Agent,
    verdict: Verdict,
    reason: &str,
    instead: Option<&str>,
    updated_input: Option<&serde_json::Value>,
) -> Reply {
    let reason = with_instead(reason, instead);
    match (verdict, agent) {
        (Verdict::Allow, Agent::Claude) => claude("allow", &reason, updated_input),
        // Codex runs a rewritten input only with an explicit allow, and reads any other
        // allow as an invalid answer (which it lets through): silence when nothing changes.
        (Verdict::Allow, Agent::Codex) => match updated_input {
            Some(_) => claude("allow", &reason, updated_input),
            None => silence(),
        },
        (Verdict::Allow, Agent::Gemini) => Reply {
            stdout: json!({ "decision": "allow" }).to_string() + "\n",
            stderr: String::new(),
            exit_code: 0,
        },
        (Verdict::Ask, Agent::Claude) => claude("ask", &reason, updated_input),
        // Neither can put a hook's ask to a person: refused, and a person approves it with
        // `nightwatch approve`, after which the same call goes through once.
        (Verdict::Ask, Agent::Codex | Agent::Gemini) => {
            deny(agent, &format!("{NEEDS_APPROVAL}{reason}{APPROVE_HOW}"))
        }
        (Verdict::Halt, _) => deny(agent, &format!("{HALTED}{reason}")),
        (Verdict::Deny, _) => deny(agent, &format!("{REFUSED}{reason}")),
    }
}

/// The reply when nightwatch itself failed (bad input, unreadable policy, unwritable ledger, a
/// panic): always a deny, exit 2, with the reason on stderr.
pub fn reply_to_failure(agent: Agent, reason: &str) -> Reply {
    let reason = match reason.trim() {
        "" => "an unknown error".to_string(),
        reason => reason.to_string(),
    };
    deny(
        agent,
        &format!("nightwatch could not decide this call, so it is refused: {reason}"),
    )
}

/// The reply to `AfterTool` and lifecycle events: acknowledged, nothing to say.
pub fn reply_to_record(agent: Agent) -> Reply {
    match agent {
        Agent::Claude | Agent::Codex => silence(),
        // Gemini CLI parses stdout as JSON after exit 0.
        Agent::Gemini => Reply {
            stdout: "{}\n".to_string(),
            stderr: String::new(),
            exit_code: 0,
        },
    }
}

fn silence() -> Reply {
    Reply {
        stdout: String::new(),
        stderr: String::new(),
        exit_code: 0,
    }
}

/// A refusal: the agent's JSON deny on stdout for those that read it, and exit 2 with the
/// reason on stderr for all.
fn deny(agent: Agent, reason: &str) -> Reply {
    let stdout = match agent {
        Agent::Claude | Agent::Codex => claude_json("deny", reason),
        Agent::Gemini => json!({ "decision": "deny", "reason": reason }).to_string() + "\n",
    };
    Reply {
        stdout,
        stderr: format!("{reason}\n"),
        exit_code: BLOCK,
    }
}

/// Claude Code's allow or ask: exit 0, the decision in JSON.
fn claude(decision: &str, reason: &str, updated_input: Option<&serde_json::Value>) -> Reply {
    let mut output = json!({
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    });
    if let Some(input) = updated_input {
        output["updatedInput"] = input.clone();
    }
    Reply {
        stdout: json!({ "hookSpecificOutput": output }).to_string() + "\n",
        stderr: String::new(),
        exit_code: 0,
    }
}

fn claude_json(decision: &str, reason: &str) -> String {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    })
    .to_string()
        + "\n"
}

/// The reason the agent sees, with where to go instead. Never empty: Codex ignores an exit 2
/// without a reason on stderr.
fn with_instead(reason: &str, instead: Option<&str>) -> String {
    let mut text = match reason.trim() {
        "" => "refused by nightwatch policy".to_string(),
        reason => reason.to_string(),
    };
    if let Some(instead) = instead.map(str::trim).filter(|i| !i.is_empty()) {
        if !text.ends_with(['.', '!', '?']) {
            text.push('.');
        }
        text.push_str(" Instead: ");
        text.push_str(instead);
    }
    text
}
