//! Jobs that must run in exactly one place: of every daemon sharing the daemon's leases (the
//! fleet's database, or one data directory), one runs the job under a named lease and the
//! others record that they stood down, with who holds it and until when.
//!
//! The lease is renewed while the job runs (every third of its TTL), so a long job keeps it
//! and a host that dies mid-job loses it one TTL after its last renewal; the next host whose
//! schedule comes round takes it over with a greater fencing token. After the job the lease is
//! kept until the job's start plus its period, so of all the hosts the job runs once a period
//! (the holder's own next round takes it again; the others stand down). Each run is bracketed
//! by `singleton-start` and `singleton-end` records and each refusal is a `stood-down` record,
//! all through the engine, so the ledger shows where and when it ran and that no two runs
//! overlapped.
//!
//! A lease lost while the job runs (the store unreachable for a whole TTL, or this host's
//! clock far off) cannot stop the job half-way: the `singleton-end` record says so.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use nightwatch_gate::Event;
use nightwatch_store::{Acquired, Lease};

use crate::Daemon;

/// The lease the janitor's scheduled sweep runs under when `janitor.singleton` is set.
pub const JANITOR_SWEEP: &str = "janitor-sweep";

/// The longest a lease lasts without renewal while its job runs: how soon after a host dies
/// mid-job another may take over.
pub const MAX_TTL: Duration = Duration::from_secs(120);

/// The shortest: renewals come every third of it, and a store that is slow for a few seconds
/// must not cost the holder its lease.
pub const MIN_TTL: Duration = Duration::from_secs(10);

/// How a job holds its lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term {
    /// How long the lease lasts without renewal while the job runs.
    pub ttl: Duration,
    /// After the job, the lease is kept until the job's start plus this, so the job runs once
    /// a period of all the hosts; zero lets it go at once.
    pub period: Duration,
}

impl Term {
    /// For a job scheduled every `every`: a TTL of `every` within [`MIN_TTL`, `MAX_TTL`], the
    /// lease kept for the rest of the period.
    pub fn scheduled(every: Duration) -> Term {
        Term {
            ttl: every.clamp(MIN_TTL, MAX_TTL),
            period: every,
        }
    }
}

/// How a call of [`run_once`] went.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome<T> {
    /// It ran here, and gave this.
    Ran(T),
    /// It did not run here (recorded `stood-down`): `holder` holds the lease until
    /// `until_ms`, when known (not when the lease store could not be asked).
    StoodDown {
        holder: Option<String>,
        until_ms: Option<i64>,
    },
}

/// The name this daemon holds leases under: its host's name, else `serve`.
pub fn holder(daemon: &Daemon) -> String {
    daemon.edges.host().unwrap_or_else(|| "serve".into())
}

