//! What gix reads from one repository: its worktree registrations, each worktree's HEAD, the
//! local branches, the base's tip, and how each commit stands against the base.
//!
//! Nothing here runs `git` or writes anything; uncommitted changes need the index and the
//! working tree, and those are read by the CLI (see `cli.rs`).

use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryMode;
use nightwatch_janitor::MergeState;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One repository as it is now.
pub(crate) struct Snapshot {
    /// The repository as configured: the prefix of branch ids and `repo` in the facts.
    pub repo: String,
    /// Where `git -C` runs: the main worktree, or the common dir of a bare repository.
    pub git_cwd: PathBuf,
    pub base_name: String,
    /// The base's tip, or why it could not be read.
    pub base: Result<ObjectId, String>,
    /// The branch checked out in the main worktree.
    pub main_branch: Option<String>,
    pub worktrees: Vec<Worktree>,
    pub branches: Vec<(String, ObjectId)>,
    handle: gix::Repository,
}

/// A worktree as its registration and HEAD describe it.
pub(crate) struct Worktree {
    /// The checkout, as git recorded it.
    pub path: PathBuf,
    /// `.git/worktrees/<name>`; `None` for the main worktree.
    pub admin_dir: Option<PathBuf>,
    pub branch: Option<String>,
    /// HEAD's commit, or why there is none (unborn, unreadable).
    pub head: Result<ObjectId, String>,
    pub is_main: bool,
    pub locked: Option<String>,
}

fn err(what: impl std::fmt::Display) -> impl FnOnce(gix::Error) -> String {
    move |e| format!("{what}: {e}")
}

impl Snapshot {
    pub fn read(repo: &str, base_name: &str) -> Result<Snapshot, String> {
        // Isolated: no GIT_DIR from the caller's environment and no user or system config
        // decide which repository or which refs are read.
        let opened = gix::open_opts(repo, gix::open::Options::isolated())
            .map_err(err(format_args!("cannot open {repo}")))?;
        let mut handle = opened.main_repo().map_err(err(format_args!(
            "cannot find the main repository of {repo}"
        )))?;
        handle.object_cache_size_if_unset(4 << 20);
        let git_cwd = handle
            .workdir()
            .unwrap_or_else(|| handle.common_dir())
            .to_path_buf();

        let mut worktrees = Vec::new();
        let mut main_branch = None;
        if let Some(workdir) = handle.workdir() {
            let (branch, head) = head_of(&handle);
            main_branch.clone_from(&branch);
            worktrees.push(Worktree {
                path: workdir.to_path_buf(),
                admin_dir: None,
                branch,
                head,
                is_main: true,
                locked: None,
            });
        }
        let proxies = handle
            .worktrees()
            .map_err(err(format_args!("cannot list the worktrees of {repo}")))?;
        for proxy in proxies {
            let Ok(path) = proxy.base() else {
                // A registration without a readable `gitdir` is git's to prune, not ours.
                continue;
            };
            let admin_dir = proxy.git_dir().to_path_buf();
            let locked = proxy.lock_reason().map(|r| r.to_str_lossy().into_owned());
            let (branch, head) = match proxy.into_repo_with_possibly_inaccessible_worktree() {
                Ok(wt) => head_of(&wt),
                Err(e) => (None, Err(format!("cannot open the worktree: {e}"))),
            };
            worktrees.push(Worktree {
                path,
                admin_dir: Some(admin_dir),
                branch,
                head,
                is_main: false,
                locked,
            });
        }

        let mut branches = Vec::new();
        let platform = handle
            .references()
            .map_err(err(format_args!("cannot read the refs of {repo}")))?;
        let iter = platform
            .local_branches()
            .map_err(err(format_args!("cannot read the branches of {repo}")))?;
        for reference in iter {
            let mut reference =
                reference.map_err(|e| format!("cannot read a branch of {repo}: {e}"))?;
            let name = reference.name().shorten().to_str_lossy().into_owned();
            let tip = reference
                .peel_to_id()
                .map_err(err(format_args!("cannot resolve branch {name} in {repo}")))?
                .detach();
            branches.push((name, tip));
        }

        let base = match handle.find_reference(format!("refs/heads/{base_name}").as_str()) {
            Ok(mut r) => r
                .peel_to_id()
                .map(|id| id.detach())
                .map_err(|e| format!("cannot resolve the base branch {base_name}: {e}")),
            // A base like `origin/main` is not a local branch.
            Err(_) => handle
                .rev_parse_single(base_name)
                .map(|id| id.detach())
                .map_err(|_| format!("the base {base_name} does not exist in {repo}")),
        };

        Ok(Snapshot {
            repo: repo.to_owned(),
            git_cwd,
            base_name: base_name.to_owned(),
            base,
            main_branch,
            worktrees,
            branches,
            handle,
        })
    }

