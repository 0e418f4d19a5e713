//! Cgroups through cgroupfs: which hierarchy can hold the guard's jobs, a job's cgroup with
//! its limits, and what it holds, uses and how to end it.
//!
//! Jobs go under the daemon's own cgroup, `<ours>/nightwatch/<job>`, so a unit's limits and
//! accounting still cover them. cgroup v2 is used when the memory controller is available
//! to the daemon's cgroup; else cgroup v1's memory hierarchy (and the cpu hierarchy for CPU
//! limits, when mounted); else there is no guard, and [`Unavailable`] says why.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::read::{Psi, flat_counter, parse_psi};
use crate::spec::JobLimits;

/// The directory under the daemon's cgroup that holds the jobs' cgroups.
pub const NIGHTWATCH_DIR: &str = "nightwatch";
/// Under cgroup v2, where the daemon's own processes move when its cgroup must give up
/// holding processes to hand controllers to its children (the no-internal-process rule).
pub const DAEMON_LEAF: &str = "daemon";
/// CFS period for CPU limits: 100 ms, the kernel's default.
const CPU_PERIOD_US: u64 = 100_000;

/// Why no cgroup can hold a job here.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no memory guard can be set up: {0}")]
pub struct Unavailable(pub String);

/// Why a job's cgroup could not be made, read or ended.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("{0}")]
    Other(String),
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> CgroupError + 'a {
    move |source| CgroupError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// Which cgroup interface a job's cgroup is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Where this process's cgroups are, read from `/proc/self/mountinfo` and
/// `/proc/self/cgroup`. Pure; [`Cgroups::detect`] does the rest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Located {
    /// Our cgroup's directory in the v2 hierarchy.
    pub v2: Option<PathBuf>,
    /// Our cgroup's directory in the v1 memory hierarchy.
    pub v1_memory: Option<PathBuf>,
    /// Our cgroup's directory in the v1 cpu hierarchy.
    pub v1_cpu: Option<PathBuf>,
}

/// A mountinfo field with the kernel's octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let value = bytes[i + 1..i + 4]
                .iter()
                .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
            if let Ok(byte) = u8::try_from(value) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A cgroup path (from `/proc/self/cgroup`) under a mount of root `root` at `mountpoint`.
fn under_mount(mountpoint: &str, root: &str, path: &str) -> PathBuf {
    // Without a cgroup namespace the path starts with the mount's root; inside one (or with
    // the root mounted) it is already relative to it.
    let rest = if root != "/" {
        path.strip_prefix(root).unwrap_or(path)
    } else {
        path
    };
    let rest = rest.trim_start_matches('/');
    // A path that climbs out (`..`) is not ours to follow.
    if rest.split('/').any(|c| c == "..") {
        return PathBuf::from(mountpoint);
    }
    Path::new(mountpoint).join(rest)
}

impl Located {
    /// Reads the two files' text.
    pub fn from(mountinfo: &str, self_cgroup: &str) -> Located {
        let mut v2_path = None;
        let mut v1_paths: Vec<(Vec<&str>, &str)> = Vec::new();
        for line in self_cgroup.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_), Some(controllers), Some(path)) =
                (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if controllers.is_empty() {
                v2_path = Some(path);
            } else {
                v1_paths.push((controllers.split(',').collect(), path));
            }
        }
        let v1_path = |controller: &str| {
            v1_paths
                .iter()
                .find(|(cs, _)| cs.contains(&controller))
                .map(|(_, p)| *p)
        };
        let mut located = Located::default();
        for line in mountinfo.lines() {
            let Some((before, after)) = line.split_once(" - ") else {
                continue;
            };
            let fields: Vec<&str> = before.split(' ').collect();
            let after: Vec<&str> = after.split(' ').collect();
            let (Some(root), Some(mountpoint), Some(fstype)) =
                (fields.get(3), fields.get(4), after.first())
            else {
                continue;
            };
            let (root, mountpoint) = (unescape(root), unescape(mountpoint));
            match *fstype {
                "cgroup2" => {
                    if let Some(path) = v2_path
                        && located.v2.is_none()
                    {
                        located.v2 = Some(under_mount(&mountpoint, &root, path));
                    }
                }
                "cgroup" => {
                    let options: Vec<&str> =
                        after.get(2).map_or(Vec::new(), |o| o.split(',').collect());
                    for (controller, slot) in [
                        ("memory", &mut located.v1_memory),
                        ("cpu", &mut located.v1_cpu),
                    ] {
                        if slot.is_none()
                            && options.contains(&controller)
                            && let Some(path) = v1_path(controller)
                        {
                            *slot = Some(under_mount(&mountpoint, &root, path));
                        }
                    }
                }
                _ => {}
            }
        }
        located
    }
}

