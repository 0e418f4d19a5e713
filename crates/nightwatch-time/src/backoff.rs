//! The one backoff: every retry loop (notifier deliveries, queued tasks, the janitor's failed
//! removals, a busy store) waits by it.

use std::time::Duration;

/// The wait before retry number `attempt` (from 1; 0 counts as 1): `base` doubled after each
/// failure, capped at `cap`, then shortened by `jitter` of itself.
///
/// `jitter` is the share of the wait to take away, in `[0, 1)`; values outside (and NaN) are
/// clamped into `[0, 1]`. The caller picks it, random or derived from an id, so that several
/// retriers that failed together do not retry in step; this function stays pure, and with
/// `jitter = 0` it is plain capped doubling. A caller that wants waits to keep growing until
/// the cap keeps its jitter below one half.
///
/// Total: never panics, never overflows, whatever `attempt`, `base` and `cap`.
pub fn backoff(base: Duration, cap: Duration, attempt: u32, jitter: f64) -> Duration {
    let doublings = attempt.saturating_sub(1);
    let full = match 1u128.checked_shl(doublings) {
        Some(factor) => {
            let nanos = base.as_nanos().saturating_mul(factor);
            if nanos >= cap.as_nanos() {
                cap
            } else {
                // Below `cap`, so it fits a Duration.
                let secs = (nanos / 1_000_000_000) as u64;
                Duration::new(secs, (nanos % 1_000_000_000) as u32)
            }
        }
        None => cap,
    }
    .min(cap);
    let jitter = if jitter > 0.0 { jitter.min(1.0) } else { 0.0 };
    // `full * jitter` is at most `full`, so neither the product nor the difference can fail.
    full.saturating_sub(full.mul_f64(jitter))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    fn waits(base_ms: u64, cap_ms: u64, jitter: f64) -> Vec<u128> {
        (1..=8)
            .map(|n| backoff(MS * base_ms as u32, MS * cap_ms as u32, n, jitter).as_millis())
            .collect()
    }

    #[test]
    fn doubles_up_to_the_cap() {
        assert_eq!(
            waits(1000, 30_000, 0.0),
            [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
    }

    #[test]
    fn jitter_takes_its_share_away() {
        assert_eq!(waits(1000, 30_000, 0.5)[..3], [500, 1000, 2000]);
        assert_eq!(backoff(MS * 100, MS * 1000, 1, 0.25), MS * 75);
    }

    #[test]
    fn attempt_zero_is_the_first() {
        assert_eq!(backoff(MS * 7, MS * 100, 0, 0.0), MS * 7);
    }

    #[test]
    fn hostile_arguments_stay_total() {
        let hour = Duration::from_secs(3600);
        assert_eq!(backoff(hour, hour, u32::MAX, 0.0), hour);
        assert_eq!(
            backoff(Duration::MAX, Duration::MAX, 200, 0.0),
            Duration::MAX
        );
        assert_eq!(backoff(hour, Duration::ZERO, 3, 0.0), Duration::ZERO);
        assert_eq!(backoff(hour, hour, 1, f64::NAN), hour);
        assert_eq!(backoff(hour, hour, 1, -3.0), hour);
        assert_eq!(backoff(hour, hour, 1, 7.0), Duration::ZERO);
        assert_eq!(backoff(hour, hour, 1, f64::INFINITY), Duration::ZERO);
    }

    proptest! {
        #[test]
        fn stays_within_cap_and_jitter(
            base in 0u64..u64::MAX / 4,
            cap in 0u64..u64::MAX / 4,
            attempt in any::<u32>(),
            jitter in 0.0f64..1.0,
        ) {
            let (base, cap) = (Duration::from_nanos(base), Duration::from_nanos(cap));
            let full = backoff(base, cap, attempt, 0.0);
            let wait = backoff(base, cap, attempt, jitter);
            prop_assert!(full <= cap);
            prop_assert!(wait <= full);
            // Within float rounding (a few parts in 10^16) of `full * (1 - jitter)`.
            let slack = full.mul_f64(1e-12) + Duration::from_nanos(1);
            prop_assert!(wait + slack >= full.mul_f64(1.0 - jitter));
        }

        #[test]
        fn below_half_jitter_waits_keep_growing(attempt in 1u32..15, low in 0.0f64..0.5, high in 0.0f64..0.5) {
            let (base, cap) = (Duration::from_millis(100), Duration::from_secs(3600));
            let before = backoff(base, cap, attempt, 0.0);
            let after = backoff(base, cap, attempt + 1, high);
            prop_assert!(before.mul_f64(1.0 - low) <= after);
        }
    }
}
