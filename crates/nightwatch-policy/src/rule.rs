//! A compiled rule and what it is matched against.

use crate::command::CommandPattern;
use crate::lazy::LazyGlobSet;
use crate::paths::PathMatcher;
use nightwatch_core::{Actor, ActorKind, Context, Effects, Invocation, PathUse, Tool, Verdict};

/// One rule, every matcher compiled. A matcher left out (`None`) holds for everything.
#[derive(Clone, Debug)]
pub(crate) struct Rule {
    pub id: String,
    pub verdict: Verdict,
    pub reason: Option<String>,
    pub instead: Option<String>,
    pub tool: Option<LazyGlobSet>,
    /// False when `tool:` cannot match `exec`: then no invocation ever looks at this rule.
    pub applies_to_exec: bool,
    pub command: Option<Vec<CommandPattern>>,
    pub read_only: Option<bool>,
    pub paths: Option<PathMatcher>,
    pub reads: Option<PathMatcher>,
    pub writes: Option<PathMatcher>,
    pub deletes: Option<PathMatcher>,
    pub effects_any: Option<EffectFlags>,
    pub effects_all: Option<EffectFlags>,
    /// Globs over the environment variables an invocation sets (`LD_PRELOAD=x cmd`).
    pub sets_env: Option<LazyGlobSet>,
    /// Globs over the variables whose values an invocation prints, writes or sends; a dump of
    /// the whole environment reveals every one.
    pub reveals_env: Option<LazyGlobSet>,
    pub actor_kinds: Option<Vec<ActorKind>>,
    pub actor_ids: Option<LazyGlobSet>,
    pub tiers: Option<LazyGlobSet>,
    pub hosts: Option<LazyGlobSet>,
    pub times: Option<Vec<TimeWindow>>,
    /// Pre-flight checks to run when this rule decides (ids into the policy's `checks:`).
    pub checks: Vec<String>,
    /// Notifiers told when this rule's decision ends as halt or ask.
    pub notify: Vec<String>,
    /// What a subject must carry for this rule to have a chance.
    pub needs: Presence,
    /// Where the rule was written when a base policy brought it in (`builtin`, or the base
    /// file's path); None for the policy's own file.
    pub from: Option<String>,
}

/// The flags of [`Effects`] as a bit set, so `effects:` is one AND per invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EffectFlags(u8);

impl EffectFlags {
    pub const NONE: EffectFlags = EffectFlags(0);
    const NETWORK: EffectFlags = EffectFlags(1);
    const PRIVILEGE: EffectFlags = EffectFlags(2);
    const PROCESS_CONTROL: EffectFlags = EffectFlags(4);
    const SERVICE_CONTROL: EffectFlags = EffectFlags(8);
    const RUNS_CODE: EffectFlags = EffectFlags(16);

    pub fn parse(name: &str) -> Option<EffectFlags> {
        Some(match name {
            "network" => EffectFlags::NETWORK,
            "privilege" => EffectFlags::PRIVILEGE,
            "process_control" => EffectFlags::PROCESS_CONTROL,
            "service_control" => EffectFlags::SERVICE_CONTROL,
            "runs_code" => EffectFlags::RUNS_CODE,
            _ => return None,
        })
    }

    pub fn with(self, other: EffectFlags) -> EffectFlags {
        EffectFlags(self.0 | other.0)
    }

    fn of(effects: &Effects) -> EffectFlags {
        let mut flags = EffectFlags::NONE;
        for (set, flag) in [
            (effects.network, EffectFlags::NETWORK),
            (effects.privilege, EffectFlags::PRIVILEGE),
            (effects.process_control, EffectFlags::PROCESS_CONTROL),
            (effects.service_control, EffectFlags::SERVICE_CONTROL),
            (effects.runs_code, EffectFlags::RUNS_CODE),
        ] {
            if set {
                flags = flags.with(flag);
            }
        }
        flags
    }

    fn any_of(self, wanted: EffectFlags) -> bool {
        self.0 & wanted.0 != 0
    }

