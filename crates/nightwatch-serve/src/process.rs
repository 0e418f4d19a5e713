//! Runbook processes across a crash. A runbook runs in a process group of its own; the group,
//! its leader's start time and the daemon's own identity are noted with the task, so that a
//! daemon that starts after another died can find what the dead one left running and stop it
//! before the task runs again: a runbook never runs twice at once.
//!
//! A process is named by its pid *and* its start time (clock ticks after boot, from
//! `/proc/PID/stat`) within one boot (`/proc/sys/kernel/random/boot_id`), so a pid the kernel
//! has since given to something else is never taken for the one noted.

use nightwatch_store::RunbookProcess;
use std::time::{Duration, Instant};

/// The fields of `/proc/PID/stat` nightwatch reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Exited, waiting to be reaped: no longer runs anything.
    pub zombie: bool,
    pub pgrp: i64,
    /// Clock ticks after boot.
    pub started: u64,
}

/// Reads `/proc/PID/stat`'s text. The command name (field 2) may hold spaces and parentheses,
/// so fields are counted from the last `)`. None for anything that does not read.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let after_name = &text[text.rfind(')')? + 1..];
    // Fields 3 (state) onwards; pgrp is field 5, starttime field 22.
    let fields: Vec<&str> = after_name.split_ascii_whitespace().collect();
    Some(Stat {
        zombie: *fields.first()? == "Z",
        pgrp: fields.get(2)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

fn stat_of(pid: i64) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// This boot's id; empty when the kernel does not say.
pub fn this_boot() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|id| id.trim().to_owned())
        .unwrap_or_default()
}

/// The identity to note for a runbook whose group leader is `pid`, started by this daemon.
pub fn runbook_process(pid: u32) -> Option<RunbookProcess> {
    let leader = stat_of(i64::from(pid))?;
    let daemon = stat_of(i64::from(std::process::id()))?;
    Some(RunbookProcess {
        pgid: i64::from(pid),
        leader_started: leader.started,
        daemon_pid: i64::from(std::process::id()),
        daemon_started: daemon.started,
        boot: this_boot(),
    })
}

/// Whether the daemon that started `noted` still runs (then its runbooks are its own business).
pub fn daemon_alive(noted: &RunbookProcess) -> bool {
    noted.boot == this_boot()
        && stat_of(noted.daemon_pid).is_some_and(|daemon| daemon.started == noted.daemon_started)
}

/// The processes of `noted`'s group that are its and still run: in the group, started no
/// earlier than its leader, in this boot, not exited. Empty after a reboot.
pub fn members(noted: &RunbookProcess) -> Vec<i64> {
    if noted.boot != this_boot() {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i64>().ok())
        .filter(|&pid| {
            stat_of(pid).is_some_and(|stat| {
                !stat.zombie && stat.pgrp == noted.pgid && stat.started >= noted.leader_started
            })
        })
        .collect()
}

/// Stops what is left of `noted`'s group: SIGTERM, up to `grace` to go, then SIGKILL to any
/// member still there. Returns how many processes were found.
pub fn stop(noted: &RunbookProcess, grace: Duration) -> usize {
    let found = members(noted);
    if found.is_empty() {
        return 0;
    }
    signal(&found, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && !members(noted).is_empty() {
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(&members(noted), libc::SIGKILL);
    found.len()
}

fn signal(pids: &[i64], signal: libc::c_int) {
    for &pid in pids {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            continue;
        };
        // SAFETY: kill only sends a signal; the pid was just read from /proc as a member of
        // the noted group, started after its leader in this boot.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let plain = "4242 (sleep) S 1 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 2 3";
        assert_eq!(
            parse_stat(plain),
            Some(Stat {
                zombie: false,
                pgrp: 4242,
                started: 987654
            })
        );
        // A command name may hold spaces and parentheses.
        let odd = "7 (a) b (c) S 1 99 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 555 0 0";
        assert_eq!(
            parse_stat(odd),
            Some(Stat {
                zombie: false,
                pgrp: 99,
                started: 555
            })
        );
    }

    #[test]
    fn stat_that_does_not_read_is_none_never_a_panic() {
        for text in [
            "",
            ")",
            "1 (x",
            "1 (x) S",
            "1 (x) S 1 notanumber 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",
            "1 (x) S 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5",
            "1 (é) S 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0",
        ] {
            assert_eq!(parse_stat(text), None, "{text:?}");
        }
    }

    /// A real group: a shell and the sleep it started, in a group of their own, as a runbook
    /// runs. Both are found and stopped; a daemon that restarted, or a reboot, is told apart.
    #[test]
    fn a_noted_group_is_found_and_stopped_and_a_dead_daemon_told_apart() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .expect("sh starts");
        let noted = runbook_process(child.id()).expect("the runbook's stat reads");
        assert!(daemon_alive(&noted), "this test process plays the daemon");
        let deadline = Instant::now() + Duration::from_secs(10);
        while members(&noted).len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            stop(&noted, Duration::from_secs(2)),
            2,
            "the shell and its sleep"
        );
        let _ = child.wait();
        assert!(members(&noted).is_empty());

        let restarted = RunbookProcess {
            daemon_started: noted.daemon_started + 1,
            ..noted.clone()
        };
        assert!(
            !daemon_alive(&restarted),
            "same pid, another start: another daemon"
        );
        let rebooted = RunbookProcess {
            boot: "another boot".into(),
            ..noted
        };
        assert!(!daemon_alive(&rebooted));
        assert!(members(&rebooted).is_empty());
    }
}