/// The hierarchy the guard's jobs go in.
#[derive(Clone, Debug)]
pub struct Cgroups {
    version: Version,
    /// `<ours>/nightwatch` in the memory hierarchy (v2: the one hierarchy).
    memory_base: PathBuf,
    /// v1 only: `<ours>/nightwatch` in the cpu hierarchy, when it could be made.
    cpu_base: Option<PathBuf>,
    /// v2 only: whether the cpu controller is enabled for the jobs.
    v2_cpu: bool,
    /// What could not be had, though the guard works (a CPU limit without its controller).
    pub notes: Vec<String>,
}

impl Cgroups {
    /// Finds a hierarchy the daemon may make cgroups in, and makes `<ours>/nightwatch` there.
    pub fn detect() -> Result<Cgroups, Unavailable> {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .map_err(|e| Unavailable(format!("cannot read {path}: {e}")))
        };
        let located = Located::from(&read("/proc/self/mountinfo")?, &read("/proc/self/cgroup")?);
        Cgroups::set_up(&located)
    }

    /// Sets up the guard's directory under `located`: v2 first, else v1.
    pub fn set_up(located: &Located) -> Result<Cgroups, Unavailable> {
        let mut why = Vec::new();
        match &located.v2 {
            Some(ours) => match set_up_v2(ours) {
                Ok(cgroups) => return Ok(cgroups),
                Err(e) => why.push(format!("cgroup v2: {e}")),
            },
            None => why.push("cgroup v2 is not mounted".to_owned()),
        }
        match &located.v1_memory {
            Some(ours) => match set_up_v1(ours, located.v1_cpu.as_deref()) {
                Ok(cgroups) => return Ok(cgroups),
                Err(e) => why.push(format!("cgroup v1: {e}")),
            },
            None => why.push("cgroup v1's memory hierarchy is not mounted".to_owned()),
        }
        Err(Unavailable(why.join("; ")))
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// Where the jobs' cgroups go, for records.
    pub fn describe(&self) -> String {
        match self.version {
            Version::V2 => format!(
                "cgroup v2 at {} (memory{})",
                self.memory_base.display(),
                if self.v2_cpu { ", cpu" } else { "" }
            ),
            Version::V1 => format!(
                "cgroup v1 at {}{}",
                self.memory_base.display(),
                self.cpu_base
                    .as_ref()
                    .map(|c| format!(" and {}", c.display()))
                    .unwrap_or_else(|| " (no cpu hierarchy: CPU limits are not applied)".into())
            ),
        }
    }

    /// Makes `job`'s cgroup (`dir`, a name already safe for a path) with `limits`. A cgroup
    /// of that name left by an earlier run is reused when it holds no process.
    pub fn create(&self, dir: &str, limits: &JobLimits) -> Result<JobCgroup, CgroupError> {
        let memory_dir = self.memory_base.join(dir);
        let cpu_dir = self.cpu_base.as_ref().map(|b| b.join(dir));
        let mut made = Vec::new();
        for d in std::iter::once(&memory_dir).chain(cpu_dir.as_ref()) {
            match std::fs::create_dir(d) {
                Ok(()) => made.push(d.clone()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    if !pids_in(d).map_err(io_err("cannot read", d))?.is_empty() {
                        return Err(CgroupError::Other(format!(
                            "{} already holds processes (another job of that name?)",
                            d.display()
                        )));
                    }
                }
                Err(e) => return Err(io_err("cannot create", d)(e)),
            }
        }
        let job = JobCgroup {
            version: self.version,
            procs: std::iter::once(&memory_dir)
                .chain(cpu_dir.as_ref())
                .map(|d| procs_file(d))
                .collect::<Result<_, _>>()?,
            memory_dir,
            cpu_dir,
            limit: limits.memory.0,
            notes: Vec::new(),
        };
        match job.apply(limits, self) {
            Ok(notes) => Ok(JobCgroup { notes, ..job }),
            Err(e) => {
                for d in made {
                    let _ = std::fs::remove_dir(d);
                }
                Err(e)
            }
        }
    }

    /// Removes the empty cgroups that processes no longer running left (a crash between a
    /// job's start and its end); how many. A cgroup still holding processes, or made by a
    /// process that still runs (its name ends `-p<pid>g<n>`: a job's cgroup is empty between
    /// its creation and its child's entry), is left alone.
    pub fn remove_leftovers(&self) -> usize {
        let mut removed = 0;
        for base in std::iter::once(&self.memory_base).chain(self.cpu_base.as_ref()) {
            let Ok(entries) = std::fs::read_dir(base) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                let maker_runs = maker_pid(&name)
                    .is_some_and(|pid| Path::new("/proc").join(pid.to_string()).exists());
                if path.is_dir()
                    && !maker_runs
                    && pids_in(&path).is_ok_and(|p| p.is_empty())
                    && std::fs::remove_dir(&path).is_ok()
                {
                    removed += 1;
                }
            }
        }
        removed
    }
}

