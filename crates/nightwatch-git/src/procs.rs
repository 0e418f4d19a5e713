//! Which processes sit inside a worktree: every `/proc/<pid>/cwd`, read once per listing.
//!
//! Processes of other users are invisible without privilege (their `cwd` link cannot be
//! read); the janitor runs as the owner of the worktrees, which is whom it protects.

use nightwatch_janitor::ProcessUse;
use std::path::{Path, PathBuf};

/// A process and its working directory.
pub(crate) struct Cwd {
    pub pid: u32,
    pub cwd: PathBuf,
}

/// Every readable process working directory, except this process's own.
pub(crate) fn cwds() -> Vec<Cwd> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            if pid == me {
                return None;
            }
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            // A directory removed under the process reads as `/old/path (deleted)`.
            if cwd.to_str().is_some_and(|s| s.ends_with(" (deleted)")) {
                return None;
            }
            Some(Cwd { pid, cwd })
        })
        .collect()
}

/// The processes whose cwd is inside `worktree` and not inside a deeper one of `others`
/// (a worktree nested in the main checkout is its own).
pub(crate) fn users(cwds: &[Cwd], worktree: &Path, others: &[PathBuf]) -> Vec<ProcessUse> {
    let deeper: Vec<&PathBuf> = others
        .iter()
        .filter(|o| o.as_path() != worktree && o.starts_with(worktree))
        .collect();
    let mut users: Vec<ProcessUse> = cwds
        .iter()
        .filter(|c| c.cwd.starts_with(worktree) && !deeper.iter().any(|d| c.cwd.starts_with(d)))
        .map(|c| ProcessUse {
            pid: c.pid,
            command: command(c.pid),
        })
        .collect();
    users.sort_by_key(|u| u.pid);
    users
}

fn command(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "?".to_owned())
}
