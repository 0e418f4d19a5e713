//! The guard: the jobs it watches, what it reads at each look, and the stops it makes when
//! whoever runs it allows them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cgroup::{CgroupError, Cgroups, JobCgroup, Unavailable};
use crate::decide::{Cause, JobReading, PressureWindow, Stop, decide, low_memory};
use crate::read::{MemInfo, Psi, parse_meminfo, parse_psi};
use crate::spec::{GuardConfig, JobKind, JobLimits};

/// How long a job whose stop was declined is left out of the choice before it may be
/// proposed again: one decision record a minute, not one a second.
pub const DECLINED_FOR: Duration = Duration::from_secs(60);
/// How long a stop waits for a job's cgroup to empty.
const KILL_WITHIN: Duration = Duration::from_secs(5);

/// Why the guard could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    #[error("memory guard: {0}")]
    Cgroup(#[from] CgroupError),
    #[error("memory guard: {0}")]
    Job(String),
}

/// Where a job runs: its cgroup, or why it has none.
#[derive(Debug)]
pub struct Placement {
    id: u64,
    /// The job's name as started.
    pub name: String,
    pub limits: JobLimits,
    cgroup: Option<Arc<JobCgroup>>,
    /// Why it runs without limits (no cgroup to be had, and `required: false`).
    pub unguarded: Option<String>,
}

impl Placement {
    /// Its cgroup, when it has one.
    pub fn cgroup(&self) -> Option<&JobCgroup> {
        self.cgroup.as_deref()
    }

    /// The `pre_exec` step that puts the child in its cgroup (see [`JobCgroup::enter_hook`]).
    pub fn enter_hook(
        &self,
    ) -> Option<impl FnMut() -> std::io::Result<()> + Send + Sync + 'static> {
        self.cgroup.as_ref().map(|c| c.enter_hook())
    }
}

/// How a job's time under the guard ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ended {
    /// The guard stopped it, and why.
    pub stopped: Option<String>,
    /// Its cgroup could not be removed (processes it left behind), and why.
    pub left: Option<String>,
}

/// What a stop did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Killed {
    /// Processes signalled.
    pub processes: usize,
    /// Bytes charged to the job just before.
    pub usage_before: Option<u64>,
    /// The kernel's own OOM kills in the job's cgroup when the guard stepped in (0: the guard
    /// was first). Read before the kill: once the job is gone, its runner may remove the
    /// cgroup, and the counter with it.
    pub oom_kills: Option<u64>,
}

/// A reading that stopped or started being readable: said once, not at every look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// The file.
    pub source: String,
    pub readable: bool,
    pub summary: String,
}

/// One look: what to stop, and what changed in what can be read.
#[derive(Debug, Default)]
pub struct Tick {
    pub stops: Vec<Stop>,
    pub notices: Vec<Notice>,
}

/// Whoever runs the guard: decides whether each stop may go ahead, and hears how it went.
/// The daemon proposes each through its engine and records the result.
pub trait StopGate {
    /// A reading became unreadable or readable again.
    fn notice(&mut self, notice: &Notice) {
        let _ = notice;
    }
    /// Ok: the guard kills the job. Err(why): it does not, and leaves the job out of the
    /// choice for [`DECLINED_FOR`].
    fn allow(&mut self, stop: &Stop) -> Result<(), String>;
    /// How the allowed stop went.
    fn done(&mut self, stop: &Stop, result: &Result<Killed, GuardError>);
}

/// A stop and how it ended, as [`Guard::run`] returns it.
#[derive(Debug)]
pub struct Outcome {
    pub stop: Stop,
    /// `Err`: declined by the gate, or the kill failed, with why.
    pub result: Result<Killed, String>,
}

struct Watched {
    name: String,
    owner: Option<String>,
    limits: JobLimits,
    cgroup: Arc<JobCgroup>,
    stopped: Option<String>,
    declined_until_ms: Option<i64>,
}

#[derive(Default)]
struct State {
    jobs: BTreeMap<u64, Watched>,
    next_id: u64,
    window: PressureWindow,
    /// Files that could not be read at the last look, with why.
    unreadable: BTreeMap<String, String>,
}

