//! History at chosen times. The binary judges at `NIGHTWATCH_NOW` but always writes records at
//! the real time, so a test that needs a ledger as it looks after weeks of use (a call at 01:00
//! and another at 03:17) writes it here: through the same host and engine the binary uses, with
//! a clock that says when each record was written.

use nightwatch_core::{Action, Actor, ActorKind, Tool};
use nightwatch_gate::{Proposal, Ruling};
use nightwatch_host::{Environment, Host};
use nightwatch_policy::Policy;
use std::path::Path;

/// A clock stopped at one instant, for judging and for writing.
struct WrittenAt {
    ms: i64,
    zone: jiff::tz::TimeZone,
}

impl nightwatch_gate::Clock for WrittenAt {
    fn now_ms(&self) -> i64 {
        self.ms
    }
    fn zone(&self) -> &jiff::tz::TimeZone {
        &self.zone
    }
}

/// One exec call to place in history.
pub struct Call<'a> {
    pub actor: Actor,
    pub session: Option<&'a str>,
    pub call_id: &'a str,
    pub line: &'a str,
}

/// Decides `call` under `policy` through the engine, with the record written at `at` (RFC
/// 3339) in the data directory `home`: the record a hook or `exec` would have written then.
pub fn propose_at(home: &Path, at: &str, policy: &Policy, call: Call<'_>) -> Ruling {
    let host = Host::open_in(Environment::from_vars([(
        "NIGHTWATCH_HOME",
        home.to_str().expect("a UTF-8 path"),
    )]))
    .expect("the host opens");
    let clock = WrittenAt {
        ms: at
            .parse::<jiff::Timestamp>()
            .expect("an RFC 3339 time")
            .as_millisecond(),
        zone: jiff::tz::TimeZone::UTC,
    };
    host.engine()
        .with_clock(&clock)
        .propose(
            policy,
            Proposal {
                action: Action {
                    actor: call.actor,
                    tool: Tool::Exec {
                        line: call.line.to_owned(),
                    },
                    context: nightwatch_core::Context {
                        session: call.session.map(str::to_owned),
                        ..nightwatch_core::Context::default()
                    },
                },
                call_id: Some(call.call_id.to_owned()),
                inputs: serde_json::json!({ "command": call.line }),
                cwd: None,
            },
        )
        .expect("the decision is recorded")
}

/// Decides `line` as `nightwatch exec` would, under the built-in policy, with the record
/// written at `at`.
pub fn exec_at(home: &Path, at: &str, line: &str) -> Ruling {
    let call = Call {
        actor: Actor::new(ActorKind::Script, "exec"),
        session: None,
        call_id: &format!("exec-at-{at}"),
        line,
    };
    propose_at(home, at, &Policy::builtin(nightwatch_shell::analyse), call)
}
