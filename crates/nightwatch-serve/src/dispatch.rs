//! The dispatcher: what happens to alerts between "they arrived" and the reply.
//!
//! Concurrent deliveries are written together ([`crate::batch`]): one batch, whatever
//! requests it holds, is
//! 1. stored as it came ([`AlertInbox::receive`], one synced commit): after this no alert in it
//!    can be lost;
//! 2. decided, in one commit of the task queue ([`TaskQueue::apply`]): a test is acknowledged,
//!    a resolution cancels what has not started, a firing alert goes to its route's task (new,
//!    deduplicated, suppressed by the cooldown, throttled by the route's hourly limit) or to no
//!    route at all;
//! 3. written to the ledger as one `dispatch` record per arrival (one commit), then
//! 4. noted on each arrival with its record ([`AlertInbox::settle`]); then every request in the
//!    batch gets its reply.
//!
//! Any storage failure fails the batch: its senders are told 503 and send again; the
//! redelivery finds the live task and is deduplicated, and an arrival left unsettled is decided
//! and recorded by [`Daemon::record_unrecorded`] with the same steps. The queue knows which
//! arrival created or was counted on a task, so deciding an arrival again after a crash gets
//! its first answer. Nothing takes a silent path.

use nightwatch_gate::{Dispatch, Event};
use nightwatch_intake::{Alert, Status};
use nightwatch_ledger::{Record, RecordContext};
use nightwatch_store::{Answer, Offer, Offered, QueueOp, Resolved, Settlement};
use serde_json::json;
use std::sync::Arc;

use crate::config::Route;
use crate::inbox::{AlertEvent, Arrival, Disposition};
use crate::route::{alert_host, alert_id, first_match, source_name, task_identity};
use crate::{Daemon, ServeError};

/// What became of one alert.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Dispatched {
    pub arrival: i64,
    pub alert_id: String,
    pub disposition: Disposition,
    pub reason: String,
    pub task: Option<i64>,
    pub record: String,
}

/// A batch holds whole requests until it has this many alerts: large enough that a burst
/// shares a few commits, small enough that one batch's commits stay short.
pub const BATCH_ALERTS: usize = 2_000;

/// Requests with more alerts than this are prepared on the blocking pool.
const PREPARE_INLINE: usize = 64;

fn intake_answer(answer: crate::batch::Answer<Dispatched>) -> Result<Vec<Dispatched>, ServeError> {
    answer.map_err(|why| ServeError::Storage {
        what: "alert intake",
        why,
    })
}

fn prepare(alerts: Vec<Alert>) -> Result<Vec<Prepared>, ServeError> {
    alerts.into_iter().map(Prepared::new).collect()
}

/// What an alert is stored and recorded as, worked out by the request's own task before it
/// joins a batch, so the batch writer (one thread for all) only writes.
pub struct Prepared {
    alert: Alert,
    json: String,
    alert_id: String,
    source: String,
    host: Option<String>,
}

impl Prepared {
    fn new(alert: Alert) -> Result<Prepared, ServeError> {
        Ok(Prepared {
            json: serde_json::to_string(&alert).map_err(|e| ServeError::Storage {
                what: "alert",
                why: e.to_string(),
            })?,
            alert_id: alert_id(&alert),
            source: source_name(&alert.source),
            host: alert_host(&alert),
            alert,
        })
    }
}

/// One arrival on its way through a batch.
struct Incoming<'a> {
    /// Its id in the inbox, once stored.
    arrival: i64,
    received_ms: i64,
    prepared: &'a Prepared,
    /// Said after the reason of an arrival decided late.
    late: bool,
}

impl std::ops::Deref for Incoming<'_> {
    type Target = Prepared;
    fn deref(&self) -> &Prepared {
        self.prepared
    }
}

