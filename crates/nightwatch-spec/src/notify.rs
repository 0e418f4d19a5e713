//! The `notifiers:` section of the policy, checked while it is read. nightwatch-notify sends
//! through them.
//!
//! Every value is validated inside its own `Deserialize` (a visitor, not `try_from`), so that the
//! YAML reader attaches the line and column of the offending value to the error. Secrets are
//! never required inline: each one can instead name the environment variable that holds it.

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

/// The whole `notifiers:` mapping, by id.
pub type Notifiers = BTreeMap<String, NotifierSpec>;

/// More attempts than this is a loop, not a retry policy.
const MAX_ATTEMPTS: u32 = 20;

/// Longest duration anywhere in a notifier; an escalation that waits longer is no longer news.
const MAX_DURATION: Duration = Duration::from_secs(3600);

/// A value in the `notifiers:` section that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("{url:?} is not an http(s) URL: {problem}")]
    Url { url: String, problem: String },
    #[error("cannot read the duration {text:?}: {problem} (write e.g. 500ms, 5s, 2m or 1h30m)")]
    Duration {
        text: String,
        problem: nightwatch_time::DurationProblem,
    },
    #[error("the duration {text:?} is out of range: it must be above zero and at most 1h")]
    DurationRange { text: String },
    #[error("attempts must be between 1 and {MAX_ATTEMPTS}, not {0}")]
    Attempts(String),
    #[error("ntfy priority must be 1 (min) to 5 (max), not {0}")]
    Priority(String),
    #[error(
        "{0:?} is not an environment variable name (letters, digits and _, not starting with a digit)"
    )]
    EnvName(String),
    #[error("{0:?} is not an ntfy tag (non-empty printable ASCII without commas, at most 64)")]
    Tag(String),
    #[error("{0:?} is not an HTTP header name nightwatch may set")]
    HeaderName(String),
    #[error("a header value or token must be printable ASCII on one line")]
    HeaderValue,
    #[error("argv must name a program: give a non-empty list whose first item is not empty")]
    Argv,
    #[error("retry initial ({initial:?}) is longer than max ({max:?})")]
    BackoffOrder { initial: Duration, max: Duration },
}

/// One notifier: a channel, how often to try it, and how long each try may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifierSpec {
    pub channel: Channel,
    pub retry: Retry,
    /// Per attempt, so a hung server costs one timeout, not the whole escalation.
    pub timeout: Duration,
}

impl NotifierSpec {
    /// Five seconds: long enough for a slow webhook, short enough that a halted action's
    /// notification does not wait behind a dead one.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

    /// A notifier with the default retry policy and timeout.
    pub fn new(channel: Channel) -> Self {
        NotifierSpec {
            channel,
            retry: Retry::default(),
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}

/// Where a notifier sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Channel {
    Ntfy(NtfyChannel),
    Slack(SlackChannel),
    Webhook(WebhookChannel),
    Command(CommandChannel),
}

impl Channel {
    /// The key the channel is written under.
    pub fn kind(&self) -> &'static str {
        match self {
            Channel::Ntfy(_) => "ntfy",
            Channel::Slack(_) => "slack",
            Channel::Webhook(_) => "webhook",
            Channel::Command(_) => "command",
        }
    }
}

/// An ntfy topic: the message as the raw body, title, priority and tags as headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NtfyChannel {
    /// The topic URL, `https://ntfy.sh/<topic>`; on a public server the topic name is the secret.
    pub url: Endpoint,
    pub token: Option<Secret>,
    /// 1 to 5; `None` sends 4 for halts and asks, 3 otherwise.
    pub priority: Option<u8>,
    pub tags: Vec<String>,
}

/// A Slack incoming webhook; the URL itself is the credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackChannel {
    pub webhook_url: Endpoint,
}

/// Any HTTP endpoint that takes the escalation as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookChannel {
    pub url: Endpoint,
    /// Extra headers, inline or from the environment (for an `Authorization`).
    pub headers: Vec<(HeaderName, Secret)>,
}

/// A local program, run without a shell, with the escalation as JSON on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandChannel {
    pub argv: Vec<String>,
}

/// How often to try, and how long to wait between tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// Tries in all, including the first.
    pub attempts: u32,
    /// Wait after the first failure; doubled after each further one.
    pub initial: Duration,
    /// Cap on the wait, so a long outage is polled, not abandoned.
    pub max: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 4,
            initial: Duration::from_secs(1),
            max: Duration::from_secs(30),
        }
    }
}

