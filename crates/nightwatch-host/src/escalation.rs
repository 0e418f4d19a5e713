//! Escalation: tell the notifiers a halted or asked decision names, and record each delivery,
//! with every attempt, delivered or not, through the engine. `nightwatch escalate` runs it in a
//! process of its own so that whoever decided never waits for delivery.

use crate::policies::Origin;
use anyhow::Context as _;
use nightwatch_gate::{Engine, Event, NoEscalator};
use nightwatch_ledger::schema::{self, Notified, Readable};
use nightwatch_ledger::{Record, Safeguards};
use nightwatch_notify::{Attempt, AttemptOutcome, Delivery, Escalation, deliver_all};
use nightwatch_policy::Policy;
use std::time::Duration;

/// One notifier's delivery, as it was recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    pub notifier: String,
    pub delivered: bool,
    /// What happened, in one line: `delivered to pager after 2 attempt(s) (status 200)`.
    pub summary: String,
}

/// Delivers `record`'s escalation to every notifier it names under `policy` (from `origin`) and
/// records each delivery. Empty when the record names none. A notifier the record names but the
/// policy no longer declares is a failed delivery, recorded, never a skipped one.
pub fn escalate(
    engine: &Engine<'_>,
    record: &Record,
    policy: &Policy,
    origin: &Origin,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    sleep: &(dyn Fn(Duration) + Sync),
) -> anyhow::Result<Vec<Sent>> {
    let names: Vec<String> = Safeguards::of(record.safeguards.as_ref())
        .notify
        .unwrap_or_default();
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let notifiers = &policy.safeguards().notifiers;
    let known: Vec<(&str, &nightwatch_notify::NotifierSpec)> = names
        .iter()
        .filter_map(|name| notifiers.get(name).map(|spec| (name.as_str(), spec)))
        .collect();
    let mut deliveries = deliver_all(known, &escalation_of(record), env, sleep);
    for name in names.iter().filter(|name| !notifiers.contains_key(*name)) {
        deliveries.push(Delivery {
            notifier: name.clone(),
            delivered: false,
            attempts: vec![Attempt {
                number: 1,
                elapsed_ms: 0,
                outcome: AttemptOutcome::Failed {
                    reason: format!("{origin} declares no notifier {name:?}"),
                    retryable: false,
                },
            }],
        });
    }
    // A notification is the end of an escalation: it never starts another.
    let engine = engine.with_escalator(&NoEscalator);
    let mut sent = Vec::new();
    for delivery in deliveries {
        let summary = summary(&delivery);
        engine
            .record(Event::Notification {
                about: Box::new(record.clone()),
                notified: Notified {
                    record: record.id.clone(),
                    notifier: delivery.notifier.clone(),
                },
                delivered: delivery.delivered,
                summary: summary.clone(),
                delivery: Readable::Read(delivery_record(&delivery)),
            })
            .context("the delivery happened but could not be recorded")?;
        sent.push(Sent {
            notifier: delivery.notifier,
            delivered: delivery.delivered,
            summary,
        });
    }
    Ok(sent)
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
        what: format!("{}: {}", record.tool, record.what()),
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
        AttemptOutcome::Delivered { status } => format!("status {status}"),
        AttemptOutcome::Failed { reason, .. } => reason.clone(),
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

/// A delivery as records keep it.
fn delivery_record(delivery: &Delivery) -> schema::Delivery {
    schema::Delivery {
        notifier: delivery.notifier.clone(),
        delivered: delivery.delivered,
        attempts: delivery
            .attempts
            .iter()
            .map(|attempt| schema::DeliveryAttempt {
                number: attempt.number,
                elapsed_ms: attempt.elapsed_ms,
                outcome: match &attempt.outcome {
                    AttemptOutcome::Delivered { status } => {
                        schema::AttemptOutcome::Delivered { status: *status }
                    }
                    AttemptOutcome::Failed { reason, retryable } => {
                        schema::AttemptOutcome::Failed {
                            reason: reason.clone(),
                            retryable: *retryable,
                        }
                    }
                },
            })
            .collect(),
    }
}
