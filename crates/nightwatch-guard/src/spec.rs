//! `memory_guard:` in serve.yaml: when the host counts as short of memory (earlyoom's two
//! levels, and PSI held for a while), how close to its own limit a job may come, and the limits
//! and priority each kind of job runs with.
//!
//! ```yaml
//! memory_guard:
//!   required: true              # no cgroup can be made: refuse runbooks (false: run unguarded)
//!   every: 1s                   # how often pressure and usage are read
//!   mem_available_below: 10%    # earlyoom's -m: MemAvailable at or under this much of MemTotal
//!   swap_free_below: 10%        #   ... and SwapFree at or under this much (no swap: none free)
//!   pressure: { some_avg10_above: 40%, for: 5s }   # or `pressure: ~` to leave PSI out
//!   stop_at: 95%                # a job using this much of its own memory limit is stopped
//!   runbook: { memory: 1GiB, cpu: 100%, priority: 50 }
//!   agent: { memory: 2GiB, cpu: 100%, priority: 20 }
//!   routes:
//!     disk-full: { memory: 256MiB, priority: 70 }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use nightwatch_spec::backup::ByteSize;
use serde::{Deserialize, Deserializer};

/// A percentage as written: `10%`, `12.5%`, `250%` (CPU: two and a half cores).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Percent(pub f64);

impl Percent {
    /// Reads `10%`, `12.5 %`; `None` without the sign, or for a negative or non-finite number.
    pub fn parse(text: &str) -> Option<Percent> {
        let number = text.trim().strip_suffix('%')?.trim();
        // Digits and one dot only: no signs, exponents, `inf` or `NaN` sneak through `f64`.
        if number.is_empty()
            || !number.chars().all(|c| c.is_ascii_digit() || c == '.')
            || number.matches('.').count() > 1
            || number.len() > 16
        {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        value.is_finite().then_some(Percent(value))
    }

    /// This share of `whole`, rounded down.
    pub fn of(self, whole: u64) -> u64 {
        // u128 keeps `whole * share` exact for every u64; shares are held as millionths.
        let millionths = (self.0 * 10_000.0).round().max(0.0) as u128;
        u64::try_from(u128::from(whole) * millionths / 1_000_000).unwrap_or(u64::MAX)
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

impl<'de> Deserialize<'de> for Percent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Percent, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(f64),
            Text(String),
        }
        match Written::deserialize(deserializer)? {
            Written::Number(n) => Err(serde::de::Error::custom(format!(
                "`{n}` has no unit; write a percentage with its sign, like {n}%"
            ))),
            Written::Text(t) => Percent::parse(&t).ok_or_else(|| {
                serde::de::Error::custom(format!("`{t}` is not a percentage like 10% or 12.5%"))
            }),
        }
    }
}

/// A level of memory: a share of a total (`10%`) or an amount (`512MiB`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Level {
    Share(Percent),
    Bytes(ByteSize),
}

