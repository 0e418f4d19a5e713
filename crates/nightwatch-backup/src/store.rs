//! The store on disk: objects by content hash, manifests by their own hash, tombstones for
//! pruned snapshots, and the lock that keeps pruning away from a snapshot being written.

use crate::BackupError;
use crate::capture::{self, Sink};
use crate::limits::Limits;
use crate::state::{
    self, Capture, FORMAT, Manifest, ObjectHash, Observation, Snapshot, SnapshotId,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A content-addressed backup store rooted at `<data dir>/backups`.
#[derive(Debug)]
pub struct BackupStore {
    root: PathBuf,
}

/// Why a snapshot is gone, kept after pruning so `load` can say so instead of "not found".
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Tombstone {
    pub pruned_ms: i64,
    pub created_ms: i64,
    pub why: String,
}

impl BackupStore {
    /// Opens the store, creating its directories (mode 0700: backups of `/etc` hold secrets).
    pub fn open(root: &Path) -> Result<BackupStore, BackupError> {
        let store = BackupStore {
            root: root.to_path_buf(),
        };
        for dir in [
            root.to_path_buf(),
            store.objects_dir(),
            store.snapshots_dir(),
            store.tombstones_dir(),
            store.tmp_dir(),
        ] {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .map_err(|e| BackupError::io(&dir, e))?;
        }
        Ok(store)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Backs up `paths` as they are now, before an action changes them. Every object is on
    /// disk before the manifest that names it, and the manifest is on disk before this returns,
    /// so a crash leaves either no snapshot or a whole one. Unreadable or oversized paths are
    /// recorded as skipped; only a failure to write the store itself is an error.
    pub fn snapshot(
        &self,
        paths: &[PathBuf],
        limits: &Limits,
        now_ms: i64,
    ) -> Result<Snapshot, BackupError> {
        if let Some(path) = paths.iter().find(|p| !p.is_absolute()) {
            return Err(BackupError::NotAbsolute { path: path.clone() });
        }
        let _lock = self.lock(false)?;
        let mut sink = ObjectWriter {
            store: self,
            new_dirs: BTreeSet::new(),
            error: None,
        };
        let captures: Vec<Capture> = capture::expand(paths)
            .into_iter()
            .map(|path| {
                let state = capture::capture(&path, limits, &mut sink);
                Capture { path, state }
            })
            .collect();
        if let Some(e) = sink.error.take() {
            return Err(e);
        }
        for dir in &sink.new_dirs {
            sync_dir(dir).map_err(|e| BackupError::io(dir, e))?;
        }
        let manifest = Manifest {
            format: FORMAT,
            created_ms: now_ms,
            limits: *limits,
            paths: captures,
        };
        let bytes = serde_json::to_vec(&manifest).map_err(|e| BackupError::Corrupt {
            what: "the new manifest".into(),
            detail: e.to_string(),
        })?;
        let id = SnapshotId::of(&bytes);
        let target = self.manifest_path(&id);
        if !target.exists() {
            self.write_atomically(&target, &bytes)?;
        }
        Ok(Snapshot {
            id,
            created_ms: now_ms,
            limits: *limits,
            paths: manifest.paths,
        })
    }

    /// The state of `paths` now, hashed but not stored: what the gate records after an action
    /// so a later restore can tell whether someone changed the paths since. Pass
    /// [`Snapshot::paths`] so every path the snapshot covers has an "after".
    pub fn observe(paths: &[PathBuf], limits: &Limits) -> Observation {
        Observation {
            paths: capture::expand(paths)
                .into_iter()
                .map(|path| {
                    let state = capture::capture(&path, limits, &mut capture::HashOnly);
                    Capture { path, state }
                })
                .collect(),
        }
    }

    /// The snapshot `id`, checked: its bytes must hash to its id and its paths must make sense.
    /// A pruned snapshot is reported as pruned, with when and why, not as missing.
    pub fn load(&self, id: &SnapshotId) -> Result<Snapshot, BackupError> {
        let path = self.manifest_path(id);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(match self.tombstone(id) {
                    Some(t) => BackupError::Pruned {
                        id: id.clone(),
                        pruned_ms: t.pruned_ms,
                        why: t.why,
                    },
                    None => BackupError::NotFound { id: id.clone() },
                });
            }
            Err(e) => return Err(BackupError::io(&path, e)),
        };
        parse_manifest(id, &bytes)
    }

    /// Checks that every object `snapshot` needs is present and hashes to its name, reading
    /// each in full. A restore does this before it writes anything.
    pub fn verify(&self, snapshot: &Snapshot) -> Result<(), BackupError> {
        state::validate(&snapshot.paths).map_err(|detail| BackupError::Corrupt {
            what: format!("snapshot {}", snapshot.id),
            detail,
        })?;
        let mut seen = BTreeSet::new();
        for (hash, size) in snapshot.objects() {
            if seen.insert(hash) {
                self.verify_object(hash, size)?;
            }
        }
        Ok(())
    }

    fn verify_object(&self, hash: &ObjectHash, size: u64) -> Result<(), BackupError> {
        let path = self.object_path(hash);
        let corrupt = |detail: String| BackupError::Corrupt {
            what: format!("object {hash}"),
            detail,
        };
        let mut file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(corrupt("missing from the store".into()));
            }
            Err(e) => return Err(BackupError::io(&path, e)),
        };
        match capture::hash_reader(&mut file, size, |_| Ok(())) {
            Ok(Some((actual, read))) if actual == *hash && read == size => Ok(()),
            Ok(Some((actual, read))) => Err(corrupt(format!(
                "content does not match its name (read {read} bytes hashing to {actual}, \
                 expected {size})"
            ))),
            Ok(None) => Err(corrupt(format!("longer than the {size} bytes recorded"))),
            Err(e) => Err(BackupError::io(&path, e)),
        }
    }

    /// Every stored snapshot id, read from the manifest names.
    pub fn list(&self) -> Result<Vec<SnapshotId>, BackupError> {
        let dir = self.snapshots_dir();
        let mut ids = Vec::new();
        for item in fs::read_dir(&dir).map_err(|e| BackupError::io(&dir, e))? {
            let item = item.map_err(|e| BackupError::io(&dir, e))?;
            let name = item.file_name();
            if let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| SnapshotId::parse(n).ok())
            {
                ids.push(id);
            }
        }
        ids.sort();
        Ok(ids)
    }

    pub(crate) fn objects_dir(&self) -> PathBuf {
        self.root.join("objects")
    }

    pub(crate) fn snapshots_dir(&self) -> PathBuf {
        self.root.join("snapshots")
    }

    pub(crate) fn tombstones_dir(&self) -> PathBuf {
        self.root.join("pruned")
    }

    pub(crate) fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    pub(crate) fn manifest_path(&self, id: &SnapshotId) -> PathBuf {
        self.snapshots_dir().join(format!("{id}.json"))
    }

    pub(crate) fn tombstone_path(&self, id: &SnapshotId) -> PathBuf {
        self.tombstones_dir().join(format!("{id}.json"))
    }

    /// `objects/ab/cdef…`: two hex digits of fan-out keep directories small.
    pub(crate) fn object_path(&self, hash: &ObjectHash) -> PathBuf {
        let (fan, rest) = hash.as_str().split_at(2);
        self.objects_dir().join(fan).join(rest)
    }

    fn tombstone(&self, id: &SnapshotId) -> Option<Tombstone> {
        let bytes = fs::read(self.tombstone_path(id)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// A shared lock for writing snapshots and restoring, exclusive for pruning: pruning must
    /// not collect an object a snapshot in progress has written but not yet named.
    pub(crate) fn lock(&self, exclusive: bool) -> Result<File, BackupError> {
        let path = self.root.join("lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| BackupError::io(&path, e))?;
        loop {
            // The same `flock` the sweep's lock takes, through std; released when `file` closes.
            let locked = if exclusive {
                file.lock()
            } else {
                file.lock_shared()
            };
            match locked {
                Ok(()) => return Ok(file),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(BackupError::io(&path, e)),
            }
        }
    }

    /// Writes `bytes` to a temporary file, fsyncs it, renames it to `target` and fsyncs the
    /// directory: `target` is never seen half-written.
    pub(crate) fn write_atomically(&self, target: &Path, bytes: &[u8]) -> Result<(), BackupError> {
        let (tmp, mut file) = self.tmp_file()?;
        let result = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| fs::rename(&tmp, target));
        if let Err(e) = result {
            let _ = fs::remove_file(&tmp);
            return Err(BackupError::io(target, e));
        }
        let dir = target.parent().unwrap_or(&self.root);
        sync_dir(dir).map_err(|e| BackupError::io(dir, e))
    }

    fn tmp_file(&self) -> Result<(PathBuf, File), BackupError> {
        let path = self.tmp_dir().join(unique_name("tmp"));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| BackupError::io(&path, e))?;
        Ok((path, file))
    }
}

