//! The policy file as written, checked while it is read.
//!
//! Every value is validated inside its own `Deserialize` (a visitor, not `try_from`), so that
//! `yaml_serde` attaches the line and column of the offending value to the error.

use crate::command::CommandPattern;
use crate::lazy::{LazyGlob, LazyGlobSet, Separator};
use crate::paths::{PathGlob, PathMatcher};
use crate::rule::{EffectFlags, Presence, Rule, TimeWindow};
use nightwatch_core::{Action, Actor, ActorKind, Context, Tool, Verdict};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// The whole file.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a policy (a mapping with version, default, opaque, rules and examples)"
)]
pub(crate) struct PolicyFile {
    #[serde(default)]
    #[allow(dead_code)] // Checked while reading; there is only one version so far.
    pub version: Option<Version>,
    /// The policy this one builds on: `builtin`, or a policy file's path.
    #[serde(default)]
    pub extends: Option<crate::extends::BaseName>,
    /// What of the base this file loosens, named one by one: a base rule's id (the rule is
    /// dropped), `default`, `opaque`, `egress`.
    #[serde(default)]
    pub loosen: Vec<RuleId>,
    #[serde(default)]
    pub default: Option<VerdictName>,
    #[serde(default)]
    pub opaque: Option<OpaqueVerdict>,
    #[serde(default)]
    pub rules: Vec<Rule>,
    #[serde(default)]
    pub examples: Vec<ExampleSpec>,
    #[serde(default)]
    pub checks: std::collections::BTreeMap<String, nightwatch_spec::checks::CheckSpec>,
    #[serde(default)]
    pub always_check: Vec<String>,
    #[serde(default)]
    pub notifiers: nightwatch_spec::notify::Notifiers,
    #[serde(default)]
    pub escalate: Option<crate::safeguards::Escalation>,
    #[serde(default)]
    pub backup: Option<crate::safeguards::BackupSettings>,
    #[serde(default)]
    pub trust: Option<crate::safeguards::TrustSettings>,
    #[serde(default)]
    pub sweep: Option<nightwatch_spec::sweep::SweepRules>,
    #[serde(default)]
    pub egress: Option<RawEgress>,
}

/// `egress:` as written.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an egress section ({ allow: [hosts, globs or address blocks], otherwise: ask })"
)]
pub(crate) struct RawEgress {
    #[serde(default)]
    allow: Option<List<HostPatternText>>,
    otherwise: VerdictName,
}

impl RawEgress {
    pub(crate) fn compile(self) -> crate::egress::Egress {
        crate::egress::Egress {
            allow: self
                .allow
                .map_or_else(Vec::new, |l| l.0.into_iter().map(|h| h.0).collect()),
            otherwise: self.otherwise.0,
        }
    }
}

/// One `egress.allow` entry.
pub(crate) struct HostPatternText(crate::egress::HostPattern);

impl Scalar for HostPatternText {
    const EXPECTING: &'static str = "a host, a host glob or an address block";

    fn parse(text: &str) -> Result<HostPatternText, String> {
        crate::egress::HostPattern::parse(text).map(HostPatternText)
    }
}

/// A value written as one YAML scalar.
pub(crate) trait Scalar: Sized {
    const EXPECTING: &'static str;
    fn parse(text: &str) -> Result<Self, String>;
}

struct ScalarVisitor<T>(PhantomData<T>);

impl<T: Scalar> Visitor<'_> for ScalarVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        T::parse(text).map_err(E::custom)
    }

    // YAML reads `true`, `1` and `1.5` as typed values; a glob or name may be one of those.
    fn visit_bool<E: de::Error>(self, value: bool) -> Result<T, E> {
        self.visit_str(if value { "true" } else { "false" })
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<T, E> {
        self.visit_str(&value.to_string())
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<T, E> {
        self.visit_str(&value.to_string())
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<T, E> {
        self.visit_str(&value.to_string())
    }
}

macro_rules! deserialize_as_scalar {
    ($($type:ty),* $(,)?) => {$(
        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_any(ScalarVisitor(PhantomData))
            }
        }
    )*};
}

deserialize_as_scalar!(
    Version,
    VerdictName,
    OpaqueVerdict,
    RuleId,
    NameGlob,
    PathGlob,
    CommandPattern,
    EffectName,
    ActorKindName,
    TimeWindow,
    ClockTime,
    Text,
    HostPatternText,
    crate::extends::BaseName,
);