    fn all_of(self, wanted: EffectFlags) -> bool {
        self.0 & wanted.0 == wanted.0
    }
}

/// What a subject carries that path and effect matchers need: paths of each kind and effect
/// flags. One AND tells that a rule cannot match, before any of its globs runs; most rules
/// without a command name are skipped this way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Presence(u16);

impl Presence {
    const READS: u16 = 1 << 8;
    const WRITES: u16 = 1 << 9;
    const DELETES: u16 = 1 << 10;
    const PATHS: u16 = 1 << 11;
    const SETS_ENV: u16 = 1 << 12;
    const REVEALS_ENV: u16 = 1 << 13;

    /// The needs of a rule with these matchers. `effects:` (any of) is not a need of any one
    /// flag, so only `effects_all:` counts.
    pub fn needed_by(
        reads: bool,
        writes: bool,
        deletes: bool,
        paths: bool,
        effects_all: Option<EffectFlags>,
        sets_env: bool,
        reveals_env: bool,
    ) -> Presence {
        let mut bits = u16::from(effects_all.map_or(0, |flags| flags.0));
        for (given, bit) in [
            (reads, Presence::READS),
            (writes, Presence::WRITES),
            (deletes, Presence::DELETES),
            (paths, Presence::PATHS),
            (sets_env, Presence::SETS_ENV),
            (reveals_env, Presence::REVEALS_ENV),
        ] {
            if given {
                bits |= bit;
            }
        }
        Presence(bits)
    }

    pub fn of(subject: &Subject<'_>) -> Presence {
        let none = (false, false);
        let (flags, reads, writes, deletes, (sets_env, reveals_env)) = match &subject.target {
            Target::Invocation { invocation, .. } => {
                let effects = &invocation.effects;
                (
                    EffectFlags::of(effects),
                    !effects.reads.is_empty() || !effects.searches.is_empty(),
                    !effects.writes.is_empty(),
                    !effects.deletes.is_empty(),
                    (
                        !effects.sets_env.is_empty(),
                        !effects.reveals_env.is_empty(),
                    ),
                )
            }
            Target::Tool(tool) => match tool {
                Tool::Read { .. } => (EffectFlags::NONE, true, false, false, none),
                Tool::Write { .. } | Tool::Edit { .. } => {
                    (EffectFlags::NONE, false, true, false, none)
                }
                Tool::Fetch { .. } => (EffectFlags::NETWORK, false, false, false, none),
                Tool::Mcp {
                    tool: name, paths, ..
                } if !paths.is_empty() => match mcp_path_use(name) {
                    PathUse::Read => (EffectFlags::NONE, true, false, false, none),
                    PathUse::Write => (EffectFlags::NONE, false, true, false, none),
                    PathUse::Delete => (EffectFlags::NONE, false, true, true, none),
                },
                _ => (EffectFlags::NONE, false, false, false, none),
            },
        };
        Presence::needed_by(
            reads,
            writes,
            deletes,
            reads || writes || deletes,
            Some(flags),
            sets_env,
            reveals_env,
        )
    }

    /// Whether everything `needs` asks for is present.
    pub fn covers(self, needs: Presence) -> bool {
        needs.0 & !self.0 == 0
    }
}

/// A local time-of-day window in minutes since midnight; wraps midnight when `start > end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimeWindow {
    start: u16,
    end: u16,
}

impl TimeWindow {
    pub fn new(start: u16, end: u16) -> TimeWindow {
        TimeWindow { start, end }
    }

    fn contains(self, minute: u16) -> bool {
        if self.start < self.end {
            self.start <= minute && minute < self.end
        } else {
            minute >= self.start || minute < self.end
        }
    }
}

/// What one rule is matched against: one invocation of an exec line, or a non-exec tool.
pub(crate) struct Subject<'a> {
    pub actor: &'a Actor,
    pub context: &'a Context,
    pub tool_name: &'a str,
    pub target: Target<'a>,
}

pub(crate) enum Target<'a> {
    Invocation {
        invocation: &'a Invocation,
        positionals: &'a [&'a str],
    },
    Tool(&'a Tool),
}

