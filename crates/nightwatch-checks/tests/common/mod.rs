//! What the probe tests share: parsing a check from YAML, a probe at the real now, and real
//! processes that are killed by their pid when the test ends.

#![allow(dead_code)]

use nightwatch_checks::{CheckSpec, Finding, History, Probe, run_checks};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

pub fn spec(yaml: &str) -> CheckSpec {
    yaml_serde::from_str(yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"))
}

pub fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970");
    i64::try_from(since.as_millis()).expect("fits")
}

/// A history that has seen `failures` failures, or cannot be read.
pub struct FakeHistory(pub Result<u32, String>);

impl History for FakeHistory {
    fn failures_since(&self, _: &str, _: &str, _: &str, _: i64) -> Result<u32, String> {
        self.0.clone()
    }
}

pub const NO_FAILURES: FakeHistory = FakeHistory(Ok(0));

pub fn probe_at(now_ms: i64, history: &dyn History) -> Probe<'_> {
    Probe {
        now_ms,
        local_minute_of_day: 12 * 60,
        local_weekday: jiff::civil::Weekday::Wednesday,
        actor_kind: "agent",
        actor_id: "claude-code",
        tool: "exec",
        fingerprint: "f00d",
        history,
    }
}

/// Runs one check, parsed from YAML, at the real now.
pub fn run_one(yaml: &str) -> Finding {
    let spec = spec(yaml);
    let history = NO_FAILURES;
    let probe = probe_at(now_ms(), &history);
    run_checks(&[("c", &spec)], &probe)
        .pop()
        .expect("one finding")
}

/// A process the test started; killed by its pid and reaped on drop.
pub struct Running(pub Child);

impl Running {
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn which(program: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(program))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{program} not on PATH"))
}

/// Starts `program args`, retrying the "text file busy" a freshly copied binary can give while
/// another test thread forks.
pub fn start(program: &Path, args: &[&str]) -> Running {
    for _ in 0..20 {
        match Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => return Running(child),
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            Err(e) => panic!("starting {}: {e}", program.display()),
        }
    }
    panic!("{} stayed busy", program.display())
}

/// `sleep` copied under another name into `dir`, so it can be found by that name.
pub fn renamed_sleep(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::copy(which("sleep"), &path).expect("copy sleep");
    path
}
