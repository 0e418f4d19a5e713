//! The `sweep:` section of a policy file; nightwatch-janitor plans and applies by it. Every field has the seed's default, so an empty
//! section (or none) sweeps the way the shared dev host learned to: five days idle, labels to
//! stay, worktrees only when provably finished, and a wedged target backed off, not hammered.

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Why a sweep rule was refused.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("`{text}` is not a duration: {reason} (write e.g. `5d`, `36h`, `1d12h`, `30m`)")]
    Span { text: String, reason: String },
    #[error("path glob `{glob}` {reason}")]
    PathGlob { glob: String, reason: String },
    #[error("container name glob `{glob}` is invalid: {reason}")]
    NameGlob { glob: String, reason: String },
    #[error("keep file `{0}` must be a plain file name, like `.nightwatch-keep`")]
    KeepFile(String),
    #[error("{0}")]
    Invalid(String),
}

/// A length of time in milliseconds, written in the one duration grammar: `5d`, `36h`,
/// `1d12h`, `30m`, `90s` or `0s` (see [`nightwatch_time::parse_duration`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span(u64);

/// Ten years: longer spans are typos, and keeping them bounded keeps arithmetic in range.
const MAX_SPAN_MS: u64 = 10 * 366 * DAY_MS;
const DAY_MS: u64 = 86_400_000;

impl Span {
    pub const fn from_ms(ms: u64) -> Span {
        Span(ms)
    }

    pub const fn days(days: u64) -> Span {
        Span(days.saturating_mul(DAY_MS))
    }

    pub const fn hours(hours: u64) -> Span {
        Span(hours.saturating_mul(3_600_000))
    }

    pub const fn minutes(minutes: u64) -> Span {
        Span(minutes.saturating_mul(60_000))
    }

    pub const fn as_ms(self) -> u64 {
        self.0
    }

    /// The span as signed milliseconds, for arithmetic with timestamps.
    pub fn as_ms_i64(self) -> i64 {
        i64::try_from(self.0).unwrap_or(i64::MAX)
    }

    /// Reads a span of at most ten years.
    pub fn parse(text: &str) -> Result<Span, RulesError> {
        let bad = |reason: &str| RulesError::Span {
            text: text.to_owned(),
            reason: reason.to_owned(),
        };
        let duration =
            nightwatch_time::parse_duration(text).map_err(|e| bad(&e.problem.to_string()))?;
        let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        if ms > MAX_SPAN_MS {
            return Err(bad("longer than ten years"));
        }
        Ok(Span(ms))
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Span, D::Error> {
        nightwatch_time::serde::duration_by(deserializer, Span::parse)
    }
}

impl TryFrom<String> for Span {
    type Error = RulesError;

    fn try_from(text: String) -> Result<Span, RulesError> {
        Span::parse(&text)
    }
}

/// Shows the two largest units: `9d 4h`, `3h 12m`, `45s`, `0s`.
impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 5] = [
            (DAY_MS, "d"),
            (3_600_000, "h"),
            (60_000, "m"),
            (1_000, "s"),
            (1, "ms"),
        ];
        let mut rest = self.0;
        let mut shown = 0;
        for (unit, name) in UNITS {
            let count = rest / unit;
            if count > 0 {
                if shown > 0 {
                    f.write_str(" ")?;
                }
                write!(f, "{count}{name}")?;
                rest -= count * unit;
                shown += 1;
                if shown == 2 {
                    break;
                }
            } else if shown > 0 {
                break;
            }
        }
        if shown == 0 {
            f.write_str("0s")?;
        }
        Ok(())
    }
}

/// The whole `sweep:` section.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SweepRules {
    pub containers: ContainerRules,
    pub worktrees: WorktreeRules,
    pub branches: BranchRules,
    /// Temporary paths to sweep; none by default, because every deployment's are different.
    pub paths: Vec<PathRule>,
    pub failures: FailureRules,
}

impl SweepRules {
    /// The rule whose glob is `glob`, as recorded in a path's facts.
    pub fn path_rule(&self, glob: &str) -> Option<&PathRule> {
        self.paths.iter().find(|r| r.glob == glob)
    }
}

