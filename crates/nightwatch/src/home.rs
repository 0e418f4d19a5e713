//! The data directory: `$NIGHTWATCH_HOME` when set, otherwise the user's state directory
//! (`/var/lib/nightwatch` for root).

use std::path::PathBuf;

pub fn data_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("NIGHTWATCH_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(home);
    }
    if is_root() {
        return PathBuf::from("/var/lib/nightwatch");
    }
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|s| !s.is_empty()) {
        return PathBuf::from(state).join("nightwatch");
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/state/nightwatch"),
        None => PathBuf::from("/var/lib/nightwatch"),
    }
}

pub fn policy_file() -> PathBuf {
    data_dir().join("policy.yaml")
}

fn is_root() -> bool {
    // Without libc: the owner of /proc/self is the effective user.
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}
