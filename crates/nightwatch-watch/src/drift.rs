//! Drift: declared desired state checked against what is there.
//!
//! ```yaml
//! drift: { file: /etc/app/app.ini, key: server.max_connections, equals: "512" }
//! drift: { file: /etc/app/app.yaml, key: cache.enabled, present: true }
//! drift: { file: /etc/app/legacy.toml, key: debug, present: false }
//! drift: { file: /etc/motd, content_sha256: "9f86d081884c7d65..." }  # or content: "..."
//! drift: { sysctl: net.ipv4.ip_forward, equals: "0" }
//! drift: { unit: nginx.service, property: Restart, equals: always }
//! drift: { container: web, env: { LOG_LEVEL: info }, labels: { tier: front } }
//! ```
//!
//! One subject per watcher. What each run makes of it:
//! - as declared: `ok`;
//! - different: `found`, naming what differs (expected against found) and, for a file, the
//!   file in `touched` so the daemon can name the actor that last wrote it ([`crate::touched`]);
//! - cannot look (permission denied, systemctl unusable, no container engine): `unknown`.
//!
//! A missing file is drift, not a failure to look: its content or key is not as declared
//! (`found`, "file missing"), except that a key declared absent (`present: false`) is then
//! absent as declared. A file that no longer parses in its format is drift too: the knob is
//! not readable as declared, which is what an operator must hear about. A sysctl that does not
//! exist on this kernel (its module not loaded) is drift for the same reason.

mod ini;

pub use ini::{Ini, IniError};

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::{Env, Observation, Seen};

/// The largest file a drift watcher reads; past it the run cannot tell.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// What should be, as declared.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "RawDrift")]
pub struct DriftSpec {
    pub subject: Subject,
}

/// The one thing a drift watcher looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    File {
        path: PathBuf,
        want: FileWant,
    },
    /// `/proc/sys/...` under `proc_root` (`/proc` unless a test says otherwise).
    Sysctl {
        key: String,
        equals: String,
        proc_root: PathBuf,
    },
    Unit {
        unit: String,
        property: String,
        equals: String,
    },
    Container {
        name: String,
        env: BTreeMap<String, String>,
        labels: BTreeMap<String, String>,
    },
}

/// What a file should hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileWant {
    /// The whole file's SHA-256, lowercase hex.
    Sha256(String),
    /// The whole file, exactly.
    Content(String),
    /// A value inside it.
    Key {
        key: String,
        format: Format,
        expect: KeyExpect,
    },
}

/// What a key should be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyExpect {
    /// Present, with this value (a number or boolean compared as it is written: `512`, `true`).
    Equals(String),
    /// Present, whatever its value.
    Present,
    /// Absent.
    Absent,
}

/// A structured file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Ini,
    Yaml,
    Json,
    Toml,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Ini => "INI",
            Format::Yaml => "YAML",
            Format::Json => "JSON",
            Format::Toml => "TOML",
        }
    }

    /// From a file's extension: `.ini`, `.cnf`, `.conf`, `.cfg` read as INI.
    fn of_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "ini" | "cnf" | "conf" | "cfg" => Format::Ini,
            "yaml" | "yml" => Format::Yaml,
            "json" => Format::Json,
            "toml" => Format::Toml,
            _ => return None,
        })
    }
}

impl DriftSpec {
    /// The local files whose change should run this watcher early: the file, or none.
    pub fn watched_paths(&self) -> Vec<PathBuf> {
        match &self.subject {
            Subject::File { path, .. } => vec![path.clone()],
            _ => Vec::new(),
        }
    }

    /// One run: one observation of the subject.
    pub fn run(&self, env: &Env<'_>) -> Vec<Observation> {
        let deadline = Instant::now() + env.timeout;
        vec![match &self.subject {
            Subject::File { path, want } => file(path, want),
            Subject::Sysctl {
                key,
                equals,
                proc_root,
            } => sysctl(key, equals, proc_root),
            Subject::Unit {
                unit,
                property,
                equals,
            } => unit_property(unit, property, equals, deadline),
            Subject::Container {
                name,
                env: e,
                labels,
            } => container(env, name, e, labels),
        }]
    }
}

// ---- files ----

/// What reading a file gave.
enum Contents {
    Missing,
    Bytes(Vec<u8>),
}