/// The memory guard.
pub struct Guard {
    /// What every job's cgroup name ends with (`p<pid>g<n>`): daemons sharing a cgroup (or a
    /// process holding several guards, as tests do) never reuse each other's.
    instance: String,
    config: GuardConfig,
    cgroups: Result<Cgroups, Unavailable>,
    proc_root: PathBuf,
    state: Mutex<State>,
}

impl Guard {
    /// A guard with `config` over `cgroups` (from [`Cgroups::detect`]).
    pub fn new(config: GuardConfig, cgroups: Result<Cgroups, Unavailable>) -> Guard {
        static GUARDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = GUARDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Guard {
            instance: format!("p{}g{n}", std::process::id()),
            config,
            cgroups,
            proc_root: PathBuf::from("/proc"),
            state: Mutex::new(State::default()),
        }
    }

    /// Reads `meminfo` and `pressure/memory` under `root` instead of `/proc`.
    pub fn with_proc_root(mut self, root: impl Into<PathBuf>) -> Guard {
        self.proc_root = root.into();
        self
    }

    pub fn config(&self) -> &GuardConfig {
        &self.config
    }

    /// The hierarchy jobs go in, or why there is none.
    pub fn cgroups(&self) -> Result<&Cgroups, &Unavailable> {
        self.cgroups.as_ref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is plain data; a panic mid-update leaves it usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Places a job of `kind` (run for `route`, when it is one) under the guard, with the
    /// limits the configuration gives it.
    pub fn start(
        &self,
        name: &str,
        kind: JobKind,
        route: Option<&str>,
    ) -> Result<Placement, GuardError> {
        self.start_with(name, self.config.limits(kind, route))
    }

    /// Places a job with `limits`. With no cgroup to be had: an error when the guard is
    /// `required` (the job must not run), else a placement that says why it is unguarded.
    pub fn start_with(&self, name: &str, limits: JobLimits) -> Result<Placement, GuardError> {
        self.start_for(name, None, limits)
    }

    /// [`Guard::start_with`] for work of `owner` (a task, a session), which its stops name.
    pub fn start_for(
        &self,
        name: &str,
        owner: Option<String>,
        limits: JobLimits,
    ) -> Result<Placement, GuardError> {
        let cgroups = match &self.cgroups {
            Ok(c) => c,
            Err(why) if self.config.required => return Err(why.clone().into()),
            Err(why) => {
                return Ok(Placement {
                    id: u64::MAX,
                    name: name.to_owned(),
                    limits,
                    cgroup: None,
                    unguarded: Some(format!("{why} (memory_guard.required is false)")),
                });
            }
        };
        if self.lock().jobs.values().any(|j| j.name == name) {
            return Err(GuardError::Job(format!(
                "a job named {name:?} is already guarded"
            )));
        }
        let cgroup = Arc::new(cgroups.create(&dir_name(name, &self.instance), &limits)?);
        let mut state = self.lock();
        let id = state.next_id;
        state.next_id += 1;
        state.jobs.insert(
            id,
            Watched {
                name: name.to_owned(),
                owner,
                limits,
                cgroup: cgroup.clone(),
                stopped: None,
                declined_until_ms: None,
            },
        );
        Ok(Placement {
            id,
            name: name.to_owned(),
            limits,
            cgroup: Some(cgroup),
            unguarded: None,
        })
    }

    /// Ends a job's time under the guard: it is no longer watched, and its cgroup is removed
    /// when empty. Says whether the guard stopped it.
    pub fn finish(&self, placement: Placement) -> Ended {
        let watched = self.lock().jobs.remove(&placement.id);
        let mut ended = Ended {
            stopped: watched.and_then(|w| w.stopped),
            left: None,
        };
        if let Some(cgroup) = placement.cgroup {
            if ended.stopped.is_some() {
                // A stop may still be sweeping what the job forked: let it finish.
                let _ = cgroup.kill_all(KILL_WITHIN);
            }
            let still = cgroup.pids().map(|p| p.len()).unwrap_or(0);
            if still > 0 {
                ended.left = Some(format!(
                    "{} process(es) it started still run in {}",
                    still,
                    cgroup.dir().display()
                ));
            } else if let Err(e) = cgroup.remove(Duration::from_secs(1)) {
                ended.left = Some(e.to_string());
            }
        }
        ended
    }

    /// Looks once: reads the host's memory and pressure and each job's usage, and says what
    /// to stop. Nothing is stopped here.
    pub fn tick(&self, now_ms: i64) -> Tick {
        let mut tick = Tick::default();
        let mut state = self.lock();
        let memory: Option<MemInfo> = self.read(&mut state, &mut tick, "meminfo", parse_meminfo);
        let psi: Option<Psi> = if self.config.pressure.is_some() {
            self.read(&mut state, &mut tick, "pressure/memory", parse_psi)
        } else {
            None
        };
        let pressure = state.window.observe(&self.config, psi.as_ref(), now_ms);
        let host = memory
            .as_ref()
            .and_then(|m| low_memory(&self.config, m))
            .or(pressure);
        let jobs: Vec<JobReading> = state
            .jobs
            .iter()
            .filter(|(_, w)| w.stopped.is_none())
            .filter(|(_, w)| w.declined_until_ms.is_none_or(|until| now_ms >= until))
            .map(|(id, w)| JobReading {
                id: *id,
                name: w.name.clone(),
                owner: w.owner.clone(),
                priority: w.limits.priority,
                usage: w.cgroup.usage().ok(),
                limit: w.cgroup.limit(),
                started: *id,
            })
            .collect();
        tick.stops = decide(&self.config, host, &jobs);
        tick
    }

    /// Reads `/proc/<file>`, noting a change in whether it can be read.
    fn read<T, E: std::fmt::Display>(
        &self,
        state: &mut State,
        tick: &mut Tick,
        file: &str,
        parse: impl Fn(&str) -> Result<T, E>,
    ) -> Option<T> {
        let path = self.proc_root.join(file);
        let source = path.display().to_string();
        let read = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| parse(&text).map_err(|e| e.to_string()));
        match read {
            Ok(value) => {
                if state.unreadable.remove(&source).is_some() {
                    tick.notices.push(Notice {
                        summary: format!("{source} can be read again"),
                        source,
                        readable: true,
                    });
                }
                Some(value)
            }
            Err(why) => {
                if let std::collections::btree_map::Entry::Vacant(first) =
                    state.unreadable.entry(source.clone())
                {
                    tick.notices.push(Notice {
                        summary: format!(
                            "{source} cannot be read ({why}); the guard goes on without it"
                        ),
                        source,
                        readable: false,
                    });
                    first.insert(why);
                }
                None
            }
        }
    }

