//! What the janitor sweeps: one [`Item`] per container, worktree, branch or path, carrying
//! only the facts the rules read, so a plan can be checked against the world again later.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;

/// The kinds of leftover the janitor knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Container,
    Worktree,
    Branch,
    Path,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Container, Kind::Worktree, Kind::Branch, Kind::Path];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Container => "container",
            Kind::Worktree => "worktree",
            Kind::Branch => "branch",
            Kind::Path => "path",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// The tool name policy sees when the janitor removes one of these (`tool: remove_container`).
    pub fn tool_name(self) -> &'static str {
        match self {
            Kind::Container => "remove_container",
            Kind::Worktree => "remove_worktree",
            Kind::Branch => "delete_branch",
            Kind::Path => "remove_path",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The order removals run in: a worktree's folder goes before its branch.
    pub(crate) fn apply_rank(self) -> u8 {
        match self {
            Kind::Container => 0,
            Kind::Path => 1,
            Kind::Worktree => 2,
            Kind::Branch => 3,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing the janitor might remove.
///
/// `id` is stable across runs so first sightings and failures can be remembered: the container
/// id, the worktree's path, `REPO#branch`, or the path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub id: String,
    /// What a person calls it: the container name, the branch name, the path.
    pub name: String,
    pub facts: Facts,
}

impl Item {
    pub fn kind(&self) -> Kind {
        self.facts.kind()
    }

    /// SHA-256 (hex) of the id, name and facts as canonical JSON: equal fingerprints mean the
    /// item is in the same state as when it was planned.
    pub fn fingerprint(&self) -> String {
        fingerprint_of(&self.id, &self.name, &self.facts)
    }
}

pub(crate) fn fingerprint_of(id: &str, name: &str, facts: &Facts) -> String {
    // A container that restarts changes its start and finish times and its restart count on
    // every crash: a crash loop would never match its plan and so never go. Its fingerprint
    // leaves those out; apply decides the re-inspected item again anyway, so real activity
    // between plan and apply still keeps it.
    let steadied;
    let facts = match facts {
        Facts::Container(c) if c.restart_count > 0 || c.status == "restarting" => {
            steadied = Facts::Container(ContainerFacts {
                status: "restarting".to_owned(),
                restart_count: 0,
                started_ms: None,
                finished_ms: None,
                exit_code: None,
                ..c.clone()
            });
            &steadied
        }
        other => other,
    };
    let mut hasher = HashWriter(Sha256::new());
    hasher.0.update(b"nightwatch-janitor/fingerprint/1\n");
    // Serializing plain structs, strings and a BTreeMap into a hasher cannot fail; if it ever
    // did, the marker keeps the fingerprint from matching an honest one by accident.
    if serde_json::to_writer(&mut hasher, &(id, name, facts)).is_err() {
        hasher.0.update(b"\0unserializable");
    }
    let digest = hasher.0.finalize();
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    hex
}

const HEX: &[u8; 16] = b"0123456789abcdef";

struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The facts of one item, by kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Facts {
    Container(ContainerFacts),
    Worktree(WorktreeFacts),
    Branch(BranchFacts),
    Path(PathFacts),
}

impl Facts {
    pub fn kind(&self) -> Kind {
        match self {
            Facts::Container(_) => Kind::Container,
            Facts::Worktree(_) => Kind::Worktree,
            Facts::Branch(_) => Kind::Branch,
            Facts::Path(_) => Kind::Path,
        }
    }
}

/// A container as the Engine API describes it. Times are milliseconds since 1970; `None` for
/// "never" (Docker writes `0001-01-01T00:00:00Z`; see [`docker_time_ms`]).
///
/// Activity nightwatch saw itself (exec, attach) is not here: it lives in the janitor's state,
/// because it must outlive the process that saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerFacts {
    pub labels: BTreeMap<String, String>,
    pub image: String,
    /// `State.Status`: created, running, paused, restarting, removing, exited or dead.
    pub status: String,
    pub restart_count: u32,
    pub created_ms: Option<i64>,
    pub started_ms: Option<i64>,
    pub finished_ms: Option<i64>,
    /// The exit code of its last run, when it has exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Exec sessions open in it now (inspect's `ExecIDs`): someone is using it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exec_ids: Vec<String>,
}

/// Reads a Docker timestamp (RFC 3339) into milliseconds since 1970. Docker's zero time,
/// `0001-01-01T00:00:00Z`, means "never" and so does anything unreadable or before 1970:
/// no container predates the epoch, and a wrong "never" only makes an item look younger.
pub fn docker_time_ms(text: &str) -> Option<i64> {
    let ts: jiff::Timestamp = text.trim().parse().ok()?;
    let ms = ts.as_millisecond();
    (ms > 0).then_some(ms)
}

/// A git worktree and what is known about its work.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeFacts {
    pub repo: String,
    pub path: String,
    /// The branch checked out, or `None` for a detached HEAD.
    pub branch: Option<String>,
    pub head: String,
    pub is_main: bool,
    /// `Some(reason)` when locked (the reason may be empty).
    pub locked: Option<String>,
    /// What is uncommitted (staged, unstaged, untracked), or `None` when clean.
    pub dirty: Option<String>,
    pub merge: MergeState,
    /// Processes whose working directory or open files are inside the worktree.
    pub in_use_by: Vec<ProcessUse>,
    pub pr: PrState,
    /// When the worktree was created, when the inventory can tell; otherwise first-seen counts.
    pub created_ms: Option<i64>,
}