/// A URL given inline (checked now) or named by environment variable (checked at delivery).
#[derive(Clone, PartialEq, Eq)]
pub enum Endpoint {
    Url(HttpUrl),
    Env(EnvName),
}

/// A secret given inline or named by environment variable.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    Inline(String),
    Env(EnvName),
}

// Inline secrets stay out of logs and debug output; env names are fine to show.
impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Secret::Inline(_) => f.write_str("Secret::Inline(<redacted>)"),
            Secret::Env(name) => write!(f, "Secret::Env({})", name.as_str()),
        }
    }
}

// A Slack or ntfy URL is a credential, so only its scheme and host are shown.
impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Url(url) => write!(f, "Endpoint::Url({}://{}/…)", url.scheme(), url.host()),
            Endpoint::Env(name) => write!(f, "Endpoint::Env({})", name.as_str()),
        }
    }
}

/// An absolute `http` or `https` URL with a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    text: String,
    https: bool,
    host: String,
}

impl HttpUrl {
    /// Checks that the text is a URL this crate can POST to.
    pub fn parse(text: &str) -> Result<HttpUrl, SpecError> {
        let problem = |problem: &str| SpecError::Url {
            url: text.to_owned(),
            problem: problem.to_owned(),
        };
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(problem("it contains spaces or control characters"));
        }
        match text.split_once("://") {
            None => return Err(problem("it has no scheme; start it with https://")),
            Some((scheme, _)) if !matches!(scheme, "http" | "https") => {
                return Err(problem(&format!("the scheme is {scheme}, not http(s)")));
            }
            Some(_) => {}
        }
        let uri: http::Uri = text
            .parse()
            .map_err(|e: http::uri::InvalidUri| problem(&e.to_string()))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            Some(other) => return Err(problem(&format!("the scheme is {other}, not http(s)"))),
            None => return Err(problem("it has no scheme; start it with https://")),
        };
        let host = uri.host().unwrap_or_default();
        if host.is_empty() {
            return Err(problem("it has no host"));
        }
        let host = match uri.port_u16() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        Ok(HttpUrl {
            text: text.to_owned(),
            https,
            host,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn scheme(&self) -> &'static str {
        if self.https { "https" } else { "http" }
    }

    /// Host and port, without path or credentials: safe to put in a failure reason.
    pub fn host(&self) -> &str {
        &self.host
    }
}

/// The name of an environment variable that holds a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvName(String);

