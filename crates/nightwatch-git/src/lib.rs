//! The janitor's git inventories: the worktrees every parallel agent session leaves behind, and
//! the local branches they leave with them.
//!
//! The seed's rule is that a worktree goes only when provably finished (clean, merged, no open
//! PR) and a branch only when a PR was merged from exactly its tip (or, where the policy says
//! `branches.ancestry: true`, when the base holds its tip). This crate only *describes*
//! worktrees and branches; `nightwatch_janitor::plan` decides. What it reports:
//!
//! - [`GitWorktrees`]: for every worktree of every configured repository, its branch and HEAD,
//!   whether it is the main one, its lock, what is uncommitted (staged, unstaged and untracked,
//!   as `git status` sees it), how HEAD stands against the base, which processes have their
//!   working directory inside it, and the PR state.
//! - [`GitBranches`]: every local branch but the base and the one checked out in the main
//!   worktree, with its PR state, its tip's commit time, and `merged_commit` set only when the
//!   tip itself is in the base.
//!
//! PR states come from the configured provider: a program (`cli.rs`) or GitHub's pulls API
//! ([`GithubPulls`]). Each (repository, branch) is asked once per inventory, so build one
//! inventory per plan and per apply.
//!
//! Reading goes through gix (registrations, HEADs, refs, commits, trees, merge bases); status
//! and removal go through the `git` CLI, because a removal must be git's own refusing command:
//! `git worktree remove` without `--force`, `git branch -d`, never `-D`. A branch whose tip the
//! base does not hold (a squash merge) is deleted with `git update-ref -d REF TIP`, which
//! refuses once the branch points anywhere but the tip its PR merged from.
//!
//! # How a squash merge is recognised
//!
//! HEAD is [`MergeState::Ancestor`] when it is the base or one of its ancestors (a fast-forward
//! or a merge commit). Otherwise, with `M` the merge base of HEAD and the base, the branch's
//! change is the tree difference `M..HEAD`. It is [`MergeState::SquashedContent`] when every
//! path that differs between `M`'s tree and HEAD's tree holds, in the base's tree, exactly
//! HEAD's entry (same mode and blob, or absent in both): applying the branch to the base would
//! change nothing. Only differing subtrees are opened. Unlike `git cherry`, which compares one
//! commit's patch at a time, this sees a squash of many commits; it is strict where it could be
//! wrong, so a file the base changed again after the squash makes the branch `NotMerged` (kept).

mod cli;
mod github;
mod procs;
mod read;

use nightwatch_janitor::{
    BranchFacts, Facts, GithubRepo, Inventory, InventoryError, Item, Kind, MergeState, PrProvider,
    PrState, Removal, WorktreeFacts,
};
use read::{Snapshot, Worktree, canonical};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::UNIX_EPOCH;

pub use github::{GithubPulls, parse_remote};
pub use nightwatch_janitor::ProcessUse;

/// The repositories to sweep and what their work must have reached. Cheap to clone; hand
/// [`GitInventory::worktrees`] and [`GitInventory::branches`] to the janitor.
#[derive(Clone, Debug)]
pub struct GitInventory {
    repos: Vec<PathBuf>,
    base: String,
    prs: PrSource,
    /// Shared by the clones: a worktree and its branch ask the same question, and apply
    /// inspects every item again.
    asked: Arc<Mutex<Asked>>,
}

/// The configured PR provider, ready to ask.
#[derive(Clone, Debug)]
enum PrSource {
    None,
    Github {
        /// `None`: each repository's `origin` remote names it.
        repo: Option<GithubRepo>,
        client: Arc<GithubPulls>,
    },
    Command(Vec<String>),
}

/// What this inventory already asked: PR states by (repository, branch), and the GitHub
/// repository of each repository.
#[derive(Debug, Default)]
struct Asked {
    pr_states: HashMap<(String, String), PrState>,
    github_repos: HashMap<String, Result<GithubRepo, String>>,
}

/// The worktrees of every repository, as an [`Inventory`] of [`Kind::Worktree`].
#[derive(Clone, Debug)]
pub struct GitWorktrees(GitInventory);

