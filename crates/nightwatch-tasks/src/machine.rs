//! The pure state machine: what a task becomes when something happens to it.
//!
//! No database, no clock, no randomness: every function takes the task's current [`Lifecycle`],
//! the input, the [`Policy`] and `now_ms`, and returns the next lifecycle plus the event to
//! record, or a [`Refusal`]. The store only loads, calls these, and writes what they return,
//! so every rule about retries, leases and fencing lives here and is tested as a table.

use std::fmt;

/// Where a task is in its life. `Pending` and `Running` are *live*: at most one live task
/// exists per alert identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Waiting to be claimed once `ready_at` has passed (first run, resolve delay or retry).
    Pending,
    /// Held by a worker under a lease.
    Running,
    /// Finished successfully.
    Done,
    /// Resolved before any worker started it.
    Cancelled,
    /// Failed `max_attempts` times; needs a person.
    GaveUp,
}

impl Status {
    /// Every status, for filters and tests.
    pub const ALL: [Status; 5] = [
        Status::Pending,
        Status::Running,
        Status::Done,
        Status::Cancelled,
        Status::GaveUp,
    ];

    /// The name stored in the database and shown in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Running => "running",
            Status::Done => "done",
            Status::Cancelled => "cancelled",
            Status::GaveUp => "gave_up",
        }
    }

    /// The inverse of [`Status::as_str`].
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Pending or running: the identity is still being handled.
    pub fn is_live(self) -> bool {
        matches!(self, Status::Pending | Status::Running)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The knobs of the queue. Times are milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// After a task for an identity ran (done or gave up), new alerts for it are suppressed
    /// this long, so a fix that did not stick does not loop all night.
    pub cooldown_ms: i64,
    /// A new task becomes claimable only this long after it was offered, so a flapping alert
    /// that resolves in time never runs. Zero runs at once.
    pub resolve_delay_ms: i64,
    /// Attempts (claims) before the task gives up and asks for a person.
    pub max_attempts: u32,
    /// The first retry waits about this long; each later one doubles.
    pub backoff_base_ms: i64,
    /// No retry waits longer than this.
    pub backoff_cap_ms: i64,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            cooldown_ms: 30 * 60 * 1000,
            resolve_delay_ms: 0,
            max_attempts: 5,
            backoff_base_ms: 30 * 1000,
            backoff_cap_ms: 30 * 60 * 1000,
        }
    }
}

/// The part of a task the machine decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lifecycle {
    pub status: Status,
    /// Claims so far; the current claim's fencing token while running.
    pub attempt: u32,
    /// Not claimable before this (pending only).
    pub ready_at: i64,
    /// The lease end while running.
    pub lease_until: Option<i64>,
    /// The worker holding (or last holding) the task.
    pub worker: Option<String>,
    /// The last failure, kept for the escalation.
    pub last_error: Option<String>,
    /// When it reached a final status.
    pub finished_at: Option<i64>,
    /// Attempts that ended waiting for a person (an asked runbook): they do not count
    /// against `max_attempts`, so a task can wait hours for an approval without giving up.
    pub deferrals: u32,
}

impl Lifecycle {
    /// A task just offered at `now`.
    pub fn new(policy: &Policy, now: i64) -> Lifecycle {
        Lifecycle {
            status: Status::Pending,
            attempt: 0,
            ready_at: now.saturating_add(policy.resolve_delay_ms.max(0)),
            lease_until: None,
            worker: None,
            last_error: None,
            finished_at: None,
            deferrals: 0,
        }
    }

    /// Attempts that ran (or were lost), not counting deferrals.
    pub fn tries(&self) -> u32 {
        self.attempt.saturating_sub(self.deferrals)
    }
}

/// How a worker's attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Succeeded,
    Failed {
        error: String,
    },
    /// Failed in a way no retry can fix (policy refused the runbook): give up now and escalate.
    Abandoned {
        error: String,
    },
    /// Not run: waiting for a person (an approval). Back to pending, looked at again after
    /// `wait_ms`, and not counted against `max_attempts`.
    Deferred {
        why: String,
        wait_ms: i64,
    },
}

/// Something that happens to a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input<'a> {
    Claim { worker: &'a str, lease_ms: i64 },
    Heartbeat { attempt: u32, lease_ms: i64 },
    Complete { attempt: u32, outcome: &'a Outcome },
    Resolve,
}

/// The result of applying an input: the next lifecycle and what to write to `task_events`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub next: Lifecycle,
    /// The event row, `None` for a change not worth a row (a heartbeat).
    pub event: Option<Change>,
    /// True exactly on the step into `GaveUp`: the task needs a person, once.
    pub escalate: bool,
}

