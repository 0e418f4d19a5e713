//! Applying plans against fake inventories: changed items are left alone, wedged ones back off
//! and are quarantined once, and a stop that worked beside a remove that failed is two steps.

mod common;

use common::*;
use nightwatch_janitor::{
    AllowAll, Applied, Decision, Gate, Item, JanitorState, Kind, Outcome, PlanEntry, SweepRules,
    apply, plan, removal_action,
};

fn now() -> i64 {
    at("2026-03-10T12:00:00Z")
}

fn stale(id: &str) -> Item {
    container(id, id, |c| {
        c.created_ms = Some(now() - 20 * DAY);
        c.started_ms = Some(now() - 20 * DAY);
        c.finished_ms = Some(now() - 10 * DAY);
    })
}

fn round(world: &std::rc::Rc<World>, state: &mut JanitorState, at_ms: i64) -> Vec<Applied> {
    let rules = SweepRules::default();
    let fakes = world.inventories();
    state.observe(&world.all(), at_ms);
    let planned = plan(&world.all(), &rules, at_ms, state);
    apply(&planned, &dyns(&fakes), &rules, at_ms, state, &mut AllowAll)
}

#[test]
fn removes_what_is_still_as_planned() {
    let world = World::new(vec![stale("c1"), stale("c2")]);
    let mut state = JanitorState::new();
    let applied = round(&world, &mut state, now());
    assert!(applied.iter().all(|a| a.outcome == Outcome::Removed));
    assert!(world.all().is_empty());
    assert_eq!(
        applied[0].removal.as_ref().unwrap().steps[0].what,
        "remove",
        "an exited container needs no stop"
    );
}

#[test]
fn changed_since_the_plan_is_left_alone() {
    let world = World::new(vec![stale("c1"), stale("c2"), stale("c3")]);
    let rules = SweepRules::default();
    let mut state = JanitorState::new();
    let planned = plan(&world.all(), &rules, now(), &state);
    assert_eq!(planned.removals().count(), 3);

    // Between plan and apply: c1 started again, c2 got a keep label, c3 vanished.
    let mut c1 = world.get(Kind::Container, "c1").unwrap();
    if let nightwatch_janitor::Facts::Container(c) = &mut c1.facts {
        c.status = "running".into();
        c.started_ms = Some(now());
    }
    world.put(c1);
    let mut c2 = world.get(Kind::Container, "c2").unwrap();
    if let nightwatch_janitor::Facts::Container(c) = &mut c2.facts {
        c.labels.insert("nightwatch.keep".into(), "true".into());
    }
    world.put(c2);
    world
        .items
        .borrow_mut()
        .remove(&(Kind::Container, "c3".into()));

    let fakes = world.inventories();
    let applied = apply(
        &planned,
        &dyns(&fakes),
        &rules,
        now(),
        &mut state,
        &mut AllowAll,
    );
    assert_eq!(
        applied[0].outcome,
        Outcome::Changed {
            what: vec![
                "started_ms: 2026-02-18T12:00:00Z → 2026-03-10T12:00:00Z".into(),
                "status: \"exited\" → \"running\"".into(),
            ]
        }
    );
    assert_eq!(
        applied[1].outcome,
        Outcome::Changed {
            what: vec![
                "labels: {\"nightwatch.agent\":\"claude-code\"} → {\"nightwatch.agent\":\"claude-code\",\"nightwatch.keep\":\"true\"}".into()
            ]
        }
    );
    assert_eq!(applied[2].outcome, Outcome::AlreadyGone);
    assert!(world.removed.borrow().is_empty());
}

#[test]
fn activity_after_the_plan_keeps_it() {
    let world = World::new(vec![stale("c1")]);
    let rules = SweepRules::default();
    let mut state = JanitorState::new();
    let planned = plan(&world.all(), &rules, now(), &state);
    // An exec the event watcher saw after planning: the facts are unchanged, the rules are not.
    state.note_activity(Kind::Container, "c1", now() + MINUTE);
    let fakes = world.inventories();
    let applied = apply(
        &planned,
        &dyns(&fakes),
        &rules,
        now() + 2 * MINUTE,
        &mut state,
        &mut AllowAll,
    );
    assert_eq!(
        applied[0].outcome,
        Outcome::NowKept {
            reasons: vec![
                "idle 1m (last: activity seen 2026-03-10T12:01:00Z), not over 5d".into(),
                "started by agent claude-code (nightwatch.agent=claude-code)".into()
            ]
        }
    );
}