/// Runs `job` here if this daemon gets its lease, holding it as `term` says; otherwise
/// records that it stood down and why. `f` is given the lease it runs under (its token fences
/// whatever it writes elsewhere).
pub fn run_once<T>(
    daemon: &Daemon,
    job: &str,
    term: Term,
    f: impl FnOnce(&Lease) -> T,
) -> Outcome<T> {
    let me = holder(daemon);
    let engine = daemon.engine();
    let stand_down = |holder: Option<String>, until_ms: Option<i64>, why: String| {
        tracing::info!("{job}: stood down: {why}");
        let event = Event::StoodDown {
            job: job.to_owned(),
            holder: holder.clone(),
            until_ms,
            why: why.clone(),
        };
        if let Err(e) = engine.record(event) {
            tracing::error!("{job}: stood down ({why}) and could not record it: {e}");
        }
        Outcome::StoodDown { holder, until_ms }
    };
    let started_ms = daemon.now_ms();
    let lease = match daemon.leases.acquire(job, &me, ms(term.ttl), started_ms) {
        Ok(Acquired::Got(lease)) => lease,
        Ok(Acquired::HeldBy(other)) => {
            let why = format!(
                "{} holds the lease on {job} (token {}) until {}: it runs there, not on {me}",
                other.holder,
                other.token,
                instant(other.until_ms)
            );
            return stand_down(Some(other.holder), Some(other.until_ms), why);
        }
        Err(e) => {
            let why = format!(
                "the lease on {job} could not be taken ({e}); not run on {me}, so that it never runs in two places"
            );
            return stand_down(None, None, why);
        }
    };
    let start = Event::SingletonStarted {
        job: job.to_owned(),
        holder: me.clone(),
        token: lease.token,
        until_ms: lease.until_ms,
    };
    if let Err(e) = engine.record(start) {
        // A run the ledger cannot show is not started; the lease goes back at once.
        let _ = daemon.leases.release(&lease, daemon.now_ms());
        return stand_down(
            None,
            None,
            format!("{me} got the lease on {job} but could not record its start ({e})"),
        );
    }

    let (value, held) = std::thread::scope(|scope| {
        let (stop, stopped) = mpsc::channel::<()>();
        let renewing = lease.clone();
        let beat = scope.spawn(move || renew_while_running(daemon, renewing, term.ttl, &stopped));
        let value = f(&lease);
        drop(stop);
        let held = beat
            .join()
            .unwrap_or_else(|_| Err("its renewal panicked".to_owned()));
        (value, held)
    });

    let why = match held {
        Err(lost) => format!(
            "finished on {me}, but the lease was lost while it ran ({lost}): another host may have started it"
        ),
        Ok(current) => keep_for_the_period(daemon, &current, started_ms, term),
    };
    let end = Event::SingletonFinished {
        job: job.to_owned(),
        holder: me,
        token: lease.token,
        why,
    };
    if let Err(e) = engine.record(end) {
        tracing::error!("{job}: the end of its run could not be recorded: {e}");
    }
    Outcome::Ran(value)
}

/// Renews `lease` every third of `ttl` until told to stop (the sender dropped); the lease as
/// last renewed, or why it was lost.
fn renew_while_running(
    daemon: &Daemon,
    mut lease: Lease,
    ttl: Duration,
    stop: &mpsc::Receiver<()>,
) -> Result<Lease, String> {
    loop {
        match stop.recv_timeout(ttl / 3) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return Ok(lease),
        }
        match daemon.leases.renew(&lease, ms(ttl), daemon.now_ms()) {
            Ok(Some(renewed)) => lease = renewed,
            Ok(None) => {
                return Err(format!(
                    "token {} expired or was taken over before it was renewed",
                    lease.token
                ));
            }
            // Tried again at the next beat; the lease lasts a whole TTL.
            Err(e) => tracing::warn!("{}: the lease could not be renewed: {e}", lease.name),
        }
    }
}

/// Keeps the lease until the period that began at `started_ms` ends (or lets it go when it
/// already has), and says what became of it.
fn keep_for_the_period(daemon: &Daemon, lease: &Lease, started_ms: i64, term: Term) -> String {
    let now = daemon.now_ms();
    let until = started_ms.saturating_add(ms(term.period));
    if until > now {
        match daemon.leases.renew(lease, until - now, now) {
            Ok(Some(kept)) => format!(
                "finished on {}; the lease (token {}) is kept until {}, the end of its period",
                kept.holder,
                kept.token,
                instant(kept.until_ms)
            ),
            Ok(None) => format!(
                "finished on {}; the lease (token {}) had expired or been taken over by then",
                lease.holder, lease.token
            ),
            Err(e) => format!(
                "finished on {}; the lease (token {}) could not be kept for its period ({e}) and ends at {}",
                lease.holder,
                lease.token,
                instant(lease.until_ms)
            ),
        }
    } else {
        match daemon.leases.release(lease, now) {
            Ok(true) => format!(
                "finished on {}; the lease (token {}) is released",
                lease.holder, lease.token
            ),
            Ok(false) => format!(
                "finished on {}; the lease (token {}) had been taken over by then",
                lease.holder, lease.token
            ),
            Err(e) => format!(
                "finished on {}; the lease (token {}) could not be released ({e}) and ends at {}",
                lease.holder,
                lease.token,
                instant(lease.until_ms)
            ),
        }
    }
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A time as people read it in a reason (RFC 3339, UTC).
fn instant(ms: i64) -> String {
    nightwatch_time::rfc3339(ms)
}