/// One `task_events` row, before it has a task id and time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub from: Status,
    pub to: Status,
    pub why: String,
}

/// Why an input does not apply. Nothing is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A heartbeat or completion from an attempt that no longer holds the task.
    Stale {
        attempt: u32,
        current: u32,
        status: Status,
    },
    /// The task cannot be claimed now (not ready, leased, or finished).
    NotClaimable { status: Status },
    /// Resolve of a task that already finished.
    Finished { status: Status },
}

/// Applies `input` to a task in `state`. `jitter` is any 64-bit value (the store derives it
/// from the task id and attempt) so the same inputs always give the same retry time.
pub fn apply(
    state: &Lifecycle,
    input: &Input<'_>,
    policy: &Policy,
    now: i64,
    jitter: u64,
) -> Result<Step, Refusal> {
    let from = state.status;
    let step = |next: Lifecycle, to: Status, why: String, escalate: bool| Step {
        next,
        event: Some(Change { from, to, why }),
        escalate,
    };
    match *input {
        Input::Claim { worker, lease_ms } => {
            let expired = from == Status::Running && state.lease_until.is_some_and(|l| l <= now);
            let ready = from == Status::Pending && state.ready_at <= now;
            if !ready && !expired {
                return Err(Refusal::NotClaimable { status: from });
            }
            if expired && state.tries() >= policy.max_attempts {
                // The last allowed attempt's worker vanished: that counts as its failure.
                let error = format!(
                    "lease of attempt {} ({}) expired without a result",
                    state.attempt,
                    state.worker.as_deref().unwrap_or("?")
                );
                return Ok(give_up(state, from, policy, now, error));
            }
            let why = if expired {
                format!(
                    "lease of attempt {} ({}) expired; reclaimed by {worker} as attempt {}",
                    state.attempt,
                    state.worker.as_deref().unwrap_or("?"),
                    state.attempt + 1
                )
            } else {
                format!("claimed by {worker} as attempt {}", state.attempt + 1)
            };
            let next = Lifecycle {
                status: Status::Running,
                attempt: state.attempt + 1,
                lease_until: Some(now.saturating_add(lease_ms)),
                worker: Some(worker.to_string()),
                ..state.clone()
            };
            Ok(step(next, Status::Running, why, false))
        }
        Input::Heartbeat { attempt, lease_ms } => {
            fence(state, attempt)?;
            let next = Lifecycle {
                lease_until: Some(now.saturating_add(lease_ms)),
                ..state.clone()
            };
            Ok(Step {
                next,
                event: None,
                escalate: false,
            })
        }
        Input::Complete { attempt, outcome } => {
            fence(state, attempt)?;
            match outcome {
                Outcome::Succeeded => {
                    let next = Lifecycle {
                        status: Status::Done,
                        lease_until: None,
                        finished_at: Some(now),
                        ..state.clone()
                    };
                    let why = format!("attempt {attempt} succeeded");
                    Ok(step(next, Status::Done, why, false))
                }
                Outcome::Failed { error } if state.tries() >= policy.max_attempts => {
                    Ok(give_up(state, from, policy, now, error.clone()))
                }
                Outcome::Abandoned { error } => Ok(give_up(
                    state,
                    from,
                    policy,
                    now,
                    format!("{error} (not retried)"),
                )),
                Outcome::Deferred { why, wait_ms } => {
                    let ready_at = now.saturating_add((*wait_ms).max(0));
                    let next = Lifecycle {
                        status: Status::Pending,
                        ready_at,
                        lease_until: None,
                        last_error: Some(why.clone()),
                        deferrals: state.deferrals + 1,
                        ..state.clone()
                    };
                    let why = format!(
                        "attempt {attempt} deferred: {why}; looked at again at {} (not counted as a try)",
                        nightwatch_time::rfc3339(ready_at)
                    );
                    Ok(step(next, Status::Pending, why, false))
                }
                Outcome::Failed { error } => {
                    let wait = backoff(policy, attempt, jitter);
                    let ready_at = now.saturating_add(wait);
                    let next = Lifecycle {
                        status: Status::Pending,
                        ready_at,
                        lease_until: None,
                        last_error: Some(error.clone()),
                        ..state.clone()
                    };
                    let why = format!(
                        "attempt {attempt} of {} failed: {error}; retry in {} at {}",
                        policy.max_attempts,
                        nightwatch_time::format_duration(std::time::Duration::from_millis(
                            u64::try_from(wait).unwrap_or(0)
                        )),
                        nightwatch_time::rfc3339(ready_at)
                    );
                    Ok(step(next, Status::Pending, why, false))
                }
            }
        }
        Input::Resolve => match from {
            Status::Pending => {
                let next = Lifecycle {
                    status: Status::Cancelled,
                    finished_at: Some(now),
                    ..state.clone()
                };
                let why = if state.attempt == 0 {
                    "alert resolved before any worker started it".to_string()
                } else {
                    format!(
                        "alert resolved while waiting to retry after attempt {}",
                        state.attempt
                    )
                };
                Ok(step(next, Status::Cancelled, why, false))
            }
            // Stopping a worker mid-action could leave things half done (the wedged-VM
            // story); the running attempt finishes and the note says the alert cleared.
            Status::Running => Ok(step(
                state.clone(),
                Status::Running,
                format!(
                    "alert resolved while attempt {} runs; letting it finish",
                    state.attempt
                ),
                false,
            )),
            status => Err(Refusal::Finished { status }),
        },
    }
}