/// The answer of one matcher. `Unknown` is for facts the action does not carry (no clock, no
/// tier, no host).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    Yes,
    No,
    Unknown,
}

impl Seen {
    fn from(yes: bool) -> Seen {
        if yes { Seen::Yes } else { Seen::No }
    }
}

impl Rule {
    /// Whether every matcher given holds. A matcher that cannot tell counts as holding for a
    /// rule that would refuse or ask, and as failing for an allow rule: not knowing never
    /// makes an action more permitted.
    pub(crate) fn matches(&self, subject: &Subject<'_>) -> bool {
        let mut unknown = false;
        let mut seen = |answer: Seen| match answer {
            Seen::Yes => true,
            Seen::No => false,
            Seen::Unknown => {
                unknown = true;
                true
            }
        };
        let holds = seen(self.match_action(subject))
            && seen(self.match_read_only(subject))
            && seen(self.match_actor(subject.actor))
            && seen(self.match_effects(subject))
            && seen(self.match_environment(subject))
            && seen(self.match_paths(subject))
            && seen(self.match_context(subject));
        holds && (!unknown || self.verdict != Verdict::Allow)
    }

    /// Tool and command: what the action is.
    fn match_action(&self, subject: &Subject<'_>) -> Seen {
        match &subject.target {
            Target::Invocation {
                invocation,
                positionals,
            } => {
                // `tool:` was settled when the policy was compiled (`applies_to_exec`).
                let Some(patterns) = &self.command else {
                    return Seen::Yes;
                };
                Seen::from(
                    !invocation.is_opaque()
                        && patterns.iter().any(|p| p.is_match(invocation, positionals)),
                )
            }
            Target::Tool(_) => Seen::from(
                self.command.is_none()
                    && self
                        .tool
                        .as_ref()
                        .is_none_or(|tools| tools.is_match(subject.tool_name)),
            ),
        }
    }

    fn match_read_only(&self, subject: &Subject<'_>) -> Seen {
        let Some(wanted) = self.read_only else {
            return Seen::Yes;
        };
        match &subject.target {
            Target::Invocation { invocation, .. } if invocation.is_opaque() => {
                // What cannot be read is never known to be read-only; whether it changes
                // things is unknown.
                if wanted { Seen::No } else { Seen::Unknown }
            }
            Target::Invocation { invocation, .. } => {
                Seen::from(invocation.effects.is_read_only() == wanted)
            }
            Target::Tool(tool) => {
                let read_only = matches!(tool, Tool::Read { .. } | Tool::Fetch { .. });
                Seen::from(read_only == wanted)
            }
        }
    }

    fn match_actor(&self, actor: &Actor) -> Seen {
        let kind = self
            .actor_kinds
            .as_ref()
            .is_none_or(|kinds| kinds.contains(&actor.kind));
        let id = self
            .actor_ids
            .as_ref()
            .is_none_or(|ids| ids.is_match(&actor.id));
        Seen::from(kind && id)
    }

    fn match_effects(&self, subject: &Subject<'_>) -> Seen {
        if self.effects_any.is_none() && self.effects_all.is_none() {
            return Seen::Yes;
        }
        let flags = match &subject.target {
            Target::Invocation { invocation, .. } => EffectFlags::of(&invocation.effects),
            // A fetch talks to the network; other tools carry no effect flags of their own and
            // are matched by `tool:`.
            Target::Tool(Tool::Fetch { .. }) => EffectFlags::NETWORK,
            Target::Tool(_) => EffectFlags::NONE,
        };
        let any = self.effects_any.is_none_or(|wanted| flags.any_of(wanted));
        let all = self.effects_all.is_none_or(|wanted| flags.all_of(wanted));
        Seen::from(any && all)
    }

