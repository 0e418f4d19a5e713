//! What the process that launched the agent tells nightwatch through the environment.

use crate::environment::Environment;
use nightwatch_core::Context;

/// The context of an action from the (captured) environment of whoever launched the agent:
/// `NIGHTWATCH_SESSION`, `NIGHTWATCH_TRIGGERED_BY`, `NIGHTWATCH_ALERT_ID`, `NIGHTWATCH_TASK`, and
/// the host (`NIGHTWATCH_HOST`, else the machine's name).
pub fn from_env(env: &Environment) -> Context {
    let variable = |name: &str| env.var(name).map(str::to_owned);
    Context {
        session: variable("NIGHTWATCH_SESSION"),
        triggered_by: variable("NIGHTWATCH_TRIGGERED_BY"),
        alert_id: variable("NIGHTWATCH_ALERT_ID"),
        task: variable("NIGHTWATCH_TASK"),
        host: variable("NIGHTWATCH_HOST").or_else(machine_name),
        minute_of_day: None,
    }
}

/// The agent's name as its launcher gave it (`NIGHTWATCH_AGENT`), if any.
pub fn agent_name_in(env: &Environment) -> Option<String> {
    env.var("NIGHTWATCH_AGENT").map(str::to_owned)
}

fn machine_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
}

/// A person acting through the command line: `--by`, else `$USER`, else `$LOGNAME`.
pub fn human(by: Option<String>, env: &Environment) -> nightwatch_core::Actor {
    let id = by
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| env.var("USER").filter(|u| !u.is_empty()).map(str::to_owned))
        .or_else(|| {
            env.var("LOGNAME")
                .filter(|u| !u.is_empty())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "operator".to_owned());
    nightwatch_core::Actor::new(nightwatch_core::ActorKind::Human, id)
}
