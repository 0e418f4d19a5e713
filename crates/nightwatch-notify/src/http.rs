//! The HTTP channels: ntfy, Slack and the generic webhook, one POST per attempt.

use crate::escalation::Escalation;
use crate::failure::{Failure, snippet};
use crate::spec::{
    Endpoint, HttpUrl, NtfyChannel, Secret, SlackChannel, WebhookChannel, is_header_value,
};
use std::io::Read;
use std::time::Duration;

/// How much of a response is kept: enough for Slack's error word or a server's short message.
const BODY_LIMIT: u64 = 4096;

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// A response that arrived, whatever its status.
struct Answer {
    status: u16,
    body: Result<Vec<u8>, Failure>,
    retry_after: Option<Duration>,
    location: Option<String>,
}

pub(crate) fn ntfy(
    channel: &NtfyChannel,
    escalation: &Escalation,
    env: Env<'_>,
    timeout: Duration,
) -> Result<u16, Failure> {
    let url = resolve_url(&channel.url, "the ntfy URL", env)?;
    let priority = channel
        .priority
        .unwrap_or(match escalation.verdict.as_str() {
            "halt" | "ask" => 4,
            _ => 3,
        });
    let mut tags = channel.tags.clone();
    // The verdict as a tag lets ntfy filter and shows it even when the title is cut.
    let verdict = escalation.verdict.as_str();
    if !verdict.is_empty()
        && verdict
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !tags.iter().any(|tag| tag == verdict)
    {
        tags.push(verdict.to_owned());
    }
    let mut headers = vec![
        ("X-Title", header_text(&escalation.title())),
        ("X-Priority", priority.to_string()),
    ];
    if !tags.is_empty() {
        headers.push(("X-Tags", tags.join(",")));
    }
    if let Some(token) = &channel.token {
        let token = resolve_secret(token, "the ntfy token", env)?;
        headers.push(("Authorization", format!("Bearer {token}")));
    }
    let body = escalation.plain_text();
    let answer = post(
        &url,
        &headers,
        "text/plain; charset=utf-8",
        body.as_bytes(),
        timeout,
    )?;
    judge(&url, answer, false)
}

pub(crate) fn slack(
    channel: &SlackChannel,
    escalation: &Escalation,
    env: Env<'_>,
    timeout: Duration,
) -> Result<u16, Failure> {
    let url = resolve_url(&channel.webhook_url, "the Slack webhook URL", env)?;
    let body = serde_json::json!({ "text": escalation.slack_text() }).to_string();
    let answer = post(&url, &[], "application/json", body.as_bytes(), timeout)?;
    judge(&url, answer, true)
}

pub(crate) fn webhook(
    channel: &WebhookChannel,
    escalation: &Escalation,
    env: Env<'_>,
    timeout: Duration,
) -> Result<u16, Failure> {
    let url = resolve_url(&channel.url, "the webhook URL", env)?;
    let mut headers = Vec::with_capacity(channel.headers.len());
    for (name, value) in &channel.headers {
        headers.push((
            name.as_str(),
            resolve_secret(value, "a webhook header", env)?,
        ));
    }
    let body = serde_json::to_vec(escalation).map_err(|e| Failure::Internal {
        detail: format!("the escalation could not be written as JSON: {e}"),
    })?;
    let answer = post(&url, &headers, "application/json", &body, timeout)?;
    judge(&url, answer, false)
}

fn resolve_url(endpoint: &Endpoint, what: &'static str, env: Env<'_>) -> Result<HttpUrl, Failure> {
    match endpoint {
        Endpoint::Url(url) => Ok(url.clone()),
        Endpoint::Env(var) => {
            let text = lookup(var.as_str(), what, env)?;
            // The value is a credential: say what is wrong with it, not what it is.
            HttpUrl::parse(&text).map_err(|_| Failure::BadEnv {
                var: var.as_str().to_owned(),
                what,
                problem: "does not hold an http(s) URL".to_owned(),
            })
        }
    }
}

fn resolve_secret(secret: &Secret, what: &'static str, env: Env<'_>) -> Result<String, Failure> {
    match secret {
        Secret::Inline(text) => Ok(text.clone()),
        Secret::Env(var) => {
            let text = lookup(var.as_str(), what, env)?;
            if is_header_value(&text) {
                Ok(text)
            } else {
                Err(Failure::BadEnv {
                    var: var.as_str().to_owned(),
                    what,
                    problem: "holds characters that cannot go in an HTTP header".to_owned(),
                })
            }
        }
    }
}

