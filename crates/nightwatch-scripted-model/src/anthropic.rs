//! Anthropic's Messages API (`POST /v1/messages`), as Claude Code calls it: streamed as
//! `message_start`, one content block (`text_delta`s or an `input_json_delta`),
//! `message_delta` with the stop reason, `message_stop`; or one JSON message when the request
//! does not ask for a stream.

use crate::{Script, Step, event_stream, next_step};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub(crate) fn answer(script: &Script, request: &Value) -> Response {
    // Claude's side requests (a session title, a topic) offer no tools: they are not the
    // conversation the script is about.
    let offers_tools = request["tools"].as_array().is_some_and(|t| !t.is_empty());
    let step = if offers_tools {
        next_step(script, turns_taken(request))
    } else {
        Step::Say("ok".to_owned())
    };
    let model = request["model"].as_str().unwrap_or("scripted").to_owned();
    let id = format!("msg_scripted_{}", turns_taken(request));
    let call_id = format!("toolu_scripted_{}", turns_taken(request));
    let (block, stop_reason) = match &step {
        Step::Call { tool, input } => (
            json!({"type": "tool_use", "id": call_id, "name": tool, "input": input}),
            "tool_use",
        ),
        Step::Say(text) => (json!({"type": "text", "text": text}), "end_turn"),
    };
    let usage = json!({"input_tokens": 1, "output_tokens": 1});
    if request["stream"].as_bool() != Some(true) {
        return axum::Json(json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop_reason, "stop_sequence": null,
            "usage": usage,
        }))
        .into_response();
    }
    let (start, delta) = match &step {
        Step::Call { tool, input } => (
            json!({"type": "tool_use", "id": call_id, "name": tool, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
        ),
        Step::Say(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
        ),
    };
    event_stream(&[
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null, "usage": usage,
        }}),
        json!({"type": "content_block_start", "index": 0, "content_block": start}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": 1}}),
        json!({"type": "message_stop"}),
    ])
}

/// The assistant's turns in the conversation the request carries (Claude sends a turn's
/// text and tool calls as one assistant message).
fn turns_taken(request: &Value) -> usize {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "assistant")
        .count()
}
