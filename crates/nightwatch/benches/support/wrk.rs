//! Debian's `wrk` (4.1) report, read: the one reader every benchmark that drives wrk uses
//! (`serve`, `idle`, and `nightwatch-serve`'s `proxy` through `#[path]`). Latencies in
//! milliseconds.

#![allow(dead_code)] // each benchmark reads the fields it prints

/// What one wrk run reported.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wrk {
    pub rate: f64,
    pub requests: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    /// Connect, read, write and timeout errors together.
    pub errors: u64,
    pub non_2xx: u64,
}

impl Wrk {
    /// Reads a report printed with `--latency`; what it does not find stays zero.
    pub fn parse(text: &str) -> Wrk {
        let mut w = Wrk::default();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["Requests/sec:", rate] => w.rate = rate.parse().unwrap_or(0.0),
                ["50%", v] => w.p50 = ms(v),
                ["90%", v] => w.p90 = ms(v),
                ["99%", v] => w.p99 = ms(v),
                ["Latency", _avg, _stdev, max, ..] => w.max = ms(max),
                [n, "requests", "in", ..] => w.requests = n.parse().unwrap_or(0),
                ["Non-2xx", "or", "3xx", "responses:", n] => w.non_2xx = n.parse().unwrap_or(0),
                // connect 0, read 0, write 0, timeout 0
                ["Socket", "errors:", rest @ ..] => {
                    w.errors = rest
                        .iter()
                        .filter_map(|n| n.trim_end_matches(',').parse::<u64>().ok())
                        .sum();
                }
                _ => {}
            }
        }
        w
    }
}

/// wrk's `1.23ms`, `456.00us`, `1.02s` as milliseconds.
pub fn ms(text: &str) -> f64 {
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (text, 1.0)
    };
    number.parse::<f64>().unwrap_or(f64::NAN) * scale
}
