//! Uptime Kuma's webhook notification, in each of the shapes it arrives in.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::wire::{self, ContentType};
use crate::{Alert, IntakeError, Source, Status};

const KEYS: [&str; 3] = ["msg", "heartbeat", "monitor"];
const EXPECTED_TYPES: &str =
    "application/json, multipart/form-data or application/x-www-form-urlencoded";

/// One Uptime Kuma notification.
///
/// Reads `application/json`; `multipart/form-data` whose one field `data` holds that JSON; a user's
/// custom template (sent as `application/x-www-form-urlencoded`, or with no type, whatever the text
/// is), taking `msg`/`heartbeat`/`monitor` when the text has them and otherwise using the whole
/// text as the message; and an empty body with `msg`, `heartbeat`, `monitor` in the `query`
/// (Uptime Kuma 2.x GET). `null` monitor and heartbeat (test notifications, certificate expiry)
/// are normal, and unknown fields are ignored.
pub fn parse_uptime_kuma(
    body: &[u8],
    content_type: Option<&str>,
    query: Option<&str>,
) -> Result<Alert, IntakeError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        if let Some(query) = query {
            let pairs = wire::form_pairs(query.strip_prefix('?').unwrap_or(query));
            if pairs.iter().any(|(k, _)| KEYS.contains(&k.as_str())) {
                return from_pairs(&pairs);
            }
        }
        return Err(IntakeError::EmptyBody);
    }
    let content_type = content_type.map(ContentType::parse).transpose()?;
    match content_type {
        Some(ct) if ct.is_json() => from_value(wire::json(body)?),
        Some(ct) if ct.mime == "multipart/form-data" => {
            let Some(boundary) = ct.params.get("boundary") else {
                return Err(IntakeError::Multipart(
                    "the content type has no boundary parameter".into(),
                ));
            };
            let fields = wire::multipart_fields(body, boundary)?;
            let mut data = fields.iter().filter(|f| f.name.as_deref() == Some("data"));
            match (data.next(), data.next()) {
                (None, _) => Err(IntakeError::Multipart(
                    "there is no field named data".into(),
                )),
                (Some(_), Some(_)) => Err(IntakeError::Multipart(
                    "the field data appears more than once".into(),
                )),
                (Some(field), None) => from_value(wire::json(field.value)?),
            }
        }
        None => from_template(body),
        Some(ct)
            if ct.mime.is_empty()
                || ct.mime == "application/x-www-form-urlencoded"
                || ct.mime == "text/plain" =>
        {
            from_template(body)
        }
        Some(ct) => Err(IntakeError::UnsupportedContentType {
            found: ct.mime,
            expected: EXPECTED_TYPES,
        }),
    }
}

/// A custom template: whatever the user wrote, as long as it is text.
fn from_template(body: &[u8]) -> Result<Alert, IntakeError> {
    let text = wire::utf8(body)?.trim();
    if text.is_empty() {
        return Err(IntakeError::EmptyBody);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) if KEYS.iter().any(|k| object.contains_key(*k)) => {
            return from_value(Value::Object(object));
        }
        Ok(_) => {}
        Err(_) => {
            let pairs = wire::form_pairs(text);
            if pairs.iter().any(|(k, _)| KEYS.contains(&k.as_str())) {
                return from_pairs(&pairs);
            }
        }
    }
    let raw = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()));
    Ok(build(text.to_string(), None, None, raw))
}

/// GET query or form pairs: `heartbeat` and `monitor` are JSON text.
fn from_pairs(pairs: &[(String, String)]) -> Result<Alert, IntakeError> {
    let mut object = Map::new();
    for key in KEYS {
        let Some((_, value)) = pairs.iter().find(|(k, _)| k == key) else {
            continue;
        };
        let value = if key == "msg" {
            Value::String(value.clone())
        } else if matches!(value.trim(), "" | "null" | "undefined") {
            Value::Null
        } else {
            serde_json::from_str(value)
                .map_err(|e| IntakeError::NotJson(format!("field {key}: {e}")))?
        };
        object.insert(key.to_string(), value);
    }
    from_value(Value::Object(object))
}

/// The JSON notification: `{msg, heartbeat, monitor}`.
fn from_value(document: Value) -> Result<Alert, IntakeError> {
    let Value::Object(object) = &document else {
        return Err(IntakeError::WrongType {
            field: "(body)".into(),
            found: wire::kind(&document),
            expected: "an object",
        });
    };
    if !KEYS.iter().any(|k| object.contains_key(*k)) {
        return Err(IntakeError::MissingField("msg".into()));
    }
    let msg = match object.get("msg") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => return Err(wrong_type("msg", other, "a string or null")),
    };
    let heartbeat = optional_object(object, "heartbeat")?;
    let monitor = optional_object(object, "monitor")?;
    let message = msg
        .or_else(|| heartbeat.and_then(|h| text(h, "msg")))
        .unwrap_or_default();
    Ok(build(message, heartbeat, monitor, document.clone()))
}

