//! The canonical encoding a record's hash is computed over. Described in the crate docs; the
//! code here is the one definition of it.

use crate::record::{Outputs, Record};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A record's fields as the store keeps them: JSON-valued fields as their canonical JSON text,
/// so that verification hashes stored bytes without parsing them.
pub struct Fields<'a> {
    pub id: &'a str,
    pub seq: u64,
    pub event: &'a str,
    pub timestamp_ms: i64,
    pub session_id: Option<&'a str>,
    pub actor_kind: &'a str,
    pub actor_id: &'a str,
    pub tool: &'a str,
    /// Canonical JSON.
    pub inputs: &'a [u8],
    /// Canonical JSON of the outputs object, or `None` for `null`.
    pub outputs: Option<&'a [u8]>,
    pub triggered_by: Option<&'a str>,
    pub alert_id: Option<&'a str>,
    pub host: Option<&'a str>,
    pub task: Option<&'a str>,
    pub duration_ms: Option<i64>,
    pub verdict: Option<&'a str>,
    pub rule: Option<&'a str>,
    /// Canonical JSON array of strings.
    pub reasons: &'a [u8],
    pub call_id: Option<&'a str>,
    /// Canonical JSON array of strings.
    pub redacted: &'a [u8],
    pub cwd: Option<&'a str>,
    /// Canonical JSON of the safeguards object (checks, backup, approval), or `None`.
    pub safeguards: Option<&'a [u8]>,
    pub prev_hash: &'a str,
}

/// The canonical bytes of a record, written into `out` (cleared first).
pub(crate) fn encode_fields(f: &Fields<'_>, out: &mut Vec<u8>) {
    out.clear();
    // Keys in byte order; every key is always present, `null` when absent.
    out.extend_from_slice(b"{\"actor\":{\"id\":");
    write_str(f.actor_id, out);
    out.extend_from_slice(b",\"kind\":");
    write_str(f.actor_kind, out);
    out.extend_from_slice(b"},\"call_id\":");
    write_opt_str(f.call_id, out);
    out.extend_from_slice(b",\"context\":{\"alert_id\":");
    write_opt_str(f.alert_id, out);
    out.extend_from_slice(b",\"host\":");
    write_opt_str(f.host, out);
    out.extend_from_slice(b",\"task\":");
    write_opt_str(f.task, out);
    out.extend_from_slice(b",\"triggered_by\":");
    write_opt_str(f.triggered_by, out);
    out.extend_from_slice(b"},\"cwd\":");
    write_opt_str(f.cwd, out);
    out.extend_from_slice(b",\"duration_ms\":");
    match f.duration_ms {
        Some(n) => write_int(n, out),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"event\":");
    write_str(f.event, out);
    out.extend_from_slice(b",\"id\":");
    write_str(f.id, out);
    out.extend_from_slice(b",\"inputs\":");
    out.extend_from_slice(f.inputs);
    out.extend_from_slice(b",\"outputs\":");
    out.extend_from_slice(f.outputs.unwrap_or(b"null"));
    out.extend_from_slice(b",\"prev_hash\":");
    write_str(f.prev_hash, out);
    out.extend_from_slice(b",\"reasons\":");
    out.extend_from_slice(f.reasons);
    out.extend_from_slice(b",\"redacted\":");
    out.extend_from_slice(f.redacted);
    out.extend_from_slice(b",\"rule\":");
    write_opt_str(f.rule, out);
    // Added in schema 2 and written only when present, so the records written before keep
    // the encoding (and the hashes) they were chained with.
    if let Some(safeguards) = f.safeguards {
        out.extend_from_slice(b",\"safeguards\":");
        out.extend_from_slice(safeguards);
    }
    out.extend_from_slice(b",\"seq\":");
    out.extend_from_slice(itoa_u64(f.seq).as_bytes());
    out.extend_from_slice(b",\"session_id\":");
    write_opt_str(f.session_id, out);
    out.extend_from_slice(b",\"timestamp_ms\":");
    write_int(f.timestamp_ms, out);
    out.extend_from_slice(b",\"tool\":");
    write_str(f.tool, out);
    out.extend_from_slice(b",\"verdict\":");
    write_opt_str(f.verdict, out);
    out.push(b'}');
}