impl Level {
    /// The level in bytes, for a total of `total`.
    pub fn bytes_of(self, total: u64) -> u64 {
        match self {
            Level::Share(p) => p.of(total),
            Level::Bytes(b) => b.0,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::Share(p) => p.fmt(f),
            Level::Bytes(b) => b.fmt(f),
        }
    }
}

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Level, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.trim().ends_with('%') {
            return Percent::parse(&text).map(Level::Share).ok_or_else(|| {
                serde::de::Error::custom(format!("`{text}` is not a percentage like 10%"))
            });
        }
        ByteSize::parse(&text).map(Level::Bytes).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{text}` is neither a percentage (10%) nor a size (512MiB)"
            ))
        })
    }
}

/// Memory pressure (PSI) as a reason to stop a job: the share of time some task stalled on
/// memory over the last ten seconds, held above `some_avg10_above` for `for`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PressureRule {
    pub some_avg10_above: Percent,
    #[serde(rename = "for", deserialize_with = "nightwatch_time::serde::duration")]
    pub held_for: Duration,
}

/// What a guarded job runs with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobLimits {
    /// Its memory limit (the kernel's `memory.max` / `memory.limit_in_bytes`).
    pub memory: ByteSize,
    /// Its CPU share, 100% being one core; `None`: no CPU limit.
    pub cpu: Option<Percent>,
    /// 0..=100; under pressure the lowest is stopped first.
    pub priority: u8,
}

/// A job kind's or a route's limits as written; what is left out comes from the kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobLimitsFile {
    pub memory: Option<ByteSize>,
    pub cpu: Option<Percent>,
    pub priority: Option<u8>,
}

impl JobLimitsFile {
    fn over(self, base: JobLimits) -> JobLimits {
        JobLimits {
            memory: self.memory.unwrap_or(base.memory),
            cpu: self.cpu.or(base.cpu),
            priority: self.priority.unwrap_or(base.priority),
        }
    }
}

/// What a job is: an agent session's work is stopped before a runbook's by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    Runbook,
    Agent,
}

/// Programs that are agent sessions when a route runs them.
const AGENTS: [&str; 3] = ["claude", "codex", "gemini"];

impl JobKind {
    /// An agent session when the command's program is an agent's CLI (`claude -p ...`).
    pub fn of_command(argv: &[String]) -> JobKind {
        let program = argv.first().map(String::as_str).unwrap_or("");
        let name = program.rsplit('/').next().unwrap_or(program);
        if AGENTS.contains(&name) {
            JobKind::Agent
        } else {
            JobKind::Runbook
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Runbook => "runbook",
            JobKind::Agent => "agent",
        }
    }
}

/// The `memory_guard:` section, checked.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardConfig {
    /// With no cgroup to be had: true refuses runbooks, saying why; false runs them unguarded.
    #[serde(default = "yes")]
    pub required: bool,
    #[serde(
        default = "default_every",
        deserialize_with = "nightwatch_time::serde::duration"
    )]
    pub every: Duration,
    #[serde(default = "ten_percent")]
    pub mem_available_below: Level,
    #[serde(default = "ten_percent")]
    pub swap_free_below: Level,
    /// `None` (`pressure: ~`): PSI is not a reason to stop anything.
    #[serde(default = "default_pressure")]
    pub pressure: Option<PressureRule>,
    #[serde(default = "default_stop_at")]
    pub stop_at: Percent,
    #[serde(default)]
    runbook: JobLimitsFile,
    #[serde(default)]
    agent: JobLimitsFile,
    /// Per route id, over its kind's limits.
    #[serde(default)]
    routes: BTreeMap<String, JobLimitsFile>,
}

impl Default for GuardConfig {
    /// Every default: what `memory_guard: {}` (or a bare `memory_guard:`) means.
    fn default() -> GuardConfig {
        GuardConfig {
            required: true,
            every: default_every(),
            mem_available_below: ten_percent(),
            swap_free_below: ten_percent(),
            pressure: default_pressure(),
            stop_at: default_stop_at(),
            runbook: JobLimitsFile::default(),
            agent: JobLimitsFile::default(),
            routes: BTreeMap::new(),
        }
    }
}

/// `#[serde(default, deserialize_with = "nightwatch_guard::spec::section")]` for the
/// `memory_guard:` field of a config file: absent is no guard, and a bare `memory_guard:`
/// (YAML's null) is a guard with every default, as `{}` is; never silently off.
pub fn section<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<GuardConfig>, D::Error> {
    Ok(Some(
        Option::<GuardConfig>::deserialize(deserializer)?.unwrap_or_default(),
    ))
}

fn yes() -> bool {
    true
}
fn default_every() -> Duration {
    Duration::from_secs(1)
}
fn ten_percent() -> Level {
    Level::Share(Percent(10.0))
}
fn default_pressure() -> Option<PressureRule> {
    Some(PressureRule {
        some_avg10_above: Percent(40.0),
        held_for: Duration::from_secs(5),
    })
}
fn default_stop_at() -> Percent {
    Percent(95.0)
}

/// A runbook's limits unless the file says: a gibibyte, one core, the middle priority.
pub const RUNBOOK_DEFAULTS: JobLimits = JobLimits {
    memory: ByteSize(1 << 30),
    cpu: Some(Percent(100.0)),
    priority: 50,
};
/// An agent session's: more memory, and stopped before any runbook.
pub const AGENT_DEFAULTS: JobLimits = JobLimits {
    memory: ByteSize(2 << 30),
    cpu: Some(Percent(100.0)),
    priority: 20,
};

