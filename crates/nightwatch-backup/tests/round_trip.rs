//! Whatever the action did to a small tree, snapshot–act–observe–restore gives back the tree
//! exactly as it was.

mod common;

use common::Scratch;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

/// A tree as a test describes it.
#[derive(Clone, Debug)]
enum Shape {
    File(Vec<u8>, u32),
    Link(OsString),
    Dir(u32, BTreeMap<OsString, Shape>),
}

fn name() -> impl Strategy<Value = OsString> {
    prop_oneof![
        Just(OsString::from("x")),
        Just(OsString::from("y")),
        Just(OsString::from("caf\u{e9}")),
        Just(OsStr::from_bytes(b"n\xff").to_os_string()),
    ]
}

fn shape() -> impl Strategy<Value = Shape> {
    let leaf = prop_oneof![
        4 => (
            proptest::collection::vec(any::<u8>(), 0..64),
            prop_oneof![Just(0o644u32), Just(0o600), Just(0o755), Just(0o444)],
        )
            .prop_map(|(content, mode)| Shape::File(content, mode)),
        1 => name().prop_map(Shape::Link),
    ];
    leaf.prop_recursive(2, 12, 3, |inner| {
        (
            prop_oneof![Just(0o755u32), Just(0o700), Just(0o750)],
            proptest::collection::btree_map(name(), inner, 0..3),
        )
            .prop_map(|(mode, entries)| Shape::Dir(mode, entries))
    })
}

/// Makes `path` look like `shape`, editing in place where it can (a file is rewritten, a
/// directory keeps what it should keep), as an agent or an editor would.
fn make(path: &Path, shape: Option<&Shape>) {
    let meta = path.symlink_metadata().ok();
    let is_dir = meta.as_ref().is_some_and(|m| m.is_dir());
    match shape {
        None => {
            if is_dir {
                fs::remove_dir_all(path).unwrap();
            } else if meta.is_some() {
                fs::remove_file(path).unwrap();
            }
        }
        Some(Shape::File(content, mode)) => {
            if is_dir || meta.as_ref().is_some_and(|m| m.file_type().is_symlink()) {
                make(path, None);
            }
            // Writable for the edit, then the wanted mode.
            if path.exists() {
                fs::set_permissions(path, fs::Permissions::from_mode(0o600)).unwrap();
            }
            fs::write(path, content).unwrap();
            fs::set_permissions(path, fs::Permissions::from_mode(*mode)).unwrap();
        }
        Some(Shape::Link(target)) => {
            make(path, None);
            symlink(target, path).unwrap();
        }
        Some(Shape::Dir(mode, entries)) => {
            if !is_dir {
                make(path, None);
                fs::create_dir(path).unwrap();
            }
            for item in fs::read_dir(path).unwrap() {
                let item = item.unwrap();
                if !entries.contains_key(&item.file_name()) {
                    make(&item.path(), None);
                }
            }
            for (child, shape) in entries {
                make(&path.join(child), Some(shape));
            }
            fs::set_permissions(path, fs::Permissions::from_mode(*mode)).unwrap();
        }
    }
}

const TOP: [&str; 4] = ["a", "b", "c", "d"];

fn top() -> impl Strategy<Value = Vec<Option<Shape>>> {
    proptest::collection::vec(proptest::option::weighted(0.7, shape()), TOP.len())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn restore_gives_back_the_tree_as_it_was(
        before in top(),
        after in top(),
        // Which of the top-level paths the action touches (and so names).
        touched in proptest::collection::vec(any::<bool>(), TOP.len()),
    ) {
        let s = Scratch::new();
        for (name, shape) in TOP.iter().zip(&before) {
            make(&s.path(name), shape.as_ref());
        }
        let original = s.tree();
        let paths: Vec<_> = TOP
            .iter()
            .zip(&touched)
            .filter(|(_, t)| **t)
            .map(|(name, _)| s.path(name))
            .collect();

        let (snapshot, observed) = s.around(&paths, || {
            for ((name, shape), t) in TOP.iter().zip(&after).zip(&touched) {
                if *t {
                    make(&s.path(name), shape.as_ref());
                }
            }
        });
        let restored = s.store.restore(&snapshot, Some(&observed), false);

        prop_assert!(restored.is_ok(), "{:?}", restored);
        prop_assert_eq!(s.tree(), original);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Someone else changes some paths after the action: the restore either gives back the
    /// original tree or refuses having written nothing. Never something in between.
    #[test]
    fn restore_after_a_later_change_is_all_or_nothing(
        before in top(),
        after in top(),
        later in top(),
        touched in proptest::collection::vec(any::<bool>(), TOP.len()),
        changed_later in proptest::collection::vec(any::<bool>(), TOP.len()),
    ) {
        let s = Scratch::new();
        for (name, shape) in TOP.iter().zip(&before) {
            make(&s.path(name), shape.as_ref());
        }
        let original = s.tree();
        let paths: Vec<_> = TOP
            .iter()
            .zip(&touched)
            .filter(|(_, t)| **t)
            .map(|(name, _)| s.path(name))
            .collect();
        let (snapshot, observed) = s.around(&paths, || {
            for ((name, shape), t) in TOP.iter().zip(&after).zip(&touched) {
                if *t {
                    make(&s.path(name), shape.as_ref());
                }
            }
        });
        for ((name, shape), c) in TOP.iter().zip(&later).zip(&changed_later) {
            if *c {
                make(&s.path(name), shape.as_ref());
            }
        }
        let edited = s.tree();

        match s.store.restore(&snapshot, Some(&observed), false) {
            Ok(_) => {
                let restored = s.tree();
                for path in &paths {
                    let rel = path.strip_prefix(&s.files).unwrap();
                    let part = |t: &common::Tree| -> Vec<_> {
                        t.iter().filter(|(p, _)| p.starts_with(rel)).map(|(p, n)| (p.clone(), n.clone())).collect()
                    };
                    prop_assert_eq!(part(&restored), part(&original));
                }
            }
            Err(nightwatch_backup::RestoreError::ChangedSince { changes }) => {
                prop_assert!(!changes.is_empty());
                prop_assert_eq!(s.tree(), edited);
            }
            Err(e) => prop_assert!(false, "unexpected error: {e}"),
        }
    }
}
