//! The planner against every rule of the seed, one table row per situation, each with the
//! exact reasons a person would read in `sweep plan`.

mod common;

use common::*;
use nightwatch_janitor::{
    ContainerFacts, Decision, FailureRules, Item, JanitorState, Kind, MergeState, NameMaxAge,
    PathFacts, PathRule, Plan, PrState, ProcessUse, Span, SweepRules, docker_time_ms, plan,
};

fn now() -> i64 {
    at("2026-03-10T12:00:00Z")
}

fn decide(item: &Item, rules: &SweepRules, state: &JanitorState) -> (Decision, Vec<String>) {
    let plan = plan(std::slice::from_ref(item), rules, now(), state);
    let entry = &plan.entries[0];
    (entry.decision, entry.reasons.clone())
}

struct Row {
    story: &'static str,
    item: Item,
    state: JanitorState,
    decision: Decision,
    reasons: &'static [&'static str],
}

fn check(rows: Vec<Row>, rules: &SweepRules) {
    for row in rows {
        let (decision, reasons) = decide(&row.item, rules, &row.state);
        assert_eq!(decision, row.decision, "{}: {reasons:?}", row.story);
        // A container an agent started says so last (the builder's owner label).
        let mut expected: Vec<String> = row.reasons.iter().map(|r| (*r).to_owned()).collect();
        if let nightwatch_janitor::Facts::Container(c) = &row.item.facts
            && let Some(agent) = c.labels.get("nightwatch.agent")
        {
            expected.push(format!(
                "started by agent {agent} (nightwatch.agent={agent})"
            ));
        }
        assert_eq!(reasons, expected, "{}", row.story);
    }
}

fn exited(created: &str, started: &str, finished: &str) -> impl FnOnce(&mut ContainerFacts) {
    let (c, s, f) = (
        docker_time_ms(created),
        docker_time_ms(started),
        docker_time_ms(finished),
    );
    move |facts| {
        facts.created_ms = c;
        facts.started_ms = s;
        facts.finished_ms = f;
    }
}

fn labelled(
    label: &'static str,
    value: &'static str,
    then: impl FnOnce(&mut ContainerFacts),
) -> impl FnOnce(&mut ContainerFacts) {
    move |facts| {
        then(facts);
        facts.labels.insert(label.into(), value.into());
    }
}

fn state_with(edit: impl FnOnce(&mut JanitorState)) -> JanitorState {
    let mut state = JanitorState::new();
    edit(&mut state);
    state
}

const OLD: (&str, &str, &str) = (
    "2026-02-01T09:00:00Z",
    "2026-02-01T09:00:05Z",
    "2026-03-01T08:00:00Z",
);

