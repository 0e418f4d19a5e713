//! Undo: putting every path of a snapshot back. Everything is checked before anything is
//! written, so a conflict or a damaged object found on the last path cannot leave the first
//! ones already rewritten.

use crate::capture::{self, HashOnly};
use crate::state::{
    Change, Node, ObjectHash, Observation, PathState, SkipReason, Snapshot, changes_since, flatten,
    same_tree,
};
use crate::store::{BackupStore, sync_dir, unique_name};
use crate::{BackupError, RestoreError};
use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What a restore did, path by path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    pub steps: Vec<Step>,
}

impl fmt::Display for Restored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for step in &self.steps {
            writeln!(f, "{step}")?;
        }
        Ok(())
    }
}

/// One thing done to one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub path: PathBuf,
    pub did: Did,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.did)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Did {
    /// Already as in the snapshot.
    Unchanged,
    /// Content written back (and its mode).
    WroteFile {
        size: u64,
    },
    /// Only the permission bits differed.
    SetMode {
        mode: u32,
    },
    CreatedDir,
    /// A directory the path's parent needed, which had been removed.
    CreatedParents,
    Linked {
        target: PathBuf,
    },
    /// Something the snapshot says was not there.
    Removed,
    /// Not backed up, so left as it is now; only with `force`.
    LeftAsIs {
        reason: SkipReason,
    },
}

impl fmt::Display for Did {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Did::Unchanged => f.write_str("already as backed up"),
            Did::WroteFile { size } => write!(f, "restored the file ({size} bytes)"),
            Did::SetMode { mode } => write!(f, "restored mode {mode:04o}"),
            Did::CreatedDir => f.write_str("recreated the directory"),
            Did::CreatedParents => f.write_str("recreated the missing directory"),
            Did::Linked { target } => write!(f, "restored the symlink to {}", target.display()),
            Did::Removed => f.write_str("removed (it did not exist before the action)"),
            Did::LeftAsIs { reason } => write!(f, "left as it is, not backed up: {reason}"),
        }
    }
}

impl BackupStore {
    /// Puts every path in `snapshot` back as it was. `after` is what the action left (from
    /// [`BackupStore::observe`]); a path that differs from it now was changed by someone else
    /// since, and restoring would destroy that change, so the restore refuses unless `force`.
    /// Without `after` it cannot tell, and refuses likewise. `force` also restores a snapshot
    /// with paths that were not backed up, leaving those as they are. A damaged or missing
    /// object is always refused.
    pub fn restore(
        &self,
        snapshot: &Snapshot,
        after: Option<&Observation>,
        force: bool,
    ) -> Result<Restored, RestoreError> {
        let _lock = self.lock(false)?;
        self.verify(snapshot)?;

        let now: Vec<PathState> = snapshot
            .paths
            .iter()
            .map(|c| capture::capture(&c.path, &snapshot.limits, &mut HashOnly))
            .collect();

        if !force {
            if after.is_none() {
                return Err(RestoreError::AfterUnknown);
            }
            let mut missing = Vec::new();
            for capture in &snapshot.paths {
                for (path, node) in flatten(&capture.path, &capture.state) {
                    if let Node::Skipped { reason } = node {
                        missing.push(Change {
                            path,
                            what: format!("not backed up: {reason}"),
                        });
                    }
                }
            }
            if !missing.is_empty() {
                return Err(RestoreError::NotBackedUp { paths: missing });
            }
            let mut changes = Vec::new();
            for (capture, now) in snapshot.paths.iter().zip(&now) {
                if same_tree(&capture.path, &capture.state, now) {
                    continue; // Already as backed up: nothing would be overwritten.
                }
                match after.and_then(|a| a.get(&capture.path)) {
                    Some(left) => changes.extend(changes_since(&capture.path, left, now)),
                    None => changes.push(Change {
                        path: capture.path.clone(),
                        what: "its state after the action was not recorded".into(),
                    }),
                }
            }
            if !changes.is_empty() {
                return Err(RestoreError::ChangedSince { changes });
            }
        }

        let mut writer = Writer {
            store: self,
            done: Restored::default(),
        };
        for (capture, now) in snapshot.paths.iter().zip(&now) {
            if same_tree(&capture.path, &capture.state, now) {
                writer.did(&capture.path, Did::Unchanged);
                continue;
            }
            let before = writer.done.steps.len();
            if let Err((path, source)) = writer.put_back(&capture.path, &capture.state, now) {
                return Err(RestoreError::Io {
                    path,
                    source,
                    done: writer.done,
                });
            }
            if writer.done.steps.len() == before {
                writer.did(&capture.path, Did::Unchanged);
            }
        }
        Ok(writer.done)
    }
}

