//! The GitHub PR provider: what GitHub's pulls API says about one branch.
//!
//! `GET {base}/repos/{owner}/{repo}/pulls?state=all&head={owner}:{branch}&per_page=100`, every
//! page (`Link: <…>; rel="next"`, at most ten, never to another host), read into a [`PrState`]:
//! an open PR wins (the work goes on), else the most recently merged one gives its head commit,
//! else the branch's PRs were all closed, else it has none. Everything else is `Unknown`, which
//! keeps: a refused token, a rate limit, a timeout, an answer that is not a list of PRs, a
//! remote that is not on this GitHub.
//!
//! After a refused token, a rate limit or an unreachable server, the same client does not ask
//! again: every answer would be the same, and each would cost a timeout or a request against
//! the limit.

use nightwatch_janitor::{GithubRepo, PrState};
use serde::Deserialize;
use std::fmt;
use std::io::Read;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// How long one page may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// A hundred PRs a page: a branch with more than a thousand is not one to guess about.
const MAX_PAGES: usize = 10;
/// A full page of PRs is a few megabytes; an answer far larger is not GitHub's.
const BODY_LIMIT: u64 = 32 << 20;
const API_VERSION: &str = "2022-11-28";

/// Asks one GitHub (github.com or an Enterprise Server) about branches' PRs.
pub struct GithubPulls {
    /// The API root, without a trailing slash.
    base_url: String,
    token: Option<String>,
    timeout: Duration,
    agent: ureq::Agent,
    /// Why GitHub is not asked again: the token was refused, rate limited, unreachable.
    halted: Mutex<Option<String>>,
}

