//! Retention: old backups go, the ones an undo still needs stay, and both are reported.

mod common;

use common::{DAY_MS, NOW_MS, Scratch, write};
use nightwatch_backup::{BackupError, ByteSize, Limit, Limits, Retention, SnapshotId};
use std::fs;

fn snapshot_at(s: &Scratch, name: &str, content: &[u8], at_ms: i64) -> SnapshotId {
    let path = s.path(name);
    write(&path, content, 0o644);
    s.store
        .snapshot(&[path], &Limits::default(), at_ms)
        .unwrap()
        .id
}

fn objects(s: &Scratch) -> usize {
    common::read_tree(&s.store.root().join("objects"))
        .values()
        .filter(|n| matches!(n, common::Node::File { .. }))
        .count()
}

#[test]
fn prune_removes_old_snapshots_but_keeps_the_ones_still_needed_and_says_so() {
    let s = Scratch::new();
    let old = snapshot_at(&s, "old", b"old content", NOW_MS - 40 * DAY_MS);
    let needed = snapshot_at(&s, "needed", b"needed content", NOW_MS - 35 * DAY_MS);
    let recent = snapshot_at(&s, "recent", b"recent content", NOW_MS - DAY_MS);
    assert_eq!(objects(&s), 3);

    let pruned = s
        .store
        .prune(&Retention::default(), NOW_MS, &|id| *id == needed)
        .unwrap();

    assert_eq!(pruned.removed.len(), 1);
    assert_eq!(pruned.removed[0].id, old);
    assert_eq!(pruned.removed[0].why, Limit::OlderThan { keep_days: 30 });
    assert_eq!(pruned.kept.len(), 1);
    assert_eq!(pruned.kept[0].id, needed);
    assert_eq!(
        pruned.kept[0].over,
        vec![Limit::OlderThan { keep_days: 30 }]
    );
    assert_eq!(pruned.objects_removed, 1);
    assert!(pruned.unreadable.is_empty());
    assert_eq!(objects(&s), 2);

    // A pruned snapshot says so; the others still load and verify.
    match s.store.load(&old) {
        Err(BackupError::Pruned { why, .. }) => assert_eq!(why, "older than 30 days"),
        other => panic!("expected Pruned, got {other:?}"),
    }
    for id in [&needed, &recent] {
        let snapshot = s.store.load(id).unwrap();
        s.store.verify(&snapshot).unwrap();
    }
}

#[test]
fn prune_over_the_size_cap_removes_oldest_first_and_never_a_shared_object() {
    let s = Scratch::new();
    let shared = vec![b's'; 4000];
    let first = snapshot_at(&s, "a", &shared, NOW_MS - 3 * DAY_MS);
    let second = snapshot_at(&s, "b", &[b'b'; 4000], NOW_MS - 2 * DAY_MS);
    // The newest snapshot holds the same content as the oldest: one object, two references.
    let third = snapshot_at(&s, "c", &shared, NOW_MS - DAY_MS);

    let retention = Retention {
        keep_days: 30,
        max_total_bytes: Some(ByteSize(6000)),
    };
    let pruned = s.store.prune(&retention, NOW_MS, &|_| false).unwrap();

    let removed: Vec<_> = pruned.removed.iter().map(|r| r.id.clone()).collect();
    assert_eq!(removed, vec![first, second]);
    assert!(pruned.bytes_kept <= 6000, "{pruned:?}");
    let kept = s.store.load(&third).unwrap();
    s.store.verify(&kept).unwrap();
    assert_eq!(objects(&s), 1);
}

#[test]
fn prune_keeps_what_is_needed_even_over_the_size_cap() {
    let s = Scratch::new();
    let only = snapshot_at(&s, "a", &[b'a'; 4000], NOW_MS);
    let retention = Retention {
        keep_days: 30,
        max_total_bytes: Some(ByteSize(100)),
    };
    let pruned = s.store.prune(&retention, NOW_MS, &|_| true).unwrap();
    assert!(pruned.removed.is_empty());
    assert_eq!(pruned.kept[0].id, only);
    assert_eq!(
        pruned.kept[0].over,
        vec![Limit::OverTotal {
            max_total_bytes: ByteSize(100)
        }]
    );
}

#[test]
fn an_unreadable_manifest_stops_object_collection_and_is_reported() {
    let s = Scratch::new();
    let id = snapshot_at(&s, "a", b"content", NOW_MS);
    let manifest = s.store.root().join("snapshots").join(format!("{id}.json"));
    fs::write(&manifest, b"{ truncated").unwrap();

    let pruned = s
        .store
        .prune(&Retention::default(), NOW_MS, &|_| false)
        .unwrap();

    assert_eq!(pruned.unreadable.len(), 1);
    assert_eq!(pruned.objects_removed, 0);
    assert_eq!(objects(&s), 1, "its objects may still be needed");
}
