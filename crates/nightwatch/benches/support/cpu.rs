//! Where a benchmark's CPU went: processes' own time from `/proc`, the load generator's from

#![allow(dead_code)] // each benchmark reads the parts it prints
//! the reaped children's usage, and the machine's from `/proc/stat`, so a run can say which of
//! the processes sharing the cores limits it.

use std::time::Duration;

/// Clock ticks per second of `/proc`'s times (`_SC_CLK_TCK`).
fn ticks_per_second() -> f64 {
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

/// The user and system time process `pid` has used (its threads included); zero for a
/// process that is gone.
pub fn process(pid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Duration::ZERO;
    };
    // The command name (field 2) may hold spaces; the fields after its `)` are fixed.
    let Some((_, after)) = stat.rsplit_once(')') else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15; `after` starts at field 3.
    let ticks: u64 =
        fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
    Duration::from_secs_f64(ticks as f64 / ticks_per_second())
}

/// The time used by `root` and every process whose parent is `root` (PostgreSQL's postmaster
/// and its backends, which it forks directly).
pub fn process_and_children(root: u32) -> Duration {
    let mut total = process(root);
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let parent = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                let (_, after) = s.rsplit_once(')')?;
                after.split_whitespace().nth(1)?.parse::<u32>().ok()
            });
        if parent == Some(root) {
            total += process(pid);
        }
    }
    total
}

/// The time used by this process's children that have ended and been waited for (the load
/// generators, once each is reaped).
pub fn reaped_children() -> Duration {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// The machine's busy and total CPU time so far (all cores, from `/proc/stat`).
pub fn machine() -> (Duration, Duration) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let times: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let total: u64 = times.iter().take(8).sum();
    // idle and iowait are the fourth and fifth.
    let idle = times.get(3).copied().unwrap_or(0) + times.get(4).copied().unwrap_or(0);
    let seconds = |ticks: u64| Duration::from_secs_f64(ticks as f64 / ticks_per_second());
    (seconds(total - idle), seconds(total))
}

/// The PostgreSQL postmaster listening on `port`: the process whose command line is a
/// `postgres` server's and names that port.
pub fn postmaster(port: u16) -> Option<u32> {
    let port = port.to_string();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            args.first().is_some_and(|a| a.ends_with(b"/postgres"))
                && args
                    .windows(2)
                    .any(|w| w[0] == b"-p" && w[1] == port.as_bytes())
        })
}
