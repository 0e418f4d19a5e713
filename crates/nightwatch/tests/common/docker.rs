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

/// An httpd in the offline image that answers `/` with `shop` and `/healthz` with `ok`: an app
/// for idle control to suspend and wake. Its `IP:80` once it listens.
pub fn httpd_app(containers: &Containers, name: &str) -> String {
    image();
    containers.run(&[
        "--name",
        name,
        IMAGE,
        "sh",
        "-c",
        "mkdir -p /www && echo ok > /www/healthz && echo shop > /www/index.html && exec busybox httpd -f -p 80 -h /www",
    ]);
    let ip = sh(
        "docker",
        &[
            "inspect",
            "-f",
            "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
            name,
        ],
        None,
    );
    assert!(!ip.is_empty(), "the container has no address");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect((ip.as_str(), 80)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the app never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    format!("{ip}:80")
}

/// A container's state as the Engine says: running, paused, exited.
pub fn state(name: &str) -> String {
    sh(
        "docker",
        &["inspect", "-f", "{{.State.Status}}", name],
        None,
    )
}