// The token stays out of debug output.
impl fmt::Debug for GithubPulls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GithubPulls")
            .field("base_url", &self.base_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl GithubPulls {
    /// `base_url` is the API root (`https://api.github.com`, or `https://HOST/api/v3` for
    /// GitHub Enterprise Server); `token`, when given and not blank, is sent as a bearer token.
    pub fn new(base_url: &str, token: Option<String>) -> GithubPulls {
        let base_url = base_url.trim_end_matches('/').to_owned();
        let token = token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        GithubPulls {
            agent: agent(&base_url, TIMEOUT),
            base_url,
            token,
            timeout: TIMEOUT,
            halted: Mutex::new(None),
        }
    }

    /// The same client with another time limit per page.
    pub fn with_timeout(mut self, timeout: Duration) -> GithubPulls {
        self.agent = agent(&self.base_url, timeout);
        self.timeout = timeout;
        self
    }

    /// The repository a remote URL names, when the remote is on this GitHub. The reason
    /// never repeats the URL, which may hold a credential.
    pub fn repo_of_remote(&self, url: &str) -> Result<GithubRepo, String> {
        let Some((host, repo)) = parse_remote(url) else {
            return Err(
                "the origin remote is not the URL of a repository on a GitHub \
                        (HOST/OWNER/NAME): set sweep.worktrees.pr.github.repo"
                    .to_owned(),
            );
        };
        let web = web_host(&self.base_url);
        let github_alias =
            web == "github.com" && matches!(host.as_str(), "www.github.com" | "ssh.github.com");
        if host == web || github_alias {
            Ok(repo)
        } else {
            Err(format!(
                "the origin remote is on {host}, not on the GitHub at {web}: set \
                 sweep.worktrees.pr.github.repo (and base_url for GitHub Enterprise)"
            ))
        }
    }

    /// What GitHub says about the PRs from `branch` of `repo`.
    pub fn pr_state(&self, repo: &GithubRepo, branch: &str) -> PrState {
        let unknown = |why: String| PrState::Unknown { why };
        if let Some(why) = self.halted() {
            return unknown(format!("{why} (GitHub not asked again)"));
        }
        let mut url = format!(
            "{}/repos/{}/{}/pulls?state=all&head={}:{}&per_page=100",
            self.base_url,
            repo.owner(),
            repo.name(),
            repo.owner(),
            query_escape(branch)
        );
        let mut pulls = Vec::new();
        for _ in 0..MAX_PAGES {
            let page = match self.page(&url, repo) {
                Ok(page) => page,
                Err(refusal) => {
                    if refusal.halts {
                        self.halt(&refusal.why);
                    }
                    return unknown(refusal.why);
                }
            };
            match serde_json::from_slice::<Vec<Pull>>(&page.body) {
                Ok(mut more) => pulls.append(&mut more),
                Err(e) => {
                    return unknown(format!(
                        "GitHub's answer is not a list of pull requests: {e}"
                    ));
                }
            }
            match page.next {
                None => return state_of(&pulls, repo.owner(), branch),
                Some(next) if same_origin(&next, &self.base_url) => url = next,
                Some(_) => {
                    return unknown(format!(
                        "GitHub's next page of PRs is on another host: not followed, so the \
                         token goes to {} only",
                        host_of(&self.base_url)
                    ));
                }
            }
        }
        unknown(format!(
            "more than {MAX_PAGES} pages of PRs from {branch}: not all were read"
        ))
    }

    fn page(&self, url: &str, repo: &GithubRepo) -> Result<Page, Refusal> {
        let mut request = self
            .agent
            .get(url)
            .header("X-GitHub-Api-Version", API_VERSION);
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let mut response = request.call().map_err(|e| self.transport_failure(e))?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim().to_owned())
        };
        let limits = Limits {
            remaining: header("x-ratelimit-remaining"),
            reset: header("x-ratelimit-reset"),
            retry_after: header("retry-after"),
        };
        let next = header("link").as_deref().and_then(next_link);
        let mut body = Vec::new();
        if let Err(e) = response
            .body_mut()
            .as_reader()
            .take(BODY_LIMIT + 1)
            .read_to_end(&mut body)
        {
            return Err(self.read_failure(e));
        }
        if body.len() as u64 > BODY_LIMIT {
            return Err(Refusal::passing(format!(
                "GitHub's answer is larger than {} MiB",
                BODY_LIMIT >> 20
            )));
        }
        if status == 200 {
            return Ok(Page { body, next });
        }
        Err(refusal(status, &limits, &body, self.token.is_some(), repo))
    }

    fn transport_failure(&self, error: ureq::Error) -> Refusal {
        let host = host_of(&self.base_url);
        match error {
            ureq::Error::Timeout(_) => self.timed_out(),
            ureq::Error::Io(e) if is_timeout(&e) => self.timed_out(),
            ureq::Error::HostNotFound => {
                Refusal::halting(format!("cannot reach GitHub at {host}: host not found"))
            }
            ureq::Error::ConnectionFailed => {
                Refusal::halting(format!("cannot reach GitHub at {host}: connection failed"))
            }
            ureq::Error::Io(e) => Refusal::halting(format!("cannot reach GitHub at {host}: {e}")),
            other => Refusal::passing(format!("cannot ask GitHub at {host}: {other}")),
        }
    }

    fn read_failure(&self, error: std::io::Error) -> Refusal {
        if is_timeout(&error) {
            self.timed_out()
        } else {
            Refusal::passing(format!("GitHub's answer could not be read: {error}"))
        }
    }

    fn timed_out(&self) -> Refusal {
        Refusal::halting(format!(
            "GitHub at {} did not answer within {:?}",
            host_of(&self.base_url),
            self.timeout
        ))
    }

    fn halted(&self) -> Option<String> {
        self.halted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn halt(&self, why: &str) {
        *self.halted.lock().unwrap_or_else(PoisonError::into_inner) = Some(why.to_owned());
    }
}

fn agent(base_url: &str, timeout: Duration) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        // A status is an answer to read, not an error.
        .http_status_as_error(false)
        .user_agent("nightwatch")
        .accept("application/vnd.github+json")
        // A renamed repository answers 301; the token follows to the same host only.
        .max_redirects(3)
        .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost);
    // A stand-in on this host is never reached through a proxy from the environment.
    let config = if is_loopback(&host_of(base_url)) {
        config.proxy(None)
    } else {
        config
    };
    config.build().new_agent()
}

fn is_timeout(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(error.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock)
        // ureq wraps its own errors (a timeout while reading) in io::Error.
        || error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<ureq::Error>())
            .is_some_and(|inner| matches!(inner, ureq::Error::Timeout(_)))
}

