//! What every `JanitorStore` must do: keep the state across restarts, merge with an event
//! watcher writing beside a sweep, and forget what is gone.

use crate::Backend;
use nightwatch_janitor::{
    BranchFacts, ContainerFacts, Facts, FailureRules, Item, JanitorState, Kind, PrState,
};

fn container(id: &str, name: &str) -> Item {
    Item {
        id: id.into(),
        name: name.into(),
        facts: Facts::Container(ContainerFacts::default()),
    }
}

fn branch(name: &str) -> Item {
    Item {
        id: format!("/src/app#{name}"),
        name: name.into(),
        facts: Facts::Branch(BranchFacts {
            repo: "/src/app".into(),
            name: name.into(),
            tip: "abc123def4567890".into(),
            merged_commit: Some("abc123def4567890".into()),
            pr: PrState::NoPr,
            tip_time_ms: None,
            checked_out_in: None,
        }),
    }
}

pub fn state_survives_a_restart(backend: &dyn Backend) {
    let place = backend.place();
    let rules = FailureRules::default();
    let mut state = JanitorState::new();
    state.observe(&[container("c1", "pg"), branch("fix")], 1_000);
    state.note_activity(Kind::Container, "c1", 5_000);
    for _ in 0..5 {
        state.record_failure(Kind::Container, "c1", 10_000, &rules, "remove: busy");
    }
    place.janitor().save(&mut state).unwrap();
    let loaded = place.janitor().load().unwrap();
    assert_eq!(loaded, state);
    let failures = loaded.failures(Kind::Container, "c1").unwrap();
    assert!(failures.quarantined);
    assert_eq!(failures.count, 5);
    assert_eq!(loaded.first_seen(Kind::Branch, "/src/app#fix"), Some(1_000));
}

/// Hostile text in an item's id and a failure's error is kept exactly across a restart.
pub fn hostile_text_in_ids_and_errors_survives_a_restart(backend: &dyn Backend) {
    let place = backend.place();
    let rules = FailureRules::default();
    let id = format!("c{}", crate::fixtures::HOSTILE);
    let mut state = JanitorState::new();
    state.note_first_seen(Kind::Container, &id, 1_000);
    state.note_activity(Kind::Container, &id, 5_000);
    state.record_failure(
        Kind::Container,
        &id,
        10_000,
        &rules,
        crate::fixtures::HOSTILE,
    );
    place.janitor().save(&mut state).unwrap();
    let loaded = place.janitor().load().unwrap();
    assert_eq!(loaded, state);
    assert_eq!(loaded.first_seen(Kind::Container, &id), Some(1_000));
    let store = place.janitor();
    store.note_activity(Kind::Container, &id, 7_000).unwrap();
    assert_eq!(store.activity(Kind::Container, &id).unwrap(), Some(7_000));
    assert_eq!(store.activity(Kind::Container, "c").unwrap(), None);
}

pub fn a_watcher_and_a_sweep_do_not_overwrite_each_other(backend: &dyn Backend) {
    let place = backend.place();
    let sweep_store = place.janitor();
    let mut state = sweep_store.load().unwrap();
    state.note_activity(Kind::Container, "c1", 5_000);
    state.note_first_seen(Kind::Container, "c1", 9_000);

    // The event watcher, in another process, sees a newer exec and an earlier sighting.
    let watcher = place.janitor();
    watcher.note_activity(Kind::Container, "c1", 7_000).unwrap();
    watcher.note_activity(Kind::Container, "c1", 6_000).unwrap();

    sweep_store.save(&mut state).unwrap();
    assert_eq!(
        watcher.activity(Kind::Container, "c1").unwrap(),
        Some(7_000),
        "activity only moves later"
    );
    assert_eq!(watcher.activity(Kind::Container, "c2").unwrap(), None);
    let mut earlier = JanitorState::new();
    earlier.note_first_seen(Kind::Container, "c1", 2_000);
    sweep_store.save(&mut earlier).unwrap();
    let loaded = sweep_store.load().unwrap();
    assert_eq!(loaded.first_seen(Kind::Container, "c1"), Some(2_000));
}

pub fn removed_and_released_items_are_forgotten(backend: &dyn Backend) {
    let place = backend.place();
    let store = place.janitor();
    let rules = FailureRules::default();
    let mut state = JanitorState::new();
    state.note_first_seen(Kind::Container, "gone", 1);
    state.note_first_seen(Kind::Container, "stuck", 1);
    state.note_first_seen(Kind::Container, "listed", 1);
    state.record_failure(Kind::Container, "stuck", 10, &rules, "busy");
    store.save(&mut state).unwrap();

    state.forget(Kind::Container, "gone");
    assert!(state.release(Kind::Container, "stuck"));
    assert!(!state.release(Kind::Container, "stuck"));
    store.save(&mut state).unwrap();
    let loaded = store.load().unwrap();
    assert_eq!(loaded.first_seen(Kind::Container, "gone"), None);
    assert_eq!(loaded.first_seen(Kind::Container, "stuck"), Some(1));
    assert!(loaded.failures(Kind::Container, "stuck").is_none());

    // A complete listing without "stuck": it is gone, so its memory goes too.
    let mut state = loaded;
    state.retain_listed(Kind::Container, &[container("listed", "l")]);
    store.save(&mut state).unwrap();
    let loaded = store.load().unwrap();
    assert_eq!(loaded.first_seen(Kind::Container, "stuck"), None);
    assert_eq!(loaded.first_seen(Kind::Container, "listed"), Some(1));
}
