//! Containers on the real Engine for tests and the benchmark: an offline image built from
//! the host's static busybox, and a guard that removes everything a test created.

#![allow(dead_code)] // each test target uses a different part

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The test image: `/bin/busybox` with `sh` and `sleep` links, imported (no registry here).
pub const IMAGE: &str = "nightwatch-test/busybox:latest";
/// Every test container carries `nightwatch.test=<run id>`, so cleanup can find them all.
pub const TEST_LABEL: &str = "nightwatch.test";

const BUSYBOX: &str = "/bin/busybox";

/// Runs the docker CLI and returns its trimmed stdout; panics with its stderr on failure.
pub fn docker(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run `docker {}`: {e}", args.join(" ")));
    assert!(
        out.status.success(),
        "`docker {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Builds [`IMAGE`] once per process, and not at all when the Engine already has it.
pub fn image() -> &'static str {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let present = Command::new("docker")
            .args(["image", "inspect", IMAGE])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !present {
            build_image();
        }
    });
    IMAGE
}

fn build_image() {
    assert!(
        Path::new(BUSYBOX).is_file(),
        "{BUSYBOX} is missing: the Docker tests build their image offline from a static \
         busybox, so .ci/run must install it first (apt-get install -y busybox-static)"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = dir.path().join("rootfs/bin");
    std::fs::create_dir_all(&bin).expect("rootfs/bin");
    std::fs::copy(BUSYBOX, bin.join("busybox")).expect("copy busybox");
    for applet in ["sh", "sleep"] {
        std::os::unix::fs::symlink("busybox", bin.join(applet)).expect("applet link");
    }
    let tar = dir.path().join("rootfs.tar");
    let status = Command::new("tar")
        .arg("-C")
        .arg(dir.path().join("rootfs"))
        .arg("-cf")
        .arg(&tar)
        .arg("bin")
        .status()
        .expect("run tar");
    assert!(status.success(), "tar of the test image's rootfs failed");
    docker(&["import", &tar.to_string_lossy(), IMAGE]);
}

/// The containers (and volumes) of one test. Dropping it removes them all, by label, even
/// when the test failed halfway: nothing is left on the host.
pub struct Scratch {
    pub run: String,
    volumes: Vec<String>,
}

impl Scratch {
    pub fn new(test: &str) -> Scratch {
        image();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        Scratch {
            run: format!("{test}-{}-{nanos}", std::process::id()),
            volumes: Vec::new(),
        }
    }

    /// `nightwatch.test=<run id>`.
    pub fn label(&self) -> String {
        format!("{TEST_LABEL}={}", self.run)
    }

    /// A unique name for a container of this run.
    pub fn name(&self, what: &str) -> String {
        format!("nwtest-{what}-{}", self.run)
    }

    /// `docker run -d` (or `docker create` when `verb` is `create`) with this run's label and
    /// an agent's owner label (so the janitor judges it), `options` before the image and
    /// `command` after it. Returns the full id.
    pub fn container(&self, verb: &str, options: &[&str], command: &[&str]) -> String {
        let label = self.label();
        let mut args: Vec<&str> = match verb {
            "create" => vec!["create"],
            _ => vec!["run", "-d"],
        };
        args.extend(["--label", &label, "--label", "nightwatch.agent=test-agent"]);
        args.extend(options);
        args.push(IMAGE);
        args.extend(command);
        docker(&args)
    }

    /// A named volume removed with the run.
    pub fn volume(&mut self, what: &str) -> String {
        self.volume_with(what, &[])
    }

    /// A volume of this run carrying `labels` (`KEY=VALUE`) besides the run's own.
    pub fn volume_with(&mut self, what: &str, labels: &[&str]) -> String {
        let name = self.name(what);
        let label = self.label();
        let mut args = vec!["volume", "create", "--label", label.as_str()];
        for l in labels {
            args.extend(["--label", l]);
        }
        args.push(&name);
        docker(&args);
        self.volumes.push(name.clone());
        name
    }

    /// The ids of every container of this run still on the host.
    pub fn ids(&self) -> Vec<String> {
        let filter = format!("label={}", self.label());
        docker(&["ps", "-aq", "--no-trunc", "--filter", &filter])
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // No panics here: this may run while a failed test unwinds.
        let filter = format!("label={}", self.label());
        let ids: Vec<String> = Command::new("docker")
            .args(["ps", "-aq", "--no-trunc", "--filter", &filter])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        for batch in ids.chunks(100) {
            let mut args = vec!["rm", "-f", "-v"];
            args.extend(batch.iter().map(String::as_str));
            let _ = Command::new("docker").args(&args).output();
        }
        for volume in &self.volumes {
            let _ = Command::new("docker")
                .args(["volume", "rm", "-f", volume])
                .output();
        }
    }
}

/// Milliseconds since 1970.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
