//! The path inventory on a real filesystem: ages from modification times, a keep file, and
//! symlinks that point out of the swept directory and must never lead the janitor there.

mod common;

use common::{DAY, HOUR};
use nightwatch_janitor::{
    AllowAll, Decision, Facts, Inventory, InventoryError, Item, JanitorState, Outcome, PathFacts,
    PathInventory, PathRule, Span, SweepRules, apply, plan,
};
use std::fs::{self, File};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

fn set_age(path: &Path, ms_ago: i64) {
    let when = UNIX_EPOCH + Duration::from_millis(u64::try_from(now_ms() - ms_ago).unwrap());
    File::open(path).unwrap().set_modified(when).unwrap();
}

struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    rules: SweepRules,
}

/// ```text
/// root/pytest-of-ann/pytest-1/         3d old                       → remove
/// root/pytest-of-ann/pytest-2/         3d old, but a file 1h old    → keep
/// root/pytest-of-ann/pytest-3/         9d old, .nightwatch-keep     → keep
/// root/pytest-of-ann/pytest-4 -> outside/precious/                 → unlink only
/// root/pytest-of-ann/notes.txt         old, does not match          → not listed
/// root/pytest-of-bob -> outside/       (holds pytest-9/, old)       → never entered
/// ```
fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let outside = tmp.path().join("outside");
    let ann = root.join("pytest-of-ann");
    for dir in ["pytest-1", "pytest-2", "pytest-3"] {
        fs::create_dir_all(ann.join(dir)).unwrap();
        fs::write(ann.join(dir).join("log.txt"), "x").unwrap();
    }
    fs::write(ann.join("pytest-3/.nightwatch-keep"), "").unwrap();
    fs::write(ann.join("notes.txt"), "x").unwrap();
    fs::create_dir_all(outside.join("precious")).unwrap();
    fs::write(outside.join("precious/data.db"), "keep me").unwrap();
    fs::create_dir_all(outside.join("pytest-9")).unwrap();
    symlink(outside.join("precious"), ann.join("pytest-4")).unwrap();
    symlink(&outside, root.join("pytest-of-bob")).unwrap();

    set_age(&ann.join("pytest-1/log.txt"), 3 * DAY);
    set_age(&ann.join("pytest-1"), 3 * DAY);
    set_age(&ann.join("pytest-2/log.txt"), HOUR);
    set_age(&ann.join("pytest-2"), 3 * DAY);
    set_age(&ann.join("pytest-3/.nightwatch-keep"), 9 * DAY);
    set_age(&ann.join("pytest-3/log.txt"), 9 * DAY);
    set_age(&ann.join("pytest-3"), 9 * DAY);
    set_age(&ann.join("notes.txt"), 9 * DAY);
    set_age(&outside.join("pytest-9"), 9 * DAY);

    let glob = format!("{}/pytest-of-*/pytest-*", root.display());
    let rules = SweepRules {
        paths: vec![PathRule::new(&glob, Span::days(2)).unwrap()],
        ..SweepRules::default()
    };
    Tree {
        _tmp: tmp,
        root,
        outside,
        rules,
    }
}

fn facts(item: &Item) -> &PathFacts {
    match &item.facts {
        Facts::Path(p) => p,
        other => panic!("not a path: {other:?}"),
    }
}

#[test]
fn lists_matches_without_following_symlinks() {
    let t = tree();
    let inventory = PathInventory::from_rules(&t.rules);
    let items = inventory.list().unwrap();
    let ann = t.root.join("pytest-of-ann");
    let ids: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
    let expected: Vec<String> = ["pytest-1", "pytest-2", "pytest-3", "pytest-4"]
        .iter()
        .map(|d| ann.join(d).display().to_string())
        .collect();
    assert_eq!(ids, expected, "pytest-of-bob is a symlink: never entered");
    assert!(facts(&items[3]).is_symlink && !facts(&items[3]).is_dir);
    assert!(facts(&items[2]).keep_file);
    let age = |i: usize| now_ms() - facts(&items[i]).modified_ms.unwrap();
    assert!((3 * DAY - 60_000..3 * DAY + 60_000).contains(&age(0)));
    assert!(
        age(1) < 2 * HOUR,
        "a directory is as young as its newest file"
    );
}

