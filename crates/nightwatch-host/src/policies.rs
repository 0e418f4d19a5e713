//! Policies kept by long-running processes.

use anyhow::Context as _;
use nightwatch_policy::Policy;

/// Policies kept by a long-running process (the resident gate, the daemon), each read again
/// when its file's content changes: the one strategy for every process that keeps a policy.
/// A hook process answers one call and loads its policy once.
#[derive(Default)]
pub struct Policies {
    kept: std::sync::Mutex<std::collections::HashMap<Option<std::path::PathBuf>, Kept>>,
}

impl Policies {
    /// The policy in the file at `path` (None: the built-in one), compiled again only when its
    /// text changed.
    pub fn get(&self, path: Option<std::path::PathBuf>) -> anyhow::Result<std::sync::Arc<Policy>> {
        use std::hash::{Hash, Hasher};
        let text = match &path {
            Some(path) => std::fs::read_to_string(path)
                .with_context(|| format!("cannot read policy {}", path.display()))?,
            None => String::new(),
        };
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let content = hasher.finish();
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, policy)) = kept.get(&path)
            && *seen == content
        {
            return Ok(std::sync::Arc::clone(policy));
        }
        let policy = std::sync::Arc::new(match &path {
            Some(path) => Policy::from_yaml(&text)
                .map_err(|error| anyhow::anyhow!("{}:{error}", path.display()))?,
            None => Policy::builtin(),
        });
        // One version per file: a file edited often must not fill memory.
        kept.insert(path, (content, std::sync::Arc::clone(&policy)));
        Ok(policy)
    }
}

/// A compiled policy and a digest of the text it was compiled from.
type Kept = (u64, std::sync::Arc<Policy>);
