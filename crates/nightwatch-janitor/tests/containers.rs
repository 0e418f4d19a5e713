//! Which containers the janitor judges, and when a restart count means a loop (seed 001:
//! "touch only what you started"; a crash loop is aged from creation only while it loops).

mod common;

use common::{DAY, HOUR, MINUTE, at, container};
use nightwatch_janitor::{Decision, JanitorState, Kind, SweepRules, plan};

fn now() -> i64 {
    at("2026-03-10T12:00:00Z")
}

fn decide(item: nightwatch_janitor::Item, rules: &SweepRules) -> (Decision, String) {
    decide_with(item, rules, &JanitorState::new())
}

fn decide_with(
    item: nightwatch_janitor::Item,
    rules: &SweepRules,
    state: &JanitorState,
) -> (Decision, String) {
    let planned = plan(&[item], rules, now(), state);
    let entry = &planned.entries[0];
    (entry.decision, entry.reasons.join("; "))
}

fn rules(yaml: &str) -> SweepRules {
    yaml_serde::from_str(yaml).expect("sweep rules")
}

/// An operator's database, running for a month, that no agent started: never judged,
/// however far the clock moves.
#[test]
fn an_unowned_service_is_out_of_scope_whatever_the_clock_says() {
    let db = container("c1", "compose-db-1", |c| {
        c.labels.clear();
        c.labels
            .insert("com.docker.compose.project".into(), "shop".into());
        c.status = "running".into();
        c.created_ms = Some(now() - 400 * DAY);
        c.started_ms = Some(now() - 300 * DAY);
    });
    let (decision, why) = decide(db, &SweepRules::default());
    assert_eq!(decision, Decision::Keep, "{why}");
    assert!(why.contains("not in the janitor's scope"), "{why}");
}

#[test]
fn the_policy_brings_containers_into_scope_by_label_name_or_compose_project() {
    let idle = |labels: &[(&str, &str)], name: &str| {
        container("c1", name, |c| {
            c.labels = labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            c.created_ms = Some(now() - 30 * DAY);
            c.finished_ms = Some(now() - 20 * DAY);
        })
    };
    let scoped = rules(
        "containers:\n  scope:\n    labels: [\"team=ci\", preview]\n    names: [\"ci-*\"]\n    compose_projects: [\"pr-*\"]\n",
    );
    for (labels, name, because) in [
        (&[("team", "ci")][..], "x", "label team=ci"),
        (&[("preview", "")][..], "x", "label preview"),
        (&[][..], "ci-runner-7", "name ci-*"),
        (
            &[("com.docker.compose.project", "pr-4411")][..],
            "web",
            "compose project pr-4411",
        ),
    ] {
        let (decision, why) = decide(idle(labels, name), &scoped);
        assert_eq!(decision, Decision::Remove, "{because}: {why}");
        assert!(why.contains(because), "{because}: {why}");
    }
    for (labels, name) in [
        (&[("team", "web")][..], "x"),
        (&[][..], "db"),
        (&[("com.docker.compose.project", "shop")][..], "web"),
    ] {
        let (decision, why) = decide(idle(labels, name), &scoped);
        assert_eq!(decision, Decision::Keep, "{labels:?} {name}: {why}");
        assert!(why.contains("not in the janitor's scope"), "{why}");
    }
    let all = rules("containers: { scope: { all: true } }");
    assert_eq!(decide(idle(&[], "db"), &all).0, Decision::Remove);
}

/// Restarted three times at boot two days ago, used an hour ago: idle an hour, not a loop.
#[test]
fn restarts_long_past_do_not_age_a_healthy_container_from_creation() {
    let mut state = JanitorState::new();
    state.note_activity(Kind::Container, "c1", now() - HOUR);
    let healthy = container("c1", "api", |c| {
        c.status = "running".into();
        c.restart_count = 3;
        c.created_ms = Some(now() - 30 * DAY);
        c.started_ms = Some(now() - 2 * DAY);
    });
    let (decision, why) = decide_with(healthy, &SweepRules::default(), &state);
    assert_eq!(decision, Decision::Keep, "{why}");
    assert!(!why.contains("restart loop"), "{why}");
    assert!(why.contains("idle 1h"), "{why}");
}

