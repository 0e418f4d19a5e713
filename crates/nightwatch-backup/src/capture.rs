//! Reading what is on disk into [`PathState`]s. The same walk serves a snapshot (which stores
//! each file's content) and an observation (which only hashes it), so the two always agree on
//! what they skip.

use crate::limits::Limits;
use crate::state::{DirEntry, MAX_DEPTH, ObjectHash, PathState, SkipReason};
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where a file's bytes go while they are hashed.
pub(crate) trait Sink {
    /// Reads `file` to its end, at most `limit` bytes. `Ok(None)` if it holds more.
    fn put(&mut self, file: &mut File, limit: u64) -> io::Result<Option<(ObjectHash, u64)>>;
}

/// Hashes and forgets: what an observation needs.
pub(crate) struct HashOnly;

impl Sink for HashOnly {
    fn put(&mut self, file: &mut File, limit: u64) -> io::Result<Option<(ObjectHash, u64)>> {
        hash_reader(file, limit, |_| Ok(()))
    }
}

/// Reads `reader` in chunks into `digest` and `also`, stopping with `None` past `limit`.
pub(crate) fn hash_reader(
    reader: &mut impl Read,
    limit: u64,
    mut also: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<Option<(ObjectHash, u64)>> {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total: u64 = 0;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        total = total.saturating_add(n as u64);
        if total > limit {
            return Ok(None);
        }
        let chunk = buf.get(..n).unwrap_or_default();
        digest.update(chunk);
        also(chunk)?;
    }
    Ok(Some((ObjectHash::from_digest(&digest.finalize()), total)))
}

/// The state of `path` now, not following a symlink at `path` itself.
pub(crate) fn capture(path: &Path, limits: &Limits, sink: &mut dyn Sink) -> PathState {
    if !path.is_absolute() {
        return PathState::Skipped {
            reason: SkipReason::NotAbsolute,
        };
    }
    let meta = match path.symlink_metadata() {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return PathState::Absent,
        Err(e) => return unreadable(e),
    };
    if meta.is_dir() {
        capture_dir(path, &meta, limits, sink)
    } else {
        capture_leaf(path, &meta, limits, sink)
    }
}

fn unreadable(e: io::Error) -> PathState {
    PathState::Skipped {
        reason: SkipReason::Unreadable {
            error: e.to_string(),
        },
    }
}

/// A file, symlink or special file.
fn capture_leaf(path: &Path, meta: &Metadata, limits: &Limits, sink: &mut dyn Sink) -> PathState {
    let kind = meta.file_type();
    if kind.is_symlink() {
        return match std::fs::read_link(path) {
            Ok(target) => PathState::Symlink { target },
            Err(e) => unreadable(e),
        };
    }
    if kind.is_file() {
        return capture_file(path, meta, limits.max_file_bytes.0, sink);
    }
    let kind = if kind.is_fifo() {
        "named pipe"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_block_device() {
        "block device"
    } else if kind.is_char_device() {
        "character device"
    } else {
        "special file"
    };
    PathState::Skipped {
        reason: SkipReason::Special { kind: kind.into() },
    }
}

fn capture_file(path: &Path, meta: &Metadata, limit: u64, sink: &mut dyn Sink) -> PathState {
    let too_large = |size| PathState::Skipped {
        reason: SkipReason::FileTooLarge { size, limit },
    };
    if meta.len() > limit {
        return too_large(meta.len());
    }
    // O_NOFOLLOW and O_NONBLOCK: if the path became a symlink or a pipe since the lstat, fail
    // or return at once instead of reading through the link or blocking on the pipe.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let mut file = match opened {
        Ok(file) => file,
        Err(e) => return unreadable(e),
    };
    let meta = match file.metadata() {
        Ok(meta) if meta.is_file() => meta,
        Ok(_) => {
            return unreadable(io::Error::other(
                "it stopped being a regular file while read",
            ));
        }
        Err(e) => return unreadable(e),
    };
    match sink.put(&mut file, limit) {
        Ok(Some((hash, size))) => PathState::File {
            hash,
            size,
            mode: meta.mode() & 0o7777,
        },
        Ok(None) => too_large(meta.len().max(limit.saturating_add(1))),
        Err(e) => unreadable(e),
    }
}

