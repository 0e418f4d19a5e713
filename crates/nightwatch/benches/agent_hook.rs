//! The hook's cost inside a real agent session: the pinned Claude Code runs the same scripted
//! session (20 distinct harmless shell calls) with nightwatch's hooks installed and without,
//! alternated; the difference per tool call is what nightwatch adds. A bare process start
//! (`/bin/true`) is timed in the same run as the machine's limit.
//!
//! `NIGHTWATCH_AGENTS_CACHE=$(scripts/install-agents) cargo bench -p nightwatch --bench agent_hook`

#[path = "../tests/common/mod.rs"]
mod common;

use common::agents::{Agent, World, run};
use nightwatch_scripted_model::{ScriptedModel, Step};
use serde_json::json;
use std::time::{Duration, Instant};

const CALLS: usize = 20;
const ROUNDS: usize = 5;

fn session(world: &World, round: usize) -> Duration {
    let mut script: Vec<Step> = (0..CALLS)
        .map(|n| Step::call("Bash", json!({"command": format!("echo call-{round}-{n}")})))
        .collect();
    script.push(Step::Say("done".into()));
    let model = ScriptedModel::start(script).unwrap();
    let command = world.agent_command(
        &model,
        &["-p", "go", "--output-format", "stream-json", "--verbose"],
    );
    let started = Instant::now();
    let output = run(command, Duration::from_secs(300));
    assert!(output.status.success());
    started.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let with = World::new(Agent::Claude, "bench-with");
    with.install(&[]);
    let without = World::new(Agent::Claude, "bench-without");
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        off.push(session(&without, round));
        on.push(session(&with, round));
    }
    let bare = {
        let started = Instant::now();
        for _ in 0..200 {
            std::process::Command::new("/bin/true").status().unwrap();
        }
        started.elapsed() / 200
    };
    let (on, off) = (median(on), median(off));
    let added = on.saturating_sub(off) / CALLS as u32;
    println!(
        "claude session, {CALLS} shell calls, median of {ROUNDS}: without hooks {off:?}, with nightwatch {on:?}"
    );
    println!(
        "added per tool call: {added:?} (PreToolUse + PostToolUse hook processes); bare process start: {bare:?}"
    );
}
