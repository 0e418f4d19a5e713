//! What a path was: the values a snapshot stores and an observation compares. No I/O here.

use crate::limits::{ByteSize, Limits};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Deepest directory nesting captured under one path. Deeper trees are skipped rather than
/// walked, so neither capture nor restore can exhaust the stack on a hostile tree or manifest.
pub const MAX_DEPTH: usize = 256;

/// Lowercase hex SHA-256 of a file's content: the name it is stored under.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ObjectHash(String);

/// A snapshot's id: the lowercase hex SHA-256 of its manifest's bytes, so a manifest that does
/// not hash to its name has been damaged.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SnapshotId(String);

macro_rules! sha256_name {
    ($name:ident, $what:literal) => {
        impl $name {
            /// Accepts exactly 64 lowercase hex digits, so an id can never name a path outside
            /// the store.
            pub fn parse(text: &str) -> Result<$name, String> {
                if is_sha256_hex(text) {
                    Ok($name(text.to_owned()))
                } else {
                    Err(format!(
                        "`{}` is not {}: expected 64 lowercase hex digits",
                        text.escape_debug(),
                        $what
                    ))
                }
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = String;
            fn try_from(text: String) -> Result<$name, String> {
                $name::parse(&text)
            }
        }

        impl From<$name> for String {
            fn from(name: $name) -> String {
                name.0
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(text: &str) -> Result<$name, String> {
                $name::parse(text)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

sha256_name!(ObjectHash, "a content hash");
sha256_name!(SnapshotId, "a snapshot id");

impl ObjectHash {
    pub(crate) fn from_digest(digest: &[u8]) -> ObjectHash {
        ObjectHash(hex(digest))
    }
}

impl SnapshotId {
    /// The id of a manifest with these bytes.
    pub(crate) fn of(bytes: &[u8]) -> SnapshotId {
        use sha2::Digest;
        SnapshotId(hex(&sha2::Sha256::digest(bytes)))
    }
}

fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    fn digit(b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes
        .chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

/// Paths in JSON: a string when the path is UTF-8, else `{"hex": "<bytes>"}`, so a file name
/// that is not UTF-8 comes back byte for byte instead of as U+FFFD.
pub(crate) mod path_bytes {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Written {
        Text(String),
        Bytes { hex: String },
    }

    pub fn serialize<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
        let bytes = path.as_os_str().as_bytes();
        match std::str::from_utf8(bytes) {
            Ok(text) => serializer.serialize_str(text),
            Err(_) => Written::Bytes {
                hex: super::hex(bytes),
            }
            .serialize(serializer),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<PathBuf, D::Error> {
        match Written::deserialize(deserializer)? {
            Written::Text(text) => Ok(PathBuf::from(text)),
            Written::Bytes { hex } => super::unhex(&hex)
                .map(|bytes| PathBuf::from(OsStr::from_bytes(&bytes)))
                .ok_or_else(|| serde::de::Error::custom("a path's `hex` is not lowercase hex")),
        }
    }
}

/// The state of one path at one moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PathState {
    /// Nothing there: restoring it deletes whatever the action created.
    Absent,
    /// A regular file whose content is the object `hash`. `mode` is the permission bits
    /// (`0o7777`); owner and timestamps are not kept.
    File {
        hash: ObjectHash,
        size: u64,
        mode: u32,
    },
    /// A directory. At the top level `entries` lists everything beneath it in pre-order, each
    /// by its path relative to the directory, so a deep tree stays a flat list in JSON. Inside
    /// `entries` a directory's own `entries` is always empty.
    Dir {
        mode: u32,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        entries: Vec<DirEntry>,
    },
    /// A symbolic link, kept as the link itself (its target text), never followed.
    Symlink {
        #[serde(with = "path_bytes")]
        target: PathBuf,
    },
    /// Not backed up, and why. A restore that needs it refuses for this path.
    Skipped { reason: SkipReason },
}

/// One path under a captured directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirEntry {
    /// Relative to the captured directory; one or more plain components.
    #[serde(with = "path_bytes")]
    pub path: PathBuf,
    pub state: PathState,
}

/// Why a path was not backed up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SkipReason {
    FileTooLarge {
        size: u64,
        limit: u64,
    },
    DirTooManyEntries {
        limit: u64,
    },
    DirTooManyBytes {
        limit: u64,
    },
    TooDeep {
        limit: u64,
    },
    /// A named pipe, socket or device: there is no content to keep.
    Special {
        kind: String,
    },
    Unreadable {
        error: String,
    },
    NotAbsolute,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::FileTooLarge { size, limit } => write!(
                f,
                "the file is {}, over the {} backup limit",
                ByteSize(*size),
                ByteSize(*limit)
            ),
            SkipReason::DirTooManyEntries { limit } => {
                write!(f, "the directory holds more than {limit} entries")
            }
            SkipReason::DirTooManyBytes { limit } => write!(
                f,
                "the directory holds more than {} of files",
                ByteSize(*limit)
            ),
            SkipReason::TooDeep { limit } => {
                write!(f, "the directory is nested more than {limit} levels deep")
            }
            SkipReason::Special { kind } => write!(f, "it is a {kind}, which has no content"),
            SkipReason::Unreadable { error } => write!(f, "it could not be read: {error}"),
            SkipReason::NotAbsolute => f.write_str("the path is not absolute"),
        }
    }
}

/// One path and its state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capture {
    #[serde(with = "path_bytes")]
    pub path: PathBuf,
    pub state: PathState,
}

/// The paths an action was about to change, as they were just before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub id: SnapshotId,
    /// Unix milliseconds, from the caller's clock.
    pub created_ms: i64,
    /// The limits it was taken with; the restore captures the present with the same ones, so
    /// "too large to compare" means the same thing before, after and now.
    pub limits: Limits,
    /// Sorted by path, so a directory comes before anything listed inside it.
    pub paths: Vec<Capture>,
}

impl Snapshot {
    /// The paths this snapshot covers, including link targets it added; observe these after
    /// the action so the restore has an "after" state for each.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.paths.iter().map(|c| c.path.clone()).collect()
    }

    /// Every object the snapshot needs, with its size.
    pub(crate) fn objects(&self) -> impl Iterator<Item = (&ObjectHash, u64)> {
        self.paths.iter().flat_map(|c| {
            let entries: &[DirEntry] = match &c.state {
                PathState::Dir { entries, .. } => entries,
                _ => &[],
            };
            std::iter::once(&c.state)
                .chain(entries.iter().map(|e| &e.state))
                .filter_map(|s| match s {
                    PathState::File { hash, size, .. } => Some((hash, *size)),
                    _ => None,
                })
        })
    }
}

