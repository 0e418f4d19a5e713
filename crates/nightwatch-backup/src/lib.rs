//! Backups taken before an action writes, and the restore that undoes it.
//!
//! Every allowed action that writes, truncates, moves or deletes files gets a backup first, so
//! it can be undone. The gate calls [`BackupStore::snapshot`] with the paths the action names
//! and keeps the [`SnapshotId`] in the ledger record; after the action it calls
//! [`BackupStore::observe`] on [`Snapshot::paths`] and records that [`Observation`] too.
//! `nightwatch undo` then calls [`BackupStore::restore`], which puts every path back exactly
//! (content, mode, symlinks, deleted files and directories, and removes what the action
//! created) — but only if nobody changed those paths since the action. A restore that would
//! destroy someone's later work refuses and says which paths and how, unless forced. Paths too
//! large to keep are recorded as skipped with the reason, and a restore that needs them says
//! so: nothing is left out silently, because an untested restore path is not a backup.
//!
//! # On disk
//!
//! Under the store's root (`<data dir>/backups`, mode 0700 since backups of `/etc` hold
//! secrets):
//!
//! - `objects/ab/cdef…`: file contents, named by the lowercase hex SHA-256 of the content
//!   (first two digits as a directory). Written to `tmp/`, fsynced and renamed, so a crash
//!   never leaves a partial object under a real name; an object already present is not
//!   rewritten, so identical files are stored once.
//! - `snapshots/<id>.json`: one manifest per snapshot, `{"format":1,"created_ms":…,
//!   "limits":{…},"paths":[{"path":…,"state":…}]}`. The id is the SHA-256 of the manifest's
//!   bytes, so loading checks them. A path is a JSON string when it is UTF-8, else
//!   `{"hex":"…"}` of its bytes. A directory's state lists everything beneath it as a flat,
//!   pre-order list of relative paths.
//! - `pruned/<id>.json`: a tombstone per pruned snapshot (when and why), so `load` can say
//!   "pruned" rather than "not found". Tombstones are small and are kept.
//! - `tmp/`: temporary files; anything left there by a crash is removed by the next prune.
//! - `lock`: `flock`ed shared by snapshot and restore, exclusive by prune, so pruning never
//!   collects objects a snapshot is still writing or a restore is reading.
//!
//! # What a restore does not bring back
//!
//! Owner and group, timestamps, extended attributes and hard links between files are not
//! recorded. Each file is replaced atomically; a directory is restored entry by entry, not as
//! one atomic swap.

mod capture;
mod prune;
mod restore;
mod state;
mod store;

// The limits and retention a policy or config writes are pure values in nightwatch-spec.
use nightwatch_spec::backup as limits;

pub use limits::{ByteSize, Limits, Retention};
pub use prune::{KeptSnapshot, Limit, Pruned, PrunedSnapshot, UnreadableManifest};
pub use restore::{Did, Restored, Step};
pub use state::{
    Capture, Change, DirEntry, MAX_DEPTH, ObjectHash, Observation, PathState, SkipReason, Snapshot,
    SnapshotId,
};
pub use store::BackupStore;

use std::path::{Path, PathBuf};

/// Why the store could not take, load or prune a backup.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("backup store: {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot back up {path}: not an absolute path")]
    NotAbsolute { path: PathBuf },
    #[error("no snapshot {id} in the backup store")]
    NotFound { id: SnapshotId },
    #[error("snapshot {id} was pruned ({why}); its backup is gone")]
    Pruned {
        id: SnapshotId,
        pruned_ms: i64,
        why: String,
    },
    #[error("{what} is damaged: {detail}; it cannot be used for a restore")]
    Corrupt { what: String, detail: String },
}

impl BackupError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> BackupError {
        BackupError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Why a restore refused, or where it stopped.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error(
        "the state after the action was not recorded, so a restore cannot tell whether anyone \
         changed these paths since; a forced restore overwrites whatever is there now"
    )]
    AfterUnknown,
    #[error(
        "these paths changed since the action; restoring would overwrite that:\n{}\n\
         a forced restore overwrites it anyway",
        lines(changes)
    )]
    ChangedSince { changes: Vec<Change> },
    #[error(
        "the snapshot could not back up everything, so a restore would be partial:\n{}\n\
         a forced restore puts back the rest and leaves these as they are",
        lines(paths)
    )]
    NotBackedUp { paths: Vec<Change> },
    /// The snapshot or one of its objects is damaged or missing; nothing was written.
    #[error(transparent)]
    Store(BackupError),
    /// Writing failed partway; `done` lists what was already put back.
    #[error("restore stopped at {path}: {source} (after {} steps)", done.steps.len())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
        done: Restored,
    },
}

impl RestoreError {
    /// Whether forcing the restore would get past this refusal.
    pub fn force_would_restore(&self) -> bool {
        matches!(
            self,
            RestoreError::AfterUnknown
                | RestoreError::ChangedSince { .. }
                | RestoreError::NotBackedUp { .. }
        )
    }
}

fn lines(changes: &[Change]) -> String {
    changes
        .iter()
        .map(|c| format!("  {c}"))
        .collect::<Vec<_>>()
        .join("\n")
}
