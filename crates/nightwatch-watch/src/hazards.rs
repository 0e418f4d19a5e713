//! The host's hazards as a watcher: `nightwatch hazards` on a schedule, each check an
//! observation, so a hazard that appears is raised and one that clears is recorded.
//!
//! ```yaml
//! watch:
//!   watchers:
//!     host-hazards:
//!       every: 15m
//!       hazards:
//!         disk_full_percent: 85       # default 90
//!         max_skew: 2s                # default 2s
//!         date_urls: [https://www.debian.org/]
//!         ignore: [unattended-reboot] # hazard ids not to look for
//!         # root: /                   # another root: a host's files mounted elsewhere
//!         # timedatectl: /usr/bin/timedatectl
//! ```
//!
//! Between runs the watcher keeps the wall clock it saw and the monotonic instant it saw it
//! at, so a clock set back between two runs is found (`clock-jump-backwards`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nightwatch_hazards::{Hazard, Options};
use serde::{Deserialize, Deserializer};

use crate::{Env, Observation};

/// A `hazards:` watcher as written in serve.yaml.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HazardSpec {
    /// Where the host's files are (default `/`).
    pub root: Option<PathBuf>,
    /// Percent of space or inodes used that is near full (default 90).
    #[serde(default, deserialize_with = "percent")]
    pub disk_full_percent: Option<u8>,
    /// How far the clock may be from another (default 2s).
    #[serde(default, deserialize_with = "duration")]
    pub max_skew: Option<Duration>,
    /// Servers whose HTTP `Date` the clock is compared with.
    #[serde(default)]
    pub date_urls: Vec<String>,
    /// Hazards not to look for, by id.
    #[serde(default)]
    pub ignore: Vec<Hazard>,
    /// The `timedatectl` program (default: `timedatectl` when the root is `/`; not asked
    /// under another root, whose clock it would not know).
    pub timedatectl: Option<PathBuf>,
    /// The last run's wall clock (Unix ms) and the monotonic instant it was read at. Shared
    /// by clones: they are one watcher.
    #[serde(skip)]
    last_seen: Arc<Mutex<Option<(i64, Instant)>>>,
}

fn percent<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u8>, D::Error> {
    let value = u64::deserialize(deserializer)?;
    match u8::try_from(value) {
        Ok(p) if p <= 100 => Ok(Some(p)),
        _ => Err(serde::de::Error::custom(format!(
            "{value} is not a percent (0 to 100)"
        ))),
    }
}

fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    nightwatch_time::serde::duration(deserializer).map(Some)
}

impl HazardSpec {
    /// What this spec asks `scan` for, with the last run's reading.
    fn options(&self, env: &Env<'_>) -> Options {
        let root = self.root.clone().unwrap_or_else(|| PathBuf::from("/"));
        let timedatectl = match &self.timedatectl {
            Some(program) => Some(program.clone()),
            None if root == std::path::Path::new("/") => Some(PathBuf::from("timedatectl")),
            None => None,
        };
        let defaults = Options::default();
        Options {
            root,
            disk_full_percent: self.disk_full_percent.unwrap_or(defaults.disk_full_percent),
            max_skew: self.max_skew.unwrap_or(defaults.max_skew),
            date_urls: self.date_urls.clone(),
            reference_clock_ms: env.reference_clock_ms,
            last_seen: *self
                .last_seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
            timedatectl,
            probe_timeout: defaults.probe_timeout.min(env.timeout),
            ignore: self.ignore.clone(),
        }
    }

