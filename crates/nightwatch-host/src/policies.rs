//! Which policy applies, loading it, and keeping it in long-running processes.

use crate::environment::Environment;
use anyhow::Context as _;
use nightwatch_policy::{Analyser, Policy, PolicyError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a policy came from, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Builtin,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::Builtin => f.write_str("the built-in policy"),
        }
    }
}

/// The policy file that applies: `explicit` (a `--policy` flag), else `NIGHTWATCH_POLICY`, else
/// the data directory's `policy.yaml` when it exists; None means the built-in policy.
pub fn policy_file(explicit: Option<&Path>, env: &Environment) -> Option<PathBuf> {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| env.var("NIGHTWATCH_POLICY").map(PathBuf::from))
        .or_else(|| Some(crate::home::policy_file_in(env)).filter(|path| path.exists()))
}

/// Loads the policy at `path` (None: the built-in one), running its examples. A file that
/// exists but does not load is an error, never a silent fallback.
pub fn load(path: Option<&Path>) -> anyhow::Result<(Policy, Origin)> {
    load_with(path, Policy::from_yaml)
}

/// As [`load`], without running the examples (`nightwatch policy test` runs and reports them).
pub fn load_for_test(path: Option<&Path>) -> anyhow::Result<(Policy, Origin)> {
    load_with(path, Policy::compile)
}

fn load_with(
    path: Option<&Path>,
    compile: fn(&str, Analyser) -> Result<Policy, PolicyError>,
) -> anyhow::Result<(Policy, Origin)> {
    let Some(path) = path else {
        return Ok((Policy::builtin(nightwatch_shell::analyse), Origin::Builtin));
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read policy {}", path.display()))?;
    let policy = compile(&text, nightwatch_shell::analyse)
        .map_err(|error| anyhow::anyhow!("{}:{error}", path.display()))?;
    Ok((policy, Origin::File(path.to_path_buf())))
}

/// Policies kept by a long-running process (the resident gate, the daemon), each read again
/// when its file's content changes: the one strategy for every process that keeps a policy.
/// A hook process answers one call and loads its policy once.
#[derive(Default)]
pub struct Policies {
    kept: std::sync::Mutex<std::collections::HashMap<Option<PathBuf>, Kept>>,
}

impl Policies {
    /// The policy in the file at `path` (None: the built-in one), compiled again only when its
    /// text changed.
    pub fn get(&self, path: Option<PathBuf>) -> anyhow::Result<Arc<Policy>> {
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
            return Ok(Arc::clone(policy));
        }
        let policy = Arc::new(match &path {
            Some(path) => Policy::from_yaml(&text, nightwatch_shell::analyse)
                .map_err(|error| anyhow::anyhow!("{}:{error}", path.display()))?,
            None => Policy::builtin(nightwatch_shell::analyse),
        });
        // One version per file: a file edited often must not fill memory.
        kept.insert(path, (content, Arc::clone(&policy)));
        Ok(policy)
    }
}

/// A compiled policy and a digest of the text it was compiled from.
type Kept = (u64, Arc<Policy>);

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::from_vars(pairs.iter().copied())
    }

    #[test]
    fn the_flag_beats_the_variable_which_beats_the_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        let nothing = env(&[("NIGHTWATCH_HOME", home)]);
        assert_eq!(
            policy_file(None, &nothing),
            None,
            "no file: the built-in policy"
        );
        std::fs::write(dir.path().join("policy.yaml"), "rules: []\n").unwrap();
        assert_eq!(
            policy_file(None, &nothing),
            Some(dir.path().join("policy.yaml"))
        );
        let named = env(&[("NIGHTWATCH_HOME", home), ("NIGHTWATCH_POLICY", "/p.yaml")]);
        assert_eq!(policy_file(None, &named), Some(PathBuf::from("/p.yaml")));
        let flag = Path::new("/flag.yaml");
        assert_eq!(policy_file(Some(flag), &named), Some(flag.to_path_buf()));
    }

    #[test]
    fn a_file_that_does_not_load_is_an_error_not_the_builtin_policy() {
        let dir = tempfile::tempdir().unwrap();
        let broken = dir.path().join("broken.yaml");
        std::fs::write(&broken, "rules: [ {id: x, verdict: maybe} ]\n").unwrap();
        let error = load(Some(&broken)).unwrap_err().to_string();
        assert!(error.starts_with(&broken.display().to_string()), "{error}");
        let missing = dir.path().join("missing.yaml");
        let error = format!("{:#}", load(Some(&missing)).unwrap_err());
        assert!(error.contains("cannot read policy"), "{error}");
        let (_, origin) = load(None).unwrap();
        assert_eq!(origin, Origin::Builtin);
    }
}
