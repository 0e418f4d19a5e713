//! The `sweep:` section of a policy file; nightwatch-janitor plans and applies by it. Every field has the seed's default, so an empty
//! section (or none) sweeps the way the shared dev host learned to: five days idle, labels to
//! stay, worktrees only when provably finished, and a wedged target backed off, not hammered.

use crate::notify::{EnvName, HttpUrl};
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

/// The label the hook puts on what an agent starts (`nightwatch.agent=claude-code`): what
/// carries it is an agent's, and in the janitor's scope.
pub const OWNER_LABEL: &str = "nightwatch.agent";
/// The session that started it (`nightwatch.session=SESSION`).
pub const SESSION_LABEL: &str = "nightwatch.session";
/// The project (working directory) it was started for (`nightwatch.project=/srv/app`).
pub const PROJECT_LABEL: &str = "nightwatch.project";
/// The label Docker Compose puts on every container of a stack.
pub const COMPOSE_PROJECT_LABEL: &str = "com.docker.compose.project";

/// Containers go when nothing has happened to them for `max_idle`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContainerRules {
    /// Which containers are judged at all; the rest are kept, "not in the janitor's scope".
    pub scope: ContainerScope,
    /// Five days, so a stack left over a weekend survives.
    #[serde(deserialize_with = "at_least_an_hour")]
    pub max_idle: Span,
    /// A restart loop is aged from creation, since every crash would otherwise reset its clock.
    #[serde(deserialize_with = "at_least_an_hour")]
    pub restart_loop_max_age: Span,
    /// The restart count from which an exited container counts as looping (`restarting`
    /// always does).
    #[serde(deserialize_with = "at_least_two")]
    pub restart_loop_restarts: u32,
    /// `LABEL=true` keeps a container (any value but `false`, `0` or `no`).
    #[serde(deserialize_with = "literal_label")]
    pub keep_label: String,
    /// `LABEL=2026-06-30` (or an RFC 3339 time) keeps it until then.
    #[serde(deserialize_with = "literal_label")]
    pub keep_until_label: String,
    /// Containers whose name matches go once this old, however busy (a QA slot, per-PR stacks).
    pub max_age: Vec<NameMaxAge>,
    /// When an agent's session ends (its `SessionEnd` hook), reap what it started and left:
    /// the hook starts `nightwatch sweep apply --session ID --yes` in the background.
    pub reap_at_session_end: bool,
    /// Volumes that go with the last container using them, by name (`pr-*-data`): only those
    /// an agent created (they carry its owner label). No other volume is ever removed.
    pub remove_volumes: Vec<NameGlob>,
    /// Untagged (dangling) images that go with the last container that used them.
    pub remove_dangling_images: bool,
}

impl Default for ContainerRules {
    fn default() -> ContainerRules {
        ContainerRules {
            scope: ContainerScope::default(),
            max_idle: Span::days(5),
            restart_loop_max_age: Span::days(5),
            restart_loop_restarts: 3,
            keep_label: "nightwatch.keep".to_owned(),
            keep_until_label: "nightwatch.keep-until".to_owned(),
            max_age: Vec::new(),
            reap_at_session_end: false,
            remove_volumes: Vec::new(),
            remove_dangling_images: false,
        }
    }
}

/// The containers the janitor judges (seed 001: "touch only what you started"): those an agent
/// owns ([`OWNER_LABEL`]) and those named here. An operator's own services are not its to judge.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContainerScope {
    /// `LABEL` (any value) or `LABEL=VALUE`, literally.
    pub labels: Vec<LabelMatch>,
    /// Container names, as globs (`ci-*`).
    pub names: Vec<NameGlob>,
    /// Compose projects, as globs (the `com.docker.compose.project` label).
    pub compose_projects: Vec<NameGlob>,
    /// Every container on the host, owned or not: only where nothing but agents runs.
    pub all: bool,
}