/// The local branches of every repository, as an [`Inventory`] of [`Kind::Branch`].
#[derive(Clone, Debug)]
pub struct GitBranches(GitInventory);

const REMOVE_WORKTREE: &str = "remove worktree folder";
const DELETE_BRANCH: &str = "delete branch";

impl GitInventory {
    /// `repos` are paths to repositories (any of their worktrees will do); `base` is the branch
    /// work must reach (`main`), or another revision such as `origin/main`.
    /// The GitHub provider's token is `token_of(NAME)` for its environment variable NAME,
    /// asked here, once (the caller reads its captured environment).
    pub fn new(
        repos: Vec<PathBuf>,
        base: String,
        pr: PrProvider,
        token_of: &dyn Fn(&str) -> Option<String>,
    ) -> GitInventory {
        let prs = match pr {
            PrProvider::None => PrSource::None,
            PrProvider::Command(argv) => PrSource::Command(argv),
            PrProvider::Github(config) => {
                let token = token_of(config.token_env());
                PrSource::Github {
                    client: Arc::new(GithubPulls::new(config.base_url(), token)),
                    repo: config.repo,
                }
            }
        };
        GitInventory {
            repos,
            base,
            prs,
            asked: Arc::default(),
        }
    }

    pub fn worktrees(&self) -> GitWorktrees {
        GitWorktrees(self.clone())
    }

    pub fn branches(&self) -> GitBranches {
        GitBranches(self.clone())
    }

