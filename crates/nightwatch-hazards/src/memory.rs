//! No memory guard: nothing stops a runaway process before the kernel's OOM killer, which
//! acts late (the host thrashes for minutes first) and picks by size, often the database.
//! A guard is earlyoom, systemd-oomd or nohang, running or enabled.

use serde_json::json;

use crate::{Check, Hazard, Seen};

/// The guards, by process name (`/proc/PID/comm`) and unit.
pub const GUARDS: [(&str, &str); 3] = [
    ("earlyoom", "earlyoom.service"),
    ("systemd-oomd", "systemd-oomd.service"),
    ("nohang", "nohang.service"),
];

/// What the I/O layer found.
#[derive(Clone, Debug, Default)]
pub struct MemoryFacts {
    /// The process names seen under `/proc` (every one, or at least the guards').
    pub running: Vec<String>,
    /// How many processes `/proc` showed: 0 means processes could not be seen at all.
    pub processes_seen: usize,
    /// Units enabled through `/etc/systemd/system/*.wants/` links: (unit, the wants dir).
    pub enabled: Vec<(String, String)>,
    /// `/proc/sys/vm/overcommit_memory`, as read.
    pub overcommit_memory: Option<String>,
}

pub fn judge(facts: &MemoryFacts) -> Check {
    let running: Vec<&str> = GUARDS
        .iter()
        .filter(|(name, _)| facts.running.iter().any(|r| r == name))
        .map(|(name, _)| *name)
        .collect();
    let enabled: Vec<&str> = GUARDS
        .iter()
        .filter(|(_, unit)| facts.enabled.iter().any(|(u, _)| u == unit))
        .map(|(name, _)| *name)
        .collect();
    let evidence = json!({
        "running": running,
        "enabled": enabled,
        "processes_seen": facts.processes_seen,
        "overcommit_memory": facts.overcommit_memory.as_deref().map(str::trim),
    });
    let fix = "install and enable earlyoom (apt install earlyoom; systemctl enable --now earlyoom), \
               or enable systemd-oomd, or let nightwatch serve's memory_guard stop runaway agent work";
    let check = |seen, what: String, fix: &str| {
        Check::new(Hazard::NoMemoryGuard, "memory guard", seen, what, fix).with(evidence.clone())
    };
    if let Some(first) = running.first() {
        return check(Seen::Ok, format!("{first} is running"), "");
    }
    match enabled.first() {
        // Enabled but not among the processes we can see: it died, or was never started.
        Some(name) if facts.processes_seen > 0 => check(
            Seen::Found,
            format!("{name} is enabled but not running"),
            &format!(
                "start it (systemctl start {name}) and look at why it stopped (journalctl -u {name})"
            ),
        ),
        Some(name) => check(
            Seen::Ok,
            format!("{name} is enabled (its process could not be looked for)"),
            "",
        ),
        None => check(
            Seen::Found,
            "no memory guard (earlyoom, systemd-oomd, nohang) is running or enabled: the kernel's \
             OOM killer is the only one, late and picking by size"
                .into(),
            fix,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_guard_is_ok_and_none_is_found() {
        let ok = judge(&MemoryFacts {
            running: vec!["bash".into(), "earlyoom".into()],
            processes_seen: 2,
            ..MemoryFacts::default()
        });
        assert_eq!(ok.seen, Seen::Ok);
        let none = judge(&MemoryFacts {
            running: vec!["bash".into()],
            processes_seen: 1,
            ..MemoryFacts::default()
        });
        assert_eq!(none.seen, Seen::Found);
        assert!(none.fix.contains("earlyoom"));
    }

    #[test]
    fn enabled_but_dead_is_found() {
        let facts = MemoryFacts {
            running: vec!["bash".into()],
            processes_seen: 1,
            enabled: vec![("earlyoom.service".into(), "multi-user.target.wants".into())],
            ..MemoryFacts::default()
        };
        assert_eq!(judge(&facts).seen, Seen::Found);
        let unseen = MemoryFacts {
            processes_seen: 0,
            ..facts
        };
        assert_eq!(judge(&unseen).seen, Seen::Ok);
    }
}