/// The smallest memory limit a job may have: below it nothing starts (a shell needs more).
const MIN_MEMORY: u64 = 4 << 20;

impl GuardConfig {
    /// Reads the section from YAML text (tests and examples; serve.yaml reads it in place).
    pub fn from_yaml(text: &str) -> Result<GuardConfig, String> {
        let config: GuardConfig = yaml_from_str(text)?;
        config.check(None)?;
        Ok(config)
    }

    /// Checks what serde cannot: ranges, and that `routes` names routes that exist
    /// (`route_ids`; `None`: not checked).
    pub fn check(&self, route_ids: Option<&[&str]>) -> Result<(), String> {
        if self.every < Duration::from_millis(10) || self.every > Duration::from_secs(60) {
            return Err(format!(
                "memory_guard.every: {} is outside 10ms..60s",
                nightwatch_time::format_duration(self.every)
            ));
        }
        for (field, level) in [
            ("mem_available_below", self.mem_available_below),
            ("swap_free_below", self.swap_free_below),
        ] {
            if let Level::Share(p) = level
                && p.0 > 100.0
            {
                return Err(format!("memory_guard.{field}: {p} is more than 100%"));
            }
        }
        if let Some(rule) = &self.pressure
            && rule.some_avg10_above.0 >= 100.0
        {
            return Err(format!(
                "memory_guard.pressure.some_avg10_above: {} can never be exceeded",
                rule.some_avg10_above
            ));
        }
        if self.stop_at.0 <= 0.0 || self.stop_at.0 > 100.0 {
            return Err(format!(
                "memory_guard.stop_at: {} is not within (0%, 100%]",
                self.stop_at
            ));
        }
        let mut kinds: Vec<(String, JobLimits)> = vec![
            ("runbook".into(), self.limits(JobKind::Runbook, None)),
            ("agent".into(), self.limits(JobKind::Agent, None)),
        ];
        for route in self.routes.keys() {
            if let Some(ids) = route_ids
                && !ids.contains(&route.as_str())
            {
                return Err(format!(
                    "memory_guard.routes.{route}: no route has this id (routes: {})",
                    ids.join(", ")
                ));
            }
            kinds.push((
                format!("routes.{route}"),
                self.limits(JobKind::Runbook, Some(route)),
            ));
        }
        for (field, limits) in kinds {
            if limits.priority > 100 {
                return Err(format!(
                    "memory_guard.{field}.priority: {} is outside 0..100",
                    limits.priority
                ));
            }
            if limits.memory.0 < MIN_MEMORY {
                return Err(format!(
                    "memory_guard.{field}.memory: {} is under the smallest limit, {}",
                    limits.memory,
                    ByteSize(MIN_MEMORY)
                ));
            }
            if let Some(cpu) = limits.cpu
                && (cpu.0 < 1.0 || cpu.0 > 100_000.0)
            {
                return Err(format!(
                    "memory_guard.{field}.cpu: {cpu} is outside 1%..100000%"
                ));
            }
        }
        Ok(())
    }

    /// The limits of a job of `kind`, run for `route` when it is one.
    pub fn limits(&self, kind: JobKind, route: Option<&str>) -> JobLimits {
        let base = match kind {
            JobKind::Runbook => self.runbook.over(RUNBOOK_DEFAULTS),
            JobKind::Agent => self.agent.over(AGENT_DEFAULTS),
        };
        match route.and_then(|r| self.routes.get(r)) {
            Some(own) => own.over(base),
            None => base,
        }
    }
}

