//! OpenAI's Responses API (`POST /v1/responses`), as Codex calls it through a
//! `model_providers` entry: streamed as `response.created`, each output item
//! (`response.output_item.done`: a `function_call`, or an assistant `message`), then
//! `response.completed`.

use crate::{Script, Step, event_stream, next_step};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub(crate) fn answer(script: &Script, request: &Value) -> Response {
    let made = turns_taken(request);
    let id = format!("resp_scripted_{made}");
    let item = match next_step(script, made) {
        Step::Call { tool, input } => {
            let mut call = json!({
                "type": "function_call",
                "id": format!("fc_scripted_{made}"),
                "call_id": format!("call_scripted_{made}"),
                "name": &tool,
                "arguments": input.to_string(),
                "status": "completed",
            });
            if let Some((namespace, name)) = namespaced(request, &tool) {
                call["namespace"] = json!(namespace);
                call["name"] = json!(name);
            }
            if let (true, Value::String(text)) = (is_freeform(request, &tool), &input) {
                // A freeform tool (Codex's `apply_patch`) takes its input as text, not JSON.
                call = json!({
                    "type": "custom_tool_call",
                    "id": format!("ctc_scripted_{made}"),
                    "call_id": format!("call_scripted_{made}"),
                    "name": &tool,
                    "input": text,
                    "status": "completed",
                });
            }
            call
        }
        Step::Say(text) => json!({
            "type": "message",
            "id": format!("msg_scripted_{made}"),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
    };
    let usage = json!({
        "input_tokens": 1, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 2,
    });
    event_stream(&[
        json!({"type": "response.created", "response": {"id": id}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": {"id": id, "usage": usage}}),
    ])
}

/// A tool the request offers inside a namespace (Codex offers an MCP server's tools as the
/// namespace `mcp__SERVER`), named as Claude names it: `NAMESPACE__TOOL`. The call then
/// carries the namespace and the tool's own name, as the Responses API does.
fn namespaced<'a>(request: &Value, tool: &'a str) -> Option<(String, &'a str)> {
    let tools = request["tools"].as_array()?;
    tools
        .iter()
        .filter(|offered| offered["type"] == "namespace")
        .find_map(|namespace| {
            let prefix = namespace["name"].as_str()?;
            let name = tool.strip_prefix(prefix)?.strip_prefix("__")?;
            let offered = namespace["tools"].as_array()?;
            offered
                .iter()
                .any(|t| t["name"] == name)
                .then(|| (prefix.to_owned(), name))
        })
}

/// Whether the request offers `tool` as a freeform (`custom`) tool.
fn is_freeform(request: &Value, tool: &str) -> bool {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|offered| offered["type"] == "custom" && offered["name"] == tool)
}

/// `GET /models`: no models to offer; the agent uses the one it was configured with.
pub(crate) fn models() -> Response {
    axum::Json(json!({"object": "list", "data": [], "models": []})).into_response()
}

/// The assistant's turns in the conversation the request carries: each tool call it made and
/// each message it said (the scripted model makes one item a turn).
fn turns_taken(request: &Value) -> usize {
    request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| {
            matches!(
                item["type"].as_str(),
                Some("function_call" | "custom_tool_call" | "local_shell_call")
            ) || (item["type"] == "message" && item["role"] == "assistant")
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered() -> Value {
        json!({"tools": [
            {"type": "function", "name": "exec_command"},
            {"type": "custom", "name": "apply_patch"},
            {"type": "namespace", "name": "mcp__time", "tools": [
                {"type": "function", "name": "get_current_time"}
            ]},
        ]})
    }

    #[test]
    fn a_server_tool_is_called_inside_the_namespace_that_offers_it() {
        let request = offered();
        assert_eq!(
            namespaced(&request, "mcp__time__get_current_time"),
            Some(("mcp__time".to_owned(), "get_current_time"))
        );
        assert_eq!(namespaced(&request, "mcp__time__convert_time"), None);
        assert_eq!(namespaced(&request, "exec_command"), None);
        assert_eq!(namespaced(&json!({}), "mcp__time__get_current_time"), None);
    }

    #[test]
    fn only_a_custom_tool_is_freeform() {
        let request = offered();
        assert!(is_freeform(&request, "apply_patch"));
        assert!(!is_freeform(&request, "exec_command"));
        assert!(!is_freeform(&json!({}), "apply_patch"));
    }
}