impl ContainerScope {
    /// Why a container with these labels and this name is in scope, or `None` when it is not.
    pub fn includes(
        &self,
        labels: &std::collections::BTreeMap<String, String>,
        name: &str,
    ) -> Option<String> {
        if let Some(agent) = labels.get(OWNER_LABEL) {
            return Some(format!("started by agent {agent} ({OWNER_LABEL}={agent})"));
        }
        if self.all {
            return Some("sweep.containers.scope.all is set".to_owned());
        }
        if let Some(m) = self.labels.iter().find(|m| m.matches(labels)) {
            return Some(format!("in scope by label {m}"));
        }
        if let Some(glob) = self.names.iter().find(|g| g.matches(name)) {
            return Some(format!("in scope by name {}", glob.text()));
        }
        let project = labels.get(COMPOSE_PROJECT_LABEL)?;
        let glob = self.compose_projects.iter().find(|g| g.matches(project))?;
        Some(format!(
            "in scope as compose project {project} ({})",
            glob.text()
        ))
    }
}

/// `LABEL` or `LABEL=VALUE` in a scope: a literal label name, never a pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelMatch {
    pub name: String,
    pub value: Option<String>,
}

impl LabelMatch {
    pub fn parse(text: &str) -> Result<LabelMatch, RulesError> {
        let (name, value) = match text.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (text, None),
        };
        check_label_name(name)?;
        Ok(LabelMatch {
            name: name.to_owned(),
            value,
        })
    }

    pub fn matches(&self, labels: &std::collections::BTreeMap<String, String>) -> bool {
        labels
            .get(&self.name)
            .is_some_and(|v| self.value.as_ref().is_none_or(|want| want == v))
    }
}

impl fmt::Display for LabelMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(value) => write!(f, "{}={value}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

impl<'de> Deserialize<'de> for LabelMatch {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        LabelMatch::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A glob over names (`ci-*`).
#[derive(Clone, Debug)]
pub struct NameGlob {
    text: String,
    matcher: GlobMatcher,
}

impl NameGlob {
    pub fn new(text: &str) -> Result<NameGlob, RulesError> {
        if text.trim().is_empty() {
            return Err(RulesError::NameGlob {
                glob: text.to_owned(),
                reason: "it is empty".to_owned(),
            });
        }
        let matcher = GlobBuilder::new(text)
            .build()
            .map_err(|e| RulesError::NameGlob {
                glob: text.to_owned(),
                reason: e.kind().to_string(),
            })?
            .compile_matcher();
        Ok(NameGlob {
            text: text.to_owned(),
            matcher,
        })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn matches(&self, name: &str) -> bool {
        self.matcher.is_match(name)
    }
}

impl<'de> Deserialize<'de> for NameGlob {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        NameGlob::new(&text).map_err(serde::de::Error::custom)
    }
}

/// A label name is taken literally: a glob or an empty name would make a keep label match
/// nothing (or be read as matching everything), switching the protection off unseen.
fn check_label_name(name: &str) -> Result<(), RulesError> {
    let bad = |why: &str| Err(RulesError::Invalid(format!("label name {name:?} {why}")));
    if name.trim().is_empty() {
        return bad("is empty: write a literal label name, like `nightwatch.keep`");
    }
    if name.contains(['*', '?', '[', ']', '{', '}']) {
        return bad("is a pattern: label names are literal, like `nightwatch.keep`");
    }
    if name
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '=')
    {
        return bad("holds a space, a control character or `=`");
    }
    Ok(())
}

fn literal_label<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let name = String::deserialize(deserializer)?;
    check_label_name(&name).map_err(serde::de::Error::custom)?;
    Ok(name)
}

/// Ages below an hour would sweep what an agent is still starting up.
fn at_least_an_hour<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Span, D::Error> {
    at_least(deserializer, Span::hours(1))
}

fn at_least<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
    minimum: Span,
) -> Result<Span, D::Error> {
    let span = Span::deserialize(deserializer)?;
    if span < minimum {
        return Err(serde::de::Error::custom(format!(
            "{span} is below the minimum of {minimum}: the janitor would remove things still in use"
        )));
    }
    Ok(span)
}