/// One value or a list of them; a list means "any of these".
pub(crate) struct List<T>(pub Vec<T>);

impl<'de, T: Scalar + Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ListVisitor(PhantomData))
    }
}

struct ListVisitor<T>(PhantomData<T>);

impl<'de, T: Scalar + Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
    type Value = List<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} or a list of them", T::EXPECTING)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<List<T>, E> {
        T::parse(text).map(|one| List(vec![one])).map_err(E::custom)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<List<T>, E> {
        self.visit_str(if value { "true" } else { "false" })
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<List<T>, E> {
        self.visit_str(&value.to_string())
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<List<T>, E> {
        self.visit_str(&value.to_string())
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<List<T>, E> {
        self.visit_str(&value.to_string())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<List<T>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<T>()? {
            items.push(item);
        }
        if items.is_empty() {
            return Err(de::Error::custom(
                "an empty list matches nothing; leave the key out instead",
            ));
        }
        Ok(List(items))
    }
}

/// A mapping read into its raw form and then checked as a whole, inside the visitor, so that
/// an error points at the mapping.
trait CheckedMap: Sized {
    type Raw;
    const EXPECTING: &'static str;
    fn check(raw: Self::Raw) -> Result<Self, String>;
}

struct MapVisitor<T>(PhantomData<T>);

impl<'de, T> Visitor<'de> for MapVisitor<T>
where
    T: CheckedMap,
    T::Raw: Deserialize<'de>,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        let raw = T::Raw::deserialize(de::value::MapAccessDeserializer::new(map))?;
        T::check(raw).map_err(de::Error::custom)
    }
}

macro_rules! deserialize_as_checked_map {
    ($($type:ty),* $(,)?) => {$(
        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_map(MapVisitor(PhantomData))
            }
        }
    )*};
}

deserialize_as_checked_map!(Rule, ExampleSpec);

pub(crate) struct Version;

impl Scalar for Version {
    const EXPECTING: &'static str = "the policy format version (1)";

    fn parse(text: &str) -> Result<Version, String> {
        if text.trim() == "1" {
            Ok(Version)
        } else {
            Err(format!(
                "unsupported policy version {text:?} (this nightwatch reads version 1)"
            ))
        }
    }
}

pub(crate) struct VerdictName(pub Verdict);

impl Scalar for VerdictName {
    const EXPECTING: &'static str = "a verdict (allow, ask, halt or deny)";

    fn parse(text: &str) -> Result<VerdictName, String> {
        Verdict::parse(text)
            .map(VerdictName)
            .ok_or_else(|| format!("unknown verdict {text:?} (expected allow, ask, halt or deny)"))
    }
}

/// The verdict for opaque invocations: anything but allow.
pub(crate) struct OpaqueVerdict(pub Verdict);

impl Scalar for OpaqueVerdict {
    const EXPECTING: &'static str = "a verdict (ask, halt or deny)";

    fn parse(text: &str) -> Result<OpaqueVerdict, String> {
        match Verdict::parse(text) {
            Some(Verdict::Allow) => Err(
                "`opaque: allow` is not possible: what cannot be read is never allowed \
                 (expected ask, halt or deny)"
                    .to_owned(),
            ),
            Some(verdict) => Ok(OpaqueVerdict(verdict)),
            None => Err(format!(
                "unknown verdict {text:?} (expected ask, halt or deny)"
            )),
        }
    }
}

pub(crate) struct RuleId(pub String);

impl Scalar for RuleId {
    const EXPECTING: &'static str = "a rule id";

    fn parse(text: &str) -> Result<RuleId, String> {
        if text.is_empty() || text.chars().any(char::is_whitespace) {
            Err(format!(
                "rule id {text:?} must be a non-empty word without spaces (e.g. no-force-push-to-main)"
            ))
        } else {
            Ok(RuleId(text.to_owned()))
        }
    }
}

/// Free text (`reason:`, `instead:`, an example's command).
pub(crate) struct Text(pub String);

impl Scalar for Text {
    const EXPECTING: &'static str = "text";

    fn parse(text: &str) -> Result<Text, String> {
        Ok(Text(text.to_owned()))
    }
}

