//! The watchers' schedule, their runs on a small pool, and what becomes of what they saw.

use std::collections::BTreeMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nightwatch_gate::Event;
use nightwatch_intake::{Alert, Source, Status};
use nightwatch_watch::{Env, Observation, Seen, WatcherSpec};
use serde::Serialize;
use serde_json::json;

use super::clip;
use crate::Daemon;

/// Watchers run at once at most: probes mostly wait (a file's metadata, a command, a
/// request), so a few threads keep a thousand watchers on time on two cores.
const POOL: usize = 4;

/// A run not finished this long after its timeout makes its watcher late.
const LATE_GRACE: Duration = Duration::from_secs(10);

/// The subject a late watcher's own finding is about.
pub const LATE_SUBJECT: &str = "(on time)";

/// What the daemon knows of one subject of one watcher, now.
#[derive(Clone, Debug, Serialize)]
pub struct SubjectState {
    pub watcher: String,
    pub kind: String,
    pub subject: String,
    pub seen: Seen,
    pub summary: String,
    /// Since when it has been seen so.
    pub since_ms: i64,
    /// When it was last written to the ledger, and the runs since.
    #[serde(skip)]
    recorded_ms: i64,
    #[serde(skip)]
    runs_unrecorded: u64,
}

/// The watchers' shared state: each subject's last word, and each watcher's run in flight.
#[derive(Default)]
pub struct Watching {
    subjects: Mutex<BTreeMap<(String, String), SubjectState>>,
    /// Per watcher (by index in the spec): when its current slot came due and whether a run
    /// is in flight.
    schedule: Mutex<Vec<Slot>>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    due_ms: i64,
    running: bool,
}

impl Watching {
    /// Every subject's last word, by watcher then subject.
    pub fn subjects(&self) -> Vec<SubjectState> {
        lock(&self.subjects).values().cloned().collect()
    }

    /// The watchers whose run is late now: names and how late, in milliseconds.
    pub fn late(&self, daemon: &Daemon, now_ms: i64) -> Vec<(String, i64)> {
        let spec = &daemon.config.watch.watchers;
        lock(&self.schedule)
            .iter()
            .zip(spec)
            .filter_map(|(slot, w)| {
                let overdue = now_ms - slot.due_ms - allowance_ms(w);
                (slot.due_ms > 0 && overdue > 0).then(|| (w.name.clone(), overdue))
            })
            .collect()
    }
}

fn allowance_ms(w: &WatcherSpec) -> i64 {
    i64::try_from((w.timeout + LATE_GRACE).as_millis()).unwrap_or(i64::MAX)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A watcher's run, handed to the pool.
struct Job {
    index: usize,
    slot_ms: i64,
}

/// A run's observations, handed back.
struct Done {
    index: usize,
    slot_ms: i64,
    observations: Vec<Observation>,
}

/// Starts the scheduler and its pool.
pub fn start(daemon: &Arc<Daemon>) -> Vec<JoinHandle<()>> {
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    let mut threads = Vec::new();
    for n in 0..POOL.min(daemon.config.watch.watchers.len()).max(1) {
        let (d, rx, tx) = (daemon.clone(), jobs_rx.clone(), done_tx.clone());
        threads.push(
            std::thread::Builder::new()
                .name(format!("watcher-{n}"))
                .spawn(move || probe_loop(&d, &rx, &tx))
                .expect("a watcher thread starts"),
        );
    }
    drop(done_tx);
    let d = daemon.clone();
    threads.push(
        std::thread::Builder::new()
            .name("watch".into())
            .spawn(move || schedule_loop(&d, jobs_tx, done_rx))
            .expect("the watch thread starts"),
    );
    threads
}

fn probe_loop(daemon: &Daemon, jobs: &Mutex<mpsc::Receiver<Job>>, done: &mpsc::Sender<Done>) {
    loop {
        let job = match lock(jobs).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        let spec = &daemon.config.watch.watchers[job.index];
        let observations = probe(daemon, spec);
        if done
            .send(Done {
                index: job.index,
                slot_ms: job.slot_ms,
                observations,
            })
            .is_err()
        {
            return;
        }
    }
}

/// One run of one watcher; a probe that panics is an `unknown` saying so.
fn probe(daemon: &Daemon, spec: &WatcherSpec) -> Vec<Observation> {
    let databases = daemon.edges.databases();
    let containers = daemon.edges.containers();
    let reference_clock_ms = match (&spec.kind, &daemon.fleet) {
        (nightwatch_watch::WatcherKind::Hazards(_), Some(fleet)) => fleet_clock(daemon, fleet),
        _ => None,
    };
    let env = Env {
        reference_clock_ms,
        // What probes compare (files' times, records' stamps, the clock itself) is this host's.
        now_ms: daemon.host_now_ms(),
        ledger: daemon.reader(),
        databases: databases.as_ref(),
        containers: containers.as_ref(),
        timeout: spec.timeout,
    };
    let started = Instant::now();
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| spec.kind.run(&env)));
    let mut observations = ran.unwrap_or_else(|_| {
        vec![Observation::new(
            "(probe)",
            Seen::Unknown,
            format!("the {} probe panicked; it cannot tell", spec.kind.name()),
        )]
    });
    for o in &mut observations {
        if o.seen == Seen::Found {
            attribute(daemon, o);
        }
    }
    daemon.metrics.watched(&spec.name, started.elapsed());
    observations
}

