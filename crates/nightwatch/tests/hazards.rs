//! `nightwatch hazards`, the real binary, on temp directories laid out like a host's root.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hazards(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nightwatch"))
        .arg("hazards")
        .args(args)
        .env("NIGHTWATCH_HOME", home)
        .env_remove("NIGHTWATCH_NOW")
        .output()
        .expect("the nightwatch binary runs")
}

fn write(root: &Path, path: &str, text: &str) {
    let full = root.join(path.trim_start_matches('/'));
    fs::create_dir_all(full.parent().unwrap()).unwrap();
    fs::write(full, text).unwrap();
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// A program standing in for timedatectl that prints one of the crate's fixtures.
fn timedatectl(dir: &Path, fixture: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../nightwatch-hazards/tests/fixtures/timedatectl")
        .join(fixture);
    let program = dir.join("timedatectl");
    fs::write(
        &program,
        format!("#!/bin/sh\ncat '{}'\n", fixture.display()),
    )
    .unwrap();
    fs::set_permissions(&program, fs::Permissions::from_mode(0o755)).unwrap();
    program
}

/// Seed 001's agent VM: cloud-init live, automatic reboots, no memory guard, Docker with
/// no log limit, the clock not synchronised, and its disk "near full" at 1%.
fn hazardous_root(root: &Path) {
    write(root, "/usr/bin/cloud-init", "");
    write(
        root,
        "/etc/cloud/cloud.cfg",
        "users: [default]\npackage_upgrade: true\n",
    );
    write(root, "/var/lib/cloud/data/instance-id", "iid-agent-vm\n");
    write(
        root,
        "/etc/apt/apt.conf.d/20auto-upgrades",
        "APT::Periodic::Unattended-Upgrade \"1\";\n",
    );
    write(
        root,
        "/etc/apt/apt.conf.d/50unattended-upgrades",
        "Unattended-Upgrade {\n  // Automatic-Reboot \"false\";\n  Automatic-Reboot \"true\";\n};\n",
    );
    write(root, "/proc/1/comm", "systemd\n");
    write(root, "/proc/880/comm", "dockerd\n");
    write(
        root,
        "/proc/self/mounts",
        "/dev/vda1 / ext4 rw,relatime 0 0\nproc /proc proc rw 0 0\n",
    );
    write(root, "/usr/bin/dockerd", "");
}

#[test]
fn a_hazardous_root_lists_each_hazard_with_its_fix_and_exits_5() {
    let home = common::scratch("hazards", "found");
    let root = home.join("root");
    hazardous_root(&root);
    let program = timedatectl(&home, "show-unsynced.txt");
    let output = hazards(
        &home,
        &[
            "--root",
            root.to_str().unwrap(),
            "--json",
            "--disk-full",
            "1",
            "--timedatectl",
            program.to_str().unwrap(),
        ],
    );
    assert_eq!(
        output.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = json(&output);
    let found: Vec<&serde_json::Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["seen"] == "found")
        .collect();
    let ids: Vec<&str> = found.iter().map(|c| c["id"].as_str().unwrap()).collect();
    for id in [
        "cloud-init-reprovision",
        "unattended-reboot",
        "no-memory-guard",
        "clock-unsynchronised",
        "disk-near-full",
        "docker-unbounded-logs",
    ] {
        assert!(ids.contains(&id), "{id} not found in {report:#}");
    }
    for check in &found {
        assert!(
            !check["fix"].as_str().unwrap().is_empty(),
            "no fix: {check:#}"
        );
    }
    assert_eq!(report["found"], found.len());

    // The same as lines, one per check, the found ones with their fix.
    let text = hazards(
        &home,
        &[
            "--root",
            root.to_str().unwrap(),
            "--disk-full",
            "1",
            "--timedatectl",
            program.to_str().unwrap(),
        ],
    );
    assert_eq!(text.status.code(), Some(5));
    let stdout = String::from_utf8_lossy(&text.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains("unattended-reboot"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.starts_with("FOUND")
            && line.contains("fix: set Unattended-Upgrade::Automatic-Reboot \"false\""),
        "{line}"
    );
}

#[test]
fn a_clean_root_exits_0() {
    let home = common::scratch("hazards", "clean");
    let root = home.join("root");
    write(&root, "/proc/1/comm", "systemd\n");
    write(&root, "/proc/77/comm", "earlyoom\n");
    write(
        &root,
        "/proc/self/mounts",
        "/dev/vda1 / ext4 rw,relatime 0 0\n",
    );
    write(
        &root,
        "/etc/apt/apt.conf.d/20auto-upgrades",
        "APT::Periodic::Unattended-Upgrade \"1\";\n",
    );
    write(&root, "/usr/bin/dockerd", "");
    write(
        &root,
        "/etc/docker/daemon.json",
        "{\"log-driver\": \"local\"}\n",
    );
    let program = timedatectl(&home, "show-synced.txt");
    let output = hazards(
        &home,
        &[
            "--root",
            root.to_str().unwrap(),
            "--json",
            "--disk-full",
            "100",
            "--timedatectl",
            program.to_str().unwrap(),
        ],
    );
    let report = json(&output);
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    assert_eq!(report["found"], 0);
    assert_eq!(report["unknown"], 0);
    assert!(report["ok"].as_u64().unwrap() >= 6, "{report:#}");
}

#[test]
fn a_clock_set_ahead_is_skew_against_a_date_server() {
    // A server on 127.0.0.1 that tells the real time; NIGHTWATCH_NOW moves the host's.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{BufRead, BufReader, Write};
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                line.clear();
            }
            let now = jiff::Timestamp::now();
            let date = jiff::fmt::rfc2822::DateTimePrinter::new()
                .timestamp_to_rfc9110_string(&now)
                .unwrap();
            let _ = write!(
                stream,
                "HTTP/1.1 204 No Content\r\nDate: {date}\r\nConnection: close\r\n\r\n"
            );
        }
    });
    let home = common::scratch("hazards", "skew");
    let root = home.join("root");
    fs::create_dir_all(&root).unwrap();
    let args = [
        "--root",
        root.to_str().unwrap(),
        "--json",
        "--date-url",
        &url,
        "--ignore",
        "disk-near-full",
        "--ignore",
        "no-memory-guard",
    ];
    let skewed = Command::new(env!("CARGO_BIN_EXE_nightwatch"))
        .arg("hazards")
        .args(args)
        .env("NIGHTWATCH_HOME", &home)
        .env("NIGHTWATCH_NOW", "+1h")
        .output()
        .unwrap();
    let report = json(&skewed);
    assert_eq!(skewed.status.code(), Some(5), "{report:#}");
    let skew = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "clock-skew")
        .unwrap();
    assert_eq!(skew["seen"], "found", "{skew:#}");
    assert!(skew["what"].as_str().unwrap().contains("ahead"), "{skew:#}");
    let right = hazards(&home, &args);
    let report = json(&right);
    assert_eq!(right.status.code(), Some(0), "{report:#}");
}

#[test]
fn bad_usage_exits_1() {
    let home = common::scratch("hazards", "usage");
    for args in [
        &["--ignore", "everything"][..],
        &["--max-skew", "soon"],
        &["--disk-full", "101"],
    ] {
        let output = hazards(&home, args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
    }
}