#[test]
fn containers_follow_the_seed() {
    let rules = SweepRules::default();
    let old = || exited(OLD.0, OLD.1, OLD.2);
    check(
        vec![
            Row {
                story: "a test database named after its bug, stopped nine days ago",
                item: container("c1", "pg-bug-4411", old()),
                state: JanitorState::new(),
                decision: Decision::Remove,
                reasons: &["idle 9d 4h (last: finished 2026-03-01T08:00:00Z) > 5d"],
            },
            Row {
                story: "a stack left over the weekend survives",
                item: container(
                    "c2",
                    "stack",
                    exited(
                        "2026-03-06T10:00:00Z",
                        "2026-03-06T10:00:01Z",
                        "2026-03-07T12:00:00Z",
                    ),
                ),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &["idle 3d (last: finished 2026-03-07T12:00:00Z), not over 5d"],
            },
            Row {
                story: "FinishedAt 0001-01-01 means never: the start counts",
                item: container(
                    "c3",
                    "tick",
                    exited(
                        "2026-02-01T00:00:00Z",
                        "2026-03-04T12:00:00Z",
                        "0001-01-01T00:00:00Z",
                    ),
                ),
                state: JanitorState::new(),
                decision: Decision::Remove,
                reasons: &["idle 6d (last: started 2026-03-04T12:00:00Z) > 5d"],
            },
            Row {
                story: "an exec nightwatch saw yesterday keeps an old container",
                item: container("c4", "shell", old()),
                state: state_with(|s| s.note_activity(Kind::Container, "c4", now() - DAY)),
                decision: Decision::Keep,
                reasons: &["idle 1d (last: activity seen 2026-03-09T12:00:00Z), not over 5d"],
            },
            Row {
                story: "labelled to stay",
                item: container("c5", "keeper", labelled("nightwatch.keep", "true", old())),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &[
                    "labelled nightwatch.keep=true",
                    "idle 9d 4h (last: finished 2026-03-01T08:00:00Z) > 5d",
                ],
            },
            Row {
                story: "keep=false keeps nothing",
                item: container(
                    "c6",
                    "not-kept",
                    labelled("nightwatch.keep", "false", old()),
                ),
                state: JanitorState::new(),
                decision: Decision::Remove,
                reasons: &[
                    "idle 9d 4h (last: finished 2026-03-01T08:00:00Z) > 5d",
                    "labelled nightwatch.keep=false, which does not keep it",
                ],
            },
            Row {
                story: "keep-until in the future",
                item: container(
                    "c7",
                    "demo",
                    labelled("nightwatch.keep-until", "2026-04-01", old()),
                ),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &[
                    "labelled nightwatch.keep-until=2026-04-01: kept until 2026-04-01T23:59:59Z",
                    "idle 9d 4h (last: finished 2026-03-01T08:00:00Z) > 5d",
                ],
            },
            Row {
                story: "keep-until in the past",
                item: container(
                    "c8",
                    "demo-old",
                    labelled("nightwatch.keep-until", "2026-03-01", old()),
                ),
                state: JanitorState::new(),
                decision: Decision::Remove,
                reasons: &[
                    "idle 9d 4h (last: finished 2026-03-01T08:00:00Z) > 5d",
                    "labelled nightwatch.keep-until=2026-03-01, which passed at 2026-03-01T23:59:59Z",
                ],
            },
            Row {
                story: "keep-until as a time, today but later",
                item: container(
                    "c9",
                    "demo-today",
                    labelled("nightwatch.keep-until", "2026-03-10T18:00:00Z", old()),
                ),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &[
                    "labelled nightwatch.keep-until=2026-03-10T18:00:00Z: kept until 2026-03-10T18:00:00Z",
                    "idle 9d 4h (last: finished 2026-03-01T08:00:00Z) > 5d",
                ],
            },
            Row {
                story: "an unreadable keep-until still says keep",
                item: container(
                    "c10",
                    "demo-soon",
                    labelled("nightwatch.keep-until", "soon", old()),
                ),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &[
                    "labelled nightwatch.keep-until=soon, which is not a date (YYYY-MM-DD or RFC 3339): kept to be safe",
                    "idle 9d 4h (last: finished 2026-03-01T08:00:00Z) > 5d",
                ],
            },
            Row {
                story: "a crash loop is aged from creation, not its last restart",
                item: container("c11", "crashy", |c| {
                    c.status = "restarting".into();
                    c.restart_count = 12;
                    c.created_ms = Some(now() - 7 * DAY);
                    c.started_ms = Some(now() - MINUTE);
                    c.finished_ms = Some(now() - 30_000);
                }),
                state: JanitorState::new(),
                decision: Decision::Remove,
                reasons: &[
                    "restart loop (12 restarts, restarting): aged from creation, 7d old (created 2026-03-03T12:00:00Z) > 5d",
                ],
            },
            Row {
                story: "a young crash loop stays",
                item: container("c12", "crashy-new", |c| {
                    c.status = "running".into();
                    c.restart_count = 3;
                    c.created_ms = Some(now() - 2 * DAY);
                    c.started_ms = Some(now() - MINUTE);
                }),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &[
                    "restart loop (3 restarts, running): aged from creation, 2d old (created 2026-03-08T12:00:00Z), not over 5d",
                ],
            },
            Row {
                story: "two restarts are not a loop: the start counts",
                item: container("c13", "flaky", |c| {
                    c.status = "running".into();
                    c.restart_count = 2;
                    c.created_ms = Some(now() - 7 * DAY);
                    c.started_ms = Some(now() - HOUR);
                }),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &["idle 1h (last: started 2026-03-10T11:00:00Z), not over 5d"],
            },
            Row {
                story: "no times at all: first seen six days ago",
                item: container("c14", "ghost", |_| {}),
                state: state_with(|s| s.note_first_seen(Kind::Container, "c14", now() - 6 * DAY)),
                decision: Decision::Remove,
                reasons: &["idle 6d (last: first seen 2026-03-04T12:00:00Z) > 5d"],
            },
            Row {
                story: "no times at all and never seen: first seen now",
                item: container("c15", "ghost-new", |_| {}),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &["idle 0s (last: first seen 2026-03-10T12:00:00Z), not over 5d"],
            },
            Row {
                story: "backing off after a failed removal",
                item: container("c16", "wedged", old()),
                state: state_with(|s| {
                    let mut f = s.record_failure(
                        Kind::Container,
                        "c16",
                        now() - 2 * MINUTE,
                        &FailureRules::default(),
                        "stop: timed out",
                    );
                    assert!(!f.newly_quarantined);
                    f = s.record_failure(
                        Kind::Container,
                        "c16",
                        now() - MINUTE,
                        &FailureRules::default(),
                        "stop: timed out",
                    );
                    assert_eq!(f.next_try_ms, now() + 9 * MINUTE);
                }),
                decision: Decision::Keep,
                reasons: &[
                    "backing off after 2 failed removals (last: stop: timed out): next try after 2026-03-10T12:09:00Z",
                    "idle 9d 4h (last: finished 2026-03-01T08:00:00Z) > 5d",
                ],
            },
            Row {
                story: "the backoff has passed",
                item: container("c17", "wedged-once", old()),
                state: state_with(|s| {
                    s.record_failure(
                        Kind::Container,
                        "c17",
                        now() - HOUR,
                        &FailureRules::default(),
                        "stop: timed out",
                    );
                }),
                decision: Decision::Remove,
                reasons: &["idle 9d 4h (last: finished 2026-03-01T08:00:00Z) > 5d"],
            },
            Row {
                story: "quarantined after five failures",
                item: container("c18", "wedged-for-good", old()),
                state: state_with(|s| {
                    for n in 0..5 {
                        s.record_failure(
                            Kind::Container,
                            "c18",
                            now() - 30 * DAY + n * DAY,
                            &FailureRules::default(),
                            "remove: device or resource busy",
                        );
                    }
                }),
                decision: Decision::Keep,
                reasons: &[
                    "quarantined after 5 failed removals (last: remove: device or resource busy): release it to try again",
                    "idle 9d 4h (last: finished 2026-03-01T08:00:00Z) > 5d",
                ],
            },
        ],
        &rules,
    );
}