fn fence(state: &Lifecycle, attempt: u32) -> Result<(), Refusal> {
    if state.status == Status::Running && state.attempt == attempt {
        Ok(())
    } else {
        Err(Refusal::Stale {
            attempt,
            current: state.attempt,
            status: state.status,
        })
    }
}

fn give_up(state: &Lifecycle, from: Status, policy: &Policy, now: i64, error: String) -> Step {
    let why = format!(
        "gave up after {} of {} attempts: {error}; needs a person",
        state.attempt, policy.max_attempts
    );
    let next = Lifecycle {
        status: Status::GaveUp,
        lease_until: None,
        last_error: Some(error),
        finished_at: Some(now),
        ..state.clone()
    };
    Step {
        next,
        event: Some(Change {
            from,
            to: Status::GaveUp,
            why,
        }),
        escalate: true,
    }
}

/// The wait before retrying after failed attempt `attempt` (1-based): `base * 2^(attempt-1)`
/// capped at `backoff_cap_ms`, then jittered down by up to half, so a fleet of tasks that
/// failed together does not retry together. Always within `[d - d/2, d]` for that capped `d`:
/// `jitter` 0 gives the shortest wait, `u64::MAX` the full one.
pub fn backoff(policy: &Policy, attempt: u32, jitter: u64) -> i64 {
    let ms = |ms: i64| std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    // The top 53 bits as a fraction in [0, 1), turned so that 0 takes half the wait away.
    let share = 0.5 * (1.0 - (jitter >> 11) as f64 / (1u64 << 53) as f64);
    let wait = nightwatch_time::backoff(
        ms(policy.backoff_base_ms),
        ms(policy.backoff_cap_ms),
        attempt,
        share,
    );
    i64::try_from(wait.as_millis()).unwrap_or(i64::MAX)
}

