//! The janitor's promise, as a property: no sequence of plans and applies removes an item
//! labelled to stay, and apply never removes an item whose state changed since its plan.
//!
//! Random items (some labelled `nightwatch.keep=true`, a future or past keep-until, or holding
//! a keep file), random ages, random changes between plan and apply (new labels, activity,
//! restarts, writes, dirty worktrees, moved branch tips), random failures from the fake
//! inventory, and stale plans applied rounds later.

mod common;

use common::*;
use nightwatch_janitor::{
    AllowAll, Facts, Item, JanitorState, Kind, PathFacts, PathRule, Plan, Span, SweepRules, apply,
    plan,
};
use proptest::prelude::*;
use std::collections::HashSet;

#[derive(Clone, Debug)]
struct Spec {
    kind: u8,
    /// 0 none, 1 keep=true, 2 keep-until in the future, 3 keep-until in the past, 4 keep=false.
    stay: u8,
    age_hours: i64,
    running: bool,
    restarts: u32,
    merged: bool,
}

#[derive(Clone, Debug)]
struct Round {
    advance_hours: i64,
    /// Apply an older plan (index modulo the plans so far) instead of the fresh one.
    stale_plan: Option<usize>,
    /// (item index, change) made between plan and apply.
    changes: Vec<(usize, u8)>,
    /// Items whose removal fails this round.
    failing: Vec<usize>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0u8..4,
        0u8..5,
        0i64..(20 * 24),
        any::<bool>(),
        0u32..6,
        any::<bool>(),
    )
        .prop_map(|(kind, stay, age_hours, running, restarts, merged)| Spec {
            kind,
            stay,
            age_hours,
            running,
            restarts,
            merged,
        })
}

fn round() -> impl Strategy<Value = Round> {
    (
        0i64..(4 * 24),
        proptest::option::of(0usize..8),
        proptest::collection::vec((0usize..40, 0u8..8), 0..6),
        proptest::collection::vec(0usize..40, 0..6),
    )
        .prop_map(|(advance_hours, stale_plan, changes, failing)| Round {
            advance_hours,
            stale_plan,
            changes,
            failing,
        })
}

const FUTURE: &str = "2100-01-01";
const GLOB: &str = "/tmp/nw-prop-*";

fn build(i: usize, s: &Spec, t0: i64) -> Item {
    let born = t0 - s.age_hours * HOUR;
    match s.kind {
        0 => container(&format!("c{i}"), &format!("box-{i}"), |c| {
            c.created_ms = Some(born);
            c.started_ms = Some(born + MINUTE);
            c.finished_ms = (!s.running).then_some(born + HOUR);
            c.status = if s.running { "running" } else { "exited" }.into();
            c.restart_count = s.restarts;
            match s.stay {
                1 => drop(c.labels.insert("nightwatch.keep".into(), "true".into())),
                2 => drop(
                    c.labels
                        .insert("nightwatch.keep-until".into(), FUTURE.into()),
                ),
                3 => drop(
                    c.labels
                        .insert("nightwatch.keep-until".into(), "2020-01-01".into()),
                ),
                4 => drop(c.labels.insert("nightwatch.keep".into(), "false".into())),
                _ => {}
            }
        }),
        1 => worktree(&format!("/w/wt-{i}"), t0, |w| {
            w.created_ms = Some(born);
            w.branch = Some(format!("b-{i}"));
            if !s.merged {
                w.merge = nightwatch_janitor::MergeState::NotMerged {
                    into: "main".into(),
                };
            }
        }),
        2 => branch(&format!("b-{i}"), |b| {
            if !s.merged {
                b.merged_commit = None;
                b.pr = nightwatch_janitor::PrState::NoPr;
            }
            if s.running {
                // Checked out in the worktree of the item before it, if that was one.
                b.checked_out_in = Some(format!("/w/wt-{}", i.saturating_sub(1)));
            }
        }),
        _ => {
            let id = format!("/tmp/nw-prop-{i}");
            Item {
                id: id.clone(),
                name: id.clone(),
                facts: Facts::Path(PathFacts {
                    path: id,
                    rule: GLOB.into(),
                    is_dir: true,
                    is_symlink: false,
                    modified_ms: Some(born),
                    keep_file: s.stay == 1,
                }),
            }
        }
    }
}

/// Labelled to stay at `now`: keep=true, a keep-until still ahead, or a keep file.
fn labelled_to_stay(item: &Item) -> bool {
    match &item.facts {
        Facts::Container(c) => {
            c.labels.get("nightwatch.keep").is_some_and(|v| v == "true")
                || c.labels
                    .get("nightwatch.keep-until")
                    .is_some_and(|v| v == FUTURE)
        }
        Facts::Path(p) => p.keep_file,
        _ => false,
    }
}

