//! Why one attempt failed, and whether trying again could help.

use std::time::Duration;

/// One failed attempt. Its `Display` is the reason written to the ledger, so it names the
/// cause and, where there is one, what to fix; it never includes a secret or a full URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Failure {
    #[error("environment variable {var} ({what}) is not set")]
    MissingEnv { var: String, what: &'static str },
    #[error("environment variable {var} ({what}) {problem}")]
    BadEnv {
        var: String,
        what: &'static str,
        problem: String,
    },
    #[error("could not reach {host}: {detail}")]
    Connect { host: String, detail: String },
    #[error("{host} did not answer within {after:?}")]
    Timeout { host: String, after: Duration },
    #[error("{host} answered {status}{}", detail_suffix(.detail))]
    Status {
        host: String,
        status: u16,
        detail: String,
        /// From a `Retry-After` header, so a rate-limited server is given the pause it asked for.
        retry_after: Option<Duration>,
    },
    #[error(
        "{host} answered {status}, a redirect (to {location}); point the notifier at the final URL"
    )]
    Redirect {
        host: String,
        status: u16,
        location: String,
    },
    #[error(
        "{host} answered {status} with {body:?} instead of \"ok\"; is this a Slack webhook URL?"
    )]
    NotSlackOk {
        host: String,
        status: u16,
        body: String,
    },
    #[error("request to {host} could not be sent: {detail}")]
    Request { host: String, detail: String },
    #[error("talking to {host} failed: {detail}")]
    Transport { host: String, detail: String },
    #[error("could not start {program}: {detail}")]
    Spawn { program: String, detail: String },
    #[error("{program} exited with status {code}{}", detail_suffix(.stderr))]
    Exit {
        program: String,
        code: i32,
        stderr: String,
    },
    #[error("{program} was killed by signal {signal}{}", detail_suffix(.stderr))]
    Signal {
        program: String,
        signal: i32,
        stderr: String,
    },
    #[error("{program} did not finish within {after:?} and was killed")]
    Killed { program: String, after: Duration },
    #[error("waiting for {program} failed: {detail}")]
    Wait { program: String, detail: String },
    #[error("the notifier stopped unexpectedly: {detail}")]
    Internal { detail: String },
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

impl Failure {
    /// Whether waiting and trying again could change the answer.
    ///
    /// Outages, timeouts, 5xx and 429 pass; a wrong URL, token or configuration does not get
    /// better by being repeated, and repeating a request that may have been accepted risks
    /// paging someone twice.
    pub(crate) fn retryable(&self) -> bool {
        match self {
            Failure::Connect { .. }
            | Failure::Timeout { .. }
            | Failure::Transport { .. }
            | Failure::Exit { .. }
            | Failure::Signal { .. }
            | Failure::Killed { .. } => true,
            Failure::Status { status, .. } => *status == 429 || (500..600).contains(status),
            Failure::MissingEnv { .. }
            | Failure::BadEnv { .. }
            | Failure::Redirect { .. }
            | Failure::NotSlackOk { .. }
            | Failure::Request { .. }
            | Failure::Spawn { .. }
            | Failure::Wait { .. }
            | Failure::Internal { .. } => false,
        }
    }

    /// The wait the other side asked for, if any.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            Failure::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// Text from the other side (a response body, stderr), cut down to one short line.
pub(crate) fn snippet(bytes: &[u8]) -> String {
    const LIMIT: usize = 200;
    let text = String::from_utf8_lossy(bytes);
    let line: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    crate::escalation::shorten(&line, LIMIT)
}