/// A glob over a name (tool, actor id, tier, host): `*` matches anything.
pub(crate) struct NameGlob(LazyGlob);

impl Scalar for NameGlob {
    const EXPECTING: &'static str = "a name or glob";

    fn parse(text: &str) -> Result<NameGlob, String> {
        LazyGlob::new(text, Separator::Crossed)
            .map(NameGlob)
            .map_err(|kind| format!("bad glob {text:?}: {kind}"))
    }
}

impl Scalar for PathGlob {
    const EXPECTING: &'static str = "a path glob";

    fn parse(text: &str) -> Result<PathGlob, String> {
        PathGlob::compile(text)
    }
}

impl Scalar for CommandPattern {
    const EXPECTING: &'static str = "a command pattern";

    fn parse(text: &str) -> Result<CommandPattern, String> {
        CommandPattern::compile(text)
    }
}

pub(crate) struct EffectName(EffectFlags);

impl Scalar for EffectName {
    const EXPECTING: &'static str = "an effect name";

    fn parse(text: &str) -> Result<EffectName, String> {
        EffectFlags::parse(text).map(EffectName).ok_or_else(|| {
            format!(
                "unknown effect {text:?} (expected network, privilege, process_control, \
                 service_control or runs_code)"
            )
        })
    }
}

pub(crate) struct ActorKindName(ActorKind);

impl Scalar for ActorKindName {
    const EXPECTING: &'static str = "an actor kind";

    fn parse(text: &str) -> Result<ActorKindName, String> {
        ActorKind::parse(text).map(ActorKindName).ok_or_else(|| {
            let known: Vec<&str> = ActorKind::ALL.iter().map(|k| k.as_str()).collect();
            format!(
                "unknown actor kind {text:?} (expected one of {})",
                known.join(", ")
            )
        })
    }
}

impl Scalar for TimeWindow {
    const EXPECTING: &'static str = "a time window HH:MM-HH:MM";

    fn parse(text: &str) -> Result<TimeWindow, String> {
        let bad = || {
            format!(
                "bad time window {text:?} (expected HH:MM-HH:MM in local time, e.g. 22:00-06:00)"
            )
        };
        let (start, end) = text.split_once('-').ok_or_else(bad)?;
        let start = parse_clock(start.trim(), false).ok_or_else(bad)?;
        let end = parse_clock(end.trim(), true).ok_or_else(bad)?;
        if start == end {
            return Err(format!(
                "time window {text:?} is empty (write 00:00-24:00 for the whole day)"
            ));
        }
        Ok(TimeWindow::new(start, end))
    }
}

/// An example's time of day, `HH:MM`.
pub(crate) struct ClockTime(u16);

impl Scalar for ClockTime {
    const EXPECTING: &'static str = "a time of day HH:MM";

    fn parse(text: &str) -> Result<ClockTime, String> {
        parse_clock(text.trim(), false)
            .map(ClockTime)
            .ok_or_else(|| format!("bad time {text:?} (expected HH:MM, e.g. 23:30)"))
    }
}

/// Minutes since midnight for `HH:MM`; `24:00` only where it may end a window.
fn parse_clock(text: &str, allow_midnight_end: bool) -> Option<u16> {
    let (hours, minutes) = text.split_once(':')?;
    if hours.is_empty() || hours.len() > 2 || minutes.len() != 2 {
        return None;
    }
    let hours: u16 = hours.parse().ok()?;
    let minutes: u16 = minutes.parse().ok()?;
    if minutes >= 60 {
        return None;
    }
    match hours {
        0..=23 => Some(hours * 60 + minutes),
        24 if allow_midnight_end && minutes == 0 => Some(24 * 60),
        _ => None,
    }
}