/// Whether a worktree's work has reached the base branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum MergeState {
    /// HEAD is an ancestor of `into`.
    Ancestor {
        into: String,
    },
    /// HEAD's tree (its changes) is already in `into`, as after a squash merge.
    SquashedContent {
        into: String,
    },
    NotMerged {
        into: String,
    },
    Unknown {
        why: String,
    },
}

/// A process using a worktree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessUse {
    pub pid: u32,
    pub command: String,
}

/// What the PR provider says about the PRs from a branch (a worktree's, or a local one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum PrState {
    /// Merged from `commit` (the PR's head when it merged).
    Merged {
        commit: String,
    },
    Open {
        url: Option<String>,
    },
    Closed,
    /// The provider says the branch never had a PR.
    NoPr,
    /// No provider configured, or it could not be asked: a worktree is kept, and so is a
    /// branch unless ancestry may decide.
    Unknown {
        why: String,
    },
}

/// A local branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchFacts {
    pub repo: String,
    pub name: String,
    pub tip: String,
    /// The tip again when the base holds it by ancestry (a fast-forward or a merge commit),
    /// else `None`. Ancestry alone deletes a branch only under `branches.ancestry: true`.
    pub merged_commit: Option<String>,
    /// What the PR provider says about the branch: a PR merged from exactly `tip` is what
    /// shows its work is in, whatever the base's history looks like (squash merges too).
    #[serde(default = "pr_not_recorded")]
    pub pr: PrState,
    /// The tip commit's committer time (ms since 1970), when it could be read.
    #[serde(default)]
    pub tip_time_ms: Option<i64>,
    /// The path of the worktree where the branch is checked out (that worktree's item id), so
    /// a branch can follow its worktree out in the same sweep.
    pub checked_out_in: Option<String>,
}

/// Plans written before branches carried a PR state read as "unknown", which keeps.
fn pr_not_recorded() -> PrState {
    PrState::Unknown {
        why: "not recorded in this plan".to_owned(),
    }
}

/// A file, directory or symlink matched by a `paths:` rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathFacts {
    pub path: String,
    /// The glob of the rule that matched it.
    pub rule: String,
    pub is_dir: bool,
    pub is_symlink: bool,
    /// Newest modification time of the entry (and, for a directory, of anything inside it);
    /// `None` when it could not be read in full.
    pub modified_ms: Option<i64>,
    /// The directory holds the rule's keep file (`.nightwatch-keep`).
    pub keep_file: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_zero_time_is_never() {
        assert_eq!(docker_time_ms("0001-01-01T00:00:00Z"), None);
        assert_eq!(docker_time_ms("garbage"), None);
        assert_eq!(
            docker_time_ms("2026-03-01T10:00:00.123456789Z"),
            Some(1_772_359_200_123)
        );
    }

    #[test]
    fn fingerprint_follows_facts() {
        let mut item = Item {
            id: "abc".into(),
            name: "pg-bug-4411".into(),
            facts: Facts::Container(ContainerFacts::default()),
        };
        let before = item.fingerprint();
        assert_eq!(before.len(), 64);
        assert_eq!(before, item.clone().fingerprint());
        if let Facts::Container(c) = &mut item.facts {
            c.status = "running".into();
        }
        assert_ne!(before, item.fingerprint());
    }
}

#[cfg(test)]
mod crash_loop_tests {
    use super::*;

    fn container(status: &str, restarts: u32, started: i64) -> Item {
        Item {
            id: "c1".into(),
            name: "flaky".into(),
            facts: Facts::Container(ContainerFacts {
                labels: BTreeMap::new(),
                image: "app".into(),
                status: status.into(),
                restart_count: restarts,
                created_ms: Some(1),
                started_ms: Some(started),
                finished_ms: Some(started + 5),
                ..ContainerFacts::default()
            }),
        }
    }

    /// Every crash moves a looping container's times and count; its plan must still match.
    #[test]
    fn a_crash_loop_keeps_its_fingerprint_between_crashes() {
        let planned = container("restarting", 40, 1_000);
        let later = container("running", 41, 9_000);
        assert_eq!(planned.fingerprint(), later.fingerprint());
        // A container that never restarted and was started again has changed.
        let idle = container("exited", 0, 1_000);
        let started_again = container("exited", 0, 9_000);
        assert_ne!(idle.fingerprint(), started_again.fingerprint());
    }
}
