//! A damaged backup is reported as damaged, never restored as if it were fine.

mod common;

use common::{Scratch, write};
use nightwatch_backup::{BackupError, PathState, RestoreError, SnapshotId};
use proptest::prelude::*;
use std::fs;
use std::path::PathBuf;

fn manifest_path(s: &Scratch, id: &SnapshotId) -> PathBuf {
    s.store.root().join("snapshots").join(format!("{id}.json"))
}

fn object_path(s: &Scratch, state: &PathState) -> PathBuf {
    let PathState::File { hash, .. } = state else {
        panic!("not a file: {state:?}");
    };
    let (fan, rest) = hash.as_str().split_at(2);
    s.store.root().join("objects").join(fan).join(rest)
}

/// A file edited by the action, ready to be undone.
fn edited(s: &Scratch) -> (nightwatch_backup::Snapshot, nightwatch_backup::Observation) {
    let conf = s.path("app.conf");
    write(&conf, b"the original content", 0o644);
    s.around(&[&conf], || write(&conf, b"the agent's edit", 0o644))
}

#[test]
fn truncated_manifest_is_detected_on_load() {
    let s = Scratch::new();
    let (snapshot, _) = edited(&s);
    let path = manifest_path(&s, &snapshot.id);
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();

    let err = s.store.load(&snapshot.id).unwrap_err();
    assert!(matches!(err, BackupError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("damaged"), "{err}");
}

#[test]
fn manifest_whose_bytes_match_its_name_but_escape_the_directory_is_refused() {
    let s = Scratch::new();
    // Well-formed JSON, correctly named, but an entry that climbs out of its directory.
    let bytes = br#"{"format":1,"created_ms":0,"limits":{},"paths":[{"path":"/tmp/d","state":{"dir":{"mode":493,"entries":[{"path":"../../etc/passwd","state":{"symlink":{"target":"x"}}}]}}}]}"#;
    let id = sha256_id(bytes);
    fs::write(manifest_path(&s, &id), bytes).unwrap();

    let err = s.store.load(&id).unwrap_err();
    assert!(
        err.to_string().contains("not a plain relative path"),
        "{err}"
    );
}

#[test]
fn object_whose_content_no_longer_matches_its_hash_is_refused_and_nothing_written() {
    let s = Scratch::new();
    let (snapshot, after) = edited(&s);
    let object = object_path(&s, &snapshot.paths[0].state);
    fs::write(&object, b"the original contenT").unwrap();

    let err = s.store.restore(&snapshot, Some(&after), true).unwrap_err();
    assert!(
        matches!(err, RestoreError::Store(BackupError::Corrupt { .. })),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("content does not match its name"),
        "{err}"
    );
    assert_eq!(fs::read(s.path("app.conf")).unwrap(), b"the agent's edit");
}

#[test]
fn truncated_or_missing_object_is_refused() {
    let s = Scratch::new();
    let (snapshot, after) = edited(&s);
    let object = object_path(&s, &snapshot.paths[0].state);

    fs::write(&object, b"the orig").unwrap();
    let err = s.store.restore(&snapshot, Some(&after), true).unwrap_err();
    assert!(err.to_string().contains("damaged"), "{err}");

    fs::remove_file(&object).unwrap();
    let err = s.store.restore(&snapshot, Some(&after), true).unwrap_err();
    assert!(err.to_string().contains("missing from the store"), "{err}");
    assert_eq!(fs::read(s.path("app.conf")).unwrap(), b"the agent's edit");
}

fn sha256_id(bytes: &[u8]) -> SnapshotId {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex.parse().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any bytes correctly named as a manifest load as a snapshot or as an error; none panic.
    #[test]
    fn arbitrary_manifest_bytes_never_panic(
        bytes in prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..200),
            // Mutations of a real manifest reach deeper than random bytes do.
            (0usize..400, any::<u8>()).prop_map(|(at, b)| {
                let mut m = br#"{"format":1,"created_ms":5,"limits":{"max_file_bytes":"1MiB"},"paths":[{"path":"/a","state":{"dir":{"mode":493,"entries":[{"path":"x","state":{"dir":{"mode":448}}},{"path":"x/y","state":{"file":{"hash":"0000000000000000000000000000000000000000000000000000000000000000","size":0,"mode":420}}}]}}},{"path":{"hex":"2fff"},"state":"absent"}]}"#.to_vec();
                let at = at % m.len();
                m[at] = b;
                m
            }),
        ]
    ) {
        let s = Scratch::new();
        let id = sha256_id(&bytes);
        fs::write(manifest_path(&s, &id), &bytes).unwrap();
        if let Ok(snapshot) = s.store.load(&id) {
            // Loadable means structurally sound; its objects are then checked on restore.
            let _ = s.store.verify(&snapshot);
        }
    }
}