/// Containers go when nothing has happened to them for `max_idle`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContainerRules {
    /// Five days, so a stack left over a weekend survives.
    pub max_idle: Span,
    /// A restart loop is aged from creation, since every crash would otherwise reset its clock.
    pub restart_loop_max_age: Span,
    /// The restart count from which a container counts as looping (`restarting` always does).
    pub restart_loop_restarts: u32,
    /// `LABEL=true` keeps a container (any value but `false`, `0` or `no`).
    pub keep_label: String,
    /// `LABEL=2026-06-30` (or an RFC 3339 time) keeps it until then.
    pub keep_until_label: String,
    /// Containers whose name matches go once this old, however busy (a QA slot, per-PR stacks).
    pub max_age: Vec<NameMaxAge>,
}

impl Default for ContainerRules {
    fn default() -> ContainerRules {
        ContainerRules {
            max_idle: Span::days(5),
            restart_loop_max_age: Span::days(5),
            restart_loop_restarts: 3,
            keep_label: "nightwatch.keep".to_owned(),
            keep_until_label: "nightwatch.keep-until".to_owned(),
            max_age: Vec::new(),
        }
    }
}

/// `{ name: "qa-*", max_age: 6h }`.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "RawNameMaxAge")]
pub struct NameMaxAge {
    name: String,
    max_age: Span,
    matcher: GlobMatcher,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNameMaxAge {
    name: String,
    max_age: Span,
}

impl TryFrom<RawNameMaxAge> for NameMaxAge {
    type Error = RulesError;

    fn try_from(raw: RawNameMaxAge) -> Result<NameMaxAge, RulesError> {
        NameMaxAge::new(&raw.name, raw.max_age)
    }
}

impl NameMaxAge {
    pub fn new(name: &str, max_age: Span) -> Result<NameMaxAge, RulesError> {
        let matcher = GlobBuilder::new(name)
            .build()
            .map_err(|e| RulesError::NameGlob {
                glob: name.to_owned(),
                reason: e.kind().to_string(),
            })?
            .compile_matcher();
        Ok(NameMaxAge {
            name: name.to_owned(),
            max_age,
            matcher,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn max_age(&self) -> Span {
        self.max_age
    }

    pub fn matches(&self, container_name: &str) -> bool {
        self.matcher.is_match(container_name)
    }
}

/// Where PR states come from. Without a provider every worktree's PR state is unknown, and an
/// unknown PR state keeps the worktree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PrProvider {
    #[default]
    None,
    Github,
    /// A program asked per worktree, `ARGV... REPO BRANCH`, that prints one line:
    /// `merged COMMIT`, `open [URL]`, `closed` or `none` (no PR). Anything else, a failure
    /// or a timeout is "unknown", which keeps the worktree.
    Command(Vec<String>),
}

/// `pr: none`, `pr: github`, or `pr: { command: [PROGRAM, ARGS...] }`.
impl<'de> Deserialize<'de> for PrProvider {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Name(String),
            Command { command: Vec<String> },
        }
        match Written::deserialize(deserializer)? {
            Written::Name(name) => match name.as_str() {
                "none" => Ok(PrProvider::None),
                "github" => Ok(PrProvider::Github),
                other => Err(serde::de::Error::custom(format!(
                    "unknown PR provider {other:?}: write none, github, or {{ command: [PROGRAM, ...] }}"
                ))),
            },
            Written::Command { command } if command.is_empty() => Err(serde::de::Error::custom(
                "the PR command needs at least a program",
            )),
            Written::Command { command } => Ok(PrProvider::Command(command)),
        }
    }
}

/// Worktrees go only when provably finished.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorktreeRules {
    /// The repositories whose worktrees and branches are swept (their main worktrees).
    pub repos: Vec<std::path::PathBuf>,
    pub base: String,
    pub min_age: Span,
    pub pr: PrProvider,
}

impl Default for WorktreeRules {
    fn default() -> WorktreeRules {
        WorktreeRules {
            repos: Vec::new(),
            base: "main".to_owned(),
            min_age: Span::days(1),
            pr: PrProvider::None,
        }
    }
}

/// Local branches go only when the base holds exactly their tip.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BranchRules {
    pub base: String,
}

impl Default for BranchRules {
    fn default() -> BranchRules {
        BranchRules {
            base: "main".to_owned(),
        }
    }
}

