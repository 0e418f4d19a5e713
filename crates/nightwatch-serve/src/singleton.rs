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
//! The job is fenced by its lease: it is handed a [`LeaseFence`] for its engine, and once the
//! lease is lost (a renewal found it taken over, or it ran out unrenewed, with the store
//! unreachable for a whole TTL) every action the job still proposes is denied, with the
//! reason, so a job that runs on cannot act where another host may have started it. The
//! `singleton-end` record says the lease was lost.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use nightwatch_gate::{Event, Fence};
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

/// How long before its lease runs out a job stops acting: another host, whose clock may run a
/// little ahead, can take the lease over once it has.
pub const FENCE_MARGIN: Duration = Duration::from_secs(2);

/// The fence of a job running under a lease (see [`Fence`]): it holds until the lease, as last
/// renewed, is within [`FENCE_MARGIN`] of running out, or a renewal found it lost.
pub struct LeaseFence {
    lease: Lease,
    until_ms: AtomicI64,
    lost: Mutex<Option<String>>,
}

impl LeaseFence {
    fn new(lease: Lease) -> LeaseFence {
        LeaseFence {
            until_ms: AtomicI64::new(lease.until_ms),
            lease,
            lost: Mutex::new(None),
        }
    }

    /// The lease as first taken: its name and fencing token.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    fn renewed(&self, lease: &Lease) {
        self.until_ms.store(lease.until_ms, Ordering::SeqCst);
    }

    fn lose(&self, why: &str) {
        *self.lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.to_owned());
    }
}

impl Fence for LeaseFence {
    fn holds(&self, now_ms: i64) -> Result<(), String> {
        let (name, token) = (&self.lease.name, self.lease.token);
        if let Some(why) = &*self.lost.lock().unwrap_or_else(|p| p.into_inner()) {
            return Err(format!(
                "the lease on {name} (token {token}) was lost: {why}"
            ));
        }
        let until = self.until_ms.load(Ordering::SeqCst);
        if now_ms >= until.saturating_sub(ms(FENCE_MARGIN)) {
            return Err(format!(
                "the lease on {name} (token {token}) runs out at {} and was not renewed in time: another host may take the job over",
                instant(until)
            ));
        }
        Ok(())
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
/// records that it stood down and why. `f` is given the fence of the lease it runs under, for
/// the engine it acts through (its token fences whatever it writes elsewhere).
pub fn run_once<T>(
    daemon: &Daemon,
    job: &str,
    term: Term,
    f: impl FnOnce(&LeaseFence) -> T,
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

    let fence = LeaseFence::new(lease.clone());
    let (value, held) = std::thread::scope(|scope| {
        let (stop, stopped) = mpsc::channel::<()>();
        let renewing = lease.clone();
        let fenced = &fence;
        let beat =
            scope.spawn(move || renew_while_running(daemon, renewing, term.ttl, fenced, &stopped));
        let value = f(&fence);
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
    fence: &LeaseFence,
    stop: &mpsc::Receiver<()>,
) -> Result<Lease, String> {
    loop {
        match stop.recv_timeout(ttl / 3) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return Ok(lease),
        }
        match daemon.leases.renew(&lease, ms(ttl), daemon.now_ms()) {
            Ok(Some(renewed)) => {
                fence.renewed(&renewed);
                lease = renewed;
            }
            Ok(None) => {
                let why = format!(
                    "token {} expired or was taken over before it was renewed",
                    lease.token
                );
                fence.lose(&why);
                return Err(why);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(until_ms: i64) -> Lease {
        Lease {
            name: "janitor-sweep".into(),
            holder: "db-1".into(),
            token: 7,
            until_ms,
        }
    }

    #[test]
    fn the_fence_holds_until_the_margin_before_the_lease_runs_out_and_moves_with_renewals() {
        let margin = ms(FENCE_MARGIN);
        let fence = LeaseFence::new(lease(100_000));
        assert_eq!(fence.holds(100_000 - margin - 1), Ok(()));
        let why = fence.holds(100_000 - margin).unwrap_err();
        assert!(why.contains("janitor-sweep (token 7)"), "{why}");
        assert!(why.contains("not renewed in time"), "{why}");
        fence.renewed(&lease(200_000));
        assert_eq!(fence.holds(150_000), Ok(()));
    }

    #[test]
    fn a_lease_found_lost_fences_the_job_at_once_with_the_reason() {
        let fence = LeaseFence::new(lease(100_000));
        fence.lose("token 7 expired or was taken over before it was renewed");
        let why = fence.holds(0).unwrap_err();
        assert!(
            why.contains("was lost: token 7 expired or was taken over"),
            "{why}"
        );
        fence.renewed(&lease(200_000));
        assert!(fence.holds(0).is_err(), "a lost lease stays lost");
    }
}
