//! The identity of an action for the circuit breaker: the same command retried is the same
//! action, however its whitespace or its JSON key order differ.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// A stable fingerprint of an action: 32 hex digits.
///
/// For `exec`, the identity is the command line alone (the `line` or `command` input, an argv
/// array joined by spaces), whitespace-normalised: an agent's `description` or `timeout` inputs
/// change between retries of the same command. Every other tool is identified by its name and
/// all its inputs, as JSON with object keys in byte order.
pub fn fingerprint(tool_name: &str, inputs: &Value) -> String {
    let mut canon = String::with_capacity(128);
    canon.push_str(tool_name);
    canon.push('\n');
    match exec_line(tool_name, inputs) {
        Some(line) => {
            canon.push_str("line:");
            for (i, word) in line.split_whitespace().enumerate() {
                if i > 0 {
                    canon.push(' ');
                }
                canon.push_str(word);
            }
        }
        None => write_canonical(inputs, &mut canon),
    }
    let digest = Sha256::digest(canon.as_bytes());
    let mut out = String::with_capacity(32);
    for byte in &digest[..16] {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

fn exec_line(tool_name: &str, inputs: &Value) -> Option<String> {
    if tool_name != "exec" {
        return None;
    }
    let object = inputs.as_object()?;
    match object.get("line").or_else(|| object.get("command"))? {
        Value::String(line) => Some(line.clone()),
        Value::Array(argv) => {
            let words: Option<Vec<&str>> = argv.iter().map(Value::as_str).collect();
            Some(words?.join(" "))
        }
        _ => None,
    }
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, out),
        // Null, booleans and numbers print one way only.
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push_str(&Value::String(s.to_owned()).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn same_action_same_fingerprint() {
        let same = [
            (
                ("exec", json!({"command": "systemctl restart  app-worker"})),
                (
                    "exec",
                    json!({"command": " systemctl\trestart app-worker\n", "description": "restart"}),
                ),
            ),
            (
                ("exec", json!({"line": "ls -la"})),
                ("exec", json!({"command": ["ls", "-la"]})),
            ),
            (
                (
                    "remove_container",
                    json!({"name": "x", "force": true, "opts": {"b": 1, "a": [1, 2]}}),
                ),
                (
                    "remove_container",
                    json!({"opts": {"a": [1, 2], "b": 1}, "force": true, "name": "x"}),
                ),
            ),
        ];
        for ((t1, i1), (t2, i2)) in same {
            assert_eq!(fingerprint(t1, &i1), fingerprint(t2, &i2), "{i1} vs {i2}");
        }
        let different = [
            (
                ("exec", json!({"command": "ls -la"})),
                ("exec", json!({"command": "ls -l"})),
            ),
            (
                ("exec", json!({"command": "ls"})),
                ("read", json!({"command": "ls"})),
            ),
            (
                ("write", json!({"path": "/a", "n": 1})),
                ("write", json!({"path": "/a", "n": 1.5})),
            ),
            (
                ("write", json!({"path": "a b"})),
                ("write", json!({"path": "a  b"})),
            ),
        ];
        for ((t1, i1), (t2, i2)) in different {
            assert_ne!(fingerprint(t1, &i1), fingerprint(t2, &i2), "{i1} vs {i2}");
        }
        assert_eq!(fingerprint("exec", &json!(null)).len(), 32);
    }
}