#[test]
fn named_maximum_age_goes_however_busy() {
    let mut rules = SweepRules::default();
    rules.containers.max_age = vec![NameMaxAge::new("qa-*", Span::hours(6)).unwrap()];
    check(
        vec![
            Row {
                story: "the QA slot after a few hours",
                item: container("q1", "qa-slot", |c| {
                    c.status = "running".into();
                    c.created_ms = Some(now() - 7 * HOUR);
                    c.started_ms = Some(now() - HOUR);
                }),
                state: JanitorState::new(),
                decision: Decision::Remove,
                reasons: &["7h old (created 2026-03-10T05:00:00Z) > 6h for containers named qa-*"],
            },
            Row {
                story: "a young QA slot",
                item: container("q2", "qa-slot-2", |c| {
                    c.status = "running".into();
                    c.created_ms = Some(now() - 2 * HOUR);
                    c.started_ms = Some(now() - HOUR);
                }),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &["idle 1h (last: started 2026-03-10T11:00:00Z), not over 5d"],
            },
            Row {
                story: "a labelled QA slot stays",
                item: container(
                    "q3",
                    "qa-pinned",
                    labelled("nightwatch.keep", "yes", |c| {
                        c.created_ms = Some(now() - 7 * HOUR);
                    }),
                ),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &[
                    "labelled nightwatch.keep=yes",
                    "7h old (created 2026-03-10T05:00:00Z) > 6h for containers named qa-*",
                ],
            },
        ],
        &rules,
    );
}

