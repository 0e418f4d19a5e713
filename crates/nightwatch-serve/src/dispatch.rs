//! The dispatcher: what happens to an alert between "it arrived" and the reply.
//!
//! 1. the alert is stored as it came ([`Inbox::receive`]): after this it cannot be lost;
//! 2. it is decided: a test is acknowledged, a resolution cancels what has not started, a
//!    firing alert goes to its route's task (new, deduplicated, suppressed by the cooldown,
//!    throttled by the route's hourly limit) or to no route at all;
//! 3. the disposition is stored with the arrival, and
//! 4. written to the ledger as a `dispatch` record, with the alert's id and the task.
//!
//! Any storage failure is an error: the sender is told 503 and sends again; the redelivery
//! finds the live task and is deduplicated, and an arrival whose record was never written is
//! recorded by [`Daemon::record_unrecorded`]. Nothing takes a silent path.

use nightwatch_gate::{Dispatch, Event};
use nightwatch_intake::{Alert, Status};
use nightwatch_ledger::{Record, RecordContext};
use nightwatch_store::{Offered, Resolved};
use serde_json::json;

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

impl Daemon {
    /// Stores, decides and records each alert of one request, in order. Stops at the first
    /// storage failure: what was done before it stays done, and a redelivery finds it.
    pub fn dispatch(&self, alerts: &[Alert]) -> Result<Vec<Dispatched>, ServeError> {
        let mut out = Vec::with_capacity(alerts.len());
        for alert in alerts {
            match self.dispatch_one(alert) {
                Ok(one) => out.push(one),
                Err(e) => {
                    self.note_write(Err(e.to_string()));
                    return Err(e);
                }
            }
        }
        self.note_write(Ok(()));
        Ok(out)
    }

    fn dispatch_one(&self, alert: &Alert) -> Result<Dispatched, ServeError> {
        let now = self.now_ms();
        let alert_json = serde_json::to_string(alert).map_err(|e| ServeError::Storage {
            what: "alert",
            why: e.to_string(),
        })?;
        let id = alert_id(alert);
        let host = alert_host(alert);
        let arrival = self.inbox.receive(&Arrival {
            received_ms: now,
            source: &source_name(&alert.source),
            alert_id: &id,
            status: status_name(alert.status),
            title: &alert.title,
            host: host.as_deref(),
            alert_json: &alert_json,
        })?;
        let (disposition, reason, route, task) = self.decide(alert, &alert_json, now)?;
        self.inbox
            .settle(arrival, disposition, &reason, route.as_deref(), task)?;
        self.metrics.disposition(disposition);
        if disposition == Disposition::Routed {
            self.wake_workers();
        }
        let stored = self.inbox.get(arrival)?.ok_or(ServeError::Storage {
            what: "alert store",
            why: format!("arrival {arrival} vanished after it was stored"),
        })?;
        let record = self.record_arrival(&stored)?;
        Ok(Dispatched {
            arrival,
            alert_id: id,
            disposition,
            reason,
            task,
            record: record.id,
        })
    }