#[test]
fn a_container_that_is_looping_now_is_aged_from_creation() {
    let old = |status: &str, restarts: u32, exit: Option<i64>, started_ago: i64| {
        container("c1", "flaky", |c| {
            c.status = status.into();
            c.restart_count = restarts;
            c.exit_code = exit;
            c.created_ms = Some(now() - 10 * DAY);
            c.started_ms = Some(now() - started_ago);
            c.finished_ms = Some(now() - started_ago + 1000);
        })
    };
    for (item, because) in [
        (old("restarting", 1, Some(1), MINUTE), "restarting now"),
        (old("exited", 5, Some(1), MINUTE), "exited with an error"),
        (
            old("running", 40, None, 30_000),
            "running again seconds ago",
        ),
    ] {
        let (decision, why) = decide(item, &SweepRules::default());
        assert_eq!(decision, Decision::Remove, "{because}: {why}");
        assert!(why.contains("restart loop"), "{because}: {why}");
    }
    // Exited cleanly after its restarts: an ordinary idle container, judged by its last run.
    let (decision, why) = decide(old("exited", 5, Some(0), MINUTE), &SweepRules::default());
    assert_eq!(decision, Decision::Keep, "{why}");
    assert!(!why.contains("restart loop"), "{why}");
}

#[test]
fn an_open_exec_session_keeps_a_container() {
    let busy = container("c1", "dev", |c| {
        c.status = "running".into();
        c.created_ms = Some(now() - 30 * DAY);
        c.started_ms = Some(now() - 30 * DAY);
        c.exec_ids = vec!["e1".into()];
    });
    let (decision, why) = decide(busy, &SweepRules::default());
    assert_eq!(decision, Decision::Keep, "{why}");
    assert!(why.contains("exec session"), "{why}");
}

/// A keep label that is empty or a pattern, or an age of zero, would switch protection off
/// without a word: each is refused, and the error says where.
#[test]
fn config_that_would_disarm_the_janitor_is_refused_with_its_place() {
    for (yaml, says) in [
        ("containers:\n  keep_label: \"\"\n", "empty"),
        ("containers:\n  keep_label: \"nightwatch.*\"\n", "pattern"),
        ("containers:\n  keep_until_label: \"a b\"\n", "space"),
        ("containers:\n  max_idle: 0s\n", "below the minimum"),
        (
            "containers:\n  restart_loop_max_age: 5m\n",
            "below the minimum",
        ),
        (
            "containers:\n  restart_loop_restarts: 0\n",
            "below the minimum",
        ),
        (
            "containers:\n  max_age: [{ name: \"qa-*\", max_age: 1s }]\n",
            "below the minimum",
        ),
        (
            "paths:\n  - { glob: \"/tmp/x-*\", max_age: 0s }\n",
            "below the minimum",
        ),
        ("containers:\n  scope: { labels: [\"*\"] }\n", "pattern"),
        ("containers:\n  scope: { names: [\"\"] }\n", "empty"),
    ] {
        let error = yaml_serde::from_str::<SweepRules>(yaml)
            .map(|_| ())
            .expect_err(yaml)
            .to_string();
        assert!(error.contains(says), "{yaml}: {error}");
        assert!(error.contains("line 2"), "{yaml}: the place: {error}");
    }
}

fn stack_member(id: &str, name: &str, project: &str) -> nightwatch_janitor::Item {
    container(id, name, |c| {
        c.labels
            .insert("com.docker.compose.project".into(), project.into());
        c.created_ms = Some(now() - 30 * DAY);
        c.finished_ms = Some(now() - 20 * DAY);
    })
}