struct Page {
    body: Vec<u8>,
    next: Option<String>,
}

/// Why a page was not read, and whether asking again could answer differently.
#[derive(Debug)]
struct Refusal {
    why: String,
    halts: bool,
}

impl Refusal {
    fn halting(why: String) -> Refusal {
        Refusal { why, halts: true }
    }

    fn passing(why: String) -> Refusal {
        Refusal { why, halts: false }
    }
}

/// The rate-limit headers of an answer.
#[derive(Debug, Default)]
struct Limits {
    remaining: Option<String>,
    /// Seconds since 1970.
    reset: Option<String>,
    /// Seconds to wait.
    retry_after: Option<String>,
}

/// What a status other than 200 means.
fn refusal(
    status: u16,
    limits: &Limits,
    body: &[u8],
    sent_token: bool,
    repo: &GithubRepo,
) -> Refusal {
    let said = message(body);
    let exhausted = limits.remaining.as_deref() == Some("0");
    if matches!(status, 403 | 429) && (exhausted || limits.retry_after.is_some()) {
        let seconds = |text: &Option<String>| text.as_deref().and_then(|t| t.parse::<i64>().ok());
        let wait = seconds(&limits.retry_after);
        let until = seconds(&limits.reset).and_then(|at| jiff::Timestamp::from_second(at).ok());
        return Refusal::halting(match (wait, until) {
            (Some(wait), _) => {
                format!("rate limited for {wait} s (GitHub answered {status}: {said})")
            }
            (None, Some(at)) => {
                format!("rate limited until {at} (GitHub answered {status}: {said})")
            }
            (None, None) => format!("rate limited (GitHub answered {status}: {said})"),
        });
    }
    match status {
        401 if sent_token => {
            Refusal::halting(format!("the GitHub token was refused (401): {said}"))
        }
        401 => Refusal::halting(format!(
            "GitHub asks for a token (401) and none was set: {said}"
        )),
        403 => Refusal::passing(format!("GitHub refused access to {repo} (403): {said}")),
        404 => Refusal::passing(format!(
            "GitHub has no repository {repo} (404), or the token cannot see it"
        )),
        _ => Refusal::passing(format!("GitHub answered {status} for {repo}: {said}")),
    }
}

/// GitHub's `message`, or the start of a body that is not its JSON, on one short line.
fn message(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Said {
        message: String,
    }
    let text = match serde_json::from_slice::<Said>(body) {
        Ok(said) => said.message,
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    let line: String = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    match line.char_indices().nth(200) {
        None if line.is_empty() => "no message".to_owned(),
        None => line,
        Some((cut, _)) => format!("{}…", &line[..cut]),
    }
}

/// One pull request as the API lists it: only the fields read.
#[derive(Debug, Deserialize)]
struct Pull {
    number: u64,
    state: String,
    html_url: Option<String>,
    merged_at: Option<String>,
    head: Head,
}

#[derive(Debug, Deserialize)]
struct Head {
    #[serde(rename = "ref")]
    branch: String,
    /// `OWNER:BRANCH`; a fork's PR carries the fork's owner.
    label: Option<String>,
    sha: String,
}

/// The state of the PRs from `owner:branch`. A PR from anywhere else means the `head` filter
/// was not applied (GitHub ignores one it cannot read), so nothing in the list can be trusted.
fn state_of(pulls: &[Pull], owner: &str, branch: &str) -> PrState {
    let unknown = |why: String| PrState::Unknown { why };
    let label = format!("{owner}:{branch}");
    if let Some(other) = pulls
        .iter()
        .find(|p| p.head.branch != branch || p.head.label.as_ref().is_some_and(|l| *l != label))
    {
        return unknown(format!(
            "GitHub listed PR #{} from {}, not from {label}: the head filter was not applied",
            other.number,
            other.head.label.as_deref().unwrap_or(&other.head.branch)
        ));
    }
    if let Some(open) = pulls.iter().find(|p| p.state == "open") {
        return PrState::Open {
            url: open.html_url.clone(),
        };
    }
    let mut latest: Option<(jiff::Timestamp, &Pull)> = None;
    for pull in pulls {
        match (pull.state.as_str(), &pull.merged_at) {
            ("closed", None) => {}
            ("closed", Some(at)) => {
                let Ok(at) = at.parse::<jiff::Timestamp>() else {
                    return unknown(format!(
                        "PR #{} has an unreadable merged_at {at:?}",
                        pull.number
                    ));
                };
                if latest.is_none_or(|(newest, _)| at > newest) {
                    latest = Some((at, pull));
                }
            }
            (other, _) => {
                return unknown(format!(
                    "PR #{} is in an unknown state {other:?}",
                    pull.number
                ));
            }
        }
    }
    match latest {
        Some((_, pull)) if is_commit_id(&pull.head.sha) => PrState::Merged {
            commit: pull.head.sha.clone(),
        },
        Some((_, pull)) => unknown(format!(
            "PR #{} was merged, but its head {:?} is not a commit id",
            pull.number, pull.head.sha
        )),
        None if pulls.is_empty() => PrState::NoPr,
        None => PrState::Closed,
    }
}

fn is_commit_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The URL of the `rel="next"` link in a `Link` header.
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|link| {
        let (target, params) = link.split_once(';')?;
        let url = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        let is_next = params.split(';').any(|param| {
            param.split_once('=').is_some_and(|(key, value)| {
                key.trim().eq_ignore_ascii_case("rel")
                    && value
                        .trim()
                        .trim_matches('"')
                        .split_ascii_whitespace()
                        .any(|rel| rel.eq_ignore_ascii_case("next"))
            })
        });
        is_next.then(|| url.to_owned())
    })
}

