//! `http:` GETs a health endpoint. It matches when the endpoint is NOT healthy: acting on a
//! service that is already failing is what the check is there to stop.

use crate::Outcome;
use crate::spec::HttpCheck;
use std::io::{self, Read};
use std::time::Instant;

/// How much body is searched for `body_contains`: health answers are small.
const BODY_CAP: u64 = 64 * 1024;

pub(crate) fn probe(check: &HttpCheck, deadline: Instant) -> Outcome {
    let url = &check.url;
    let body_cap = if check.body_contains.is_some() {
        BODY_CAP
    } else {
        0
    };
    let answer = match get(url, deadline, body_cap) {
        Ok(answer) => answer,
        Err(HttpFailure::Unknown(reason)) => return Outcome::unknown(reason),
        Err(HttpFailure::Down(reason)) => return Outcome::matched(reason),
    };
    let status = answer.status;
    let status_ok = match check.expect_status {
        Some(wanted) => status == wanted,
        None => (200..300).contains(&status),
    };
    if !status_ok {
        let expected = check
            .expect_status
            .map_or_else(|| "a 2xx".to_owned(), |s| s.to_string());
        return Outcome::matched(format!("GET {url} answered {status}, expected {expected}"));
    }
    let Some(needle) = &check.body_contains else {
        return Outcome::clear(format!("GET {url} answered {status}"));
    };
    if let Some(e) = answer.body_error {
        return Outcome::matched(format!(
            "GET {url} answered {status} but the body failed: {e}"
        ));
    }
    if contains(&answer.body, needle.as_bytes()) {
        Outcome::clear(format!(
            "GET {url} answered {status} with {needle:?} in the body"
        ))
    } else {
        Outcome::matched(format!(
            "GET {url} answered {status} without {needle:?} in the body"
        ))
    }
}

/// What an endpoint answered.
#[derive(Debug)]
pub struct HttpAnswer {
    pub status: u16,
    /// The first `body_cap` bytes of the body.
    pub body: Vec<u8>,
    /// The body broke off (not a timeout): what was read is in `body`.
    pub body_error: Option<String>,
}

/// Why there is no answer.
#[derive(Debug, PartialEq, Eq)]
pub enum HttpFailure {
    /// The endpoint is down: refused, reset, unresolvable, not HTTP.
    Down(String),
    /// Cannot tell: out of time, or the request could not be formed (a problem of the
    /// caller's URL, not of the service).
    Unknown(String),
}

/// GETs `url` before `deadline`, reading at most `body_cap` bytes of its body: no proxy from
/// the environment, no redirects followed (a redirect is its status), any status an answer.
pub fn get(url: &str, deadline: Instant, body_cap: u64) -> Result<HttpAnswer, HttpFailure> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(HttpFailure::Unknown(
            "no time left before the deadline".to_owned(),
        ));
    }
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(left))
        // A status is an answer, not an error.
        .http_status_as_error(false)
        // Never route a local health check through a proxy from the environment.
        .proxy(None)
        // A redirect is reported as its status: the check should not wander to another host.
        .max_redirects(0)
        .max_redirects_will_error(false)
        .build()
        .new_agent();
    let mut response = agent.get(url).call().map_err(|e| request_failed(url, e))?;
    let status = response.status().as_u16();
    let mut body = Vec::new();
    let mut body_error = None;
    if body_cap > 0 {
        let read = response
            .body_mut()
            .as_reader()
            .take(body_cap)
            .read_to_end(&mut body);
        if let Err(e) = read {
            if is_timeout(&e) {
                return Err(HttpFailure::Unknown(format!(
                    "GET {url}: body not read within the timeout"
                )));
            }
            body_error = Some(e.to_string());
        }
    }
    Ok(HttpAnswer {
        status,
        body,
        body_error,
    })
}

fn request_failed(url: &str, e: ureq::Error) -> HttpFailure {
    match e {
        ureq::Error::Timeout(_) => {
            HttpFailure::Unknown(format!("GET {url}: no answer within the timeout"))
        }
        ureq::Error::Io(e) if is_timeout(&e) => {
            HttpFailure::Unknown(format!("GET {url}: no answer within the timeout"))
        }
        // The request could not even be formed: a problem of this check, not of the service.
        ureq::Error::BadUri(_) | ureq::Error::Http(_) | ureq::Error::InvalidProxyUrl => {
            HttpFailure::Unknown(format!("GET {url}: {e}"))
        }
        // Refused, reset, unresolvable, not HTTP: the endpoint is not healthy.
        e => HttpFailure::Down(format!("GET {url} failed: {e}")),
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    ) || e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
        .is_some_and(|inner| matches!(inner, ureq::Error::Timeout(_)))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}