/// A compose stack goes whole or not at all: one member kept keeps the others.
#[test]
fn a_compose_stack_is_planned_whole() {
    let web = stack_member("w", "pr-7-web-1", "pr-7");
    let mut db = stack_member("d", "pr-7-db-1", "pr-7");
    if let nightwatch_janitor::Facts::Container(c) = &mut db.facts {
        c.labels.insert("nightwatch.keep".into(), "true".into());
    }
    let lone = stack_member("x", "pr-8-web-1", "pr-8");
    let planned = plan(
        &[web, db, lone],
        &SweepRules::default(),
        now(),
        &JanitorState::new(),
    );
    let decision = |id: &str| {
        let e = planned.entries.iter().find(|e| e.id == id).unwrap();
        (e.decision, e.reasons.join("; "))
    };
    let (web, why) = decision("w");
    assert_eq!(web, Decision::Keep, "{why}");
    assert!(
        why.contains("compose stack pr-7") && why.contains("pr-7-db-1"),
        "{why}"
    );
    assert_eq!(decision("x").0, Decision::Remove);
}

/// At apply, a stack is looked at whole first: one member used since the plan keeps all of
/// them, none is removed half way.
#[test]
fn a_compose_stack_is_applied_whole_or_not_at_all() {
    use common::{World, dyns};
    use nightwatch_janitor::{AllowAll, Outcome, apply};
    let world = World::new(vec![
        stack_member("w", "pr-7-web-1", "pr-7"),
        stack_member("d", "pr-7-db-1", "pr-7"),
    ]);
    let rules = SweepRules::default();
    let mut state = JanitorState::new();
    let planned = plan(&world.all(), &rules, now(), &state);
    assert_eq!(planned.removals().count(), 2);
    // The database was used after the plan; the web server comes first in the plan.
    state.note_activity(Kind::Container, "d", now() + MINUTE);
    let fakes = world.inventories();
    let applied = apply(
        &planned,
        &dyns(&fakes),
        &rules,
        now() + 2 * MINUTE,
        &mut state,
        &mut AllowAll,
    );
    assert_eq!(applied.len(), 2);
    for result in &applied {
        let Outcome::NowKept { reasons } = &result.outcome else {
            panic!("{result:?}");
        };
        assert!(reasons[0].contains("compose stack pr-7"), "{reasons:?}");
    }
    assert!(world.removed.borrow().is_empty());
}

/// A session's end: only the containers it started are planned, each removed however young,
/// unless something holds it; apply decides them again the same way.
#[test]
fn a_sessions_leftovers_are_reaped_whatever_their_age() {
    use common::{World, dyns};
    use nightwatch_janitor::{AllowAll, Outcome, apply, plan_session};
    let of_session = |id: &str, session: &str, keep: bool| {
        container(id, id, |c| {
            c.labels.insert("nightwatch.session".into(), session.into());
            if keep {
                c.labels.insert("nightwatch.keep".into(), "true".into());
            }
            c.status = "running".into();
            c.created_ms = Some(now() - MINUTE);
            c.started_ms = Some(now() - MINUTE);
        })
    };
    let world = World::new(vec![
        of_session("fresh", "sess_a", false),
        of_session("pinned", "sess_a", true),
        of_session("other", "sess_b", false),
    ]);
    let rules = SweepRules::default();
    let mut state = JanitorState::new();
    let planned = plan_session(&world.all(), &rules, now(), &state, "sess_a");
    let ids: Vec<(&str, Decision)> = planned
        .entries
        .iter()
        .map(|e| (e.id.as_str(), e.decision))
        .collect();
    assert_eq!(
        ids,
        [("fresh", Decision::Remove), ("pinned", Decision::Keep)],
        "only sess_a's, the pinned one kept: {planned:?}"
    );
    assert!(planned.entries[0].reasons.join(" ").contains("sess_a"));
    let fakes = world.inventories();
    let applied = apply(
        &planned,
        &dyns(&fakes),
        &rules,
        now() + MINUTE,
        &mut state,
        &mut AllowAll,
    );
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0].outcome, Outcome::Removed, "{applied:?}");
    // An ordinary plan keeps the same young container.
    let ordinary = plan(&world.all(), &rules, now(), &state);
    assert!(ordinary.removals().next().is_none(), "{ordinary:?}");
}
