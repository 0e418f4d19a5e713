//! What listing worktrees costs on a real repository: one repo with 50, 100 and 200 linked
//! worktrees (the sizes), `list()` timed three times at each size. Every worktree
//! costs a gix open of its HEAD, a merge-base walk and one `git status`.
//! Run with `cargo bench -p nightwatch-git`.

#[path = "../tests/fixture/mod.rs"]
mod fixture;

use fixture::{Repo, git};
use nightwatch_janitor::Inventory;
use std::time::{Duration, Instant};

fn main() {
    let repo = Repo::new();
    // A few hundred files, so status has a working tree to walk.
    for dir in 0..20 {
        for file in 0..15 {
            repo.write(
                &repo.root(),
                &format!("src/m{dir}/f{file}.rs"),
                &format!("// {dir} {file}\n"),
            );
        }
    }
    repo.commit(&repo.root(), "files");
    let worktrees = repo.inventory().worktrees();

    println!("| worktrees | list() run 1 | run 2 | run 3 | per worktree (best) |");
    println!("|---:|---:|---:|---:|---:|");
    let mut have = 0;
    for size in [50usize, 100, 200] {
        let started = Instant::now();
        while have < size {
            let name = format!("session-{have}");
            let path = repo.wt(&name);
            // Half the sessions did work that was merged, a quarter left changes behind.
            git(
                &repo.root(),
                &[
                    "worktree",
                    "add",
                    "-q",
                    "-b",
                    &name,
                    path.to_str().unwrap(),
                    "main",
                ],
            );
            if have % 4 == 0 {
                repo.write(&path, "scratch.txt", "left behind\n");
            }
            have += 1;
        }
        let setup = started.elapsed();
        let mut runs: Vec<Duration> = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let items = worktrees.list().expect("list");
            runs.push(t.elapsed());
            assert_eq!(items.len(), size + 1);
        }
        let best = runs.iter().min().copied().unwrap_or_default();
        println!(
            "| {size} | {} | {} | {} | {:.2} ms |",
            ms(runs[0]),
            ms(runs[1]),
            ms(runs[2]),
            best.as_secs_f64() * 1000.0 / size as f64
        );
        eprintln!("(adding worktrees up to {size} took {})", ms(setup));
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}