/// The pid of the process whose guard made the job cgroup `name` (`job-...-p<pid>g<n>`).
fn maker_pid(name: &str) -> Option<u32> {
    let (_, tail) = name.rsplit_once("-p")?;
    let (pid, n) = tail.split_once('g')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

fn procs_file(dir: &Path) -> Result<CString, CgroupError> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(dir.join("cgroup.procs").as_os_str().as_bytes())
        .map_err(|_| CgroupError::Other(format!("{} holds a NUL byte", dir.display())))
}

fn set_up_v2(ours: &Path) -> Result<Cgroups, String> {
    let controllers_file = ours.join("cgroup.controllers");
    let controllers = std::fs::read_to_string(&controllers_file)
        .map_err(|e| format!("cannot read {}: {e}", controllers_file.display()))?;
    let available: Vec<&str> = controllers.split_whitespace().collect();
    if !available.contains(&"memory") {
        return Err(format!(
            "the memory controller is not available to {} (its cgroup.controllers: {:?}; on a \
             hybrid layout v1 holds it)",
            ours.display(),
            controllers.trim()
        ));
    }
    let cpu = available.contains(&"cpu");
    let wanted = if cpu { "+memory +cpu" } else { "+memory" };
    let subtree = ours.join("cgroup.subtree_control");
    if let Err(e) = std::fs::write(&subtree, wanted) {
        // EBUSY: our cgroup holds processes, and v2 lets only a cgroup without any hand
        // controllers down. Move them to a leaf of their own (as systemd's delegation
        // expects) and try once more.
        if e.raw_os_error() != Some(libc::EBUSY) {
            return Err(format!(
                "cannot write {wanted:?} to {}: {e}",
                subtree.display()
            ));
        }
        let leaf = ours.join(DAEMON_LEAF);
        match std::fs::create_dir(&leaf) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot create {}: {e}", leaf.display())),
        }
        for pid in pids_in(ours).map_err(|e| format!("cannot read {}: {e}", ours.display()))? {
            std::fs::write(leaf.join("cgroup.procs"), pid.to_string()).map_err(|e| {
                format!(
                    "{} holds processes, so controllers cannot be handed to its children, \
                     and process {pid} could not be moved to {}: {e}",
                    ours.display(),
                    leaf.display()
                )
            })?;
        }
        std::fs::write(&subtree, wanted)
            .map_err(|e| format!("cannot write {wanted:?} to {}: {e}", subtree.display()))?;
    }
    let base = ours.join(NIGHTWATCH_DIR);
    match std::fs::create_dir(&base) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", base.display())),
    }
    let base_subtree = base.join("cgroup.subtree_control");
    std::fs::write(&base_subtree, wanted)
        .map_err(|e| format!("cannot write {wanted:?} to {}: {e}", base_subtree.display()))?;
    let mut notes = Vec::new();
    if !cpu {
        notes.push(format!(
            "the cpu controller is not available to {}: CPU limits are not applied",
            ours.display()
        ));
    }
    Ok(Cgroups {
        version: Version::V2,
        memory_base: base,
        cpu_base: None,
        v2_cpu: cpu,
        notes,
    })
}