    fn match_paths<'a>(&self, subject: &Subject<'a>) -> Seen {
        if self.paths.is_none()
            && self.reads.is_none()
            && self.writes.is_none()
            && self.deletes.is_none()
        {
            return Seen::Yes;
        }
        let holds = match &subject.target {
            Target::Invocation { invocation, .. } => {
                let effects = &invocation.effects;
                let strings = |paths: &'a [String]| paths.iter().map(String::as_str);
                // A searched or removed directory reaches everything below it.
                let reads = |m: &PathMatcher| {
                    strings(&effects.reads).any(|p| m.is_match(p))
                        || strings(&effects.searches).any(|p| m.is_match_or_holds(p))
                };
                let writes = |m: &PathMatcher| strings(&effects.writes).any(|p| m.is_match(p));
                let deletes =
                    |m: &PathMatcher| strings(&effects.deletes).any(|p| m.is_match_or_holds(p));
                self.paths
                    .as_ref()
                    .is_none_or(|m| reads(m) || writes(m) || deletes(m))
                    && self.reads.as_ref().is_none_or(reads)
                    && self.writes.as_ref().is_none_or(writes)
                    && self.deletes.as_ref().is_none_or(deletes)
            }
            Target::Tool(tool) => {
                let uses = file_uses(tool);
                if uses.is_empty() {
                    return Seen::No;
                }
                let check = |matcher: &Option<PathMatcher>, wanted: Option<PathUse>| {
                    matcher.as_ref().is_none_or(|m| {
                        uses.iter().any(|(used, path)| {
                            // A read or a removal of a directory reaches what it holds.
                            let holds = |p: &str| match used {
                                PathUse::Read | PathUse::Delete => m.is_match_or_holds(p),
                                PathUse::Write => m.is_match(p),
                            };
                            wanted.is_none_or(|w| w == *used) && holds(path)
                        })
                    })
                };
                check(&self.paths, None)
                    && check(&self.reads, Some(PathUse::Read))
                    && check(&self.writes, Some(PathUse::Write))
                    && check(&self.deletes, Some(PathUse::Delete))
            }
        };
        Seen::from(holds)
    }

    /// Variables set and revealed: only invocations carry them.
    fn match_environment(&self, subject: &Subject<'_>) -> Seen {
        if self.sets_env.is_none() && self.reveals_env.is_none() {
            return Seen::Yes;
        }
        let Target::Invocation { invocation, .. } = &subject.target else {
            return Seen::No;
        };
        let effects = &invocation.effects;
        let sets = self
            .sets_env
            .as_ref()
            .is_none_or(|globs| any_name(globs, &effects.sets_env));
        let reveals = self.reveals_env.as_ref().is_none_or(|globs| {
            // A dump of the whole environment prints every secret in it.
            effects.reveals_env.iter().any(|name| name == "*")
                || any_name(globs, &effects.reveals_env)
        });
        Seen::from(sets && reveals)
    }

    /// Tier, host and time: facts an action may not carry.
    fn match_context(&self, subject: &Subject<'_>) -> Seen {
        let mut answer = Seen::Yes;
        let mut combine = |seen: Seen| match (answer, seen) {
            (Seen::No, _) | (_, Seen::No) => answer = Seen::No,
            (_, Seen::Unknown) => answer = Seen::Unknown,
            _ => {}
        };
        if let Some(tiers) = &self.tiers {
            combine(match &subject.actor.tier {
                Some(tier) => Seen::from(tiers.is_match(tier)),
                None => Seen::Unknown,
            });
        }
        if let Some(hosts) = &self.hosts {
            combine(match host_of(subject) {
                Some(host) => Seen::from(host_matches(hosts, host)),
                None => Seen::Unknown,
            });
        }
        if let Some(times) = &self.times {
            combine(match subject.context.minute_of_day {
                Some(minute) if minute < 24 * 60 => {
                    Seen::from(times.iter().any(|window| window.contains(minute)))
                }
                _ => Seen::Unknown,
            });
        }
        answer
    }
}

/// Whether some variable name matches. Names are compared as written and in upper case
/// (`github_token` is `GITHUB_TOKEN` to a reader).
fn any_name(globs: &LazyGlobSet, names: &[String]) -> bool {
    names.iter().any(|name| {
        globs.is_match(name)
            || name.bytes().any(|b| b.is_ascii_lowercase())
                && globs.is_match(&name.to_ascii_uppercase())
    })
}

