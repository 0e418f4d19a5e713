//! Undo, end to end on a real directory: what the agent did, and the restore that takes it back.

mod common;

use common::{Node, Scratch, write};
use nightwatch_backup::{
    BackupError, BackupStore, ByteSize, Did, Limits, PathState, RestoreError, SkipReason,
};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};

#[test]
fn edited_config_comes_back_byte_exact_with_its_mode() {
    let s = Scratch::new();
    let conf = s.path("app.conf");
    let original = b"listen 80;\n\x00binary\xff tail without newline";
    write(&conf, original, 0o640);
    let before = s.tree();

    let (snapshot, after) = s.around(&[&conf], || {
        write(&conf, b"listen 8080;\n", 0o600);
    });
    let restored = s.store.restore(&snapshot, Some(&after), false).unwrap();

    assert_eq!(s.tree(), before);
    assert_eq!(restored.steps.len(), 1);
    assert_eq!(
        restored.steps[0].did,
        Did::WroteFile {
            size: original.len() as u64
        }
    );
}

#[test]
fn deleted_file_comes_back() {
    let s = Scratch::new();
    let log = s.path("keep.log");
    write(&log, b"evidence", 0o644);
    let before = s.tree();

    let (snapshot, after) = s.around(&[&log], || fs::remove_file(&log).unwrap());
    s.store.restore(&snapshot, Some(&after), false).unwrap();

    assert_eq!(s.tree(), before);
}

#[test]
fn file_the_action_created_is_removed() {
    let s = Scratch::new();
    let new = s.path("new.txt");
    let (snapshot, after) = s.around(&[&new], || write(&new, b"hello", 0o644));
    assert_eq!(snapshot.paths[0].state, PathState::Absent);

    let restored = s.store.restore(&snapshot, Some(&after), false).unwrap();

    assert!(s.tree().is_empty());
    assert_eq!(restored.steps[0].did, Did::Removed);
}

#[test]
fn mv_over_another_file_is_undone() {
    let s = Scratch::new();
    let (a, b, c) = (s.path("a"), s.path("b"), s.path("c"));
    write(&a, b"moved", 0o644);
    write(&c, b"overwritten by the move", 0o600);
    let before = s.tree();

    // `mv a b` and `mv a c` (over an existing file), in two actions undone in reverse.
    let (first, first_after) = s.around(&[&a, &b], || fs::rename(&a, &b).unwrap());
    let (second, second_after) = s.around(&[&b, &c], || fs::rename(&b, &c).unwrap());
    s.store
        .restore(&second, Some(&second_after), false)
        .unwrap();
    s.store.restore(&first, Some(&first_after), false).unwrap();

    assert_eq!(s.tree(), before);
}

#[test]
fn removed_directory_with_nested_files_symlink_and_empty_dir_comes_back() {
    let s = Scratch::new();
    let site = s.path("site");
    fs::create_dir_all(site.join("css/vendor")).unwrap();
    fs::create_dir(site.join("empty")).unwrap();
    write(&site.join("index.html"), b"<h1>hi</h1>", 0o644);
    write(&site.join("css/main.css"), b"body{}", 0o600);
    write(&site.join("css/vendor/x.css"), b"", 0o644);
    symlink("css/main.css", site.join("style.css")).unwrap();
    symlink("/nonexistent/dangling", site.join("dangling")).unwrap();
    fs::set_permissions(site.join("css"), fs::Permissions::from_mode(0o750)).unwrap();
    let before = s.tree();

    let (snapshot, after) = s.around(&[&site], || fs::remove_dir_all(&site).unwrap());
    s.store.restore(&snapshot, Some(&after), false).unwrap();

    assert_eq!(s.tree(), before);
}

#[test]
fn directory_edited_in_place_loses_what_the_action_added() {
    let s = Scratch::new();
    let dir = s.path("conf.d");
    fs::create_dir(&dir).unwrap();
    write(&dir.join("a.conf"), b"a", 0o644);
    write(&dir.join("b.conf"), b"b", 0o644);
    let before = s.tree();

    let (snapshot, after) = s.around(&[&dir], || {
        write(&dir.join("a.conf"), b"A!", 0o644);
        fs::remove_file(dir.join("b.conf")).unwrap();
        fs::create_dir_all(dir.join("new/deeper")).unwrap();
        write(&dir.join("new/deeper/c.conf"), b"c", 0o644);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    });
    s.store.restore(&snapshot, Some(&after), false).unwrap();

    assert_eq!(s.tree(), before);
}

