//! What `sweep plan` costs in the pure core: 200 containers, 200 worktrees and 200 branches
//! (the benchmark size), planned against a state that knows half of them.
//! Run with `cargo bench -p nightwatch-janitor`.

use nightwatch_janitor::{
    BranchFacts, ContainerFacts, Facts, FailureRules, Item, JanitorState, Kind, MergeState,
    PrState, SweepRules, WorktreeFacts, plan,
};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const DAY: i64 = 86_400_000;

fn items(now: i64) -> Vec<Item> {
    let mut items = Vec::with_capacity(600);
    for i in 0..200i64 {
        let mut labels = BTreeMap::new();
        labels.insert(
            "com.docker.compose.project".to_owned(),
            format!("stack-{i}"),
        );
        if i % 10 == 0 {
            labels.insert("nightwatch.keep".to_owned(), "true".to_owned());
        }
        // Most were started by an agent (in the janitor's scope); some are an operator's own.
        if i % 7 != 0 {
            labels.insert("nightwatch.agent".to_owned(), "claude-code".to_owned());
        }
        items.push(Item {
            id: format!("{i:064x}"),
            name: format!("pg-bug-{i}"),
            facts: Facts::Container(ContainerFacts {
                labels,
                image: "postgres:16".to_owned(),
                status: if i % 3 == 0 { "running" } else { "exited" }.to_owned(),
                restart_count: u32::try_from(i % 5).unwrap_or(0),
                created_ms: Some(now - (i % 20) * DAY),
                started_ms: Some(now - (i % 20) * DAY + 1000),
                finished_ms: (i % 3 != 0).then_some(now - (i % 9) * DAY),
                ..ContainerFacts::default()
            }),
        });
    }
    for i in 0..200i64 {
        let path = format!("/home/dev/src/app/.worktrees/session-{i}");
        items.push(Item {
            id: path.clone(),
            name: path.clone(),
            facts: Facts::Worktree(WorktreeFacts {
                repo: "/home/dev/src/app".to_owned(),
                path,
                branch: Some(format!("session-{i}")),
                head: format!("{i:040x}"),
                is_main: false,
                locked: None,
                dirty: (i % 4 == 0).then(|| "1 untracked".to_owned()),
                merge: if i % 2 == 0 {
                    MergeState::Ancestor {
                        into: "main".to_owned(),
                    }
                } else {
                    MergeState::NotMerged {
                        into: "main".to_owned(),
                    }
                },
                in_use_by: Vec::new(),
                pr: PrState::Merged {
                    commit: format!("{i:040x}"),
                },
                created_ms: None,
            }),
        });
        items.push(Item {
            id: format!("/home/dev/src/app#session-{i}"),
            name: format!("session-{i}"),
            facts: Facts::Branch(BranchFacts {
                repo: "/home/dev/src/app".to_owned(),
                name: format!("session-{i}"),
                tip: format!("{i:040x}"),
                merged_commit: (i % 2 == 0).then(|| format!("{i:040x}")),
                pr: if i % 2 == 0 {
                    PrState::Merged {
                        commit: format!("{i:040x}"),
                    }
                } else {
                    PrState::NoPr
                },
                tip_time_ms: Some(now - 3 * DAY),
                checked_out_in: Some(format!("/home/dev/src/app/.worktrees/session-{i}")),
            }),
        });
    }
    items
}

fn main() {
    let now = 1_773_144_000_000;
    let items = items(now);
    let rules = SweepRules::default();
    let mut state = JanitorState::new();
    state.observe(&items[..300], now - 3 * DAY);
    for item in items.iter().step_by(17) {
        state.record_failure(item.kind(), &item.id, now, &FailureRules::default(), "busy");
    }
    state.note_activity(Kind::Container, &items[1].id, now - DAY);
    for _ in 0..20 {
        plan(&items, &rules, now, &state);
    }
    let mut samples: Vec<Duration> = (0..200)
        .map(|_| {
            let start = Instant::now();
            let planned = plan(&items, &rules, now, &state);
            let took = start.elapsed();
            assert_eq!(planned.entries.len(), 600);
            took
        })
        .collect();
    samples.sort();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    let planned = plan(&items, &rules, now, &state);
    println!(
        "plan 200 containers + 200 worktrees + 200 branches ({} remove): median {:.0} µs   p90 {:.0} µs   p99 {:.0} µs",
        planned.removals().count(),
        pick(0.5).as_secs_f64() * 1e6,
        pick(0.9).as_secs_f64() * 1e6,
        pick(0.99).as_secs_f64() * 1e6,
    );
}