fn read_capped(path: &Path) -> Result<Contents, String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Contents::Missing),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "{} is larger than {MAX_FILE_BYTES} bytes, more than a drift watcher reads",
            path.display()
        ));
    }
    Ok(Contents::Bytes(bytes))
}

fn file(path: &Path, want: &FileWant) -> Observation {
    let shown = path.display().to_string();
    let subject = match want {
        FileWant::Key { key, .. } => format!("{shown}: {key}"),
        _ => shown.clone(),
    };
    let touched = |o: Observation| o.touching(shown.clone());
    let read = match read_capped(path) {
        Ok(read) => read,
        Err(why) => return Observation::new(subject, Seen::Unknown, why),
    };
    match (want, read) {
        (
            FileWant::Key {
                expect: KeyExpect::Absent,
                key,
                ..
            },
            Contents::Missing,
        ) => Observation::new(
            subject,
            Seen::Ok,
            format!("{shown} is missing, so {key} is absent as declared"),
        ),
        (_, Contents::Missing) => touched(
            Observation::new(
                subject,
                Seen::Found,
                format!("{shown} is missing; expected {}", describe_want(want)),
            )
            .with_details(json!({ "path": shown, "found": "missing" })),
        ),
        (FileWant::Sha256(expected), Contents::Bytes(bytes)) => {
            let found = hex(&Sha256::digest(&bytes));
            if &found == expected {
                Observation::new(subject, Seen::Ok, format!("{shown} is as declared"))
            } else {
                touched(
                    Observation::new(
                        subject,
                        Seen::Found,
                        format!("{shown} has changed: its SHA-256 is {found}; expected {expected}"),
                    )
                    .with_details(json!({ "path": shown, "expected": expected, "found": found })),
                )
            }
        }
        (FileWant::Content(expected), Contents::Bytes(bytes)) => {
            if bytes == expected.as_bytes() {
                Observation::new(subject, Seen::Ok, format!("{shown} is as declared"))
            } else {
                let found = String::from_utf8_lossy(&bytes);
                touched(
                    Observation::new(
                        subject,
                        Seen::Found,
                        format!(
                            "{shown} has changed: {}",
                            first_difference(expected, &found)
                        ),
                    )
                    .with_details(json!({
                        "path": shown,
                        "expected_bytes": expected.len(),
                        "found_bytes": bytes.len(),
                    })),
                )
            }
        }
        (
            FileWant::Key {
                key,
                format,
                expect,
            },
            Contents::Bytes(bytes),
        ) => {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| shown.clone());
            let found = match lookup(&bytes, *format, key) {
                Ok(found) => found,
                Err(why) => {
                    return touched(
                        Observation::new(
                            subject,
                            Seen::Found,
                            format!("{name} does not read as {}: {why}", format.name()),
                        )
                        .with_details(json!({ "path": shown, "key": key, "found": "unreadable" })),
                    );
                }
            };
            judge_key(subject, &name, &shown, key, expect, found)
        }
    }
}

fn judge_key(
    subject: String,
    name: &str,
    shown: &str,
    key: &str,
    expect: &KeyExpect,
    found: Option<Found>,
) -> Observation {
    let details = |found: &Value| json!({ "path": shown, "key": key, "expected": describe_expect(expect), "found": found });
    let drift = |summary: String, found: Value| {
        Observation::new(subject.clone(), Seen::Found, summary)
            .with_details(details(&found))
            .touching(shown)
    };
    match (expect, found) {
        (KeyExpect::Absent, None) => Observation::new(
            subject.clone(),
            Seen::Ok,
            format!("{name}: {key} is absent as declared"),
        ),
        (KeyExpect::Absent, Some(found)) => drift(
            format!(
                "{name}: {key} is present ({}); expected it absent",
                found.shown()
            ),
            found.json(),
        ),
        (KeyExpect::Present, Some(found)) => Observation::new(
            subject.clone(),
            Seen::Ok,
            format!("{name}: {key} is present ({})", found.shown()),
        ),
        (KeyExpect::Present, None) => drift(
            format!("{name}: {key} is missing; expected it present"),
            Value::Null,
        ),
        (KeyExpect::Equals(expected), None) => drift(
            format!("{name}: {key} is missing; expected {expected:?}"),
            Value::Null,
        ),
        (KeyExpect::Equals(expected), Some(found)) => match &found {
            Found::Scalar(text) if text == expected => Observation::new(
                subject.clone(),
                Seen::Ok,
                format!("{name}: {key} is {expected:?} as declared"),
            ),
            _ => drift(
                format!("{name}: {key} is {}; expected {expected:?}", found.shown()),
                found.json(),
            ),
        },
    }
}

