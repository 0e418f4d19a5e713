//! The `checks:` section: what a pre-flight check is, as policy writes it. Pure: every value is
//! validated while it is deserialized, so a bad policy file is rejected at the bad value, never
//! at run time. nightwatch-checks runs them.

mod error;
mod window;

pub use error::{SpecError, WindowError};
pub use window::Window;

use globset::{GlobBuilder, GlobMatcher};
use nightwatch_core::Verdict;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The timeout a check gets when its policy says nothing.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest a check may hold up an action.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest age or window a check may name: far beyond any job, far below any overflow.
pub const MAX_SPAN: Duration = Duration::from_secs(366 * 24 * 3600);

/// One pre-flight check: what to probe, and what happens when the probe finds it.
#[derive(Clone, Debug)]
pub struct CheckSpec {
    pub kind: CheckKind,
    /// Halt, ask or deny: never allow, since a check can only hold an action back.
    pub on_match: Verdict,
    /// What the operator reads when the check matches (or cannot tell).
    pub message: Option<String>,
    pub timeout: Duration,
}

/// The one thing a check probes.
#[derive(Clone, Debug)]
pub enum CheckKind {
    Process(ProcessCheck),
    LockFile(LockFileCheck),
    SystemdUnit(SystemdUnitCheck),
    Http(HttpCheck),
    Command(CommandCheck),
    MaintenanceWindow(WindowCheck),
    CircuitBreaker(CircuitBreakerCheck),
    Rate(RateCheck),
}

impl CheckKind {
    /// The YAML key of this kind, also the `kind` of its findings.
    pub fn name(&self) -> &'static str {
        match self {
            CheckKind::Process(_) => "process",
            CheckKind::LockFile(_) => "lock_file",
            CheckKind::SystemdUnit(_) => "systemd_unit",
            CheckKind::Http(_) => "http",
            CheckKind::Command(_) => "command",
            CheckKind::MaintenanceWindow(_) => "maintenance_window",
            CheckKind::CircuitBreaker(_) => "circuit_breaker",
            CheckKind::Rate(_) => "rate",
        }
    }
}

impl CheckSpec {
    pub fn kind_name(&self) -> &'static str {
        self.kind.name()
    }
}

/// A running process, found by name or command line, at least `min_age` old.
#[derive(Clone, Debug)]
pub struct ProcessCheck {
    pub pattern: ProcessPattern,
    pub min_age: Duration,
}

/// Which text of a process the glob is matched against.
#[derive(Clone, Debug)]
pub enum ProcessPattern {
    /// The kernel's process name (`/proc/PID/comm`, what `pgrep` matches). The kernel cuts it to
    /// 15 bytes, so a name of that length is also compared with the base name of `argv[0]`.
    Name(Pattern),
    /// The whole command line, arguments joined by spaces (what `pgrep -f` matches).
    Command(Pattern),
}

/// Files matching a glob whose last modification is at least `min_age` ago: a lock left by a job
/// that is still running (or that died holding it, which is as much a reason to stop).
#[derive(Clone, Debug)]
pub struct LockFileCheck {
    pub glob: PathGlob,
    pub min_age: Duration,
}

/// A systemd unit running (active, activating, reloading or deactivating) for at least
/// `active_longer_than`.
#[derive(Clone, Debug)]
pub struct SystemdUnitCheck {
    pub unit: String,
    pub active_longer_than: Duration,
}

/// A health endpoint. Matches when the expectation is NOT met: the check guards against acting
/// on something already unhealthy.
#[derive(Clone, Debug)]
pub struct HttpCheck {
    pub url: String,
    /// `None`: any 2xx.
    pub expect_status: Option<u16>,
    pub body_contains: Option<String>,
}

/// A program the operator wrote to answer "is it safe?", run without a shell.
#[derive(Clone, Debug)]
pub struct CommandCheck {
    pub argv: Vec<String>,
    pub match_on: ExitMatch,
}