fn set_up_v1(memory: &Path, cpu: Option<&Path>) -> Result<Cgroups, String> {
    let base = memory.join(NIGHTWATCH_DIR);
    match std::fs::create_dir(&base) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", base.display())),
    }
    if !base.join("memory.limit_in_bytes").exists() {
        return Err(format!(
            "{} has no memory.limit_in_bytes: not a memory cgroup",
            base.display()
        ));
    }
    let mut notes = Vec::new();
    let cpu_base = match cpu {
        None => {
            notes.push(
                "cgroup v1's cpu hierarchy is not mounted: CPU limits are not applied".into(),
            );
            None
        }
        Some(cpu) => {
            let base = cpu.join(NIGHTWATCH_DIR);
            match std::fs::create_dir(&base) {
                Ok(()) => Some(base),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Some(base),
                Err(e) => {
                    notes.push(format!(
                        "cannot create {}: {e}; CPU limits are not applied",
                        base.display()
                    ));
                    None
                }
            }
        }
    };
    Ok(Cgroups {
        version: Version::V1,
        memory_base: base,
        cpu_base,
        v2_cpu: false,
        notes,
    })
}

/// The processes in the cgroup at `dir`.
fn pids_in(dir: &Path) -> io::Result<Vec<i32>> {
    let text = std::fs::read_to_string(dir.join("cgroup.procs"))?;
    Ok(text.lines().filter_map(|l| l.trim().parse().ok()).collect())
}

/// One job's cgroup.
#[derive(Debug)]
pub struct JobCgroup {
    version: Version,
    memory_dir: PathBuf,
    cpu_dir: Option<PathBuf>,
    /// Every `cgroup.procs` the job's process enters, ready before a fork.
    procs: Vec<CString>,
    limit: u64,
    /// Limits asked for that could not be applied.
    pub notes: Vec<String>,
}

impl JobCgroup {
    fn apply(&self, limits: &JobLimits, cgroups: &Cgroups) -> Result<Vec<String>, CgroupError> {
        let mut notes = Vec::new();
        let write = |dir: &Path, file: &str, value: String| {
            let path = dir.join(file);
            std::fs::write(&path, value).map_err(io_err("cannot write", &path))
        };
        let quota = |cpu: crate::spec::Percent| -> u64 {
            ((cpu.0 / 100.0) * CPU_PERIOD_US as f64).round().max(1000.0) as u64
        };
        match self.version {
            Version::V2 => {
                write(&self.memory_dir, "memory.max", limits.memory.0.to_string())?;
                // The guard stops a job before it swaps its host to a crawl.
                let _ = write(&self.memory_dir, "memory.swap.max", "0".into());
                match limits.cpu {
                    Some(cpu) if cgroups.v2_cpu => write(
                        &self.memory_dir,
                        "cpu.max",
                        format!("{} {CPU_PERIOD_US}", quota(cpu)),
                    )?,
                    Some(cpu) => notes.push(format!(
                        "cpu {cpu} not applied: no cpu controller for the jobs"
                    )),
                    None => {}
                }
            }
            Version::V1 => {
                write(
                    &self.memory_dir,
                    "memory.limit_in_bytes",
                    limits.memory.0.to_string(),
                )?;
                match (limits.cpu, &self.cpu_dir) {
                    (Some(cpu), Some(dir)) => {
                        write(dir, "cpu.cfs_period_us", CPU_PERIOD_US.to_string())?;
                        write(dir, "cpu.cfs_quota_us", quota(cpu).to_string())?;
                    }
                    (Some(cpu), None) => notes.push(format!(
                        "cpu {cpu} not applied: no cpu hierarchy for the jobs"
                    )),
                    (None, _) => {}
                }
            }
        }
        Ok(notes)
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// Its directory in the memory hierarchy.
    pub fn dir(&self) -> &Path {
        &self.memory_dir
    }

    /// Its memory limit in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// A `pre_exec` step that moves the child into this cgroup before it execs, so the job
    /// never runs a moment outside it. It only calls `getpid`, `open`, `write` and `close`,
    /// which are safe between fork and exec, and allocates nothing.
    pub fn enter_hook(&self) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
        let files = self.procs.clone();
        move || {
            // SAFETY: getpid has no preconditions.
            let pid = unsafe { libc::getpid() };
            for file in &files {
                write_pid(file, pid)?;
            }
            Ok(())
        }
    }