    /// Stops `stop`'s job: kills every process in its cgroup and waits until it is empty.
    pub fn stop(&self, stop: &Stop) -> Result<Killed, GuardError> {
        let cgroup = {
            let mut state = self.lock();
            if !matches!(stop.cause, Cause::NearItsLimit { .. }) {
                // Pressure must now hold for its `for` again before another job goes.
                state.window.restart();
            }
            let Some(watched) = state.jobs.get_mut(&stop.job.id) else {
                return Err(GuardError::Job(format!(
                    "{} is no longer guarded (it ended)",
                    stop.job.name
                )));
            };
            watched.stopped = Some(stop.reason());
            watched.cgroup.clone()
        };
        let usage_before = cgroup.usage().ok();
        let oom_kills = cgroup.oom_kills();
        let processes = cgroup.kill_all(KILL_WITHIN)?;
        Ok(Killed {
            processes,
            usage_before,
            oom_kills,
        })
    }

    /// The stop was declined: the job is left out of the choice for [`DECLINED_FOR`].
    pub fn declined(&self, stop: &Stop, now_ms: i64) {
        if let Some(w) = self.lock().jobs.get_mut(&stop.job.id) {
            w.declined_until_ms = Some(now_ms.saturating_add(DECLINED_FOR.as_millis() as i64));
        }
    }

