//! The janitor's git inventories against real repositories: what each worktree and branch
//! is reported as, and what removal does and refuses.

mod fixture;

use fixture::{Repo, git};
use nightwatch_janitor::{
    Decision, Facts, Inventory, JanitorState, Kind, MergeState, PrState, Span, SweepRules, plan,
};
use std::process::{Child, Command};

fn main_into() -> String {
    "main".to_owned()
}

#[test]
fn fast_forward_and_merge_commit_are_ancestors() {
    let repo = Repo::new();
    repo.add_worked_worktree("ff");
    repo.add_worked_worktree("mc");
    git(&repo.root(), &["merge", "-q", "--ff-only", "ff"]);
    git(
        &repo.root(),
        &["merge", "-q", "--no-ff", "-m", "merge mc", "mc"],
    );

    for name in ["ff", "mc"] {
        let (item, w) = repo.worktree(name);
        assert_eq!(item.id, repo.wt(name).to_str().unwrap());
        assert_eq!(w.branch.as_deref(), Some(name));
        assert_eq!(
            w.merge,
            MergeState::Ancestor { into: main_into() },
            "{name}"
        );
        assert_eq!(w.dirty, None, "{name}");
        assert!(!w.is_main && w.locked.is_none() && w.in_use_by.is_empty());
        assert_eq!(w.head.len(), 40);
        assert!(w.created_ms.is_some(), "{name}: created from the admin dir");
        assert_eq!(
            w.pr,
            PrState::Unknown {
                why: "no PR provider configured".to_owned()
            }
        );
    }
}

#[test]
fn squash_merged_worktree_is_merged_by_content() {
    let repo = Repo::new();
    let sq = repo.add_worked_worktree("sq");
    repo.write(&sq, "src/lib.rs", "pub fn one() {}\npub fn two() {}\n");
    repo.commit(&sq, "second commit on sq");
    let open = repo.add_worked_worktree("open");
    // Main moves on independently, then takes sq as one squashed commit.
    repo.write(&repo.root(), "CHANGELOG.md", "main moved\n");
    repo.commit(&repo.root(), "main work");
    git(&repo.root(), &["merge", "-q", "--squash", "sq"]);
    repo.commit(&repo.root(), "squash sq");

    let (_, w) = repo.worktree("sq");
    assert_eq!(w.merge, MergeState::SquashedContent { into: main_into() });
    let (_, w) = repo.worktree("open");
    assert_eq!(w.merge, MergeState::NotMerged { into: main_into() });

    // Strict on purpose: once main edits a file the branch changed, it is no longer provable.
    repo.write(
        &repo.root(),
        "src/lib.rs",
        "pub fn one() {}\npub fn two() {}\npub fn three() {}\n",
    );
    repo.commit(&repo.root(), "main edits lib.rs again");
    let (_, w) = repo.worktree("sq");
    assert_eq!(w.merge, MergeState::NotMerged { into: main_into() });
    drop(open);
}

#[test]
fn dirty_worktrees_say_what_is_uncommitted() {
    let repo = Repo::new();
    let modified = repo.add_worktree("modified");
    repo.write(&modified, "README.md", "changed\n");
    let untracked = repo.add_worktree("untracked");
    repo.write(&untracked, "notes.txt", "scratch\n");
    let staged = repo.add_worktree("staged");
    repo.write(&staged, "src/lib.rs", "pub fn staged() {}\n");
    git(&staged, &["add", "src/lib.rs"]);
    repo.write(&staged, "README.md", "changed\n");
    repo.write(&staged, "a.txt", "a\n");

    assert_eq!(
        repo.worktree("modified").1.dirty.as_deref(),
        Some("1 modified")
    );
    assert_eq!(
        repo.worktree("untracked").1.dirty.as_deref(),
        Some("1 untracked")
    );
    assert_eq!(
        repo.worktree("staged").1.dirty.as_deref(),
        Some("1 staged, 1 modified, 1 untracked")
    );
}

#[test]
fn locked_worktree_reports_its_reason() {
    let repo = Repo::new();
    let path = repo.add_worktree("locked");
    git(
        &repo.root(),
        &[
            "worktree",
            "lock",
            "--reason",
            "on a USB disk",
            path.to_str().unwrap(),
        ],
    );
    repo.add_worktree("bare-lock");
    git(
        &repo.root(),
        &["worktree", "lock", repo.wt("bare-lock").to_str().unwrap()],
    );
    assert_eq!(
        repo.worktree("locked").1.locked.as_deref(),
        Some("on a USB disk")
    );
    assert_eq!(repo.worktree("bare-lock").1.locked.as_deref(), Some(""));

    // Clean and merged (it has no commits of its own), yet git refuses a locked one.
    let (item, _) = repo.worktree("locked");
    let removal = repo.inventory().worktrees().remove(&item, now_ms());
    let error = removal.error().unwrap();
    assert!(error.contains("locked"), "{error}");
    assert!(path.exists());
}