#[test]
fn worktrees_go_only_when_provably_finished() {
    let rules = SweepRules::default();
    let n = now();
    let removable = worktree("/w/fix-4411", n, |_| {});
    let (decision, reasons) = decide(&removable, &rules, &JanitorState::new());
    assert_eq!(decision, Decision::Remove);
    assert_eq!(
        reasons,
        [
            "clean",
            "branch fix-4411 merged into main",
            "PR merged from abc123def456",
            "3d old (created 2026-03-07T12:00:00Z) ≥ 1d",
        ]
    );

    // One condition at a time; the first reason is the one that keeps it.
    type Edit = Box<dyn FnOnce(&mut nightwatch_janitor::WorktreeFacts)>;
    let cases: Vec<(&str, Edit, Decision, &str)> = vec![
        (
            "dirty",
            Box::new(|w| w.dirty = Some("2 untracked, 1 unstaged".into())),
            Decision::Keep,
            "uncommitted changes: 2 untracked, 1 unstaged",
        ),
        (
            "locked with a reason",
            Box::new(|w| w.locked = Some("agent session 7 running".into())),
            Decision::Keep,
            "locked: agent session 7 running",
        ),
        (
            "locked",
            Box::new(|w| w.locked = Some(String::new())),
            Decision::Keep,
            "locked",
        ),
        (
            "main",
            Box::new(|w| w.is_main = true),
            Decision::Keep,
            "the main worktree",
        ),
        (
            "in use",
            Box::new(|w| {
                w.in_use_by = vec![ProcessUse {
                    pid: 4242,
                    command: "claude".into(),
                }]
            }),
            Decision::Keep,
            "in use by pid 4242 (claude)",
        ),
        (
            "not merged",
            Box::new(|w| {
                w.merge = MergeState::NotMerged {
                    into: "main".into(),
                }
            }),
            Decision::Keep,
            "branch fix-4411 not merged into main",
        ),
        (
            "merged elsewhere",
            Box::new(|w| {
                w.merge = MergeState::Ancestor {
                    into: "develop".into(),
                }
            }),
            Decision::Keep,
            "branch fix-4411 merged into develop, not the base main",
        ),
        (
            "merge unknown",
            Box::new(|w| {
                w.merge = MergeState::Unknown {
                    why: "base main not found".into(),
                }
            }),
            Decision::Keep,
            "merge state unknown: base main not found",
        ),
        (
            "PR open",
            Box::new(|w| {
                w.pr = PrState::Open {
                    url: Some("https://github.com/o/app/pull/7".into()),
                }
            }),
            Decision::Keep,
            "PR open: https://github.com/o/app/pull/7",
        ),
        (
            "no PR provider",
            Box::new(|w| {
                w.pr = PrState::Unknown {
                    why: "no PR provider configured".into(),
                }
            }),
            Decision::Keep,
            "PR state unknown: no PR provider configured",
        ),
        (
            "too young",
            Box::new(move |w| w.created_ms = Some(n - 3 * HOUR)),
            Decision::Keep,
            "too young: 3h old (created 2026-03-10T09:00:00Z) < 1d",
        ),
        (
            "no creation time, never seen",
            Box::new(|w| w.created_ms = None),
            Decision::Keep,
            "too young: 0s old (first seen 2026-03-10T12:00:00Z) < 1d",
        ),
        (
            "squash-merged",
            Box::new(|w| {
                w.merge = MergeState::SquashedContent {
                    into: "main".into(),
                }
            }),
            Decision::Remove,
            "clean",
        ),
        (
            "PR closed",
            Box::new(|w| w.pr = PrState::Closed),
            Decision::Remove,
            "clean",
        ),
        (
            "never had a PR",
            Box::new(|w| w.pr = PrState::NoPr),
            Decision::Remove,
            "clean",
        ),
    ];
    for (story, edit, expected, first_reason) in cases {
        let item = worktree("/w/case", n, edit);
        let (decision, reasons) = decide(&item, &rules, &JanitorState::new());
        assert_eq!(decision, expected, "{story}: {reasons:?}");
        assert_eq!(reasons[0], first_reason, "{story}: {reasons:?}");
    }

    let squashed = worktree("/w/sq", n, |w| {
        w.merge = MergeState::SquashedContent {
            into: "main".into(),
        };
        w.branch = None;
    });
    assert_eq!(
        decide(&squashed, &rules, &JanitorState::new()).1[1],
        "detached HEAD abc123def456 merged into main by content (squash)"
    );

    let first_seen = worktree("/w/old", n, |w| w.created_ms = None);
    let state = state_with(|s| s.note_first_seen(Kind::Worktree, "/w/old", n - 2 * DAY));
    let (decision, reasons) = decide(&first_seen, &rules, &state);
    assert_eq!(decision, Decision::Remove);
    assert_eq!(reasons[3], "2d old (first seen 2026-03-08T12:00:00Z) ≥ 1d");
}

/// First seen three days before `now()`.
fn seen_3d_ago(name: &str) -> JanitorState {
    let id = format!("/src/app#{name}");
    state_with(|s| s.note_first_seen(Kind::Branch, &id, now() - 3 * DAY))
}

const SEEN_3D: &str = "3d old (first seen 2026-03-07T12:00:00Z) ≥ 1d";
const IN_MAIN_NOT_ENOUGH: &str = "tip abc123def456 is in main, but ancestry alone does not delete a branch (branches.ancestry: false)";

