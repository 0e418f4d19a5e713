//! `process:` scans `/proc` for a process by name or command line, at least some age old.

use crate::spec::{ProcessCheck, ProcessPattern};
use crate::{Outcome, human_ms, span_ms};
use std::fs::{self, File};
use std::io::{self, Read};
use std::sync::OnceLock;
use std::time::Instant;

/// The kernel cuts `comm` to this many bytes.
const COMM_LEN: usize = 15;
/// Command lines longer than this are cut in details (and matched on their first 64 KiB).
const CMDLINE_CAP: usize = 64 * 1024;
const DETAIL_CMDLINE: usize = 200;

/// What the scan knows about one matching process.
struct Found {
    pid: u32,
    comm: String,
    cmdline: String,
    age_ms: i64,
}

pub(crate) fn probe(check: &ProcessCheck, now_ms: i64, deadline: Instant) -> Outcome {
    scan(check, now_ms, deadline, "/proc")
}

fn scan(check: &ProcessCheck, now_ms: i64, deadline: Instant, proc_root: &str) -> Outcome {
    let clock = match boot_clock(proc_root) {
        Ok(clock) => clock,
        Err(e) => return Outcome::unknown(e),
    };
    let dir = match fs::read_dir(proc_root) {
        Ok(dir) => dir,
        Err(e) => return Outcome::unknown(format!("cannot read {proc_root}: {e}")),
    };
    let me = std::process::id();
    let min_ms = span_ms(check.min_age);
    let mut buf = Vec::with_capacity(512);
    let mut path = String::with_capacity(32);
    let (mut oldest, mut matched, mut younger) = (None::<Found>, 0usize, 0usize);
    for (seen, entry) in dir.enumerate() {
        if seen % 64 == 63 && Instant::now() >= deadline {
            return Outcome::unknown("the /proc scan ran out of time");
        }
        // An entry that errors is a process that went away while we read the directory.
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        // A process can vanish between any two reads: every read failure means "skip it".
        let Some(found) = inspect(check, pid, proc_root, clock, now_ms, &mut buf, &mut path) else {
            continue;
        };
        if found.age_ms < min_ms {
            younger += 1;
            continue;
        }
        matched += 1;
        if oldest.as_ref().is_none_or(|o| found.age_ms > o.age_ms) {
            oldest = Some(found);
        }
    }
    let what = match &check.pattern {
        ProcessPattern::Name(p) => format!("named {:?}", p.as_str()),
        ProcessPattern::Command(p) => format!("with command line {:?}", p.as_str()),
    };
    let min = human_ms(u64::try_from(min_ms).unwrap_or_default());
    match oldest {
        Some(f) => {
            let more = if matched > 1 {
                format!(" (and {} more)", matched - 1)
            } else {
                String::new()
            };
            Outcome::matched(format!(
                "pid {} ({}) {:?} has been running for {}{more}",
                f.pid,
                f.comm,
                f.cmdline,
                human_ms(u64::try_from(f.age_ms).unwrap_or_default())
            ))
        }
        None if younger > 0 => Outcome::clear(format!(
            "{younger} process(es) {what}, all younger than {min}"
        )),
        None => Outcome::clear(format!("no process {what}")),
    }
}

/// Reads one process; `None` when it does not match, vanished, or has no command line. Kernel
/// threads (and zombies) have none, and a check for a job never means a kernel thread such as
/// `migration/0`.
fn inspect(
    check: &ProcessCheck,
    pid: u32,
    proc_root: &str,
    clock: BootClock,
    now_ms: i64,
    buf: &mut Vec<u8>,
    path: &mut String,
) -> Option<Found> {
    let cmdline = match &check.pattern {
        ProcessPattern::Name(pattern) => {
            // comm is small and cheap: the common miss costs one read.
            let comm = read_comm(proc_root, pid, buf, path)?;
            let by_comm = pattern.is_match(&comm);
            if !by_comm && comm.len() != COMM_LEN {
                return None;
            }
            read_into_proc(proc_root, pid, "cmdline", buf, path, CMDLINE_CAP)?;
            if buf.is_empty() {
                return None;
            }
            if !by_comm {
                let argv0 = buf.split(|&b| b == 0).next().unwrap_or_default();
                let base = argv0.rsplit(|&b| b == b'/').next().unwrap_or_default();
                if base.is_empty() || !pattern.is_match(&String::from_utf8_lossy(base)) {
                    return None;
                }
            }
            cmdline_text(buf).into_owned()
        }
        ProcessPattern::Command(pattern) => {
            read_into_proc(proc_root, pid, "cmdline", buf, path, CMDLINE_CAP)?;
            if buf.is_empty() {
                return None;
            }
            let line = cmdline_text(buf);
            if !pattern.is_match(&line) {
                return None;
            }
            line.into_owned()
        }
    };
    let (comm, start_ticks) = read_stat(proc_root, pid, buf, path)?;
    let start_ms = clock.start_ms(start_ticks);
    let mut cmdline = cmdline;
    if cmdline.len() > DETAIL_CMDLINE {
        let mut cut = DETAIL_CMDLINE;
        while !cmdline.is_char_boundary(cut) {
            cut -= 1;
        }
        cmdline.truncate(cut);
        cmdline.push('…');
    }
    Some(Found {
        pid,
        comm,
        cmdline,
        // A process started "after now" (a clock step, btime rounding) is zero seconds old.
        age_ms: now_ms.saturating_sub(start_ms).max(0),
    })
}

/// The command line as `ps` shows it: arguments joined by spaces. Rewrites `buf` in place, so
/// a miss allocates nothing.
fn cmdline_text(buf: &mut Vec<u8>) -> std::borrow::Cow<'_, str> {
    while buf.last() == Some(&0) {
        buf.pop();
    }
    for b in buf.iter_mut() {
        if *b == 0 {
            *b = b' ';
        }
    }
    String::from_utf8_lossy(buf)
}

