//! A scratch directory with a backup store beside it, and a way to read a whole tree back so
//! tests can say "exactly as before" in one assertion.

#![allow(dead_code)]

use nightwatch_backup::{BackupStore, Limits, Observation, Snapshot};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub const NOW_MS: i64 = 1_771_039_042_000;
pub const DAY_MS: i64 = 24 * 60 * 60 * 1000;

pub struct Scratch {
    _dir: tempfile::TempDir,
    /// Where the "server's" files live.
    pub files: PathBuf,
    pub store: BackupStore,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::tempdir().expect("temp dir");
        let files = dir.path().join("srv");
        fs::create_dir(&files).expect("srv");
        let store = BackupStore::open(&dir.path().join("backups")).expect("open store");
        Scratch {
            _dir: dir,
            files,
            store,
        }
    }

    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.files.join(rel)
    }

    /// The gate's two calls around an action: snapshot before, observe after.
    pub fn around<P: AsRef<Path>>(
        &self,
        paths: &[P],
        action: impl FnOnce(),
    ) -> (Snapshot, Observation) {
        self.around_with(paths, &Limits::default(), action)
    }

    pub fn around_with<P: AsRef<Path>>(
        &self,
        paths: &[P],
        limits: &Limits,
        action: impl FnOnce(),
    ) -> (Snapshot, Observation) {
        let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        let snapshot = self
            .store
            .snapshot(&paths, limits, NOW_MS)
            .expect("snapshot");
        action();
        let after = BackupStore::observe(&snapshot.paths(), limits);
        (snapshot, after)
    }

    pub fn tree(&self) -> Tree {
        read_tree(&self.files)
    }
}

/// What a test compares: every path under a root with its kind, content and mode.
pub type Tree = BTreeMap<PathBuf, Node>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    File { content: Vec<u8>, mode: u32 },
    Dir { mode: u32 },
    Link { target: PathBuf },
}

pub fn read_tree(root: &Path) -> Tree {
    let mut tree = Tree::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for item in fs::read_dir(&dir).expect("read_dir") {
            let path = item.expect("entry").path();
            let meta = path.symlink_metadata().expect("lstat");
            let rel = path.strip_prefix(root).expect("under root").to_path_buf();
            let mode = meta.mode() & 0o7777;
            let node = if meta.file_type().is_symlink() {
                Node::Link {
                    target: fs::read_link(&path).expect("readlink"),
                }
            } else if meta.is_dir() {
                stack.push(path.clone());
                Node::Dir { mode }
            } else {
                Node::File {
                    content: fs::read(&path).expect("read"),
                    mode,
                }
            };
            tree.insert(rel, node);
        }
    }
    tree
}

pub fn write(path: &Path, content: &[u8], mode: u32) {
    fs::write(path, content).expect("write");
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}