#[test]
fn branches_go_only_when_a_pr_merged_from_their_exact_tip() {
    let rules = SweepRules::default();
    check(
        vec![
            Row {
                story: "squash-merged: main never held the tip, the PR merged from it",
                item: branch("fix-4411", |b| b.merged_commit = None),
                state: seen_3d_ago("fix-4411"),
                decision: Decision::Remove,
                reasons: &["PR merged from its tip abc123def456", SEEN_3D],
            },
            Row {
                story: "fast-forwarded and its PR merged from its tip",
                item: branch("fix-4412", |_| {}),
                state: seen_3d_ago("fix-4412"),
                decision: Decision::Remove,
                reasons: &["PR merged from its tip abc123def456", SEEN_3D],
            },
            Row {
                story: "a commit after the squash merge",
                item: branch("fix-4413", |b| {
                    b.tip = "fedcba9876543210".into();
                    b.merged_commit = None;
                }),
                state: seen_3d_ago("fix-4413"),
                decision: Decision::Keep,
                reasons: &[
                    "PR merged from abc123def456 but the tip is now fedcba987654",
                    SEEN_3D,
                ],
            },
            Row {
                story: "made seconds ago at main's tip, no PR yet",
                item: branch("agent-7", |b| {
                    b.pr = PrState::NoPr;
                    b.tip_time_ms = Some(now() - 40_000);
                }),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &[
                    "no PR for this branch",
                    IN_MAIN_NOT_ENOUGH,
                    "too young: 0s old (first seen 2026-03-10T12:00:00Z) < 1d",
                ],
            },
            Row {
                story: "no PR provider: ancestry alone keeps",
                item: branch("old-spike", |b| {
                    b.pr = PrState::Unknown {
                        why: "no PR provider configured".into(),
                    }
                }),
                state: seen_3d_ago("old-spike"),
                decision: Decision::Keep,
                reasons: &[
                    "PR state unknown: no PR provider configured",
                    IN_MAIN_NOT_ENOUGH,
                    SEEN_3D,
                ],
            },
            Row {
                story: "PR closed without merging",
                item: branch("dead-end", |b| {
                    b.pr = PrState::Closed;
                    b.merged_commit = None;
                }),
                state: seen_3d_ago("dead-end"),
                decision: Decision::Keep,
                reasons: &["PR closed without merging", SEEN_3D],
            },
            Row {
                story: "PR open",
                item: branch("wip", |b| {
                    b.pr = PrState::Open {
                        url: Some("https://github.com/octo-org/app/pull/12".into()),
                    };
                    b.merged_commit = None;
                }),
                state: seen_3d_ago("wip"),
                decision: Decision::Keep,
                reasons: &["PR open: https://github.com/octo-org/app/pull/12", SEEN_3D],
            },
            Row {
                story: "merged at its tip two hours ago",
                item: branch("fresh", |b| b.tip_time_ms = Some(now() - 2 * HOUR)),
                state: seen_3d_ago("fresh"),
                decision: Decision::Keep,
                reasons: &[
                    "too young: 2h old (tip committed 2026-03-10T10:00:00Z) < 1d",
                    "PR merged from its tip abc123def456",
                ],
            },
            Row {
                story: "tip time unreadable: the first sighting ages it",
                item: branch("no-time", |b| b.tip_time_ms = None),
                state: seen_3d_ago("no-time"),
                decision: Decision::Remove,
                reasons: &["PR merged from its tip abc123def456", SEEN_3D],
            },
            Row {
                story: "the base itself",
                item: branch("main", |_| {}),
                state: seen_3d_ago("main"),
                decision: Decision::Keep,
                reasons: &[
                    "the base branch main",
                    "PR merged from its tip abc123def456",
                    SEEN_3D,
                ],
            },
            Row {
                story: "checked out in a worktree that stays",
                item: branch("fix-4414", |b| b.checked_out_in = Some("/w/busy".into())),
                state: seen_3d_ago("fix-4414"),
                decision: Decision::Keep,
                reasons: &[
                    "checked out in worktree /w/busy",
                    "PR merged from its tip abc123def456",
                    SEEN_3D,
                ],
            },
        ],
        &rules,
    );
}