    /// Moves process `pid` into this cgroup (a process started some other way).
    pub fn add(&self, pid: u32) -> io::Result<()> {
        let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::other("pid out of range"))?;
        for file in &self.procs {
            write_pid(file, pid)?;
        }
        Ok(())
    }

    /// Its CPU limit as the kernel holds it, `quota period` in microseconds (`max` for none);
    /// `None` when it has no CPU controller.
    pub fn cpu_max(&self) -> Option<String> {
        let read = |dir: &Path, file: &str| std::fs::read_to_string(dir.join(file)).ok();
        match self.version {
            Version::V2 => read(&self.memory_dir, "cpu.max").map(|t| t.trim().to_owned()),
            Version::V1 => {
                let dir = self.cpu_dir.as_deref()?;
                let quota = read(dir, "cpu.cfs_quota_us")?;
                let period = read(dir, "cpu.cfs_period_us")?;
                Some(format!("{} {}", quota.trim(), period.trim()))
            }
        }
    }

    /// The processes in it.
    pub fn pids(&self) -> io::Result<Vec<i32>> {
        pids_in(&self.memory_dir)
    }

    /// Bytes charged to it now.
    pub fn usage(&self) -> io::Result<u64> {
        let file = match self.version {
            Version::V2 => "memory.current",
            Version::V1 => "memory.usage_in_bytes",
        };
        let text = std::fs::read_to_string(self.memory_dir.join(file))?;
        text.trim()
            .parse()
            .map_err(|_| io::Error::other(format!("{file}: {:?} is not a number", text.trim())))
    }

    /// How many times the kernel's OOM killer killed in it (v1 `memory.oom_control`, v2
    /// `memory.events`).
    pub fn oom_kills(&self) -> Option<u64> {
        let (file, key) = match self.version {
            Version::V2 => ("memory.events", "oom_kill"),
            Version::V1 => ("memory.oom_control", "oom_kill"),
        };
        let text = std::fs::read_to_string(self.memory_dir.join(file)).ok()?;
        flat_counter(&text, key)
    }

    /// Its own memory pressure (v2 only).
    pub fn pressure(&self) -> Option<Psi> {
        if self.version != Version::V2 {
            return None;
        }
        let text = std::fs::read_to_string(self.memory_dir.join("memory.pressure")).ok()?;
        parse_psi(&text).ok()
    }

    /// Kills every process in it and waits until it is empty (`within` at most); how many
    /// processes were signalled. v2 with `cgroup.kill` ends them all at once; otherwise each
    /// pid listed is sent SIGKILL, again until none is left (a fork in between is caught on
    /// the next round).
    pub fn kill_all(&self, within: Duration) -> Result<usize, CgroupError> {
        let deadline = Instant::now() + within;
        let kill_file = self.memory_dir.join("cgroup.kill");
        let mut signalled = std::collections::BTreeSet::new();
        if self.version == Version::V2 && kill_file.exists() {
            let before = self
                .pids()
                .map_err(io_err("cannot read", &self.memory_dir))?;
            std::fs::write(&kill_file, "1").map_err(io_err("cannot write", &kill_file))?;
            signalled.extend(before);
        }
        loop {
            let pids = match self.pids() {
                Ok(pids) => pids,
                // Removed meanwhile (its job ended and was finished): nothing is left in it.
                Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(io_err("cannot read", &self.memory_dir)(e)),
            };
            if pids.is_empty() {
                return Ok(signalled.len());
            }
            if Instant::now() >= deadline {
                return Err(CgroupError::Other(format!(
                    "{} still holds {} process(es) after {} ms",
                    self.memory_dir.display(),
                    pids.len(),
                    within.as_millis()
                )));
            }
            for pid in pids {
                // SAFETY: a signal to a pid the kernel listed in this job's cgroup.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
                signalled.insert(pid);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Removes it once empty, waiting `within` at most for the kernel to let go.
    pub fn remove(&self, within: Duration) -> Result<(), CgroupError> {
        let deadline = Instant::now() + within;
        for dir in std::iter::once(&self.memory_dir).chain(self.cpu_dir.as_ref()) {
            loop {
                match std::fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                    Err(e) if Instant::now() >= deadline => {
                        return Err(io_err("cannot remove", dir)(e));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
        Ok(())
    }
}

/// Writes `pid` to the `cgroup.procs` file at `path`: async-signal-safe calls only, no
/// allocation (it runs in a forked child).
fn write_pid(path: &std::ffi::CStr, pid: libc::pid_t) -> io::Result<()> {
    let mut digits = [0u8; 12];
    let mut at = digits.len();
    let mut n = u32::try_from(pid).unwrap_or(0);
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // SAFETY: `path` is a NUL-terminated string that outlives the call; the buffer is ours.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let len = digits.len() - at;
        let written = libc::write(fd, digits[at..].as_ptr().cast(), len);
        let error = (written != len as isize).then(io::Error::last_os_error);
        libc::close(fd);
        match error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID_MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const HYBRID_SELF: &str = "\
9:name=systemd:/
4:memory:/process_api/f71c9b07
2:cpuacct:/
1:cpu:/
0::/
";

    #[test]
    fn a_hybrid_layout_finds_both_hierarchies() {
        let l = Located::from(HYBRID_MOUNTS, HYBRID_SELF);
        assert_eq!(l.v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(
            l.v1_memory,
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/f71c9b07"))
        );
        assert_eq!(l.v1_cpu, Some(PathBuf::from("/sys/fs/cgroup/cpu")));
    }

    #[test]
    fn a_unified_layout_under_systemd_finds_the_service() {
        let mounts = "29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        let me = "0::/system.slice/nightwatch.service\n";
        let l = Located::from(mounts, me);
        assert_eq!(
            l.v2,
            Some(PathBuf::from(
                "/sys/fs/cgroup/system.slice/nightwatch.service"
            ))
        );
        assert_eq!(l.v1_memory, None);
    }

    #[test]
    fn combined_v1_controllers_and_a_mount_root_are_followed() {
        let mounts = "\
40 31 0:37 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct
41 31 0:38 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory
42 31 0:39 / /mnt/with\\040space rw - cgroup2 cgroup2 rw
";
        let me = "3:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc/inner\n0::/x\n";
        let l = Located::from(mounts, me);
        assert_eq!(l.v1_cpu, Some(PathBuf::from("/sys/fs/cgroup/cpu,cpuacct")));
        assert_eq!(
            l.v1_memory,
            Some(PathBuf::from("/sys/fs/cgroup/memory/inner"))
        );
        assert_eq!(l.v2, Some(PathBuf::from("/mnt/with space/x")));
    }

    #[test]
    fn hostile_files_locate_nothing_or_stay_inside_the_mount() {
        assert_eq!(Located::from("", ""), Located::default());
        assert_eq!(
            Located::from("garbage\n - \n", "::\n:::\n"),
            Located::default()
        );
        let climbing = Located::from(
            "41 31 0:38 / /sys/fs/cgroup cgroup2 - cgroup2 cgroup2 rw\n",
            "0::/../../etc\n",
        );
        assert_eq!(climbing.v2, Some(PathBuf::from("/sys/fs/cgroup")));
    }

    #[test]
    fn a_leftovers_maker_is_read_from_its_name() {
        assert_eq!(maker_pid("job-disk-t1-a1-p4242g0"), Some(4242));
        assert_eq!(maker_pid("job-x-p-1g0"), None);
        assert_eq!(maker_pid("job-x"), None);
        assert_eq!(maker_pid("job-x-p12gz"), None);
    }

    #[test]
    fn no_hierarchy_says_why() {
        let err = Cgroups::set_up(&Located::default()).unwrap_err();
        assert!(err.0.contains("v2 is not mounted"), "{err}");
        assert!(err.0.contains("memory hierarchy is not mounted"), "{err}");
    }
}
