//! `command:` runs an operator's own "is it safe?" program and reads its exit code.

use crate::Outcome;
use crate::child::{ChildError, run_bounded};
use crate::spec::{CommandCheck, ExitMatch};
use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Instant;

/// Enough stderr to say why, not enough to flood the ledger.
const STDERR_CAP: usize = 512;

pub(crate) fn probe(check: &CommandCheck, deadline: Instant) -> Outcome {
    let Some((program, args)) = check.argv.split_first() else {
        return Outcome::unknown("argv is empty");
    };
    let mut cmd = Command::new(program);
    cmd.args(args);
    let exited = match run_bounded(cmd, deadline, None, STDERR_CAP) {
        Ok(exited) => exited,
        Err(e @ ChildError::TimedOut) => return Outcome::unknown(format!("{program} {e}")),
        Err(e) => return Outcome::unknown(e.to_string()),
    };
    let stderr = exited
        .stderr
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .filter(|s| !s.is_empty())
        .map(|s| format!("; stderr: {s}"))
        .unwrap_or_default();
    let Some(code) = exited.status.code() else {
        let signal = exited.status.signal().unwrap_or_default();
        return Outcome::unknown(format!("{program} was killed by signal {signal}{stderr}"));
    };
    let matched = match check.match_on {
        ExitMatch::NonZero => code != 0,
        ExitMatch::Zero => code == 0,
        ExitMatch::Code(wanted) => code == i32::from(wanted),
    };
    let detail = format!("{program} exited with code {code}{stderr}");
    if matched {
        Outcome::matched(detail)
    } else {
        Outcome::clear(detail)
    }
}