type Failed = (PathBuf, io::Error);

fn at(path: &Path) -> impl FnOnce(io::Error) -> Failed + '_ {
    move |e| (path.to_path_buf(), e)
}

struct Writer<'a> {
    store: &'a BackupStore,
    done: Restored,
}

impl Writer<'_> {
    fn did(&mut self, path: &Path, did: Did) {
        self.done.steps.push(Step {
            path: path.to_path_buf(),
            did,
        });
    }

    fn put_back(&mut self, path: &Path, target: &PathState, now: &PathState) -> Result<(), Failed> {
        match target {
            PathState::Skipped { reason } => {
                self.did(
                    path,
                    Did::LeftAsIs {
                        reason: reason.clone(),
                    },
                );
                Ok(())
            }
            PathState::Absent => {
                if exists(path) {
                    remove_any(path).map_err(at(path))?;
                    self.did(path, Did::Removed);
                }
                Ok(())
            }
            PathState::File { .. } | PathState::Symlink { .. } => {
                self.make_parent(path)?;
                self.put_leaf(path, Node::of(target), Node::of(now))
            }
            PathState::Dir { mode, entries } => {
                self.make_parent(path)?;
                let now_rows: BTreeMap<PathBuf, Node<'_>> =
                    flatten(path, now).into_iter().collect();
                let now_of = |p: &Path| now_rows.get(p).copied().unwrap_or(Node::Absent);
                self.put_dir(path, *mode, now_of(path))?;
                let wanted: BTreeMap<&Path, &PathState> = entries
                    .iter()
                    .map(|e| (e.path.as_path(), &e.state))
                    .collect();
                self.remove_extras(path, &wanted)?;
                for entry in entries {
                    let full = path.join(&entry.path);
                    match &entry.state {
                        PathState::Dir { mode, .. } => self.put_dir(&full, *mode, now_of(&full))?,
                        PathState::Skipped { reason } => self.did(
                            &full,
                            Did::LeftAsIs {
                                reason: reason.clone(),
                            },
                        ),
                        state => self.put_leaf(&full, Node::of(state), now_of(&full))?,
                    }
                }
                // Exact modes last, deepest first: a read-only directory must stay writable
                // until everything inside it is back.
                let dirs = std::iter::once((path.to_path_buf(), *mode)).chain(
                    entries.iter().filter_map(|e| match e.state {
                        PathState::Dir { mode, .. } => Some((path.join(&e.path), mode)),
                        _ => None,
                    }),
                );
                let dirs: Vec<(PathBuf, u32)> = dirs.collect();
                for (dir, mode) in dirs.iter().rev() {
                    set_mode(dir, *mode).map_err(at(dir))?;
                }
                Ok(())
            }
        }
    }

    /// A file or symlink, written only if it differs from what is there now.
    fn put_leaf(&mut self, path: &Path, target: Node<'_>, now: Node<'_>) -> Result<(), Failed> {
        if target.same_as(now) {
            return Ok(());
        }
        match (target, now) {
            (
                Node::File { hash, mode, .. },
                Node::File {
                    hash: now_hash,
                    mode: now_mode,
                    ..
                },
            ) if hash == now_hash && mode != now_mode => {
                set_mode(path, mode).map_err(at(path))?;
                self.did(path, Did::SetMode { mode });
            }
            (Node::File { hash, size, mode }, _) => {
                self.write_file(path, hash, size, mode)?;
                self.did(path, Did::WroteFile { size });
            }
            (Node::Symlink { target }, _) => {
                let tmp = sibling(path)?;
                std::os::unix::fs::symlink(target, &tmp).map_err(at(path))?;
                replace(&tmp, path)?;
                self.did(
                    path,
                    Did::Linked {
                        target: target.to_path_buf(),
                    },
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// A directory, made writable by its owner until the final pass sets its exact mode.
    fn put_dir(&mut self, path: &Path, mode: u32, now: Node<'_>) -> Result<(), Failed> {
        let is_dir = path.symlink_metadata().is_ok_and(|m| m.is_dir());
        if !is_dir {
            if exists(path) {
                remove_any(path).map_err(at(path))?;
            }
            fs::create_dir(path).map_err(at(path))?;
            self.did(path, Did::CreatedDir);
        } else if let Node::Dir { mode: now_mode } = now
            && now_mode != mode
        {
            self.did(path, Did::SetMode { mode });
        }
        set_mode(path, mode | 0o700).map_err(at(path))
    }

    /// Removes whatever is under `root` that the snapshot does not list, without descending
    /// into anything the snapshot skipped (its contents are unknown, so nothing there is
    /// "extra").
    fn remove_extras(
        &mut self,
        root: &Path,
        wanted: &BTreeMap<&Path, &PathState>,
    ) -> Result<(), Failed> {
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            let dir = root.join(&rel);
            let reading = match fs::read_dir(&dir) {
                Ok(reading) => reading,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err((dir, e)),
            };
            for item in reading {
                let item = item.map_err(at(&dir))?;
                let child = rel.join(item.file_name());
                let full = root.join(&child);
                match wanted.get(child.as_path()) {
                    None => {
                        remove_any(&full).map_err(at(&full))?;
                        self.did(&full, Did::Removed);
                    }
                    Some(PathState::Dir { mode, .. })
                        if full.symlink_metadata().is_ok_and(|m| m.is_dir()) =>
                    {
                        set_mode(&full, mode | 0o700).map_err(at(&full))?;
                        stack.push(child);
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }

    fn make_parent(&mut self, path: &Path) -> Result<(), Failed> {
        if let Some(parent) = path.parent()
            && !exists(parent)
        {
            fs::create_dir_all(parent).map_err(at(parent))?;
            self.did(parent, Did::CreatedParents);
        }
        Ok(())
    }

    /// Copies the object into a temporary file beside `path`, checking its hash on the way,
    /// then renames it over `path`: a reader sees the old file or the whole restored one.
    fn write_file(
        &mut self,
        path: &Path,
        hash: &ObjectHash,
        size: u64,
        mode: u32,
    ) -> Result<(), Failed> {
        let object = self.store.object_path(hash);
        let mut source = File::open(&object).map_err(at(&object))?;
        let tmp = sibling(path)?;
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(at(path))?;
        let copied = capture::hash_reader(&mut source, size, |chunk| out.write_all(chunk));
        let checked = match copied {
            Ok(Some((actual, read))) if actual == *hash && read == size => Ok(()),
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("backup object {hash} changed while being restored"),
            )),
            Err(e) => Err(e),
        };
        let result = checked
            .and_then(|()| out.set_permissions(fs::Permissions::from_mode(mode)))
            .and_then(|()| out.sync_all());
        if let Err(e) = result {
            let _ = fs::remove_file(&tmp);
            return Err((path.to_path_buf(), e));
        }
        replace(&tmp, path)
    }
}

/// Renames `tmp` over `path`, first removing a directory in the way (rename cannot replace
/// one with a file), then makes the rename durable.
fn replace(tmp: &Path, path: &Path) -> Result<(), Failed> {
    if path.symlink_metadata().is_ok_and(|m| m.is_dir())
        && let Err(e) = remove_tree(path)
    {
        let _ = fs::remove_file(tmp);
        return Err((path.to_path_buf(), e));
    }
    if let Err(e) = fs::rename(tmp, path) {
        let _ = fs::remove_file(tmp);
        return Err((path.to_path_buf(), e));
    }
    match path.parent() {
        Some(parent) => sync_dir(parent).map_err(at(parent)),
        None => Ok(()),
    }
}

/// A temporary name in the same directory as `path`, so the final rename never crosses a
/// filesystem.
fn sibling(path: &Path) -> Result<PathBuf, Failed> {
    match path.parent() {
        Some(parent) => Ok(parent.join(unique_name("restore"))),
        None => Err((
            path.to_path_buf(),
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot replace the root directory",
            ),
        )),
    }
}

fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

/// Removes a file, symlink (never what it points to) or directory tree.
fn remove_any(path: &Path) -> io::Result<()> {
    if path.symlink_metadata()?.is_dir() {
        remove_tree(path)
    } else {
        fs::remove_file(path)
    }
}

/// `remove_dir_all`, which also copes with read-only directories inside the tree by making
/// them writable first.
fn remove_tree(path: &Path) -> io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            let mut stack = vec![path.to_path_buf()];
            while let Some(dir) = stack.pop() {
                set_mode(&dir, 0o700)?;
                for item in fs::read_dir(&dir)? {
                    let item = item?;
                    if item.file_type()?.is_dir() {
                        stack.push(item.path());
                    }
                }
            }
            fs::remove_dir_all(path)
        }
        other => other,
    }
}

impl From<BackupError> for RestoreError {
    fn from(e: BackupError) -> RestoreError {
        RestoreError::Store(e)
    }
}
