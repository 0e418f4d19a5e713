//! The robots' event API: a robot outside nightwatch (a backup job, a retrier, an autohealer)
//! reports each action it is about to take, and is told whether it may.
//!
//! ```text
//! POST /api/robots/backup-job/actions
//! Authorization: Bearer $NIGHTWATCH_ROBOTS_TOKEN
//! {"action": "backup", "target": "db1", "details": {"kind": "full"}}
//!
//! 200 {"verdict": "halt", "rule": "one-backup-a-day", "reason": "check once-a-day: ...", "record": "r812"}
//! ```
//!
//! The report is proposed through the daemon's one engine as actor `robot:{robot}` using the
//! tool `{action}`, so it is decided by policy (the built-in rule allows robots; an operator's
//! rule with a `rate` check halts the 46th backup of a day), recorded in the ledger, escalated
//! like every halt, and counted by the baselines watcher. Every decision is a 200: the robot
//! reads `verdict` and acts only on `allow`. A 503 means nothing was recorded: the robot must
//! not act, and may ask again.
//!
//! Enabled by serve.yaml's `robots:` section (`robots: { auth: { bearer_env:
//! NIGHTWATCH_ROBOTS_TOKEN } }`); without it the route answers 404 saying so. Without a secret
//! it is only allowed on a loopback listen address (the config refuses otherwise).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use nightwatch_core::{Action, Actor, ActorKind, Context, Tool};
use nightwatch_gate::Proposal;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Daemon;
use crate::api::ApiError;
use crate::api::wire::{ErrorBody, RobotAction, RobotVerdict};

/// The largest report read, whatever `max_body_bytes` allows: a report is a few fields.
const MAX_REPORT_BYTES: usize = 64 * 1024;
/// The longest `target`.
const MAX_TARGET: usize = 512;
/// How long a robot waits for its decision to be recorded before it is told 503.
const DECIDE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);
/// The agents' tools, which a robot's action may not be named after (policy's rules for them
/// read inputs a robot does not send).
const AGENT_TOOLS: [&str; 5] = ["exec", "read", "write", "edit", "fetch"];

pub(crate) fn routes() -> OpenApiRouter<Arc<Daemon>> {
    OpenApiRouter::new().routes(routes!(report))
}

fn refusal(status: StatusCode, why: impl Into<String>) -> Response {
    ApiError::new(status, why).into_response()
}

/// A name a robot or an action may have: 1-64 of letters, digits, `_`, `-`, `.`.
fn plain_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Checks a report and turns it into the action's inputs; `Err` says why it is refused.
pub fn check_report(body: &[u8]) -> Result<(String, Value), String> {
    let report: RobotAction =
        serde_json::from_slice(body).map_err(|e| format!("the body is not a report: {e}"))?;
    let action = report.action;
    if !plain_name(&action) || action.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "action {action:?} must be 1-64 of a-z, 0-9, '_', '-' and '.'"
        ));
    }
    if AGENT_TOOLS.contains(&action.as_str()) || action.starts_with("mcp__") {
        return Err(format!(
            "action {action:?} is one of the agents' tools; name the robot's own action (backup, retry, ...)"
        ));
    }
    if let Some(target) = &report.target
        && (target.is_empty()
            || target.chars().count() > MAX_TARGET
            || target.chars().any(char::is_control))
    {
        return Err(format!(
            "target must be 1-{MAX_TARGET} characters without control characters"
        ));
    }
    if let Some(details) = &report.details
        && !details.is_object()
    {
        return Err("details must be a JSON object".into());
    }
    let inputs = json!({
        "action": action,
        "target": report.target,
        "details": report.details.unwrap_or_else(|| json!({})),
    });
    Ok((action, inputs))
}

