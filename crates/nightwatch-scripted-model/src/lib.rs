//! A scripted stand-in for the model APIs the real agents call, on 127.0.0.1.
//!
//! Claude Code speaks Anthropic's Messages API (`ANTHROPIC_BASE_URL`) and Codex OpenAI's
//! Responses API (a `model_providers` entry with `base_url`). Either way the agent sends the
//! whole conversation with every request and the model answers with the next assistant turn,
//! streamed as server-sent events. This server answers every conversation with the steps of
//! one [`Script`]: the tool calls a test (or `nightwatch doctor --live`) names, then a closing
//! text. It logs every request it receives, headers and body, so a caller can assert that no
//! secret byte ever reached "the model".
//!
//! Which step comes next is read from the request itself: the number of turns the assistant
//! has already taken in the conversation it carries. So the server keeps no state per
//! session, retries are answered alike, and requests outside the conversation (Claude's title
//! and topic requests, which carry no tools) get a short text without using a step.
//!
//! It is plain HTTP/1.1 on a loopback port, one tokio runtime on its own thread, stopped when
//! the [`ScriptedModel`] is dropped.

mod anthropic;
mod openai;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// One turn the scripted model takes.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Ask the agent to call `tool` with `input` (Claude: `Bash` with `{"command": ...}`;
    /// Codex: the tool name and arguments object it offers).
    Call { tool: String, input: Value },
    /// Say this and end the turn.
    Say(String),
}

impl Step {
    pub fn call(tool: &str, input: Value) -> Step {
        Step::Call {
            tool: tool.to_owned(),
            input,
        }
    }
}

/// What the model does in every conversation: its steps in order, then "done".
pub type Script = Vec<Step>;

/// One request as received.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy for bytes that are not UTF-8).
    pub body: String,
}

impl Request {
    /// Whether this request carries `needle` anywhere, headers included.
    pub fn contains(&self, needle: &str) -> bool {
        self.body.contains(needle)
            || self.path.contains(needle)
            || self
                .headers
                .iter()
                .any(|(name, value)| name.contains(needle) || value.contains(needle))
    }
}

struct Shared {
    script: Script,
    log: Mutex<Vec<Request>>,
}

/// The running server. Dropping it stops it.
pub struct ScriptedModel {
    url: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ScriptedModel {
    /// Binds 127.0.0.1 on a free port and starts answering with `script`.
    pub fn start(script: Script) -> std::io::Result<ScriptedModel> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Shared {
            script,
            log: Mutex::new(Vec::new()),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("scripted-model".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let app = Router::new().fallback(answer).with_state(state);
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })?;
        Ok(ScriptedModel {
            url,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`, with no path: the base URL both agents take.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The requests that carried `needle`, anywhere.
    pub fn requests_containing(&self, needle: &str) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|request| request.contains(needle))
            .collect()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Every request: logged, then answered by the API its path names.
async fn answer(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    shared
        .log
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Request {
            method: method.to_string(),
            path: uri.to_string(),
            headers: headers
                .iter()
                .map(|(name, value)| {
                    (
                        name.as_str().to_owned(),
                        String::from_utf8_lossy(value.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: String::from_utf8_lossy(&body).into_owned(),
        });
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if path.ends_with("/messages") {
        anthropic::answer(&shared.script, &request)
    } else if path.ends_with("/messages/count_tokens") {
        axum::Json(serde_json::json!({ "input_tokens": 1 })).into_response()
    } else if path.ends_with("/responses") {
        openai::answer(&shared.script, &request)
    } else if path.ends_with("/models") {
        openai::models()
    } else {
        (axum::http::StatusCode::NOT_FOUND, "not scripted").into_response()
    }
}

/// The step a conversation whose assistant has already taken `turns` turns takes next: each
/// step is one assistant turn, so a conversation resumed after a `Say` goes on with the step
/// after it.
fn next_step(script: &Script, turns: usize) -> Step {
    script
        .get(turns)
        .cloned()
        .unwrap_or_else(|| Step::Say("done".to_owned()))
}

/// A body of server-sent events, each `event:` named by its `type`.
fn event_stream(events: &[Value]) -> Response {
    let mut text = String::new();
    for event in events {
        let name = event["type"].as_str().unwrap_or("message");
        text.push_str(&format!("event: {name}\ndata: {event}\n\n"));
    }
    (
        [
            (axum::http::header::CONTENT_TYPE, "text/event-stream"),
            (axum::http::header::CACHE_CONTROL, "no-cache"),
        ],
        text,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn steps_follow_the_turns_already_taken_and_end_in_done() {
        let script = vec![
            Step::call("Bash", json!({"command": "ls"})),
            Step::Say("waiting".into()),
            Step::call("Bash", json!({"command": "pwd"})),
        ];
        assert_eq!(next_step(&script, 0), script[0]);
        assert_eq!(next_step(&script, 1), script[1]);
        assert_eq!(next_step(&script, 2), script[2]);
        assert_eq!(next_step(&script, 3), Step::Say("done".into()));
        assert_eq!(next_step(&Vec::new(), 0), Step::Say("done".into()));
    }
}
