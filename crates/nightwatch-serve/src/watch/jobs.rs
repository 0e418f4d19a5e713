//! Scheduled jobs: each slot of a job's schedule becomes an alert to the job's own route, so
//! the queue, the gate and a worker run it like any runbook.
//!
//! A slot is fired at most once: its alert's identity names the slot, and a slot whose alert
//! is already in the inbox (the fleet's, in a fleet) is not fired again, so a daemon that
//! restarts mid-period does not run the job twice. A daemon that was down when a slot came
//! due fires it when it starts, if it is the latest slot and an earlier slot of the last week
//! was fired (a job missed overnight runs once in the morning, not once per missed slot); a
//! job new to serve.yaml waits for its first slot. A `singleton` job
//! fires on one host of all that share the daemon's leases; the others record that they stood
//! down.

use std::collections::BTreeMap;
use std::time::Duration;

use nightwatch_gate::Event;
use nightwatch_intake::{Alert, Source, Status};
use nightwatch_watch::JobSpec;
use serde_json::json;

use crate::Daemon;
use crate::route::alert_id;
use crate::singleton::{Outcome, Term, run_once};

/// How soon a slot that could not be fired (the inbox or the lease could not be asked) is
/// tried again.
const RETRY: Duration = Duration::from_secs(5);

pub fn run(daemon: &Daemon) {
    let jobs = &daemon.config.watch.jobs;
    let now = daemon.now_ms();
    let mut next: Vec<i64> = jobs.iter().map(|job| first_due(daemon, job, now)).collect();
    while !daemon.is_shutting_down() {
        let now = daemon.now_ms();
        for (job, due) in jobs.iter().zip(next.iter_mut()) {
            if now < *due {
                continue;
            }
            let slot = *due;
            *due = match fire(daemon, job, slot) {
                Ok(()) => job.schedule.next_after(now.max(slot)).unwrap_or(i64::MAX),
                Err(()) => now + RETRY.as_millis() as i64,
            };
        }
        let soonest = next.iter().copied().min().unwrap_or(i64::MAX);
        let wait = (soonest - daemon.now_ms()).clamp(10, 250);
        std::thread::sleep(Duration::from_millis(wait as u64));
    }
}

/// How far back the daemon looks, at start, for a slot of a job that was fired: a week, and
/// at most this many slots.
const LOOK_BACK_SLOTS: usize = 100;
const LOOK_BACK_MS: i64 = 7 * 86_400_000;

/// When a job is first due after the daemon starts: its latest slot, at once, when one of its
/// slots before that was fired in the last week (the job was scheduled, and the daemon was
/// down when its latest slot came: it runs once now, and [`fire`] skips it if it did run);
/// otherwise its next slot, so a job new to serve.yaml waits for its first one rather than
/// running on start.
fn first_due(daemon: &Daemon, job: &JobSpec, now: i64) -> i64 {
    let upcoming = job.schedule.next_after(now).unwrap_or(i64::MAX);
    let Some(latest) = now.checked_add(1).and_then(|t| job.schedule.last_before(t)) else {
        return upcoming;
    };
    let horizon = latest.saturating_sub(LOOK_BACK_MS);
    let mut at = latest;
    for _ in 0..LOOK_BACK_SLOTS {
        let Some(before) = job.schedule.last_before(at).filter(|b| *b >= horizon) else {
            break;
        };
        match was_fired(daemon, job, before) {
            Ok(true) => return latest,
            Ok(false) => at = before,
            Err(e) => {
                tracing::warn!(
                    "job {}: a slot missed while the daemon was down is not caught up: whether an earlier one ran cannot be told ({e})",
                    job.name
                );
                return upcoming;
            }
        }
    }
    tracing::info!(
        "job {}: waits for its first slot at {} (none of its slots of the last week was fired here)",
        job.name,
        nightwatch_time::rfc3339(upcoming)
    );
    upcoming
}

