//! `http:` GETs a health endpoint. It matches when the endpoint is NOT healthy: acting on a
//! service that is already failing is what the check is there to stop.

use crate::Outcome;
use crate::spec::HttpCheck;
use std::io::{self, Read};
use std::time::Instant;

/// How much body is searched for `body_contains`: health answers are small.
const BODY_CAP: u64 = 64 * 1024;

pub(crate) fn probe(check: &HttpCheck, deadline: Instant) -> Outcome {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Outcome::unknown("no time left before the deadline");
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
    let url = &check.url;
    let mut response = match agent.get(url).call() {
        Ok(response) => response,
        Err(e) => return request_failed(url, e),
    };
    let status = response.status().as_u16();
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
    let mut body = Vec::new();
    let read = response
        .body_mut()
        .as_reader()
        .take(BODY_CAP)
        .read_to_end(&mut body);
    if let Err(e) = read {
        return if is_timeout(&e) {
            Outcome::unknown(format!("GET {url}: body not read within the timeout"))
        } else {
            Outcome::matched(format!(
                "GET {url} answered {status} but the body failed: {e}"
            ))
        };
    }
    if contains(&body, needle.as_bytes()) {
        Outcome::clear(format!(
            "GET {url} answered {status} with {needle:?} in the body"
        ))
    } else {
        Outcome::matched(format!(
            "GET {url} answered {status} without {needle:?} in the body"
        ))
    }
}

fn request_failed(url: &str, e: ureq::Error) -> Outcome {
    match e {
        ureq::Error::Timeout(_) => {
            Outcome::unknown(format!("GET {url}: no answer within the timeout"))
        }
        ureq::Error::Io(e) if is_timeout(&e) => {
            Outcome::unknown(format!("GET {url}: no answer within the timeout"))
        }
        // The request could not even be formed: a problem of this check, not of the service.
        ureq::Error::BadUri(_) | ureq::Error::Http(_) | ureq::Error::InvalidProxyUrl => {
            Outcome::unknown(format!("GET {url}: {e}"))
        }
        // Refused, reset, unresolvable, not HTTP: the endpoint is not healthy.
        e => Outcome::matched(format!("GET {url} failed: {e}")),
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