/// The fleet database's clock as it reads at this host's now: its reading less half the
/// round trip's local time. `None` (logged) when it cannot be read: the hazard is then judged
/// without it.
fn fleet_clock(daemon: &Daemon, fleet: &crate::FleetStore) -> Option<i64> {
    // This host's own clock, not the daemon's (which in a fleet is the fleet's).
    let before = daemon.host_now_ms();
    let read = fleet.ledger.clock_ms();
    let after = daemon.host_now_ms();
    match read {
        Ok(Some(db)) => Some(db - (before + after) / 2 + daemon.host_now_ms()),
        Ok(None) => None,
        Err(e) => {
            tracing::warn!("cannot read the fleet database's clock: {e}");
            None
        }
    }
}

/// Names, in a finding about a file, the actor the ledger last saw write it.
fn attribute(daemon: &Daemon, o: &mut Observation) {
    let Some(path) = o.touched.first().cloned() else {
        return;
    };
    match nightwatch_watch::touched::last_touched(daemon.reader(), &path, None) {
        Ok(Some(toucher)) => {
            o.summary = format!(
                "{}; last touched by {} ({}, {}: {})",
                o.summary,
                toucher.actor,
                toucher.record_id,
                nightwatch_time::rfc3339(toucher.at_ms),
                clip(&toucher.summary, 120)
            );
            let by = json!(toucher);
            match &mut o.details {
                serde_json::Value::Object(details) => {
                    details.insert("touched_by".into(), by);
                }
                other => *other = json!({ "found": other.clone(), "touched_by": by }),
            }
        }
        Ok(None) => {
            o.summary = format!("{}; no record in the ledger wrote {path}", o.summary);
        }
        Err(e) => tracing::warn!("cannot look up who last touched {path}: {e}"),
    }
}