fn change(world: &World, state: &mut JanitorState, item: &Item, how: u8, now: i64) {
    let mut item = item.clone();
    match (&mut item.facts, how) {
        (Facts::Container(c), 0) => drop(c.labels.insert("nightwatch.keep".into(), "true".into())),
        (Facts::Container(c), 1) => drop(c.labels.remove("nightwatch.keep")),
        (Facts::Container(_), 2) => state.note_activity(Kind::Container, &item.id, now),
        (Facts::Container(c), 3) => {
            c.status = "running".into();
            c.started_ms = Some(now);
        }
        (Facts::Container(c), _) => c.restart_count += 1,
        (Facts::Path(p), 0 | 1) => p.keep_file = !p.keep_file,
        (Facts::Path(p), _) => p.modified_ms = Some(now),
        (Facts::Worktree(w), 0) => w.dirty = Some("1 untracked".into()),
        (Facts::Worktree(w), _) => w.pr = nightwatch_janitor::PrState::Open { url: None },
        (Facts::Branch(b), _) => b.tip = format!("{now:016x}"),
    }
    world.put(item);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn nothing_labelled_to_stay_is_ever_removed(
        specs in proptest::collection::vec(spec(), 1..40),
        rounds in proptest::collection::vec(round(), 1..7),
    ) {
        let t0 = at("2026-03-10T12:00:00Z");
        let rules = SweepRules {
            paths: vec![PathRule::new(GLOB, Span::days(2)).unwrap()],
            ..SweepRules::default()
        };
        let originals: Vec<Item> = specs.iter().enumerate().map(|(i, s)| build(i, s, t0)).collect();
        let world = World::new(originals.clone());
        let fakes = world.inventories();
        let inventories = dyns(&fakes);
        let mut state = JanitorState::new();
        let mut plans: Vec<Plan> = Vec::new();
        let mut t = t0;
        for r in rounds {
            t += r.advance_hours * HOUR;
            let items = world.all();
            state.observe(&items, t - r.advance_hours * HOUR);
            plans.push(plan(&items, &rules, t, &state));
            let chosen = match r.stale_plan {
                Some(k) => plans[k % plans.len()].clone(),
                None => plans[plans.len() - 1].clone(),
            };
            for (index, how) in r.changes {
                let Some(original) = originals.get(index) else { continue };
                if let Some(current) = world.get(original.kind(), &original.id) {
                    change(&world, &mut state, &current, how, t);
                }
            }
            *world.failing.borrow_mut() = r
                .failing
                .iter()
                .filter_map(|i| originals.get(*i).map(|o| o.id.clone()))
                .collect::<HashSet<_>>();
            let before = world.removed.borrow().len();
            apply(&chosen, &inventories, &rules, t, &mut state, &mut AllowAll);
            for removed in &world.removed.borrow()[before..] {
                prop_assert!(!labelled_to_stay(removed), "removed an item labelled to stay: {removed:?}");
                let entry = chosen
                    .removals()
                    .find(|e| e.kind == removed.kind() && e.id == removed.id);
                let entry = entry.expect("only planned removals are carried out");
                prop_assert_eq!(
                    &removed.fingerprint(),
                    &entry.fingerprint,
                    "removed {} although it changed since the plan", removed.id
                );
            }
        }
    }
}

proptest! {
    /// Whatever an inventory reports (labels, times at the ends of the range, odd statuses),
    /// planning answers and never panics, and its plan survives a JSON round trip.
    #[test]
    fn planning_never_fails_on_odd_facts(
        label in ".{0,40}",
        times in proptest::collection::vec(proptest::option::of(any::<i64>()), 3),
        status in ".{0,12}",
        restarts in any::<u32>(),
        now in any::<i64>(),
        span in ".{0,12}",
    ) {
        let item = container("odd", "odd", |c| {
            c.labels.insert("nightwatch.keep-until".into(), label.clone());
            c.labels.insert("nightwatch.keep".into(), label.clone());
            c.created_ms = times[0];
            c.started_ms = times[1];
            c.finished_ms = times[2];
            c.status = status.clone();
            c.restart_count = restarts;
        });
        let mut state = JanitorState::new();
        state.observe(std::slice::from_ref(&item), now);
        state.record_failure(Kind::Container, "odd", now, &nightwatch_janitor::FailureRules::default(), &label);
        let planned = plan(&[item], &SweepRules::default(), now, &state);
        prop_assert!(!planned.entries[0].reasons.is_empty());
        prop_assert_eq!(Plan::from_json(&planned.to_json()).unwrap(), planned);
        let _ = Span::parse(&span);
        let _ = nightwatch_janitor::docker_time_ms(&label);
    }
}
