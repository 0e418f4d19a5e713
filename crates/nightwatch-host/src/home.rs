//! The data directory: `$NIGHTWATCH_HOME` when set, otherwise the user's state directory
//! (`/var/lib/nightwatch` for root).

use crate::environment::Environment;
use std::path::PathBuf;

pub fn data_dir() -> PathBuf {
    data_dir_in(&Environment::of_process())
}

/// As [`data_dir`], from captured variables.
pub fn data_dir_in(env: &Environment) -> PathBuf {
    if let Some(home) = env.var("NIGHTWATCH_HOME") {
        return PathBuf::from(home);
    }
    if is_root() {
        return PathBuf::from("/var/lib/nightwatch");
    }
    if let Some(state) = env.var("XDG_STATE_HOME") {
        return PathBuf::from(state).join("nightwatch");
    }
    match env.var("HOME") {
        Some(home) => PathBuf::from(home).join(".local/state/nightwatch"),
        None => PathBuf::from("/var/lib/nightwatch"),
    }
}

pub fn policy_file() -> PathBuf {
    data_dir().join("policy.yaml")
}

pub fn policy_file_in(env: &Environment) -> PathBuf {
    data_dir_in(env).join("policy.yaml")
}

fn is_root() -> bool {
    // Without libc: the owner of /proc/self is the effective user.
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}