fn build(
    message: String,
    heartbeat: Option<&Map<String, Value>>,
    monitor: Option<&Map<String, Value>>,
    raw: Value,
) -> Alert {
    let (marker_status, marker_name) = markers(&message);
    let heartbeat_status = heartbeat.and_then(|h| h.get("status")).and_then(|s| {
        // 0 down, 1 up, 2 pending, 3 maintenance.
        match wire::scalar_text(s)?.as_str() {
            "0" | "2" => Some(Status::Firing),
            "1" | "3" => Some(Status::Resolved),
            _ => None,
        }
    });
    let is_test =
        heartbeat.is_none() && monitor.is_none() && message.trim_end().ends_with("Testing");
    let known_status = heartbeat_status.or(marker_status);
    let status = if is_test {
        Status::Test
    } else {
        known_status.unwrap_or(Status::Firing)
    };

    let monitor_name = monitor
        .and_then(|m| text(m, "name"))
        .or(marker_name)
        .or_else(|| leading_bracket(&message).filter(|_| !is_test));
    let monitor_id = monitor
        .and_then(|m| m.get("id"))
        .or_else(|| heartbeat.and_then(|h| h.get("monitorID")))
        .and_then(wire::scalar_text)
        .filter(|id| !id.is_empty());
    let identity = match (&monitor_id, &monitor_name) {
        (Some(id), _) => id.clone(),
        (None, Some(name)) if known_status.is_some() => format!("name:{name}"),
        // Messages such as "will expire in 5 days" change daily; hashing them with the digits
        // folded keeps one identity for the same warning.
        _ => format!(
            "sha256:{}",
            wire::sha256_hex(fold_digits(&message).as_bytes())
        ),
    };

    let mut labels = BTreeMap::new();
    let mut tags = Vec::new();
    if let Some(Value::Array(list)) = monitor.and_then(|m| m.get("tags")) {
        for tag in list {
            let Some(tag) = tag.as_object() else { continue };
            let Some(name) = text(tag, "name") else {
                continue;
            };
            let value = tag
                .get("value")
                .and_then(wire::scalar_text)
                .unwrap_or_default();
            tags.push(if value.is_empty() {
                name.clone()
            } else {
                format!("{name}:{value}")
            });
            labels.insert(name, value);
        }
    }

    let mut annotations = BTreeMap::new();
    let mut note = |key: &str, value: Option<String>| {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            annotations.insert(key.to_string(), value);
        }
    };
    note("heartbeat_msg", heartbeat.and_then(|h| text(h, "msg")));
    note("monitor_type", monitor.and_then(|m| text(m, "type")));
    note("hostname", monitor.and_then(|m| text(m, "hostname")));
    note("path_name", monitor.and_then(|m| text(m, "pathName")));
    note("description", monitor.and_then(|m| text(m, "description")));

    let time = wire::kuma_time_ms(
        heartbeat
            .and_then(|h| h.get("time"))
            .and_then(Value::as_str),
    );
    let (starts_at_ms, ends_at_ms) = match heartbeat_status {
        Some(Status::Resolved) => (
            wire::kuma_time_ms(
                heartbeat
                    .and_then(|h| h.get("lastDownTime"))
                    .and_then(Value::as_str),
            ),
            time,
        ),
        _ => (time, None),
    };

    let title = match (&monitor_name, known_status) {
        (Some(name), Some(Status::Resolved)) => format!("{name} is up"),
        (Some(name), Some(_)) => format!("{name} is down"),
        _ => first_line(&message),
    };
    // Non-HTTP monitors carry the form's placeholder URL.
    let link = monitor
        .and_then(|m| text(m, "url"))
        .filter(|u| !matches!(u.as_str(), "" | "http://" | "https://"));

    Alert {
        source: Source::UptimeKuma,
        identity,
        status,
        title,
        message,
        labels,
        annotations,
        tags,
        monitor: monitor_name,
        starts_at_ms,
        ends_at_ms,
        group_key: None,
        receiver: None,
        link,
        raw,
    }
}

fn optional_object<'a>(
    object: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a Map<String, Value>>, IntakeError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(inner)) => Ok(Some(inner)),
        Some(other) => Err(wrong_type(key, other, "an object or null")),
    }
}

fn wrong_type(field: &str, value: &Value, expected: &'static str) -> IntakeError {
    IntakeError::WrongType {
        field: field.into(),
        found: wire::kind(value),
        expected,
    }
}

fn text(object: &Map<String, Value>, key: &str) -> Option<String> {
    object.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Uptime Kuma's default message reads `[<monitor>] [🔴 Down] <msg>` or `[<monitor>] [✅ Up] <msg>`;
/// custom templates usually keep that text, so status and monitor can be read back from it.
fn markers(message: &str) -> (Option<Status>, Option<String>) {
    for (marker, status) in [("[🔴 Down]", Status::Firing), ("[✅ Up]", Status::Resolved)] {
        let Some(at) = message.find(marker) else {
            continue;
        };
        let before = message[..at].trim_end();
        let name = before
            .strip_suffix(']')
            .and_then(|b| b.rfind('[').map(|open| b[open + 1..].to_string()))
            .filter(|n| !n.trim().is_empty());
        return (Some(status), name);
    }
    (None, None)
}

/// `[web-1 https][https://…] Certificate will expire…`: the monitor name leads in brackets.
fn leading_bracket(message: &str) -> Option<String> {
    let rest = message.trim_start().strip_prefix('[')?;
    let name = &rest[..rest.find(']')?];
    (!name.trim().is_empty()).then(|| name.to_string())
}

fn fold_digits(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for c in message.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn first_line(message: &str) -> String {
    let line = message.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let line = line.trim();
    match line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None if line.is_empty() => "Uptime Kuma notification".into(),
        None => line.to_string(),
    }
}
