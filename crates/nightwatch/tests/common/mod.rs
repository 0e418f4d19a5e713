//! Helpers shared by the binary's integration tests.

use std::path::PathBuf;

/// A fresh, empty directory for one test: its data directory or project.
pub fn scratch(suite: &str, name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("nightwatch-{suite}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}