#[test]
fn main_worktree_is_main() {
    let repo = Repo::new();
    repo.add_worktree("side");
    let items = repo.worktree_items();
    assert_eq!(items.len(), 2);
    let (item, w) = repo.worktree("repo");
    assert!(w.is_main);
    assert_eq!(item.id, repo.root().to_str().unwrap());
    assert_eq!(w.branch.as_deref(), Some("main"));
    assert_eq!(w.created_ms, None);
    assert!(!repo.worktree("side").1.is_main);
}

/// Kills and reaps the process when the test ends, pass or fail.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn process_inside_worktree_is_in_use() {
    let repo = Repo::new();
    let busy = repo.add_worktree("busy");
    repo.add_worktree("idle");
    std::fs::create_dir_all(busy.join("deep/inside")).unwrap();
    let sleeper = Running(
        Command::new("sleep")
            .arg("300")
            .current_dir(busy.join("deep/inside"))
            .spawn()
            .expect("sleep starts"),
    );
    let (_, w) = repo.worktree("busy");
    assert_eq!(w.in_use_by.len(), 1, "{:?}", w.in_use_by);
    assert_eq!(w.in_use_by[0].pid, sleeper.0.id());
    assert_eq!(w.in_use_by[0].command, "sleep");
    assert!(repo.worktree("idle").1.in_use_by.is_empty());
    // The main worktree's folder does not contain the others here, and is not in use either.
    assert!(repo.worktree("repo").1.in_use_by.is_empty());

    // Merged and clean, but a process works inside: removal is refused, not forced.
    git(&repo.root(), &["merge", "-q", "--ff-only", "busy"]);
    let (item, _) = repo.worktree("busy");
    let removal = repo.inventory().worktrees().remove(&item, now_ms());
    let error = removal.error().unwrap();
    assert!(
        error.contains(&format!("in use by pid {} (sleep)", sleeper.0.id())),
        "{error}"
    );
    assert!(busy.exists());
}

#[test]
fn merged_clean_worktree_goes_then_its_branch() {
    let repo = Repo::new();
    let done = repo.add_worked_worktree("done");
    git(&repo.root(), &["merge", "-q", "--ff-only", "done"]);
    let inventory = repo.inventory();
    let worktrees = inventory.worktrees();
    let branches = inventory.branches();

    let branch_ids: Vec<String> = branches.list().unwrap().into_iter().map(|i| i.id).collect();
    let done_id = format!("{}#done", repo.root().display());
    assert_eq!(
        branch_ids,
        vec![done_id.clone()],
        "never main, the base and main's branch"
    );
    let branch = branches.inspect(&done_id).unwrap().unwrap();
    let Facts::Branch(b) = &branch.facts else {
        panic!()
    };
    assert_eq!(b.merged_commit.as_deref(), Some(b.tip.as_str()));
    assert_eq!(b.checked_out_in.as_deref(), done.to_str());

    // The folder first: the branch is refused while it is still checked out.
    let refused = branches.remove(&branch, now_ms());
    assert!(!refused.succeeded());
    assert!(
        refused.error().unwrap().contains("checked out in worktree"),
        "{refused:?}"
    );

    let (item, _) = repo.worktree("done");
    let removal = worktrees.remove(&item, now_ms());
    assert!(removal.succeeded(), "{removal:?}");
    assert_eq!(removal.steps[0].what, "remove worktree folder");
    assert!(!done.exists());
    assert_eq!(worktrees.inspect(&item.id).unwrap(), None);

    let branch = branches.inspect(&done_id).unwrap().unwrap();
    let removal = branches.remove(&branch, now_ms());
    assert!(removal.succeeded(), "{removal:?}");
    assert_eq!(removal.steps[0].what, "delete branch");
    assert_eq!(git(&repo.root(), &["branch", "--list", "done"]), "");
    assert_eq!(branches.inspect(&done_id).unwrap(), None);
}

