//! The I/O: files under the root, `timedatectl`, `statvfs`, HTTP. Everything judged is
//! handed to the pure modules; what cannot be read becomes an unknown check saying why.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::cloud_init::CloudInitFacts;
use crate::memory::MemoryFacts;
use crate::unattended::AptFile;
use crate::{Check, Hazard, Options, Seen, clock, cloud_init, disk, docker, memory, unattended};

/// Files larger than this are read up to it: configuration is small, and a huge file
/// must not hold the scan.
const READ_CAP: u64 = 1024 * 1024;
/// What of a command's output is kept.
const OUTPUT_CAP: u64 = 64 * 1024;

/// Looks for every hazard `options` does not ignore, as of `now_ms` (the caller's clock),
/// and says what it saw of each, in a stable order. Never panics; never fails as a whole.
pub fn scan(options: &Options, now_ms: i64) -> Vec<Check> {
    let started = Instant::now();
    let root = options.root.as_path();
    let mut checks = Vec::new();
    if options.looks_for(Hazard::CloudInitReprovision) {
        checks.push(cloud_init::judge(&cloud_init_facts(root)));
    }
    if options.looks_for(Hazard::UnattendedReboot) {
        checks.push(match apt_files(root) {
            Ok(files) => unattended::judge(&files),
            Err(why) => Check::new(
                Hazard::UnattendedReboot,
                "unattended-upgrades",
                Seen::Unknown,
                why,
                "make APT's configuration readable to nightwatch",
            ),
        });
    }
    if options.looks_for(Hazard::NoMemoryGuard) {
        checks.push(memory::judge(&memory_facts(root)));
    }
    if options.looks_for(Hazard::ClockUnsynchronised)
        && let Some(program) = &options.timedatectl
    {
        checks.push(clock::judge_timedatectl(timedatectl(
            program,
            options.probe_timeout,
        )));
    }
    if options.looks_for(Hazard::ClockSkew) {
        if let Some(reference) = options.reference_clock_ms {
            checks.push(clock::judge_reference(now_ms, reference, options.max_skew));
        }
        for url in &options.date_urls {
            checks.push(http_date(url, options, now_ms, started));
        }
    }
    if options.looks_for(Hazard::ClockJumpBackwards)
        && let Some((last_ms, at)) = options.last_seen
    {
        checks.push(clock::judge_jump(
            last_ms,
            now_ms,
            started.saturating_duration_since(at),
            options.max_skew,
        ));
    }
    if options.looks_for(Hazard::DiskNearFull) {
        checks.extend(disks(root, options));
    }
    if options.looks_for(Hazard::DockerUnboundedLogs) {
        checks.push(docker_check(root));
    }
    checks
}