    /// One look, with each stop put to `gate` first.
    pub fn run(&self, now_ms: i64, gate: &mut dyn StopGate) -> Vec<Outcome> {
        let tick = self.tick(now_ms);
        for notice in &tick.notices {
            gate.notice(notice);
        }
        let mut outcomes = Vec::new();
        for stop in tick.stops {
            let result = match gate.allow(&stop) {
                Ok(()) => {
                    let result = self.stop(&stop);
                    gate.done(&stop, &result);
                    result.map_err(|e| e.to_string())
                }
                Err(why) => {
                    self.declined(&stop, now_ms);
                    Err(format!("declined: {why}"))
                }
            };
            outcomes.push(Outcome { stop, result });
        }
        outcomes
    }
}

/// A job's name as a cgroup directory: letters, digits, `-` and `_` only (a `.` could name a
/// controller's file), prefixed so it never is one, bounded, and ending with the guard's
/// `instance` (`p<pid>g<n>`), which [`Cgroups::remove_leftovers`] reads.
pub fn dir_name(job: &str, instance: &str) -> String {
    let safe: String = job
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect();
    format!("job-{safe}-{instance}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names_become_safe_directory_names() {
        assert_eq!(
            dir_name("disk-full-t3-a1", "p7g0"),
            "job-disk-full-t3-a1-p7g0"
        );
        assert_eq!(dir_name("job:nightly", "p7g0"), "job-job_nightly-p7g0");
        assert_eq!(dir_name("../../etc", "p7g0"), "job-______etc-p7g0");
        assert_eq!(dir_name("memory.max", "p7g0"), "job-memory_max-p7g0");
        assert_eq!(dir_name("", "p7g0"), "job--p7g0");
        assert!(dir_name(&"x".repeat(1000), "p7g0").len() <= 130);
    }

    #[test]
    fn without_cgroups_a_required_guard_refuses_and_an_optional_one_says_why() {
        let none = || Err(Unavailable("cgroup v2 is not mounted".into()));
        let required = Guard::new(GuardConfig::from_yaml("").unwrap(), none());
        let err = required
            .start("disk", JobKind::Runbook, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no memory guard can be set up"), "{err}");
        assert!(err.contains("not mounted"), "{err}");
        let optional = Guard::new(GuardConfig::from_yaml("required: false").unwrap(), none());
        let placed = optional.start("disk", JobKind::Runbook, None).unwrap();
        assert!(placed.cgroup().is_none());
        assert!(
            placed
                .unguarded
                .as_deref()
                .unwrap()
                .contains("required is false"),
            "{placed:?}"
        );
        assert_eq!(optional.finish(placed), Ended::default());
    }

    #[test]
    fn an_unreadable_reading_is_told_once_and_its_return_once() {
        let dir = tempfile::tempdir().unwrap();
        let guard = Guard::new(
            GuardConfig::from_yaml("").unwrap(),
            Err(Unavailable("none".into())),
        )
        .with_proc_root(dir.path());
        let first = guard.tick(0);
        assert_eq!(first.notices.len(), 2, "{:?}", first.notices);
        assert!(first.notices.iter().all(|n| !n.readable));
        assert!(guard.tick(1000).notices.is_empty(), "said once");
        std::fs::write(
            dir.path().join("meminfo"),
            "MemTotal: 100 kB\nMemAvailable: 90 kB\n",
        )
        .unwrap();
        let back = guard.tick(2000);
        assert_eq!(back.notices.len(), 1);
        assert!(back.notices[0].readable);
        assert!(back.notices[0].source.ends_with("meminfo"));
        assert!(guard.tick(3000).notices.is_empty());
        std::fs::write(dir.path().join("meminfo"), "garbage").unwrap();
        let bad = guard.tick(4000);
        assert_eq!(bad.notices.len(), 1);
        assert!(
            bad.notices[0].summary.contains("MemTotal"),
            "{:?}",
            bad.notices
        );
    }
}
