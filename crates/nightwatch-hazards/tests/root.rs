//! `scan` against real files in a temp directory laid out like a host's root, and against
//! this machine's own filesystem and `timedatectl`.

use std::fs;
use std::path::{Path, PathBuf};

use nightwatch_hazards::{Check, Hazard, Options, Seen, scan};

const NOW_MS: i64 = 1_710_324_942_000;

fn write(root: &Path, path: &str, text: &str) {
    let full = root.join(path.trim_start_matches('/'));
    fs::create_dir_all(full.parent().unwrap()).unwrap();
    fs::write(full, text).unwrap();
}

/// Only one hazard looked for, with no `timedatectl`.
fn only(hazard: Hazard, root: &Path) -> Options {
    Options {
        timedatectl: None,
        ignore: Hazard::ALL.into_iter().filter(|h| *h != hazard).collect(),
        ..Options::at(root)
    }
}

fn one(hazard: Hazard, root: &Path) -> Check {
    let checks = scan(&only(hazard, root), NOW_MS);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    checks.into_iter().next().unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

// ---- cloud-init ----

fn cloud_init_layout(root: &Path) {
    write(root, "/usr/bin/cloud-init", "#!/usr/bin/python3\n");
    write(
        root,
        "/etc/cloud/cloud.cfg",
        "# The top level settings are used as module\n# and base configuration.\nusers:\n  - default\ndisable_root: true\npreserve_hostname: false\ncloud_init_modules:\n  - seed_random\n  - ssh\n",
    );
    write(
        root,
        "/etc/cloud/cloud.cfg.d/90_dpkg.cfg",
        "datasource_list: [ NoCloud, ConfigDrive, OpenStack, Ec2, None ]\n",
    );
    write(root, "/var/lib/cloud/data/instance-id", "iid-agent-vm-01\n");
}

#[test]
fn enabled_cloud_init_would_replace_host_keys() {
    let root = tempfile::tempdir().unwrap();
    cloud_init_layout(root.path());
    let check = one(Hazard::CloudInitReprovision, root.path());
    assert_eq!(check.seen, Seen::Found, "{check:#?}");
    assert!(check.what.contains("SSH host keys"), "{}", check.what);
    assert!(check.fix.contains("/etc/cloud/cloud-init.disabled"));
    assert_eq!(check.evidence["cached_instance_id"], "iid-agent-vm-01");
}

#[test]
fn the_disable_file_clears_it() {
    let root = tempfile::tempdir().unwrap();
    cloud_init_layout(root.path());
    write(root.path(), "/etc/cloud/cloud-init.disabled", "");
    let check = one(Hazard::CloudInitReprovision, root.path());
    assert_eq!(check.seen, Seen::Ok, "{check:#?}");
    assert!(check.what.contains("disabled"));
}

#[test]
fn the_kernel_command_line_can_disable_it() {
    let root = tempfile::tempdir().unwrap();
    cloud_init_layout(root.path());
    write(
        root.path(),
        "/proc/cmdline",
        "BOOT_IMAGE=/boot/vmlinuz root=/dev/vda1 ro cloud-init=disabled\n",
    );
    assert_eq!(
        one(Hazard::CloudInitReprovision, root.path()).seen,
        Seen::Ok
    );
}

#[test]
fn a_changed_instance_id_is_found_even_with_keys_kept() {
    let root = tempfile::tempdir().unwrap();
    cloud_init_layout(root.path());
    write(
        root.path(),
        "/etc/cloud/cloud.cfg.d/99_keep.cfg",
        "ssh_deletekeys: false\npackage_upgrade: false\n",
    );
    let harmless = one(Hazard::CloudInitReprovision, root.path());
    assert_eq!(harmless.seen, Seen::Ok, "{harmless:#?}");
    write(
        root.path(),
        "/run/cloud-init/instance-data.json",
        r#"{"base64_encoded_keys": [], "v1": {"cloud_name": "nocloud", "instance_id": "iid-restored-02", "instance-id": "iid-restored-02"}}"#,
    );
    let changed = one(Hazard::CloudInitReprovision, root.path());
    assert_eq!(changed.seen, Seen::Found, "{changed:#?}");
    assert!(changed.what.contains("iid-restored-02") && changed.what.contains("iid-agent-vm-01"));
}

#[test]
fn a_previous_instance_id_shows_it_changed_before() {
    let root = tempfile::tempdir().unwrap();
    cloud_init_layout(root.path());
    write(
        root.path(),
        "/etc/cloud/cloud.cfg.d/99_keep.cfg",
        "ssh_deletekeys: false\n",
    );
    write(
        root.path(),
        "/var/lib/cloud/data/previous-instance-id",
        "iid-template-00\n",
    );
    let check = one(Hazard::CloudInitReprovision, root.path());
    assert_eq!(check.seen, Seen::Found, "{check:#?}");
    assert!(check.what.contains("already changed"));
}

#[test]
fn no_cloud_init_no_hazard() {
    let root = tempfile::tempdir().unwrap();
    let check = one(Hazard::CloudInitReprovision, root.path());
    assert_eq!(check.seen, Seen::Ok);
    assert!(check.what.contains("not installed"));
}

// ---- unattended-upgrades ----

const AUTO_UPGRADES: &str =
    "APT::Periodic::Update-Package-Lists \"1\";\nAPT::Periodic::Unattended-Upgrade \"1\";\n";

/// Debian's file, shortened, with the reboot turned on as an operator does it.
const UNATTENDED: &str = r#"// Automatically upgrade packages from these (origin:archive) pairs
Unattended-Upgrade::Origins-Pattern {
        "origin=Debian,codename=${distro_codename},label=Debian";
        "origin=Debian,codename=${distro_codename},label=Debian-Security";
};
// Automatically reboot *WITHOUT CONFIRMATION* if
//  the file /var/run/reboot-required is found after the upgrade
//Unattended-Upgrade::Automatic-Reboot "false";
Unattended-Upgrade::Automatic-Reboot "true";
# Unattended-Upgrade::Automatic-Reboot "false";
/* Unattended-Upgrade::Automatic-Reboot "false"; */
Unattended-Upgrade::Automatic-Reboot-Time "02:00";
"#;

fn apt_layout(root: &Path) {
    write(root, "/etc/apt/apt.conf.d/20auto-upgrades", AUTO_UPGRADES);
    write(
        root,
        "/etc/apt/apt.conf.d/50unattended-upgrades",
        UNATTENDED,
    );
    write(
        root,
        "/etc/apt/apt.conf.d/70debconf",
        "DPkg::Pre-Install-Pkgs {\"/usr/sbin/dpkg-preconfigure --apt || true\";};\n",
    );
}

#[test]
fn automatic_reboot_is_found_despite_commented_lines() {
    let root = tempfile::tempdir().unwrap();
    apt_layout(root.path());
    let check = one(Hazard::UnattendedReboot, root.path());
    assert_eq!(check.seen, Seen::Found, "{check:#?}");
    assert!(
        check
            .what
            .contains("/etc/apt/apt.conf.d/50unattended-upgrades"),
        "{}",
        check.what
    );
    assert!(check.what.contains("02:00"));
}

#[test]
fn a_later_file_turning_it_off_clears_it() {
    let root = tempfile::tempdir().unwrap();
    apt_layout(root.path());
    write(
        root.path(),
        "/etc/apt/apt.conf.d/99-no-automatic-reboot",
        "Unattended-Upgrade {\n  Automatic-Reboot \"false\";\n};\n",
    );
    assert_eq!(one(Hazard::UnattendedReboot, root.path()).seen, Seen::Ok);
}

#[test]
fn files_apt_ignores_are_ignored_and_apt_conf_comes_last() {
    let root = tempfile::tempdir().unwrap();
    apt_layout(root.path());
    // dpkg's leftovers are not read by APT, so this "false" does not count.
    write(
        root.path(),
        "/etc/apt/apt.conf.d/99-off.dpkg-old",
        "Unattended-Upgrade::Automatic-Reboot \"false\";\n",
    );
    assert_eq!(one(Hazard::UnattendedReboot, root.path()).seen, Seen::Found);
    // apt.conf is read after the parts.
    write(
        root.path(),
        "/etc/apt/apt.conf",
        "Unattended-Upgrade::Automatic-Reboot \"0\";\n",
    );
    assert_eq!(one(Hazard::UnattendedReboot, root.path()).seen, Seen::Ok);
}

#[test]
fn without_the_periodic_run_it_never_reboots() {
    let root = tempfile::tempdir().unwrap();
    apt_layout(root.path());
    write(
        root.path(),
        "/etc/apt/apt.conf.d/20auto-upgrades",
        "APT::Periodic::Unattended-Upgrade \"0\";\n",
    );
    assert_eq!(one(Hazard::UnattendedReboot, root.path()).seen, Seen::Ok);
}

#[test]
fn a_file_apt_refuses_is_unknown_with_its_line() {
    let root = tempfile::tempdir().unwrap();
    apt_layout(root.path());
    write(
        root.path(),
        "/etc/apt/apt.conf.d/60broken",
        "Unattended-Upgrade {\n  Automatic-Reboot \"false\"\n",
    );
    let check = one(Hazard::UnattendedReboot, root.path());
    assert_eq!(check.seen, Seen::Unknown, "{check:#?}");
    assert!(
        check.what.contains("60broken") && check.what.contains("line 3"),
        "{}",
        check.what
    );
}

// ---- Docker ----

fn docker(root: &Path, daemon_json: Option<&str>) -> Check {
    write(root, "/usr/bin/dockerd", "");
    if let Some(text) = daemon_json {
        write(root, "/etc/docker/daemon.json", text);
    }
    one(Hazard::DockerUnboundedLogs, root)
}

#[test]
fn docker_daemon_json_variants() {
    let cases = [
        (None, Seen::Found, "without /etc/docker/daemon.json"),
        (
            Some("{\n  \"data-root\": \"/srv/docker\"\n}\n"),
            Seen::Found,
            "no log-opts.max-size",
        ),
        (
            Some(
                "{\"log-driver\": \"json-file\", \"log-opts\": {\"max-size\": \"10m\", \"max-file\": \"3\"}}",
            ),
            Seen::Ok,
            "10m",
        ),
        (Some("{\"log-driver\": \"local\"}"), Seen::Ok, "rotates"),
        (
            Some("{\"log-opts\": {\"max-size\": \"10m\",}}"),
            Seen::Found,
            "does not parse",
        ),
    ];
    for (text, seen, says) in cases {
        let root = tempfile::tempdir().unwrap();
        let check = docker(root.path(), text);
        assert_eq!(check.seen, seen, "{text:?}: {check:#?}");
        assert!(check.what.contains(says), "{text:?}: {}", check.what);
        if seen == Seen::Found {
            assert!(check.fix.contains("max-size"), "{}", check.fix);
        }
    }
    let no_docker = tempfile::tempdir().unwrap();
    assert_eq!(
        one(Hazard::DockerUnboundedLogs, no_docker.path()).seen,
        Seen::Ok
    );
}

// ---- memory guard ----

#[test]
fn memory_guard_running_enabled_or_absent() {
    let root = tempfile::tempdir().unwrap();
    write(root.path(), "/proc/1/comm", "systemd\n");
    write(root.path(), "/proc/412/comm", "sshd\n");
    let none = one(Hazard::NoMemoryGuard, root.path());
    assert_eq!(none.seen, Seen::Found, "{none:#?}");
    assert!(none.fix.contains("earlyoom"));

    let wants = root
        .path()
        .join("etc/systemd/system/multi-user.target.wants");
    fs::create_dir_all(&wants).unwrap();
    std::os::unix::fs::symlink(
        "/lib/systemd/system/earlyoom.service",
        wants.join("earlyoom.service"),
    )
    .unwrap();
    let dead = one(Hazard::NoMemoryGuard, root.path());
    assert_eq!(dead.seen, Seen::Found, "enabled but not running: {dead:#?}");
    assert!(dead.what.contains("not running"));

    write(root.path(), "/proc/733/comm", "earlyoom\n");
    assert_eq!(one(Hazard::NoMemoryGuard, root.path()).seen, Seen::Ok);
}

#[test]
fn this_machines_proc_is_read_for_real() {
    // This test process is among them: the root's /proc is really listed.
    let check = one(Hazard::NoMemoryGuard, Path::new("/"));
    let seen = check.evidence["processes_seen"].as_u64().unwrap();
    assert!(seen >= 1, "{check:#?}");
}

// ---- disks ----

#[test]
fn the_real_root_filesystem_is_near_full_at_one_percent_and_not_at_a_hundred() {
    let mut options = only(Hazard::DiskNearFull, Path::new("/"));
    options.disk_full_percent = 1;
    let checks = scan(&options, NOW_MS);
    let root = checks
        .iter()
        .find(|c| c.subject == "/")
        .unwrap_or_else(|| panic!("/ was looked at: {checks:#?}"));
    assert_eq!(root.seen, Seen::Found, "{root:#?}");
    assert!(root.evidence["size_bytes"].as_u64().unwrap() > 0);
    options.disk_full_percent = 100;
    let checks = scan(&options, NOW_MS);
    let root = checks.iter().find(|c| c.subject == "/").unwrap();
    assert_eq!(root.seen, Seen::Ok, "{root:#?}");
    assert!(
        checks
            .iter()
            .all(|c| c.subject != "/proc" && c.subject != "/sys"),
        "{checks:#?}"
    );
}

#[test]
fn mounts_under_a_temp_root_are_measured_there() {
    let root = tempfile::tempdir().unwrap();
    write(
        root.path(),
        "/proc/self/mounts",
        "/dev/sda1 / ext4 rw 0 0\n/dev/sdb1 /missing xfs rw 0 0\nproc /proc proc rw 0 0\n",
    );
    let checks = scan(&only(Hazard::DiskNearFull, root.path()), NOW_MS);
    assert_eq!(checks.len(), 2, "{checks:#?}");
    assert_eq!(checks[0].subject, "/");
    assert_ne!(checks[0].seen, Seen::Unknown, "{:#?}", checks[0]);
    assert_eq!(
        checks[1].seen,
        Seen::Unknown,
        "a mount point that is not there: {:#?}",
        checks[1]
    );
    let without = tempfile::tempdir().unwrap();
    assert_eq!(
        one(Hazard::DiskNearFull, without.path()).seen,
        Seen::Unknown
    );
}

// ---- timedatectl, as a real program ----

/// A program that prints a fixture for `show`, as timedatectl would. Written by `cp` into
/// place, never opened for writing by this process: a child another test thread forked
/// meanwhile would hold that descriptor and make running the program fail "text file busy".
fn fake_timedatectl(dir: &Path, show: &str, exit: i32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let draft = dir.join("timedatectl.draft");
    let body = format!(
        "#!/bin/sh\nif [ \"$1\" = show ]; then cat '{}'; exit {exit}; fi\nexit 1\n",
        fixture(show).display()
    );
    fs::write(&draft, body).unwrap();
    fs::set_permissions(&draft, fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.join("timedatectl");
    let copied = std::process::Command::new("cp")
        .arg("-p")
        .arg(&draft)
        .arg(&path)
        .status()
        .unwrap();
    assert!(copied.success());
    path
}

fn timedatectl_check(program: PathBuf) -> Check {
    let root = tempfile::tempdir().unwrap();
    let mut options = only(Hazard::ClockUnsynchronised, root.path());
    options.timedatectl = Some(program);
    let checks = scan(&options, NOW_MS);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    checks.into_iter().next().unwrap()
}

#[test]
fn timedatectl_synced_and_unsynced_through_a_real_process() {
    let dir = tempfile::tempdir().unwrap();
    let synced = timedatectl_check(fake_timedatectl(
        dir.path(),
        "timedatectl/show-synced.txt",
        0,
    ));
    assert_eq!(synced.seen, Seen::Ok, "{synced:#?}");
    let dir = tempfile::tempdir().unwrap();
    let unsynced = timedatectl_check(fake_timedatectl(
        dir.path(),
        "timedatectl/show-unsynced.txt",
        0,
    ));
    assert_eq!(unsynced.seen, Seen::Found, "{unsynced:#?}");
    assert!(unsynced.fix.contains("set-ntp true"));
}

#[test]
fn a_missing_timedatectl_is_unknown_saying_so() {
    let check = timedatectl_check(PathBuf::from("/nonexistent/timedatectl"));
    assert_eq!(check.seen, Seen::Unknown);
    assert!(check.what.contains("not installed"), "{}", check.what);
}

#[test]
fn this_machines_timedatectl_answers_or_says_why_not() {
    let program = PathBuf::from("/usr/bin/timedatectl");
    assert!(
        program.exists(),
        "this test needs systemd's timedatectl at /usr/bin/timedatectl"
    );
    let check = timedatectl_check(program);
    let pid1 = fs::read_to_string("/proc/1/comm").unwrap_or_default();
    if pid1.trim() == "systemd" {
        assert_ne!(check.seen, Seen::Unknown, "systemd is PID 1: {check:#?}");
    } else {
        assert_eq!(check.seen, Seen::Unknown, "{check:#?}");
        assert!(check.what.contains("not PID 1"), "{}", check.what);
    }
}