#[test]
fn a_wedged_container_backs_off_then_is_quarantined_once() {
    let world = World::new(vec![container("w1", "wedged", |c| {
        c.status = "running".into();
        c.created_ms = Some(now() - 20 * DAY);
        c.started_ms = Some(now() - 20 * DAY);
    })]);
    world.failing.borrow_mut().insert("w1".into());
    let mut state = JanitorState::new();
    let rules = SweepRules::default();

    // The first failure: stop worked, remove failed; two steps, and a 5 minute wait.
    let first = round(&world, &mut state, now());
    let removal = first[0].removal.as_ref().unwrap();
    assert_eq!(removal.steps.len(), 2);
    assert!(removal.steps[0].ok && !removal.steps[1].ok);
    assert_eq!(
        first[0].outcome,
        Outcome::Failed {
            error: "remove: device or resource busy".into(),
            failures: 1,
            next_try_ms: now() + 5 * MINUTE,
            quarantined: false,
        }
    );

    // A sweep every minute all night: only the rounds after each wait reach the container.
    let mut t = now();
    let mut quarantine_reports = 0;
    let mut attempts_seen = 1;
    let mut failures_at = vec![0i64];
    while t < now() + 12 * HOUR {
        t += MINUTE;
        for applied in round(&world, &mut state, t) {
            if applied.newly_quarantined {
                quarantine_reports += 1;
            }
            if let Outcome::Failed { .. } = applied.outcome {
                attempts_seen += 1;
                failures_at.push((t - now()) / MINUTE);
            }
        }
    }
    assert_eq!(attempts_seen, 5, "quarantined after the 5th failure");
    assert_eq!(
        failures_at,
        [0, 5, 15, 35, 75],
        "waits of 5, 10, 20, 40 minutes"
    );
    assert_eq!(quarantine_reports, 1, "quarantine is reported once");
    assert_eq!(world.remove_calls.borrow()["w1"], 5);

    let planned = plan(&world.all(), &rules, t, &state);
    assert_eq!(planned.entries[0].decision, Decision::Keep);
    assert!(planned.entries[0].reasons[0].starts_with("quarantined after 5 failed removals"));

    // A person releases it after fixing the daemon; the next round removes it.
    world.failing.borrow_mut().clear();
    assert!(state.release(Kind::Container, "w1"));
    let applied = round(&world, &mut state, t);
    assert_eq!(applied[0].outcome, Outcome::Removed);
    assert!(state.failures(Kind::Container, "w1").is_none());
}

#[test]
fn applying_an_old_plan_twice_does_not_hammer() {
    let world = World::new(vec![stale("c1")]);
    world.failing.borrow_mut().insert("c1".into());
    let rules = SweepRules::default();
    let mut state = JanitorState::new();
    let planned = plan(&world.all(), &rules, now(), &state);
    let fakes = world.inventories();
    for _ in 0..10 {
        apply(
            &planned,
            &dyns(&fakes),
            &rules,
            now(),
            &mut state,
            &mut AllowAll,
        );
    }
    assert_eq!(world.remove_calls.borrow()["c1"], 1);
}

#[test]
fn cannot_inspect_is_not_gone_and_counts_nothing() {
    let world = World::new(vec![stale("c1")]);
    world.unreadable.borrow_mut().insert("c1".into());
    let mut state = JanitorState::new();
    let applied = round(&world, &mut state, now());
    assert_eq!(
        applied[0].outcome,
        Outcome::Uninspectable {
            error: "the fake daemon is unavailable: timed out".into()
        }
    );
    assert!(state.failures(Kind::Container, "c1").is_none());
    assert_eq!(state.first_seen(Kind::Container, "c1"), Some(now()));
    assert!(world.remove_calls.borrow().is_empty());
}