/// Which exit of a [`CommandCheck`] counts as a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitMatch {
    NonZero,
    Zero,
    Code(u8),
}

/// Change windows (`outside:`) or freezes (`inside:`).
#[derive(Clone, Debug)]
pub struct WindowCheck {
    pub mode: WindowMode,
    pub windows: Vec<Window>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowMode {
    /// Matches when now is outside every window: changes are only allowed inside one.
    Outside,
    /// Matches when now is inside any window: a freeze.
    Inside,
}

/// The same actor's same action failed at least `failures` times within `within`.
#[derive(Clone, Debug)]
pub struct CircuitBreakerCheck {
    pub failures: u32,
    pub within: Duration,
}

/// The same actor has already been allowed the same tool at least `max` times within
/// `within`: the breaker that halts a runaway robot (a backup job firing 46 times a day where
/// once is right). Counted per actor (kind and id) and tool, whatever the inputs, so a robot
/// cannot slip past it by varying its target or details.
#[derive(Clone, Debug)]
pub struct RateCheck {
    pub max: u32,
    pub within: Duration,
}

/// A glob with the text it was written as, for details and errors.
///
/// The common shapes (`*migrate*`, `pg_dump*`, `*.lock`, a plain name) are matched as text; only
/// other globs build a regex, and only when first used: a hook reads its policy, and so its
/// checks, on every call.
#[derive(Clone, Debug)]
pub struct Pattern {
    text: String,
    shape: Shape,
    /// None only if the glob that built in `new` stopped building: it then counts as a match,
    /// which holds an action back rather than letting it through.
    matcher: std::sync::OnceLock<Option<GlobMatcher>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Shape {
    Exact(String),
    Prefix(String),
    Suffix(String),
    Contains(String),
    Glob,
}

impl Shape {
    fn of(text: &str) -> Shape {
        let special = |c: char| matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\');
        let inner = text.trim_start_matches('*').trim_end_matches('*');
        if inner.contains(special) || inner.is_empty() {
            return Shape::Glob;
        }
        match (text.starts_with('*'), text.ends_with('*')) {
            (false, false) => Shape::Exact(inner.to_owned()),
            (false, true) => Shape::Prefix(inner.to_owned()),
            (true, false) => Shape::Suffix(inner.to_owned()),
            (true, true) => Shape::Contains(inner.to_owned()),
        }
    }
}

fn glob_builder(text: &str) -> GlobBuilder<'_> {
    // `*` crosses `/` here: command lines are not paths.
    let mut builder = GlobBuilder::new(text);
    builder.literal_separator(false).backslash_escape(true);
    builder
}

impl Pattern {
    pub fn new(text: &str) -> Result<Pattern, SpecError> {
        if text.is_empty() {
            return Err(SpecError::EmptyGlob);
        }
        glob_builder(text).build().map_err(|e| SpecError::Glob {
            glob: text.to_owned(),
            reason: e.kind().to_string(),
        })?;
        Ok(Pattern {
            text: text.to_owned(),
            shape: Shape::of(text),
            matcher: std::sync::OnceLock::new(),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn is_match(&self, text: &str) -> bool {
        match &self.shape {
            Shape::Exact(s) => text == s,
            Shape::Prefix(s) => text.starts_with(s.as_str()),
            Shape::Suffix(s) => text.ends_with(s.as_str()),
            Shape::Contains(s) => text.contains(s.as_str()),
            Shape::Glob => self
                .matcher
                .get_or_init(|| {
                    glob_builder(&self.text)
                        .build()
                        .ok()
                        .map(|glob| glob.compile_matcher())
                })
                .as_ref()
                .is_none_or(|matcher| matcher.is_match(text)),
        }
    }
}

#[cfg(test)]
mod pattern_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The text shortcuts agree with the glob they stand for.
        #[test]
        fn shortcuts_match_as_the_glob_does(
            core in "[a-z_./ -]{1,6}",
            lead in any::<bool>(),
            trail in any::<bool>(),
            text in "[a-z_./ -]{0,12}",
        ) {
            let glob = format!("{}{core}{}", if lead { "*" } else { "" }, if trail { "*" } else { "" });
            let pattern = Pattern::new(&glob).unwrap();
            let regex = glob_builder(&glob).build().unwrap().compile_matcher();
            prop_assert_eq!(pattern.is_match(&text), regex.is_match(&text), "{} on {:?}", glob, text);
        }
    }
}

/// An absolute path glob, split into the literal directory a walk starts from and how deep it
/// may go, so a lock-file check never walks more of the filesystem than its glob can reach.
#[derive(Clone, Debug)]
pub struct PathGlob {
    text: String,
    matcher: GlobMatcher,
    /// The longest directory prefix without glob characters.
    root: String,
    /// How many path components below `root` a match has; `None` when the glob has `**`.
    depth: Option<usize>,
    /// The glob has no glob characters at all: one `stat`, no walk.
    literal: bool,
}

impl PathGlob {
    pub fn new(text: &str) -> Result<PathGlob, SpecError> {
        let bad = |reason: &str| SpecError::PathGlob {
            glob: text.to_owned(),
            reason: reason.to_owned(),
        };
        if !text.starts_with('/') {
            return Err(bad("must be an absolute path"));
        }
        if text.len() > 1 && text.ends_with('/') {
            return Err(bad("names files, so must not end with /"));
        }
        let parts: Vec<&str> = text.split('/').skip(1).collect();
        if parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == "..")
        {
            return Err(bad("write it without empty, . or .. components"));
        }
        let is_meta = |p: &str| p.contains(['*', '?', '[', ']', '{', '}', '\\']);
        let literal_count = parts.iter().take_while(|p| !is_meta(p)).count();
        let literal = literal_count == parts.len();
        let root_parts = if literal {
            parts.len().saturating_sub(1)
        } else {
            literal_count
        };
        let root = format!("/{}", parts[..root_parts].join("/"));
        let rest = &parts[root_parts..];
        let depth = if rest.iter().any(|p| p.contains("**")) {
            None
        } else {
            Some(rest.len())
        };
        let glob = GlobBuilder::new(text)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| bad(&e.kind().to_string()))?;
        Ok(PathGlob {
            text: text.to_owned(),
            matcher: glob.compile_matcher(),
            root,
            depth,
            literal,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    pub fn depth(&self) -> Option<usize> {
        self.depth
    }

    pub fn is_literal(&self) -> bool {
        self.literal
    }

    pub fn is_match(&self, path: &str) -> bool {
        self.matcher.is_match(path)
    }
}

/// Reads an age or window in the one duration grammar (`30m`, `2s`, `1h30m`: see
/// [`nightwatch_time::parse_duration`]), no longer than [`MAX_SPAN`].
pub fn parse_duration(text: &str) -> Result<Duration, SpecError> {
    let bad = |reason: &str| SpecError::Duration {
        text: text.to_owned(),
        reason: reason.to_owned(),
    };
    let span = nightwatch_time::parse_duration(text).map_err(|e| bad(&e.problem.to_string()))?;
    if span > MAX_SPAN {
        return Err(bad("is longer than a year"));
    }
    Ok(span)
}

fn check_unit(unit: &str) -> Result<(), SpecError> {
    let ok = !unit.is_empty()
        && unit.len() <= 256
        && !unit.starts_with('-')
        && unit
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b":_.@-\\".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(SpecError::Unit(unit.to_owned()))
    }
}

fn check_url(url: &str) -> Result<(), SpecError> {
    let bad = |reason: &str| SpecError::Url {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(bad(
            "only plain http:// is supported (health endpoints on this host or its private network)",
        ));
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() {
        return Err(bad("has no host"));
    }
    let uri: Result<http::Uri, _> = url.parse();
    uri.map_err(|e| bad(&e.to_string()))?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Deserialization. Values are parsed by small visitors so an error carries the position of the
// value that is wrong; whole-map rules (exactly one kind) are checked where the map is read.

/// Deserializes a string through a parser, with an `expecting` text for wrong YAML types.
struct TextVisitor<F> {
    expecting: &'static str,
    parse: F,
}

impl<'de, T, F> Visitor<'de> for TextVisitor<F>
where
    F: FnOnce(&str) -> Result<T, SpecError>,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.parse)(v).map_err(E::custom)
    }
}

fn text<'de, D, T>(
    d: D,
    expecting: &'static str,
    parse: impl FnOnce(&str) -> Result<T, SpecError>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    d.deserialize_str(TextVisitor { expecting, parse })
}