/// An environment variable's value, trimmed because secrets files often end in a newline.
fn lookup(var: &str, what: &'static str, env: Env<'_>) -> Result<String, Failure> {
    match env(var) {
        Some(value) if !value.trim().is_empty() => Ok(value.trim().to_owned()),
        Some(_) => Err(Failure::BadEnv {
            var: var.to_owned(),
            what,
            problem: "is empty".to_owned(),
        }),
        None => Err(Failure::MissingEnv {
            var: var.to_owned(),
            what,
        }),
    }
}

fn post(
    url: &HttpUrl,
    headers: &[(&str, String)],
    content_type: &str,
    body: &[u8],
    timeout: Duration,
) -> Result<Answer, Failure> {
    let host = url.host();
    // One agent per attempt: no pooled connection outlives a failure, so a retry starts clean.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        // A redirected POST turns into a GET on most servers; better to fail and say so.
        .max_redirects(0)
        .user_agent(concat!("nightwatch-notify/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut request = agent
        .post(url.as_str())
        .header("Content-Type", content_type);
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let mut response = request
        .send(body)
        .map_err(|error| transport_failure(error, host, timeout))?;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let retry_after = header("retry-after")
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let location = header("location");
    let mut kept = Vec::new();
    let body = match response
        .body_mut()
        .as_reader()
        .take(BODY_LIMIT)
        .read_to_end(&mut kept)
    {
        Ok(_) => Ok(kept),
        Err(error) => Err(read_failure(error, host, timeout)),
    };
    Ok(Answer {
        status: response.status().as_u16(),
        body,
        retry_after,
        location,
    })
}

/// Delivered (with the status) or why not, from a response that arrived.
fn judge(url: &HttpUrl, answer: Answer, slack: bool) -> Result<u16, Failure> {
    let host = url.host().to_owned();
    let status = answer.status;
    match status {
        200..=299 if !slack => Ok(status),
        // Slack says "ok"; anything else that answers 2xx is not Slack, so the message is lost.
        200..=299 => {
            let body = answer.body?;
            if status == 200 && body.trim_ascii() == b"ok" {
                Ok(status)
            } else {
                Err(Failure::NotSlackOk {
                    host,
                    status,
                    body: snippet(&body),
                })
            }
        }
        300..=399 => Err(Failure::Redirect {
            host,
            status,
            location: answer
                .location
                .map_or_else(|| "nowhere given".to_owned(), |l| snippet(l.as_bytes())),
        }),
        _ => Err(Failure::Status {
            host,
            status,
            detail: answer.body.map(|b| snippet(&b)).unwrap_or_default(),
            retry_after: answer.retry_after,
        }),
    }
}

fn transport_failure(error: ureq::Error, host: &str, timeout: Duration) -> Failure {
    let host = host.to_owned();
    match error {
        ureq::Error::Timeout(_) => Failure::Timeout {
            host,
            after: timeout,
        },
        ureq::Error::Io(io) => io_failure(io, host, timeout),
        ureq::Error::HostNotFound => Failure::Connect {
            host,
            detail: "host not found".to_owned(),
        },
        ureq::Error::ConnectionFailed => Failure::Connect {
            host,
            detail: "connection failed".to_owned(),
        },
        // Its text holds the whole URL, which may be a credential.
        ureq::Error::BadUri(_) => Failure::Request {
            host,
            detail: "the URL was rejected".to_owned(),
        },
        ureq::Error::Http(error) => Failure::Request {
            host,
            detail: error.to_string(),
        },
        ureq::Error::RequireHttpsOnly(_) | ureq::Error::InvalidProxyUrl => Failure::Request {
            host,
            detail: error.to_string(),
        },
        other => Failure::Transport {
            host,
            detail: other.to_string(),
        },
    }
}

fn io_failure(error: std::io::Error, host: String, timeout: Duration) -> Failure {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::TimedOut | ErrorKind::WouldBlock => Failure::Timeout {
            host,
            after: timeout,
        },
        _ => Failure::Connect {
            host,
            detail: error.to_string(),
        },
    }
}

/// A body that could not be read: the answer's status still stands, this only matters to Slack.
fn read_failure(error: std::io::Error, host: &str, timeout: Duration) -> Failure {
    // ureq wraps its own errors (a timeout while reading) in io::Error.
    let inner = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>());
    if let Some(ureq::Error::Timeout(_)) = inner {
        return Failure::Timeout {
            host: host.to_owned(),
            after: timeout,
        };
    }
    io_failure(error, host.to_owned(), timeout)
}

/// A header value: as it is when it is printable ASCII, else RFC 2047 encoded (ntfy decodes it).
fn header_text(text: &str) -> String {
    if is_header_value(text) {
        text.to_owned()
    } else {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(text);
        format!("=?UTF-8?B?{encoded}?=")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_ascii_title_is_rfc_2047_encoded() {
        assert_eq!(header_text("plain title"), "plain title");
        assert_eq!(header_text("café"), "=?UTF-8?B?Y2Fmw6k=?=");
    }
}