    fn repo_names(&self) -> impl Iterator<Item = String> + '_ {
        self.repos.iter().map(|r| r.to_string_lossy().into_owned())
    }

    fn snapshot(&self, repo: &str) -> Result<Snapshot, InventoryError> {
        Snapshot::read(repo, &self.base).map_err(|reason| InventoryError::Unavailable {
            what: format!("git repository {repo}"),
            reason,
        })
    }

    fn pr_state(&self, snap: &Snapshot, branch: Option<&str>) -> PrState {
        let unknown = |why: &str| PrState::Unknown {
            why: why.to_owned(),
        };
        if matches!(self.prs, PrSource::None) {
            return unknown("no PR provider configured");
        }
        let Some(branch) = branch else {
            return unknown("a detached HEAD has no PR");
        };
        let key = (snap.repo.clone(), branch.to_owned());
        if let Some(known) = self.asked().pr_states.get(&key) {
            return known.clone();
        }
        let state = match &self.prs {
            PrSource::None => unknown("no PR provider configured"),
            PrSource::Command(argv) => cli::pr_state_from_command(argv, &snap.repo, branch),
            PrSource::Github { repo, client } => match self.github_repo(snap, repo, client) {
                Ok(repo) => client.pr_state(&repo, branch),
                Err(why) => PrState::Unknown { why },
            },
        };
        self.asked().pr_states.insert(key, state.clone());
        state
    }

    /// The configured GitHub repository, or the one `origin` names.
    fn github_repo(
        &self,
        snap: &Snapshot,
        configured: &Option<GithubRepo>,
        client: &GithubPulls,
    ) -> Result<GithubRepo, String> {
        if let Some(repo) = configured {
            return Ok(repo.clone());
        }
        if let Some(known) = self.asked().github_repos.get(&snap.repo) {
            return known.clone();
        }
        let found = cli::origin_url(&snap.git_cwd).and_then(|url| client.repo_of_remote(&url));
        self.asked()
            .github_repos
            .insert(snap.repo.clone(), found.clone());
        found
    }

    fn asked(&self) -> MutexGuard<'_, Asked> {
        self.asked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Items for the worktrees of `snap`, or only the one at `only`.
    fn worktree_items(&self, snap: &Snapshot, only: Option<&Worktree>) -> Vec<Item> {
        let chosen: Vec<&Worktree> = match only {
            Some(w) => vec![w],
            None => snap.worktrees.iter().collect(),
        };
        let heads: Vec<Result<gix::ObjectId, String>> =
            chosen.iter().map(|w| w.head.clone()).collect();
        let merges = snap.merge_states(&heads);
        let paths: Vec<PathBuf> = chosen.iter().map(|w| w.path.clone()).collect();
        let dirty = dirty_all(&paths);
        let all: Vec<PathBuf> = snap.worktrees.iter().map(|w| canonical(&w.path)).collect();
        let cwds = procs::cwds();
        chosen
            .into_iter()
            .zip(merges)
            .zip(dirty)
            .map(|((w, merge), dirty)| {
                let path = w.path.to_string_lossy().into_owned();
                Item {
                    id: path.clone(),
                    name: path.clone(),
                    facts: Facts::Worktree(WorktreeFacts {
                        repo: snap.repo.clone(),
                        path,
                        branch: w.branch.clone(),
                        head: w.head.as_ref().map(|h| h.to_string()).unwrap_or_default(),
                        is_main: w.is_main,
                        locked: w.locked.clone(),
                        dirty,
                        merge,
                        in_use_by: procs::users(&cwds, &canonical(&w.path), &all),
                        pr: self.pr_state(snap, w.branch.as_deref()),
                        created_ms: w.admin_dir.as_deref().and_then(created_ms),
                    }),
                }
            })
            .collect()
    }

    /// Items for the branches of `snap` (or only `only`), leaving out the base and the branch
    /// checked out in the main worktree.
    fn branch_items(&self, snap: &Snapshot, only: Option<&str>) -> Vec<Item> {
        let chosen: Vec<&(String, gix::ObjectId)> = snap
            .branches
            .iter()
            .filter(|(name, _)| only.is_none_or(|o| o == name))
            .filter(|(name, _)| !is_protected(snap, name))
            .collect();
        let tips: Vec<gix::ObjectId> = chosen.iter().map(|(_, tip)| *tip).collect();
        let merged = snap.in_base(&tips);
        chosen
            .into_iter()
            .zip(merged)
            .map(|((name, tip), merged)| {
                let checked_out_in = snap
                    .worktrees
                    .iter()
                    .find(|w| !w.is_main && w.branch.as_deref() == Some(name))
                    .map(|w| w.path.to_string_lossy().into_owned());
                Item {
                    id: format!("{}#{name}", snap.repo),
                    name: name.clone(),
                    facts: Facts::Branch(BranchFacts {
                        repo: snap.repo.clone(),
                        name: name.clone(),
                        tip: tip.to_string(),
                        // Only a tip the base holds counts as in it. A walk that failed is
                        // "not in it", which keeps the branch.
                        merged_commit: matches!(merged, Ok(true)).then(|| tip.to_string()),
                        pr: self.pr_state(snap, Some(name)),
                        tip_time_ms: snap.committed_ms(*tip),
                        checked_out_in,
                    }),
                }
            })
            .collect()
    }
}

/// The base branch and the main worktree's branch are never inventoried, so never removed.
fn is_protected(snap: &Snapshot, name: &str) -> bool {
    name == snap.base_name || snap.main_branch.as_deref() == Some(name)
}

/// `git status` for each path, a few at a time: each is a process spawn and a walk of the
/// working tree, mostly waiting on the disk, so more workers than cores pay off.
fn dirty_all(paths: &[PathBuf]) -> Vec<Option<String>> {
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .saturating_mul(2)
        .clamp(1, 8);
    let chunk = paths.len().div_ceil(workers).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|part| {
                let handle = scope.spawn(move || part.iter().map(|p| cli::dirty(p)).collect());
                (part.len(), handle)
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|(len, handle)| {
                handle.join().unwrap_or_else(|_| {
                    vec![Some("status unreadable: the status worker panicked".to_owned()); len]
                })
            })
            .collect()
    })
}

