//! What a container sweep costs against the real Engine: `list()` (one list call plus an
//! inspect per container) and `plan()`, at 50, 100 and 200 created containers, three runs
//! each. The containers are `docker create`d (never started), labelled for cleanup, and
//! removed at the end. Run with `cargo bench -p nightwatch-docker`.

#[path = "../tests/common/mod.rs"]
mod common;

use common::{IMAGE, Scratch, now_ms};
use nightwatch_docker::DockerInventory;
use nightwatch_janitor::{ContainerRules, Inventory, JanitorState, SweepRules, plan};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

const SIZES: [usize; 3] = [50, 100, 200];
const RUNS: usize = 3;
/// `docker create` processes at once: the CLI's start-up, not the Engine, is the slow part.
const BATCH: usize = 25;

fn main() {
    let scratch = Scratch::new("bench");
    let inventory = DockerInventory::from_docker_host(
        std::env::var("DOCKER_HOST").ok().as_deref(),
        &ContainerRules::default(),
    )
    .expect("inventory");
    let rules = SweepRules::default();
    let state = JanitorState::new();
    let started = Instant::now();
    let mut created = 0;
    let mut rows = Vec::new();
    for size in SIZES {
        let t = Instant::now();
        create(&scratch, created, size);
        let create_s = t.elapsed().as_secs_f64();
        created = size;
        let mut list_ms = Vec::new();
        let mut plan_ms = Vec::new();
        let mut listed = 0;
        for _ in 0..RUNS {
            let t = Instant::now();
            let items = inventory.list().expect("list");
            list_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            let t = Instant::now();
            let decided = plan(&items, &rules, now_ms(), &state);
            plan_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(decided.entries.len(), items.len());
            listed = items.len();
        }
        rows.push((size, listed, list_ms, plan_ms, create_s));
    }
    println!(
        "| created | listed on host | list() ms (3 runs) | plan() ms (3 runs) | list+plan ms, best | docker create, s |"
    );
    println!("|---:|---:|---|---|---:|---:|");
    for (size, listed, list_ms, plan_ms, create_s) in rows {
        let best = list_ms
            .iter()
            .zip(&plan_ms)
            .map(|(l, p)| l + p)
            .fold(f64::INFINITY, f64::min);
        println!(
            "| {size} | {listed} | {} | {} | {best:.1} | {create_s:.1} |",
            join(&list_ms),
            join(&plan_ms)
        );
    }
    let t = Instant::now();
    drop(scratch);
    println!(
        "\nremoved the {created} containers in {:.1} s; {:.1} s in all",
        t.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

/// Creates containers `from..to` of this run, `BATCH` CLI processes at a time.
fn create(scratch: &Scratch, from: usize, to: usize) {
    let label = scratch.label();
    let numbers: Vec<usize> = (from..to).collect();
    for batch in numbers.chunks(BATCH) {
        let children: Vec<Child> = batch
            .iter()
            .map(|n| {
                Command::new("docker")
                    .args(["create", "--label", &label])
                    .args(["--name", &scratch.name(&format!("c{n}"))])
                    .args([IMAGE, "sleep", "3600"])
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("spawn docker create")
            })
            .collect();
        for mut child in children {
            assert!(
                child.wait().expect("docker create").success(),
                "docker create failed"
            );
        }
    }
}

fn join(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| format!("{v:.1}"))
        .collect::<Vec<_>>()
        .join(" / ")
}
