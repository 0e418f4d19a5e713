//! The kernel's text, read into values: PSI (`/proc/pressure/memory`, a cgroup's
//! `memory.pressure`) and `/proc/meminfo`. Pure; both refuse what they cannot read exactly
//! rather than guess, because a guess here decides what gets killed.

/// The most text either file may be: both are well under a page; more is not the kernel's.
const MAX_TEXT: usize = 16 * 1024;

/// Why a reading could not be had.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReadError(pub String);

fn refuse<T>(why: impl Into<String>) -> Result<T, ReadError> {
    Err(ReadError(why.into()))
}

/// One PSI line: the share of time (percent) tasks stalled over the last 10, 60 and 300
/// seconds, and the total stall in microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PsiLine {
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    pub total_us: u64,
}

/// A PSI file: `some` (at least one task stalled) and, where the kernel writes it, `full`
/// (all did).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Psi {
    pub some: PsiLine,
    pub full: Option<PsiLine>,
}

/// Reads a PSI file:
///
/// ```text
/// some avg10=0.00 avg60=0.07 avg300=0.08 total=474403
/// full avg10=0.00 avg60=0.05 avg300=0.05 total=336717
/// ```
///
/// `some` is required, each line needs all four fields once, averages are percentages.
/// Unknown line kinds and unknown fields are passed over (a later kernel may add some).
pub fn parse_psi(text: &str) -> Result<Psi, ReadError> {
    if text.len() > MAX_TEXT {
        return refuse(format!("{} bytes is not a PSI file", text.len()));
    }
    let mut some = None;
    let mut full = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let slot = match words.next() {
            Some("some") => &mut some,
            Some("full") => &mut full,
            _ => continue,
        };
        if slot.is_some() {
            return refuse(format!("{line:?}: the line appears twice"));
        }
        *slot = Some(psi_line(line, words)?);
    }
    match some {
        Some(some) => Ok(Psi { some, full }),
        None => refuse("no `some` line"),
    }
}

fn psi_line<'a>(line: &str, fields: impl Iterator<Item = &'a str>) -> Result<PsiLine, ReadError> {
    let mut avgs: [Option<f64>; 3] = [None; 3];
    let mut total = None;
    for field in fields {
        let Some((key, value)) = field.split_once('=') else {
            return refuse(format!("{line:?}: {field:?} is not key=value"));
        };
        let at = match key {
            "avg10" => 0,
            "avg60" => 1,
            "avg300" => 2,
            "total" => {
                if total.is_some() {
                    return refuse(format!("{line:?}: total appears twice"));
                }
                total =
                    Some(value.parse::<u64>().map_err(|_| {
                        ReadError(format!("{line:?}: total={value:?} is not a count"))
                    })?);
                continue;
            }
            _ => continue,
        };
        if avgs[at].is_some() {
            return refuse(format!("{line:?}: {key} appears twice"));
        }
        avgs[at] = Some(share(line, key, value)?);
    }
    match (avgs, total) {
        ([Some(avg10), Some(avg60), Some(avg300)], Some(total_us)) => Ok(PsiLine {
            avg10,
            avg60,
            avg300,
            total_us,
        }),
        _ => refuse(format!("{line:?}: needs avg10, avg60, avg300 and total")),
    }
}

/// A percentage as the kernel writes it: digits, one dot, digits; 0 to 100.
fn share(line: &str, key: &str, value: &str) -> Result<f64, ReadError> {
    let plain = !value.is_empty()
        && value.len() <= 12
        && value.chars().all(|c| c.is_ascii_digit() || c == '.')
        && value.matches('.').count() <= 1;
    let parsed = value.parse::<f64>().ok().filter(|v| plain && *v <= 100.0);
    parsed.ok_or_else(|| ReadError(format!("{line:?}: {key}={value:?} is not a percentage")))
}

/// What `/proc/meminfo` says about memory, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemInfo {
    pub total: u64,
    pub available: u64,
    pub swap_total: u64,
    pub swap_free: u64,
}