/// When the worktree was added: the mtime of `commondir` in its admin dir, which
/// `git worktree add` writes once. The admin dir's own mtime moves with every commit made in
/// the worktree (HEAD is replaced by rename), so it would make an old worktree look new.
fn created_ms(admin_dir: &Path) -> Option<i64> {
    let meta = std::fs::metadata(admin_dir.join("commondir")).ok()?;
    let since = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(since.as_millis()).ok()
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

impl Inventory for GitWorktrees {
    fn kind(&self) -> Kind {
        Kind::Worktree
    }

    fn list(&self) -> Result<Vec<Item>, InventoryError> {
        let mut items = Vec::new();
        for repo in self.0.repo_names() {
            let snap = self.0.snapshot(&repo)?;
            items.extend(self.0.worktree_items(&snap, None));
        }
        Ok(items)
    }

    fn inspect(&self, id: &str) -> Result<Option<Item>, InventoryError> {
        let mut unreadable = None;
        for repo in self.0.repo_names() {
            match self.0.snapshot(&repo) {
                Ok(snap) => {
                    if let Some(w) = snap.worktree_at(Path::new(id)) {
                        return Ok(self.0.worktree_items(&snap, Some(w)).pop());
                    }
                }
                Err(e) => unreadable = Some(e),
            }
        }
        // Gone only if every repository could be asked.
        match unreadable {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// Re-inspects, refuses what git would not check (the main worktree, one in use, one whose
    /// HEAD moved or is no longer merged), then runs `git worktree remove` without `--force`,
    /// which itself refuses uncommitted changes, untracked files and locks at the moment of
    /// removal.
    fn remove(&self, item: &Item, _now_ms: i64) -> Removal {
        let Facts::Worktree(planned) = &item.facts else {
            return Removal::new()
                .failed(REMOVE_WORKTREE, format!("{} is not a worktree", item.id));
        };
        let now = match self.inspect(&item.id) {
            Err(e) => return Removal::new().failed(REMOVE_WORKTREE, e.to_string()),
            Ok(None) => return Removal::new().done(REMOVE_WORKTREE, "already gone"),
            Ok(Some(now)) => now,
        };
        let Facts::Worktree(now) = now.facts else {
            return Removal::new().failed(REMOVE_WORKTREE, "internal: not a worktree");
        };
        let refuse =
            |why: String| Removal::new().failed(REMOVE_WORKTREE, format!("refused: {why}"));
        if now.is_main {
            return refuse("it is the main worktree".to_owned());
        }
        if !now.in_use_by.is_empty() {
            let users: Vec<String> = now
                .in_use_by
                .iter()
                .map(|p| format!("pid {} ({})", p.pid, p.command))
                .collect();
            return refuse(format!("in use by {}", users.join(", ")));
        }
        if now.head != planned.head || now.branch != planned.branch {
            return refuse(format!(
                "HEAD moved since it was listed ({} {} → {} {})",
                planned.branch.as_deref().unwrap_or("detached"),
                short(&planned.head),
                now.branch.as_deref().unwrap_or("detached"),
                short(&now.head)
            ));
        }
        match &now.merge {
            MergeState::Ancestor { .. } | MergeState::SquashedContent { .. } => {}
            MergeState::NotMerged { into } => {
                return refuse(format!("its work is not merged into {into}"));
            }
            MergeState::Unknown { why } => return refuse(format!("merge state unknown: {why}")),
        }
        let repo = match self.0.snapshot(&now.repo) {
            Ok(snap) => snap.git_cwd,
            Err(e) => return Removal::new().failed(REMOVE_WORKTREE, e.to_string()),
        };
        match cli::git(&repo, &["worktree", "remove", "--", &now.path]) {
            Err(e) => Removal::new().failed(REMOVE_WORKTREE, e),
            Ok(out) if out.status.success() => {
                Removal::new().done(REMOVE_WORKTREE, format!("git worktree remove {}", now.path))
            }
            Ok(out) => Removal::new().failed(REMOVE_WORKTREE, cli::message(&out)),
        }
    }
}

impl GitBranches {
    /// The configured repository an id (`REPO#branch`) belongs to, and the branch name.
    fn split<'a>(&self, id: &'a str) -> Result<(String, &'a str), InventoryError> {
        self.0
            .repo_names()
            .find_map(|repo| {
                let name = id.strip_prefix(repo.as_str())?.strip_prefix('#')?;
                Some((repo, name))
            })
            .ok_or_else(|| InventoryError::Refused {
                id: id.to_owned(),
                reason: "not a branch of a configured repository (REPO#branch)".to_owned(),
            })
    }
}

impl Inventory for GitBranches {
    fn kind(&self) -> Kind {
        Kind::Branch
    }

    fn list(&self) -> Result<Vec<Item>, InventoryError> {
        let mut items = Vec::new();
        for repo in self.0.repo_names() {
            let snap = self.0.snapshot(&repo)?;
            items.extend(self.0.branch_items(&snap, None));
        }
        Ok(items)
    }

    fn inspect(&self, id: &str) -> Result<Option<Item>, InventoryError> {
        let (repo, name) = self.split(id)?;
        let snap = self.0.snapshot(&repo)?;
        if is_protected(&snap, name) {
            return Err(InventoryError::Refused {
                id: id.to_owned(),
                reason: "the base branch or the main worktree's branch".to_owned(),
            });
        }
        Ok(self.0.branch_items(&snap, Some(name)).pop())
    }

    /// Re-reads the branch and deletes it only while its tip is the very commit that was
    /// listed, and that commit is in the base or a PR was merged from it (the rules, run again
    /// by apply, decide which of the two counts). A tip in the base goes with `git branch -d`,
    /// which refuses a branch not merged into HEAD and one checked out anywhere. A tip only a
    /// PR merged (a squash) goes with `git update-ref -d REF TIP`: git cannot see that merge,
    /// but deletes the ref only while it still points at exactly that tip.
    fn remove(&self, item: &Item, _now_ms: i64) -> Removal {
        let Facts::Branch(planned) = &item.facts else {
            return Removal::new().failed(DELETE_BRANCH, format!("{} is not a branch", item.id));
        };
        let now = match self.inspect(&item.id) {
            Err(e) => return Removal::new().failed(DELETE_BRANCH, e.to_string()),
            Ok(None) => return Removal::new().done(DELETE_BRANCH, "already gone"),
            Ok(Some(now)) => now,
        };
        let Facts::Branch(now) = now.facts else {
            return Removal::new().failed(DELETE_BRANCH, "internal: not a branch");
        };
        let refuse = |why: String| Removal::new().failed(DELETE_BRANCH, format!("refused: {why}"));
        if now.tip != planned.tip {
            return refuse(format!(
                "tip moved from {} to {} since it was listed",
                short(&planned.tip),
                short(&now.tip)
            ));
        }
        let in_base = now.merged_commit.as_deref() == Some(now.tip.as_str());
        let pr_at_tip = matches!(&now.pr, PrState::Merged { commit } if *commit == now.tip);
        if !in_base && !pr_at_tip {
            return refuse(format!(
                "tip {} is not in {} and no PR was merged from it: deleting it would lose work",
                short(&now.tip),
                self.0.base
            ));
        }
        if let Some(path) = &now.checked_out_in {
            return refuse(format!("checked out in worktree {path}"));
        }
        let repo = match self.0.snapshot(&now.repo) {
            Ok(snap) => snap.git_cwd,
            Err(e) => return Removal::new().failed(DELETE_BRANCH, e.to_string()),
        };
        let refname = format!("refs/heads/{}", now.name);
        let (args, done) = if in_base {
            (
                ["branch", "-d", "--", now.name.as_str()],
                format!("git branch -d {} (was {})", now.name, short(&now.tip)),
            )
        } else {
            (
                ["update-ref", "-d", refname.as_str(), now.tip.as_str()],
                format!(
                    "git update-ref -d {refname} (was {}, which its PR merged from)",
                    short(&now.tip)
                ),
            )
        };
        match cli::git(&repo, &args) {
            Err(e) => Removal::new().failed(DELETE_BRANCH, e),
            Ok(out) if out.status.success() => Removal::new().done(DELETE_BRANCH, done),
            Ok(out) => Removal::new().failed(DELETE_BRANCH, cli::message(&out)),
        }
    }
}
