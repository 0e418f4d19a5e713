//! Loads the built-in policy and decides one line with it, in a loop, for profiling what a
//! hook pays per call: `load_builtin [N] [LINE]`.
use nightwatch_core::{Action, Actor, ActorKind, Tool};

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let line = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "journalctl --vacuum-time=7d --unit=app-worker".to_owned());
    let action = Action::new(
        Actor::new(ActorKind::Agent, "claude-code"),
        Tool::Exec { line },
    );
    let (mut load, mut decide) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
    for _ in 0..n {
        let started = std::time::Instant::now();
        let policy = std::hint::black_box(nightwatch_policy::Policy::builtin(
            nightwatch_shell::analyse,
        ));
        let loaded = std::time::Instant::now();
        std::hint::black_box(policy.decide(&action));
        decide += loaded.elapsed();
        load += loaded - started;
    }
    println!("load {:?}, first decision {:?}", load / n, decide / n);
}