    /// The merge base of each commit with the base, with one commit graph for all of them.
    /// `Err` when the base is unknown or the walk failed.
    pub fn merge_bases(&self, commits: &[ObjectId]) -> Vec<Result<Option<ObjectId>, String>> {
        let base = match &self.base {
            Ok(base) => *base,
            Err(why) => return commits.iter().map(|_| Err(why.clone())).collect(),
        };
        let cache = self.handle.commit_graph_if_enabled().ok().flatten();
        let mut graph = self.handle.revision_graph(cache.as_ref());
        commits
            .iter()
            .map(|commit| {
                self.handle
                    .merge_bases_many_with_graph(*commit, &[base], &mut graph)
                    .map(|bases| bases.first().map(|id| id.detach()))
                    .map_err(|e| format!("cannot walk history from {commit}: {e}"))
            })
            .collect()
    }

    /// Whether each commit is the base's tip or one of its ancestors.
    pub fn in_base(&self, commits: &[ObjectId]) -> Vec<Result<bool, String>> {
        self.merge_bases(commits)
            .into_iter()
            .zip(commits)
            .map(|(mb, commit)| mb.map(|mb| mb == Some(*commit)))
            .collect()
    }

    /// How each HEAD stands against the base: an ancestor, squashed in by content, or not.
    pub fn merge_states(&self, heads: &[Result<ObjectId, String>]) -> Vec<MergeState> {
        let known: Vec<ObjectId> = heads
            .iter()
            .filter_map(|h| h.as_ref().ok())
            .copied()
            .collect();
        let mut bases = self.merge_bases(&known).into_iter();
        heads
            .iter()
            .map(|head| match head {
                Err(why) => MergeState::Unknown { why: why.clone() },
                Ok(head) => {
                    let mb = bases
                        .next()
                        .unwrap_or_else(|| Err("internal: no merge base".into()));
                    self.merge_state(*head, mb)
                }
            })
            .collect()
    }

    fn merge_state(
        &self,
        head: ObjectId,
        merge_base: Result<Option<ObjectId>, String>,
    ) -> MergeState {
        let into = self.base_name.clone();
        let (base, merge_base) = match (&self.base, merge_base) {
            (Err(why), _) => return MergeState::Unknown { why: why.clone() },
            (_, Err(why)) => return MergeState::Unknown { why },
            (Ok(base), Ok(merge_base)) => (*base, merge_base),
        };
        match merge_base {
            Some(mb) if mb == head => MergeState::Ancestor { into },
            // Unrelated histories: nothing of it came from the base or went into it.
            None => MergeState::NotMerged { into },
            Some(mb) => match self.squashed(mb, head, base) {
                Ok(true) => MergeState::SquashedContent { into },
                Ok(false) => MergeState::NotMerged { into },
                Err(why) => MergeState::Unknown {
                    why: format!("cannot compare trees: {why}"),
                },
            },
        }
    }

