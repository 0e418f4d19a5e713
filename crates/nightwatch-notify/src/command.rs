//! The command channel: a local program, run without a shell, told by stdin and environment.

use crate::escalation::{Escalation, shorten};
use crate::failure::{Failure, snippet};
use crate::spec::CommandChannel;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How much of stderr is kept for the failure reason.
const STDERR_LIMIT: u64 = 4096;

/// Longest `NIGHTWATCH_ESCALATION_*` value, in characters (at most 4 bytes each, well under the
/// kernel's 128 KiB per variable).
const ENV_LIMIT: usize = 8192;

/// How often the child is polled; short next to any sensible timeout.
const POLL: Duration = Duration::from_millis(10);

/// How long to wait for stderr after the child has exited: a grandchild it left behind may hold
/// the pipe open, and the reason is not worth hanging for.
const STDERR_GRACE: Duration = Duration::from_millis(200);

/// Runs the program once; exit status 0 is delivered (reported as status 0).
pub(crate) fn run(
    channel: &CommandChannel,
    escalation: &Escalation,
    timeout: Duration,
) -> Result<u16, Failure> {
    let program = channel.argv.first().cloned().unwrap_or_default();
    let json = serde_json::to_vec(escalation).map_err(|e| Failure::Internal {
        detail: format!("the escalation could not be written as JSON: {e}"),
    })?;
    let mut command = Command::new(&program);
    command
        .args(channel.argv.iter().skip(1))
        .envs(environment(escalation))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // Its own process group, so a timeout kills whatever the program started too.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(|e| Failure::Spawn {
        program: program.clone(),
        detail: e.to_string(),
    })?;

    // Writing and reading on their own threads: a program that neither reads stdin nor exits
    // must not block the timeout. Neither thread is joined, for the same reason.
    if let Some(mut stdin) = child.stdin.take() {
        thread::spawn(move || {
            // A program may exit without reading; the broken pipe is not its failure.
            let _ = stdin.write_all(&json);
        });
    }
    let (stderr_tx, stderr_rx) = mpsc::channel();
    if let Some(stderr) = child.stderr.take() {
        thread::spawn(move || {
            let mut kept = Vec::new();
            let mut stderr = stderr;
            let _ = (&mut stderr).take(STDERR_LIMIT).read_to_end(&mut kept);
            // Drain the rest so the program never blocks on a full pipe.
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
            let _ = stderr_tx.send(kept);
        });
    }

    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                kill(&mut child);
                return Err(Failure::Killed {
                    program,
                    after: timeout,
                });
            }
            Ok(None) => thread::sleep(POLL),
            Err(e) => {
                kill(&mut child);
                return Err(Failure::Wait {
                    program,
                    detail: e.to_string(),
                });
            }
        }
    };
    if status.success() {
        return Ok(0);
    }
    let stderr = stderr_rx
        .recv_timeout(STDERR_GRACE)
        .map(|bytes| snippet(&bytes))
        .unwrap_or_default();
    if let Some(code) = status.code() {
        return Err(Failure::Exit {
            program,
            code,
            stderr,
        });
    }
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0);
    #[cfg(not(unix))]
    let signal = 0;
    Err(Failure::Signal {
        program,
        signal,
        stderr,
    })
}

/// The escalation's fields as `NIGHTWATCH_ESCALATION_*`, for scripts that do not parse JSON.
fn environment(escalation: &Escalation) -> Vec<(&'static str, String)> {
    let mut vars = vec![
        ("NIGHTWATCH_ESCALATION_VERDICT", &escalation.verdict),
        ("NIGHTWATCH_ESCALATION_RECORD_ID", &escalation.record_id),
        ("NIGHTWATCH_ESCALATION_WHO", &escalation.who),
        ("NIGHTWATCH_ESCALATION_WHAT", &escalation.what),
        ("NIGHTWATCH_ESCALATION_WHY", &escalation.why),
        ("NIGHTWATCH_ESCALATION_WHERE", &escalation.where_),
        ("NIGHTWATCH_ESCALATION_WHEN", &escalation.when),
        ("NIGHTWATCH_ESCALATION_INSPECT", &escalation.inspect),
    ];
    if let Some(approve) = &escalation.approve {
        vars.push(("NIGHTWATCH_ESCALATION_APPROVE", approve));
    }
    // An environment value cannot hold NUL, and Linux refuses to start a program with one
    // longer than 128 KiB; the full text is on stdin, so the variables are cut instead.
    vars.into_iter()
        .map(|(name, value)| (name, shorten(&value.replace('\0', ""), ENV_LIMIT)))
        .collect()
}

/// Kills the program and everything in its process group, then reaps it.
fn kill(child: &mut Child) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the process group the child leads (it was
        // started with process_group(0)); it touches no memory of ours.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