/// The paths an action touched, as it left them: hashes only, nothing stored. A restore
/// compares it with the present to see whether anyone changed them since.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    pub paths: Vec<Capture>,
}

impl Observation {
    pub fn get(&self, path: &Path) -> Option<&PathState> {
        self.paths.iter().find(|c| c.path == path).map(|c| &c.state)
    }
}

/// The manifest as stored: its bytes are what the id hashes.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Manifest {
    pub format: u32,
    pub created_ms: i64,
    pub limits: Limits,
    pub paths: Vec<Capture>,
}

pub(crate) const FORMAT: u32 = 1;

/// Checks what serde cannot: paths absolute, directory entries relative, in pre-order, each
/// inside a directory listed before it, not too deep. A manifest failing this is damaged.
pub(crate) fn validate(paths: &[Capture]) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for capture in paths {
        let shown = capture.path.display();
        if !capture.path.is_absolute() {
            return Err(format!("{shown}: not an absolute path"));
        }
        if has_nul(&capture.path) {
            return Err(format!("{shown}: contains a NUL byte"));
        }
        if !seen.insert(&capture.path) {
            return Err(format!("{shown}: listed twice"));
        }
        validate_state(&capture.state, true).map_err(|e| format!("{shown}: {e}"))?;
        if let PathState::Dir { entries, .. } = &capture.state {
            let mut dirs: BTreeSet<&Path> = BTreeSet::new();
            let mut previous: Option<&Path> = None;
            for entry in entries {
                let rel = entry.path.as_path();
                let at = format!("{shown}/{}", rel.display());
                let depth = rel.components().count();
                let plain = rel.components().all(|c| matches!(c, Component::Normal(_)));
                if depth == 0 || !plain || has_nul(rel) {
                    return Err(format!("{at}: not a plain relative path"));
                }
                if depth > MAX_DEPTH {
                    return Err(format!("{at}: nested deeper than {MAX_DEPTH}"));
                }
                if previous.is_some_and(|p| p >= rel) {
                    return Err(format!("{at}: entries out of order or repeated"));
                }
                if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty())
                    && !dirs.contains(parent)
                {
                    return Err(format!("{at}: its directory is not listed before it"));
                }
                validate_state(&entry.state, false).map_err(|e| format!("{at}: {e}"))?;
                if matches!(entry.state, PathState::Dir { .. }) {
                    dirs.insert(rel);
                }
                previous = Some(rel);
            }
        }
    }
    Ok(())
}