/// `{ glob: "/tmp/pytest-of-*/pytest-*", max_age: 2d, keep_file: .nightwatch-keep }`.
///
/// The glob must be absolute, with at least one literal directory before its first wildcard:
/// that directory is where the walk starts and what it never leaves.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "RawPathRule")]
pub struct PathRule {
    glob: String,
    max_age: Span,
    keep_file: String,
    prefix: PathBuf,
    /// How many components below the prefix a match sits; `None` when the glob has `**`.
    depth: Option<usize>,
    matcher: GlobMatcher,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPathRule {
    glob: String,
    max_age: Span,
    #[serde(default = "default_keep_file")]
    keep_file: String,
}

fn default_keep_file() -> String {
    ".nightwatch-keep".to_owned()
}

impl TryFrom<RawPathRule> for PathRule {
    type Error = RulesError;

    fn try_from(raw: RawPathRule) -> Result<PathRule, RulesError> {
        PathRule::new(&raw.glob, raw.max_age)?.with_keep_file(&raw.keep_file)
    }
}

impl PathRule {
    pub fn new(glob: &str, max_age: Span) -> Result<PathRule, RulesError> {
        let bad = |reason: &str| RulesError::PathGlob {
            glob: glob.to_owned(),
            reason: reason.to_owned(),
        };
        if !glob.starts_with('/') {
            return Err(bad("must be absolute"));
        }
        if glob.len() > 1 && glob.ends_with('/') {
            return Err(bad("must not end with `/`"));
        }
        let parts: Vec<&str> = glob[1..].split('/').collect();
        if parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == "..")
        {
            return Err(bad("must not have empty, `.` or `..` components"));
        }
        // The last component is always the pattern, so the prefix is a directory above matches.
        let literal = parts[..parts.len().saturating_sub(1)]
            .iter()
            .take_while(|p| !p.contains(['*', '?', '[', ']', '{', '}', '\\']))
            .count();
        if literal == 0 {
            return Err(bad(
                "needs a literal directory before its first wildcard (not `/`), like `/tmp/...`",
            ));
        }
        let mut prefix = PathBuf::from("/");
        prefix.extend(&parts[..literal]);
        let below = &parts[literal..];
        let depth = if below.iter().any(|p| p.contains("**")) {
            None
        } else {
            Some(below.len())
        };
        let matcher = GlobBuilder::new(glob)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| bad(&format!("is invalid: {}", e.kind())))?
            .compile_matcher();
        Ok(PathRule {
            glob: glob.to_owned(),
            max_age,
            keep_file: default_keep_file(),
            prefix,
            depth,
            matcher,
        })
    }

    pub fn with_keep_file(mut self, name: &str) -> Result<PathRule, RulesError> {
        let mut components = Path::new(name).components();
        match (components.next(), components.next()) {
            (Some(Component::Normal(_)), None) if !name.contains('/') => {}
            _ => return Err(RulesError::KeepFile(name.to_owned())),
        }
        self.keep_file = name.to_owned();
        Ok(self)
    }

    pub fn glob(&self) -> &str {
        &self.glob
    }

    pub fn max_age(&self) -> Span {
        self.max_age
    }

    pub fn keep_file(&self) -> &str {
        &self.keep_file
    }

    /// The literal directory the walk starts from and never leaves.
    pub fn prefix(&self) -> &Path {
        &self.prefix
    }

    /// How many components below the prefix a match sits; `None` when the glob has `**`.
    pub fn depth(&self) -> Option<usize> {
        self.depth
    }

    /// Whether `path` is one this rule sweeps: strictly below the prefix, matching the glob.
    pub fn covers(&self, path: &Path) -> bool {
        path != self.prefix && path.starts_with(&self.prefix) && self.matcher.is_match(path)
    }
}

/// How failed removals are retried: exponential backoff, then quarantine.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "RawFailureRules")]
pub struct FailureRules {
    pub backoff_initial: Span,
    pub backoff_max: Span,
    /// After this many failed removals in a row the item is left alone until a person
    /// releases it, and that is reported once.
    pub quarantine_after: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawFailureRules {
    backoff_initial: Span,
    backoff_max: Span,
    quarantine_after: u32,
}

impl Default for RawFailureRules {
    fn default() -> RawFailureRules {
        let d = FailureRules::default();
        RawFailureRules {
            backoff_initial: d.backoff_initial,
            backoff_max: d.backoff_max,
            quarantine_after: d.quarantine_after,
        }
    }
}

impl TryFrom<RawFailureRules> for FailureRules {
    type Error = RulesError;