#[test]
fn write_through_a_symlink_is_undone_in_the_file_it_points_to() {
    let s = Scratch::new();
    let real = s.path("real.conf");
    let link = s.path("link.conf");
    write(&real, b"original", 0o644);
    symlink(&real, &link).unwrap();
    let before = s.tree();

    // The agent's Write names the link; the write lands in the file behind it.
    let (snapshot, after) = s.around(&[&link], || fs::write(&link, b"changed").unwrap());
    assert!(snapshot.paths().contains(&real));
    s.store.restore(&snapshot, Some(&after), false).unwrap();

    assert_eq!(s.tree(), before);
}

#[test]
fn file_over_the_limit_is_recorded_as_skipped_and_its_restore_refused() {
    let s = Scratch::new();
    let (big, small) = (s.path("big.bin"), s.path("small.txt"));
    write(&big, &[7u8; 2048], 0o644);
    write(&small, b"small", 0o644);
    let limits = Limits {
        max_file_bytes: ByteSize(1024),
        ..Limits::default()
    };

    let (snapshot, after) = s.around_with(&[&big, &small], &limits, || {
        fs::remove_file(&big).unwrap();
        fs::remove_file(&small).unwrap();
    });
    let skipped = &snapshot.paths[0];
    assert_eq!(skipped.path, big);
    assert_eq!(
        skipped.state,
        PathState::Skipped {
            reason: SkipReason::FileTooLarge {
                size: 2048,
                limit: 1024
            }
        }
    );

    let err = s.store.restore(&snapshot, Some(&after), false).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, RestoreError::NotBackedUp { .. }), "{err:?}");
    assert!(
        message.contains("big.bin: not backed up: the file is 2 KiB, over the 1 KiB backup limit"),
        "{message}"
    );
    assert!(s.tree().is_empty(), "nothing restored on refusal");

    // Forced: everything else comes back, the skipped file is reported, not invented.
    let restored = s.store.restore(&snapshot, Some(&after), true).unwrap();
    assert_eq!(
        s.tree().into_keys().collect::<Vec<_>>(),
        vec![std::path::PathBuf::from("small.txt")]
    );
    assert!(
        restored
            .steps
            .iter()
            .any(|st| st.path == big && matches!(st.did, Did::LeftAsIs { .. }))
    );
}

#[test]
fn directory_over_the_entry_limit_is_skipped_not_partly_kept() {
    let s = Scratch::new();
    let dir = s.path("many");
    fs::create_dir(&dir).unwrap();
    for i in 0..5 {
        write(&dir.join(i.to_string()), b"x", 0o644);
    }
    let limits = Limits {
        max_dir_entries: 4,
        ..Limits::default()
    };
    let snapshot = s
        .store
        .snapshot(std::slice::from_ref(&dir), &limits, common::NOW_MS)
        .unwrap();
    assert_eq!(
        snapshot.paths[0].state,
        PathState::Skipped {
            reason: SkipReason::DirTooManyEntries { limit: 4 }
        }
    );
}

#[test]
fn change_made_after_the_action_is_refused_whole_then_forced() {
    let s = Scratch::new();
    let (conf, other) = (s.path("app.conf"), s.path("other.conf"));
    write(&conf, &[b'x'; 100], 0o644);
    write(&other, b"other before", 0o644);
    let before = s.tree();

    let (snapshot, after) = s.around(&[&other, &conf], || {
        write(&other, b"other after", 0o644);
        write(&conf, &[b'y'; 120], 0o644);
    });
    // Someone edits the file again after the agent did.
    write(&conf, &[b'z'; 131], 0o644);
    let edited = s.tree();

    let err = s.store.restore(&snapshot, Some(&after), false).unwrap_err();
    let RestoreError::ChangedSince { changes } = &err else {
        panic!("expected ChangedSince, got {err:?}");
    };
    assert_eq!(changes.len(), 1);
    assert_eq!(
        changes[0].to_string(),
        format!(
            "{}: content changed since the action (size 120 -> 131)",
            conf.display()
        )
    );
    assert!(err.to_string().contains("force"), "{err}");
    assert_eq!(
        s.tree(),
        edited,
        "a refused restore writes nothing, not even other.conf"
    );

    s.store.restore(&snapshot, Some(&after), true).unwrap();
    assert_eq!(s.tree(), before);
}

