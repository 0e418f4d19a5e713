//! The `timedatectl` outputs in `tests/fixtures/timedatectl/` (see its README: one captured
//! here, the others written from systemd's documented formats), read and judged.

use std::path::Path;

use nightwatch_hazards::Seen;
use nightwatch_hazards::clock::{interpret, judge_timedatectl, parse_show, parse_status};

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/timedatectl")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn show_synced_and_unsynced() {
    let synced = parse_show(&fixture("show-synced.txt")).unwrap();
    assert_eq!(
        (synced.synchronized, synced.ntp, synced.can_ntp),
        (Some(true), Some(true), Some(true))
    );
    assert_eq!(synced.timezone.as_deref(), Some("Etc/UTC"));
    assert_eq!(synced.time.as_deref(), Some("Wed 2024-03-13 10:15:42 UTC"));
    let unsynced = parse_show(&fixture("show-unsynced.txt")).unwrap();
    assert_eq!(
        (unsynced.synchronized, unsynced.ntp),
        (Some(false), Some(false))
    );
    assert_eq!(judge_timedatectl(Ok(synced)).seen, Seen::Ok);
    let found = judge_timedatectl(Ok(unsynced));
    assert_eq!(found.seen, Seen::Found);
    assert!(found.what.contains("NTP is off"));
}

#[test]
fn status_forms() {
    for (name, synchronized, ntp, seen, says) in [
        (
            "status-synced.txt",
            Some(true),
            Some(true),
            Seen::Ok,
            "synchronised",
        ),
        (
            "status-unsynced.txt",
            Some(false),
            Some(false),
            Seen::Found,
            "NTP is off",
        ),
        (
            "status-unsynced-ntp-active.txt",
            Some(false),
            Some(true),
            Seen::Found,
            "although NTP is on",
        ),
        (
            "status-no-ntp-service.txt",
            Some(false),
            Some(false),
            Seen::Found,
            "no NTP service",
        ),
        (
            "status-old-systemd-synced.txt",
            Some(true),
            Some(true),
            Seen::Ok,
            "synchronised",
        ),
    ] {
        let text = fixture(name);
        let sync = parse_status(&text).unwrap_or_else(|| panic!("{name} reads"));
        assert_eq!((sync.synchronized, sync.ntp), (synchronized, ntp), "{name}");
        // Whichever verb printed it, `interpret` reads it.
        let check = judge_timedatectl(interpret(&text, "", true));
        assert_eq!(check.seen, seen, "{name}: {check:#?}");
        assert!(check.what.contains(says), "{name}: {}", check.what);
    }
    // The human form is not mistaken for `show`'s, and the reverse.
    assert!(parse_show(&fixture("status-synced.txt")).is_none());
    assert!(parse_status(&fixture("show-synced.txt")).is_none());
}

#[test]
fn the_captured_container_failure_is_unknown_with_why() {
    for name in ["container-show.txt", "container-status.txt"] {
        let stderr = fixture(name);
        let check = judge_timedatectl(interpret("", &stderr, false));
        assert_eq!(check.seen, Seen::Unknown, "{name}");
        assert!(
            check
                .what
                .contains("System has not been booted with systemd"),
            "{}",
            check.what
        );
        assert!(check.what.contains("not PID 1"));
    }
}