/// Reads `/proc/meminfo` (`MemTotal:  24684004 kB`). `MemTotal` and `MemAvailable` are
/// required (a kernel before 3.14 has no `MemAvailable`, and free memory alone is not the
/// same thing); swap is zero when not listed.
pub fn parse_meminfo(text: &str) -> Result<MemInfo, ReadError> {
    if text.len() > MAX_TEXT {
        return refuse(format!("{} bytes is not /proc/meminfo", text.len()));
    }
    let mut found: [Option<u64>; 4] = [None; 4];
    const KEYS: [&str; 4] = ["MemTotal", "MemAvailable", "SwapTotal", "SwapFree"];
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let Some(at) = KEYS.iter().position(|k| *k == key.trim()) else {
            continue;
        };
        if found[at].is_some() {
            return refuse(format!("{key} appears twice"));
        }
        let mut words = rest.split_whitespace();
        let number = words.next().unwrap_or("");
        let unit = match (words.next(), words.next()) {
            (None, None) => 1,
            (Some("kB"), None) => 1024,
            _ => return refuse(format!("{line:?}: not a number of kB")),
        };
        let bytes = number
            .parse::<u64>()
            .ok()
            .filter(|_| number.chars().all(|c| c.is_ascii_digit()))
            .and_then(|n| n.checked_mul(unit))
            .ok_or_else(|| ReadError(format!("{line:?}: not a number of kB")))?;
        found[at] = Some(bytes);
    }
    let [Some(total), Some(available), swap_total, swap_free] = found else {
        return refuse("MemTotal or MemAvailable is missing");
    };
    let (swap_total, swap_free) = (swap_total.unwrap_or(0), swap_free.unwrap_or(0));
    if available > total || swap_free > swap_total {
        return refuse("more is free than there is");
    }
    Ok(MemInfo {
        total,
        available,
        swap_total,
        swap_free,
    })
}

