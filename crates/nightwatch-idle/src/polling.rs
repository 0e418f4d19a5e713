//! Polling shapes: the same client asking the same thing on a fixed period. A dashboard tab
//! polling status every 30 seconds looks like a person by every other measure; its rhythm is
//! what gives it away.
//!
//! Memory is bounded: at most [`MAX_CLIENTS`] keys are remembered, the least recently seen
//! forgotten first, so a flood of distinct clients costs a bounded table, not the daemon.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::IpAddr;

/// Keys remembered at once.
pub const MAX_CLIENTS: usize = 4096;
/// Intervals in a row that must agree before a client counts as polling.
pub const INTERVALS: usize = 3;
/// The shortest period that counts: faster repeats are a person's page loading its parts.
pub const MIN_PERIOD_MS: u64 = 2_000;

/// Who asked what: the client, its user agent, the method and the path, hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PollKey(u64);

impl PollKey {
    pub fn new(client: IpAddr, agent: &str, method: &str, path: &str) -> PollKey {
        let mut h = DefaultHasher::new();
        (client, agent, method, path).hash(&mut h);
        PollKey(h.finish())
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    /// The last `INTERVALS + 1` times, oldest first; `count` of them are filled.
    times: [u64; INTERVALS + 1],
    count: usize,
}

impl Seen {
    fn push(&mut self, at_ms: u64) {
        if self.count > 0 && at_ms < self.times[self.count - 1] {
            // The clock the caller uses only moves forward; anything else starts over.
            self.count = 0;
        }
        if self.count == self.times.len() {
            self.times.rotate_left(1);
            self.count -= 1;
        }
        self.times[self.count] = at_ms;
        self.count += 1;
    }

    fn last(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.times[self.count - 1]
        }
    }

    /// The period, when the last intervals agree within a tenth (at least a second).
    fn period(&self) -> Option<u64> {
        if self.count < self.times.len() {
            return None;
        }
        let intervals: Vec<u64> = self.times.windows(2).map(|w| w[1] - w[0]).collect();
        let min = *intervals.iter().min()?;
        let max = *intervals.iter().max()?;
        let mean = intervals.iter().sum::<u64>() / intervals.len() as u64;
        let tolerance = (mean / 10).max(1_000);
        (min >= MIN_PERIOD_MS && max - min <= tolerance).then_some(mean)
    }
}

/// Recent requests per key.
#[derive(Debug, Default)]
pub struct PollingShapes {
    seen: HashMap<PollKey, Seen>,
}

impl PollingShapes {
    /// Notes a request; returns the period when this key is polling.
    pub fn observe(&mut self, key: PollKey, at_ms: u64) -> Option<u64> {
        if !self.seen.contains_key(&key) && self.seen.len() >= MAX_CLIENTS {
            self.forget_oldest_half();
        }
        let seen = self.seen.entry(key).or_default();
        seen.push(at_ms);
        seen.period()
    }

    /// Keys remembered now.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    fn forget_oldest_half(&mut self) {
        let mut lasts: Vec<u64> = self.seen.values().map(Seen::last).collect();
        let middle = lasts.len() / 2;
        let (_, cut, _) = lasts.select_nth_unstable(middle);
        let cut = *cut;
        self.seen.retain(|_, s| s.last() > cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(n: u32) -> PollKey {
        PollKey::new(IpAddr::from(n.to_be_bytes()), "ua", "GET", "/status")
    }

    #[test]
    fn a_fixed_period_is_seen_after_three_intervals() {
        let mut shapes = PollingShapes::default();
        let k = key(1);
        assert_eq!(shapes.observe(k, 0), None);
        assert_eq!(shapes.observe(k, 5_000), None);
        assert_eq!(shapes.observe(k, 10_100), None);
        assert_eq!(shapes.observe(k, 15_000), Some(5_000));
    }

    #[test]
    fn irregular_or_fast_repeats_are_not_polling() {
        let mut shapes = PollingShapes::default();
        let k = key(2);
        for at in [0, 5_000, 20_000, 22_000, 60_000] {
            assert_eq!(shapes.observe(k, at), None);
        }
        let fast = key(3);
        for at in [0, 100, 200, 300, 400] {
            assert_eq!(shapes.observe(fast, at), None);
        }
    }

    #[test]
    fn time_going_back_starts_over() {
        let mut shapes = PollingShapes::default();
        let k = key(4);
        for at in [100_000, 105_000, 110_000] {
            shapes.observe(k, at);
        }
        assert_eq!(shapes.observe(k, 5_000), None);
    }

    #[test]
    fn a_flood_of_clients_stays_bounded() {
        let mut shapes = PollingShapes::default();
        for n in 0..(MAX_CLIENTS as u32 * 3) {
            shapes.observe(key(n), u64::from(n));
        }
        assert!(shapes.len() <= MAX_CLIENTS);
        // The recent ones are the ones kept.
        let recent = key(MAX_CLIENTS as u32 * 3 - 1);
        assert!(shapes.seen.contains_key(&recent));
    }

    proptest! {
        #[test]
        fn any_sequence_is_total(times in proptest::collection::vec(any::<u64>(), 0..50)) {
            let mut shapes = PollingShapes::default();
            for t in times {
                if let Some(p) = shapes.observe(key(9), t) {
                    prop_assert!(p >= MIN_PERIOD_MS);
                }
            }
        }
    }
}
