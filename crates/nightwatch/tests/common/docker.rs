//! The real Docker Engine for tests: an offline image, containers that clean up after
//! themselves, and a command runner that fails loudly.

use std::path::Path;
use std::process::Command;

pub const IMAGE: &str = "nightwatch-test/busybox:latest";

pub fn sh(program: &str, args: &[&str], dir: Option<&Path>) -> String {
    let mut command = Command::new(program);
    command
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let out = command.output().expect("run");
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The offline test image (static busybox), built once.
pub fn image() {
    let present = Command::new("docker")
        .args(["image", "inspect", IMAGE])
        .output()
        .is_ok_and(|o| o.status.success());
    if present {
        return;
    }
    assert!(
        Path::new("/bin/busybox").is_file(),
        "/bin/busybox is missing: .ci/run installs busybox-static for the Docker tests"
    );
    let dir = super::scratch("sweep", "image");
    let bin = dir.join("rootfs/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy("/bin/busybox", bin.join("busybox")).unwrap();
    for applet in ["sh", "sleep"] {
        std::os::unix::fs::symlink("busybox", bin.join(applet)).unwrap();
    }
    let tar = dir.join("rootfs.tar");
    let rootfs = dir.join("rootfs");
    sh(
        "tar",
        &[
            "-C",
            rootfs.to_str().unwrap(),
            "-cf",
            tar.to_str().unwrap(),
            "bin",
        ],
        None,
    );
    let _ = Command::new("docker")
        .args(["import", tar.to_str().unwrap(), IMAGE])
        .output();
}

/// Containers labelled with this test's run id, removed when dropped.
pub struct Containers(pub String);

impl Containers {
    pub fn run(&self, args: &[&str]) -> String {
        let label = format!("nightwatch.test={}", self.0);
        let mut all = vec!["run", "-d", "--label", &label];
        all.extend(args);
        sh("docker", &all, None)
    }
}

impl Drop for Containers {
    fn drop(&mut self) {
        let filter = format!("label=nightwatch.test={}", self.0);
        if let Ok(out) = Command::new("docker")
            .args(["ps", "-aq", "--filter", &filter])
            .output()
        {
            for id in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("docker").args(["rm", "-f", id]).output();
            }
        }
    }
}