/// How an MCP tool uses the paths among its arguments, from its name: reading tools read,
/// removing and moving tools also delete, everything else writes.
pub(crate) fn mcp_path_use(tool: &str) -> PathUse {
    // Words of the name: `read_text_file`, `readTextFile` and `read-text-file` are
    // read, text, file.
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    for c in tool.chars() {
        let boundary = !c.is_ascii_alphanumeric() || c.is_ascii_uppercase();
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_ascii_alphanumeric() {
            word.push(c.to_ascii_lowercase());
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let has = |verbs: &[&str]| words.iter().any(|w| verbs.contains(&w.as_str()));
    if has(&[
        "delete", "remove", "rm", "move", "mv", "rename", "unlink", "rmdir", "trash",
    ]) {
        PathUse::Delete
    } else if has(&[
        "write", "edit", "create", "update", "patch", "append", "replace", "save", "put", "upload",
        "copy", "cp", "mkdir", "chmod", "chown", "set", "insert", "modify", "touch",
    ]) {
        PathUse::Write
    } else if has(&[
        "read", "get", "list", "ls", "search", "view", "find", "stat", "info", "cat", "tree",
        "glob", "grep", "head", "tail", "open", "show", "download", "fetch", "describe", "diff",
    ]) {
        PathUse::Read
    } else {
        PathUse::Write
    }
}

/// The remote target when the invocation runs elsewhere, else the action's host.
fn host_of<'a>(subject: &Subject<'a>) -> Option<&'a str> {
    if let Target::Invocation { invocation, .. } = &subject.target
        && let Some(remote) = &invocation.remote
    {
        return Some(&remote.target);
    }
    subject.context.host.as_deref()
}

/// `ssh deploy@prod-1` runs on `prod-1`: the user part is not the host.
fn host_matches(hosts: &LazyGlobSet, host: &str) -> bool {
    hosts.is_match(host)
        || host
            .rsplit_once('@')
            .is_some_and(|(_, bare)| hosts.is_match(bare))
}

/// The paths a file tool (or an MCP tool with path arguments) uses, and how. A removing
/// MCP tool's paths are both written and deleted.
fn file_uses(tool: &Tool) -> Vec<(PathUse, &str)> {
    match tool {
        Tool::Read { path } => vec![(PathUse::Read, path)],
        Tool::Write { path } | Tool::Edit { path } => vec![(PathUse::Write, path)],
        Tool::Mcp {
            tool: name, paths, ..
        } => {
            let used = mcp_path_use(name);
            let mut uses: Vec<(PathUse, &str)> = paths.iter().map(|p| (used, p.as_str())).collect();
            if used == PathUse::Delete {
                uses.extend(paths.iter().map(|p| (PathUse::Write, p.as_str())));
            }
            uses
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_windows_wrap_midnight() {
        let night = TimeWindow::new(22 * 60, 6 * 60);
        assert!(night.contains(23 * 60));
        assert!(night.contains(0));
        assert!(night.contains(5 * 60 + 59));
        assert!(!night.contains(6 * 60));
        assert!(!night.contains(12 * 60));
        let office = TimeWindow::new(9 * 60, 17 * 60);
        assert!(office.contains(9 * 60));
        assert!(!office.contains(17 * 60));
        let whole_day = TimeWindow::new(0, 24 * 60);
        assert!(whole_day.contains(0) && whole_day.contains(1439));
    }

    #[test]
    fn effect_flags_any_and_all() {
        let effects = Effects {
            network: true,
            runs_code: true,
            ..Effects::default()
        };
        let flags = EffectFlags::of(&effects);
        let network = EffectFlags::NETWORK;
        let both = network.with(EffectFlags::RUNS_CODE);
        assert!(flags.any_of(network));
        assert!(flags.all_of(both));
        assert!(!flags.all_of(both.with(EffectFlags::PRIVILEGE)));
        assert!(!EffectFlags::of(&Effects::default()).any_of(both));
    }
}