#[test]
fn the_folder_goes_before_the_branch() {
    let n = now();
    let world = World::new(vec![
        branch("fix-4411", |b| {
            b.checked_out_in = Some("/w/fix-4411".into())
        }),
        worktree("/w/fix-4411", n, |_| {}),
    ]);
    let mut state = JanitorState::new();
    // Seen three days ago: a branch first seen today is too young to go.
    state.observe(&world.all(), n - 3 * DAY);
    let applied = round(&world, &mut state, n);
    let order: Vec<(Kind, &Outcome)> = applied.iter().map(|a| (a.kind, &a.outcome)).collect();
    assert_eq!(
        order,
        [
            (Kind::Worktree, &Outcome::Removed),
            (Kind::Branch, &Outcome::Removed)
        ]
    );
    let removed: Vec<Kind> = world.removed.borrow().iter().map(|i| i.kind()).collect();
    assert_eq!(removed, [Kind::Worktree, Kind::Branch]);
}

#[test]
fn a_branch_waits_when_its_folder_could_not_go() {
    let n = now();
    let world = World::new(vec![
        branch("fix-4411", |b| {
            b.checked_out_in = Some("/w/fix-4411".into())
        }),
        worktree("/w/fix-4411", n, |_| {}),
    ]);
    world.failing.borrow_mut().insert("/w/fix-4411".into());
    let mut state = JanitorState::new();
    // Seen three days ago: a branch first seen today is too young to go.
    state.observe(&world.all(), n - 3 * DAY);
    let applied = round(&world, &mut state, n);
    assert!(matches!(applied[0].outcome, Outcome::Failed { .. }));
    assert_eq!(
        applied[1].outcome,
        Outcome::Skipped {
            why: "its worktree /w/fix-4411 was not removed first: left for a later round".into()
        }
    );
    assert!(world.get(Kind::Branch, "/src/app#fix-4411").is_some());
}

struct Refuse;

impl Gate for Refuse {
    fn allow(&mut self, item: &Item, entry: &PlanEntry) -> Result<(), String> {
        assert_eq!(item.id, entry.id);
        let action = removal_action(item);
        assert_eq!(action.tool.name(), "remove_container");
        assert_eq!(action.actor.kind, nightwatch_core::ActorKind::Janitor);
        Err(format!("policy denies {}", action.tool.name()))
    }
}

#[test]
fn the_gate_can_refuse() {
    let world = World::new(vec![stale("c1")]);
    let rules = SweepRules::default();
    let mut state = JanitorState::new();
    let planned = plan(&world.all(), &rules, now(), &state);
    let fakes = world.inventories();
    let applied = apply(
        &planned,
        &dyns(&fakes),
        &rules,
        now(),
        &mut state,
        &mut Refuse,
    );
    assert_eq!(
        applied[0].outcome,
        Outcome::Refused {
            why: "policy denies remove_container".into()
        }
    );
    assert!(state.failures(Kind::Container, "c1").is_none());
    assert!(world.get(Kind::Container, "c1").is_some());
}

#[test]
fn no_inventory_for_a_kind_is_skipped() {
    let world = World::new(vec![stale("c1")]);
    let rules = SweepRules::default();
    let mut state = JanitorState::new();
    let planned = plan(&world.all(), &rules, now(), &state);
    let applied = apply(&planned, &[], &rules, now(), &mut state, &mut AllowAll);
    assert_eq!(
        applied[0].outcome,
        Outcome::Skipped {
            why: "no inventory for containers".into()
        }
    );
}

struct Down;

impl nightwatch_janitor::Inventory for Down {
    fn kind(&self) -> Kind {
        Kind::Worktree
    }

    fn list(&self) -> Result<Vec<Item>, nightwatch_janitor::InventoryError> {
        Err(nightwatch_janitor::InventoryError::Unavailable {
            what: "git".into(),
            reason: "repository moved".into(),
        })
    }

    fn inspect(&self, _: &str) -> Result<Option<Item>, nightwatch_janitor::InventoryError> {
        Ok(None)
    }

    fn remove(&self, _: &Item, _: i64) -> nightwatch_janitor::Removal {
        nightwatch_janitor::Removal::new()
    }
}

#[test]
fn a_kind_that_cannot_be_listed_is_reported_not_empty() {
    let world = World::new(vec![stale("c1")]);
    let fakes = world.inventories();
    let listing = nightwatch_janitor::list_all(&[&fakes[0], &Down]);
    assert_eq!(listing.items.len(), 1);
    assert_eq!(listing.listed, [Kind::Container]);
    assert_eq!(listing.errors.len(), 1);
    assert_eq!(
        listing.errors[0].1.to_string(),
        "git is unavailable: repository moved"
    );
    // And a removal that took no step is not a success.
    assert!(!nightwatch_janitor::Removal::new().succeeded());
}