/// Whether `slot` of `job` was fired: its alert is in the inbox (the fleet's, for a singleton
/// in a fleet, which any host may have fired).
fn was_fired(
    daemon: &Daemon,
    job: &JobSpec,
    slot: i64,
) -> Result<bool, nightwatch_store::StoreError> {
    let id = alert_id(&slot_alert(daemon, job, slot));
    match &daemon.fleet {
        Some(fleet) if job.singleton => fleet.inbox.for_alert(&id).map(|a| !a.is_empty()),
        _ => daemon.inbox.for_alert(&id).map(|a| !a.is_empty()),
    }
}

/// Fires `slot` of `job` unless it was fired already; `Err` when that cannot be told (tried
/// again soon: a slot is never fired blind).
fn fire(daemon: &Daemon, job: &JobSpec, slot: i64) -> Result<(), ()> {
    if !job.singleton {
        return fire_here(daemon, job, slot);
    }
    let lease = format!("job:{}", job.name);
    let gap = Duration::from_millis(job.schedule.typical_gap_ms(slot).max(1000) as u64);
    match run_once(daemon, &lease, Term::scheduled(gap), |_fence| {
        fire_here(daemon, job, slot)
    }) {
        Outcome::Ran(fired) => fired,
        // Another host holds it: the slot is theirs, and the stand-down is recorded.
        Outcome::StoodDown { .. } => Ok(()),
    }
}

fn fire_here(daemon: &Daemon, job: &JobSpec, slot: i64) -> Result<(), ()> {
    let alert = slot_alert(daemon, job, slot);
    match was_fired(daemon, job, slot) {
        Ok(true) => {
            tracing::info!(
                "job {}: the slot at {} was fired already; not again",
                job.name,
                nightwatch_time::rfc3339(slot)
            );
            Ok(())
        }
        Ok(false) => match daemon.dispatch(vec![alert]) {
            Ok(dispatched) => {
                for d in dispatched {
                    tracing::info!(
                        "job {}: slot {} fired: {} ({})",
                        job.name,
                        nightwatch_time::rfc3339(slot),
                        d.disposition.as_str(),
                        d.reason
                    );
                }
                Ok(())
            }
            Err(e) => {
                tracing::error!("job {}: the slot could not be fired: {e}", job.name);
                Err(())
            }
        },
        Err(e) => {
            let why = format!(
                "the slot at {} was not fired: whether it ran already cannot be told ({e}); tried again in {}s",
                nightwatch_time::rfc3339(slot),
                RETRY.as_secs()
            );
            tracing::error!("job {}: {why}", job.name);
            let _ = daemon.engine().record(Event::Watch {
                watcher: job.name.clone(),
                kind: "job".into(),
                subject: nightwatch_time::rfc3339(slot),
                seen: "unknown".into(),
                runs: 1,
                summary: why,
                details: json!({ "slot_ms": slot }),
                notify: Vec::new(),
            });
            Err(())
        }
    }
}

/// The alert of one slot: its identity names the job and the slot (and the host, for a job
/// every host runs), so each slot is one task and a slot fired again is found.
fn slot_alert(daemon: &Daemon, job: &JobSpec, slot: i64) -> Alert {
    let at = nightwatch_time::rfc3339(slot);
    // In a fleet, the name the job's route was made for (see `Config::localize_jobs`).
    let host = match &daemon.fleet {
        Some(fleet) => Some(fleet.host.clone()),
        None => daemon.edges.host(),
    };
    let identity = match (&host, job.singleton) {
        (Some(host), false) => format!("{}@{at}@{host}", job.name),
        _ => format!("{}@{at}", job.name),
    };
    let mut labels = BTreeMap::from([
        ("job".to_owned(), job.name.clone()),
        ("slot".to_owned(), at.clone()),
    ]);
    if let Some(host) = host {
        labels.insert("host".into(), host);
    }
    Alert {
        source: Source::Schedule,
        identity,
        status: Status::Firing,
        title: format!("scheduled job {} ({at})", job.name),
        message: format!("{}'s slot at {at} ({})", job.name, job.schedule.describe()),
        labels,
        annotations: BTreeMap::new(),
        tags: Vec::new(),
        monitor: None,
        starts_at_ms: Some(slot),
        ends_at_ms: None,
        group_key: None,
        receiver: None,
        link: None,
        raw: json!({ "job": job.name, "slot_ms": slot, "schedule": job.schedule.describe() }),
    }
}
