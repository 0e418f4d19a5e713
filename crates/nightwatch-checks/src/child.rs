//! Running a program with a deadline: no shell, no stdin, a little of its output, and killed
//! (with everything it started) when it overruns.

use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};
use thiserror::Error;

/// A program that ran to its end.
pub struct Exited {
    pub status: ExitStatus,
    /// `None` when stdout was not asked for, or was still open at the deadline.
    pub stdout: Option<Vec<u8>>,
    pub stderr: Option<Vec<u8>>,
}

#[derive(Debug, Error)]
pub enum ChildError {
    #[error("could not start {program}: {source}")]
    Spawn { program: String, source: io::Error },
    // Said the same way as a check the runner gave up waiting for: both are its timeout.
    #[error("still running at its deadline (its timeout), so it was killed")]
    TimedOut,
    #[error("could not wait for it: {0}")]
    Wait(io::Error),
}

/// Runs `cmd` until it exits or `deadline` passes. Captures at most `stdout_cap` bytes of stdout
/// (`None`: discard it) and `stderr_cap` bytes of stderr; the rest is read and dropped so a
/// chatty program never blocks on a full pipe.
pub fn run_bounded(
    mut cmd: Command,
    deadline: Instant,
    stdout_cap: Option<usize>,
    stderr_cap: usize,
) -> Result<Exited, ChildError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    cmd.stdin(Stdio::null())
        .stdout(if stdout_cap.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        // Its own process group, so a timeout kills what it started too.
        .process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|source| ChildError::Spawn { program, source })?;
    let stdout = match (stdout_cap, child.stdout.take()) {
        (Some(cap), Some(pipe)) => capture(pipe, cap),
        _ => None,
    };
    let stderr = child
        .stderr
        .take()
        .and_then(|pipe| capture(pipe, stderr_cap));

    let status = match wait_until(&mut child, deadline) {
        Ok(Some(status)) => status,
        Ok(None) => {
            kill_group(&mut child);
            return Err(ChildError::TimedOut);
        }
        Err(e) => {
            kill_group(&mut child);
            return Err(ChildError::Wait(e));
        }
    };
    // A grandchild may still hold the pipes open: wait for them only until the deadline.
    let collect = |rx: Option<Receiver<Vec<u8>>>| {
        rx.and_then(|rx| {
            rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .ok()
        })
    };
    Ok(Exited {
        status,
        stdout: collect(stdout),
        stderr: collect(stderr),
    })
}

fn wait_until(child: &mut Child, deadline: Instant) -> io::Result<Option<ExitStatus>> {
    // Polling with a short, growing sleep: most checks exit within a millisecond or two, and a
    // waiter thread per child would cost more than the polls.
    let mut nap = Duration::from_micros(200);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        thread::sleep(nap.min(left));
        nap = (nap * 2).min(Duration::from_millis(10));
    }
}

fn kill_group(child: &mut Child) {
    match i32::try_from(child.id()) {
        Ok(pgid) if pgid > 0 => {
            // SAFETY: kill(2) has no memory effects; `-pgid` names the process group this child
            // leads (process_group(0) above), which holds only what it started.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        _ => {
            let _ = child.kill();
        }
    }
    // Reap it: SIGKILL cannot be caught, so this returns promptly.
    let _ = child.wait();
}

/// Reads `pipe` on its own thread, keeping the first `cap` bytes.
fn capture(mut pipe: impl Read + Send + 'static, cap: usize) -> Option<Receiver<Vec<u8>>> {
    let (tx, rx) = mpsc::channel();
    thread::Builder::new()
        .name("nightwatch-check-pipe".to_owned())
        .spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let room = cap.saturating_sub(kept.len());
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(kept);
        })
        .ok()?;
    Some(rx)
}