/// Reads a small /proc file. procfs hands over everything that fits in one read, so a read that
/// does not fill the buffer is the whole file: one `read` per file instead of two.
fn read_into(path: &str, buf: &mut Vec<u8>, cap: usize) -> io::Result<()> {
    const FIRST: usize = 4096;
    buf.clear();
    buf.resize(FIRST.min(cap), 0);
    let mut file = File::open(path)?;
    let mut len = 0;
    loop {
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => {
                len += n;
                if len < buf.len() {
                    break;
                }
                if buf.len() >= cap {
                    break;
                }
                let grown = (buf.len() * 2).min(cap);
                buf.resize(grown, 0);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    Ok(())
}

/// Reads `/proc/PID/FILE` into `buf`; `None` when the process is gone or hidden.
fn read_into_proc(
    proc_root: &str,
    pid: u32,
    file: &str,
    buf: &mut Vec<u8>,
    path: &mut String,
    cap: usize,
) -> Option<()> {
    use std::fmt::Write;
    path.clear();
    let _ = write!(path, "{proc_root}/{pid}/{file}");
    read_into(path, buf, cap).ok()
}

/// `/proc/PID/comm`, without its newline.
fn read_comm(proc_root: &str, pid: u32, buf: &mut Vec<u8>, path: &mut String) -> Option<String> {
    read_into_proc(proc_root, pid, "comm", buf, path, 256)?;
    let text = buf.strip_suffix(b"\n").unwrap_or(buf);
    Some(String::from_utf8_lossy(text).into_owned())
}

/// `/proc/PID/stat`: the name, and the start time in clock ticks since boot.
fn read_stat(
    proc_root: &str,
    pid: u32,
    buf: &mut Vec<u8>,
    path: &mut String,
) -> Option<(String, u64)> {
    read_into_proc(proc_root, pid, "stat", buf, path, 4096)?;
    parse_stat(buf)
}

/// Parses a stat line. The name sits in parentheses and may itself hold `)`, spaces or
/// newlines, so the fields are read after the LAST `)`.
pub(crate) fn parse_stat(stat: &[u8]) -> Option<(String, u64)> {
    let open = stat.iter().position(|&b| b == b'(')?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    if close < open {
        return None;
    }
    let comm = String::from_utf8_lossy(&stat[open + 1..close]).into_owned();
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    // Field 3 (state) is the first after the name; field 22 (starttime) is the 20th.
    let start_ticks = rest.split_ascii_whitespace().nth(19)?.parse().ok()?;
    Some((comm, start_ticks))
}

/// Boot time and clock ticks per second: what turns a start time in ticks into wall time.
#[derive(Clone, Copy, Debug)]
struct BootClock {
    btime_ms: i64,
    ticks_per_sec: i64,
}

impl BootClock {
    fn start_ms(self, ticks: u64) -> i64 {
        let ticks = i64::try_from(ticks).unwrap_or(i64::MAX);
        let since_boot_ms = ticks.saturating_mul(1000) / self.ticks_per_sec.max(1);
        self.btime_ms.saturating_add(since_boot_ms)
    }
}

/// Read once per process lifetime: the boot time does not change, and `/proc/stat` is long on
/// machines with many CPUs.
fn boot_clock(proc_root: &str) -> Result<BootClock, String> {
    static CLOCK: OnceLock<BootClock> = OnceLock::new();
    if proc_root == "/proc"
        && let Some(clock) = CLOCK.get()
    {
        return Ok(*clock);
    }
    let stat = fs::read_to_string(format!("{proc_root}/stat"))
        .map_err(|e| format!("cannot read {proc_root}/stat: {e}"))?;
    let btime: i64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("{proc_root}/stat has no btime"))?;
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks <= 0 {
        return Err("sysconf(_SC_CLK_TCK) failed".to_owned());
    }
    // `c_long` is 32 bits on some targets.
    #[allow(clippy::useless_conversion)]
    let clock = BootClock {
        btime_ms: btime.saturating_mul(1000),
        ticks_per_sec: i64::from(ticks),
    };
    if proc_root == "/proc" {
        let _ = CLOCK.set(clock);
    }
    Ok(clock)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Case = (&'static [u8], Option<(&'static str, u64)>);

    #[test]
    fn stat_names_with_parentheses_spaces_and_newlines() {
        let cases: &[Case] = &[
            (
                b"42 (sleep) S 1 42 42 0 -1 4194304 90 0 0 0 0 0 0 0 20 0 1 0 123456 5660672 200 18446744073709551615",
                Some(("sleep", 123_456)),
            ),
            (
                b"42 (a) b) (c) S 1 42 42 0 -1 4194304 90 0 0 0 0 0 0 0 20 0 1 0 777 5660672 200",
                Some(("a) b) (c", 777)),
            ),
            (
                b"42 (new\nline ) x) R 1 42 42 0 -1 4194304 90 0 0 0 0 0 0 0 20 0 1 0 9 0 0",
                Some(("new\nline ) x", 9)),
            ),
            (b"42 (short) S 1 2 3", None),
            (b"42 sleep S", None),
            (b")(", None),
            (b"", None),
            (b"42 (x) S 1 42 42 0 -1 4194304 90 0 0 0 0 0 0 0 20 0 1 0 notanumber 0", None),
        ];
        for (input, expect) in cases {
            let got = parse_stat(input);
            let got = got.as_ref().map(|(c, t)| (c.as_str(), *t));
            assert_eq!(got, *expect, "{:?}", String::from_utf8_lossy(input));
        }
    }
}