/// Percent-encodes all but unreserved characters and `/`: a branch may hold `&`, `#`, `+`
/// or `%`, which would otherwise change the query.
fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The host and `owner/name` of a remote URL: `https://HOST/OWNER/NAME(.git)`,
/// `ssh://[USER@]HOST[:PORT]/OWNER/NAME(.git)` or `[USER@]HOST:OWNER/NAME(.git)`. The host is
/// lowercased, without user or port. `None` for anything else: a local path, another scheme,
/// a path of more or fewer than two parts, characters GitHub does not allow in names.
pub fn parse_remote(url: &str) -> Option<(String, GithubRepo)> {
    let url = url.trim();
    if url.is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (authority, path) = match url.split_once("://") {
        Some((scheme, rest)) => {
            let scheme = scheme.to_ascii_lowercase();
            if !matches!(
                scheme.as_str(),
                "https" | "http" | "ssh" | "git" | "git+ssh" | "ssh+git"
            ) {
                return None;
            }
            rest.split_once('/')?
        }
        // scp-like: no `/` before the first `:`, as git itself tells them from paths.
        None => {
            let (authority, path) = url.split_once(':')?;
            if authority.contains('/') {
                return None;
            }
            (authority, path)
        }
    };
    let host_and_port = authority.rsplit('@').next()?;
    let host = host_and_port.split(':').next()?;
    let host_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-');
    if host.is_empty() || !host.chars().all(host_ok) {
        return None;
    }
    let path = path.strip_prefix('/').unwrap_or(path);
    let path = path.strip_suffix('/').unwrap_or(path);
    let path = path.strip_suffix(".git").unwrap_or(path);
    let repo = GithubRepo::parse(path).ok()?;
    Some((host.to_ascii_lowercase(), repo))
}

/// The host a URL names, lowercased, without user or port.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_and_port = authority.rsplit('@').next().unwrap_or_default();
    let host = match host_and_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host_and_port.split(':').next().unwrap_or_default(),
    };
    host.to_ascii_lowercase()
}

/// Where the repositories of the API at `base_url` live: github.com for api.github.com, the
/// same host for an Enterprise Server.
fn web_host(base_url: &str) -> String {
    match host_of(base_url).as_str() {
        "api.github.com" => "github.com".to_owned(),
        host => host.to_owned(),
    }
}

/// Scheme, host and port: where the token may go.
fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    Some(format!("{scheme}://{authority}").to_ascii_lowercase())
}

