//! The janitor's ownership promise, as a property: whatever the agents' calls, their timings,
//! the containers on the host and the mode (an ordinary sweep, or reaping a session), a plan
//! removes a container only when it carries nightwatch's owner label or the operator's scope
//! names it. The ledger's timing join, run here for real on the random calls, may add a clue
//! for a person, never a removal.

mod common;

use common::*;
use nightwatch_janitor::{
    AgentCall, Facts, Item, JanitorState, SweepRules, plan, plan_session, started_during,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Box_ {
    owned: bool,
    /// The operator's scope label (`team=ci`).
    scoped: bool,
    /// Other labels: a session label with no owner label proves nothing either.
    session_label: bool,
    created_min: i64,
    image: u8,
    running: bool,
}

#[derive(Clone, Debug)]
struct Call {
    session: u8,
    from_min: i64,
    length_min: i64,
    image: u8,
    compose: bool,
}

fn a_box() -> impl Strategy<Value = Box_> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        0i64..(30 * 24 * 60),
        0u8..3,
        any::<bool>(),
    )
        .prop_map(
            |(owned, scoped, session_label, created_min, image, running)| Box_ {
                owned,
                scoped,
                session_label,
                created_min,
                image,
                running,
            },
        )
}

fn a_call() -> impl Strategy<Value = Call> {
    (
        0u8..3,
        0i64..(30 * 24 * 60),
        0i64..20,
        0u8..3,
        any::<bool>(),
    )
        .prop_map(|(session, from_min, length_min, image, compose)| Call {
            session,
            from_min,
            length_min,
            image,
            compose,
        })
}

const IMAGES: [&str; 3] = ["busybox", "postgres:16", "nginx"];
const SCOPE: &str = "containers:\n  scope:\n    labels: [\"team=ci\"]\n";

fn build(i: usize, b: &Box_, t0: i64) -> Item {
    let created = t0 + b.created_min * MINUTE;
    container(&format!("c{i}"), &format!("box-{i}"), |c| {
        c.labels.clear();
        c.image = IMAGES[usize::from(b.image)].into();
        c.created_ms = Some(created);
        c.started_ms = Some(created);
        c.finished_ms = (!b.running).then_some(created + MINUTE);
        c.status = if b.running { "running" } else { "exited" }.into();
        c.labels.insert(
            "com.docker.compose.project.working_dir".into(),
            "/srv/app".into(),
        );
        if b.owned {
            c.labels
                .insert("nightwatch.agent".into(), "claude-code".into());
        }
        if b.session_label {
            c.labels.insert("nightwatch.session".into(), "s0".into());
        }
        if b.scoped {
            c.labels.insert("team".into(), "ci".into());
        }
    })
}

fn provable(item: &Item, scoped_rules: bool) -> bool {
    let Facts::Container(c) = &item.facts else {
        return true;
    };
    c.labels.contains_key("nightwatch.agent")
        || (scoped_rules && c.labels.get("team").is_some_and(|v| v == "ci"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn nothing_is_removed_without_an_owner_label_or_the_operators_scope(
        boxes in proptest::collection::vec(a_box(), 1..30),
        calls in proptest::collection::vec(a_call(), 0..30),
        scoped_rules in any::<bool>(),
        reap in proptest::option::of(0u8..3),
        days_later in 0i64..40,
    ) {
        let t0 = at("2026-03-01T00:00:00Z");
        let items: Vec<Item> = boxes.iter().enumerate().map(|(i, b)| build(i, b, t0)).collect();
        let calls: Vec<AgentCall> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let image = IMAGES[usize::from(c.image)];
                AgentCall {
                    agent: "codex".into(),
                    session: Some(format!("s{}", c.session)),
                    record: format!("r{i}"),
                    command: if c.compose {
                        "docker compose up -d".into()
                    } else {
                        format!("docker run -d {image} sleep 9")
                    },
                    cwd: Some("/srv/app".into()),
                    from_ms: t0 + c.from_min * MINUTE,
                    until_ms: t0 + (c.from_min + c.length_min) * MINUTE,
                }
            })
            .collect();
        let mut state = JanitorState::new();
        for (id, by) in started_during(&items, &calls) {
            state.note_started_by(&id, by);
        }
        let rules: SweepRules =
            yaml_serde::from_str(if scoped_rules { SCOPE } else { "{}" }).unwrap();
        let now = t0 + (30 + days_later) * 24 * HOUR;
        let planned = match reap {
            Some(session) => plan_session(&items, &rules, now, &state, &format!("s{session}")),
            None => plan(&items, &rules, now, &state),
        };
        for removal in planned.removals() {
            let item = items.iter().find(|i| i.id == removal.id).unwrap();
            prop_assert!(
                provable(item, scoped_rules),
                "{} removed without proof: {:?}",
                removal.id,
                removal.reasons
            );
        }
    }
}