fn schedule_loop(daemon: &Daemon, jobs: mpsc::Sender<Job>, done: mpsc::Receiver<Done>) {
    let spec = &daemon.config.watch;
    let watching = &daemon.watching;
    {
        // Every watcher runs once at start, then on its slots.
        let now = daemon.now_ms();
        *lock(&watching.schedule) = spec
            .watchers
            .iter()
            .map(|_| Slot {
                due_ms: now,
                running: false,
            })
            .collect();
    }
    restore(daemon);
    let changes = super::changes::follow(daemon);
    // A lateness the ledger still shows (before a restart) is cleared once the watcher runs on
    // time, as one seen here would be.
    let mut told_late: BTreeMap<usize, bool> = {
        let subjects = lock(&watching.subjects);
        spec.watchers
            .iter()
            .enumerate()
            .map(|(index, w)| {
                let key = (w.name.clone(), LATE_SUBJECT.to_owned());
                (
                    index,
                    subjects.get(&key).is_some_and(|s| s.seen != Seen::Ok),
                )
            })
            .collect()
    };
    while !daemon.is_shutting_down() {
        let now = daemon.now_ms();
        for path_index in changes.changed() {
            let mut schedule = lock(&watching.schedule);
            if let Some(slot) = schedule.get_mut(path_index)
                && !slot.running
            {
                slot.due_ms = slot.due_ms.min(now);
            }
        }
        let mut late = Vec::new();
        {
            let mut schedule = lock(&watching.schedule);
            for (index, slot) in schedule.iter_mut().enumerate() {
                let w = &spec.watchers[index];
                if !slot.running && now >= slot.due_ms {
                    slot.running = true;
                    let _ = jobs.send(Job {
                        index,
                        slot_ms: slot.due_ms,
                    });
                }
                let is_late = slot.running && now - slot.due_ms > allowance_ms(w);
                if is_late != told_late.get(&index).copied().unwrap_or(false) {
                    told_late.insert(index, is_late);
                    late.push((w, late_observation(w, slot.due_ms, now, is_late)));
                }
            }
        }
        for (w, o) in late {
            settle(daemon, w, vec![o], now);
        }
        match done.recv_timeout(Duration::from_millis(200)) {
            Ok(first) => {
                let mut finished = vec![first];
                while let Ok(more) = done.try_recv() {
                    finished.push(more);
                }
                let now = daemon.now_ms();
                for run in finished {
                    let w = &spec.watchers[run.index];
                    {
                        let mut schedule = lock(&watching.schedule);
                        if let Some(slot) = schedule.get_mut(run.index) {
                            slot.running = false;
                            // The next slot after this run's and after now: a run that took
                            // longer than its period skips the slots it missed, and says so by
                            // having been late.
                            slot.due_ms = w
                                .schedule
                                .next_after(now.max(run.slot_ms))
                                .unwrap_or(i64::MAX);
                        }
                    }
                    settle(daemon, w, run.observations, now);
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn late_observation(w: &WatcherSpec, due_ms: i64, now: i64, late: bool) -> Observation {
    let o = if late {
        Observation::new(
            LATE_SUBJECT,
            Seen::Found,
            format!(
                "{} is late: its run due at {} has not finished after {}s (timeout {})",
                w.name,
                nightwatch_time::rfc3339(due_ms),
                (now - due_ms) / 1000,
                nightwatch_time::format_duration(w.timeout)
            ),
        )
    } else {
        Observation::new(
            LATE_SUBJECT,
            Seen::Ok,
            format!("{} runs on time again", w.name),
        )
    };
    o.with_details(json!({ "due_ms": due_ms }))
}

/// Records what changed (and rolls up what did not), then raises an alert per change.
fn settle(daemon: &Daemon, w: &WatcherSpec, observations: Vec<Observation>, now: i64) {
    let record_every =
        i64::try_from(daemon.config.watch.record_every.as_millis()).unwrap_or(i64::MAX);
    let kind = w.kind.name();
    let mut events = Vec::new();
    let mut alerts = Vec::new();
    let mut updates = Vec::new();
    {
        let subjects = lock(&daemon.watching.subjects);
        for o in observations {
            let key = (w.name.clone(), o.subject.clone());
            let before = subjects.get(&key);
            let changed = before.is_none_or(|b| b.seen != o.seen);
            let due = before.is_some_and(|b| now - b.recorded_ms >= record_every);
            if !changed && !due {
                updates.push((key, o, false));
                continue;
            }
            let runs = before.map_or(1, |b| if changed { 1 } else { b.runs_unrecorded + 1 });
            let notify = if changed && o.seen != Seen::Ok {
                w.notify.clone()
            } else {
                Vec::new()
            };
            let since_ms = match before {
                Some(b) if !changed => b.since_ms,
                _ => now,
            };
            events.push(Event::Watch {
                watcher: w.name.clone(),
                kind: kind.to_owned(),
                subject: o.subject.clone(),
                seen: o.seen.as_str().to_owned(),
                runs,
                summary: if changed {
                    o.summary.clone()
                } else {
                    format!("{} ({runs} runs since the last record)", o.summary)
                },
                details: with_since(&o.details, since_ms),
                notify,
            });
            if changed {
                let was_bad = before.is_some_and(|b| b.seen != Seen::Ok);
                if o.seen != Seen::Ok {
                    alerts.push(alert(daemon, w, &o, Status::Firing, now));
                } else if was_bad {
                    alerts.push(alert(daemon, w, &o, Status::Resolved, now));
                }
            }
            updates.push((key, o, true));
        }
    }
    if !events.is_empty()
        && let Err(e) = daemon.engine().record_all(events)
    {
        // Nothing is marked recorded, so the next run records it again.
        tracing::error!("{}: cannot record what the watcher saw: {e}", w.name);
        return;
    }
    {
        let mut subjects = lock(&daemon.watching.subjects);
        for (key, o, recorded) in updates {
            let entry = subjects.entry(key).or_insert_with(|| SubjectState {
                watcher: w.name.clone(),
                kind: kind.to_owned(),
                subject: o.subject.clone(),
                seen: o.seen,
                summary: String::new(),
                since_ms: now,
                recorded_ms: now,
                runs_unrecorded: 0,
            });
            if entry.seen != o.seen {
                entry.since_ms = now;
            }
            entry.seen = o.seen;
            entry.summary = o.summary;
            if recorded {
                entry.recorded_ms = now;
                entry.runs_unrecorded = 0;
            } else {
                entry.runs_unrecorded += 1;
            }
        }
    }
    if !alerts.is_empty()
        && let Err(e) = daemon.dispatch(alerts)
    {
        tracing::error!(
            "{}: cannot raise what the watcher found as an alert: {e}",
            w.name
        );
    }
}

/// A record's details: what the probe gave, and since when the subject has been seen so
/// (what a restarted daemon takes up again, see [`restore`]).
fn with_since(details: &serde_json::Value, since_ms: i64) -> serde_json::Value {
    match details {
        serde_json::Value::Object(fields) => {
            let mut fields = fields.clone();
            fields.insert("since_ms".into(), json!(since_ms));
            serde_json::Value::Object(fields)
        }
        serde_json::Value::Null => json!({ "since_ms": since_ms }),
        other => json!({ "found": other, "since_ms": since_ms }),
    }
}

/// Takes up what the ledger last said of each subject, so a restarted daemon neither records
/// nor raises again what it had already: the `watch` records of the last two `record_every`
/// spans (a subject is recorded at least once a span while a daemon runs). A subject whose
/// last word is older starts afresh, as a new one does.
fn restore(daemon: &Daemon) {
    let now = daemon.now_ms();
    let span = i64::try_from(daemon.config.watch.record_every.as_millis()).unwrap_or(i64::MAX);
    let filter = nightwatch_ledger::Filter {
        since_ms: Some(now.saturating_sub(span.saturating_mul(2))),
        event: Some(nightwatch_ledger::event::WATCH.to_owned()),
        actor: Some(nightwatch_gate::WATCHER.to_owned()),
        limit: Some(RESTORE_LIMIT),
        ..Default::default()
    };
    let records = match daemon.reader().query(&filter) {
        Ok(records) => records,
        Err(e) => {
            tracing::warn!("the watchers start afresh: their last records cannot be read ({e})");
            return;
        }
    };
    let kinds: BTreeMap<&str, &str> = daemon
        .config
        .watch
        .watchers
        .iter()
        .map(|w| (w.name.as_str(), w.kind.name()))
        .collect();
    let mut subjects = lock(&daemon.watching.subjects);
    // In `seq` order: a later record of a subject replaces an earlier one.
    for r in records {
        let text = |k: &str| r.inputs.get(k).and_then(serde_json::Value::as_str);
        let (Some(watcher), Some(kind), Some(subject)) =
            (text("watcher"), text("kind"), text("subject"))
        else {
            continue;
        };
        let seen = match text("seen") {
            Some("ok") => Seen::Ok,
            Some("found") => Seen::Found,
            Some("unknown") => Seen::Unknown,
            _ => continue,
        };
        // A watcher since removed or changed to another kind starts afresh.
        if kinds.get(watcher) != Some(&kind) {
            continue;
        }
        let since_ms = r
            .inputs
            .get("since_ms")
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(r.timestamp_ms);
        subjects.insert(
            (watcher.to_owned(), subject.to_owned()),
            SubjectState {
                watcher: watcher.to_owned(),
                kind: kind.to_owned(),
                subject: subject.to_owned(),
                seen,
                summary: r.reasons.first().cloned().unwrap_or_default(),
                since_ms,
                recorded_ms: r.timestamp_ms,
                runs_unrecorded: 0,
            },
        );
    }
}

/// The most `watch` records read back at start.
const RESTORE_LIMIT: usize = 200_000;

/// The alert a change raises: one identity per watcher and subject, so the queue's dedup,
/// cooldown and backoff apply as for any sender's.
fn alert(daemon: &Daemon, w: &WatcherSpec, o: &Observation, status: Status, now: i64) -> Alert {
    let mut labels = BTreeMap::from([
        ("watcher".to_owned(), w.name.clone()),
        ("kind".to_owned(), w.kind.name().to_owned()),
        ("seen".to_owned(), o.seen.as_str().to_owned()),
        ("subject".to_owned(), clip(&o.subject, 200)),
    ]);
    if let Some(host) = daemon.edges.host() {
        labels.insert("host".into(), host);
    }
    Alert {
        source: Source::Watch,
        identity: format!("{}/{}", w.name, o.subject),
        status,
        title: clip(&format!("{}: {}", w.name, o.summary), 200),
        message: o.summary.clone(),
        labels,
        annotations: BTreeMap::new(),
        tags: Vec::new(),
        monitor: None,
        starts_at_ms: Some(now),
        ends_at_ms: (status == Status::Resolved).then_some(now),
        group_key: None,
        receiver: None,
        link: None,
        raw: json!({ "watcher": w.name, "observation": o }),
    }
}
