//! The memory guard: runbooks and agent sessions started by nightwatch run in cgroups of
//! their own, with memory and CPU limits, and under memory pressure the guard stops the
//! lowest-priority work first, before the kernel's OOM killer picks a database.
//!
//! ```text
//!  serve.yaml memory_guard:  --> spec.rs   GuardConfig (levels, stop_at, limits per kind/route)
//!  runner: Guard::start(job) --> cgroup.rs  <ours>/nightwatch/job-<name>, limits written,
//!        Placement::enter_hook   in the child's pre_exec: it writes its own pid to
//!                                cgroup.procs, so it never runs a moment outside
//!  guard loop, every `every`: Guard::run(now, gate)
//!        read.rs    /proc/meminfo, /proc/pressure/memory (unreadable: a Notice, once)
//!        decide.rs  near its own limit (stop_at) -> stop it; host short (earlyoom's
//!                   MemAvailable and SwapFree levels, or PSI some avg10 held above its level
//!                   for `for`) -> stop one: lowest priority, then largest, then youngest
//!        StopGate::allow(stop)  the daemon proposes `stop_job` through its engine; a
//!                   verdict other than allow leaves the job alone (the decision says why)
//!        Guard::stop  kill every process in the job's cgroup until it is empty
//!        StopGate::done  the daemon records the result
//!  runner: Guard::finish(placement) -> whether the guard stopped it; cgroup removed if empty
//! ```
//!
//! Which cgroups: the daemon's own cgroup is found in `/proc/self/cgroup` and the hierarchies
//! in `/proc/self/mountinfo` (pure: [`Located`]). cgroup v2 is used when the memory
//! controller is available to it (`+memory +cpu` are written to its `cgroup.subtree_control`;
//! when it holds processes, v2's no-internal-process rule makes that fail, so they move to a
//! `daemon` leaf first, as systemd's `Delegate=yes` expects); else cgroup v1's memory
//! hierarchy (and the cpu hierarchy for `cpu.cfs_quota_us`); else [`Unavailable`] says why,
//! and a `required` guard (the default) refuses to start jobs: fail closed.
//!
//! A job's cgroup is `job-<name>-p<pid>g<n>`: the pid and instance of the guard that made
//! it, so daemons sharing a cgroup (or tests holding several guards) never reuse or remove
//! each other's; [`Cgroups::remove_leftovers`] removes only empty ones whose maker is gone.
//! A job that exits leaving processes behind keeps its cgroup (its end says so).
//!
//! Invariants: the parsers and the decision are pure and never panic on what the kernel (or
//! a hostile file) writes; the guard kills only the processes listed in a job's own cgroup;
//! it stops nothing unless its caller's gate allows that stop; it reads no clock (`now_ms`
//! is given) and no environment.

pub mod cgroup;
pub mod decide;
pub mod guard;
pub mod read;
pub mod spec;

pub use cgroup::{CgroupError, Cgroups, JobCgroup, Located, Unavailable, Version};
pub use decide::{Cause, JobReading, PressureWindow, Stop, decide, low_memory, victim};
pub use guard::{
    DECLINED_FOR, Ended, Guard, GuardError, Killed, Notice, Outcome, Placement, StopGate, Tick,
    dir_name,
};
pub use read::{MemInfo, Psi, PsiLine, ReadError, parse_meminfo, parse_psi};
pub use spec::{GuardConfig, JobKind, JobLimits, JobLimitsFile, Level, Percent, PressureRule};