#[test]
fn ancestry_deletes_a_branch_only_when_the_policy_says_so() {
    let mut rules = SweepRules::default();
    rules.branches.ancestry = true;
    check(
        vec![
            Row {
                story: "in main, no PR",
                item: branch("old-spike", |b| b.pr = PrState::NoPr),
                state: seen_3d_ago("old-spike"),
                decision: Decision::Remove,
                reasons: &[
                    "tip abc123def456 is in main (branches.ancestry: true)",
                    SEEN_3D,
                    "no PR for this branch",
                ],
            },
            Row {
                story: "not in main, no PR",
                item: branch("spike", |b| {
                    b.pr = PrState::NoPr;
                    b.merged_commit = None;
                }),
                state: seen_3d_ago("spike"),
                decision: Decision::Keep,
                reasons: &[
                    "no PR for this branch",
                    "tip abc123def456 is not in main",
                    SEEN_3D,
                ],
            },
            Row {
                story: "made seconds ago at main's tip, which is old",
                item: branch("agent-8", |b| {
                    b.pr = PrState::NoPr;
                    b.tip_time_ms = Some(now() - 20 * DAY);
                }),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &[
                    "too young: 0s old (first seen 2026-03-10T12:00:00Z) < 1d",
                    "tip abc123def456 is in main (branches.ancestry: true)",
                    "no PR for this branch",
                ],
            },
            Row {
                story: "in main with its PR still open",
                item: branch("wip", |b| b.pr = PrState::Open { url: None }),
                state: seen_3d_ago("wip"),
                decision: Decision::Keep,
                reasons: &[
                    "PR open",
                    "tip abc123def456 is in main (branches.ancestry: true)",
                    SEEN_3D,
                ],
            },
        ],
        &rules,
    );
    // Without it, the same branch stays.
    let (decision, reasons) = decide(
        &branch("old-spike", |b| b.pr = PrState::NoPr),
        &SweepRules::default(),
        &seen_3d_ago("old-spike"),
    );
    assert_eq!(decision, Decision::Keep);
    assert_eq!(reasons[1], IN_MAIN_NOT_ENOUGH);
}

#[test]
fn a_plan_saved_before_branches_had_pr_states_still_reads_and_keeps() {
    let facts = r#"{"kind": "branch", "repo": "/src/app", "name": "fix", "tip": "abc123def4567890",
        "merged_commit": "abc123def4567890", "checked_out_in": null}"#;
    let facts: nightwatch_janitor::Facts = serde_json::from_str(facts).unwrap();
    let nightwatch_janitor::Facts::Branch(b) = &facts else {
        panic!("not a branch")
    };
    assert_eq!(b.tip_time_ms, None);
    assert_eq!(
        b.pr,
        PrState::Unknown {
            why: "not recorded in this plan".into()
        }
    );
    let item = Item {
        id: "/src/app#fix".into(),
        name: "fix".into(),
        facts,
    };
    let (decision, reasons) = decide(&item, &SweepRules::default(), &seen_3d_ago("fix"));
    assert_eq!(decision, Decision::Keep);
    assert_eq!(reasons[0], "PR state unknown: not recorded in this plan");
}

#[test]
fn a_branch_follows_its_worktree_out() {
    let rules = SweepRules::default();
    let n = now();
    let items = vec![
        branch("fix-4411", |b| {
            b.checked_out_in = Some("/w/fix-4411".into())
        }),
        worktree("/w/fix-4411", n, |_| {}),
    ];
    let plan = plan(&items, &rules, n, &seen_3d_ago("fix-4411"));
    let kinds: Vec<Kind> = plan.entries.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [Kind::Worktree, Kind::Branch],
        "folder before branch"
    );
    let branch_entry = &plan.entries[1];
    assert_eq!(branch_entry.decision, Decision::Remove);
    assert_eq!(branch_entry.after.as_deref(), Some("/w/fix-4411"));
    assert_eq!(
        branch_entry.reasons,
        [
            "after its worktree /w/fix-4411 is removed",
            "PR merged from its tip abc123def456",
            SEEN_3D,
        ]
    );
    // The fingerprint is of the branch as it will be once the folder is gone.
    let after = branch("fix-4411", |_| {});
    assert_eq!(branch_entry.fingerprint, after.fingerprint());
}

