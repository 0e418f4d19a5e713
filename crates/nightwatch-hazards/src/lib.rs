//! Host hazards: what is quietly wrong on a host before it breaks, each with its fix.
//!
//! Seed 001's agent VM ran out of memory with earlyoom as its last line, was one reboot away
//! from cloud-init re-provisioning it with new host keys, and every restored VM of seed 000
//! woke up in the past. Nothing was broken, so nothing said so. [`scan`] looks for those
//! conditions and answers one [`Check`] per thing it looked at: found, ok, or unknown (it
//! could not tell, and says why: never a silent pass).
//!
//! | id                         | looks at                                                        |
//! |----------------------------|-----------------------------------------------------------------|
//! | `cloud-init-reprovision`   | cloud-init installed and enabled, its per-instance settings, the cached and current instance ids |
//! | `unattended-reboot`        | `/etc/apt/apt.conf.d/*` + `apt.conf`: `Unattended-Upgrade::Automatic-Reboot` with `APT::Periodic::Unattended-Upgrade` |
//! | `no-memory-guard`          | earlyoom, systemd-oomd or nohang running (`/proc/*/comm`) or enabled (`/etc/systemd/system/*.wants/`) |
//! | `clock-unsynchronised`     | `timedatectl show` (or `status` on an older systemd)            |
//! | `clock-skew`               | HTTP `Date` headers of configured URLs; a reference clock the caller read |
//! | `clock-jump-backwards`     | the wall clock against the monotonic clock since the caller's last reading |
//! | `disk-near-full`           | blocks and inodes of each real filesystem in `/proc/self/mounts` |
//! | `docker-unbounded-logs`    | `/etc/docker/daemon.json`'s log driver and `log-opts.max-size`  |
//!
//! Design: every judgement is a pure function of text or plain facts in its own module
//! ([`apt`] and [`unattended`], [`cloud_init`], [`memory`], [`clock`], [`disk`], [`docker`]),
//! so the hostile corpora and property tests reach them without a host. [`scan`] (the
//! `scan` module) is the only I/O: it reads files under [`Options::root`] (a temp directory
//! in tests, `/` on a host), runs `timedatectl`, asks `statvfs`, and sends the HTTP requests.
//! It reads no clock: "now" is the caller's (`now_ms`, from the host's one clock); only the
//! monotonic [`std::time::Instant`] is read here, to time requests and to compare with the
//! caller's last reading. Nothing here connects to a database: the fleet database's clock
//! reaches [`scan`] as a number the caller read ([`Options::reference_clock_ms`]).
//!
//! A check whose input is not configured (no `Date` URLs, no reference clock, no earlier
//! reading) is not run and yields no [`Check`]; a check named in [`Options::ignore`] is not
//! run either.

pub mod apt;
pub mod clock;
pub mod cloud_init;
pub mod disk;
pub mod docker;
pub mod memory;
mod scan;
pub mod unattended;

pub use scan::scan;

use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The hazards, by their stable ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hazard {
    /// cloud-init would treat the host as a new instance and re-provision it (new host keys,
    /// packages upgraded at boot).
    CloudInitReprovision,
    /// unattended-upgrades reboots the host by itself.
    UnattendedReboot,
    /// Nothing stops a runaway process before the kernel's OOM killer picks a victim.
    NoMemoryGuard,
    /// The system clock is not synchronised (or NTP is off).
    ClockUnsynchronised,
    /// The clock differs from another clock by more than the allowed skew.
    ClockSkew,
    /// The wall clock lost time against the monotonic clock (it was set back).
    ClockJumpBackwards,
    /// A filesystem's blocks or inodes are nearly all used.
    DiskNearFull,
    /// The Docker daemon keeps container logs without a size limit.
    DockerUnboundedLogs,
}

impl Hazard {
    pub const ALL: [Hazard; 8] = [
        Hazard::CloudInitReprovision,
        Hazard::UnattendedReboot,
        Hazard::NoMemoryGuard,
        Hazard::ClockUnsynchronised,
        Hazard::ClockSkew,
        Hazard::ClockJumpBackwards,
        Hazard::DiskNearFull,
        Hazard::DockerUnboundedLogs,
    ];

    /// The stable id (`disk-near-full`): an alert's identity and what `ignore` names.
    pub fn id(self) -> &'static str {
        match self {
            Hazard::CloudInitReprovision => "cloud-init-reprovision",
            Hazard::UnattendedReboot => "unattended-reboot",
            Hazard::NoMemoryGuard => "no-memory-guard",
            Hazard::ClockUnsynchronised => "clock-unsynchronised",
            Hazard::ClockSkew => "clock-skew",
            Hazard::ClockJumpBackwards => "clock-jump-backwards",
            Hazard::DiskNearFull => "disk-near-full",
            Hazard::DockerUnboundedLogs => "docker-unbounded-logs",
        }
    }
}

