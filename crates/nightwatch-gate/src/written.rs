//! Which local paths an allowed action is about to change, so they can be backed up first.

use nightwatch_core::{Action, Tool};
use nightwatch_policy::Decision;
use std::path::{Component, Path, PathBuf};

/// The paths to back up, and the ones that cannot be (with why), for the record.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub paths: Vec<PathBuf>,
    pub not_backed_up: Vec<String>,
}

/// Files a write or edit names, and what an exec line's invocations write, truncate, move or
/// delete on this host. Relative paths are taken from `cwd`; a globbed path is backed up
/// through the directory it expands in (`rm /var/log/app/*.gz` saves `/var/log/app`).
pub fn written_paths(action: &Action, decision: &Decision, cwd: Option<&str>) -> Written {
    let mut written = Written::default();
    let mut add = |raw: &str| match local_path(raw, cwd) {
        Ok(path) => {
            if !written.paths.contains(&path) {
                written.paths.push(path);
            }
        }
        Err(why) => written.not_backed_up.push(format!("{raw}: {why}")),
    };
    match &action.tool {
        Tool::Write { path } | Tool::Edit { path } => add(path),
        Tool::Exec { .. } => {
            for judged in &decision.invocations {
                let invocation = &judged.invocation;
                if invocation.remote.is_some() {
                    continue;
                }
                let effects = &invocation.effects;
                for raw in effects.writes.iter().chain(&effects.deletes) {
                    add(raw);
                }
            }
        }
        _ => {}
    }
    written
}

fn local_path(raw: &str, cwd: Option<&str>) -> Result<PathBuf, &'static str> {
    if raw.is_empty() {
        return Err("empty path");
    }
    if raw.starts_with('~') {
        return Err("a home directory that only the shell expands");
    }
    let raw = match raw.find(['*', '?', '[', '{']) {
        Some(first) => match raw[..first].rfind('/') {
            Some(0) => "/",
            Some(slash) => &raw[..slash],
            None => ".",
        },
        None => raw,
    };
    let path = Path::new(raw);
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match cwd {
            Some(cwd) if Path::new(cwd).is_absolute() => Path::new(cwd).join(path),
            _ => return Err("a relative path with no known working directory"),
        }
    };
    Ok(normalise(&absolute))
}

/// `.` and `..` resolved by text (the files may not exist yet; links are followed elsewhere).
/// A `..` above `/` stays at `/`.
pub(crate) fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nightwatch_core::{Actor, ActorKind};

    fn paths_of(tool: Tool, cwd: Option<&str>) -> Written {
        let action = Action::new(Actor::new(ActorKind::Agent, "a"), tool);
        let decision =
            nightwatch_policy::Policy::builtin(nightwatch_shell::analyse).decide(&action);
        written_paths(&action, &decision, cwd)
    }

    fn exec(line: &str) -> Tool {
        Tool::Exec {
            line: line.to_owned(),
        }
    }

    #[test]
    fn writes_edits_and_exec_effects_name_their_paths() {
        let write = paths_of(
            Tool::Write {
                path: "conf/app.yaml".into(),
            },
            Some("/srv/app"),
        );
        assert_eq!(write.paths, [PathBuf::from("/srv/app/conf/app.yaml")]);
        let moved = paths_of(exec("mv /etc/a.conf /etc/b.conf"), None);
        assert!(
            moved.paths.contains(&PathBuf::from("/etc/a.conf")),
            "{moved:?}"
        );
        assert!(
            moved.paths.contains(&PathBuf::from("/etc/b.conf")),
            "{moved:?}"
        );
        let truncated = paths_of(exec("echo x > ../out.txt"), Some("/tmp/w"));
        assert_eq!(truncated.paths, [PathBuf::from("/tmp/out.txt")]);
        let globbed = paths_of(exec("rm /var/log/app/*.gz"), None);
        assert_eq!(globbed.paths, [PathBuf::from("/var/log/app")]);
        let reads = paths_of(exec("cat /etc/hosts"), None);
        assert_eq!(reads, Written::default());
    }

    #[test]
    fn what_cannot_be_located_is_said() {
        let relative = paths_of(exec("rm notes.txt"), None);
        assert!(relative.paths.is_empty());
        assert_eq!(relative.not_backed_up.len(), 1, "{relative:?}");
        let home = paths_of(exec("rm ~/notes.txt"), None);
        assert!(home.not_backed_up[0].contains("home directory"), "{home:?}");
        let remote = paths_of(exec("ssh web-1 rm /etc/app.conf"), None);
        assert!(remote.paths.is_empty(), "{remote:?}");
    }
}