#[test]
fn paths_by_glob_and_age() {
    let rules = SweepRules {
        paths: vec![PathRule::new("/tmp/pytest-of-*/pytest-*", Span::days(2)).unwrap()],
        ..SweepRules::default()
    };
    let path = |id: &str, modified: Option<i64>, keep_file: bool, rule: &str| Item {
        id: id.into(),
        name: id.into(),
        facts: nightwatch_janitor::Facts::Path(PathFacts {
            path: id.into(),
            rule: rule.into(),
            is_dir: true,
            is_symlink: false,
            modified_ms: modified,
            keep_file,
        }),
    };
    let glob = "/tmp/pytest-of-*/pytest-*";
    check(
        vec![
            Row {
                story: "old pytest dir",
                item: path(
                    "/tmp/pytest-of-a/pytest-1",
                    Some(now() - 3 * DAY),
                    false,
                    glob,
                ),
                state: JanitorState::new(),
                decision: Decision::Remove,
                reasons: &["unmodified for 3d (last: 2026-03-07T12:00:00Z) > 2d"],
            },
            Row {
                story: "recent pytest dir",
                item: path("/tmp/pytest-of-a/pytest-2", Some(now() - DAY), false, glob),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &["unmodified for 1d (last: 2026-03-09T12:00:00Z), not over 2d"],
            },
            Row {
                story: "a keep file inside",
                item: path(
                    "/tmp/pytest-of-a/pytest-3",
                    Some(now() - 9 * DAY),
                    true,
                    glob,
                ),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &[
                    "contains .nightwatch-keep",
                    "unmodified for 9d (last: 2026-03-01T12:00:00Z) > 2d",
                ],
            },
            Row {
                story: "age unknown",
                item: path("/tmp/pytest-of-a/pytest-4", None, false, glob),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &["modification time unknown (unreadable, or too many entries)"],
            },
            Row {
                story: "its rule was taken out of the policy",
                item: path("/var/tmp/x", Some(now() - 9 * DAY), false, "/var/tmp/*"),
                state: JanitorState::new(),
                decision: Decision::Keep,
                reasons: &["no paths rule for glob /var/tmp/* any more"],
            },
        ],
        &rules,
    );
}

#[test]
fn first_seen_is_recorded_once() {
    let items = vec![container("c1", "ghost", |_| {}), branch("b", |_| {})];
    let mut state = JanitorState::new();
    assert_eq!(state.observe(&items, now() - 6 * DAY), 2);
    assert_eq!(
        state.observe(&items, now()),
        0,
        "a later sighting moves nothing"
    );
    assert_eq!(
        state.first_seen(Kind::Container, "c1"),
        Some(now() - 6 * DAY)
    );
    assert_eq!(
        state.first_seen(Kind::Branch, "/src/app#b"),
        Some(now() - 6 * DAY)
    );
    assert_eq!(state.first_seen(Kind::Path, "c1"), None, "ids are per kind");
    let plan = plan(&items, &SweepRules::default(), now(), &state);
    let ghost = plan.entries.iter().find(|e| e.id == "c1").unwrap();
    assert_eq!(ghost.decision, Decision::Remove);
    assert_eq!(ghost.age_ms, 6 * 86_400_000);
}

#[test]
fn plans_round_trip_through_json() {
    let n = now();
    let items = vec![
        container("c1", "pg-bug-4411", exited(OLD.0, OLD.1, OLD.2)),
        worktree("/w/a", n, |_| {}),
        branch("fix", |b| b.checked_out_in = Some("/w/a".into())),
        container("c2", "keeper", labelled("nightwatch.keep", "true", |_| {})),
    ];
    let planned = plan(&items, &SweepRules::default(), n, &seen_3d_ago("fix"));
    let back = Plan::from_json(&planned.to_json()).unwrap();
    assert_eq!(back, planned);
    let order: Vec<(&str, Decision)> = planned
        .entries
        .iter()
        .map(|e| (e.id.as_str(), e.decision))
        .collect();
    assert_eq!(
        order,
        [
            ("c1", Decision::Remove),
            ("/w/a", Decision::Remove),
            ("/src/app#fix", Decision::Remove),
            ("c2", Decision::Keep),
        ]
    );
    assert!(Plan::from_json("{\"now_ms\": 1}").is_err());
}