#[test]
fn file_recreated_after_the_action_deleted_it_is_a_conflict() {
    let s = Scratch::new();
    let path = s.path("f");
    write(&path, b"one", 0o644);
    let (snapshot, after) = s.around(&[&path], || fs::remove_file(&path).unwrap());
    fs::create_dir(&path).unwrap();

    let err = s.store.restore(&snapshot, Some(&after), false).unwrap_err();
    assert!(
        err.to_string()
            .contains("f: created since the action (now a directory)"),
        "{err}"
    );
}

#[test]
fn restore_without_an_after_state_refuses_unless_forced() {
    let s = Scratch::new();
    let conf = s.path("app.conf");
    write(&conf, b"before", 0o644);
    let before = s.tree();
    let (snapshot, _) = s.around(&[&conf], || write(&conf, b"after", 0o644));

    let err = s.store.restore(&snapshot, None, false).unwrap_err();
    assert!(matches!(err, RestoreError::AfterUnknown));
    assert!(err.to_string().contains("not recorded"), "{err}");
    assert_eq!(fs::read(&conf).unwrap(), b"after");

    s.store.restore(&snapshot, None, true).unwrap();
    assert_eq!(s.tree(), before);
}

#[test]
fn undo_twice_is_harmless() {
    let s = Scratch::new();
    let conf = s.path("app.conf");
    write(&conf, b"before", 0o644);
    let (snapshot, after) = s.around(&[&conf], || write(&conf, b"after", 0o644));

    s.store.restore(&snapshot, Some(&after), false).unwrap();
    let again = s.store.restore(&snapshot, Some(&after), false).unwrap();

    assert_eq!(again.steps[0].did, Did::Unchanged);
    assert_eq!(fs::read(&conf).unwrap(), b"before");
}

#[test]
fn non_utf8_file_names_round_trip() {
    let s = Scratch::new();
    let name = OsStr::from_bytes(b"caf\xe9-latin1.txt");
    let top = s.files.join(name);
    let dir = s.path("d");
    fs::create_dir(&dir).unwrap();
    write(&top, b"top", 0o644);
    write(&dir.join(OsStr::from_bytes(b"\xff\xfe")), b"nested", 0o644);
    let before = s.tree();

    let (snapshot, after) = s.around(&[&top, &dir], || {
        fs::remove_file(&top).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    });
    // Through the manifest on disk, not just the value in memory.
    let loaded = s.store.load(&snapshot.id).unwrap();
    assert_eq!(loaded, snapshot);
    let manifest = fs::read_to_string(
        s.store
            .root()
            .join("snapshots")
            .join(format!("{}.json", snapshot.id)),
    )
    .unwrap();
    assert!(manifest.contains(r#"{"hex":"fffe"}"#), "{manifest}");

    s.store.restore(&loaded, Some(&after), false).unwrap();
    assert_eq!(s.tree(), before);
}

#[test]
fn load_says_not_found_for_an_unknown_id() {
    let s = Scratch::new();
    let id = "0".repeat(64).parse().unwrap();
    assert!(matches!(
        s.store.load(&id),
        Err(BackupError::NotFound { .. })
    ));
}

#[test]
fn identical_files_are_stored_once() {
    let s = Scratch::new();
    write(&s.path("one"), b"same bytes", 0o644);
    write(&s.path("two"), b"same bytes", 0o600);
    s.store
        .snapshot(&[s.path("one"), s.path("two")], &Limits::default(), 1)
        .unwrap();
    let objects = common::read_tree(&s.store.root().join("objects"));
    let files = objects
        .values()
        .filter(|n| matches!(n, Node::File { .. }))
        .count();
    assert_eq!(files, 1);
}

#[test]
fn relative_paths_are_refused_at_snapshot() {
    let s = Scratch::new();
    let err = s
        .store
        .snapshot(&["relative.txt".into()], &Limits::default(), 1)
        .unwrap_err();
    assert!(matches!(err, BackupError::NotAbsolute { .. }), "{err}");
    // An observation cannot fail; it records why it did not look.
    let seen = BackupStore::observe(&["relative.txt".into()], &Limits::default());
    assert!(matches!(
        seen.paths[0].state,
        PathState::Skipped {
            reason: SkipReason::NotAbsolute
        }
    ));
}

#[test]
fn special_files_are_skipped_with_their_kind() {
    let s = Scratch::new();
    let socket_path = s.path("app.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    let snapshot = s
        .store
        .snapshot(&[socket_path], &Limits::default(), 1)
        .unwrap();
    assert_eq!(
        snapshot.paths[0].state,
        PathState::Skipped {
            reason: SkipReason::Special {
                kind: "socket".into()
            }
        }
    );
}
