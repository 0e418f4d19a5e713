use thiserror::Error;

/// Why a check in a policy file was rejected. Each message names the value and what to write.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum SpecError {
    #[error("bad duration {text:?}: {reason} (write e.g. 30m, 2s or 1h30m)")]
    Duration { text: String, reason: String },
    #[error("bad timeout {0:?}: a check's timeout must be more than 0s and at most 60s")]
    Timeout(String),
    #[error("an empty glob matches nothing; write e.g. \"*migrate*\"")]
    EmptyGlob,
    #[error("bad glob {glob:?}: {reason}")]
    Glob { glob: String, reason: String },
    #[error("bad lock_file glob {glob:?}: {reason}")]
    PathGlob { glob: String, reason: String },
    #[error("bad systemd unit {0:?} (expected a unit name like app-migrate.service)")]
    Unit(String),
    #[error("bad url {url:?}: {reason}")]
    Url { url: String, reason: String },
    #[error("bad expect_status {0} (expected an HTTP status code 100-599)")]
    Status(u16),
    #[error("body_contains must not be empty (leave it out to check the status only)")]
    EmptyBodyContains,
    #[error("argv must name a program: write e.g. [\"/usr/local/bin/safe-to-restart\", \"app\"]")]
    EmptyArgv,
    #[error("argv must not contain NUL bytes")]
    NulInArgv,
    #[error("bad match_on {0:?} (expected nonzero, zero or an exit code 0-255)")]
    MatchOn(String),
    #[error("failures must be between 1 and 1000000, not {0}")]
    Failures(u32),
    #[error("a rate's max must be between 1 and 1000000, not {0}")]
    RateMax(u32),
    #[error("a window list must not be empty")]
    NoWindows,
    #[error(
        "a maintenance_window has exactly one of `outside:` (change windows) or `inside:` (freezes)"
    )]
    WindowMode,
    #[error("a process check has exactly one of `name:` or `command:`")]
    ProcessPattern,
    #[error(
        "on_match cannot be allow: a check only holds actions back (use halt, ask or deny, or remove the check)"
    )]
    AllowOnMatch,
    #[error("bad on_match {0:?} (expected halt, ask or deny)")]
    OnMatch(String),
    #[error(
        "a check has exactly one kind, but this one has `{first}` and `{second}`; split it into two checks"
    )]
    TwoKinds { first: &'static str, second: String },
    #[error(
        "a check needs a kind: one of process, lock_file, systemd_unit, http, command, maintenance_window, circuit_breaker or rate"
    )]
    NoKind,
    #[error(transparent)]
    Window(#[from] WindowError),
}

/// Why a maintenance window did not parse.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error(
    "bad window {text:?}: {reason} (expected an optional day or day range and HH:MM-HH:MM local time, e.g. `Sat 02:00-06:00`, `Mon-Fri 22:00-06:00`, `12:00-13:00`)"
)]
pub struct WindowError {
    pub text: String,
    pub reason: &'static str,
}