impl std::fmt::Display for Hazard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// An id that names no hazard.
#[derive(Debug, thiserror::Error)]
#[error("{given:?} is not a hazard; the hazards are {}", known_ids())]
pub struct UnknownHazard {
    pub given: String,
}

fn known_ids() -> String {
    Hazard::ALL.map(Hazard::id).join(", ")
}

impl FromStr for Hazard {
    type Err = UnknownHazard;

    fn from_str(text: &str) -> Result<Hazard, UnknownHazard> {
        Hazard::ALL
            .into_iter()
            .find(|h| h.id() == text)
            .ok_or_else(|| UnknownHazard {
                given: text.to_owned(),
            })
    }
}

/// What a look made of its subject: a hazard check's here, and every watcher's probe
/// (`nightwatch-watch` says it in these words too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Seen {
    /// Looked, and all is as it should be: the hazard is not there.
    Ok,
    /// Something is wrong: the hazard is there.
    Found,
    /// Could not tell (a file unreadable, a command missing or failing); `what` says why.
    /// Not a pass.
    Unknown,
}

impl Seen {
    pub fn as_str(self) -> &'static str {
        match self {
            Seen::Ok => "ok",
            Seen::Found => "found",
            Seen::Unknown => "unknown",
        }
    }
}

/// One thing looked at, and what was seen.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    pub hazard: Hazard,
    /// Stable from run to run: the mount point, the URL, `cloud-init`.
    pub subject: String,
    pub seen: Seen,
    /// One line a person reads: what is wrong, or what was seen.
    pub what: String,
    /// What to do about it (also given for ok and unknown checks, for the record).
    pub fix: String,
    /// What was compared, as found.
    pub evidence: serde_json::Value,
}

impl Check {
    pub(crate) fn new(
        hazard: Hazard,
        subject: impl Into<String>,
        seen: Seen,
        what: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            hazard,
            subject: subject.into(),
            seen,
            what: what.into(),
            fix: fix.into(),
            evidence: serde_json::Value::Null,
        }
    }

    pub(crate) fn with(mut self, evidence: serde_json::Value) -> Check {
        self.evidence = evidence;
        self
    }

    /// The hazard's id.
    pub fn id(&self) -> &'static str {
        self.hazard.id()
    }
}

/// The default `disk_full_percent`.
pub const DEFAULT_DISK_FULL_PERCENT: u8 = 90;
/// The default `max_skew`.
pub const DEFAULT_MAX_SKEW: Duration = Duration::from_secs(2);
/// The default time one HTTP request or one `timedatectl` run may take.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What to look at, and the thresholds.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where the host's files are: `/`, or a directory laid out like one (tests). Every file
    /// (`etc/...`, `proc/...`, `var/...`, `run/...`) and every mount point is read under it.
    pub root: PathBuf,
    /// A filesystem whose blocks or inodes are this percent used or more is near full.
    pub disk_full_percent: u8,
    /// How far a clock may be from another before it is skew (beyond the measurement's own
    /// uncertainty), and how much time the wall clock may lose against the monotonic one.
    pub max_skew: Duration,
    /// URLs whose `Date` header is compared with now (a HEAD request each).
    pub date_urls: Vec<String>,
    /// A reference clock's time as the caller read it just before the scan (the fleet
    /// database's `now()`), Unix milliseconds.
    pub reference_clock_ms: Option<i64>,
    /// The caller's previous reading: the wall clock then (Unix ms) and the monotonic instant
    /// it was read at. Compared with `now_ms` and the monotonic time since.
    pub last_seen: Option<(i64, Instant)>,
    /// The `timedatectl` program; `None` skips asking it (a root that is not this host's).
    pub timedatectl: Option<PathBuf>,
    /// How long one HTTP request or one `timedatectl` run may take.
    pub probe_timeout: Duration,
    /// Hazards not to look for.
    pub ignore: Vec<Hazard>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            root: PathBuf::from("/"),
            disk_full_percent: DEFAULT_DISK_FULL_PERCENT,
            max_skew: DEFAULT_MAX_SKEW,
            date_urls: Vec::new(),
            reference_clock_ms: None,
            last_seen: None,
            timedatectl: Some(PathBuf::from("timedatectl")),
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            ignore: Vec::new(),
        }
    }
}

impl Options {
    /// The defaults, looking at the host under `root`.
    pub fn at(root: impl Into<PathBuf>) -> Options {
        Options {
            root: root.into(),
            ..Options::default()
        }
    }

    pub(crate) fn looks_for(&self, hazard: Hazard) -> bool {
        !self.ignore.contains(&hazard)
    }
}

/// Whether any check found a hazard.
pub fn any_found(checks: &[Check]) -> bool {
    checks.iter().any(|c| c.seen == Seen::Found)
}

/// Milliseconds of a duration as i64, saturating.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
