//! The operations gix does not do for us, through the `git` CLI: status with untracked files
//! (the index, the working tree and ignore rules, exactly as git sees them), and the removals,
//! which must be git's own refusing commands: `git worktree remove` without `--force` refuses
//! a dirty or locked worktree, `git branch -d` refuses a branch that is not merged.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `git -C dir args...` with a fixed locale (so messages are stable), no prompts, no
/// optional locks (a status must not take the index lock from an agent working there), and
/// without the caller's `GIT_DIR`-style variables, which would point git elsewhere.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<Output, String> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir).args(args);
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(std::process::Stdio::null());
    cmd.output()
        .map_err(|e| format!("cannot run git: {e} (is git installed and on PATH?)"))
}

/// The first lines of what a failed git command said.
pub(crate) fn message(out: &Output) -> String {
    let text = String::from_utf8_lossy(if out.stderr.is_empty() {
        &out.stdout
    } else {
        &out.stderr
    });
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        format!("git exited with {}", out.status)
    } else {
        lines[..lines.len().min(4)].join(" / ")
    }
}

/// What is uncommitted in the worktree at `path`: `None` when clean, else `2 modified, 1
/// untracked`. A status that cannot be read is never "clean": it is described as dirty.
pub(crate) fn dirty(path: &Path) -> Option<String> {
    if !path.is_dir() {
        return Some("the worktree folder is missing".to_owned());
    }
    match git(
        path,
        &["status", "--porcelain=v1", "-z", "--untracked-files=normal"],
    ) {
        Err(e) => Some(format!("status unreadable: {e}")),
        Ok(out) if !out.status.success() => Some(format!("status unreadable: {}", message(&out))),
        Ok(out) => describe(&out.stdout),
    }
}

/// Counts `git status --porcelain=v1 -z` entries into a short description.
pub(crate) fn describe(porcelain: &[u8]) -> Option<String> {
    let (mut staged, mut modified, mut untracked, mut conflicted) = (0, 0, 0, 0);
    let mut entries = porcelain.split(|b| *b == 0).filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        let (x, y) = match entry {
            [x, y, b' ', ..] => (*x, *y),
            _ => continue,
        };
        // A rename or copy is followed by its source path as a separate entry.
        if matches!(x, b'R' | b'C') {
            entries.next();
        }
        match (x, y) {
            (b'?', b'?') => untracked += 1,
            (b'!', b'!') => {}
            (b'D', b'D') | (b'A', b'A') | (b'U', _) | (_, b'U') => conflicted += 1,
            _ => {
                if x != b' ' {
                    staged += 1;
                }
                if y != b' ' {
                    modified += 1;
                }
            }
        }
    }
    let parts: Vec<String> = [
        (conflicted, "conflicted"),
        (staged, "staged"),
        (modified, "modified"),
        (untracked, "untracked"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The URL of the repository's `origin` remote, as git fetches from it (`insteadOf` applied).
pub(crate) fn origin_url(dir: &Path) -> Result<String, String> {
    let out = git(dir, &["remote", "get-url", "origin"])?;
    if !out.status.success() {
        return Err(format!(
            "cannot read the origin remote ({}): set sweep.worktrees.pr.github.repo",
            message(&out)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Asks a PR-state program (`ARGV... REPO BRANCH`) and reads its one-line answer. It gets ten
/// seconds; a failure, a timeout or an answer it cannot read is "unknown", which keeps.
pub(crate) fn pr_state_from_command(
    argv: &[String],
    repo: &str,
    branch: &str,
) -> nightwatch_janitor::PrState {
    use nightwatch_janitor::PrState;
    use std::io::Read;
    let unknown = |why: String| PrState::Unknown { why };
    let Some((program, args)) = argv.split_first() else {
        return unknown("the PR command is empty".to_owned());
    };
    let child = std::process::Command::new(program)
        .args(args)
        .args([repo, branch])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => return unknown(format!("cannot run {program}: {e}")),
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return unknown(format!("{program} did not answer within 10 s"));
            }
        }
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.by_ref().take(4096).read_to_string(&mut out);
    }
    if !status.success() {
        return unknown(format!("{program} failed ({status})"));
    }
    let line = out.lines().next().unwrap_or("").trim();
    let mut words = line.split_whitespace();
    match (words.next(), words.next()) {
        (Some("merged"), Some(commit)) => PrState::Merged {
            commit: commit.to_owned(),
        },
        (Some("open"), url) => PrState::Open {
            url: url.map(str::to_owned),
        },
        (Some("closed"), None) => PrState::Closed,
        (Some("none"), None) => PrState::NoPr,
        _ => unknown(format!("{program} answered {line:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn porcelain_is_counted() {
        assert_eq!(describe(b""), None);
        assert_eq!(
            describe(b" M a.txt\0 M b.txt\0?? new/\0"),
            Some("2 modified, 1 untracked".to_owned())
        );
        assert_eq!(
            describe(b"R  new.txt\0old.txt\0MM c.txt\0UU d.txt\0"),
            Some("1 conflicted, 2 staged, 1 modified".to_owned())
        );
    }
}