fn name_set(globs: List<NameGlob>) -> Result<LazyGlobSet, String> {
    Ok(LazyGlobSet::new(
        globs.0.into_iter().map(|NameGlob(glob)| glob).collect(),
    ))
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an actor matcher ({ kind: [...], id: [...] })"
)]
pub(crate) struct RawActorMatcher {
    #[serde(default)]
    kind: Option<List<ActorKindName>>,
    #[serde(default)]
    id: Option<List<NameGlob>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a rule")]
pub(crate) struct RawRule {
    id: RuleId,
    verdict: VerdictName,
    #[serde(default)]
    reason: Option<Text>,
    #[serde(default)]
    instead: Option<Text>,
    #[serde(default)]
    tool: Option<List<NameGlob>>,
    #[serde(default)]
    command: Option<List<CommandPattern>>,
    #[serde(default)]
    read_only: Option<bool>,
    #[serde(default)]
    paths: Option<List<PathGlob>>,
    #[serde(default)]
    reads: Option<List<PathGlob>>,
    #[serde(default)]
    writes: Option<List<PathGlob>>,
    #[serde(default)]
    deletes: Option<List<PathGlob>>,
    #[serde(default)]
    effects: Option<List<EffectName>>,
    #[serde(default)]
    effects_all: Option<List<EffectName>>,
    #[serde(default)]
    sets_env: Option<List<NameGlob>>,
    #[serde(default)]
    reveals_env: Option<List<NameGlob>>,
    #[serde(default)]
    actor: Option<RawActorMatcher>,
    #[serde(default)]
    tier: Option<List<NameGlob>>,
    #[serde(default)]
    host: Option<List<NameGlob>>,
    #[serde(default)]
    time: Option<List<TimeWindow>>,
    #[serde(default)]
    checks: Option<List<RuleId>>,
    #[serde(default)]
    notify: Option<List<RuleId>>,
}

impl CheckedMap for Rule {
    type Raw = RawRule;
    const EXPECTING: &'static str = "a rule (a mapping with id, verdict and matchers)";

    fn check(raw: RawRule) -> Result<Rule, String> {
        // Rules stricter than allow also catch globbed paths that may overlap their globs
        // (`cat .env*`, `cat ~/.ssh/*`): fail closed. Allow rules match only what they name.
        let broad = raw.verdict.0 != Verdict::Allow;
        let paths = |list: Option<List<PathGlob>>| {
            list.map(|l| PathMatcher::new(l.0).map(|m| m.overlapping(broad)))
                .transpose()
        };
        let effects = |list: Option<List<EffectName>>| {
            list.map(|l| {
                l.0.into_iter()
                    .fold(EffectFlags::NONE, |all, e| all.with(e.0))
            })
        };
        let (actor_kinds, actor_ids) = match raw.actor {
            Some(actor) => {
                if actor.kind.is_none() && actor.id.is_none() {
                    return Err("`actor:` needs `kind:`, `id:` or both".to_owned());
                }
                (
                    actor.kind.map(|l| l.0.into_iter().map(|k| k.0).collect()),
                    actor.id.map(name_set).transpose()?,
                )
            }
            None => (None, None),
        };
        let effects_all = effects(raw.effects_all);
        let needs = Presence::needed_by(
            raw.reads.is_some(),
            raw.writes.is_some(),
            raw.deletes.is_some(),
            raw.paths.is_some(),
            effects_all,
            raw.sets_env.is_some(),
            raw.reveals_env.is_some(),
        );
        let tool = raw.tool.map(name_set).transpose()?;
        // A rule whose `tool:` cannot match "exec" is never a candidate for an invocation.
        let applies_to_exec = tool.as_ref().is_none_or(|set| set.is_match("exec"));
        Ok(Rule {
            id: raw.id.0,
            verdict: raw.verdict.0,
            reason: raw.reason.map(|t| t.0).filter(|t| !t.trim().is_empty()),
            instead: raw.instead.map(|t| t.0).filter(|t| !t.trim().is_empty()),
            tool,
            applies_to_exec,
            command: raw.command.map(|l| l.0),
            read_only: raw.read_only,
            paths: paths(raw.paths)?,
            reads: paths(raw.reads)?,
            writes: paths(raw.writes)?,
            deletes: paths(raw.deletes)?,
            effects_any: effects(raw.effects),
            effects_all,
            sets_env: raw.sets_env.map(name_set).transpose()?,
            reveals_env: raw.reveals_env.map(name_set).transpose()?,
            actor_kinds,
            actor_ids,
            tiers: raw.tier.map(name_set).transpose()?,
            hosts: raw.host.map(name_set).transpose()?,
            times: raw.time.map(|l| l.0),
            checks: raw
                .checks
                .map_or_else(Vec::new, |l| l.0.into_iter().map(|id| id.0).collect()),
            notify: raw
                .notify
                .map_or_else(Vec::new, |l| l.0.into_iter().map(|id| id.0).collect()),
            needs,
            from: None,
        })
    }
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an actor ({ kind: agent, id: claude-code })"
)]
pub(crate) struct RawExampleActor {
    kind: ActorKindName,
    #[serde(default)]
    id: Option<Text>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an example")]
pub(crate) struct RawExample {
    #[serde(default)]
    command: Option<Text>,
    #[serde(default)]
    tool: Option<Text>,
    #[serde(default)]
    path: Option<Text>,
    #[serde(default)]
    url: Option<Text>,
    expect: VerdictName,
    #[serde(default)]
    actor: Option<RawExampleActor>,
    #[serde(default)]
    tier: Option<Text>,
    #[serde(default)]
    host: Option<Text>,
    #[serde(default)]
    time: Option<ClockTime>,
}

/// An example as read: the action it describes and the verdict it expects.
pub(crate) struct ExampleSpec {
    pub action: Action,
    pub expect: Verdict,
}

impl CheckedMap for ExampleSpec {
    type Raw = RawExample;
    const EXPECTING: &'static str = "an example (a mapping with command or tool, and expect)";