/// An absolute host path under the root.
fn under(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

/// A file's text (lossy, capped); `Ok(None)` when it does not exist.
fn read_text(path: &Path) -> io::Result<Option<String>> {
    let file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(READ_CAP).read_to_end(&mut bytes)?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The names in a directory, sorted bytewise (as APT and cloud-init order them); empty when
/// it does not exist.
fn names_in(dir: &Path) -> io::Result<Vec<String>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

fn cloud_init_facts(root: &Path) -> CloudInitFacts {
    let text = |path: &str| read_text(&under(root, path)).ok().flatten();
    let mut configs = Vec::new();
    let main = "/etc/cloud/cloud.cfg";
    if let Some(t) = text(main) {
        configs.push((main.to_owned(), t));
    }
    for name in names_in(&under(root, "/etc/cloud/cloud.cfg.d")).unwrap_or_default() {
        if name.ends_with(".cfg") {
            let path = format!("/etc/cloud/cloud.cfg.d/{name}");
            if let Some(t) = text(&path) {
                configs.push((path, t));
            }
        }
    }
    CloudInitFacts {
        installed: under(root, "/usr/bin/cloud-init").exists()
            || under(root, "/etc/cloud").is_dir(),
        disabled_file: under(root, "/etc/cloud/cloud-init.disabled").exists(),
        kernel_cmdline: text("/proc/cmdline"),
        configs,
        cached_instance_id: text("/var/lib/cloud/data/instance-id"),
        previous_instance_id: text("/var/lib/cloud/data/previous-instance-id"),
        instance_data: text("/run/cloud-init/instance-data.json"),
    }
}

/// APT's files in its order: `apt.conf.d/*` that it reads, by name, then `apt.conf`.
fn apt_files(root: &Path) -> Result<Vec<AptFile>, String> {
    let parts = "/etc/apt/apt.conf.d";
    let names = names_in(&under(root, parts)).map_err(|e| format!("{parts}: {e}"))?;
    let mut paths: Vec<String> = names
        .into_iter()
        .filter(|n| crate::apt::read_by_apt(n))
        .map(|n| format!("{parts}/{n}"))
        .collect();
    paths.push("/etc/apt/apt.conf".to_owned());
    let mut files = Vec::new();
    for path in paths {
        let full = under(root, &path);
        if full.is_dir() {
            continue;
        }
        match read_text(&full) {
            Ok(Some(text)) => files.push(AptFile { name: path, text }),
            Ok(None) => {}
            Err(e) => return Err(format!("{path} could not be read: {e}")),
        }
    }
    Ok(files)
}

fn memory_facts(root: &Path) -> MemoryFacts {
    let mut facts = MemoryFacts::default();
    let proc = under(root, "/proc");
    if let Ok(entries) = fs::read_dir(&proc) {
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let is_pid = name
                .to_str()
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if !is_pid {
                continue;
            }
            // A process may end between the listing and the read.
            if let Ok(Some(comm)) = read_text(&entry.path().join("comm")) {
                facts.processes_seen += 1;
                let comm = comm.trim_end_matches('\n');
                if memory::GUARDS.iter().any(|(g, _)| *g == comm) {
                    facts.running.push(comm.to_owned());
                }
            }
        }
    }
    let units = under(root, "/etc/systemd/system");
    for dir in names_in(&units).unwrap_or_default() {
        if !dir.ends_with(".wants") {
            continue;
        }
        for (_, unit) in memory::GUARDS {
            // The link itself: its target may live outside a test's root.
            if fs::symlink_metadata(units.join(&dir).join(unit)).is_ok() {
                facts.enabled.push((unit.to_owned(), dir.clone()));
            }
        }
    }
    facts.overcommit_memory = read_text(&under(root, "/proc/sys/vm/overcommit_memory"))
        .ok()
        .flatten();
    facts
}

/// `timedatectl show`, or `status` on a systemd too old for `show`.
fn timedatectl(program: &Path, timeout: Duration) -> Result<clock::TimeSync, String> {
    let shown = run(program, "show", timeout)?;
    let answer = clock::interpret(&shown.stdout, &shown.stderr, shown.succeeded);
    let old_systemd =
        shown.stderr.contains("Unknown operation") || shown.stderr.contains("Unknown command verb");
    if answer.is_err() && old_systemd {
        let status = run(program, "status", timeout)?;
        return clock::interpret(&status.stdout, &status.stderr, status.succeeded);
    }
    answer
}

struct Ran {
    stdout: String,
    stderr: String,
    succeeded: bool,
}

/// Runs `program verb` with a deadline; a program that cannot start or overruns is an
/// error saying so. The child is killed at the deadline.
fn run(program: &Path, verb: &str, timeout: Duration) -> Result<Ran, String> {
    let shown = format!("{} {verb}", program.display());
    let mut child = Command::new(program)
        .arg(verb)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => {
                format!("{} is not installed (not found)", program.display())
            }
            _ => format!("{shown} could not start: {e}"),
        })?;
    // Read both pipes while waiting, so a chatty child never blocks on a full pipe.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(pipe) = pipe {
                let _ = pipe.take(OUTPUT_CAP).read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{shown} did not answer within {}",
                    nightwatch_time::format_duration(timeout)
                ));
            }
            Err(e) => return Err(format!("{shown}: {e}")),
        }
    };
    Ok(Ran {
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        succeeded: status.success(),
    })
}