    /// One run: every check `nightwatch hazards` makes, as observations (subject
    /// `"<id>: <subject>"`), and the clock remembered for the next run's jump check.
    pub fn run(&self, env: &Env<'_>) -> Vec<Observation> {
        let read_at = Instant::now();
        let options = self.options(env);
        let checks = nightwatch_hazards::scan(&options, env.now_ms);
        *self
            .last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((env.now_ms, read_at));
        checks
            .into_iter()
            .map(|check| {
                let summary = if check.fix.is_empty() {
                    check.what.clone()
                } else {
                    format!("{} — fix: {}", check.what, check.fix)
                };
                Observation::new(
                    format!("{}: {}", check.id(), check.subject),
                    check.seen,
                    summary,
                )
                .with_details(check.evidence)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Seen;

    struct NoDatabases;

    impl crate::Databases for NoDatabases {
        fn returns_row(&self, _: &str, _: &str, _: Duration) -> Result<bool, String> {
            Err("none".into())
        }
    }

    fn run(spec: &HazardSpec, now_ms: i64) -> Vec<Observation> {
        let ledger = nightwatch_store::memory::MemoryLedger::new();
        let env = Env {
            now_ms,
            ledger: &ledger,
            databases: &NoDatabases,
            containers: &crate::NoContainers,
            timeout: Duration::from_secs(10),
            reference_clock_ms: None,
        };
        spec.run(&env)
    }

    /// A directory laid out like a host's root, removed when dropped.
    struct Root(PathBuf);

    impl Root {
        fn new(name: &str) -> Root {
            let dir = std::env::temp_dir().join(format!(
                "nightwatch-watch-hazards-{name}-{}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Root(dir)
        }

        fn write(&self, path: &str, text: &str) {
            let full = self.0.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
    }

    impl Drop for Root {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn spec(yaml: &str) -> Result<HazardSpec, String> {
        yaml_serde::from_str(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn the_spec_reads_with_defaults_and_refuses_what_is_wrong() {
        let empty = spec("{}").unwrap();
        assert!(empty.root.is_none() && empty.ignore.is_empty());
        let full = spec(
            "root: /srv/host\ndisk_full_percent: 85\nmax_skew: 500ms\ndate_urls: [http://127.0.0.1:1/]\nignore: [unattended-reboot, disk-near-full]\n",
        )
        .unwrap();
        assert_eq!(full.max_skew, Some(Duration::from_millis(500)));
        assert_eq!(full.disk_full_percent, Some(85));
        assert_eq!(
            full.ignore,
            [Hazard::UnattendedReboot, Hazard::DiskNearFull]
        );
        for (bad, says) in [
            ("disk_full_percent: 101", "percent"),
            ("max_skew: soon", "not a duration"),
            ("ignore: [everything]", "unknown variant"),
            ("rooot: /", "unknown field"),
        ] {
            let error = spec(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn each_check_is_an_observation_with_its_fix() {
        let root = Root::new("observations");
        root.write("/usr/bin/dockerd", "");
        root.write("/proc/1/comm", "systemd\n");
        let spec = HazardSpec {
            root: Some(root.0.clone()),
            ignore: vec![Hazard::DiskNearFull],
            ..HazardSpec::default()
        };
        let seen = run(&spec, 1_710_324_942_000);
        let docker = seen
            .iter()
            .find(|o| o.subject == "docker-unbounded-logs: /etc/docker/daemon.json")
            .unwrap_or_else(|| panic!("{seen:#?}"));
        assert_eq!(docker.seen, Seen::Found);
        assert!(docker.summary.contains(" — fix: "), "{}", docker.summary);
        let memory = seen
            .iter()
            .find(|o| o.subject == "no-memory-guard: memory guard")
            .unwrap();
        assert_eq!(memory.seen, Seen::Found);
        let cloud = seen
            .iter()
            .find(|o| o.subject == "cloud-init-reprovision: cloud-init")
            .unwrap();
        assert_eq!(cloud.seen, Seen::Ok);
        assert!(!seen.iter().any(|o| o.subject.starts_with("disk-near-full")));
        // Under another root, timedatectl is not asked about this host's clock.
        assert!(
            !seen
                .iter()
                .any(|o| o.subject.starts_with("clock-unsynchronised"))
        );

        // The hazard clears: the next run records it ok.
        root.write("/etc/docker/daemon.json", "{\"log-driver\": \"local\"}");
        let again = run(&spec, 1_710_324_943_000);
        let docker = again
            .iter()
            .find(|o| o.subject == "docker-unbounded-logs: /etc/docker/daemon.json")
            .unwrap();
        assert_eq!(docker.seen, Seen::Ok);
    }

    #[test]
    fn a_clock_set_back_between_runs_is_found() {
        let root = Root::new("jump");
        let spec = HazardSpec {
            root: Some(root.0.clone()),
            ignore: Hazard::ALL
                .into_iter()
                .filter(|h| *h != Hazard::ClockJumpBackwards)
                .collect(),
            ..HazardSpec::default()
        };
        let now = 1_710_324_942_000;
        // The first run has nothing to compare with.
        assert!(run(&spec, now).is_empty());
        // A clone is the same watcher, with the same memory.
        let later = run(&spec.clone(), now + 5);
        assert_eq!(later.len(), 1);
        assert_eq!(later[0].seen, Seen::Ok, "{later:#?}");
        let back = run(&spec, now - 60_000);
        assert_eq!(back[0].subject, "clock-jump-backwards: wall clock");
        assert_eq!(back[0].seen, Seen::Found, "{back:#?}");
    }
}
