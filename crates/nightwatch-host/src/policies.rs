//! Which policy applies, loading it, and keeping it in long-running processes.

use crate::environment::Environment;
use anyhow::Context as _;
use nightwatch_policy::{Analyser, Policy, PolicyError, ReadBase};
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
    load_with(path, Policy::from_yaml_at)
}

/// As [`load`], without running the examples (`nightwatch policy test` runs and reports them).
pub fn load_for_test(path: Option<&Path>) -> anyhow::Result<(Policy, Origin)> {
    load_with(path, Policy::compile_at)
}

/// How a policy text becomes a policy: with or without running its examples.
type Compile = fn(&str, Option<&Path>, Analyser, ReadBase<'_>) -> Result<Policy, PolicyError>;

fn load_with(path: Option<&Path>, compile: Compile) -> anyhow::Result<(Policy, Origin)> {
    let Some(path) = path else {
        return Ok((Policy::builtin(nightwatch_shell::analyse), Origin::Builtin));
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read policy {}", path.display()))?;
    let policy = compile(&text, Some(path), nightwatch_shell::analyse, &|at, name| {
        read_base(at, name)
    })
    .map_err(|error| anyhow::anyhow!("{}:{error}", path.display()))?;
    Ok((policy, Origin::File(path.to_path_buf())))
}

/// The policy file an `extends:` names: an absolute path, or one relative to the directory of
/// the file that extends it.
fn read_base(at: Option<&Path>, name: &str) -> Result<(PathBuf, String), String> {
    let named = Path::new(name);
    let path = match at.and_then(Path::parent) {
        Some(dir) if named.is_relative() => dir.join(named),
        _ => named.to_path_buf(),
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok((path, text))
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
        // The digest covers the files the policy extends too, as they were last read: an
        // edit to a base file is an edit to the policy.
        let digest = |text: &str, bases: &[PathBuf]| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            text.hash(&mut hasher);
            for base in bases {
                std::fs::read_to_string(base).ok().hash(&mut hasher);
            }
            hasher.finish()
        };
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(seen) = kept.get(&path)
            && seen.digest == digest(&text, &seen.bases)
        {
            return Ok(Arc::clone(&seen.policy));
        }
        let bases = std::cell::RefCell::new(Vec::new());
        let policy = Arc::new(match &path {
            Some(path) => {
                Policy::from_yaml_at(&text, Some(path), nightwatch_shell::analyse, &|at, name| {
                    let (base, text) = read_base(at, name)?;
                    bases.borrow_mut().push(base.clone());
                    Ok((base, text))
                })
                .map_err(|error| anyhow::anyhow!("{}:{error}", path.display()))?
            }
            None => Policy::builtin(nightwatch_shell::analyse),
        });
        let bases = bases.into_inner();
        // One version per file: a file edited often must not fill memory.
        kept.insert(
            path,
            Kept {
                digest: digest(&text, &bases),
                bases,
                policy: Arc::clone(&policy),
            },
        );
        Ok(policy)
    }
}

/// A compiled policy, the files it extends, and a digest of the texts it was compiled from.
struct Kept {
    digest: u64,
    bases: Vec<PathBuf>,
    policy: Arc<Policy>,
}

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

    #[test]
    fn a_policy_extends_a_file_beside_it_and_a_kept_policy_follows_edits_to_that_file() {
        use nightwatch_core::{Action, Actor, ActorKind, Tool, Verdict};
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("team.yaml");
        let policy = dir.path().join("host.yaml");
        std::fs::write(&base, "extends: builtin\n").unwrap();
        std::fs::write(
            &policy,
            "extends: team.yaml\nrules:\n  - id: no-curl\n    verdict: deny\n    command: [\"curl *\"]\n",
        )
        .unwrap();
        let docker = Action::new(
            Actor::new(ActorKind::Agent, "claude-code"),
            Tool::Exec {
                line: "docker ps".to_owned(),
            },
        );
        let (loaded, _) = load(Some(&policy)).unwrap();
        assert_eq!(loaded.decide(&docker).verdict, Verdict::Allow);

        let kept = Policies::default();
        let first = kept.get(Some(policy.clone())).unwrap();
        assert_eq!(first.decide(&docker).verdict, Verdict::Allow);
        std::fs::write(
            &base,
            "extends: builtin\nrules:\n  - id: no-docker\n    verdict: deny\n    command: [\"docker *\"]\n",
        )
        .unwrap();
        let second = kept.get(Some(policy.clone())).unwrap();
        assert_eq!(second.decide(&docker).verdict, Verdict::Deny);
    }
}