pub(crate) fn parse_manifest(id: &SnapshotId, bytes: &[u8]) -> Result<Snapshot, BackupError> {
    let corrupt = |detail: String| BackupError::Corrupt {
        what: format!("snapshot {id}"),
        detail,
    };
    let actual = SnapshotId::of(bytes);
    if actual != *id {
        return Err(corrupt(format!(
            "the manifest's bytes hash to {actual}, not to its id"
        )));
    }
    let manifest: Manifest = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    if manifest.format != FORMAT {
        return Err(corrupt(format!(
            "manifest format {} is not one this version reads ({FORMAT})",
            manifest.format
        )));
    }
    state::validate(&manifest.paths).map_err(corrupt)?;
    Ok(Snapshot {
        id: id.clone(),
        created_ms: manifest.created_ms,
        limits: manifest.limits,
        paths: manifest.paths,
    })
}

/// Streams a file into a temporary object, then renames it to its hash. An object already
/// present is left as it is: same name, same content.
struct ObjectWriter<'a> {
    store: &'a BackupStore,
    /// Fan-out directories that gained an object: fsynced once, before the manifest is written.
    new_dirs: BTreeSet<PathBuf>,
    /// The first failure to write the store; a failure to read a source is a skip instead.
    error: Option<BackupError>,
}