/// HEAD `url`, and its `Date` against the local clock at the request's two ends.
fn http_date(url: &str, options: &Options, now_ms: i64, started: Instant) -> Check {
    let local_ms = || now_ms.saturating_add(crate::millis(started.elapsed()));
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(options.probe_timeout))
        // Any answer carries a Date; a status is not an error here.
        .http_status_as_error(false)
        // A proxy would answer with its own clock.
        .proxy(None)
        .max_redirects(0)
        .max_redirects_will_error(false)
        .build()
        .new_agent();
    let sent_ms = local_ms();
    let response = agent.head(url).call();
    let received_ms = local_ms();
    match response {
        Ok(response) => {
            let date = response
                .headers()
                .get("date")
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            clock::judge_http_date(url, sent_ms, received_ms, date.as_deref(), options.max_skew)
        }
        Err(e) => Check::new(
            Hazard::ClockSkew,
            format!("Date of {url}"),
            Seen::Unknown,
            format!("HEAD {url} failed: {e}"),
            "name a URL this host can reach",
        ),
    }
}

fn disks(root: &Path, options: &Options) -> Vec<Check> {
    let mounts_path = "/proc/self/mounts";
    let text = match read_text(&under(root, mounts_path)) {
        Ok(Some(text)) => text,
        Ok(None) => {
            return vec![unmeasured(format!(
                "{mounts_path} does not exist under {}",
                root.display()
            ))];
        }
        Err(e) => return vec![unmeasured(format!("{mounts_path} could not be read: {e}"))],
    };
    disk::watched(&disk::parse_mounts(&text))
        .into_iter()
        .map(|mount| {
            let usage = statvfs(&under(root, &mount.point), options.probe_timeout);
            disk::judge(&mount, usage, options.disk_full_percent)
        })
        .collect()
}

fn unmeasured(why: String) -> Check {
    Check::new(
        Hazard::DiskNearFull,
        "mounts",
        Seen::Unknown,
        why,
        "look with df -h and df -i",
    )
}

/// `statvfs` on a thread of its own, so a hung network filesystem costs a thread, not the
/// scan: the thread is left behind when it overruns.
fn statvfs(path: &Path, timeout: Duration) -> Result<disk::Usage, String> {
    let (tx, rx) = mpsc::channel();
    let owned = path.to_owned();
    std::thread::spawn(move || {
        let _ = tx.send(rustix::fs::statvfs(&owned).map(|s| disk::Usage {
            blocks: s.f_blocks,
            blocks_free: s.f_bfree,
            blocks_available: s.f_bavail,
            fragment_size: s.f_frsize,
            inodes: s.f_files,
            inodes_free: s.f_ffree,
        }));
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(usage)) => Ok(usage),
        Ok(Err(e)) => Err(io::Error::from(e).to_string()),
        Err(_) => Err(format!(
            "statvfs did not answer within {}",
            nightwatch_time::format_duration(timeout)
        )),
    }
}

fn docker_check(root: &Path) -> Check {
    let installed = ["/usr/bin/dockerd", "/usr/sbin/dockerd", "/etc/docker"]
        .iter()
        .any(|p| under(root, p).exists());
    if !installed {
        return Check::new(
            Hazard::DockerUnboundedLogs,
            "/etc/docker/daemon.json",
            Seen::Ok,
            "Docker is not installed",
            "",
        );
    }
    match read_text(&under(root, "/etc/docker/daemon.json")) {
        Ok(text) => docker::judge(text.as_deref()),
        Err(e) => Check::new(
            Hazard::DockerUnboundedLogs,
            "/etc/docker/daemon.json",
            Seen::Unknown,
            format!("/etc/docker/daemon.json could not be read: {e}"),
            "make it readable to nightwatch",
        ),
    }
}
