//! Nothing changes state silently: a unit or container whose state flips with no record of
//! anyone acting on it is itself a finding (seed 000: 22 databases flipped to failed with zero
//! events).
//!
//! ```yaml
//! state: { unit: app.service }      # its ActiveState, through systemctl
//! state: { container: db-1 }        # its state (running, exited, ...; `absent` when gone)
//! ```
//!
//! Each run notes the state. The first only notes it. When a later run finds another state
//! than the last, the ledger is searched from the last run on (less a minute, for an action
//! recorded just before the previous look whose effect landed after it): a `decision`,
//! `result`, `unguarded-result`, `idle` or `dispatch` record whose tool or inputs name the
//! target is someone acting on it, and the flip is `ok`, naming that record. Without one the
//! flip is `found`. A run that cannot look (or cannot read the ledger) is `unknown` and keeps
//! the last state, so the next run still compares against it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use nightwatch_ledger::{Record, event};
use serde::Deserialize;
use serde_json::json;

use crate::{Env, Observation, Seen};

/// How far before the last run the search for an actor reaches.
const SLACK_MS: i64 = 60_000;

/// The state a container is in when the engine has no container of that name.
pub const ABSENT: &str = "absent";

/// A resource to keep an eye on, with what its last run saw.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "RawState")]
pub struct StateSpec {
    pub target: Target,
    /// The last run's state and when it was seen; shared by clones of the spec, which are the
    /// same watcher.
    last: Arc<Mutex<Option<Noted>>>,
}

/// What a state watcher looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Unit(String),
    Container(String),
}

impl Target {
    /// The name records would mention.
    pub fn name(&self) -> &str {
        match self {
            Target::Unit(name) | Target::Container(name) => name,
        }
    }
}

#[derive(Clone, Debug)]
struct Noted {
    state: String,
    at_ms: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawState {
    unit: Option<String>,
    container: Option<String>,
}

impl TryFrom<RawState> for StateSpec {
    type Error = String;

    fn try_from(raw: RawState) -> Result<StateSpec, String> {
        let target = match (raw.unit, raw.container) {
            (Some(unit), None) => {
                crate::drift::check_unit(&unit)?;
                Target::Unit(unit)
            }
            (None, Some(name)) => {
                crate::drift::check_container(&name)?;
                Target::Container(name)
            }
            _ => return Err("say unit: NAME or container: NAME (one of them)".into()),
        };
        Ok(StateSpec::new(target))
    }
}

/// Events that are someone acting (or deciding to act) on something.
const ACTING: &[&str] = &[
    event::DECISION,
    event::RESULT,
    event::UNGUARDED_RESULT,
    event::IDLE,
    event::DISPATCH,
];

impl StateSpec {
    /// A watcher of `target` that has seen nothing yet.
    pub fn new(target: Target) -> StateSpec {
        StateSpec {
            target,
            last: Arc::new(Mutex::new(None)),
        }
    }

    fn subject(&self) -> String {
        match &self.target {
            Target::Unit(unit) => unit.clone(),
            Target::Container(name) => format!("container {name}"),
        }
    }

    fn look(&self, env: &Env<'_>) -> Result<String, String> {
        match &self.target {
            Target::Unit(unit) => {
                nightwatch_checks::active_state(unit, Instant::now() + env.timeout, None)
            }
            Target::Container(name) => Ok(env
                .containers
                .inspect(name)?
                .map_or_else(|| ABSENT.to_owned(), |facts| facts.state)),
        }
    }