/// A counter in a cgroup's flat key-value file (`memory.events`, `memory.oom_control`):
/// the value of `key`, if listed once as a number.
pub fn flat_counter(text: &str, key: &str) -> Option<u64> {
    let mut values = text.lines().filter_map(|line| {
        let (k, v) = line.trim().split_once(' ')?;
        (k == key).then(|| v.trim().parse::<u64>().ok())
    });
    let first = values.next()??;
    values.next().is_none().then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MEMORY_PSI: &str = "some avg10=0.00 avg60=0.07 avg300=0.08 total=474403\n\
                              full avg10=0.00 avg60=0.05 avg300=0.05 total=336717\n";

    #[test]
    fn the_kernels_psi_is_read() {
        let psi = parse_psi(MEMORY_PSI).unwrap();
        assert_eq!(psi.some.avg60, 0.07);
        assert_eq!(psi.some.total_us, 474403);
        assert_eq!(psi.full.unwrap().avg300, 0.05);
        // CPU pressure on older kernels has no full line.
        let cpu = parse_psi("some avg10=41.50 avg60=3.00 avg300=1.00 total=9\n").unwrap();
        assert_eq!(cpu.some.avg10, 41.5);
        assert_eq!(cpu.full, None);
    }

    #[test]
    fn hostile_psi_is_refused_not_guessed() {
        for bad in [
            "",
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0",
            "some avg10=0.00 avg60=0.00 avg300=0.00",
            "some avg10=0.00 avg60=0.00 total=1",
            "some avg10=-1.00 avg60=0.00 avg300=0.00 total=1",
            "some avg10=101.00 avg60=0.00 avg300=0.00 total=1",
            "some avg10=NaN avg60=0.00 avg300=0.00 total=1",
            "some avg10=inf avg60=0.00 avg300=0.00 total=1",
            "some avg10=1e2 avg60=0.00 avg300=0.00 total=1",
            "some avg10=0.00 avg10=50.00 avg60=0.00 avg300=0.00 total=1",
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=-1",
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=99999999999999999999999",
            "some avg10 avg60=0.00 avg300=0.00 total=1",
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\nsome avg10=0.00 avg60=0.00 avg300=0.00 total=1",
            "\u{0}\u{0}\u{0}",
        ] {
            assert!(parse_psi(bad).is_err(), "{bad:?} was read");
        }
        assert!(parse_psi(&"some ".repeat(10_000)).is_err());
        // Unknown fields and kinds are passed over.
        let later = "some avg10=1.00 avg60=0.00 avg300=0.00 total=1 avg1=3.00\nmost x=1\n";
        assert_eq!(parse_psi(later).unwrap().some.avg10, 1.0);
    }

    const MEMINFO: &str = "MemTotal:       24684004 kB\nMemFree:        23966572 kB\n\
                           MemAvailable:   24086384 kB\nBuffers:           12812 kB\n\
                           SwapTotal:             0 kB\nSwapFree:              0 kB\n\
                           HugePages_Total:       0\n";

    #[test]
    fn meminfo_is_read_in_bytes() {
        let m = parse_meminfo(MEMINFO).unwrap();
        assert_eq!(m.total, 24684004 * 1024);
        assert_eq!(m.available, 24086384 * 1024);
        assert_eq!((m.swap_total, m.swap_free), (0, 0));
        let no_swap_lines = "MemTotal: 100 kB\nMemAvailable: 50 kB\n";
        assert_eq!(parse_meminfo(no_swap_lines).unwrap().swap_total, 0);
    }

    #[test]
    fn hostile_meminfo_is_refused() {
        for bad in [
            "",
            "MemTotal: 100 kB\n",
            "MemTotal: 100 kB\nMemFree: 50 kB\n",
            "MemTotal: 100 kB\nMemAvailable: 500 kB\n",
            "MemTotal: 100 kB\nMemAvailable: -5 kB\n",
            "MemTotal: 100 kB\nMemAvailable: 5 MB\n",
            "MemTotal: 100 kB\nMemAvailable: 5 kB extra\n",
            "MemTotal: 100 kB\nMemTotal: 200 kB\nMemAvailable: 5 kB\n",
            "MemTotal: 99999999999999999999 kB\nMemAvailable: 5 kB\n",
            "MemTotal: 18446744073709551615 kB\nMemAvailable: 5 kB\n",
            "MemTotal: 100 kB\nMemAvailable: 5 kB\nSwapTotal: 0 kB\nSwapFree: 10 kB\n",
            "MemTotal: +100 kB\nMemAvailable: 5 kB\n",
        ] {
            assert!(parse_meminfo(bad).is_err(), "{bad:?} was read");
        }
    }

    #[test]
    fn counters_are_read_from_flat_files() {
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(flat_counter(v1, "oom_kill"), Some(3));
        assert_eq!(flat_counter(v1, "under_oom"), Some(0));
        assert_eq!(flat_counter(v1, "nope"), None);
        assert_eq!(flat_counter("oom_kill x\n", "oom_kill"), None);
        assert_eq!(flat_counter("oom_kill 1\noom_kill 2\n", "oom_kill"), None);
    }

    proptest! {
        #[test]
        fn psi_never_panics(text in "\\PC{0,300}") {
            let _ = parse_psi(&text);
        }

        #[test]
        fn psi_lines_round_trip(
            a in 0u32..=10000, b in 0u32..=10000, c in 0u32..=10000, total in any::<u64>()
        ) {
            let text = format!(
                "some avg10={}.{:02} avg60={}.{:02} avg300={}.{:02} total={total}\n",
                a / 100, a % 100, b / 100, b % 100, c / 100, c % 100
            );
            let psi = parse_psi(&text).unwrap();
            prop_assert!((psi.some.avg10 - f64::from(a) / 100.0).abs() < 1e-9);
            prop_assert!((psi.some.avg300 - f64::from(c) / 100.0).abs() < 1e-9);
            prop_assert_eq!(psi.some.total_us, total);
        }

        #[test]
        fn meminfo_never_panics(text in "\\PC{0,300}") {
            let _ = parse_meminfo(&text);
        }

        #[test]
        fn meminfo_reads_any_consistent_numbers(total in 0u64..1 << 40, free in 0u64..1 << 40) {
            let available = free.min(total);
            let text = format!("MemTotal: {total} kB\nMemAvailable: {available} kB\n");
            let m = parse_meminfo(&text).unwrap();
            prop_assert_eq!(m.total, total * 1024);
            prop_assert_eq!(m.available, available * 1024);
        }
    }
}
