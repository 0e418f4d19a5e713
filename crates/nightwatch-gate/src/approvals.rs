//! A human's approval of an asked call: bound to the actor and the call's content, good once,
//! until it expires, and void once the call is rejected.

use nightwatch_ledger::{Filter, Record, event};
use nightwatch_store::{LedgerReader, StoreError as LedgerError};
use serde_json::Value;

/// How far back an approval is looked for: no approval lives longer.
pub const LONGEST_APPROVAL_MS: i64 = 7 * 24 * 3600 * 1000;

/// The approval that lets this call through now, if there is one.
pub fn usable_approval(
    ledger: &dyn LedgerReader,
    actor_id: &str,
    fingerprint: &str,
    now_ms: i64,
) -> Result<Option<Record>, LedgerError> {
    let since = now_ms.saturating_sub(LONGEST_APPROVAL_MS);
    let approvals = ledger.query(&Filter {
        since_ms: Some(since),
        event: Some(event::APPROVAL.to_owned()),
        ..Filter::default()
    })?;
    let candidates: Vec<&Record> = approvals
        .iter()
        .rev()
        .filter(|a| text(&a.inputs, "actor_id") == Some(actor_id))
        .filter(|a| text(&a.inputs, "fingerprint") == Some(fingerprint))
        .filter(|a| a.inputs.get("expires_ms").and_then(Value::as_i64) > Some(now_ms))
        .collect();
    if candidates.is_empty() {
        return Ok(None);
    }
    let rejections = ledger.query(&Filter {
        since_ms: Some(since),
        event: Some(event::REJECTION.to_owned()),
        ..Filter::default()
    })?;
    for approval in candidates {
        let asked = text(&approval.inputs, "record");
        let rejected = rejections
            .iter()
            .any(|r| r.seq > approval.seq && asked.is_some() && text(&r.inputs, "record") == asked);
        if rejected || used(ledger, approval)? {
            continue;
        }
        return Ok(Some(approval.clone()));
    }
    Ok(None)
}

/// Whether a decision after the approval already went through on it.
fn used(ledger: &dyn LedgerReader, approval: &Record) -> Result<bool, LedgerError> {
    let decisions = ledger.query(&Filter {
        since_ms: Some(approval.timestamp_ms),
        event: Some(event::DECISION.to_owned()),
        actor: Some(
            approval.inputs["actor_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        ),
        ..Filter::default()
    })?;
    Ok(decisions.iter().any(|d| {
        d.seq > approval.seq
            && d.safeguards
                .as_ref()
                .and_then(|s| s.get("approval"))
                .and_then(|a| a.get("record"))
                .and_then(Value::as_str)
                == Some(approval.id.as_str())
    }))
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}