fn age<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    nightwatch_time::serde::duration_by(d, parse_duration)
}

fn span<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    nightwatch_time::serde::duration_by(d, |t| {
        let span = parse_duration(t)?;
        if span.is_zero() {
            return Err(SpecError::Duration {
                text: t.to_owned(),
                reason: "must be longer than zero".to_owned(),
            });
        }
        Ok(span)
    })
}

fn timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    nightwatch_time::serde::duration_by(d, |t| {
        let span = parse_duration(t)?;
        if span.is_zero() || span > MAX_TIMEOUT {
            return Err(SpecError::Timeout(t.to_owned()));
        }
        Ok(span)
    })
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Pattern, D::Error> {
        text(d, "a glob, like *migrate*", Pattern::new)
    }
}

impl<'de> Deserialize<'de> for PathGlob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<PathGlob, D::Error> {
        text(
            d,
            "an absolute path glob, like /var/lib/app/*.lock",
            PathGlob::new,
        )
    }
}

impl<'de> Deserialize<'de> for Window {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Window, D::Error> {
        text(
            d,
            "a window like `Sat 02:00-06:00`, `Mon-Fri 22:00-06:00` or `12:00-13:00`",
            |t| Window::from_str(t).map_err(SpecError::from),
        )
    }
}

/// `on_match`: a verdict that holds an action back.
struct OnMatch(Verdict);