/// A robot reports an action it is about to take; the reply is the verdict it must obey.
#[utoipa::path(
    post,
    path = "/api/robots/{robot}/actions",
    tag = "robots",
    params(("robot" = String, Path, description = "The robot's name (1-64 of letters, digits, '_', '-', '.'): the actor robot:{robot} in the ledger and in policy")),
    request_body(content = RobotAction, content_type = "application/json", description = "The action it is about to take"),
    responses(
        (status = 200, description = "Decided and recorded: act only when verdict is allow", body = RobotVerdict),
        (status = 400, description = "The report is refused; the error says why", body = ErrorBody),
        (status = 401, description = "Missing or wrong secret (robots.auth in serve.yaml)", body = ErrorBody),
        (status = 404, description = "The robots' event API is off (no robots: section in serve.yaml)", body = ErrorBody),
        (status = 408, description = "The body did not arrive within request_timeout", body = ErrorBody),
        (status = 413, description = "The body is larger than the limit", body = ErrorBody),
        (status = 503, description = "Nothing was recorded (the ledger or the policy cannot be used now): do not act; ask again", body = ErrorBody),
    ),
    security(("bearer" = []), ("header" = []), ())
)]
async fn report(
    State(daemon): State<Arc<Daemon>>,
    Path(robot): Path<String>,
    headers: HeaderMap,
    request: Request,
) -> Response {
    let Some(robots) = &daemon.config.robots else {
        return refusal(
            StatusCode::NOT_FOUND,
            "the robots' event API is off: add `robots: { auth: { bearer_env: NIGHTWATCH_ROBOTS_TOKEN } }` to serve.yaml",
        );
    };
    if let Some(auth) = &robots.auth
        && !crate::http::admitted(auth, &headers)
    {
        let mut response = refusal(
            StatusCode::UNAUTHORIZED,
            "missing or wrong secret for the robots' event API (robots.auth in serve.yaml)",
        );
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"nightwatch\""),
        );
        return response;
    }
    if !plain_name(&robot) {
        return refusal(
            StatusCode::BAD_REQUEST,
            format!("robot {robot:?} must be 1-64 of letters, digits, '_', '-' and '.'"),
        );
    }
    let limit = daemon.config.max_body_bytes.min(MAX_REPORT_BYTES);
    let reading = axum::body::to_bytes(request.into_body(), limit);
    let body = match tokio::time::timeout(daemon.config.request_timeout, reading).await {
        Err(_) => {
            return refusal(
                StatusCode::REQUEST_TIMEOUT,
                "the body did not arrive within request_timeout",
            );
        }
        Ok(Err(e)) if crate::http::is_length_limit(&e) => {
            return refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("a report is at most {limit} bytes"),
            );
        }
        Ok(Err(e)) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                format!("the body could not be read: {e}"),
            );
        }
        Ok(Ok(body)) => body,
    };
    let (action, inputs) = match check_report(&body) {
        Ok(checked) => checked,
        Err(why) => return refusal(StatusCode::BAD_REQUEST, why),
    };
    let proposal = Proposal {
        action: Action {
            actor: Actor::new(ActorKind::Robot, robot),
            tool: Tool::Named { name: action },
            context: Context {
                triggered_by: Some("robot-report".to_owned()),
                ..Context::default()
            },
        },
        call_id: None,
        inputs,
        cwd: None,
    };
    let deciding = tokio::task::spawn_blocking(move || {
        let policy = daemon
            .edges
            .policy()
            .map_err(|e| format!("the policy cannot be read: {e}"))?;
        daemon
            .engine()
            .propose(&policy, proposal)
            .map_err(|e| format!("the ledger cannot record the decision: {e}"))
    });
    let ruling = match tokio::time::timeout(DECIDE_DEADLINE, deciding).await {
        Ok(Ok(Ok(ruling))) => ruling,
        Ok(Ok(Err(why))) => {
            return unavailable(format!("{why}; nothing was recorded: do not act"));
        }
        Ok(Err(e)) => return unavailable(format!("deciding failed: {e}; do not act")),
        Err(_) => {
            return unavailable(
                "deciding is taking too long; do not act until a verdict comes back",
            );
        }
    };
    Json(RobotVerdict {
        verdict: ruling.decision.verdict.as_str().to_owned(),
        rule: ruling.decision.rule.clone(),
        reason: ruling.decision.reason.clone(),
        record: ruling.record.id.clone(),
    })
    .into_response()
}

fn unavailable(why: impl Into<String>) -> Response {
    let mut response = refusal(StatusCode::SERVICE_UNAVAILABLE, why);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reports_are_checked_with_why() {
        let (action, inputs) =
            check_report(br#"{"action":"backup","target":"db1","details":{"n":1}}"#).unwrap();
        assert_eq!(action, "backup");
        assert_eq!(inputs["target"], "db1");
        assert_eq!(inputs["details"]["n"], 1);
        for (body, why) in [
            (&b""[..], "not a report"),
            (b"[]", "not a report"),
            (b"{}", "missing field `action`"),
            (br#"{"action":"backup","extra":1}"#, "unknown field"),
            (br#"{"action":""}"#, "must be 1-64"),
            (br#"{"action":"Backup"}"#, "must be 1-64"),
            (br#"{"action":"back up"}"#, "must be 1-64"),
            (br#"{"action":"exec"}"#, "agents' tools"),
            (br#"{"action":"mcp__github__x"}"#, "agents' tools"),
            (br#"{"action":"backup","target":""}"#, "target must be"),
            (br#"{"action":"backup","target":"a\nb"}"#, "target must be"),
            (
                br#"{"action":"backup","details":[1]}"#,
                "must be a JSON object",
            ),
            (
                br#"{"action":"backup","details":"x"}"#,
                "must be a JSON object",
            ),
        ] {
            let err = check_report(body).expect_err(&String::from_utf8_lossy(body));
            assert!(
                err.contains(why),
                "{}: {err}",
                String::from_utf8_lossy(body)
            );
        }
        let long = format!(r#"{{"action":"backup","target":"{}"}}"#, "x".repeat(513));
        assert!(check_report(long.as_bytes()).is_err());
    }

    proptest! {
        #[test]
        fn hostile_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = check_report(&body);
        }
    }
}