impl<'a> Incoming<'a> {
    fn new(prepared: &'a Prepared, received_ms: i64) -> Incoming<'a> {
        Incoming {
            arrival: 0,
            received_ms,
            prepared,
            late: false,
        }
    }

    fn stored(&self) -> Arrival<'_> {
        Arrival {
            received_ms: self.received_ms,
            source: &self.source,
            alert_id: &self.alert_id,
            status: status_name(self.alert.status),
            title: &self.alert.title,
            host: self.host.as_deref(),
            alert_json: &self.json,
        }
    }
}

/// What the dispatcher made of one arrival.
#[derive(Clone, Debug)]
struct Decision {
    disposition: Disposition,
    reason: String,
    route: Option<String>,
    task: Option<i64>,
}

/// How one arrival is decided: at once, or from the queue's answers to its ops.
enum Plan<'r> {
    Decided(Decision),
    /// A firing alert offered to its route.
    Offer(&'r Route),
    /// A resolution: the firing's task resolved, and the resolution offered to its own route,
    /// when one takes it.
    Resolve(Option<&'r Route>),
}

impl Daemon {
    /// Stores, decides and records one request's alerts, in one batch with the requests that
    /// arrived meanwhile; returns what became of each once all of it is durable. The waiting
    /// holds no thread: the batches are written by a loop on the blocking pool, started by the
    /// request that found none running.
    pub async fn dispatch_async(
        self: &Arc<Self>,
        alerts: Vec<Alert>,
    ) -> Result<Vec<Dispatched>, ServeError> {
        // Preparing is quick for a usual request; a large group is prepared off the async
        // workers, so it cannot stall other connections.
        let prepared = if alerts.len() > PREPARE_INLINE {
            tokio::task::spawn_blocking(move || prepare(alerts))
                .await
                .map_err(|e| ServeError::Runtime(format!("preparing the alerts failed: {e}")))??
        } else {
            prepare(alerts)?
        };
        let queued = self.intake.enqueue(prepared);
        if queued.start_writer {
            let daemon = self.clone();
            tokio::task::spawn_blocking(move || daemon.write_intake());
        }
        let answer = queued
            .answer
            .await
            .unwrap_or_else(|_| Err("the intake writer stopped before answering".into()));
        intake_answer(answer)
    }

    /// [`Daemon::dispatch_async`] for callers outside the async runtime: when no writer is
    /// running, this thread writes, until the queue is empty.
    pub fn dispatch(&self, alerts: Vec<Alert>) -> Result<Vec<Dispatched>, ServeError> {
        let answer = self.intake.submit(
            prepare(alerts)?,
            |requests| self.write_batch(requests),
            |outcome| self.note_write(outcome.map_err(str::to_owned)),
        );
        intake_answer(answer)
    }

    /// The intake's writer loop: every queued request, a batch at a time.
    fn write_intake(&self) {
        self.intake.write_queued(
            |requests| self.write_batch(requests),
            |outcome| self.note_write(outcome.map_err(str::to_owned)),
        );
    }

    fn write_batch(&self, requests: &[Vec<Prepared>]) -> Result<Vec<Vec<Dispatched>>, String> {
        self.dispatch_batch(requests).map_err(|e| e.to_string())
    }

    /// One batch of requests through the four steps, each one commit per store.
    fn dispatch_batch(
        &self,
        requests: &[Vec<Prepared>],
    ) -> Result<Vec<Vec<Dispatched>>, ServeError> {
        let now = self.now_ms();
        let mut incoming = requests
            .iter()
            .flatten()
            .map(|prepared| Incoming::new(prepared, now))
            .collect::<Vec<_>>();
        let stored: Vec<Arrival<'_>> = incoming.iter().map(Incoming::stored).collect();
        let ids = self.inbox.receive(&stored)?;
        drop(stored);
        for (one, id) in incoming.iter_mut().zip(ids) {
            one.arrival = id;
        }
        let decisions = self.decide(&incoming, now)?;
        let mut dispatched = self.record(&incoming, decisions)?.into_iter();
        Ok(requests
            .iter()
            .map(|request| dispatched.by_ref().take(request.len()).collect())
            .collect())
    }

    /// Decides every arrival, asking the task queue once for all of them.
    fn decide(&self, incoming: &[Incoming<'_>], now: i64) -> Result<Vec<Decision>, ServeError> {
        let routes = &self.config.routes;
        let plans: Vec<Plan<'_>> = incoming
            .iter()
            .map(|one| plan(routes, &one.alert))
            .collect();
        // The queue keys the ops borrow: the alert's identity and, for a resolution a route
        // takes, its own key, apart from the firing's so it never attaches to the fix still
        // running (an incident note, say).
        let keys: Vec<(String, Option<String>)> = incoming
            .iter()
            .zip(&plans)
            .map(|(one, plan)| {
                let identity = task_identity(&one.alert);
                let resolved =
                    matches!(plan, Plan::Resolve(Some(_))).then(|| format!("{identity}#resolved"));
                (identity, resolved)
            })
            .collect();
        let mut ops = Vec::new();
        for ((one, plan), (identity, resolved_key)) in incoming.iter().zip(&plans).zip(&keys) {
            match plan {
                Plan::Decided(_) => {}
                Plan::Offer(route) => ops.push(offer(one, identity, route, route.max_per_hour)),
                Plan::Resolve(route) => {
                    ops.push(QueueOp::Resolve { identity });
                    if let (Some(route), Some(key)) = (route, resolved_key) {
                        ops.push(offer(one, key, route, None));
                    }
                }
            }
        }
        let mut answers = self.tasks.apply(&ops, now)?.into_iter();
        let mut next = || {
            answers.next().ok_or(ServeError::Storage {
                what: "task queue",
                why: "answered fewer ops than it was given".into(),
            })
        };
        plans
            .into_iter()
            .zip(incoming)
            .map(|(plan, one)| {
                let mut decision = match plan {
                    Plan::Decided(decision) => decision,
                    Plan::Offer(route) => offered(route, "", next()?),
                    Plan::Resolve(route) => {
                        let (disposition, why, task) = resolved(next()?);
                        match route {
                            Some(route) => offered(route, &format!("{why}; "), next()?),
                            None => Decision {
                                disposition,
                                reason: why,
                                route: None,
                                task,
                            },
                        }
                    }
                };
                if one.late {
                    decision
                        .reason
                        .push_str(" (decided after a restart or a storage failure)");
                }
                Ok(decision)
            })
            .collect()
    }

    /// Writes each arrival's `dispatch` record (one commit), then notes it on the arrival.
    fn record(
        &self,
        incoming: &[Incoming<'_>],
        decisions: Vec<Decision>,
    ) -> Result<Vec<Dispatched>, ServeError> {
        let events = incoming
            .iter()
            .zip(&decisions)
            .map(|(one, decision)| dispatch_event(one, decision))
            .collect();
        let records = self.intake_engine().record_all(events)?;
        self.settle(incoming.iter().map(|one| one.arrival), &decisions, &records)?;
        let mut routed = false;
        let dispatched = incoming
            .iter()
            .zip(decisions)
            .zip(records)
            .map(|((one, decision), record)| {
                self.metrics.disposition(decision.disposition);
                routed |= decision.disposition == Disposition::Routed;
                Dispatched {
                    arrival: one.arrival,
                    alert_id: one.alert_id.clone(),
                    disposition: decision.disposition,
                    reason: decision.reason,
                    task: decision.task,
                    record: record.id,
                }
            })
            .collect();
        // A new task is claimable at once only without a resolve delay; a delayed one is found
        // by the workers' next look after its time (waking them now, every batch, on every host
        // of a fleet, only made them ask the queue for nothing).
        if routed && self.tasks.policy().resolve_delay_ms <= 0 {
            self.wake_workers();
        }
        Ok(dispatched)
    }

    /// Notes on each arrival what was decided and the record that says so (one commit).
    fn settle(
        &self,
        arrivals: impl Iterator<Item = i64>,
        decisions: &[Decision],
        records: &[Record],
    ) -> Result<(), ServeError> {
        let settlements: Vec<Settlement<'_>> = arrivals
            .zip(decisions)
            .zip(records)
            .map(|((arrival, decision), record)| Settlement {
                arrival,
                disposition: decision.disposition,
                reason: &decision.reason,
                route: decision.route.as_deref(),
                task_id: decision.task,
                record: &record.id,
            })
            .collect();
        Ok(self.inbox.settle(&settlements)?)
    }

    /// The `dispatch` records of arrivals written since `since_ms` (a second of slack for
    /// clocks), by arrival id. None: nothing to look for.
    fn dispatch_records_since(
        &self,
        since_ms: Option<i64>,
    ) -> Result<std::collections::HashMap<i64, Record>, ServeError> {
        let Some(since_ms) = since_ms else {
            return Ok(Default::default());
        };
        let records = self.reader().query(&nightwatch_ledger::Filter {
            event: Some(nightwatch_ledger::event::DISPATCH.to_owned()),
            since_ms: Some(since_ms - 1_000),
            ..nightwatch_ledger::Filter::default()
        })?;
        Ok(records
            .into_iter()
            .filter(|r| r.tool == "alert")
            .filter_map(|r| Some((r.inputs.get("arrival")?.as_i64()?, r)))
            .collect())
    }

    /// Records the arrivals a crash or a storage failure left unsettled, through the same steps
    /// as a batch. Only arrivals older than `older_than_ms` are taken, so a request still in
    /// flight is not raced. Returns how many were recorded.
    ///
    /// Exactly one `dispatch` record per arrival, crash or not: an arrival whose record was
    /// written but not yet noted on it (a crash between the two) is settled from that record,
    /// not given a second; and one decided before the crash gets the queue's first answer again
    /// (the queue knows the arrival), so it is never counted a duplicate of its own task.
    pub fn record_unrecorded(&self, older_than_ms: i64) -> Result<usize, ServeError> {
        let now = self.now_ms();
        let pending: Vec<AlertEvent> = self
            .inbox
            .unrecorded(500)?
            .into_iter()
            .filter(|arrival| arrival.received_ms <= now - older_than_ms)
            .collect();
        let mut written =
            self.dispatch_records_since(pending.iter().map(|a| a.received_ms).min())?;
        // Recorded before the crash, not yet settled: settled from their records.
        let (mut ids, mut decisions, mut records) = (Vec::new(), Vec::new(), Vec::new());
        let mut undecided = Vec::new();
        for arrival in pending {
            match written.remove(&arrival.id) {
                Some(record) => {
                    ids.push(arrival.id);
                    decisions.push(decision_in(&record));
                    records.push(record);
                }
                None => undecided.push(arrival),
            }
        }
        self.settle(ids.into_iter(), &decisions, &records)?;

        let prepared = undecided
            .iter()
            .map(|arrival| {
                let alert =
                    serde_json::from_value::<Alert>(arrival.alert.clone()).map_err(|e| {
                        ServeError::Storage {
                            what: "alert store",
                            why: format!("arrival {} is unreadable: {e}", arrival.id),
                        }
                    })?;
                Prepared::new(alert)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut incoming = Vec::with_capacity(prepared.len());
        let mut known = Vec::new();
        for (arrival, prepared) in undecided.iter().zip(&prepared) {
            let mut one = Incoming::new(prepared, arrival.received_ms);
            one.arrival = arrival.id;
            // Decided by a version that settled before it recorded: its decision stands.
            match (arrival.disposition, &arrival.reason) {
                (Some(disposition), Some(reason)) => known.push(Decision {
                    disposition,
                    reason: reason.clone(),
                    route: arrival.route.clone(),
                    task: arrival.task_id,
                }),
                _ => one.late = true,
            }
            incoming.push(one);
        }
        let (settled, late): (Vec<Incoming<'_>>, Vec<Incoming<'_>>) =
            incoming.into_iter().partition(|one| !one.late);
        let done = settled.len() + late.len();
        self.record(&settled, known)?;
        let decisions = self.decide(&late, now)?;
        self.record(&late, decisions)?;
        Ok(done + records.len())
    }

    /// After intake writes failed and nothing has been written since, writes a check through
    /// the same steps as an alert: stored, acknowledged as a test (nothing runs) and recorded.
    /// Its outcome is the intake's last write, so `/readyz` says ready again once writes work,
    /// even when no sender writes (a load balancer routes nothing to a daemon that is not
    /// ready), and the ledger says when they came back.
    pub(crate) fn check_writes(&self, failure: &str) -> Result<(), ServeError> {
        let now = self.now_ms();
        self.dispatch(vec![write_check(failure, now)]).map(drop)
    }
}

/// The alert a write check stores: one identity for all of them, so they read as one
/// alert's history.
fn write_check(failure: &str, now_ms: i64) -> Alert {
    Alert {
        source: nightwatch_intake::Source::Nightwatch,
        identity: "intake-write-check".into(),
        status: Status::Test,
        title: "intake write check".into(),
        message: format!("intake writes failed ({failure}); checking that they work again"),
        labels: Default::default(),
        annotations: Default::default(),
        tags: Vec::new(),
        monitor: None,
        starts_at_ms: Some(now_ms),
        ends_at_ms: None,
        group_key: None,
        receiver: None,
        link: None,
        raw: json!({ "failed": failure }),
    }
}

/// How an arrival is decided, before the queue is asked.
fn plan<'r>(routes: &'r [Route], alert: &Alert) -> Plan<'r> {
    let decided = |disposition, reason: String| {
        Plan::Decided(Decision {
            disposition,
            reason,
            route: None,
            task: None,
        })
    };
    match alert.status {
        Status::Test if alert.source == nightwatch_intake::Source::Nightwatch => decided(
            Disposition::Test,
            "the daemon's check that intake writes work again after they failed: \
             acknowledged, nothing runs"
                .into(),
        ),
        Status::Test => decided(
            Disposition::Test,
            "a test notification: acknowledged, nothing runs".into(),
        ),
        Status::Resolved => Plan::Resolve(first_match(routes, alert)),
        Status::Firing => match first_match(routes, alert) {
            Some(route) => Plan::Offer(route),
            None if routes.is_empty() => decided(
                Disposition::NoRoute,
                "no matching route: serve.yaml declares no routes, so nothing runs".into(),
            ),
            None => decided(
                Disposition::NoRoute,
                format!(
                    "no matching route among {} ({}); nothing runs",
                    routes.len(),
                    routes
                        .iter()
                        .map(|r| r.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        },
    }
}

/// The queue op that offers `one` as `identity` to `route`.
fn offer<'a>(
    one: &'a Incoming<'_>,
    identity: &'a str,
    route: &'a Route,
    max_per_hour: Option<u32>,
) -> QueueOp<'a> {
    QueueOp::Offer(Offer {
        identity,
        alert_json: &one.json,
        route: &route.id,
        max_per_hour,
        arrival: Some(one.arrival),
        again: one.late,
    })
}

/// The decision an offer's answer makes; `before` opens the reason (a resolution's own).
fn offered(route: &Route, before: &str, answer: Answer) -> Decision {
    let (disposition, reason, task) = match answer {
        Answer::Offered(Offered::Created(task)) => (
            Disposition::Routed,
            format!("routed to {}: task {task} queued", route.id),
            Some(task),
        ),
        Answer::Offered(Offered::Attached(task)) => (
            Disposition::Deduplicated,
            format!("deduplicated: task {task} for this alert is still live"),
            Some(task),
        ),
        Answer::Offered(Offered::Suppressed { why }) => {
            (Disposition::Suppressed, format!("suppressed: {why}"), None)
        }
        Answer::Offered(Offered::Throttled { why }) => {
            (Disposition::Throttled, format!("throttled: {why}"), None)
        }
        Answer::Resolved(other) => (
            Disposition::NoRoute,
            format!("the task queue answered an offer with {other:?}; nothing runs"),
            None,
        ),
    };
    Decision {
        disposition,
        reason: format!("{before}{reason}"),
        route: Some(route.id.clone()),
        task,
    }
}

/// What a resolve's answer makes of the resolution, and why.
fn resolved(answer: Answer) -> (Disposition, String, Option<i64>) {
    match answer {
        Answer::Resolved(Resolved::CancelledBeforeStart(task)) => (
            Disposition::Cancelled,
            format!("the alert resolved; task {task} had not started and is cancelled"),
            Some(task),
        ),
        Answer::Resolved(Resolved::TooLate(task)) => (
            Disposition::Resolved,
            format!("the alert resolved while task {task} runs; it is left to finish"),
            Some(task),
        ),
        Answer::Resolved(Resolved::NoTask) => (
            Disposition::Resolved,
            "the alert resolved; no live task for it".into(),
            None,
        ),
        Answer::Offered(other) => (
            Disposition::Resolved,
            format!("the alert resolved; the task queue answered {other:?}"),
            None,
        ),
    }
}

/// The decision a `dispatch` record holds (see [`dispatch_event`]).
fn decision_in(record: &Record) -> Decision {
    let text = |key: &str| record.inputs.get(key).and_then(|v| v.as_str());
    Decision {
        disposition: text("disposition")
            .and_then(Disposition::parse)
            .unwrap_or(Disposition::NoRoute),
        reason: record.reasons.first().cloned().unwrap_or_default(),
        route: text("route").map(str::to_owned),
        task: record.inputs.get("task").and_then(|v| v.as_i64()),
    }
}

/// The `dispatch` record of one arrival.
fn dispatch_event(one: &Incoming<'_>, decision: &Decision) -> Event {
    let inputs = json!({
        "disposition": decision.disposition.as_str(),
        "arrival": one.arrival,
        "alert_id": one.alert_id,
        "source": one.source,
        "status": status_name(one.alert.status),
        "title": one.alert.title,
        "route": decision.route,
        "task": decision.task,
    });
    let context = RecordContext {
        // The same name `route::triggered_by` gives a live alert (a test holds them equal).
        triggered_by: Some(format!("{}_alert", one.source.replace('-', "_"))),
        alert_id: Some(one.alert_id.clone()),
        host: one.host.clone(),
        task: decision.task.map(task_name),
    };
    Event::Dispatch(Dispatch {
        route: decision.route.clone(),
        session_id: None,
        inputs,
        context,
        why: decision.reason.clone(),
        notify: Vec::new(),
        tool: "alert".into(),
    })
}

/// How tasks are named in records: `t3`.
pub fn task_name(id: i64) -> String {
    format!("t{id}")
}

pub fn status_name(status: Status) -> &'static str {
    match status {
        Status::Firing => "firing",
        Status::Resolved => "resolved",
        Status::Test => "test",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::triggered_by;
    use nightwatch_intake::Source;

    #[test]
    fn stored_arrivals_get_the_same_triggered_by_as_live_alerts() {
        let alert = Alert {
            source: Source::UptimeKuma,
            identity: "1".into(),
            status: Status::Firing,
            title: String::new(),
            message: String::new(),
            labels: Default::default(),
            annotations: Default::default(),
            tags: vec![],
            monitor: None,
            starts_at_ms: None,
            ends_at_ms: None,
            group_key: None,
            receiver: None,
            link: None,
            raw: serde_json::Value::Null,
        };
        let stored = format!("{}_alert", source_name(&alert.source).replace('-', "_"));
        assert_eq!(stored, triggered_by(&alert));
    }
}
