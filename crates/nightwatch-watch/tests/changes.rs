//! Changes told by inotify: a file edited in place, replaced by a rename, and left alone.

use std::path::PathBuf;
use std::time::Duration;

use nightwatch_watch::changes::Changes;

const WAIT: Duration = Duration::from_secs(5);

#[test]
fn a_file_edited_or_renamed_over_is_told_once_per_burst() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.ini");
    std::fs::write(&file, "a = 1\n").unwrap();
    let missing = PathBuf::from("/nonexistent-nightwatch-dir/app.ini");
    let changes =
        Changes::watch(&[file.clone(), missing.clone()], Duration::from_millis(50)).unwrap();
    assert_eq!(
        changes.not_watched().len(),
        1,
        "{:?}",
        changes.not_watched()
    );
    assert_eq!(changes.not_watched()[0].0, missing);

    // Edited in place.
    std::fs::write(&file, "a = 2\n").unwrap();
    assert_eq!(changes.next_within(WAIT), Some(file.clone()));
    std::thread::sleep(Duration::from_millis(200));
    assert!(changes.drain().is_empty(), "one write, one change");

    // Replaced the way editors and agents do: a new file renamed over the old.
    let tmp = dir.path().join(".app.ini.tmp");
    std::fs::write(&tmp, "a = 3\n").unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    assert_eq!(changes.next_within(WAIT), Some(file.clone()));
    // And again: a watch on the old inode would have gone with it.
    std::fs::write(&tmp, "a = 4\n").unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    assert_eq!(changes.next_within(WAIT), Some(file.clone()));
    std::thread::sleep(Duration::from_millis(200));
    let _ = changes.drain();

    // Another file in the same directory is not this one.
    std::fs::write(dir.path().join("other.ini"), "b = 1\n").unwrap();
    assert_eq!(changes.next_within(Duration::from_millis(500)), None);
}