fn same_origin(a: &str, b: &str) -> bool {
    origin(a).is_some_and(|a| Some(a) == origin(b))
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn repo(text: &str) -> GithubRepo {
        GithubRepo::parse(text).unwrap()
    }

    #[test]
    fn remotes_name_their_repository() {
        for (url, host, name) in [
            (
                "https://github.com/octo-org/app",
                "github.com",
                "octo-org/app",
            ),
            (
                "https://github.com/octo-org/app.git",
                "github.com",
                "octo-org/app",
            ),
            (
                "https://github.com/octo-org/app/",
                "github.com",
                "octo-org/app",
            ),
            (
                "https://x-access-token:ghs_abc@github.com/o/r.git",
                "github.com",
                "o/r",
            ),
            ("HTTPS://GitHub.com/Octo/App.git", "github.com", "Octo/App"),
            (
                "git@github.com:octo-org/app.git",
                "github.com",
                "octo-org/app",
            ),
            ("git@github.com:octo-org/app", "github.com", "octo-org/app"),
            ("github.com:octo-org/app.git", "github.com", "octo-org/app"),
            (
                "git@github.com:/octo-org/app.git",
                "github.com",
                "octo-org/app",
            ),
            (
                "ssh://git@github.com/octo-org/app.git",
                "github.com",
                "octo-org/app",
            ),
            (
                "ssh://git@ssh.github.com:443/o/r.git",
                "ssh.github.com",
                "o/r",
            ),
            (
                "ssh://git@ghe.example.com:2222/team/svc",
                "ghe.example.com",
                "team/svc",
            ),
            (
                "git+ssh://git@github.com/o/r.js.git",
                "github.com",
                "o/r.js",
            ),
            ("  https://github.com/o/r.git\n", "github.com", "o/r"),
        ] {
            let (got_host, got) = parse_remote(url).unwrap_or_else(|| panic!("{url:?}"));
            assert_eq!(
                (got_host.as_str(), got.to_string().as_str()),
                (host, name),
                "{url}"
            );
        }
    }

    #[test]
    fn hostile_or_foreign_remotes_name_nothing() {
        for url in [
            "",
            "   ",
            "/srv/git/app.git",
            "../app",
            "./o/r",
            "file:///srv/o/r.git",
            "ftp://github.com/o/r",
            "https://github.com/o",
            "https://github.com/o/r/pulls",
            "https://github.com/o/r?x=1",
            "https://github.com/o/r#frag",
            "https://github.com/../r",
            "https://github.com/o/..",
            "https://github.com/o/.git",
            "https://github.com//r",
            "https://github.com/o%2Fr/x",
            "https://",
            "https:///o/r",
            "git@:o/r",
            "git@github.com:o",
            "git@github.com:o/r x",
            "git@github.com:o/r\nevil",
            "git@gith\u{fc}b.com:o/r",
            "https://[::1]/o/r",
            "C:\\repos\\app",
            "https://github.com/o/\u{0}r",
            "https://github.com/o/r\u{202e}",
            "@:/",
            "::::",
            "://///",
        ] {
            assert_eq!(parse_remote(url), None, "{url:?}");
        }
    }

    #[test]
    fn remotes_must_be_on_this_github() {
        let github = GithubPulls::new("https://api.github.com/", None);
        assert_eq!(
            github.repo_of_remote("git@github.com:o/r.git"),
            Ok(repo("o/r"))
        );
        assert_eq!(
            github.repo_of_remote("ssh://git@ssh.github.com:443/o/r.git"),
            Ok(repo("o/r"))
        );
        let elsewhere = github
            .repo_of_remote("https://user:secret@gitlab.com/o/r.git")
            .unwrap_err();
        assert!(elsewhere.contains("on gitlab.com, not on the GitHub at github.com"));
        assert!(!elsewhere.contains("secret"), "{elsewhere}");
        let local = github.repo_of_remote("/srv/git/r.git").unwrap_err();
        assert!(local.contains("sweep.worktrees.pr.github.repo"), "{local}");

        let ghe = GithubPulls::new("https://ghe.example.com/api/v3", None);
        assert_eq!(
            ghe.repo_of_remote("git@GHE.example.com:team/svc.git"),
            Ok(repo("team/svc"))
        );
        assert!(ghe.repo_of_remote("git@github.com:o/r.git").is_err());
    }

    #[test]
    fn next_links_are_found() {
        let header = "<https://api.github.com/repositories/1/pulls?page=2>; rel=\"next\", \
                      <https://api.github.com/repositories/1/pulls?page=5>; rel=\"last\"";
        assert_eq!(
            next_link(header).as_deref(),
            Some("https://api.github.com/repositories/1/pulls?page=2")
        );
        let last_page = "<https://api.github.com/r/1/pulls?page=1>; rel=\"first\", \
                         <https://api.github.com/r/1/pulls?page=4>; rel=\"prev\"";
        assert_eq!(next_link(last_page), None);
        assert_eq!(
            next_link("<https://x/y?page=3>;rel=next").as_deref(),
            Some("https://x/y?page=3")
        );
        for odd in ["", "garbage", "<x>", "x; rel=\"next\"", "<>; rel", ";;,,<"] {
            let _ = next_link(odd);
        }
    }

    #[test]
    fn origins_keep_the_token_at_home() {
        assert!(same_origin(
            "https://api.github.com/repositories/1/pulls?page=2",
            "https://api.github.com"
        ));
        assert!(same_origin(
            "https://GHE.example.com/api/v3/x",
            "https://ghe.example.com/api/v3"
        ));
        assert!(!same_origin(
            "https://evil.example/x",
            "https://api.github.com"
        ));
        assert!(!same_origin(
            "http://api.github.com/x",
            "https://api.github.com"
        ));
        assert!(!same_origin(
            "https://api.github.com.evil.example/x",
            "https://api.github.com"
        ));
        assert!(!same_origin("/relative?page=2", "https://api.github.com"));
    }

    #[test]
    fn branches_are_escaped_in_the_query() {
        assert_eq!(query_escape("feature/x-1.2_3~"), "feature/x-1.2_3~");
        assert_eq!(query_escape("a&b=c#d e+f%"), "a%26b%3Dc%23d%20e%2Bf%25");
        assert_eq!(query_escape("ü"), "%C3%BC");
    }

    fn pull(number: u64, state: &str, merged_at: Option<&str>, sha: &str) -> Pull {
        Pull {
            number,
            state: state.into(),
            html_url: Some(format!("https://github.com/o/r/pull/{number}")),
            merged_at: merged_at.map(str::to_owned),
            head: Head {
                branch: "fix".into(),
                label: Some("o:fix".into()),
                sha: sha.into(),
            },
        }
    }

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";

    #[test]
    fn an_open_pr_wins_then_the_latest_merge() {
        let merged_old = pull(1, "closed", Some("2026-01-01T00:00:00Z"), A);
        let merged_new = pull(2, "closed", Some("2026-02-01T00:00:00Z"), B);
        let closed = pull(3, "closed", None, A);
        let open = pull(4, "open", None, A);
        assert_eq!(
            state_of(&[merged_old, merged_new, closed, open], "o", "fix"),
            PrState::Open {
                url: Some("https://github.com/o/r/pull/4".into())
            }
        );
        let merged_old = pull(1, "closed", Some("2026-01-01T00:00:00Z"), A);
        let merged_new = pull(2, "closed", Some("2026-02-01T00:00:00Z"), B);
        assert_eq!(
            state_of(&[merged_new, merged_old], "o", "fix"),
            PrState::Merged { commit: B.into() }
        );
        assert_eq!(
            state_of(&[pull(3, "closed", None, A)], "o", "fix"),
            PrState::Closed
        );
        assert_eq!(state_of(&[], "o", "fix"), PrState::NoPr);
    }

    #[test]
    fn doubtful_lists_are_unknown() {
        let mut fork = pull(5, "closed", Some("2026-01-01T00:00:00Z"), A);
        fork.head.label = Some("someone:fix".into());
        let mut other_branch = pull(6, "open", None, A);
        other_branch.head.branch = "main".into();
        let bad_time = pull(7, "closed", Some("yesterday"), A);
        let bad_sha = pull(8, "closed", Some("2026-01-01T00:00:00Z"), "HEAD");
        let odd_state = pull(9, "draft", None, A);
        for (pulls, says) in [
            (vec![fork], "not from o:fix"),
            (vec![other_branch], "head filter was not applied"),
            (vec![bad_time], "unreadable merged_at"),
            (vec![bad_sha], "not a commit id"),
            (vec![odd_state], "unknown state"),
        ] {
            match state_of(&pulls, "o", "fix") {
                PrState::Unknown { why } => assert!(why.contains(says), "{why}"),
                other => panic!("{says}: {other:?}"),
            }
        }
    }

    #[test]
    fn refusals_say_what_to_do() {
        let r = repo("o/r");
        let bad = br#"{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest","status":"401"}"#;
        let refused = refusal(401, &Limits::default(), bad, true, &r);
        assert_eq!(
            refused.why,
            "the GitHub token was refused (401): Bad credentials"
        );
        assert!(refused.halts);
        let limited = Limits {
            remaining: Some("0".into()),
            reset: Some("1773144000".into()),
            retry_after: None,
        };
        let refused = refusal(
            403,
            &limited,
            b"{\"message\":\"API rate limit exceeded\"}",
            true,
            &r,
        );
        assert_eq!(
            refused.why,
            "rate limited until 2026-03-10T12:00:00Z (GitHub answered 403: API rate limit exceeded)"
        );
        let secondary = Limits {
            retry_after: Some("60".into()),
            ..Limits::default()
        };
        let refused = refusal(429, &secondary, b"", true, &r);
        assert_eq!(
            refused.why,
            "rate limited for 60 s (GitHub answered 429: no message)"
        );
        let forbidden = refusal(403, &Limits::default(), b"<html>\n\tno\n</html>", true, &r);
        assert_eq!(
            forbidden.why,
            "GitHub refused access to o/r (403): <html> no </html>"
        );
        assert!(!forbidden.halts);
        let missing = refusal(404, &Limits::default(), b"", false, &r);
        assert!(
            missing.why.contains("no repository o/r (404)"),
            "{}",
            missing.why
        );
        let long = "x".repeat(500);
        let server = refusal(502, &Limits::default(), long.as_bytes(), true, &r);
        assert!(
            server.why.ends_with('…') && server.why.len() < 260,
            "{}",
            server.why
        );
    }

    proptest! {
        /// Whatever a remote URL, a Link header or a body holds, reading it answers and
        /// never panics.
        #[test]
        fn no_input_panics(text in "\\PC{0,80}", bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Some((host, repo)) = parse_remote(&text) {
                prop_assert!(!host.is_empty());
                prop_assert!(!repo.owner().contains('/') && !repo.name().contains('/'));
            }
            let _ = next_link(&text);
            let _ = host_of(&text);
            let _ = same_origin(&text, "https://api.github.com");
            let _ = query_escape(&text);
            let _ = message(&bytes);
            let _ = message(text.as_bytes());
            if let Ok(pulls) = serde_json::from_slice::<Vec<Pull>>(&bytes) {
                let _ = state_of(&pulls, "o", &text);
            }
            let limits = Limits { remaining: Some(text.clone()), reset: Some(text.clone()), retry_after: Some(text.clone()) };
            let _ = refusal(429, &limits, &bytes, false, &repo("o/r"));
        }

        /// Remotes built from any valid owner and name read back as that repository.
        #[test]
        fn built_remotes_read_back(owner in "[A-Za-z0-9][A-Za-z0-9-]{0,20}", name in "[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}") {
            prop_assume!(!name.ends_with(".git") && name != "." && name != "..");
            let want = format!("{owner}/{name}");
            for url in [
                format!("https://github.com/{want}.git"),
                format!("git@github.com:{want}.git"),
                format!("ssh://git@github.com/{want}"),
            ] {
                let (_, repo) = parse_remote(&url).unwrap();
                prop_assert_eq!(repo.to_string(), want.clone());
            }
        }
    }
}
