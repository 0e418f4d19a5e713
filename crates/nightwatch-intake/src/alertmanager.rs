//! Prometheus Alertmanager's `webhook_config` body, version 4.

use serde_json::{Map, Value};

use crate::wire::{self, ContentType};
use crate::{Alert, IntakeError, Source, Status};

/// Every alert in one Alertmanager notification, firing and resolved alike.
///
/// Only webhook version `"4"` is read; any other version is refused by number, because a format
/// we guess at would start tasks from misread fields. A group with no alerts is `Ok(vec![])`.
pub fn parse_alertmanager(
    body: &[u8],
    content_type: Option<&str>,
) -> Result<Vec<Alert>, IntakeError> {
    if let Some(header) = content_type {
        let ct = ContentType::parse(header)?;
        if !ct.is_json() {
            return Err(IntakeError::UnsupportedContentType {
                found: ct.mime,
                expected: "application/json",
            });
        }
    }
    let document = wire::json(body)?;
    let Value::Object(group) = document else {
        return Err(IntakeError::WrongType {
            field: "(body)".into(),
            found: wire::kind(&document),
            expected: "an object",
        });
    };
    match group.get("version") {
        None => return Err(IntakeError::MissingField("version".into())),
        Some(Value::String(v)) if v == "4" => {}
        Some(other) => {
            let shown = wire::scalar_text(other).unwrap_or_else(|| other.to_string());
            return Err(IntakeError::UnsupportedVersion(shown));
        }
    }
    let alerts = match group.get("alerts") {
        None => return Err(IntakeError::MissingField("alerts".into())),
        Some(Value::Array(alerts)) => alerts,
        Some(other) => {
            return Err(IntakeError::WrongType {
                field: "alerts".into(),
                found: wire::kind(other),
                expected: "an array",
            });
        }
    };
    let group_key = text(&group, "groupKey");
    let receiver = text(&group, "receiver");
    alerts
        .iter()
        .enumerate()
        .map(|(index, alert)| {
            let alert = convert(index, alert)?;
            Ok(Alert {
                group_key: group_key.clone(),
                receiver: receiver.clone(),
                ..alert
            })
        })
        .collect()
}

fn convert(index: usize, value: &Value) -> Result<Alert, IntakeError> {
    let field = |name: &str| format!("alerts[{index}].{name}");
    let Value::Object(alert) = value else {
        return Err(IntakeError::WrongType {
            field: format!("alerts[{index}]"),
            found: wire::kind(value),
            expected: "an object",
        });
    };
    let status = match alert.get("status") {
        Some(Value::String(s)) if s == "firing" => Status::Firing,
        Some(Value::String(s)) if s == "resolved" => Status::Resolved,
        None => return Err(IntakeError::MissingField(field("status"))),
        Some(other) => {
            return Err(IntakeError::UnknownValue {
                field: field("status"),
                value: wire::scalar_text(other).unwrap_or_else(|| other.to_string()),
                expected: "firing or resolved".into(),
            });
        }
    };
    let labels = wire::string_map(alert.get("labels"));
    let annotations = wire::string_map(alert.get("annotations"));
    // The fingerprint is Alertmanager's own hash of the labels; when a relay strips it, hashing the
    // labels ourselves still keeps firing and resolved together.
    let identity = match text(alert, "fingerprint") {
        Some(fp) if !fp.is_empty() => fp,
        _ => wire::labels_identity(&labels),
    };
    let title = annotations
        .get("summary")
        .or_else(|| labels.get("alertname"))
        .cloned()
        .unwrap_or_else(|| "Alertmanager alert".into());
    let message = annotations
        .get("description")
        .or_else(|| annotations.get("summary"))
        .cloned()
        .unwrap_or_else(|| title.clone());
    Ok(Alert {
        source: Source::Alertmanager,
        identity,
        status,
        title,
        message,
        labels,
        annotations,
        tags: Vec::new(),
        monitor: None,
        starts_at_ms: wire::rfc3339_ms(alert.get("startsAt").and_then(Value::as_str)),
        ends_at_ms: wire::rfc3339_ms(alert.get("endsAt").and_then(Value::as_str)),
        group_key: None,
        receiver: None,
        link: text(alert, "generatorURL").filter(|l| !l.is_empty()),
        raw: value.clone(),
    })
}

fn text(object: &Map<String, Value>, key: &str) -> Option<String> {
    object.get(key).and_then(Value::as_str).map(str::to_string)
}