impl<'de> Deserialize<'de> for OnMatch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OnMatch, D::Error> {
        text(d, "halt, ask or deny", |t| match Verdict::parse(t) {
            Some(Verdict::Allow) => Err(SpecError::AllowOnMatch),
            Some(v) => Ok(OnMatch(v)),
            None => Err(SpecError::OnMatch(t.to_owned())),
        })
    }
}

fn unit<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    text(d, "a systemd unit name, like app-migrate.service", |t| {
        check_unit(t).map(|()| t.to_owned())
    })
}

fn url<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    text(d, "an http:// URL", |t| check_url(t).map(|()| t.to_owned()))
}

fn status<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
    let code = u16::deserialize(d)?;
    if (100..=599).contains(&code) {
        Ok(Some(code))
    } else {
        Err(de::Error::custom(SpecError::Status(code)))
    }
}

fn nonempty<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    if s.is_empty() {
        return Err(de::Error::custom(SpecError::EmptyBodyContains));
    }
    Ok(Some(s))
}

fn argv<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let argv = Vec::<String>::deserialize(d)?;
    match argv.first() {
        None => Err(de::Error::custom(SpecError::EmptyArgv)),
        Some(program) if program.is_empty() => Err(de::Error::custom(SpecError::EmptyArgv)),
        Some(_) if argv.iter().any(|a| a.contains('\0')) => {
            Err(de::Error::custom(SpecError::NulInArgv))
        }
        Some(_) => Ok(argv),
    }
}

fn failures<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let n = u32::deserialize(d)?;
    if (1..=1_000_000).contains(&n) {
        Ok(n)
    } else {
        Err(de::Error::custom(SpecError::Failures(n)))
    }
}

fn max_actions<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let n = u32::deserialize(d)?;
    if (1..=1_000_000).contains(&n) {
        Ok(n)
    } else {
        Err(de::Error::custom(SpecError::RateMax(n)))
    }
}