#[test]
fn branch_whose_tip_moved_after_merge_is_not_deleted() {
    let repo = Repo::new();
    let moved = repo.add_worked_worktree("moved");
    git(&repo.root(), &["merge", "-q", "--ff-only", "moved"]);
    git(
        &repo.root(),
        &["worktree", "remove", moved.to_str().unwrap()],
    );
    let branches = repo.inventory().branches();
    let id = format!("{}#moved", repo.root().display());
    let listed = branches.inspect(&id).unwrap().unwrap();

    // New work lands on the branch after it was listed as merged.
    git(&repo.root(), &["checkout", "-q", "moved"]);
    repo.write(&repo.root(), "more.txt", "more\n");
    repo.commit(&repo.root(), "more work after the merge");
    git(&repo.root(), &["checkout", "-q", "main"]);

    let removal = branches.remove(&listed, now_ms());
    assert!(!removal.succeeded());
    assert!(
        removal.error().unwrap().contains("tip moved from"),
        "{removal:?}"
    );
    assert_ne!(git(&repo.root(), &["branch", "--list", "moved"]), "");

    // Listed afresh, it has no merged commit, and removing it is refused as well.
    let now = branches.inspect(&id).unwrap().unwrap();
    let Facts::Branch(b) = &now.facts else {
        panic!()
    };
    assert_eq!(b.merged_commit, None);
    let removal = branches.remove(&now, now_ms());
    assert!(
        removal.error().unwrap().contains("is not in main"),
        "{removal:?}"
    );
    assert_ne!(git(&repo.root(), &["branch", "--list", "moved"]), "");
}

#[test]
fn dirty_worktree_removal_fails_and_is_reported() {
    let repo = Repo::new();
    let modified = repo.add_worked_worktree("modified");
    let untracked = repo.add_worked_worktree("untracked");
    git(
        &repo.root(),
        &["merge", "-q", "--no-ff", "-m", "m", "modified"],
    );
    git(
        &repo.root(),
        &["merge", "-q", "--no-ff", "-m", "u", "untracked"],
    );
    let worktrees = repo.inventory().worktrees();
    let (m_item, _) = repo.worktree("modified");
    let (u_item, _) = repo.worktree("untracked");
    // Planned clean; by removal time there is work in them.
    repo.write(&modified, "modified.txt", "edited after the plan\n");
    repo.write(&untracked, "scratch.txt", "new\n");

    for (item, path) in [(m_item, &modified), (u_item, &untracked)] {
        let removal = worktrees.remove(&item, now_ms());
        assert!(!removal.succeeded(), "{removal:?}");
        let error = removal.error().unwrap();
        assert!(error.starts_with("remove worktree folder: "), "{error}");
        assert!(
            error.contains("contains modified or untracked files"),
            "{error}"
        );
        assert!(path.exists(), "the folder stays");
    }
}

#[test]
fn without_a_pr_provider_every_worktree_is_kept() {
    let repo = Repo::new();
    repo.add_worked_worktree("merged");
    repo.add_worked_worktree("open");
    git(&repo.root(), &["merge", "-q", "--ff-only", "merged"]);
    let inventory = repo.inventory();
    let mut items = inventory.worktrees().list().unwrap();
    items.extend(inventory.branches().list().unwrap());

    let mut rules = SweepRules::default();
    rules.worktrees.min_age = Span::from_ms(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        + 10 * 86_400_000;
    let plan = plan(&items, &rules, now, &JanitorState::new());

    let worktrees: Vec<_> = plan
        .entries
        .iter()
        .filter(|e| e.kind == Kind::Worktree)
        .collect();
    assert_eq!(worktrees.len(), 3);
    for entry in worktrees {
        assert_eq!(entry.decision, Decision::Keep, "{entry:?}");
        assert!(
            entry
                .reasons
                .iter()
                .any(|r| r == "PR state unknown: no PR provider configured"),
            "{:?}",
            entry.reasons
        );
    }
    // The merged worktree is otherwise finished: the PR state is all that keeps it.
    let merged = plan
        .entries
        .iter()
        .find(|e| e.name.ends_with("/merged"))
        .unwrap();
    assert_eq!(
        merged.reasons[0],
        "PR state unknown: no PR provider configured"
    );
    assert!(
        merged
            .reasons
            .contains(&"branch merged merged into main".to_owned())
    );
    // Its branch stays with it: checked out in a worktree that is kept.
    let branch = plan
        .entries
        .iter()
        .find(|e| e.kind == Kind::Branch && e.name == "merged")
        .unwrap();
    assert_eq!(branch.decision, Decision::Keep);
}

/// This machine's clock, as the janitor's apply passes it to a removal.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