    /// Decides what an alert becomes; writes only to the task queue.
    fn decide(
        &self,
        alert: &Alert,
        alert_json: &str,
        now: i64,
    ) -> Result<(Disposition, String, Option<String>, Option<i64>), ServeError> {
        let identity = task_identity(alert);
        Ok(match alert.status {
            Status::Test => (
                Disposition::Test,
                "a test notification: acknowledged, nothing runs".into(),
                None,
                None,
            ),
            Status::Resolved => {
                let (disposition, why, task) = match self.tasks.resolve(&identity, now)? {
                    Resolved::CancelledBeforeStart(task) => (
                        Disposition::Cancelled,
                        format!("the alert resolved; task {task} had not started and is cancelled"),
                        Some(task),
                    ),
                    Resolved::TooLate(task) => (
                        Disposition::Resolved,
                        format!("the alert resolved while task {task} runs; it is left to finish"),
                        Some(task),
                    ),
                    Resolved::NoTask => (
                        Disposition::Resolved,
                        "the alert resolved; no live task for it".into(),
                        None,
                    ),
                };
                // A route for resolutions (an incident note, say) gets its own task, keyed
                // apart from the firing's so it never attaches to the fix still running.
                match first_match(&self.config.routes, alert) {
                    Some(route) => {
                        let key = format!("{identity}#resolved");
                        match self.tasks.offer(&key, alert_json, &route.id, now)? {
                            Offered::Created(t) => (
                                Disposition::Routed,
                                format!("{why}; routed to {}: task {t} queued", route.id),
                                Some(route.id.clone()),
                                Some(t),
                            ),
                            Offered::Attached(t) => (
                                Disposition::Deduplicated,
                                format!(
                                    "{why}; deduplicated: task {t} for this resolution is still live"
                                ),
                                Some(route.id.clone()),
                                Some(t),
                            ),
                            Offered::Suppressed { why: cooldown } => (
                                Disposition::Suppressed,
                                format!("{why}; suppressed: {cooldown}"),
                                Some(route.id.clone()),
                                None,
                            ),
                        }
                    }
                    None => (disposition, why, None, task),
                }
            }
            Status::Firing => {
                let Some(route) = first_match(&self.config.routes, alert) else {
                    let why = if self.config.routes.is_empty() {
                        "no matching route: serve.yaml declares no routes, so nothing runs".into()
                    } else {
                        format!(
                            "no matching route among {} ({}); nothing runs",
                            self.config.routes.len(),
                            self.config
                                .routes
                                .iter()
                                .map(|r| r.id.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    };
                    return Ok((Disposition::NoRoute, why, None, None));
                };
                let route_id = Some(route.id.clone());
                if let Some(limit) = route.max_per_hour {
                    // Only a new task counts against the limit: a repeat that attaches to the
                    // live task, or one the cooldown suppresses, is said as such.
                    let cooldown = self.tasks.policy().cooldown_ms;
                    let known = self.tasks.tasks(&nightwatch_store::TaskFilter {
                        identity: Some(identity.clone()),
                        ..nightwatch_store::TaskFilter::default()
                    })?;
                    let would_create = !known.iter().any(|t| {
                        t.lifecycle.status.is_live()
                            || (matches!(
                                t.lifecycle.status,
                                nightwatch_tasks::Status::Done | nightwatch_tasks::Status::GaveUp
                            ) && t
                                .lifecycle
                                .finished_at
                                .is_some_and(|f| now < f.saturating_add(cooldown)))
                    });
                    let started = self.tasks.created_since(&route.id, now - 3_600_000)?;
                    if would_create && started >= limit {
                        return Ok((
                            Disposition::Throttled,
                            format!(
                                "throttled: route {} started {started} task(s) in the last hour, its limit is {limit}",
                                route.id
                            ),
                            route_id,
                            None,
                        ));
                    }
                }
                match self.tasks.offer(&identity, alert_json, &route.id, now)? {
                    Offered::Created(task) => (
                        Disposition::Routed,
                        format!("routed to {}: task {task} queued", route.id),
                        route_id,
                        Some(task),
                    ),
                    Offered::Attached(task) => (
                        Disposition::Deduplicated,
                        format!("deduplicated: task {task} for this alert is still live"),
                        route_id,
                        Some(task),
                    ),
                    Offered::Suppressed { why } => (
                        Disposition::Suppressed,
                        format!("suppressed: {why}"),
                        route_id,
                        None,
                    ),
                }
            }
        })
    }

    /// The `dispatch` records of arrivals written since `since_ms` (a second of slack for
    /// clocks), by arrival id. None: nothing to look for.
    fn dispatch_records_since(
        &self,
        since_ms: Option<i64>,
    ) -> Result<std::collections::HashMap<i64, String>, ServeError> {
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
            .filter_map(|r| Some((r.inputs.get("arrival")?.as_i64()?, r.id)))
            .collect())
    }

    /// Writes an arrival's `dispatch` record and notes it on the arrival.
    pub fn record_arrival(&self, arrival: &AlertEvent) -> Result<Record, ServeError> {
        let disposition = arrival.disposition.map(Disposition::as_str);
        let inputs = json!({
            "disposition": disposition,
            "arrival": arrival.id,
            "alert_id": arrival.alert_id,
            "source": arrival.source,
            "status": arrival.status,
            "title": arrival.title,
            "route": arrival.route,
            "task": arrival.task_id,
        });
        let context = RecordContext {
            // The same name `route::triggered_by` gives a live alert (a test holds them equal).
            triggered_by: Some(format!("{}_alert", arrival.source.replace('-', "_"))),
            alert_id: Some(arrival.alert_id.clone()),
            host: arrival.host.clone(),
            task: arrival.task_id.map(task_name),
        };
        let record = self.intake_engine().record(Event::Dispatch(Dispatch {
            route: arrival.route.clone(),
            session_id: None,
            inputs,
            context,
            why: arrival
                .reason
                .clone()
                .unwrap_or_else(|| "stored; not yet decided".into()),
            notify: Vec::new(),
            tool: "alert".into(),
        }))?;
        self.inbox.mark_recorded(arrival.id, &record.id)?;
        Ok(record)
    }

    /// Records the arrivals a crash or a storage failure left without a record (deciding
    /// first any that were never decided). Only arrivals older than `older_than_ms` are taken,
    /// so a request still in flight is not raced. Returns how many were recorded.
    ///
    /// Exactly one `dispatch` record per arrival, crash or not: an arrival whose record was
    /// written but not yet noted on it (a crash between the two) gets that record noted, not a
    /// second one; and an arrival that created its task before the crash is routed to it, not
    /// counted a duplicate of itself.
    pub fn record_unrecorded(&self, older_than_ms: i64) -> Result<usize, ServeError> {
        let now = self.now_ms();
        let pending: Vec<AlertEvent> = self
            .inbox
            .unrecorded(500)?
            .into_iter()
            .filter(|arrival| arrival.received_ms <= now - older_than_ms)
            .collect();
        let written = self.dispatch_records_since(pending.iter().map(|a| a.received_ms).min())?;
        let mut done = 0;
        for mut arrival in pending {
            if let Some(record) = written.get(&arrival.id) {
                self.inbox.mark_recorded(arrival.id, record)?;
                continue;
            }
            if arrival.disposition.is_none() {
                let alert: Alert = serde_json::from_value(arrival.alert.clone()).map_err(|e| {
                    ServeError::Storage {
                        what: "alert store",
                        why: format!("arrival {} is unreadable: {e}", arrival.id),
                    }
                })?;
                let json = serde_json::to_string(&alert).unwrap_or_default();
                let (mut disposition, mut reason, route, task) = self.decide(&alert, &json, now)?;
                // The live task this arrival finds may be the one it created before the crash:
                // made at the arrival's own time (one clock reading serves both).
                if disposition == Disposition::Deduplicated
                    && let Some(id) = task
                    && self
                        .tasks
                        .task(id)?
                        .is_some_and(|t| t.created_at == arrival.received_ms)
                {
                    disposition = Disposition::Routed;
                    reason = format!(
                        "routed to {}: task {id} queued",
                        route.as_deref().unwrap_or("?")
                    );
                }
                let reason = format!("{reason} (decided after a restart or a storage failure)");
                self.inbox
                    .settle(arrival.id, disposition, &reason, route.as_deref(), task)?;
                self.metrics.disposition(disposition);
                arrival.disposition = Some(disposition);
                arrival.reason = Some(reason);
                arrival.route = route;
                arrival.task_id = task;
            }
            self.record_arrival(&arrival)?;
            done += 1;
        }
        Ok(done)
    }
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