/// A value found at a key.
enum Found {
    /// A string, number or boolean, as text.
    Scalar(String),
    /// A table, list or null: never equal to a declared value.
    Other(Value),
}

impl Found {
    fn shown(&self) -> String {
        match self {
            Found::Scalar(text) => format!("{text:?}"),
            Found::Other(Value::Null) => "null".to_owned(),
            Found::Other(Value::Array(_)) => "a list".to_owned(),
            Found::Other(_) => "a table".to_owned(),
        }
    }

    fn json(&self) -> Value {
        match self {
            Found::Scalar(text) => Value::String(text.clone()),
            Found::Other(Value::Null) => Value::Null,
            Found::Other(Value::Array(_)) => Value::String("a list".into()),
            Found::Other(_) => Value::String("a table".into()),
        }
    }
}

/// The value at `key` in a file's bytes, in `format`. `Err`: the file does not parse.
fn lookup(bytes: &[u8], format: Format, key: &str) -> Result<Option<Found>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 ({e})"))?;
    let tree: Value = match format {
        Format::Ini => {
            let ini = Ini::parse(text).map_err(|e| e.to_string())?;
            return Ok(ini.get(key).map(|v| Found::Scalar(v.to_owned())));
        }
        Format::Json => serde_json::from_str(text).map_err(|e| e.to_string())?,
        Format::Yaml => {
            if text.trim().is_empty() {
                Value::Null
            } else {
                let doc: yaml_serde::Value =
                    yaml_serde::from_str(text).map_err(|e| e.to_string())?;
                yaml_to_json(doc)
            }
        }
        Format::Toml => {
            let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
            serde_json::to_value(table).map_err(|e| e.to_string())?
        }
    };
    Ok(at_path(&tree, key).map(|value| match value {
        Value::String(s) => Found::Scalar(s.clone()),
        Value::Number(n) => Found::Scalar(n.to_string()),
        Value::Bool(b) => Found::Scalar(b.to_string()),
        other => Found::Other(other.clone()),
    }))
}

/// A YAML document as the JSON tree paths are looked up in: tags (`!secret x`) are read as
/// the value they tag, keys that are numbers or booleans as their text.
fn yaml_to_json(doc: yaml_serde::Value) -> Value {
    use yaml_serde::Value as Y;
    match doc {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => serde_json::to_value(&n).unwrap_or(Value::Null),
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(yaml_to_json).collect()),
        Y::Mapping(map) => Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| {
                    let key = match yaml_to_json(k) {
                        Value::String(s) => s,
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        // A list or table as a key cannot be named by a dotted path.
                        _ => return None,
                    };
                    Some((key, yaml_to_json(v)))
                })
                .collect(),
        ),
        Y::Tagged(tagged) => yaml_to_json(tagged.value),
    }
}

/// The value at a dotted path; a component that is a number indexes a list. A key holding
/// dots itself (`"a.b": 1`) is found too: the longest key that matches is taken first.
fn at_path<'a>(tree: &'a Value, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return Some(tree);
    }
    match tree {
        Value::Object(map) => {
            if let Some(value) = map.get(path) {
                return Some(value);
            }
            path.match_indices('.').rev().find_map(|(at, _)| {
                map.get(&path[..at])
                    .and_then(|child| at_path(child, &path[at + 1..]))
            })
        }
        Value::Array(items) => {
            let (first, rest) = path.split_once('.').unwrap_or((path, ""));
            let index: usize = first.parse().ok()?;
            at_path(items.get(index)?, rest)
        }
        _ => None,
    }
}

fn describe_want(want: &FileWant) -> String {
    match want {
        FileWant::Sha256(sha) => format!("content with SHA-256 {sha}"),
        FileWant::Content(text) => format!("{} bytes of declared content", text.len()),
        FileWant::Key { key, expect, .. } => match expect {
            KeyExpect::Equals(v) => format!("{key} = {v:?}"),
            KeyExpect::Present => format!("{key} present"),
            KeyExpect::Absent => format!("{key} absent"),
        },
    }
}

