//! The heartbeat: a push to an uptime monitor (Uptime Kuma's push monitor, or any URL) sent
//! only while nightwatch is healthy, so the monitor's alarm is its silence.
//!
//! Healthy means: every worker is running, no task has waited long to be claimed, no watcher
//! is late, and the ledger takes this beat's record (the proof it is writable). Unhealthy, no
//! push is sent, and why is recorded when it starts and when it ends (when the ledger itself
//! is what failed, that is logged, since it cannot be recorded).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nightwatch_gate::Event;
use nightwatch_watch::HeartbeatSpec;
use serde_json::json;

use crate::Daemon;

/// A task claimable this long and still unclaimed means the queue is not moving.
const QUEUE_STUCK: Duration = Duration::from_secs(10 * 60);

/// The heartbeat's name in records and alerts.
const HEARTBEAT: &str = "heartbeat";

pub fn run(daemon: &Daemon, beat: &HeartbeatSpec) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(beat.timeout))
        .http_status_as_error(false)
        .build()
        .into();
    // The URL carries the push token: records name its host only.
    let shown = shown_url(&beat.url);
    let mut withheld: Option<String> = None;
    let mut failing = false;
    let mut next = Instant::now();
    while !daemon.is_shutting_down() {
        if Instant::now() < next {
            std::thread::sleep((next - Instant::now()).min(Duration::from_millis(200)));
            continue;
        }
        next += beat.every;
        if next < Instant::now() {
            next = Instant::now() + beat.every;
        }
        // The intake's engine: its appends give up after a few seconds, so a wedged ledger
        // withholds this beat rather than the next minute's.
        let verdict = health(daemon, beat).and_then(|()| {
            daemon
                .intake_engine()
                .record(Event::Watch {
                    watcher: HEARTBEAT.into(),
                    kind: HEARTBEAT.into(),
                    subject: shown.clone(),
                    seen: "ok".into(),
                    runs: 1,
                    summary: format!("nightwatch is healthy; heartbeat sent to {shown}"),
                    details: json!({}),
                    notify: Vec::new(),
                })
                .map(|_| ())
                .map_err(|e| format!("the ledger cannot be written: {e}"))
        });
        match verdict {
            Ok(()) => {
                if let Some(why) = withheld.take() {
                    tracing::info!("heartbeat resumed (it was withheld: {why})");
                    note(
                        daemon,
                        &shown,
                        "ok",
                        format!("heartbeat resumed; it was withheld: {why}"),
                    );
                }
                match agent.get(&beat.url).call() {
                    Ok(answer) if answer.status().is_success() => {
                        daemon.metrics.heartbeat("sent");
                        if failing {
                            tracing::info!("the heartbeat monitor at {shown} takes pushes again");
                            failing = false;
                        }
                    }
                    other => {
                        daemon.metrics.heartbeat("failed");
                        if !failing {
                            let why = match other {
                                Ok(answer) => format!("it answered {}", answer.status()),
                                Err(e) => e.to_string(),
                            };
                            tracing::warn!(
                                "the heartbeat monitor at {shown} did not take a push: {why}"
                            );
                            failing = true;
                        }
                    }
                }
            }
            Err(why) => {
                daemon.metrics.heartbeat("withheld");
                if withheld.as_deref() != Some(why.as_str()) {
                    tracing::error!("heartbeat withheld: {why}");
                    note(
                        daemon,
                        &shown,
                        "found",
                        format!("heartbeat withheld: {why}"),
                    );
                    withheld = Some(why);
                }
            }
        }
    }
}

/// Records a change of the heartbeat's state; a ledger that cannot take it is logged.
fn note(daemon: &Daemon, shown: &str, seen: &str, summary: String) {
    let event = Event::Watch {
        watcher: HEARTBEAT.into(),
        kind: HEARTBEAT.into(),
        subject: shown.to_owned(),
        seen: seen.into(),
        runs: 1,
        summary: summary.clone(),
        details: json!({}),
        notify: Vec::new(),
    };
    if let Err(e) = daemon.intake_engine().record(event) {
        tracing::error!("cannot record the heartbeat's state ({summary}): {e}");
    }
}

/// Whether nightwatch is healthy, but for the ledger (which the beat's record proves).
fn health(daemon: &Daemon, beat: &HeartbeatSpec) -> Result<(), String> {
    let workers = daemon.config.queue.workers;
    let alive = daemon.workers_alive.load(Ordering::SeqCst);
    if alive < workers {
        return Err(format!("only {alive} of {workers} workers are running"));
    }
    let now = daemon.now_ms();
    match daemon.tasks.oldest_ready(now) {
        Ok(Some(since)) if now - since > QUEUE_STUCK.as_millis() as i64 => {
            return Err(format!(
                "the queue is not moving: a task has waited {}s to be claimed",
                (now - since) / 1000
            ));
        }
        Ok(_) => {}
        Err(e) => return Err(format!("the task queue cannot be read: {e}")),
    }
    let late: Vec<String> = daemon
        .watching
        .late(daemon, now)
        .into_iter()
        .filter(|(_, by)| *by > beat.late_after.as_millis() as i64)
        .map(|(name, by)| format!("{name} ({}s)", by / 1000))
        .collect();
    if !late.is_empty() {
        return Err(format!("watchers are late: {}", late.join(", ")));
    }
    Ok(())
}

/// The URL as records show it: scheme and host, no path or query (a push token lives there).
fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => {
            format!("{}://{}", u.scheme(), u.host_str().unwrap_or("?"))
                + &u.port().map(|p| format!(":{p}")).unwrap_or_default()
        }
        Err(_) => "(the configured URL)".into(),
    }
}