fn windows<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Window>>, D::Error> {
    let list = Vec::<Window>::deserialize(d)?;
    if list.is_empty() {
        return Err(de::Error::custom(SpecError::NoWindows));
    }
    Ok(Some(list))
}

impl<'de> Deserialize<'de> for ExitMatch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ExitMatch, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ExitMatch;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("nonzero, zero or an exit code 0-255")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ExitMatch, E> {
                match v {
                    "nonzero" => Ok(ExitMatch::NonZero),
                    "zero" => Ok(ExitMatch::Zero),
                    _ => Err(E::custom(SpecError::MatchOn(v.to_owned()))),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ExitMatch, E> {
                u8::try_from(v)
                    .map(ExitMatch::Code)
                    .map_err(|_| E::custom(SpecError::MatchOn(v.to_string())))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ExitMatch, E> {
                u8::try_from(v)
                    .map(ExitMatch::Code)
                    .map_err(|_| E::custom(SpecError::MatchOn(v.to_string())))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProcess {
    name: Option<Pattern>,
    command: Option<Pattern>,
    #[serde(default, deserialize_with = "age")]
    min_age: Duration,
}

impl<'de> Deserialize<'de> for ProcessCheck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ProcessCheck, D::Error> {
        let raw = RawProcess::deserialize(d)?;
        let pattern = match (raw.name, raw.command) {
            (Some(name), None) => ProcessPattern::Name(name),
            (None, Some(command)) => ProcessPattern::Command(command),
            _ => return Err(de::Error::custom(SpecError::ProcessPattern)),
        };
        Ok(ProcessCheck {
            pattern,
            min_age: raw.min_age,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLockFile {
    glob: PathGlob,
    #[serde(default, deserialize_with = "age")]
    min_age: Duration,
}

impl<'de> Deserialize<'de> for LockFileCheck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<LockFileCheck, D::Error> {
        let raw = RawLockFile::deserialize(d)?;
        Ok(LockFileCheck {
            glob: raw.glob,
            min_age: raw.min_age,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSystemdUnit {
    #[serde(deserialize_with = "unit")]
    unit: String,
    #[serde(default, deserialize_with = "age")]
    active_longer_than: Duration,
}

impl<'de> Deserialize<'de> for SystemdUnitCheck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SystemdUnitCheck, D::Error> {
        let raw = RawSystemdUnit::deserialize(d)?;
        Ok(SystemdUnitCheck {
            unit: raw.unit,
            active_longer_than: raw.active_longer_than,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    #[serde(deserialize_with = "url")]
    url: String,
    #[serde(default, deserialize_with = "status")]
    expect_status: Option<u16>,
    #[serde(default, deserialize_with = "nonempty")]
    body_contains: Option<String>,
}

impl<'de> Deserialize<'de> for HttpCheck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<HttpCheck, D::Error> {
        let raw = RawHttp::deserialize(d)?;
        Ok(HttpCheck {
            url: raw.url,
            expect_status: raw.expect_status,
            body_contains: raw.body_contains,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCommand {
    #[serde(deserialize_with = "argv")]
    argv: Vec<String>,
    #[serde(default = "nonzero")]
    match_on: ExitMatch,
}

fn nonzero() -> ExitMatch {
    ExitMatch::NonZero
}

impl<'de> Deserialize<'de> for CommandCheck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<CommandCheck, D::Error> {
        let raw = RawCommand::deserialize(d)?;
        Ok(CommandCheck {
            argv: raw.argv,
            match_on: raw.match_on,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWindow {
    #[serde(default, deserialize_with = "windows")]
    outside: Option<Vec<Window>>,
    #[serde(default, deserialize_with = "windows")]
    inside: Option<Vec<Window>>,
}

impl<'de> Deserialize<'de> for WindowCheck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<WindowCheck, D::Error> {
        let raw = RawWindow::deserialize(d)?;
        let (mode, windows) = match (raw.outside, raw.inside) {
            (Some(w), None) => (WindowMode::Outside, w),
            (None, Some(w)) => (WindowMode::Inside, w),
            _ => return Err(de::Error::custom(SpecError::WindowMode)),
        };
        Ok(WindowCheck { mode, windows })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBreaker {
    #[serde(deserialize_with = "failures")]
    failures: u32,
    #[serde(deserialize_with = "span")]
    within: Duration,
}

impl<'de> Deserialize<'de> for CircuitBreakerCheck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<CircuitBreakerCheck, D::Error> {
        let raw = RawBreaker::deserialize(d)?;
        Ok(CircuitBreakerCheck {
            failures: raw.failures,
            within: raw.within,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRate {
    #[serde(deserialize_with = "max_actions")]
    max: u32,
    #[serde(deserialize_with = "span")]
    within: Duration,
}

impl<'de> Deserialize<'de> for RateCheck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RateCheck, D::Error> {
        let raw = RawRate::deserialize(d)?;
        Ok(RateCheck {
            max: raw.max,
            within: raw.within,
        })
    }
}

/// Every key a check may have: the common ones, then one per kind.
const FIELDS: &[&str] = &[
    "on_match",
    "message",
    "timeout",
    "process",
    "lock_file",
    "systemd_unit",
    "http",
    "command",
    "maintenance_window",
    "circuit_breaker",
    "rate",
];

/// Wraps a value deserializer in [`timeout`], for `next_value_seed`.
struct Timeout;

impl<'de> de::DeserializeSeed<'de> for Timeout {
    type Value = Duration;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Duration, D::Error> {
        timeout(d)
    }
}

impl<'de> Deserialize<'de> for CheckSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<CheckSpec, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CheckSpec;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a check: one of process, lock_file, systemd_unit, http, command, maintenance_window, circuit_breaker or rate, with optional on_match, message and timeout")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CheckSpec, A::Error> {
                let mut kind: Option<CheckKind> = None;
                let mut on_match = None;
                let mut message = None;
                let mut timeout = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "on_match" => {
                            if on_match.is_some() {
                                return Err(de::Error::duplicate_field("on_match"));
                            }
                            on_match = Some(map.next_value::<OnMatch>()?.0);
                        }
                        "message" => {
                            if message.is_some() {
                                return Err(de::Error::duplicate_field("message"));
                            }
                            message = Some(map.next_value::<String>()?);
                        }
                        "timeout" => {
                            if timeout.is_some() {
                                return Err(de::Error::duplicate_field("timeout"));
                            }
                            timeout = Some(map.next_value_seed(Timeout)?);
                        }
                        name @ ("process" | "lock_file" | "systemd_unit" | "http" | "command"
                        | "maintenance_window" | "circuit_breaker" | "rate") => {
                            if let Some(first) = &kind {
                                return Err(de::Error::custom(SpecError::TwoKinds {
                                    first: first.name(),
                                    second: name.to_owned(),
                                }));
                            }
                            kind = Some(match name {
                                "process" => CheckKind::Process(map.next_value()?),
                                "lock_file" => CheckKind::LockFile(map.next_value()?),
                                "systemd_unit" => CheckKind::SystemdUnit(map.next_value()?),
                                "http" => CheckKind::Http(map.next_value()?),
                                "command" => CheckKind::Command(map.next_value()?),
                                "maintenance_window" => {
                                    CheckKind::MaintenanceWindow(map.next_value()?)
                                }
                                "circuit_breaker" => CheckKind::CircuitBreaker(map.next_value()?),
                                _ => CheckKind::Rate(map.next_value()?),
                            });
                        }
                        other => return Err(de::Error::unknown_field(other, FIELDS)),
                    }
                }
                let kind = kind.ok_or_else(|| de::Error::custom(SpecError::NoKind))?;
                Ok(CheckSpec {
                    kind,
                    on_match: on_match.unwrap_or(Verdict::Halt),
                    message,
                    timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
                })
            }
        }
        d.deserialize_map(V)
    }
}
