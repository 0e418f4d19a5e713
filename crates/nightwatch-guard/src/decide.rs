//! Which job to stop, and why: pure, from readings taken elsewhere.
//!
//! Two reasons, as earlyoom and systemd-oomd have them:
//! - a job near its own limit (`stop_at` of it) is stopped before the kernel's OOM killer
//!   picks a process inside it at random, so its end is recorded with its reason;
//! - the host is short of memory (MemAvailable and SwapFree both at or under their levels, or
//!   PSI `some avg10` above its level for `for`): one job is stopped per look, the lowest
//!   priority first, then the one using the most memory, then the youngest, so the databases
//!   outside the guard are never the kernel's choice.

use std::fmt;
use std::time::Duration;

use nightwatch_spec::backup::ByteSize;

use crate::read::{MemInfo, Psi};
use crate::spec::{GuardConfig, Percent};

/// A guarded job as it stands at one look.
#[derive(Clone, Debug, PartialEq)]
pub struct JobReading {
    /// The guard's id for it.
    pub id: u64,
    pub name: String,
    /// Whose work it is (a task, a session), for records.
    pub owner: Option<String>,
    pub priority: u8,
    /// Bytes charged to its cgroup; `None` when it could not be read.
    pub usage: Option<u64>,
    /// Its memory limit in bytes.
    pub limit: u64,
    /// Start order: a larger number started later.
    pub started: u64,
}

/// Why a job is stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum Cause {
    /// It used `usage` of its own `limit`, at least `stop_at` of it.
    NearItsLimit {
        usage: u64,
        limit: u64,
        stop_at: Percent,
    },
    /// The host is short of memory (earlyoom's levels).
    LowMemory { memory: MemInfo, shortage: String },
    /// Memory pressure held above its level.
    Pressure {
        avg10: f64,
        above: Percent,
        held_for: Duration,
    },
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::NearItsLimit {
                usage,
                limit,
                stop_at,
            } => write!(
                f,
                "it used {} of its {} memory limit, over stop_at {stop_at}",
                ByteSize(*usage),
                ByteSize(*limit)
            ),
            Cause::LowMemory { shortage, .. } => {
                write!(f, "the host is short of memory: {shortage}")
            }
            Cause::Pressure {
                avg10,
                above,
                held_for,
            } => write!(
                f,
                "memory pressure (PSI some avg10) is {avg10:.2}%, above {above} for {}",
                nightwatch_time::format_duration(*held_for)
            ),
        }
    }
}

/// A job to stop.
#[derive(Clone, Debug, PartialEq)]
pub struct Stop {
    pub job: JobReading,
    pub cause: Cause,
    /// For a host-wide cause: why this job and not another.
    pub chosen: Option<String>,
}

impl Stop {
    /// One line for records and logs.
    pub fn reason(&self) -> String {
        match &self.chosen {
            Some(chosen) => format!("{}; {chosen}", self.cause),
            None => self.cause.to_string(),
        }
    }
}

/// The host-wide levels, from the configuration.
pub fn low_memory(config: &GuardConfig, memory: &MemInfo) -> Option<Cause> {
    let mem_level = config.mem_available_below.bytes_of(memory.total);
    let swap_level = config.swap_free_below.bytes_of(memory.swap_total);
    // As earlyoom: both must be low. With no swap at all none is free, so memory decides.
    let short = memory.available <= mem_level && memory.swap_free <= swap_level;
    short.then(|| Cause::LowMemory {
        memory: *memory,
        shortage: format!(
            "MemAvailable {} of {} (at or under {}) and SwapFree {} of {} (at or under {})",
            ByteSize(memory.available),
            ByteSize(memory.total),
            config.mem_available_below,
            ByteSize(memory.swap_free),
            ByteSize(memory.swap_total),
            config.swap_free_below
        ),
    })
}

/// Follows PSI over looks: how long `some avg10` has stayed above the configured level.
#[derive(Clone, Debug, Default)]
pub struct PressureWindow {
    above_since_ms: Option<i64>,
}

impl PressureWindow {
    /// Notes a reading at `now_ms` (`None`: unreadable, which ends the window: no stop is
    /// made on pressure nobody saw). A cause once it has been above for the rule's `for`.
    pub fn observe(
        &mut self,
        config: &GuardConfig,
        psi: Option<&Psi>,
        now_ms: i64,
    ) -> Option<Cause> {
        let rule = config.pressure?;
        let Some(psi) = psi.filter(|p| p.some.avg10 > rule.some_avg10_above.0) else {
            self.above_since_ms = None;
            return None;
        };
        let since = *self.above_since_ms.get_or_insert(now_ms);
        let held = u64::try_from(now_ms.saturating_sub(since)).unwrap_or(0);
        (held >= rule.held_for.as_millis() as u64).then_some(Cause::Pressure {
            avg10: psi.some.avg10,
            above: rule.some_avg10_above,
            held_for: rule.held_for,
        })
    }

    /// Starts the window again: after a stop, pressure must hold for `for` once more before
    /// another job goes (PSI's ten-second average lags the memory freed).
    pub fn restart(&mut self) {
        self.above_since_ms = None;
    }
}

/// What to stop at this look: every job at or over `stop_at` of its own limit; else, when
/// the host is short (`host`), the one job [`victim`] names.
pub fn decide(config: &GuardConfig, host: Option<Cause>, jobs: &[JobReading]) -> Vec<Stop> {
    let near: Vec<Stop> = jobs
        .iter()
        .filter_map(|job| {
            let usage = job.usage?;
            (job.limit > 0 && usage >= config.stop_at.of(job.limit)).then(|| Stop {
                job: job.clone(),
                cause: Cause::NearItsLimit {
                    usage,
                    limit: job.limit,
                    stop_at: config.stop_at,
                },
                chosen: None,
            })
        })
        .collect();
    // Their memory comes back at once; the host is looked at again next time.
    if !near.is_empty() {
        return near;
    }
    let Some(cause) = host else {
        return Vec::new();
    };
    victim(jobs)
        .map(|job| Stop {
            chosen: Some(format!(
                "chosen of {} guarded job(s): priority {}{}",
                jobs.len(),
                job.priority,
                job.usage
                    .map(|u| format!(", using {}", ByteSize(u)))
                    .unwrap_or_default()
            )),
            job: job.clone(),
            cause,
        })
        .into_iter()
        .collect()
}