fn describe_expect(expect: &KeyExpect) -> Value {
    match expect {
        KeyExpect::Equals(v) => Value::String(v.clone()),
        KeyExpect::Present => json!({ "present": true }),
        KeyExpect::Absent => json!({ "present": false }),
    }
}

/// Where two texts first differ, as a person reads it: the line and both versions of it.
fn first_difference(expected: &str, found: &str) -> String {
    let mut want = expected.lines();
    let mut have = found.lines();
    let mut line = 0;
    loop {
        line += 1;
        match (want.next(), have.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (Some(a), Some(b)) => {
                return format!("line {line} is {:?}; expected {:?}", clip(b), clip(a));
            }
            (Some(a), None) => return format!("line {line} is missing; expected {:?}", clip(a)),
            (None, Some(b)) => return format!("line {line} is extra: {:?}", clip(b)),
            (None, None) => return "its line endings or final newline differ".to_owned(),
        }
    }
}

fn clip(text: &str) -> String {
    if text.chars().count() > 80 {
        format!("{}...", text.chars().take(77).collect::<String>())
    } else {
        text.to_owned()
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

// ---- sysctl, units, containers ----

/// Whitespace runs as one space: `4096\t87380\t6291456` equals `4096 87380 6291456`.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn sysctl(key: &str, equals: &str, proc_root: &Path) -> Observation {
    let subject = format!("sysctl {key}");
    let mut path = proc_root.join("sys");
    // `net.ipv4.ip_forward` or `net/ipv4/ip_forward`; with slashes, a dot belongs to a name
    // (`net/ipv4/conf/eth0.1/rp_filter`).
    let sep = if key.contains('/') { '/' } else { '.' };
    for part in key.split(sep) {
        path.push(part);
    }
    let found = match std::fs::read_to_string(&path) {
        Ok(text) => squeeze(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Observation::new(
                subject,
                Seen::Found,
                format!("sysctl {key} does not exist on this kernel; expected {equals:?}"),
            )
            .with_details(json!({ "key": key, "expected": equals, "found": "missing" }));
        }
        Err(e) => {
            return Observation::new(
                subject,
                Seen::Unknown,
                format!("cannot read {}: {e}", path.display()),
            );
        }
    };
    let expected = squeeze(equals);
    if found == expected {
        Observation::new(
            subject,
            Seen::Ok,
            format!("sysctl {key} is {found:?} as declared"),
        )
    } else {
        Observation::new(
            subject,
            Seen::Found,
            format!("sysctl {key} is {found:?}; expected {expected:?}"),
        )
        .with_details(json!({ "key": key, "expected": expected, "found": found }))
    }
}

fn unit_property(unit: &str, property: &str, equals: &str, deadline: Instant) -> Observation {
    let subject = format!("{unit}: {property}");
    match nightwatch_checks::show_property(unit, property, deadline, None) {
        Err(why) => Observation::new(subject, Seen::Unknown, why),
        Ok(found) if found == equals => Observation::new(
            subject,
            Seen::Ok,
            format!("{unit}: {property} is {found:?} as declared"),
        ),
        Ok(found) => Observation::new(
            subject,
            Seen::Found,
            format!("{unit}: {property} is {found:?}; expected {equals:?}"),
        )
        .with_details(
            json!({ "unit": unit, "property": property, "expected": equals, "found": found }),
        ),
    }
}

fn container(
    env: &Env<'_>,
    name: &str,
    want_env: &BTreeMap<String, String>,
    want_labels: &BTreeMap<String, String>,
) -> Observation {
    let subject = format!("container {name}");
    let facts = match env.containers.inspect(name) {
        Err(why) => return Observation::new(subject, Seen::Unknown, why),
        Ok(None) => {
            return Observation::new(
                subject,
                Seen::Found,
                format!("container {name} does not exist"),
            )
            .with_details(json!({ "container": name, "found": "missing" }));
        }
        Ok(Some(facts)) => facts,
    };
    let mut differs = Vec::new();
    let mut details = Vec::new();
    for (what, want, have) in [
        ("env", want_env, &facts.env),
        ("label", want_labels, &facts.labels),
    ] {
        for (key, expected) in want {
            let found = have.get(key);
            if found != Some(expected) {
                differs.push(match found {
                    Some(found) => format!("{what} {key} is {found:?}; expected {expected:?}"),
                    None => format!("{what} {key} is missing; expected {expected:?}"),
                });
                details.push(
                    json!({ "kind": what, "key": key, "expected": expected, "found": found }),
                );
            }
        }
    }
    if differs.is_empty() {
        Observation::new(
            subject,
            Seen::Ok,
            format!("container {name}: env and labels as declared"),
        )
    } else {
        Observation::new(
            subject,
            Seen::Found,
            format!("container {name}: {}", differs.join("; ")),
        )
        .with_details(json!({ "container": name, "differs": details }))
    }
}

// ---- the spec as written ----

/// A scalar written in YAML (`512`, `true`, `"0.0.0.0"`), kept as its text.
#[derive(Clone, Debug)]
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Scalar {
            Text(String),
            Int(i64),
            Uint(u64),
            Float(f64),
            Bool(bool),
        }
        Ok(Text(
            match Scalar::deserialize(d)
                .map_err(|_| serde::de::Error::custom("expected a string, number or boolean"))?
            {
                Scalar::Text(s) => s,
                Scalar::Int(n) => n.to_string(),
                Scalar::Uint(n) => n.to_string(),
                Scalar::Float(n) => n.to_string(),
                Scalar::Bool(b) => b.to_string(),
            },
        ))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDrift {
    file: Option<String>,
    content_sha256: Option<String>,
    content: Option<String>,
    key: Option<String>,
    equals: Option<Text>,
    present: Option<bool>,
    format: Option<Format>,
    sysctl: Option<String>,
    proc_root: Option<String>,
    unit: Option<String>,
    property: Option<String>,
    container: Option<String>,
    env: Option<BTreeMap<String, Text>>,
    labels: Option<BTreeMap<String, Text>>,
}

impl TryFrom<RawDrift> for DriftSpec {
    type Error = String;

    fn try_from(raw: RawDrift) -> Result<DriftSpec, String> {
        let subjects = [
            raw.file.is_some(),
            raw.sysctl.is_some(),
            raw.unit.is_some(),
            raw.container.is_some(),
        ];
        match subjects.iter().filter(|s| **s).count() {
            1 => {}
            0 => return Err("say what should not drift: file, sysctl, unit or container".into()),
            _ => return Err("one of file, sysctl, unit or container per watcher".into()),
        }
        let unused = |fields: &[(&str, bool)]| -> Result<(), String> {
            match fields.iter().find(|(_, set)| *set) {
                Some((name, _)) => Err(format!("{name} does not go with this subject")),
                None => Ok(()),
            }
        };
        let subject = if let Some(path) = raw.file {
            unused(&[
                ("proc_root", raw.proc_root.is_some()),
                ("property", raw.property.is_some()),
                ("env", raw.env.is_some()),
                ("labels", raw.labels.is_some()),
            ])?;
            check_absolute("file", &path)?;
            let path = PathBuf::from(path);
            let want = match (raw.content_sha256, raw.content, raw.key) {
                (Some(sha), None, None) => {
                    let sha = sha.trim().to_ascii_lowercase();
                    if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err("content_sha256: 64 hexadecimal digits".into());
                    }
                    unused(&[
                        ("equals", raw.equals.is_some()),
                        ("present", raw.present.is_some()),
                        ("format", raw.format.is_some()),
                    ])?;
                    FileWant::Sha256(sha)
                }
                (None, Some(content), None) => {
                    unused(&[
                        ("equals", raw.equals.is_some()),
                        ("present", raw.present.is_some()),
                        ("format", raw.format.is_some()),
                    ])?;
                    if content.len() as u64 > MAX_FILE_BYTES {
                        return Err("content: larger than a drift watcher reads".into());
                    }
                    FileWant::Content(content)
                }
                (None, None, Some(key)) => {
                    if key.is_empty()
                        || key.starts_with('.')
                        || key.ends_with('.')
                        || key.contains("..")
                    {
                        return Err(format!(
                            "key: a dotted path like server.max_connections, not {key:?}"
                        ));
                    }
                    let format = match raw.format.or_else(|| Format::of_path(&path)) {
                        Some(format) => format,
                        None => {
                            return Err(
                                "format: the file's extension does not say; give format: ini, yaml, json or toml"
                                    .into(),
                            );
                        }
                    };
                    let expect = match (raw.equals, raw.present) {
                        (Some(v), None) => KeyExpect::Equals(v.0),
                        (None, Some(true)) => KeyExpect::Present,
                        (None, Some(false)) => KeyExpect::Absent,
                        (None, None) => {
                            return Err(
                                "key: say equals: VALUE, present: true or present: false".into()
                            );
                        }
                        (Some(_), Some(_)) => {
                            return Err(
                                "equals already means present; give one of equals or present"
                                    .into(),
                            );
                        }
                    };
                    FileWant::Key {
                        key,
                        format,
                        expect,
                    }
                }
                (None, None, None) => {
                    return Err(
                        "file: say what it should hold: content_sha256, content or key".into(),
                    );
                }
                _ => return Err("file: one of content_sha256, content or key".into()),
            };
            Subject::File { path, want }
        } else if let Some(key) = raw.sysctl {
            unused(&[
                ("content_sha256", raw.content_sha256.is_some()),
                ("content", raw.content.is_some()),
                ("key", raw.key.is_some()),
                ("present", raw.present.is_some()),
                ("format", raw.format.is_some()),
                ("property", raw.property.is_some()),
                ("env", raw.env.is_some()),
                ("labels", raw.labels.is_some()),
            ])?;
            let fine = !key.is_empty()
                && key.len() <= 256
                && key.split(['.', '/']).all(|part| {
                    !part.is_empty()
                        && part != ".."
                        && part
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                });
            if !fine {
                return Err(format!(
                    "sysctl: a name like net.ipv4.ip_forward, not {key:?}"
                ));
            }
            let equals = raw.equals.ok_or("sysctl: say equals: VALUE")?.0;
            let proc_root = raw.proc_root.unwrap_or_else(|| "/proc".to_owned());
            check_absolute("proc_root", &proc_root)?;
            Subject::Sysctl {
                key,
                equals,
                proc_root: PathBuf::from(proc_root),
            }
        } else if let Some(unit) = raw.unit {
            unused(&[
                ("content_sha256", raw.content_sha256.is_some()),
                ("content", raw.content.is_some()),
                ("key", raw.key.is_some()),
                ("present", raw.present.is_some()),
                ("format", raw.format.is_some()),
                ("proc_root", raw.proc_root.is_some()),
                ("env", raw.env.is_some()),
                ("labels", raw.labels.is_some()),
            ])?;
            check_unit(&unit)?;
            let property = raw
                .property
                .ok_or("unit: say property: NAME (like Restart)")?;
            if property.is_empty() || !property.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(format!(
                    "property: a systemd property name like Restart, not {property:?}"
                ));
            }
            let equals = raw.equals.ok_or("unit: say equals: VALUE")?.0;
            Subject::Unit {
                unit,
                property,
                equals,
            }
        } else {
            let name = raw.container.unwrap_or_default();
            unused(&[
                ("content_sha256", raw.content_sha256.is_some()),
                ("content", raw.content.is_some()),
                ("key", raw.key.is_some()),
                ("equals", raw.equals.is_some()),
                ("present", raw.present.is_some()),
                ("format", raw.format.is_some()),
                ("proc_root", raw.proc_root.is_some()),
                ("property", raw.property.is_some()),
            ])?;
            check_container(&name)?;
            let text = |m: Option<BTreeMap<String, Text>>| -> BTreeMap<String, String> {
                m.unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect()
            };
            let (env, labels) = (text(raw.env), text(raw.labels));
            if env.is_empty() && labels.is_empty() {
                return Err("container: say env: {KEY: value} or labels: {key: value}".into());
            }
            Subject::Container { name, env, labels }
        };
        Ok(DriftSpec { subject })
    }
}