impl EnvName {
    pub fn parse(text: &str) -> Result<EnvName, SpecError> {
        let mut chars = text.chars();
        let valid = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            Ok(EnvName(text.to_owned()))
        } else {
            Err(SpecError::EnvName(text.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An HTTP header name, minus the ones that frame the request (nightwatch sets those).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HeaderName(String);

impl HeaderName {
    pub fn parse(text: &str) -> Result<HeaderName, SpecError> {
        // RFC 9110 token characters.
        let token = !text.is_empty()
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        let reserved = [
            "content-length",
            "content-type",
            "transfer-encoding",
            "host",
            "connection",
        ]
        .iter()
        .any(|name| text.eq_ignore_ascii_case(name));
        if token && !reserved {
            Ok(HeaderName(text.to_owned()))
        } else {
            Err(SpecError::HeaderName(text.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether a header value can be sent as it is: printable ASCII, spaces and tabs.
pub fn is_header_value(text: &str) -> bool {
    text.bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

/// A wait or timeout in the one duration grammar (see [`nightwatch_time::parse_duration`]),
/// above zero and at most an hour.
pub fn parse_duration(text: &str) -> Result<Duration, SpecError> {
    let duration = nightwatch_time::parse_duration(text).map_err(|e| match e.problem {
        nightwatch_time::DurationProblem::TooLong => SpecError::DurationRange {
            text: text.to_owned(),
        },
        problem => SpecError::Duration {
            text: text.to_owned(),
            problem,
        },
    })?;
    if duration.is_zero() || duration > MAX_DURATION {
        return Err(SpecError::DurationRange {
            text: text.to_owned(),
        });
    }
    Ok(duration)
}

// ----- Deserialize: scalars -----

/// A value written as one YAML scalar and checked by `parse`.
trait Scalar: Sized {
    const EXPECTING: &'static str;
    fn parse(text: &str) -> Result<Self, SpecError>;
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

    // YAML reads `5` and `-1` as numbers; they still go through `parse` so the error says why.
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

fn scalar<'de, T: Scalar, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_any(ScalarVisitor(PhantomData))
}

impl Scalar for HttpUrl {
    const EXPECTING: &'static str = "an http(s) URL";
    fn parse(text: &str) -> Result<Self, SpecError> {
        HttpUrl::parse(text)
    }
}

impl Scalar for EnvName {
    const EXPECTING: &'static str = "an environment variable name";
    fn parse(text: &str) -> Result<Self, SpecError> {
        EnvName::parse(text)
    }
}

impl Scalar for HeaderName {
    const EXPECTING: &'static str = "an HTTP header name";
    fn parse(text: &str) -> Result<Self, SpecError> {
        HeaderName::parse(text)
    }
}

impl<'de> Deserialize<'de> for HttpUrl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        scalar(deserializer)
    }
}

impl<'de> Deserialize<'de> for EnvName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        scalar(deserializer)
    }
}

impl<'de> Deserialize<'de> for HeaderName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        scalar(deserializer)
    }
}

struct Span(Duration);

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        nightwatch_time::serde::duration_by(deserializer, |text| parse_duration(text).map(Span))
    }
}

struct Attempts(u32);

impl Scalar for Attempts {
    const EXPECTING: &'static str = "a number of attempts";
    fn parse(text: &str) -> Result<Self, SpecError> {
        match text.parse::<u32>() {
            Ok(n) if (1..=MAX_ATTEMPTS).contains(&n) => Ok(Attempts(n)),
            _ => Err(SpecError::Attempts(text.to_owned())),
        }
    }
}

struct Priority(u8);

impl Scalar for Priority {
    const EXPECTING: &'static str = "an ntfy priority from 1 to 5";
    fn parse(text: &str) -> Result<Self, SpecError> {
        match text.parse::<u8>() {
            Ok(n) if (1..=5).contains(&n) => Ok(Priority(n)),
            _ => Err(SpecError::Priority(text.to_owned())),
        }
    }
}

struct Tag(String);

impl Scalar for Tag {
    const EXPECTING: &'static str = "an ntfy tag";
    fn parse(text: &str) -> Result<Self, SpecError> {
        let valid = !text.is_empty()
            && text.len() <= 64
            && text
                .bytes()
                .all(|b| (b' '..=b'~').contains(&b) && b != b',');
        if valid {
            Ok(Tag(text.to_owned()))
        } else {
            Err(SpecError::Tag(text.to_owned()))
        }
    }
}

/// An inline header value or token: sent as a header, so it must be one printable ASCII line.
struct InlineHeaderValue(String);

impl Scalar for InlineHeaderValue {
    const EXPECTING: &'static str = "a header value";
    fn parse(text: &str) -> Result<Self, SpecError> {
        if is_header_value(text) {
            Ok(InlineHeaderValue(text.to_owned()))
        } else {
            Err(SpecError::HeaderValue)
        }
    }
}

macro_rules! deserialize_as_scalar {
    ($($type:ty),* $(,)?) => {$(
        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                scalar(deserializer)
            }
        }
    )*};
}

deserialize_as_scalar!(Attempts, Priority, Tag, InlineHeaderValue);

// ----- Deserialize: mappings -----

/// Sets a field that may be given once, under one of two names (`url` or `url_env`).
fn set_once<T, E: de::Error>(slot: &mut Option<T>, value: T, names: &str) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::custom(format!("give only one of {names}")));
    }
    *slot = Some(value);
    Ok(())
}

fn required<T, E: de::Error>(slot: Option<T>, names: &str) -> Result<T, E> {
    slot.ok_or_else(|| E::custom(format!("missing {names}")))
}

/// A mapping read by hand, so that cross-field rules are reported where they are broken.
trait Mapping: Sized {
    const EXPECTING: &'static str;
    fn visit<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error>;
}

struct MappingVisitor<T>(PhantomData<T>);

impl<'de, T: Mapping> Visitor<'de> for MappingVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::visit(map)
    }
}

macro_rules! deserialize_as_mapping {
    ($($type:ty),* $(,)?) => {$(
        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_map(MappingVisitor(PhantomData))
            }
        }
    )*};
}

deserialize_as_mapping!(
    NotifierSpec,
    NtfyChannel,
    SlackChannel,
    WebhookChannel,
    CommandChannel,
    Retry
);