fn below_minimum(what: &str, span: Span, minimum: Span) -> Result<(), RulesError> {
    if span < minimum {
        return Err(RulesError::Invalid(format!(
            "{what} {span} is below the minimum of {minimum}: the janitor would remove things still in use"
        )));
    }
    Ok(())
}

/// One or two restarts happen to healthy containers (a reboot, an upgrade).
fn at_least_two<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let count = u32::deserialize(deserializer)?;
    if count < 2 {
        return Err(serde::de::Error::custom(format!(
            "{count} is below the minimum of 2: a container that restarted once at boot is not looping"
        )));
    }
    Ok(count)
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
        below_minimum("a container name's max_age", raw.max_age, Span::minutes(10))?;
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

/// Where PR states come from. Without a provider every PR state is unknown: an unknown PR
/// state keeps a worktree, and a branch then goes only by ancestry, when the policy allows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PrProvider {
    #[default]
    None,
    /// GitHub's pulls API, asked per branch.
    Github(GithubPr),
    /// A program asked per worktree, `ARGV... REPO BRANCH`, that prints one line:
    /// `merged COMMIT`, `open [URL]`, `closed` or `none` (no PR). Anything else, a failure
    /// or a timeout is "unknown", which keeps the worktree.
    Command(Vec<String>),
}

/// `pr: none`, `pr: github`, `pr: { github: { repo, base_url, token_env } }` or
/// `pr: { command: [PROGRAM, ARGS...] }`. Read by hand rather than as an untagged enum, so a
/// mistyped key is named in the error instead of "did not match any variant".
impl<'de> Deserialize<'de> for PrProvider {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PrProviderVisitor)
    }
}

const PR_PROVIDER_FORMS: &str =
    "write none, github, { github: { repo: OWNER/NAME } } or { command: [PROGRAM, ...] }";

struct PrProviderVisitor;

impl<'de> serde::de::Visitor<'de> for PrProviderVisitor {
    type Value = PrProvider;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a PR provider: {PR_PROVIDER_FORMS}")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<PrProvider, E> {
        match name {
            "none" => Ok(PrProvider::None),
            "github" => Ok(PrProvider::Github(GithubPr::default())),
            other => Err(E::custom(format!(
                "unknown PR provider {other:?}: {PR_PROVIDER_FORMS}"
            ))),
        }
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<PrProvider, A::Error> {
        use serde::de::Error;
        let Some(key) = map.next_key::<String>()? else {
            return Err(A::Error::custom(format!(
                "the PR provider is empty: {PR_PROVIDER_FORMS}"
            )));
        };
        let provider = match key.as_str() {
            "command" => {
                let command: Vec<String> = map.next_value()?;
                if command.is_empty() {
                    return Err(A::Error::custom("the PR command needs at least a program"));
                }
                PrProvider::Command(command)
            }
            "github" => {
                let raw: Option<RawGithubPr> = map.next_value()?;
                PrProvider::Github(
                    GithubPr::try_from(raw.unwrap_or_default()).map_err(A::Error::custom)?,
                )
            }
            other => {
                return Err(A::Error::custom(format!(
                    "unknown PR provider `{other}`: {PR_PROVIDER_FORMS}"
                )));
            }
        };
        if let Some(extra) = map.next_key::<String>()? {
            return Err(A::Error::custom(format!(
                "one PR provider at a time: `{key}` and `{extra}` were both given"
            )));
        }
        Ok(provider)
    }
}

/// Where the GitHub provider asks, and as whom. Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GithubPr {
    /// `None`: read from each repository's `origin` remote.
    pub repo: Option<GithubRepo>,
    /// `None`: [`GithubPr::DEFAULT_BASE_URL`]. GitHub Enterprise Server is
    /// `https://HOST/api/v3`.
    pub base_url: Option<HttpUrl>,
    /// `None`: [`GithubPr::DEFAULT_TOKEN_ENV`]. An unset or empty variable sends no token,
    /// which reaches public repositories only, at a low rate limit.
    pub token_env: Option<EnvName>,
}

impl GithubPr {
    pub const DEFAULT_BASE_URL: &'static str = "https://api.github.com";
    pub const DEFAULT_TOKEN_ENV: &'static str = "GITHUB_TOKEN";

