//! Any JSON webhook, read through JSON pointers the operator writes.

use serde::Deserialize;
use serde_json::Value;

use crate::wire;
use crate::{Alert, IntakeError, Source, Status};

/// Where the alert's parts sit in a sender's JSON, as JSON pointers (RFC 6901, `/a/b/0`).
///
/// Unknown keys are refused here, unlike in payloads: this is the operator's own configuration,
/// and a misspelt `resolve_values` would otherwise turn every resolution into a new firing.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenericMapping {
    /// Recorded as [`Source::Generic`]; names the sender in tasks and the ledger.
    #[serde(default = "default_name")]
    pub name: String,
    /// Pointer to a string or number that is the same for the firing and resolved notification.
    pub identity: String,
    /// Pointer to the status; without it every notification is firing.
    #[serde(default)]
    pub status: Option<String>,
    /// Status values meaning firing; when both lists are empty, common words are used
    /// (`firing`, `alerting`, `problem`, `down` / `resolved`, `ok`, `up`, case-insensitive).
    #[serde(default)]
    pub firing_values: Vec<String>,
    #[serde(default)]
    pub resolved_values: Vec<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    /// Pointer to an object whose entries become labels.
    #[serde(default)]
    pub labels: Option<String>,
}

fn default_name() -> String {
    "webhook".into()
}

const DEFAULT_FIRING: [&str; 4] = ["firing", "alerting", "problem", "down"];
const DEFAULT_RESOLVED: [&str; 3] = ["resolved", "ok", "up"];

/// One alert from a JSON body, as `mapping` describes it.
pub fn parse_generic(body: &[u8], mapping: &GenericMapping) -> Result<Alert, IntakeError> {
    for pointer in [Some(&mapping.identity), mapping.status.as_ref()]
        .into_iter()
        .chain([mapping.title.as_ref(), mapping.message.as_ref()])
        .chain([mapping.labels.as_ref()])
        .flatten()
    {
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(IntakeError::Mapping(format!(
                "{pointer:?} is not a JSON pointer; write it as /field/inner"
            )));
        }
    }
    let document = wire::json(body)?;
    let identity = required_text(&document, &mapping.identity)?;
    if identity.is_empty() {
        return Err(IntakeError::UnknownValue {
            field: mapping.identity.clone(),
            value: identity,
            expected: "a non-empty identity".into(),
        });
    }
    let status = match &mapping.status {
        None => Status::Firing,
        Some(pointer) => {
            let value = required_text(&document, pointer)?;
            status_of(&value, mapping).ok_or_else(|| IntakeError::UnknownValue {
                field: pointer.clone(),
                value,
                expected: expected_statuses(mapping),
            })?
        }
    };
    // Senders often leave the words out of a resolution; only identity and status must be
    // there. A title or message of the wrong type is still refused.
    let title = match &mapping.title {
        Some(pointer) => optional_text(&document, pointer)?,
        None => None,
    }
    .unwrap_or_else(|| identity.clone());
    let message = match &mapping.message {
        Some(pointer) => optional_text(&document, pointer)?,
        None => None,
    }
    .unwrap_or_else(|| title.clone());
    let labels = match &mapping.labels {
        None => Default::default(),
        Some(pointer) => match document.pointer(pointer) {
            None | Some(Value::Null) => Default::default(),
            Some(value @ Value::Object(_)) => wire::string_map(Some(value)),
            Some(other) => {
                return Err(IntakeError::WrongType {
                    field: pointer.clone(),
                    found: wire::kind(other),
                    expected: "an object",
                });
            }
        },
    };
    Ok(Alert {
        source: Source::Generic(mapping.name.clone()),
        identity,
        status,
        title,
        message,
        labels,
        annotations: Default::default(),
        tags: Vec::new(),
        monitor: None,
        starts_at_ms: None,
        ends_at_ms: None,
        group_key: None,
        receiver: None,
        link: None,
        raw: document,
    })
}

fn required_text(document: &Value, pointer: &str) -> Result<String, IntakeError> {
    let value = document
        .pointer(pointer)
        .ok_or_else(|| IntakeError::MissingField(pointer.to_string()))?;
    wire::scalar_text(value).ok_or_else(|| IntakeError::WrongType {
        field: pointer.to_string(),
        found: wire::kind(value),
        expected: "a string, number or boolean",
    })
}

/// The text at `pointer`, `None` when it is absent or null.
fn optional_text(document: &Value, pointer: &str) -> Result<Option<String>, IntakeError> {
    match document.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => required_text(document, pointer).map(Some),
    }
}

fn status_of(value: &str, mapping: &GenericMapping) -> Option<Status> {
    if mapping.firing_values.is_empty() && mapping.resolved_values.is_empty() {
        let lower = value.trim().to_ascii_lowercase();
        if DEFAULT_FIRING.contains(&lower.as_str()) {
            return Some(Status::Firing);
        }
        return DEFAULT_RESOLVED
            .contains(&lower.as_str())
            .then_some(Status::Resolved);
    }
    if mapping.firing_values.iter().any(|v| v == value) {
        Some(Status::Firing)
    } else if mapping.resolved_values.iter().any(|v| v == value) {
        Some(Status::Resolved)
    } else {
        None
    }
}

fn expected_statuses(mapping: &GenericMapping) -> String {
    if mapping.firing_values.is_empty() && mapping.resolved_values.is_empty() {
        let all: Vec<&str> = DEFAULT_FIRING.into_iter().chain(DEFAULT_RESOLVED).collect();
        return format!("one of {}", all.join(", "));
    }
    format!(
        "one of firing_values {:?} or resolved_values {:?}",
        mapping.firing_values, mapping.resolved_values
    )
}