enum NotifierField {
    Ntfy,
    Slack,
    Webhook,
    Command,
    Retry,
    Timeout,
}

const NOTIFIER_FIELDS: &[&str] = &["ntfy", "slack", "webhook", "command", "retry", "timeout"];

/// Reads a notifier's key, refusing a second channel there and then: an error raised inside the
/// key's own visitor is reported at the key's line, not at the start of the notifier.
struct NotifierKey {
    channel: Option<&'static str>,
}

impl<'de> de::DeserializeSeed<'de> for NotifierKey {
    type Value = NotifierField;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<NotifierField, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for NotifierKey {
    type Value = NotifierField;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a notifier field")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<NotifierField, E> {
        let field = match key {
            "ntfy" => NotifierField::Ntfy,
            "slack" => NotifierField::Slack,
            "webhook" => NotifierField::Webhook,
            "command" => NotifierField::Command,
            "retry" => return Ok(NotifierField::Retry),
            "timeout" => return Ok(NotifierField::Timeout),
            _ => return Err(E::unknown_field(key, NOTIFIER_FIELDS)),
        };
        match self.channel {
            Some(first) => Err(E::custom(format!(
                "a notifier has exactly one channel, but this one has {first} and {key}: \
                 split them into two notifiers"
            ))),
            None => Ok(field),
        }
    }
}

impl Mapping for NotifierSpec {
    const EXPECTING: &'static str =
        "a notifier (one of ntfy, slack, webhook, command; optional retry and timeout)";

    fn visit<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut channel: Option<Channel> = None;
        let mut retry: Option<Retry> = None;
        let mut timeout: Option<Span> = None;
        loop {
            let key = NotifierKey {
                channel: channel.as_ref().map(Channel::kind),
            };
            let Some(field) = map.next_key_seed(key)? else {
                break;
            };
            match field {
                NotifierField::Ntfy => channel = Some(Channel::Ntfy(map.next_value()?)),
                NotifierField::Slack => channel = Some(Channel::Slack(map.next_value()?)),
                NotifierField::Webhook => channel = Some(Channel::Webhook(map.next_value()?)),
                NotifierField::Command => channel = Some(Channel::Command(map.next_value()?)),
                NotifierField::Retry => set_once(&mut retry, map.next_value()?, "retry")?,
                NotifierField::Timeout => set_once(&mut timeout, map.next_value()?, "timeout")?,
            }
        }
        let channel = required(channel, "a channel: one of ntfy, slack, webhook or command")?;
        Ok(NotifierSpec {
            channel,
            retry: retry.unwrap_or_default(),
            timeout: timeout.map_or(NotifierSpec::DEFAULT_TIMEOUT, |Span(d)| d),
        })
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum NtfyField {
    Url,
    UrlEnv,
    Token,
    TokenEnv,
    Priority,
    Tags,
}

impl Mapping for NtfyChannel {
    const EXPECTING: &'static str = "an ntfy channel ({ url: https://ntfy.sh/<topic> })";

    fn visit<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut url = None;
        let mut token = None;
        let mut priority: Option<Priority> = None;
        let mut tags: Option<Vec<Tag>> = None;
        while let Some(field) = map.next_key::<NtfyField>()? {
            match field {
                NtfyField::Url => set_once(&mut url, Endpoint::Url(map.next_value()?), URL)?,
                NtfyField::UrlEnv => set_once(&mut url, Endpoint::Env(map.next_value()?), URL)?,
                NtfyField::Token => {
                    let InlineHeaderValue(token_text) = map.next_value()?;
                    set_once(&mut token, Secret::Inline(token_text), TOKEN)?
                }
                NtfyField::TokenEnv => set_once(&mut token, Secret::Env(map.next_value()?), TOKEN)?,
                NtfyField::Priority => set_once(&mut priority, map.next_value()?, "priority")?,
                NtfyField::Tags => set_once(&mut tags, map.next_value()?, "tags")?,
            }
        }
        Ok(NtfyChannel {
            url: required(url, URL)?,
            token,
            priority: priority.map(|Priority(p)| p),
            tags: tags
                .unwrap_or_default()
                .into_iter()
                .map(|Tag(t)| t)
                .collect(),
        })
    }
}

const URL: &str = "url or url_env";
const TOKEN: &str = "token or token_env";
const WEBHOOK_URL: &str = "webhook_url or webhook_url_env";

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum SlackField {
    WebhookUrl,
    WebhookUrlEnv,
}