#[test]
fn plan_and_apply_remove_only_old_unkept_entries() {
    let t = tree();
    let inventory = PathInventory::from_rules(&t.rules);
    let items = inventory.list().unwrap();
    let now = now_ms();
    let planned = plan(&items, &t.rules, now, &JanitorState::new());
    let decisions: Vec<(String, Decision)> = planned
        .entries
        .iter()
        .map(|e| {
            let name = Path::new(&e.id).file_name().unwrap().to_string_lossy();
            (name.into_owned(), e.decision)
        })
        .collect();
    // pytest-4 (the symlink) was created just now: too young yet.
    assert_eq!(
        decisions,
        [
            ("pytest-1".into(), Decision::Remove),
            ("pytest-2".into(), Decision::Keep),
            ("pytest-3".into(), Decision::Keep),
            ("pytest-4".into(), Decision::Keep),
        ]
    );
    assert_eq!(planned.entries[2].reasons[0], "contains .nightwatch-keep");

    // Ten days on, the symlink is old too: it goes, its target stays.
    let later = now + 10 * DAY;
    let planned = plan(&items, &t.rules, later, &JanitorState::new());
    let removing: Vec<&str> = planned
        .removals()
        .map(|e| e.id.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(removing, ["pytest-1", "pytest-2", "pytest-4"]);
    let mut state = JanitorState::new();
    let applied = apply(
        &planned,
        &[&inventory],
        &t.rules,
        later,
        &mut state,
        &mut AllowAll,
    );
    assert!(
        applied.iter().all(|a| a.outcome == Outcome::Removed),
        "{applied:#?}"
    );
    assert_eq!(
        applied[2].removal.as_ref().unwrap().steps[0].detail,
        "unlinked the symlink; its target is left alone"
    );
    let ann = t.root.join("pytest-of-ann");
    assert!(!ann.join("pytest-1").exists());
    assert!(fs::symlink_metadata(ann.join("pytest-4")).is_err());
    assert!(ann.join("pytest-3/log.txt").exists());
    assert!(ann.join("notes.txt").exists());
    assert_eq!(
        fs::read_to_string(t.outside.join("precious/data.db")).unwrap(),
        "keep me"
    );
    assert!(t.outside.join("pytest-9").exists());
}

#[test]
fn a_write_after_the_plan_leaves_the_directory_alone() {
    let t = tree();
    let inventory = PathInventory::from_rules(&t.rules);
    let now = now_ms();
    let planned = plan(
        &inventory.list().unwrap(),
        &t.rules,
        now,
        &JanitorState::new(),
    );
    let dir = t.root.join("pytest-of-ann/pytest-1");
    fs::write(dir.join("new.txt"), "still in use").unwrap();
    let applied = apply(
        &planned,
        &[&inventory],
        &t.rules,
        now,
        &mut JanitorState::new(),
        &mut AllowAll,
    );
    let Outcome::Changed { what } = &applied[0].outcome else {
        panic!("{applied:?}");
    };
    assert!(what[0].starts_with("modified_ms: "), "{what:?}");
    assert!(dir.join("log.txt").exists());
}

fn crafted(id: &str, rule: &str) -> Item {
    Item {
        id: id.into(),
        name: id.into(),
        facts: Facts::Path(PathFacts {
            path: id.into(),
            rule: rule.into(),
            is_dir: true,
            is_symlink: false,
            modified_ms: Some(0),
            keep_file: false,
        }),
    }
}

#[test]
fn edited_plans_cannot_point_outside() {
    let t = tree();
    let inventory = PathInventory::from_rules(&t.rules);
    let glob = t.rules.paths[0].glob().to_owned();
    let through_link = t.root.join("pytest-of-bob/pytest-9").display().to_string();
    let dotdot = format!(
        "{}/pytest-of-ann/../pytest-of-ann/pytest-1",
        t.root.display()
    );
    let prefix = t.rules.paths[0].prefix().display().to_string();
    for (id, says) in [
        (
            through_link.as_str(),
            "is a symlink, which the janitor does not follow",
        ),
        ("/etc/passwd", "no paths rule covers it"),
        (dotdot.as_str(), "not a plain absolute path"),
        (prefix.as_str(), "no paths rule covers it"),
        ("/", "not a plain absolute path"),
        ("relative/pytest-1", "not a plain absolute path"),
    ] {
        match inventory.inspect(id) {
            Err(InventoryError::Refused { reason, .. }) => {
                assert!(reason.contains(says), "{id}: {reason}")
            }
            other => panic!("{id}: {other:?}"),
        }
        let removal = inventory.remove(&crafted(id, &glob), now_ms());
        assert!(!removal.succeeded(), "{id}");
        assert!(removal.steps[0].detail.contains(says), "{id}: {removal:?}");
    }
    assert!(t.outside.join("pytest-9").exists());
    assert!(t.root.join("pytest-of-ann/pytest-1").exists());
}

#[test]
fn gone_and_missing_prefixes() {
    let t = tree();
    let inventory = PathInventory::from_rules(&t.rules);
    let gone = t.root.join("pytest-of-ann/pytest-77").display().to_string();
    assert!(inventory.inspect(&gone).unwrap().is_none());
    let gone_parent = t.root.join("pytest-of-zed/pytest-1").display().to_string();
    assert!(inventory.inspect(&gone_parent).unwrap().is_none());

    let missing = PathInventory::new(&[PathRule::new(
        &format!("{}/nowhere/pytest-*", t.root.display()),
        Span::days(1),
    )
    .unwrap()]);
    assert!(missing.list().unwrap().is_empty());
}

#[test]
fn double_star_walks_deeper_but_stays_inside() {
    let t = tree();
    let deep = t.root.join("a/b/c");
    fs::create_dir_all(&deep).unwrap();
    fs::write(deep.join("core.123"), "").unwrap();
    let rule = PathRule::new(&format!("{}/**/core.*", t.root.display()), Span::days(1)).unwrap();
    let items = PathInventory::new(&[rule]).list().unwrap();
    let ids: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, [deep.join("core.123").display().to_string()]);
}
