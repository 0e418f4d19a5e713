//! `nightwatch escalate RECORD`: tell the notifiers a halted or asked decision names, and
//! record each delivery with every attempt, delivered or not.

use crate::cli::EscalateArgs;
use crate::clock::Clock;
use crate::commands::{load_policy, open_ledger};
use anyhow::Context as _;
use nightwatch_ledger::{Entry, Outputs, Record, RecordActor, event};
use nightwatch_notify::{Delivery, Escalation, deliver_all};
use nightwatch_store::Ledger;
use serde_json::{Value, json};

pub fn run(args: EscalateArgs) -> anyhow::Result<u8> {
    let clock = Clock::from_environment()?;
    let ledger = open_ledger()?;
    let record = ledger
        .get(&args.record)?
        .with_context(|| format!("no record {}", args.record))?;
    let names: Vec<String> = record
        .safeguards
        .as_ref()
        .and_then(|s| s.get("notify"))
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if names.is_empty() {
        println!("{} names no notifier; nothing to send", record.id);
        return Ok(0);
    }
    let (policy, origin) = load_policy(&args.source)?;
    let notifiers = &policy.safeguards().notifiers;
    let escalation = escalation_of(&record);
    let known: Vec<(&str, &nightwatch_notify::NotifierSpec)> = names
        .iter()
        .filter_map(|name| notifiers.get(name).map(|spec| (name.as_str(), spec)))
        .collect();
    let env = |name: &str| std::env::var(name).ok();
    let sleep = |pause: std::time::Duration| std::thread::sleep(pause);
    let mut deliveries = deliver_all(known, &escalation, &env, &sleep);
    // A notifier the record names but the policy no longer declares is a failed delivery,
    // not a skipped one.
    for name in &names {
        if !notifiers.contains_key(name) {
            deliveries.push(Delivery {
                notifier: name.clone(),
                delivered: false,
                attempts: vec![nightwatch_notify::Attempt {
                    number: 1,
                    elapsed_ms: 0,
                    outcome: nightwatch_notify::AttemptOutcome::Failed {
                        reason: format!("{origin} declares no notifier {name:?}"),
                        retryable: false,
                    },
                }],
            });
        }
    }
    let mut all_delivered = true;
    for delivery in &deliveries {
        all_delivered &= delivery.delivered;
        let summary = summary(delivery);
        println!("{}: {summary}", record.id);
        let mut entry = Entry::new(
            event::NOTIFICATION,
            clock.now_ms(),
            RecordActor {
                kind: "nightwatch".into(),
                id: "escalation".into(),
            },
            "notify",
        );
        entry.session_id = record.session_id.clone();
        entry.context = record.context.clone();
        entry.inputs = json!({ "record": record.id, "notifier": delivery.notifier });
        entry.outputs = Some(Outputs {
            exit_code: Some(i64::from(!delivery.delivered)),
            stdout: summary.clone(),
            stderr: String::new(),
        });
        entry.reasons = vec![summary];
        entry.safeguards = Some(json!({ "delivery": delivery }));
        ledger
            .append(entry)
            .context("the delivery happened but could not be recorded")?;
    }
    Ok(if all_delivered { 0 } else { 1 })
}

/// Who, what, why, where, when, and the commands to approve or inspect.
fn escalation_of(record: &Record) -> Escalation {
    let verdict = record.verdict.clone().unwrap_or_default();
    let session = record
        .session_id
        .as_deref()
        .map(|s| format!(" (session {s})"))
        .unwrap_or_default();
    let place = [
        record.context.host.as_deref().map(|h| format!("host {h}")),
        record.cwd.as_deref().map(|c| format!("in {c}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    Escalation {
        verdict: verdict.clone(),
        record_id: record.id.clone(),
        who: format!("{} {}{session}", record.actor.kind, record.actor.id),
        what: format!(
            "{}: {}",
            record.tool,
            super::ledger::describe_inputs(record)
        ),
        why: record.reasons.join("; "),
        where_: if place.is_empty() {
            "unknown".to_owned()
        } else {
            place
        },
        when: record.timestamp_text(),
        approve: (verdict == "ask").then(|| format!("nightwatch approve {}", record.id)),
        inspect: format!("nightwatch show {}", record.id),
    }
}

fn summary(delivery: &Delivery) -> String {
    let tries = delivery.attempts.len();
    let last = delivery.attempts.last().map(|a| match &a.outcome {
        nightwatch_notify::AttemptOutcome::Delivered { status } => format!("status {status}"),
        nightwatch_notify::AttemptOutcome::Failed { reason, .. } => reason.clone(),
    });
    let last = last.unwrap_or_default();
    if delivery.delivered {
        format!(
            "delivered to {} after {tries} attempt(s) ({last})",
            delivery.notifier
        )
    } else {
        format!(
            "NOT delivered to {} after {tries} attempt(s): {last}",
            delivery.notifier
        )
    }
}
