//! `nightwatch install AGENT`: point the agent's hooks at this binary.

use crate::cli::InstallArgs;
use anyhow::{Context as _, bail};
use nightwatch_agents::{Agent, Base, Scope, install_hooks, settings_path};
use std::path::PathBuf;

pub fn run(args: InstallArgs) -> anyhow::Result<u8> {
    let agent: Agent = args.agent.into();
    let scope = if args.user {
        Scope::User
    } else {
        Scope::Project
    };
    let location = settings_path(agent, scope);
    let base = match location.base {
        Base::Home => crate::environment::Environment::of_process()
            .var("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .context("--user needs $HOME")?,
        Base::Project => match &args.project {
            Some(dir) => dir.clone(),
            None => crate::environment::Environment::of_process()
                .cwd()
                .map(PathBuf::from)
                .context("cannot read the current directory")?,
        },
    };
    let path = base.join(location.path);
    let exe = std::env::current_exe().context("cannot find this binary's path")?;
    let command = format!("{} hook {}", exe.display(), agent.as_str());

    let existing = match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => serde_json::Value::Null,
        Ok(text) => serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not JSON; fix it by hand, then install again",
                path.display()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => serde_json::Value::Null,
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    };
    let merged = install_hooks(agent, existing.clone(), &command)?;
    if merged == existing {
        println!(
            "{} already runs nightwatch: nothing to change",
            path.display()
        );
        return Ok(0);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    if path.exists() {
        let backup = backup_path(&path);
        std::fs::copy(&path, &backup).with_context(|| {
            format!("cannot back up {} to {}", path.display(), backup.display())
        })?;
        println!("backed up {} to {}", path.display(), backup.display());
    }
    let temporary = path.with_extension("json.nightwatch-tmp");
    std::fs::write(&temporary, serde_json::to_string_pretty(&merged)? + "\n")
        .with_context(|| format!("cannot write {}", temporary.display()))?;
    std::fs::rename(&temporary, &path)
        .with_context(|| format!("cannot replace {}", path.display()))?;
    println!(
        "installed nightwatch's {} hooks in {}",
        agent.as_str(),
        path.display()
    );
    Ok(0)
}

/// `settings.json.nightwatch-backup`, or `...-backup.2` and on when one exists already.
fn backup_path(path: &std::path::Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let first = path.with_file_name(format!("{name}.nightwatch-backup"));
    if !first.exists() {
        return first;
    }
    (2..)
        .map(|n| path.with_file_name(format!("{name}.nightwatch-backup.{n}")))
        .find(|candidate| !candidate.exists())
        .unwrap_or(first)
}