fn yaml_from_str(text: &str) -> Result<GuardConfig, String> {
    if text.trim().is_empty() {
        return yaml_serde::from_str("{}").map_err(|e| e.to_string());
    }
    yaml_serde::from_str(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_need_their_sign_and_a_plain_number() {
        assert_eq!(Percent::parse("10%"), Some(Percent(10.0)));
        assert_eq!(Percent::parse(" 12.5 % "), Some(Percent(12.5)));
        assert_eq!(Percent::parse("250%"), Some(Percent(250.0)));
        for bad in [
            "10", "%", "-5%", "1e3%", "inf%", "NaN%", "1.2.3%", "", "+5%", "0x10%",
        ] {
            assert_eq!(Percent::parse(bad), None, "{bad}");
        }
        assert_eq!(Percent(10.0).of(1000), 100);
        assert_eq!(Percent(100.0).of(u64::MAX), u64::MAX);
        assert_eq!(Percent(95.0).of(64 << 20), (64u64 << 20) * 95 / 100);
    }

    #[test]
    fn an_empty_section_takes_every_default() {
        let c = GuardConfig::from_yaml("").unwrap();
        assert_eq!(c, GuardConfig::default());
        assert!(c.required);
        assert_eq!(c.every, Duration::from_secs(1));
        assert_eq!(c.mem_available_below, Level::Share(Percent(10.0)));
        assert_eq!(c.stop_at, Percent(95.0));
        assert_eq!(c.limits(JobKind::Runbook, None), RUNBOOK_DEFAULTS);
        assert_eq!(c.limits(JobKind::Agent, None), AGENT_DEFAULTS);
        assert!(
            c.limits(JobKind::Agent, None).priority < c.limits(JobKind::Runbook, None).priority,
            "agent work goes first"
        );
        assert_eq!(c.pressure, default_pressure());
    }

    #[test]
    fn a_full_section_is_read_and_routes_override_their_kind() {
        let c = GuardConfig::from_yaml(
            "required: false\nevery: 250ms\nmem_available_below: 512MiB\nswap_free_below: 5%\n\
             pressure: { some_avg10_above: 30%, for: 10s }\nstop_at: 90%\n\
             runbook: { memory: 256MiB, priority: 60 }\nagent: { cpu: 50% }\n\
             routes: { disk-full: { memory: 64MiB } }\n",
        )
        .unwrap();
        assert!(!c.required);
        assert_eq!(c.every, Duration::from_millis(250));
        assert_eq!(c.mem_available_below, Level::Bytes(ByteSize(512 << 20)));
        assert_eq!(
            c.pressure,
            Some(PressureRule {
                some_avg10_above: Percent(30.0),
                held_for: Duration::from_secs(10)
            })
        );
        let disk = c.limits(JobKind::Runbook, Some("disk-full"));
        assert_eq!(disk.memory, ByteSize(64 << 20));
        assert_eq!(disk.priority, 60, "the rest comes from runbook:");
        assert_eq!(c.limits(JobKind::Agent, None).cpu, Some(Percent(50.0)));
        let off = GuardConfig::from_yaml("pressure: ~").unwrap();
        assert_eq!(off.pressure, None);
    }

    #[test]
    fn mistakes_are_refused_saying_where() {
        for (text, says) in [
            ("stop_at: 95", "has no unit"),
            ("stop_at: 0%", "stop_at"),
            ("stop_at: 120%", "stop_at"),
            ("mem_available_below: 110%", "mem_available_below"),
            ("mem_available_below: lots", "neither a percentage"),
            ("runbook: { memory: 1KiB }", "smallest"),
            ("runbook: { priority: 101 }", "priority"),
            ("agent: { cpu: 0% }", "cpu"),
            ("every: 0s", "every"),
            ("every: soon", "every"),
            ("pressure: { some_avg10_above: 100%, for: 5s }", "never"),
            ("pressure: { above: 40% }", "unknown field"),
            ("stop_at_: 90%", "unknown field"),
        ] {
            let err = GuardConfig::from_yaml(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
        let c = GuardConfig::from_yaml("routes: { nope: { priority: 1 } }").unwrap();
        let err = c.check(Some(&["disk-full"])).unwrap_err();
        assert!(err.contains("routes.nope"), "{err}");
    }

    #[test]
    fn agent_clis_are_agent_sessions() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            JobKind::of_command(&argv(&["claude", "-p", "x"])),
            JobKind::Agent
        );
        assert_eq!(
            JobKind::of_command(&argv(&["/usr/local/bin/codex"])),
            JobKind::Agent
        );
        assert_eq!(
            JobKind::of_command(&argv(&["/opt/runbooks/disk.sh"])),
            JobKind::Runbook
        );
        assert_eq!(JobKind::of_command(&[]), JobKind::Runbook);
    }
}