impl Sink for ObjectWriter<'_> {
    fn put(&mut self, file: &mut File, limit: u64) -> io::Result<Option<(ObjectHash, u64)>> {
        if self.error.is_some() {
            return Err(io::Error::other("the backup store failed earlier"));
        }
        let (tmp, mut out) = match self.store.tmp_file() {
            Ok(pair) => pair,
            Err(e) => {
                self.error = Some(e);
                return Err(io::Error::other("cannot write the backup store"));
            }
        };
        let mut write_failed = None;
        let hashed = capture::hash_reader(file, limit, |chunk| {
            out.write_all(chunk).inspect_err(|e| {
                write_failed = Some(io::Error::new(e.kind(), e.to_string()));
            })
        });
        let finish = |this: &mut Self, e: io::Error| {
            let _ = fs::remove_file(&tmp);
            this.error = Some(BackupError::io(&tmp, e));
            Err(io::Error::other("cannot write the backup store"))
        };
        if let Some(e) = write_failed {
            return finish(self, e);
        }
        let (hash, size) = match hashed {
            Ok(Some(found)) => found,
            other => {
                let _ = fs::remove_file(&tmp);
                return other;
            }
        };
        let target = self.store.object_path(&hash);
        if target.exists() {
            let _ = fs::remove_file(&tmp);
            return Ok(Some((hash, size)));
        }
        if let Err(e) = out.sync_all() {
            return finish(self, e);
        }
        let dir = target.parent().unwrap_or(&self.store.root).to_path_buf();
        if let Err(e) = fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
        {
            return finish(self, e);
        }
        if let Err(e) = fs::rename(&tmp, &target) {
            return finish(self, e);
        }
        self.new_dirs.insert(dir);
        Ok(Some((hash, size)))
    }
}

/// Makes a rename in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// A name no other writer in this or another process is using: pid plus a counter.
pub(crate) fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(".nightwatch-{prefix}-{}-{n}", std::process::id())
}