    pub fn base_url(&self) -> &str {
        self.base_url
            .as_ref()
            .map_or(GithubPr::DEFAULT_BASE_URL, HttpUrl::as_str)
    }

    /// The environment variable holding the token.
    pub fn token_env(&self) -> &str {
        self.token_env
            .as_ref()
            .map_or(GithubPr::DEFAULT_TOKEN_ENV, EnvName::as_str)
    }
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGithubPr {
    repo: Option<GithubRepo>,
    base_url: Option<HttpUrl>,
    token_env: Option<EnvName>,
}

impl TryFrom<RawGithubPr> for GithubPr {
    type Error = RulesError;

    fn try_from(raw: RawGithubPr) -> Result<GithubPr, RulesError> {
        if let Some(url) = &raw.base_url {
            check_github_base_url(url)?;
        }
        Ok(GithubPr {
            repo: raw.repo,
            base_url: raw.base_url,
            token_env: raw.token_env,
        })
    }
}

/// The token goes to the base URL, so it must be https; plain http only reaches this host (a
/// stand-in for tests). A query or fragment would end up in the middle of every request URL.
fn check_github_base_url(url: &HttpUrl) -> Result<(), RulesError> {
    let bad = |why: &str| {
        Err(RulesError::Invalid(format!(
            "github base_url `{}` {why}",
            url.as_str()
        )))
    };
    if url.as_str().contains(['?', '#']) {
        return bad("must not have a query or fragment (write e.g. https://HOST/api/v3)");
    }
    if url.scheme() != "https" && !is_loopback_host(url.host()) {
        return bad("must be https: the token would cross the network in clear");
    }
    Ok(())
}

/// `localhost`, `127.x.x.x` or `[::1]`, with or without a port.
fn is_loopback_host(host_and_port: &str) -> bool {
    let host = match host_and_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host_and_port.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A GitHub repository, `owner/name`. Both parts hold only what GitHub allows in names
/// (letters, digits, `-`, `_`, `.`), so they go into a request path as they are.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct GithubRepo {
    owner: String,
    name: String,
}

impl GithubRepo {
    pub fn parse(text: &str) -> Result<GithubRepo, RulesError> {
        let bad = |why: &str| {
            RulesError::Invalid(format!(
                "GitHub repository `{text}` {why}: write OWNER/NAME, like octo-org/app"
            ))
        };
        let Some((owner, name)) = text.split_once('/') else {
            return Err(bad("has no `/`"));
        };
        for part in [owner, name] {
            let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
            if part.is_empty() || part.len() > 100 || part == "." || part == ".." {
                return Err(bad("needs an owner and a name of 1 to 100 characters"));
            }
            if !part.chars().all(allowed) {
                return Err(bad("may hold only letters, digits, `-`, `_` and `.`"));
            }
        }
        Ok(GithubRepo {
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl TryFrom<String> for GithubRepo {
    type Error = RulesError;

    fn try_from(text: String) -> Result<GithubRepo, RulesError> {
        GithubRepo::parse(&text)
    }
}

impl fmt::Display for GithubRepo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
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

/// Local branches go only when their work is provably in the base: the PR provider says a PR
/// was merged from exactly the branch's tip (a squash merge included), and the branch is old
/// enough.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BranchRules {
    pub base: String,
    /// Both the tip commit and the janitor's first sighting of the branch must be this old: a
    /// branch made a minute ago at an old commit is young.
    pub min_age: Span,
    /// Also delete a branch whose tip the base holds by ancestry, with no PR to say so. Off by
    /// default, because a branch just made at the base's tip is "in the base" too.
    pub ancestry: bool,
}

impl Default for BranchRules {
    fn default() -> BranchRules {
        BranchRules {
            base: "main".to_owned(),
            min_age: Span::days(1),
            ancestry: false,
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
        below_minimum("a path's max_age", raw.max_age, Span::hours(1))?;
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
    fn pr_providers_read_in_every_form() {
        let read = |yaml: &str| yaml_serde::from_str::<WorktreeRules>(yaml).map(|w| w.pr);
        assert_eq!(read("pr: none").unwrap(), PrProvider::None);
        assert_eq!(read("{}").unwrap(), PrProvider::None);
        assert_eq!(
            read("pr: github").unwrap(),
            PrProvider::Github(GithubPr::default())
        );
        assert_eq!(
            read("pr: { github: {} }").unwrap(),
            PrProvider::Github(GithubPr::default())
        );
        assert_eq!(
            read("pr: { command: [gh-pr-state, --quiet] }").unwrap(),
            PrProvider::Command(vec!["gh-pr-state".into(), "--quiet".into()])
        );
        let PrProvider::Github(full) = read(
            "pr: { github: { repo: octo-org/app, base_url: \"https://ghe.example.com/api/v3\", token_env: GHE_TOKEN } }",
        )
        .unwrap() else {
            panic!("not github")
        };
        assert_eq!(full.repo.as_ref().unwrap().owner(), "octo-org");
        assert_eq!(full.repo.as_ref().unwrap().to_string(), "octo-org/app");
        assert_eq!(full.base_url(), "https://ghe.example.com/api/v3");
        assert_eq!(full.token_env(), "GHE_TOKEN");
        let defaults = GithubPr::default();
        assert_eq!(defaults.base_url(), "https://api.github.com");
        assert_eq!(defaults.token_env(), "GITHUB_TOKEN");
        // A local stand-in may be plain http.
        assert!(read("pr: { github: { base_url: \"http://127.0.0.1:8080\" } }").is_ok());
    }

    #[test]
    fn pr_provider_mistakes_are_named() {
        for (bad, says) in [
            ("pr: gitlab", "unknown PR provider \"gitlab\""),
            ("pr: { gitlab: {} }", "unknown PR provider `gitlab`"),
            ("pr: {}", "the PR provider is empty"),
            ("pr: { command: [] }", "at least a program"),
            (
                "pr: { command: [x], github: {} }",
                "one PR provider at a time",
            ),
            (
                "pr: { github: { repository: o/r } }",
                "unknown field `repository`",
            ),
            ("pr: { github: { repo: octo } }", "has no `/`"),
            ("pr: { github: { repo: \"o/r/x\" } }", "only letters"),
            ("pr: { github: { repo: \"o/r?x=1\" } }", "only letters"),
            ("pr: { github: { repo: \"/r\" } }", "1 to 100 characters"),
            ("pr: { github: { repo: \"../r\" } }", "1 to 100 characters"),
            (
                "pr: { github: { base_url: \"http://ghe.example.com/api/v3\" } }",
                "must be https",
            ),
            (
                "pr: { github: { base_url: \"https://ghe.example.com/api/v3?x=1\" } }",
                "query or fragment",
            ),
            ("pr: { github: { base_url: ghe.example.com } }", "no scheme"),
            (
                "pr: { github: { token_env: \"1X\" } }",
                "environment variable",
            ),
        ] {
            let error = yaml_serde::from_str::<WorktreeRules>(bad)
                .unwrap_err()
                .to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn branch_rules_default_to_a_day_and_no_ancestry() {
        let rules: BranchRules = yaml_serde::from_str("{}").unwrap();
        assert_eq!(rules.min_age, Span::days(1));
        assert!(!rules.ancestry);
        let rules: BranchRules =
            yaml_serde::from_str("{ base: trunk, min_age: 6h, ancestry: true }").unwrap();
        assert_eq!(
            (rules.base.as_str(), rules.min_age),
            ("trunk", Span::hours(6))
        );
        assert!(rules.ancestry);
        let error = yaml_serde::from_str::<BranchRules>("{ min_agee: 1d }")
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown field `min_agee`"), "{error}");
    }

    #[test]
    fn loopback_hosts_are_told_apart() {
        for host in [
            "localhost",
            "127.0.0.1:8080",
            "LOCALHOST:1",
            "[::1]:9",
            "127.9.9.9",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "ghe.example.com",
            "10.0.0.1",
            "[::2]",
            "localhost.example.com",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
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