impl Mapping for SlackChannel {
    const EXPECTING: &'static str = "a slack channel ({ webhook_url_env: SLACK_WEBHOOK })";

    fn visit<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut url = None;
        while let Some(field) = map.next_key::<SlackField>()? {
            let value = match field {
                SlackField::WebhookUrl => Endpoint::Url(map.next_value()?),
                SlackField::WebhookUrlEnv => Endpoint::Env(map.next_value()?),
            };
            set_once(&mut url, value, WEBHOOK_URL)?;
        }
        Ok(SlackChannel {
            webhook_url: required(url, WEBHOOK_URL)?,
        })
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum WebhookField {
    Url,
    UrlEnv,
    Headers,
    HeadersEnv,
}

impl Mapping for WebhookChannel {
    const EXPECTING: &'static str = "a webhook channel ({ url: https://..., headers: {...} })";

    fn visit<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut url = None;
        let mut inline: Option<BTreeMap<HeaderName, InlineHeaderValue>> = None;
        let mut from_env: Option<BTreeMap<HeaderName, EnvName>> = None;
        while let Some(field) = map.next_key::<WebhookField>()? {
            match field {
                WebhookField::Url => set_once(&mut url, Endpoint::Url(map.next_value()?), URL)?,
                WebhookField::UrlEnv => set_once(&mut url, Endpoint::Env(map.next_value()?), URL)?,
                WebhookField::Headers => set_once(&mut inline, map.next_value()?, "headers")?,
                WebhookField::HeadersEnv => {
                    set_once(&mut from_env, map.next_value()?, "headers_env")?
                }
            }
        }
        let mut headers: Vec<(HeaderName, Secret)> = Vec::new();
        let inline = inline.unwrap_or_default().into_iter();
        let from_env = from_env.unwrap_or_default().into_iter();
        let all = inline
            .map(|(name, InlineHeaderValue(value))| (name, Secret::Inline(value)))
            .chain(from_env.map(|(name, var)| (name, Secret::Env(var))));
        for (name, value) in all {
            if headers
                .iter()
                .any(|(seen, _)| seen.as_str().eq_ignore_ascii_case(name.as_str()))
            {
                return Err(de::Error::custom(format!(
                    "header {} is given twice (in headers and headers_env)",
                    name.as_str()
                )));
            }
            headers.push((name, value));
        }
        Ok(WebhookChannel {
            url: required(url, URL)?,
            headers,
        })
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum CommandField {
    Argv,
}

impl Mapping for CommandChannel {
    const EXPECTING: &'static str = "a command channel ({ argv: [program, args...] })";

    fn visit<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut argv: Option<Vec<String>> = None;
        while let Some(CommandField::Argv) = map.next_key::<CommandField>()? {
            let value: Vec<String> = map.next_value()?;
            if value.first().is_none_or(|program| program.is_empty())
                || value.iter().any(|arg| arg.contains('\0'))
            {
                return Err(de::Error::custom(SpecError::Argv));
            }
            set_once(&mut argv, value, "argv")?;
        }
        Ok(CommandChannel {
            argv: required(argv, "argv")?,
        })
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum RetryField {
    Attempts,
    Initial,
    Max,
}

impl Mapping for Retry {
    const EXPECTING: &'static str = "a retry policy ({ attempts: 4, initial: 1s, max: 30s })";

    fn visit<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut attempts: Option<Attempts> = None;
        let mut initial: Option<Span> = None;
        let mut max: Option<Span> = None;
        while let Some(field) = map.next_key::<RetryField>()? {
            match field {
                RetryField::Attempts => set_once(&mut attempts, map.next_value()?, "attempts")?,
                RetryField::Initial => set_once(&mut initial, map.next_value()?, "initial")?,
                RetryField::Max => set_once(&mut max, map.next_value()?, "max")?,
            }
        }
        let default = Retry::default();
        let retry = Retry {
            attempts: attempts.map_or(default.attempts, |Attempts(n)| n),
            initial: initial.map_or(default.initial, |Span(d)| d),
            max: max.map_or(default.max, |Span(d)| d),
        };
        if retry.initial > retry.max {
            return Err(de::Error::custom(SpecError::BackoffOrder {
                initial: retry.initial,
                max: retry.max,
            }));
        }
        Ok(retry)
    }
}