    fn check(raw: RawExample) -> Result<ExampleSpec, String> {
        let tool_name = match (&raw.tool, &raw.command) {
            (Some(tool), _) => tool.0.clone(),
            (None, Some(_)) => "exec".to_owned(),
            (None, None) => {
                return Err("an example needs `command:` (a shell line) or `tool:`".to_owned());
            }
        };
        let command = raw.command.map(|t| t.0);
        let path = raw.path.map(|t| t.0);
        let url = raw.url.map(|t| t.0);
        let unexpected = |key: &str| {
            Err(format!(
                "an example of tool {tool_name:?} takes no `{key}:`"
            ))
        };
        let needs = |key: &str| Err(format!("an example of tool {tool_name:?} needs `{key}:`"));
        let tool = match tool_name.as_str() {
            "exec" => match (command, &path, &url) {
                (Some(line), None, None) => Tool::Exec { line },
                (None, _, _) => return needs("command"),
                (_, Some(_), _) => return unexpected("path"),
                (_, _, Some(_)) => return unexpected("url"),
            },
            "read" | "write" | "edit" => match (path, &command, &url) {
                (Some(path), None, None) => match tool_name.as_str() {
                    "read" => Tool::Read { path },
                    "write" => Tool::Write { path },
                    _ => Tool::Edit { path },
                },
                (None, _, _) => return needs("path"),
                (_, Some(_), _) => return unexpected("command"),
                (_, _, Some(_)) => return unexpected("url"),
            },
            "fetch" => match (url, &command, &path) {
                (Some(url), None, None) => Tool::Fetch { url },
                (None, _, _) => return needs("url"),
                (_, Some(_), _) => return unexpected("command"),
                (_, _, Some(_)) => return unexpected("path"),
            },
            other => {
                if command.is_some() {
                    return unexpected("command");
                }
                if path.is_some() {
                    return unexpected("path");
                }
                if url.is_some() {
                    return unexpected("url");
                }
                mcp_tool(other).unwrap_or_else(|| Tool::Named {
                    name: other.to_owned(),
                })
            }
        };
        let mut actor = match raw.actor {
            Some(actor) => {
                let id = actor
                    .id
                    .map(|t| t.0)
                    .unwrap_or_else(|| actor.kind.0.as_str().to_owned());
                Actor::new(actor.kind.0, id)
            }
            None => Actor::new(ActorKind::Agent, "agent"),
        };
        actor.tier = raw.tier.map(|t| t.0);
        Ok(ExampleSpec {
            action: Action {
                actor,
                tool,
                context: Context {
                    host: raw.host.map(|t| t.0),
                    minute_of_day: raw.time.map(|t| t.0),
                    ..Context::default()
                },
            },
            expect: raw.expect.0,
        })
    }
}

/// `mcp__server__tool` names an MCP tool, as `Tool::name` writes it.
fn mcp_tool(name: &str) -> Option<Tool> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    if server.is_empty() || tool.is_empty() {
        return None;
    }
    Some(Tool::Mcp {
        server: server.to_owned(),
        tool: tool.to_owned(),
        paths: Vec::new(),
    })
}