fn validate_state(state: &PathState, top: bool) -> Result<(), String> {
    match state {
        PathState::Absent if !top => Err("an entry cannot be absent".into()),
        PathState::File { mode, .. } | PathState::Dir { mode, .. } if *mode > 0o7777 => {
            Err(format!("mode {mode:o} is not permission bits"))
        }
        PathState::Dir { entries, .. } if !top && !entries.is_empty() => {
            Err("a nested directory lists entries of its own".into())
        }
        PathState::Symlink { target } if target.as_os_str().is_empty() || has_nul(target) => {
            Err("a symlink target is empty or contains a NUL byte".into())
        }
        _ => Ok(()),
    }
}

fn has_nul(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().contains(&0)
}

/// A path's state without its directory entries: one row of a flattened capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Node<'a> {
    Absent,
    File {
        hash: &'a ObjectHash,
        size: u64,
        mode: u32,
    },
    Dir {
        mode: u32,
    },
    Symlink {
        target: &'a Path,
    },
    Skipped {
        reason: &'a SkipReason,
    },
}

impl<'a> Node<'a> {
    pub(crate) fn of(state: &'a PathState) -> Node<'a> {
        match state {
            PathState::Absent => Node::Absent,
            PathState::File { hash, size, mode } => Node::File {
                hash,
                size: *size,
                mode: *mode,
            },
            PathState::Dir { mode, .. } => Node::Dir { mode: *mode },
            PathState::Symlink { target } => Node::Symlink { target },
            PathState::Skipped { reason } => Node::Skipped { reason },
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Node::Absent => "absent",
            Node::File { .. } => "a file",
            Node::Dir { .. } => "a directory",
            Node::Symlink { .. } => "a symlink",
            Node::Skipped { .. } => "not inspected",
        }
    }

    /// Whether two states are known to be the same. Anything skipped is unknown, except that
    /// one special file (a socket, say) is as good as another of its kind.
    pub(crate) fn same_as(self, other: Node<'_>) -> bool {
        match (self, other) {
            (Node::Skipped { reason: a }, Node::Skipped { reason: b }) => {
                matches!((a, b), (SkipReason::Special { kind: x }, SkipReason::Special { kind: y }) if x == y)
            }
            (Node::Skipped { .. }, _) | (_, Node::Skipped { .. }) => false,
            (Node::Absent, Node::Absent) => true,
            (
                Node::File {
                    hash: h1, mode: m1, ..
                },
                Node::File {
                    hash: h2, mode: m2, ..
                },
            ) => h1 == h2 && m1 == m2,
            (Node::Dir { mode: a }, Node::Dir { mode: b }) => a == b,
            (Node::Symlink { target: a }, Node::Symlink { target: b }) => a == b,
            _ => false,
        }
    }
}

/// A capture as rows: the path itself, then each directory entry joined onto it.
pub(crate) fn flatten<'a>(path: &Path, state: &'a PathState) -> Vec<(PathBuf, Node<'a>)> {
    let mut rows = vec![(path.to_path_buf(), Node::of(state))];
    if let PathState::Dir { entries, .. } = state {
        rows.extend(
            entries
                .iter()
                .map(|e| (path.join(&e.path), Node::of(&e.state))),
        );
    }
    rows
}

/// Whether two captures of the same path are known to be identical.
pub(crate) fn same_tree(path: &Path, a: &PathState, b: &PathState) -> bool {
    let a = flatten(path, a);
    let b = flatten(path, b);
    a.len() == b.len()
        && a.iter()
            .zip(&b)
            .all(|((pa, na), (pb, nb))| pa == pb && na.same_as(*nb))
}