/// The job to stop first: the lowest priority, then the most memory used, then the youngest.
pub fn victim(jobs: &[JobReading]) -> Option<&JobReading> {
    jobs.iter().min_by(|a, b| {
        a.priority
            .cmp(&b.priority)
            .then(b.usage.unwrap_or(0).cmp(&a.usage.unwrap_or(0)))
            .then(b.started.cmp(&a.started))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::PsiLine;

    fn job(id: u64, priority: u8, usage: u64, started: u64) -> JobReading {
        JobReading {
            id,
            name: format!("job{id}"),
            owner: None,
            priority,
            usage: Some(usage),
            limit: 1000,
            started,
        }
    }

    fn config(yaml: &str) -> GuardConfig {
        GuardConfig::from_yaml(yaml).unwrap()
    }

    fn ids(stops: &[Stop]) -> Vec<u64> {
        stops.iter().map(|s| s.job.id).collect()
    }

    #[test]
    fn the_lowest_priority_goes_first_then_the_largest_then_the_youngest() {
        let jobs = [job(1, 50, 900, 1), job(2, 20, 100, 2), job(3, 20, 100, 3)];
        assert_eq!(
            victim(&jobs).unwrap().id,
            3,
            "same priority and use: the youngest"
        );
        let jobs = [job(1, 50, 900, 1), job(2, 20, 300, 2), job(3, 20, 100, 3)];
        assert_eq!(victim(&jobs).unwrap().id, 2, "same priority: the largest");
        let jobs = [job(1, 10, 1, 1), job(2, 20, 999, 2)];
        assert_eq!(victim(&jobs).unwrap().id, 1, "priority before size");
        assert_eq!(victim(&[]), None);
    }

    #[test]
    fn a_job_near_its_own_limit_is_stopped_without_host_pressure() {
        let c = config("stop_at: 90%");
        let jobs = [job(1, 50, 899, 1), job(2, 50, 900, 2), job(3, 90, 1000, 3)];
        let stops = decide(&c, None, &jobs);
        assert_eq!(ids(&stops), [2, 3], "each at or over 90% of 1000 bytes");
        assert!(
            stops[0].reason().contains("stop_at 90%"),
            "{}",
            stops[0].reason()
        );
        let unread = JobReading {
            usage: None,
            ..job(4, 0, 0, 4)
        };
        assert!(decide(&c, None, &[unread]).is_empty());
    }

    #[test]
    fn host_pressure_stops_exactly_one_job() {
        let c = config("");
        let short = MemInfo {
            total: 1000,
            available: 50,
            swap_total: 0,
            swap_free: 0,
        };
        let cause = low_memory(&c, &short).expect("5% available, no swap: short");
        let jobs = [job(1, 50, 100, 1), job(2, 20, 100, 2)];
        let stops = decide(&c, Some(cause), &jobs);
        assert_eq!(ids(&stops), [2]);
        assert!(stops[0].reason().contains("short of memory"));
        assert!(stops[0].reason().contains("priority 20"));
    }

    #[test]
    fn earlyoom_needs_both_memory_and_swap_low() {
        let c = config("mem_available_below: 10%\nswap_free_below: 10%");
        let with_swap = MemInfo {
            total: 1000,
            available: 50,
            swap_total: 1000,
            swap_free: 500,
        };
        assert_eq!(low_memory(&c, &with_swap), None, "swap still free");
        let swap_gone = MemInfo {
            swap_free: 100,
            ..with_swap
        };
        assert!(low_memory(&c, &swap_gone).is_some());
        let plenty = MemInfo {
            available: 500,
            ..swap_gone
        };
        assert_eq!(low_memory(&c, &plenty), None);
        let bytes = config("mem_available_below: 1KiB");
        let kib = MemInfo {
            total: 1 << 30,
            available: 1024,
            swap_total: 0,
            swap_free: 0,
        };
        assert!(low_memory(&bytes, &kib).is_some());
    }

    fn psi(avg10: f64) -> Psi {
        let line = PsiLine {
            avg10,
            avg60: 0.0,
            avg300: 0.0,
            total_us: 0,
        };
        Psi {
            some: line,
            full: None,
        }
    }

    #[test]
    fn pressure_must_hold_for_its_time_and_starts_over_after_a_stop() {
        let c = config("pressure: { some_avg10_above: 40%, for: 5s }");
        let mut window = PressureWindow::default();
        assert_eq!(window.observe(&c, Some(&psi(50.0)), 0), None);
        assert_eq!(window.observe(&c, Some(&psi(50.0)), 4_999), None);
        assert!(window.observe(&c, Some(&psi(50.0)), 5_000).is_some());
        window.restart();
        assert_eq!(window.observe(&c, Some(&psi(50.0)), 6_000), None);
        assert_eq!(window.observe(&c, Some(&psi(10.0)), 12_000), None, "dipped");
        assert_eq!(window.observe(&c, Some(&psi(50.0)), 13_000), None);
        assert_eq!(window.observe(&c, None, 19_000), None, "unreadable");
        let off = config("pressure: ~");
        assert_eq!(window.observe(&off, Some(&psi(99.0)), 99_000), None);
    }
}