fn check_absolute(field: &str, path: &str) -> Result<(), String> {
    if path.starts_with('/')
        && !path.contains('\0')
        && !Path::new(path)
            .components()
            .any(|c| c == std::path::Component::ParentDir)
    {
        Ok(())
    } else {
        Err(format!(
            "{field}: an absolute path without .., not {path:?}"
        ))
    }
}

/// A unit name systemctl takes as one argument: no options, no whitespace.
pub(crate) fn check_unit(unit: &str) -> Result<(), String> {
    let fine = !unit.is_empty()
        && unit.len() <= 256
        && !unit.starts_with('-')
        && unit
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '@' | ':' | '\\'));
    if fine {
        Ok(())
    } else {
        Err(format!(
            "unit: a unit name like nginx.service, not {unit:?}"
        ))
    }
}

/// A container name as Docker allows them.
pub(crate) fn check_container(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if fine {
        Ok(())
    } else {
        Err(format!(
            "container: a container name like web-1, not {name:?}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> Result<DriftSpec, String> {
        yaml_serde::from_str::<DriftSpec>(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn subjects_read_with_their_expectations() {
        let s =
            spec("{ file: /etc/app/app.ini, key: server.max_connections, equals: 512 }").unwrap();
        assert_eq!(
            s.subject,
            Subject::File {
                path: "/etc/app/app.ini".into(),
                want: FileWant::Key {
                    key: "server.max_connections".into(),
                    format: Format::Ini,
                    expect: KeyExpect::Equals("512".into()),
                }
            }
        );
        assert_eq!(s.watched_paths(), [PathBuf::from("/etc/app/app.ini")]);
        let s = spec("{ sysctl: net.ipv4.ip_forward, equals: 0 }").unwrap();
        assert!(s.watched_paths().is_empty());
        assert!(spec("{ unit: nginx.service, property: Restart, equals: always }").is_ok());
        assert!(spec("{ container: web, env: { LOG_LEVEL: info } }").is_ok());
        assert!(spec("{ file: /x.conf, key: a, present: false }").is_ok());
    }

    #[test]
    fn mistakes_are_refused_with_the_field() {
        for (yaml, says) in [
            ("{}", "say what should not drift"),
            ("{ file: /a.ini, sysctl: x, equals: 1 }", "one of file"),
            (
                "{ file: a.ini, key: x, equals: 1 }",
                "file: an absolute path",
            ),
            ("{ file: /a.ini }", "say what it should hold"),
            ("{ file: /a.ini, key: x }", "say equals"),
            (
                "{ file: /a.ini, key: x, equals: 1, present: true }",
                "one of equals or present",
            ),
            ("{ file: /a.txt, key: x, equals: 1 }", "format"),
            (
                "{ file: /a.ini, key: x, equals: 1, format: xml }",
                "unknown variant",
            ),
            ("{ file: /a, content_sha256: abc }", "64 hexadecimal"),
            ("{ file: /a, content: x, key: y }", "one of content_sha256"),
            ("{ file: /a.ini, key: x..y, equals: 1 }", "dotted path"),
            ("{ sysctl: net.ipv4.ip_forward }", "equals"),
            ("{ sysctl: ../../etc/passwd, equals: 1 }", "a name like"),
            ("{ unit: -x, property: Restart, equals: a }", "unit name"),
            (
                "{ unit: a.service, property: 'Re start', equals: a }",
                "property",
            ),
            ("{ container: web }", "env"),
            (
                "{ container: web, key: x, env: { A: b } }",
                "key does not go",
            ),
            (
                "{ file: /a.ini, key: x, equals: 1, colour: red }",
                "unknown field",
            ),
            (
                "{ file: /a.ini, key: x, equals: [1] }",
                "string, number or boolean",
            ),
        ] {
            let err = spec(yaml).expect_err(yaml);
            assert!(err.contains(says), "{yaml}: {err}");
        }
    }

    #[test]
    fn paths_reach_into_tables_lists_and_dotted_keys() {
        let tree =
            json!({ "server": { "max_connections": 512, "hosts": ["a", "b"] }, "a.b": true });
        assert_eq!(at_path(&tree, "server.max_connections"), Some(&json!(512)));
        assert_eq!(at_path(&tree, "server.hosts.1"), Some(&json!("b")));
        assert_eq!(at_path(&tree, "a.b"), Some(&json!(true)));
        assert_eq!(at_path(&tree, "server.hosts.9"), None);
        assert_eq!(at_path(&tree, "server.max_connections.x"), None);
    }

    #[test]
    fn the_first_difference_is_named_by_line() {
        assert_eq!(
            first_difference("a\nb\n", "a\nc\n"),
            "line 2 is \"c\"; expected \"b\""
        );
        assert_eq!(
            first_difference("a\nb", "a"),
            "line 2 is missing; expected \"b\""
        );
        assert_eq!(
            first_difference("a", "a\r\n"),
            "its line endings or final newline differ"
        );
    }
}