/// A directory and everything beneath it, or `Skipped` if it is over a limit. The tree is
/// listed (metadata only) before any content is read, so an oversized directory costs a
/// bounded walk and stores nothing.
fn capture_dir(root: &Path, meta: &Metadata, limits: &Limits, sink: &mut dyn Sink) -> PathState {
    let skipped = |reason| PathState::Skipped { reason };
    let mut listed: Vec<(PathBuf, Metadata)> = Vec::new();
    let mut unreadable_dirs: Vec<(PathBuf, String)> = Vec::new();
    let mut bytes: u64 = 0;
    let mut stack: Vec<PathBuf> = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let reading = match std::fs::read_dir(root.join(&rel)) {
            Ok(reading) => reading,
            Err(e) if rel.as_os_str().is_empty() => return unreadable(e),
            Err(e) => {
                unreadable_dirs.push((rel, e.to_string()));
                continue;
            }
        };
        for item in reading {
            let item = match item {
                Ok(item) => item,
                Err(e) if rel.as_os_str().is_empty() => return unreadable(e),
                Err(e) => {
                    unreadable_dirs.push((rel.clone(), e.to_string()));
                    break;
                }
            };
            let child = rel.join(item.file_name());
            let child_meta = match item.path().symlink_metadata() {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) if rel.as_os_str().is_empty() => return unreadable(e),
                Err(e) => {
                    unreadable_dirs.push((rel.clone(), e.to_string()));
                    break;
                }
            };
            if listed.len() as u64 >= limits.max_dir_entries {
                return skipped(SkipReason::DirTooManyEntries {
                    limit: limits.max_dir_entries,
                });
            }
            if child_meta.is_file() {
                bytes = bytes.saturating_add(child_meta.len());
                if bytes > limits.max_dir_bytes.0 {
                    return skipped(SkipReason::DirTooManyBytes {
                        limit: limits.max_dir_bytes.0,
                    });
                }
            }
            if child_meta.is_dir() {
                if child.components().count() >= MAX_DEPTH {
                    return skipped(SkipReason::TooDeep {
                        limit: MAX_DEPTH as u64,
                    });
                }
                stack.push(child.clone());
            }
            listed.push((child, child_meta));
        }
    }
    // Path's ordering is by component, which is pre-order: a directory before its contents.
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    let mut entries = Vec::with_capacity(listed.len());
    for (rel, child_meta) in listed {
        let state = if let Some((_, error)) = unreadable_dirs.iter().find(|(d, _)| *d == rel) {
            // Its contents are unknown: record the directory itself as not backed up, so a
            // restore neither recreates it half-empty nor deletes what is inside.
            PathState::Skipped {
                reason: SkipReason::Unreadable {
                    error: error.clone(),
                },
            }
        } else if child_meta.is_dir() {
            PathState::Dir {
                mode: child_meta.mode() & 0o7777,
                entries: Vec::new(),
            }
        } else {
            capture_leaf(&root.join(&rel), &child_meta, limits, sink)
        };
        entries.push(DirEntry { path: rel, state });
    }
    // A directory recorded as skipped has no entries of its own in the listing.
    let skipped_dirs: Vec<PathBuf> = entries
        .iter()
        .filter(|e| matches!(e.state, PathState::Skipped { .. }))
        .map(|e| e.path.clone())
        .collect();
    if !skipped_dirs.is_empty() {
        entries.retain(|e| {
            !skipped_dirs
                .iter()
                .any(|d| e.path != *d && e.path.starts_with(d))
        });
    }
    PathState::Dir {
        mode: meta.mode() & 0o7777,
        entries,
    }
}

/// The paths to capture for `paths`: absolute ones deduplicated and sorted, plus the file a
/// symlink among them points to, since a write through the link changes that file.
pub(crate) fn expand(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = paths.iter().map(|p| trim(p)).collect();
    for path in paths {
        let is_link = path
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink());
        if is_link
            && let Ok(target) = std::fs::canonicalize(path)
            && target.symlink_metadata().is_ok_and(|m| m.is_file())
        {
            out.push(target);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `a/b/` and `a/./b` are `a/b`: `components` normalises both.
fn trim(path: &Path) -> PathBuf {
    path.components().collect()
}