/// The canonical bytes of an owned record (the slow path, for stores without stored text).
pub fn encode_record(r: &Record, out: &mut Vec<u8>) {
    encode_fields(&crate::stored::StoredRecord::new(r).fields(), out);
}

/// Canonical JSON of any value: object keys sorted by their UTF-8 bytes, no whitespace.
pub(crate) fn json_bytes(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_json(value, &mut out);
    out
}

pub(crate) fn outputs_bytes(o: &Outputs) -> Vec<u8> {
    let mut out = Vec::with_capacity(o.stdout.len() + o.stderr.len() + 48);
    out.extend_from_slice(b"{\"exit_code\":");
    match o.exit_code {
        Some(n) => write_int(n, &mut out),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"stderr\":");
    write_str(&o.stderr, &mut out);
    out.extend_from_slice(b",\"stdout\":");
    write_str(&o.stdout, &mut out);
    out.push(b'}');
    out
}

pub(crate) fn strings_bytes(items: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    out.push(b'[');
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(s, &mut out);
    }
    out.push(b']');
    out
}

fn write_json(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // serde_json writes integers in decimal and floats in their shortest round-trip form,
        // so parsing this text back gives the same number and the same text again.
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => write_str(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            // Sorted here rather than trusting the map's order: serde_json's `preserve_order`
            // feature, if any crate in the build enables it, would keep insertion order.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(key, out);
                out.push(b':');
                if let Some(v) = map.get(key) {
                    write_json(v, out);
                }
            }
            out.push(b'}');
        }
    }
}

fn write_opt_str(s: Option<&str>, out: &mut Vec<u8>) {
    match s {
        Some(s) => write_str(s, out),
        None => out.extend_from_slice(b"null"),
    }
}

/// A JSON string: `"` and `\` escaped as `\"` and `\\`; U+0008, U+0009, U+000A, U+000C, U+000D
/// as `\b \t \n \f \r`; other controls below U+0020 as `\u00xx` (lowercase hex); everything else
/// as its raw UTF-8 bytes.
fn write_str(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

fn write_int(n: i64, out: &mut Vec<u8>) {
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(itoa_u64(n.unsigned_abs()).as_bytes());
}

fn itoa_u64(n: u64) -> ItoaBuf {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    ItoaBuf { buf, start: i }
}

struct ItoaBuf {
    buf: [u8; 20],
    start: usize,
}

impl ItoaBuf {
    fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// Whether `hash` (stored hex text) equals the SHA-256 of `bytes`, without allocating.
pub(crate) fn hash_matches(bytes: &[u8], hash: &[u8]) -> bool {
    if hash.len() != 64 {
        return false;
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    digest.iter().zip(hash.chunks_exact(2)).all(|(b, pair)| {
        pair[0] == HEX[usize::from(b >> 4)] && pair[1] == HEX[usize::from(b & 0xf)]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_is_sorted_compact_and_matches_serde_for_strings() {
        let v = json!({"b": [1, -2, 1.5, "x\ny\u{1}é\"\\"], "a": {"z": null, "c": true}});
        let text = String::from_utf8(json_bytes(&v)).unwrap_or_default();
        assert_eq!(
            text,
            r#"{"a":{"c":true,"z":null},"b":[1,-2,1.5,"x\ny\u0001é\"\\"]}"#
        );
        // Round trip: parsing canonical text and encoding again is the identity.
        let back: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert_eq!(json_bytes(&back), text.as_bytes());
    }

    #[test]
    fn hash_matches_agrees_with_hex() {
        let hex = sha256_hex(b"abc");
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(hash_matches(b"abc", hex.as_bytes()));
        assert!(!hash_matches(b"abd", hex.as_bytes()));
    }
}