    /// Whether everything the branch changed (`merge_base..head`) is already in the base:
    /// every path whose entry differs between the merge base's tree and HEAD's tree has, in
    /// the base's tree, exactly HEAD's entry (same mode and object, or absent in both).
    ///
    /// This is what a squash merge leaves behind, however many commits were squashed. It is
    /// deliberately strict: if the base changed one of those files again after the squash, the
    /// branch is reported not merged and kept, never guessed finished.
    fn squashed(
        &self,
        merge_base: ObjectId,
        head: ObjectId,
        base: ObjectId,
    ) -> Result<bool, String> {
        let tree_of = |commit: ObjectId| -> Result<ObjectId, String> {
            self.handle
                .find_commit(commit)
                .and_then(|c| c.tree_id())
                .map(|id| id.detach())
                .map_err(|e| format!("commit {commit}: {e}"))
        };
        let entry = |id| Some((EntryMode::from(gix::objs::tree::EntryKind::Tree), id));
        self.contained(
            entry(tree_of(merge_base)?),
            entry(tree_of(head)?),
            entry(tree_of(base)?),
        )
    }

    /// The three-way comparison at one path: `m` the merge base's entry, `h` HEAD's, `b` the
    /// base's. Only subtrees that differ are opened, so an unchanged repository costs nothing.
    fn contained(
        &self,
        m: Option<Entry>,
        h: Option<Entry>,
        b: Option<Entry>,
    ) -> Result<bool, String> {
        if h == b || h == m {
            return Ok(true);
        }
        let is_tree = |e: &Option<Entry>| e.is_some_and(|(mode, _)| mode.is_tree());
        // Descend where HEAD has a directory, or deleted one: its entries decide.
        if !(is_tree(&h) || (h.is_none() && is_tree(&m))) {
            return Ok(false);
        }
        let (hm, mm, bm) = (self.children(h)?, self.children(m)?, self.children(b)?);
        for name in hm.keys().chain(mm.keys()) {
            let at = |map: &BTreeMap<BString, Entry>| map.get(name).copied();
            if !self.contained(at(&mm), at(&hm), at(&bm))? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn children(&self, entry: Option<Entry>) -> Result<BTreeMap<BString, Entry>, String> {
        let mut out = BTreeMap::new();
        let Some((_, id)) = entry.filter(|(mode, _)| mode.is_tree()) else {
            return Ok(out);
        };
        let tree = self
            .handle
            .find_tree(id)
            .map_err(|e| format!("tree {id}: {e}"))?;
        let decoded = tree.decode().map_err(|e| format!("tree {id}: {e}"))?;
        for e in &decoded.entries {
            out.insert(BString::from(e.filename), (e.mode, e.oid.to_owned()));
        }
        Ok(out)
    }

    /// When `commit` was committed (its committer time, ms since 1970), if it can be read.
    pub fn committed_ms(&self, commit: ObjectId) -> Option<i64> {
        let seconds = self.handle.find_commit(commit).ok()?.time().ok()?.seconds;
        seconds.checked_mul(1000)
    }

    /// The worktree registered at `path`, compared as canonical paths where they exist.
    pub fn worktree_at(&self, path: &Path) -> Option<&Worktree> {
        let want = canonical(path);
        self.worktrees.iter().find(|w| canonical(&w.path) == want)
    }
}

type Entry = (EntryMode, ObjectId);

/// The branch HEAD names (if any) and its commit.
fn head_of(repo: &gix::Repository) -> (Option<String>, Result<ObjectId, String>) {
    let head = match repo.head() {
        Ok(head) => head,
        Err(e) => return (None, Err(format!("cannot read HEAD: {e}"))),
    };
    let branch = head
        .referent_name()
        .map(|name| name.shorten().to_str_lossy().into_owned());
    let id = if head.is_unborn() {
        Err("HEAD has no commit yet".to_owned())
    } else {
        head.into_peeled_id()
            .map(|id| id.detach())
            .map_err(|e| format!("cannot resolve HEAD: {e}"))
    };
    (branch, id)
}

/// The path with symlinks resolved, or as given when it does not exist.
pub(crate) fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