    fn try_from(raw: RawFailureRules) -> Result<FailureRules, RulesError> {
        if raw.quarantine_after == 0 {
            return Err(RulesError::Invalid(
                "failures.quarantine_after must be at least 1".to_owned(),
            ));
        }
        if raw.backoff_initial.as_ms() == 0 || raw.backoff_max < raw.backoff_initial {
            return Err(RulesError::Invalid(
                "failures.backoff_initial must be above 0s and at most backoff_max".to_owned(),
            ));
        }
        Ok(FailureRules {
            backoff_initial: raw.backoff_initial,
            backoff_max: raw.backoff_max,
            quarantine_after: raw.quarantine_after,
        })
    }
}

impl Default for FailureRules {
    fn default() -> FailureRules {
        FailureRules {
            backoff_initial: Span::minutes(5),
            backoff_max: Span::hours(6),
            quarantine_after: 5,
        }
    }
}

impl FailureRules {
    /// The wait after the `failures`-th failure in a row: initial × 2^(failures-1), capped,
    /// without jitter (a removal is retried at the next sweep after the wait, not in a loop).
    pub fn backoff(&self, failures: u32) -> Span {
        let ms = |span: Span| std::time::Duration::from_millis(span.as_ms());
        let wait = nightwatch_time::backoff(
            ms(self.backoff_initial),
            ms(self.backoff_max),
            failures,
            0.0,
        );
        Span(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_and_print() {
        for (text, ms, shown) in [
            ("5d", 5 * DAY_MS, "5d"),
            ("36h", 36 * 3_600_000, "1d 12h"),
            ("1d12h", 36 * 3_600_000, "1d 12h"),
            ("30m", 1_800_000, "30m"),
            ("0s", 0, "0s"),
            ("1w", 7 * DAY_MS, "7d"),
            ("1500ms", 1_500, "1s 500ms"),
            // The one duration grammar allows spaces between groups (`1h 30m`), as policy
            // checks always did; this parser refused them before the grammars were merged.
            ("5d 3h", 5 * DAY_MS + 3 * 3_600_000, "5d 3h"),
        ] {
            let span = Span::parse(text).unwrap();
            assert_eq!(span.as_ms(), ms, "{text}");
            assert_eq!(span.to_string(), shown, "{text}");
        }
        for bad in [
            "",
            "5",
            "d",
            "5x",
            "-1d",
            "3h5d",
            "99999999999999999999d",
            "4000d",
        ] {
            assert!(Span::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn backoff_doubles_to_its_cap() {
        let rules = FailureRules::default();
        let waits: Vec<String> = (1..=9).map(|n| rules.backoff(n).to_string()).collect();
        assert_eq!(
            waits,
            [
                "5m", "10m", "20m", "40m", "1h 20m", "2h 40m", "5h 20m", "6h", "6h"
            ]
        );
        assert_eq!(rules.backoff(u32::MAX).to_string(), "6h");
    }

    #[test]
    fn path_globs_need_a_literal_prefix() {
        let rule = PathRule::new("/tmp/pytest-of-*/pytest-*", Span::days(2)).unwrap();
        assert_eq!(rule.prefix(), Path::new("/tmp"));
        assert_eq!(rule.depth(), Some(2));
        assert!(rule.covers(Path::new("/tmp/pytest-of-ann/pytest-3")));
        assert!(!rule.covers(Path::new("/tmp/pytest-of-ann/x/pytest-3")));
        let literal = PathRule::new("/var/tmp/build-cache", Span::days(2)).unwrap();
        assert_eq!(literal.prefix(), Path::new("/var/tmp"));
        assert_eq!(
            PathRule::new("/tmp/**/x", Span::days(1)).unwrap().depth(),
            None
        );
        for bad in [
            "tmp/*",
            "/*",
            "/",
            "/tmp/../etc/*",
            "/tmp//x",
            "/tmp/x/",
            "/*/x",
        ] {
            assert!(PathRule::new(bad, Span::days(1)).is_err(), "{bad}");
        }
        assert!(
            PathRule::new("/tmp/x*", Span::days(1))
                .unwrap()
                .with_keep_file("../k")
                .is_err()
        );
    }
}
