//! Running the checks of one action: concurrently, each against its own deadline.

use crate::spec::{CheckKind, CheckSpec, MAX_TIMEOUT};
use crate::{Finding, Outcome, Probe, command, http, human_ms, lock_file, process, pure, systemd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

/// Runs every check and returns one finding per check, in the order given.
///
/// Checks that touch the world (process, lock_file, systemd_unit, http, command) each run on
/// their own detached thread, so a probe stuck in the kernel (a hung NFS mount, a process whose
/// memory map is locked) cannot hold the action past the check's timeout: at the deadline the
/// check is reported `Unknown` and its thread is left to finish on its own. The pure checks
/// (maintenance_window, circuit_breaker, rate) run on the calling thread meanwhile; a circuit
/// breaker or rate whose history answers after its timeout is still reported `Unknown`.
pub fn run_checks(checks: &[(&str, &CheckSpec)], probe: &Probe) -> Vec<Finding> {
    let start = Instant::now();
    let (tx, rx) = mpsc::channel::<(usize, Outcome)>();
    let mut slots: Vec<Option<(Outcome, u64)>> = vec![None; checks.len()];
    let mut pending = 0usize;

    for (i, (_, spec)) in checks.iter().enumerate() {
        let Some(job) = Job::of(&spec.kind) else {
            continue;
        };
        let deadline = start + timeout_of(spec);
        let now_ms = probe.now_ms;
        let tx = tx.clone();
        let spawned = thread::Builder::new()
            .name("nightwatch-check".to_owned())
            .spawn(move || {
                let outcome = catch_unwind(AssertUnwindSafe(|| job.run(now_ms, deadline)))
                    .unwrap_or_else(|_| Outcome::unknown("the probe failed unexpectedly"));
                // The receiver is gone when the deadline already passed: nothing to do.
                let _ = tx.send((i, outcome));
            });
        match spawned {
            Ok(_) => pending += 1,
            Err(e) => {
                slots[i] = Some((
                    Outcome::unknown(format!("could not start the probe: {e}")),
                    elapsed_ms(start),
                ));
            }
        }
    }
    drop(tx);

    for (i, (_, spec)) in checks.iter().enumerate() {
        if Job::is_io(&spec.kind) {
            continue;
        }
        let outcome = pure::run(&spec.kind, probe);
        let took = start.elapsed();
        let outcome = if took > timeout_of(spec) {
            Outcome::unknown(format!(
                "took {}, longer than its {} timeout",
                human_ms(millis(took)),
                human_ms(millis(timeout_of(spec)))
            ))
        } else {
            outcome
        };
        slots[i] = Some((outcome, millis(took)));
    }

    while pending > 0 {
        let now = Instant::now();
        let mut next_deadline: Option<Instant> = None;
        for (i, (_, spec)) in checks.iter().enumerate() {
            if slots[i].is_some() {
                continue;
            }
            let deadline = start + timeout_of(spec);
            if deadline <= now {
                slots[i] = Some((
                    Outcome::unknown(format!(
                        "no answer within its {} timeout",
                        human_ms(millis(timeout_of(spec)))
                    )),
                    elapsed_ms(start),
                ));
                pending -= 1;
            } else {
                next_deadline = Some(next_deadline.map_or(deadline, |d| d.min(deadline)));
            }
        }
        let Some(next_deadline) = next_deadline else {
            break;
        };
        match rx.recv_timeout(next_deadline.saturating_duration_since(now)) {
            Ok((i, outcome)) => {
                if let Some(slot @ None) = slots.get_mut(i) {
                    *slot = Some((outcome, elapsed_ms(start)));
                    pending -= 1;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }

    checks
        .iter()
        .zip(slots)
        .map(|((id, spec), slot)| {
            let (outcome, elapsed_ms) = slot.unwrap_or_else(|| {
                (
                    Outcome::unknown("the probe ended without an answer"),
                    elapsed_ms(start),
                )
            });
            finding(id, spec, outcome, elapsed_ms)
        })
        .collect()
}

fn finding(id: &str, spec: &CheckSpec, outcome: Outcome, elapsed_ms: u64) -> Finding {
    let (effect, message) = match &outcome {
        Outcome::Matched { detail } => (
            Some(spec.on_match),
            spec.message
                .clone()
                .unwrap_or_else(|| format!("pre-flight check {id} matched: {detail}")),
        ),
        Outcome::Unknown { reason } => (
            Some(spec.on_match),
            match &spec.message {
                Some(m) => format!(
                    "pre-flight check {id} could not tell ({reason}), so it holds the action as if it matched: {m}"
                ),
                None => format!(
                    "pre-flight check {id} could not tell ({reason}), so it holds the action as if it matched"
                ),
            },
        ),
        Outcome::Clear { .. } => (None, format!("pre-flight check {id} is clear")),
    };
    Finding {
        check: id.to_owned(),
        kind: spec.kind_name().to_owned(),
        outcome,
        effect,
        message,
        elapsed_ms,
    }
}

/// A check that touches the world, owning what its thread needs.
enum Job {
    Process(crate::ProcessCheck),
    LockFile(crate::LockFileCheck),
    SystemdUnit(crate::SystemdUnitCheck),
    Http(crate::HttpCheck),
    Command(crate::CommandCheck),
}

impl Job {
    fn of(kind: &CheckKind) -> Option<Job> {
        Some(match kind {
            CheckKind::Process(c) => Job::Process(c.clone()),
            CheckKind::LockFile(c) => Job::LockFile(c.clone()),
            CheckKind::SystemdUnit(c) => Job::SystemdUnit(c.clone()),
            CheckKind::Http(c) => Job::Http(c.clone()),
            CheckKind::Command(c) => Job::Command(c.clone()),
            CheckKind::MaintenanceWindow(_) | CheckKind::CircuitBreaker(_) | CheckKind::Rate(_) => {
                return None;
            }
        })
    }

    fn is_io(kind: &CheckKind) -> bool {
        !matches!(
            kind,
            CheckKind::MaintenanceWindow(_) | CheckKind::CircuitBreaker(_) | CheckKind::Rate(_)
        )
    }

    fn run(self, now_ms: i64, deadline: Instant) -> Outcome {
        match self {
            Job::Process(c) => process::probe(&c, now_ms, deadline),
            Job::LockFile(c) => lock_file::probe(&c, now_ms, deadline),
            Job::SystemdUnit(c) => systemd::probe(&c, now_ms, deadline, None),
            Job::Http(c) => http::probe(&c, deadline),
            Job::Command(c) => command::probe(&c, deadline),
        }
    }
}

/// The spec's timeout, held to [`MAX_TIMEOUT`] even for a spec built by hand rather than
/// parsed, so a deadline can never overflow.
fn timeout_of(spec: &CheckSpec) -> Duration {
    spec.timeout.min(MAX_TIMEOUT)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn elapsed_ms(start: Instant) -> u64 {
    millis(start.elapsed())
}
