//! Small readers for the framing around the JSON: content types, form encodings, multipart,
//! timestamps and hashes. Hand-written and bounded because they see untrusted bytes.

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::IntakeError;

/// The body as text, or why not.
pub(crate) fn utf8(body: &[u8]) -> Result<&str, IntakeError> {
    std::str::from_utf8(body).map_err(|e| IntakeError::NotUtf8 {
        offset: e.valid_up_to(),
    })
}

/// Parse a JSON document, checking emptiness and UTF-8 first so the reason is precise.
pub(crate) fn json(body: &[u8]) -> Result<Value, IntakeError> {
    let text = utf8(body)?;
    if text.trim().is_empty() {
        return Err(IntakeError::EmptyBody);
    }
    serde_json::from_str(text).map_err(|e| IntakeError::NotJson(e.to_string()))
}

/// A JSON value's kind, for error messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A scalar as the text a person would write: strings bare, integers without `.0`.
pub(crate) fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
                format!("{}", f as i64)
            }
            _ => n.to_string(),
        }),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// An object of scalars as a string map; nested values are kept as their JSON text.
pub(crate) fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    let Some(Value::Object(map)) = value else {
        return BTreeMap::new();
    };
    map.iter()
        .map(|(k, v)| {
            let text = scalar_text(v).unwrap_or_else(|| v.to_string());
            (k.clone(), text)
        })
        .collect()
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Identity for labels when the sender gave none: a hash over the sorted pairs, length-prefixed so
/// `{"a": "b=c"}` and `{"a=b": "c"}` differ.
pub(crate) fn labels_identity(labels: &BTreeMap<String, String>) -> String {
    let mut bytes = Vec::new();
    for (k, v) in labels {
        for part in [k, v] {
            bytes.extend_from_slice(&(part.len() as u64).to_be_bytes());
            bytes.extend_from_slice(part.as_bytes());
        }
    }
    format!("sha256:{}", sha256_hex(&bytes))
}

/// RFC 3339 to milliseconds; Go's zero time (year 1) means "not set". Unreadable times are
/// dropped rather than refused: losing one timestamp is better than losing the alert.
pub(crate) fn rfc3339_ms(text: Option<&str>) -> Option<i64> {
    let ts: jiff::Timestamp = text?.trim().parse().ok()?;
    let ms = ts.as_millisecond();
    // 0002-01-01T00:00:00Z: anything earlier is a zero value, not a date.
    (ms >= -62_104_060_800_000).then_some(ms)
}

/// Uptime Kuma's `YYYY-MM-DD HH:mm:ss.SSS`, which is UTC without saying so.
pub(crate) fn kuma_time_ms(text: Option<&str>) -> Option<i64> {
    let text = text?.trim();
    let civil: jiff::civil::DateTime = text.replacen(' ', "T", 1).parse().ok()?;
    let zoned = civil.to_zoned(jiff::tz::TimeZone::UTC).ok()?;
    Some(zoned.timestamp().as_millisecond())
}

/// A parsed `Content-Type`: the lowercase media type and its parameters.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ContentType {
    pub(crate) mime: String,
    pub(crate) params: BTreeMap<String, String>,
}

impl ContentType {
    pub(crate) fn parse(header: &str) -> Result<ContentType, IntakeError> {
        let mut parts = split_params(header).into_iter();
        let mime = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let mut params = BTreeMap::new();
        for part in parts {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (key, value) = part.split_once('=').unwrap_or((part, ""));
            let key = key.trim().to_ascii_lowercase();
            let value = unquote(value.trim());
            if params.insert(key.clone(), value).is_some() {
                return Err(IntakeError::ContentType(format!(
                    "parameter {key} is given twice"
                )));
            }
        }
        Ok(ContentType { mime, params })
    }

    pub(crate) fn is_json(&self) -> bool {
        self.mime == "application/json" || self.mime.ends_with("+json")
    }
}

/// Split on `;` outside double quotes.
fn split_params(header: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut escaped = false;
    for c in header.chars() {
        let current = out.last_mut().expect("out starts non-empty");
        if escaped {
            escaped = false;
        } else if quoted && c == '\\' {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
        } else if c == ';' && !quoted {
            out.push(String::new());
            continue;
        }
        current.push(c);
    }
    out
}

fn unquote(value: &str) -> String {
    let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) else {
        return value.to_string();
    };
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `application/x-www-form-urlencoded` pairs, in order. Bad percent escapes are kept literally;
/// bytes that do not decode to UTF-8 are replaced, since a query string is only ever a hint.
pub(crate) fn form_pairs(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let high = bytes.get(i + 1).and_then(|b| hex(*b));
                let low = bytes.get(i + 2).and_then(|b| hex(*b));
                if let (Some(h), Some(l)) = (high, low) {
                    out.push(h * 16 + l);
                    i += 3;
                    continue;
                }
                out.push(b'%');
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// One `multipart/form-data` field: its name and raw value.
pub(crate) struct FormField<'a> {
    pub(crate) name: Option<String>,
    pub(crate) value: &'a [u8],
}