/// A path that is no longer as the action left it, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub path: PathBuf,
    pub what: String,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
    }
}

/// Most changes described under one path; the rest are counted.
const MAX_CHANGES_PER_PATH: usize = 20;

/// How `now` differs from `after` (what the action left), one line per differing path.
pub(crate) fn changes_since(path: &Path, after: &PathState, now: &PathState) -> Vec<Change> {
    use std::collections::BTreeMap;
    let after: BTreeMap<PathBuf, Node<'_>> = flatten(path, after).into_iter().collect();
    let now: BTreeMap<PathBuf, Node<'_>> = flatten(path, now).into_iter().collect();
    let keys: BTreeSet<&PathBuf> = after.keys().chain(now.keys()).collect();
    let mut changes = Vec::new();
    let mut more = 0usize;
    for key in keys {
        let a = after.get(key).copied().unwrap_or(Node::Absent);
        let b = now.get(key).copied().unwrap_or(Node::Absent);
        if a.same_as(b) {
            continue;
        }
        if changes.len() == MAX_CHANGES_PER_PATH {
            more += 1;
            continue;
        }
        changes.push(Change {
            path: key.clone(),
            what: describe(a, b),
        });
    }
    if more > 0 {
        changes.push(Change {
            path: path.to_path_buf(),
            what: format!("and {more} more changes beneath it"),
        });
    }
    changes
}

fn describe(after: Node<'_>, now: Node<'_>) -> String {
    match (after, now) {
        (Node::Skipped { reason }, _) | (_, Node::Skipped { reason }) => {
            format!("cannot tell whether it changed since the action: {reason}")
        }
        (Node::Absent, now) => format!("created since the action (now {})", now.noun()),
        (_, Node::Absent) => "deleted since the action".into(),
        (
            Node::File {
                hash: h1,
                size: s1,
                mode: m1,
            },
            Node::File {
                hash: h2,
                size: s2,
                mode: m2,
            },
        ) => {
            let mode = format!("mode {m1:04o} -> {m2:04o}");
            match (h1 == h2, m1 == m2) {
                (false, true) => format!("content changed since the action (size {s1} -> {s2})"),
                (false, false) => {
                    format!("content changed since the action (size {s1} -> {s2}), {mode}")
                }
                _ => format!("{mode} since the action"),
            }
        }
        (Node::Dir { mode: m1 }, Node::Dir { mode: m2 }) => {
            format!("mode {m1:04o} -> {m2:04o} since the action")
        }
        (Node::Symlink { target: t1 }, Node::Symlink { target: t2 }) => format!(
            "symlink now points to {} (was {} after the action)",
            t2.display(),
            t1.display()
        ),
        (after, now) => format!(
            "was {} after the action, is now {}",
            after.noun(),
            now.noun()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let bytes = [0u8, 1, 0x7f, 0x80, 0xff];
        assert_eq!(unhex(&hex(&bytes)).as_deref(), Some(&bytes[..]));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn ids_cannot_name_paths() {
        assert!(SnapshotId::parse("../../etc/passwd").is_err());
        assert!(SnapshotId::parse(&"A".repeat(64)).is_err());
        assert!(SnapshotId::parse(&"a".repeat(64)).is_ok());
    }

    #[test]
    fn entries_out_of_order_or_outside_a_listed_directory_are_refused() {
        let file = PathState::File {
            hash: ObjectHash::from_digest(&[0; 32]),
            size: 0,
            mode: 0o644,
        };
        let dir = |paths: &[&str]| Capture {
            path: "/d".into(),
            state: PathState::Dir {
                mode: 0o755,
                entries: paths
                    .iter()
                    .map(|p| DirEntry {
                        path: p.into(),
                        state: file.clone(),
                    })
                    .collect(),
            },
        };
        assert!(validate(&[dir(&["a", "b"])]).is_ok());
        assert!(validate(&[dir(&["b", "a"])]).is_err());
        assert!(validate(&[dir(&["x/a"])]).is_err());
        assert!(validate(&[dir(&["../a"])]).is_err());
        assert!(validate(&[dir(&["/a"])]).is_err());
        assert!(
            validate(&[Capture {
                path: "rel".into(),
                state: PathState::Absent
            }])
            .is_err()
        );
    }
}