    /// One run: one observation of the target.
    pub fn run(&self, env: &Env<'_>) -> Vec<Observation> {
        let subject = self.subject();
        let now = match self.look(env) {
            Ok(state) => state,
            Err(why) => return vec![Observation::new(subject, Seen::Unknown, why)],
        };
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let Some(before) = last.clone() else {
            *last = Some(Noted {
                state: now.clone(),
                at_ms: env.now_ms,
            });
            return vec![
                Observation::new(
                    subject.clone(),
                    Seen::Ok,
                    format!("{subject} is {now} (first look)"),
                )
                .with_details(json!({ "state": now })),
            ];
        };
        if before.state == now {
            *last = Some(Noted {
                state: now.clone(),
                at_ms: env.now_ms,
            });
            return vec![
                Observation::new(subject.clone(), Seen::Ok, format!("{subject} is {now}"))
                    .with_details(json!({ "state": now })),
            ];
        }
        let since_ms = before.at_ms.saturating_sub(SLACK_MS);
        let actor = match self.who_acted(env, since_ms) {
            Ok(actor) => actor,
            Err(why) => {
                return vec![Observation::new(
                    subject.clone(),
                    Seen::Unknown,
                    format!(
                        "{subject} went {} -> {now}, and the ledger could not be searched for who acted: {why}",
                        before.state
                    ),
                )];
            }
        };
        *last = Some(Noted {
            state: now.clone(),
            at_ms: env.now_ms,
        });
        let details = |record: Option<&Record>| {
            json!({
                "from": before.state,
                "to": now,
                "since_ms": before.at_ms,
                "record": record.map(|r| &r.id),
            })
        };
        match actor {
            Some(record) => vec![
                Observation::new(
                    subject.clone(),
                    Seen::Ok,
                    format!(
                        "{subject} went {} -> {now}; {} ({}:{}) acted on it: {}",
                        before.state,
                        record.id,
                        record.actor.kind,
                        record.actor.id,
                        record.what()
                    ),
                )
                .with_details(details(Some(&record))),
            ],
            None => vec![
                Observation::new(
                    subject.clone(),
                    Seen::Found,
                    format!(
                        "{subject} went {} -> {now} with no record of anyone acting on it",
                        before.state
                    ),
                )
                .with_details(details(None)),
            ],
        }
    }

    /// The newest record since `since_ms` of someone acting on the target.
    fn who_acted(&self, env: &Env<'_>, since_ms: i64) -> Result<Option<Record>, String> {
        let names = self.names();
        let mut best: Option<Record> = None;
        for kind in ACTING {
            let found = crate::touched::newest(env.ledger, kind, Some(since_ms), &mut |r| {
                names.iter().any(|name| names_target(r, name))
            })
            .map_err(|e| e.to_string())?;
            if let Some(found) = found
                && best.as_ref().is_none_or(|b| found.seq > b.seq)
            {
                best = Some(found);
            }
        }
        Ok(best)
    }

    /// How records may name the target: `app.service` also as `app`, as `systemctl restart app`
    /// does.
    fn names(&self) -> Vec<String> {
        let name = self.target.name().to_owned();
        match &self.target {
            Target::Unit(unit) => match unit.strip_suffix(".service") {
                Some(stem) if !stem.is_empty() => vec![name.clone(), stem.to_owned()],
                _ => vec![name],
            },
            Target::Container(_) => vec![name],
        }
    }
}

/// Whether the record's tool or inputs mention `name` as a whole word (`app` in `systemctl
/// restart app`, not in `apply`).
fn names_target(record: &Record, name: &str) -> bool {
    mentions(&record.tool, name) || mentions(&record.inputs.to_string(), name)
}

pub(crate) fn mentions(text: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let part_of_name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@');
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        // A trailing `.` ends a sentence more often than it continues a name.
        let after_ok = match after {
            None => true,
            Some('.') => text[at + name.len() + 1..]
                .chars()
                .next()
                .is_none_or(|c| !part_of_name(c)),
            Some(c) => !part_of_name(c),
        };
        before.is_none_or(|c| !part_of_name(c)) && after_ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_matched_as_whole_words() {
        assert!(mentions("systemctl restart app", "app"));
        assert!(mentions("{\"name\":\"db-1\"}", "db-1"));
        assert!(mentions("restart app.service now", "app.service"));
        assert!(mentions("stop app.", "app"));
        assert!(!mentions("apply the patch", "app"));
        assert!(!mentions("db-10 restarted", "db-1"));
        assert!(!mentions("app.service", "app"));
        assert!(!mentions("", "app"));
        assert!(!mentions("x", ""));
    }

    #[test]
    fn targets_read_and_mistakes_are_refused() {
        let spec: StateSpec = yaml_serde::from_str("{ unit: app.service }").unwrap();
        assert_eq!(spec.target, Target::Unit("app.service".into()));
        assert_eq!(spec.names(), ["app.service", "app"]);
        for yaml in [
            "{}",
            "{ unit: a.service, container: b }",
            "{ container: \"-x\" }",
            "{ pod: x }",
        ] {
            assert!(yaml_serde::from_str::<StateSpec>(yaml).is_err(), "{yaml}");
        }
    }
}