#[test]
fn rules_read_from_yaml_with_the_seed_defaults() {
    let rules: SweepRules = yaml_serde::from_str("{}").unwrap();
    assert_eq!(rules.containers.max_idle, Span::days(5));
    assert_eq!(rules.containers.restart_loop_max_age, Span::days(5));
    assert_eq!(rules.containers.keep_label, "nightwatch.keep");
    assert_eq!(rules.containers.keep_until_label, "nightwatch.keep-until");
    assert_eq!(rules.worktrees.base, "main");
    assert_eq!(rules.worktrees.min_age, Span::days(1));
    assert_eq!(rules.branches.base, "main");
    assert_eq!(rules.branches.min_age, Span::days(1));
    assert!(!rules.branches.ancestry);
    assert!(rules.paths.is_empty());
    assert_eq!(rules.failures.backoff_initial, Span::minutes(5));
    assert_eq!(rules.failures.backoff_max, Span::hours(6));
    assert_eq!(rules.failures.quarantine_after, 5);

    let yaml = r#"
containers:
  max_idle: 36h
  max_age:
    - { name: "qa-*", max_age: 6h }
worktrees: { base: trunk, min_age: 2d, pr: github }
branches: { base: trunk, min_age: 12h, ancestry: true }
paths:
  - { glob: "/tmp/pytest-of-*/pytest-*", max_age: 2d }
  - { glob: "/var/tmp/build-*", max_age: 1w, keep_file: KEEP }
failures: { backoff_initial: 1m, backoff_max: 1h, quarantine_after: 3 }
"#;
    let rules: SweepRules = yaml_serde::from_str(yaml).unwrap();
    assert_eq!(rules.containers.max_idle, Span::hours(36));
    assert_eq!(rules.containers.max_age[0].name(), "qa-*");
    assert_eq!(
        rules.worktrees.pr,
        nightwatch_janitor::PrProvider::Github(nightwatch_janitor::GithubPr::default())
    );
    assert_eq!(rules.branches.min_age, Span::hours(12));
    assert!(rules.branches.ancestry);
    assert_eq!(rules.paths[1].keep_file(), "KEEP");
    assert_eq!(rules.failures.quarantine_after, 3);

    for (bad, says) in [
        ("containers: { max_idle: 5 }", "needs a unit"),
        ("containers: { max_idel: 5d }", "unknown field `max_idel`"),
        (
            "paths: [{ glob: \"/*\", max_age: 1d }]",
            "literal directory",
        ),
        (
            "paths: [{ glob: \"tmp/*\", max_age: 1d }]",
            "must be absolute",
        ),
        ("paths: [{ glob: \"/tmp/*\" }]", "missing field `max_age`"),
        ("failures: { quarantine_after: 0 }", "at least 1"),
        (
            "worktrees: { pr: gitlab }",
            "unknown PR provider \"gitlab\"",
        ),
        ("worktrees: { pr: { command: [] } }", "at least a program"),
        (
            "worktrees: { pr: { github: { token: x } } }",
            "unknown field `token`",
        ),
        ("branches: { ancestry: yes-please }", "ancestry"),
    ] {
        let error = yaml_serde::from_str::<SweepRules>(bad)
            .unwrap_err()
            .to_string();
        assert!(error.contains(says), "{bad}: {error}");
    }
}

/// A container with no owner label that the ledger's timing join points at (an agent's call
/// that ran while it was created) is a clue for a person, never a removal: not by age, not
/// when the session is reaped, however old it is.
#[test]
fn a_timing_join_never_removes_an_unlabelled_container() {
    let unlabelled = container("c-ops", "ops-db", |c| {
        c.labels.clear();
        let (created, started, finished) = OLD;
        exited(created, started, finished)(c);
    });
    let state = state_with(|s| {
        s.note_started_by(
            "c-ops",
            nightwatch_janitor::StartedBy {
                agent: "codex".into(),
                session: Some("sess-A".into()),
                evidence: "the Engine created it while its call r3 (docker run postgres:16) \
                           was running"
                    .into(),
            },
        )
    });
    let rules = SweepRules::default();
    let (decision, reasons) = decide(&unlabelled, &rules, &state);
    assert_eq!(decision, Decision::Keep, "{reasons:?}");
    assert!(
        reasons[0].starts_with("no nightwatch.agent label, so not provably an agent's")
            && reasons[0].contains("agent codex in session sess-A")
            && reasons[0].contains("a person decides"),
        "{reasons:?}"
    );
    let reaped = nightwatch_janitor::plan_session(
        std::slice::from_ref(&unlabelled),
        &rules,
        now(),
        &state,
        "sess-A",
    );
    assert_eq!(reaped.removals().count(), 0, "{reaped:?}");

    // The same container, labelled by the hook for that session, goes with the session.
    let mut owned = unlabelled.clone();
    if let nightwatch_janitor::Facts::Container(c) = &mut owned.facts {
        c.labels.insert("nightwatch.agent".into(), "codex".into());
        c.labels
            .insert("nightwatch.session".into(), "sess-A".into());
    }
    let reaped = nightwatch_janitor::plan_session(
        std::slice::from_ref(&owned),
        &rules,
        now(),
        &state,
        "sess-A",
    );
    assert_eq!(reaped.removals().count(), 1, "{reaped:?}");
}
