//! The readiness check: "running" means the app answers. An HTTP check GETs its path on the
//! upstream and wants 2xx or 3xx; a TCP check wants a connection. The last answer an awake
//! app gave is kept, so a robot's health check while it sleeps can be given it. [`fetch`] is
//! the same GET of any path, whatever the answer, for a health check `/idle/health` passes on
//! to an awake app.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use nightwatch_idle::Readiness;

/// The most of a readiness answer's body that is kept to answer robots with.
pub const MAX_KEPT_BODY: usize = 64 * 1024;

/// What the readiness check got.
#[derive(Clone, Debug)]
pub struct ReadyAnswer {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Bytes,
}

/// Runs the check once within `timeout`: the answer when it passed, why not otherwise.
pub async fn check(
    upstream: SocketAddr,
    readiness: &Readiness,
    timeout: Duration,
) -> Result<Option<ReadyAnswer>, String> {
    let path = match readiness {
        Readiness::Tcp => {
            return within(upstream, timeout, async {
                connect(upstream).await.map(|_| None)
            })
            .await;
        }
        Readiness::Http { path } => path,
    };
    let answer = fetch(upstream, path, None, None, timeout).await?;
    if (200..400).contains(&answer.status) {
        Ok(Some(answer))
    } else {
        Err(format!(
            "GET {path} on {upstream} answered {}",
            hyper::StatusCode::from_u16(answer.status)
                .map(|s| s.to_string())
                .unwrap_or_else(|_| answer.status.to_string())
        ))
    }
}

/// GETs `target` (a path and query) on the upstream within `timeout`, for `host` and as
/// `user_agent` when given (the readiness check's own otherwise): the app's answer whatever
/// its status (the first [`MAX_KEPT_BODY`] bytes of its body), or why there is none.
pub async fn fetch(
    upstream: SocketAddr,
    target: &str,
    host: Option<&str>,
    user_agent: Option<&str>,
    timeout: Duration,
) -> Result<ReadyAnswer, String> {
    within(
        upstream,
        timeout,
        fetch_once(upstream, target, host, user_agent),
    )
    .await
}

async fn within<T>(
    upstream: SocketAddr,
    timeout: Duration,
    work: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    match tokio::time::timeout(timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "no answer from {upstream} within {}",
            nightwatch_time::format_duration(timeout)
        )),
    }
}

async fn connect(upstream: SocketAddr) -> Result<tokio::net::TcpStream, String> {
    tokio::net::TcpStream::connect(upstream)
        .await
        .map_err(|e| format!("{upstream} refuses connections: {e}"))
}

async fn fetch_once(
    upstream: SocketAddr,
    target: &str,
    host: Option<&str>,
    user_agent: Option<&str>,
) -> Result<ReadyAnswer, String> {
    let stream = connect(upstream).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| format!("{upstream}: {e}"))?;
    let driving = tokio::spawn(async move {
        let _ = connection.await;
    });
    let request = hyper::Request::get(target)
        .header(
            hyper::header::HOST,
            host.map_or_else(|| upstream.to_string(), str::to_owned),
        )
        .header(
            hyper::header::USER_AGENT,
            user_agent.unwrap_or("nightwatch-readiness"),
        )
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("GET {target}: {e}"))?;
    let answered = sender.send_request(request).await;
    let result = match answered {
        Err(e) => Err(format!("GET {target} on {upstream}: {e}")),
        Ok(response) => {
            let status = response.status();
            let content_type = response
                .headers()
                .get(hyper::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = Limited::new(response.into_body(), MAX_KEPT_BODY)
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            Ok(ReadyAnswer {
                status: status.as_u16(),
                content_type,
                body,
            })
        }
    };
    driving.abort();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn upstream(reply: &'static str) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(reply.as_bytes()).await;
            }
        });
        addr
    }

    #[tokio::test]
    async fn a_2xx_passes_and_its_answer_is_kept() {
        let addr = upstream(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
        )
        .await;
        let path = Readiness::Http {
            path: "/healthz".into(),
        };
        let answer = check(addr, &path, Duration::from_secs(2))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(answer.status, 200);
        assert_eq!(answer.content_type.as_deref(), Some("text/plain"));
        assert_eq!(&answer.body[..], b"ok\n");
    }

    #[tokio::test]
    async fn a_5xx_a_closed_port_and_silence_fail_with_why() {
        let path = Readiness::Http { path: "/".into() };
        let bad = upstream("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n").await;
        let err = check(bad, &path, Duration::from_secs(2)).await.unwrap_err();
        assert!(err.contains("503"), "{err}");

        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let err = check(closed, &Readiness::Tcp, Duration::from_secs(2))
            .await
            .unwrap_err();
        assert!(err.contains("refuses"), "{err}");

        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = silent.local_addr().unwrap();
        let err = check(addr, &path, Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(err.contains("no answer"), "{err}");
        drop(silent);
    }
}