/// The fields of a `multipart/form-data` body (RFC 7578), accepting LF as well as CRLF line ends
/// because hand-made test requests often use them.
pub(crate) fn multipart_fields<'a>(
    body: &'a [u8],
    boundary: &str,
) -> Result<Vec<FormField<'a>>, IntakeError> {
    if boundary.is_empty() {
        return Err(IntakeError::Multipart("the boundary is empty".into()));
    }
    let delimiter = format!("--{boundary}");
    let delimiter = delimiter.as_bytes();
    let mut line_delimiter = b"\n".to_vec();
    line_delimiter.extend_from_slice(delimiter);

    let mut pos = if body.starts_with(delimiter) {
        0
    } else {
        find(body, &line_delimiter, 0)
            .map(|at| at + 1)
            .ok_or_else(|| IntakeError::Multipart(format!("boundary {boundary:?} never appears")))?
    };
    let mut fields = Vec::new();
    loop {
        let after = pos + delimiter.len();
        let rest = &body[after..];
        if rest.starts_with(b"--") {
            return Ok(fields);
        }
        let Some(newline) = find(body, b"\n", after) else {
            return Err(IntakeError::Multipart("the body ends inside a part".into()));
        };
        let start = newline + 1;
        let Some(next) = find(body, &line_delimiter, newline) else {
            return Err(IntakeError::Multipart(format!(
                "the closing boundary --{boundary}-- is missing"
            )));
        };
        let mut end = next;
        if end > start && body[end - 1] == b'\r' {
            end -= 1;
        }
        let part = &body[start..end.max(start)];
        fields.push(part_field(part)?);
        pos = next + 1;
    }
}

fn part_field(part: &[u8]) -> Result<FormField<'_>, IntakeError> {
    let mut name = None;
    let mut offset = 0;
    loop {
        let Some(newline) = find(part, b"\n", offset) else {
            // Headers that never end: no value.
            return Err(IntakeError::Multipart(
                "a part has no blank line after its headers".into(),
            ));
        };
        let line = &part[offset..newline];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        offset = newline + 1;
        if line.is_empty() {
            break;
        }
        let line = String::from_utf8_lossy(line);
        if let Some((header, value)) = line.split_once(':')
            && header.trim().eq_ignore_ascii_case("content-disposition")
        {
            let disposition = ContentType::parse(value).map_err(|_| {
                IntakeError::Multipart("a part's Content-Disposition repeats a parameter".into())
            })?;
            name = disposition.params.get("name").cloned();
        }
    }
    Ok(FormField {
        name,
        value: &part[offset..],
    })
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || from > haystack.len() {
        return None;
    }
    haystack[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|at| at + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_handles_plus_escapes_and_broken_escapes() {
        assert_eq!(percent_decode("a+b%20c%7B%7d"), "a b c{}");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%F0%9F%94%B4"), "🔴");
        assert_eq!(percent_decode("%ff"), "\u{fffd}");
    }

    #[test]
    fn form_pairs_keep_order_and_empty_values() {
        assert_eq!(
            form_pairs("msg=hi+there&heartbeat=&flag&&x=%3D"),
            vec![
                ("msg".into(), "hi there".into()),
                ("heartbeat".into(), "".into()),
                ("flag".into(), "".into()),
                ("x".into(), "=".into()),
            ]
        );
    }

    #[test]
    fn content_type_reads_quoted_parameters_and_refuses_duplicates() {
        let ct =
            ContentType::parse(r#"Multipart/Form-Data; boundary="a;b\"c"; charset=utf-8"#).unwrap();
        assert_eq!(ct.mime, "multipart/form-data");
        assert_eq!(ct.params["boundary"], "a;b\"c");
        assert_eq!(ct.params["charset"], "utf-8");
        assert!(ContentType::parse("multipart/form-data; boundary=a; boundary=b").is_err());
        assert!(
            ContentType::parse("application/problem+json")
                .unwrap()
                .is_json()
        );
    }

    #[test]
    fn multipart_reads_crlf_and_lf_bodies() {
        let crlf = b"preamble\r\n--B\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n{\"a\":1}\r\n--B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n\r\n--B--\r\n";
        let fields = multipart_fields(crlf, "B").unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[0].name.as_deref(), Some("data"));
        assert_eq!(fields[0].value, b"{\"a\":1}");
        assert_eq!(fields[1].value, b"");
        let lf = b"--B\nContent-Disposition: form-data; name=data\n\nline1\nline2\n--B--";
        let fields = multipart_fields(lf, "B").unwrap();
        assert_eq!(fields[0].value, b"line1\nline2");
    }

    #[test]
    fn multipart_refuses_unclosed_and_absent_boundaries() {
        assert!(multipart_fields(b"--B\r\n\r\nvalue", "B").is_err());
        assert!(multipart_fields(b"no boundary here", "B").is_err());
        assert!(multipart_fields(b"--B", "B").is_err());
        assert!(multipart_fields(b"--B--", "").is_err());
    }

    #[test]
    fn times_read_both_formats_and_the_zero_time_is_none() {
        let start = "2026-02-14T03:16:30Z".parse::<jiff::Timestamp>().unwrap();
        assert_eq!(
            rfc3339_ms(Some("2026-02-14T03:16:30.000Z")),
            Some(start.as_millisecond())
        );
        assert_eq!(rfc3339_ms(Some("0001-01-01T00:00:00Z")), None);
        assert_eq!(rfc3339_ms(Some("yesterday")), None);
        let expected = "2026-02-14T03:17:00.123Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .as_millisecond();
        assert_eq!(
            kuma_time_ms(Some("2026-02-14 03:17:00.123")),
            Some(expected)
        );
        assert_eq!(kuma_time_ms(Some("not a time")), None);
    }

    #[test]
    fn label_identity_separates_keys_from_values() {
        let a = BTreeMap::from([("a".to_string(), "b=c".to_string())]);
        let b = BTreeMap::from([("a=b".to_string(), "c".to_string())]);
        assert_ne!(labels_identity(&a), labels_identity(&b));
    }
}