/// A well-mixed 64-bit value from a task id and attempt (splitmix64), for [`backoff`].
pub fn jitter_for(task_id: i64, attempt: u32) -> u64 {
    let mut z = (task_id as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(u64::from(attempt))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What to do with a new alert for an identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OfferDecision {
    Create,
    Attach(i64),
    Suppress { why: String },
}

/// The identity's most recent task that ran to an end (done or gave up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastRun {
    pub task_id: i64,
    pub status: Status,
    pub finished_at: i64,
}

/// Decides an offer from the identity's live task and its last finished run. A cancelled
/// task never ran, so it starts no cooldown: a flap that was cancelled must not hide a real
/// problem that fires again a minute later.
pub fn decide_offer(
    live: Option<i64>,
    last_run: Option<&LastRun>,
    policy: &Policy,
    now: i64,
) -> OfferDecision {
    if let Some(id) = live {
        return OfferDecision::Attach(id);
    }
    if let Some(run) = last_run {
        let until = run.finished_at.saturating_add(policy.cooldown_ms);
        if now < until {
            return OfferDecision::Suppress {
                why: format!(
                    "cooldown: task {} for this identity ended {} at {}; no new task until {} \
                     ({} from now)",
                    run.task_id,
                    run.status,
                    nightwatch_time::rfc3339(run.finished_at),
                    nightwatch_time::rfc3339(until),
                    // Whole seconds, rounded up: "29m60s" reads worse than "30m".
                    nightwatch_time::format_duration(std::time::Duration::from_secs(
                        u64::try_from(until - now).unwrap_or(0).div_ceil(1000)
                    )),
                ),
            };
        }
    }
    OfferDecision::Create
}

/// The window a route's hourly limit counts new tasks in.
pub const HOUR_MS: i64 = 3_600_000;

/// Why a route that started `started` tasks in the last hour may not start another under its
/// `limit`; `None` when it may. Only a new task counts: a repeat that attaches to the live task,
/// or one the cooldown suppresses, is never throttled.
pub fn throttle(route: &str, started: u32, limit: u32) -> Option<String> {
    (started >= limit).then(|| {
        format!("route {route} started {started} task(s) in the last hour, its limit is {limit}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy {
            cooldown_ms: 1000,
            resolve_delay_ms: 0,
            max_attempts: 3,
            backoff_base_ms: 100,
            backoff_cap_ms: 1000,
        }
    }

    fn at(status: Status, attempt: u32, ready_at: i64, lease_until: Option<i64>) -> Lifecycle {
        Lifecycle {
            status,
            attempt,
            ready_at,
            lease_until,
            worker: lease_until.map(|_| "w0".to_string()),
            last_error: None,
            finished_at: None,
            deferrals: 0,
        }
    }

    #[test]
    fn deferred_attempts_wait_without_using_up_tries() {
        let p = policy(); // max_attempts 3
        let mut state = at(Status::Pending, 0, 0, None);
        let mut now = 0;
        // Ten asks in a row: each goes back to pending, none gives up.
        for n in 1..=10u32 {
            let claimed = apply(
                &state,
                &Input::Claim {
                    worker: "w",
                    lease_ms: 50,
                },
                &p,
                now,
                0,
            )
            .unwrap()
            .next;
            assert_eq!(claimed.attempt, n);
            let deferred = Outcome::Deferred {
                why: "awaiting approval of r7".into(),
                wait_ms: 1_000,
            };
            let done = Input::Complete {
                attempt: n,
                outcome: &deferred,
            };
            let step = apply(&claimed, &done, &p, now, 0).unwrap();
            assert_eq!(step.next.status, Status::Pending);
            assert_eq!(step.next.ready_at, now + 1_000);
            assert!(!step.escalate);
            state = step.next;
            now += 1_000;
        }
        assert_eq!(state.deferrals, 10);
        assert_eq!(state.tries(), 0);
        // Approved: real failures still get the full three tries.
        let failed = Outcome::Failed {
            error: "boom".into(),
        };
        for n in 1..=3u32 {
            let claimed = apply(
                &state,
                &Input::Claim {
                    worker: "w",
                    lease_ms: 50,
                },
                &p,
                now,
                0,
            )
            .unwrap()
            .next;
            let done = Input::Complete {
                attempt: 10 + n,
                outcome: &failed,
            };
            let step = apply(&claimed, &done, &p, now, 0).unwrap();
            assert_eq!(step.escalate, n == 3, "try {n}");
            state = step.next;
            now += 10_000;
        }
        assert_eq!(state.status, Status::GaveUp);
    }

    #[test]
    fn an_abandoned_attempt_gives_up_at_once_and_escalates() {
        let outcome = Outcome::Abandoned {
            error: "policy says deny".into(),
        };
        let input = Input::Complete {
            attempt: 1,
            outcome: &outcome,
        };
        let step = apply(
            &at(Status::Running, 1, 0, Some(100)),
            &input,
            &policy(),
            50,
            0,
        )
        .unwrap();
        assert_eq!(
            step.next.status,
            Status::GaveUp,
            "attempts were left, none used"
        );
        assert!(step.escalate);
        assert!(step.next.last_error.unwrap().contains("policy says deny"));
        let stale = Input::Complete {
            attempt: 0,
            outcome: &outcome,
        };
        assert!(
            apply(
                &at(Status::Running, 1, 0, Some(100)),
                &stale,
                &policy(),
                50,
                0
            )
            .is_err()
        );
    }

    /// (name, state, input, now, expected next status or refusal, escalate)
    #[test]
    fn transitions_table() {
        let failed = Outcome::Failed {
            error: "boom".into(),
        };
        let ok = Outcome::Succeeded;
        let claim = Input::Claim {
            worker: "w1",
            lease_ms: 50,
        };
        type Row<'a> = (
            &'a str,
            Lifecycle,
            Input<'a>,
            i64,
            Result<Status, Refusal>,
            bool,
        );
        let rows: Vec<Row> = vec![
            (
                "ready pending is claimed",
                at(Status::Pending, 0, 10, None),
                claim.clone(),
                10,
                Ok(Status::Running),
                false,
            ),
            (
                "pending before ready_at is not",
                at(Status::Pending, 0, 10, None),
                claim.clone(),
                9,
                Err(Refusal::NotClaimable {
                    status: Status::Pending,
                }),
                false,
            ),
            (
                "live lease is not claimable",
                at(Status::Running, 1, 0, Some(100)),
                claim.clone(),
                99,
                Err(Refusal::NotClaimable {
                    status: Status::Running,
                }),
                false,
            ),
            (
                "expired lease is reclaimed",
                at(Status::Running, 1, 0, Some(100)),
                claim.clone(),
                100,
                Ok(Status::Running),
                false,
            ),
            (
                "expired lease on last attempt gives up",
                at(Status::Running, 3, 0, Some(100)),
                claim.clone(),
                100,
                Ok(Status::GaveUp),
                true,
            ),
            (
                "done is never claimed",
                at(Status::Done, 1, 0, None),
                claim.clone(),
                1000,
                Err(Refusal::NotClaimable {
                    status: Status::Done,
                }),
                false,
            ),
            (
                "current attempt completes",
                at(Status::Running, 2, 0, Some(100)),
                Input::Complete {
                    attempt: 2,
                    outcome: &ok,
                },
                50,
                Ok(Status::Done),
                false,
            ),
            (
                "stale attempt is fenced",
                at(Status::Running, 2, 0, Some(100)),
                Input::Complete {
                    attempt: 1,
                    outcome: &ok,
                },
                50,
                Err(Refusal::Stale {
                    attempt: 1,
                    current: 2,
                    status: Status::Running,
                }),
                false,
            ),
            (
                "completion after done is fenced",
                at(Status::Done, 2, 0, None),
                Input::Complete {
                    attempt: 2,
                    outcome: &ok,
                },
                50,
                Err(Refusal::Stale {
                    attempt: 2,
                    current: 2,
                    status: Status::Done,
                }),
                false,
            ),
            (
                "completion while pending retry is fenced",
                at(Status::Pending, 1, 500, None),
                Input::Complete {
                    attempt: 1,
                    outcome: &failed,
                },
                50,
                Err(Refusal::Stale {
                    attempt: 1,
                    current: 1,
                    status: Status::Pending,
                }),
                false,
            ),
            (
                "failure schedules a retry",
                at(Status::Running, 1, 0, Some(100)),
                Input::Complete {
                    attempt: 1,
                    outcome: &failed,
                },
                50,
                Ok(Status::Pending),
                false,
            ),
            (
                "failure on last attempt gives up",
                at(Status::Running, 3, 0, Some(100)),
                Input::Complete {
                    attempt: 3,
                    outcome: &failed,
                },
                50,
                Ok(Status::GaveUp),
                true,
            ),
            (
                "heartbeat of current attempt",
                at(Status::Running, 1, 0, Some(100)),
                Input::Heartbeat {
                    attempt: 1,
                    lease_ms: 50,
                },
                60,
                Ok(Status::Running),
                false,
            ),
            (
                "heartbeat of stale attempt",
                at(Status::Running, 2, 0, Some(100)),
                Input::Heartbeat {
                    attempt: 1,
                    lease_ms: 50,
                },
                60,
                Err(Refusal::Stale {
                    attempt: 1,
                    current: 2,
                    status: Status::Running,
                }),
                false,
            ),
            (
                "resolve pending cancels",
                at(Status::Pending, 0, 10, None),
                Input::Resolve,
                5,
                Ok(Status::Cancelled),
                false,
            ),
            (
                "resolve running lets it finish",
                at(Status::Running, 1, 0, Some(100)),
                Input::Resolve,
                5,
                Ok(Status::Running),
                false,
            ),
            (
                "resolve finished is refused",
                at(Status::GaveUp, 3, 0, None),
                Input::Resolve,
                5,
                Err(Refusal::Finished {
                    status: Status::GaveUp,
                }),
                false,
            ),
        ];
        for (name, state, input, now, want, want_escalate) in rows {
            let got = apply(&state, &input, &policy(), now, 7);
            match (&got, &want) {
                (Ok(step), Ok(status)) => {
                    assert_eq!(step.next.status, *status, "{name}");
                    assert_eq!(step.escalate, want_escalate, "{name}");
                    if let Some(change) = &step.event {
                        assert_eq!(change.from, state.status, "{name}");
                        assert_eq!(change.to, *status, "{name}");
                        assert!(!change.why.is_empty(), "{name}");
                    }
                }
                (Err(r), Err(w)) => assert_eq!(r, w, "{name}"),
                _ => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn claim_increments_attempt_and_sets_lease() {
        let step = apply(
            &at(Status::Pending, 1, 0, None),
            &Input::Claim {
                worker: "w9",
                lease_ms: 30,
            },
            &policy(),
            100,
            0,
        )
        .unwrap();
        assert_eq!(step.next.attempt, 2);
        assert_eq!(step.next.lease_until, Some(130));
        assert_eq!(step.next.worker.as_deref(), Some("w9"));
    }

    #[test]
    fn only_state_changes_write_events() {
        let beat = apply(
            &at(Status::Running, 1, 0, Some(100)),
            &Input::Heartbeat {
                attempt: 1,
                lease_ms: 100,
            },
            &policy(),
            50,
            0,
        )
        .unwrap();
        assert_eq!(beat.event, None);
        assert_eq!(beat.next.lease_until, Some(150));
    }

    #[test]
    fn backoff_doubles_then_caps_within_jitter_bounds() {
        let p = policy();
        // (attempt, uncapped-or-capped full delay)
        for (attempt, full) in [
            (1, 100),
            (2, 200),
            (3, 400),
            (4, 800),
            (5, 1000),
            (40, 1000),
        ] {
            for jitter in [0, 1, 49, 50, 51, u64::MAX, jitter_for(3, attempt)] {
                let d = backoff(&p, attempt, jitter);
                assert!(
                    d >= full - full / 2 && d <= full,
                    "attempt {attempt}: {d} outside [{}, {full}]",
                    full - full / 2
                );
            }
        }
        assert_eq!(backoff(&p, 1, 0), 50);
        // Was `backoff(&p, 1, 50) == 100` when the jitter was taken modulo the spread; it is
        // now read as a fraction of its range, so the full wait comes at the top of the range.
        assert_eq!(backoff(&p, 1, u64::MAX), 100);
        assert_eq!(backoff(&p, u32::MAX, u64::MAX), backoff(&p, 60, u64::MAX));
    }

    #[test]
    fn jitter_spreads_tasks_that_failed_together() {
        let p = policy();
        let waits: std::collections::BTreeSet<i64> = (1..50)
            .map(|id| backoff(&p, 3, jitter_for(id, 3)))
            .collect();
        assert!(waits.len() > 20, "only {} distinct waits", waits.len());
    }

    #[test]
    fn offer_decisions_table() {
        let p = policy();
        let done = LastRun {
            task_id: 4,
            status: Status::Done,
            finished_at: 100,
        };
        let rows = [
            ("nothing known creates", None, None, 0, "create"),
            ("live task attaches", Some(9), Some(&done), 200, "attach"),
            (
                "inside cooldown suppresses",
                None,
                Some(&done),
                1099,
                "suppress",
            ),
            ("cooldown over creates", None, Some(&done), 1100, "create"),
        ];
        for (name, live, last, now, want) in rows {
            let got = match decide_offer(live, last, &p, now) {
                OfferDecision::Create => "create",
                OfferDecision::Attach(_) => "attach",
                OfferDecision::Suppress { why } => {
                    assert!(
                        why.contains("task 4") && why.contains("until 1970-01-01T00:00:01.100Z"),
                        "{why}"
                    );
                    "suppress"
                }
            };
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn status_names_round_trip() {
        for s in Status::ALL {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
        assert_eq!(Status::parse("lost"), None);
    }

    #[test]
    fn a_route_is_throttled_only_once_it_reached_its_limit() {
        assert_eq!(throttle("disk", 2, 3), None);
        let why = throttle("disk", 3, 3).expect("at the limit");
        assert!(why.contains("route disk started 3 task(s)") && why.contains("limit is 3"));
        assert!(
            throttle("disk", 0, 0).is_some(),
            "a limit of 0 starts nothing"
        );
    }
}
