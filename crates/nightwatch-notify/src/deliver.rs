//! Attempts, backoff, and the record of both.

use crate::escalation::Escalation;
use crate::failure::Failure;
use crate::spec::{Channel, NotifierSpec, Retry};
use crate::{command, http};
use serde::{Deserialize, Serialize};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

/// What happened when one notifier was asked to deliver one escalation: written to the ledger
/// as it is, so every attempt, failed or not, can be read back later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// The notifier's id in the policy.
    pub notifier: String,
    pub delivered: bool,
    /// In order; never empty.
    pub attempts: Vec<Attempt>,
}

/// One try.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// From 1.
    pub number: u32,
    /// Wall time of the try itself, not counting the wait before it.
    pub elapsed_ms: u64,
    pub outcome: AttemptOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// `status` is the HTTP status, or 0 for a command that exited 0.
    Delivered { status: u16 },
    /// `retryable` says whether another try was allowed to follow (it does, unless this was the
    /// last one).
    Failed { reason: String, retryable: bool },
}

/// Delivers one escalation through one notifier, retrying with backoff, and reports every try.
///
/// `env` looks up the environment variables the policy names for secrets, and `sleep` waits
/// between tries; both are passed in so that tests neither set process variables nor wait.
/// Never panics and never gives up silently: a delivery that did not happen says why in its
/// last attempt.
pub fn deliver(
    id: &str,
    spec: &NotifierSpec,
    escalation: &Escalation,
    env: &dyn Fn(&str) -> Option<String>,
    sleep: &dyn Fn(Duration),
) -> Delivery {
    let attempts = spec.retry.attempts.max(1);
    let mut delivery = Delivery {
        notifier: id.to_owned(),
        delivered: false,
        attempts: Vec::new(),
    };
    for number in 1..=attempts {
        let started = Instant::now();
        let result = attempt(spec, escalation, env);
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let failure = match result {
            Ok(status) => {
                delivery.attempts.push(Attempt {
                    number,
                    elapsed_ms,
                    outcome: AttemptOutcome::Delivered { status },
                });
                delivery.delivered = true;
                return delivery;
            }
            Err(failure) => failure,
        };
        let retryable = failure.retryable();
        delivery.attempts.push(Attempt {
            number,
            elapsed_ms,
            outcome: AttemptOutcome::Failed {
                reason: failure.to_string(),
                retryable,
            },
        });
        if !retryable || number == attempts {
            break;
        }
        let wait = backoff(&spec.retry, number, jitter());
        // A server that said how long to wait is given that, up to the policy's cap.
        let wait = failure
            .retry_after()
            .map_or(wait, |asked| asked.clamp(wait, spec.retry.max.max(wait)));
        sleep(wait);
    }
    delivery
}

/// Delivers one escalation through several notifiers at once, one thread each, so a slow or
/// dead channel does not hold up the others; the result is in the order given.
pub fn deliver_all<'a>(
    notifiers: impl IntoIterator<Item = (&'a str, &'a NotifierSpec)>,
    escalation: &Escalation,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    sleep: &(dyn Fn(Duration) + Sync),
) -> Vec<Delivery> {
    let notifiers: Vec<(&str, &NotifierSpec)> = notifiers.into_iter().collect();
    std::thread::scope(|scope| {
        let running: Vec<_> = notifiers
            .iter()
            .map(|&(id, spec)| {
                (
                    id,
                    scope.spawn(move || deliver(id, spec, escalation, env, sleep)),
                )
            })
            .collect();
        running
            .into_iter()
            .map(|(id, handle)| {
                handle.join().unwrap_or_else(|_| Delivery {
                    notifier: id.to_owned(),
                    delivered: false,
                    attempts: vec![Attempt {
                        number: 1,
                        elapsed_ms: 0,
                        outcome: AttemptOutcome::Failed {
                            reason: Failure::Internal {
                                detail: "the delivery thread panicked".to_owned(),
                            }
                            .to_string(),
                            retryable: false,
                        },
                    }],
                })
            })
            .collect()
    })
}

fn attempt(
    spec: &NotifierSpec,
    escalation: &Escalation,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<u16, Failure> {
    match &spec.channel {
        Channel::Ntfy(channel) => http::ntfy(channel, escalation, env, spec.timeout),
        Channel::Slack(channel) => http::slack(channel, escalation, env, spec.timeout),
        Channel::Webhook(channel) => http::webhook(channel, escalation, env, spec.timeout),
        Channel::Command(channel) => command::run(channel, escalation, spec.timeout),
    }
}

/// The wait after failed attempt `number` (from 1): `initial` doubled each time, capped at
/// `max`, then shortened by up to a fifth (`jitter` in 0..1) so that several gates paging the
/// same server after one outage do not retry in step. A fifth keeps each wait longer than the
/// one before until the cap.
pub(crate) fn backoff(retry: &Retry, number: u32, jitter: f64) -> Duration {
    nightwatch_time::backoff(
        retry.initial,
        retry.max,
        number,
        0.2 * jitter.clamp(0.0, 1.0),
    )
}

/// A number in 0..1 from the standard library's per-process random hash keys: good enough to
/// spread retries, and no dependency for it.
fn jitter() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry(initial_ms: u64, max_ms: u64) -> Retry {
        Retry {
            attempts: 10,
            initial: Duration::from_millis(initial_ms),
            max: Duration::from_millis(max_ms),
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let retry = retry(1000, 30_000);
        let waits: Vec<u64> = (1..=7)
            .map(|n| backoff(&retry, n, 0.0).as_millis() as u64)
            .collect();
        assert_eq!(waits, [1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    }

    #[test]
    fn backoff_with_full_jitter_still_grows() {
        let retry = retry(1000, 30_000);
        for n in 1..5 {
            assert!(backoff(&retry, n, 0.0) < backoff(&retry, n + 1, 1.0), "{n}");
        }
    }

    #[test]
    fn backoff_survives_huge_attempt_numbers() {
        let retry = retry(3_600_000, 3_600_000);
        assert_eq!(backoff(&retry, u32::MAX, 0.0), Duration::from_secs(3600));
    }

    #[test]
    fn jitter_is_a_fraction() {
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j));
        }
    }
}
