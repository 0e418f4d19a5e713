//! `nightwatch sweep plan`, the whole process, over real containers and real worktrees (a plain
//! `main`, no criterion):
//!
//! ```text
//! cargo build --release && cargo bench -p nightwatch --bench sweep
//! ```
//!
//! Creates N containers (`docker create` from the offline test image, not started, labelled
//! for cleanup) and N git worktrees in one repository, for N = 50, 100, 200, and times three
//! runs of `nightwatch sweep plan --json` over them. The plan also sees whatever else is on
//! the host; the table says how many items it planned. Everything created is removed.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const IMAGE: &str = "nightwatch-test/busybox:latest";
const LABEL: &str = "nightwatch.bench=sweep";

fn run(program: &str, args: &[&str], dir: Option<&Path>) -> Result<String, String> {
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@example.invalid")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@example.invalid")
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let out = command.output().map_err(|e| format!("{program}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn ensure_image() -> Result<(), String> {
    if run("docker", &["image", "inspect", IMAGE], None).is_ok() {
        return Ok(());
    }
    if !Path::new("/bin/busybox").is_file() {
        return Err("/bin/busybox is missing (apt-get install busybox-static)".to_owned());
    }
    let dir = std::env::temp_dir().join(format!("nightwatch-bench-image-{}", std::process::id()));
    let bin = dir.join("rootfs/bin");
    std::fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    std::fs::copy("/bin/busybox", bin.join("busybox")).map_err(|e| e.to_string())?;
    for applet in ["sh", "sleep"] {
        std::os::unix::fs::symlink("busybox", bin.join(applet)).map_err(|e| e.to_string())?;
    }
    let tar = dir.join("rootfs.tar");
    let rootfs = dir.join("rootfs");
    run(
        "tar",
        &[
            "-C",
            &rootfs.to_string_lossy(),
            "-cf",
            &tar.to_string_lossy(),
            "bin",
        ],
        None,
    )?;
    run("docker", &["import", &tar.to_string_lossy(), IMAGE], None)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn cleanup_containers() {
    if let Ok(ids) = run(
        "docker",
        &["ps", "-aq", "--filter", &format!("label={LABEL}")],
        None,
    ) {
        let ids: Vec<&str> = ids.split_whitespace().collect();
        for chunk in ids.chunks(50) {
            let mut args = vec!["rm", "-f"];
            args.extend(chunk);
            let _ = run("docker", &args, None);
        }
    }
}

fn main() -> ExitCode {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let binary = manifest.join("../../target/release/nightwatch");
    if !binary.is_file() {
        eprintln!(
            "{} is missing: run `cargo build --release` first",
            binary.display()
        );
        return ExitCode::from(1);
    }
    if let Err(e) = ensure_image() {
        eprintln!("cannot make the test image: {e}");
        return ExitCode::from(1);
    }
    let root: PathBuf =
        std::env::temp_dir().join(format!("nightwatch-bench-sweep-{}", std::process::id()));
    let repo = root.join("repo");
    let home = root.join("home");
    let setup = || -> Result<(), String> {
        std::fs::create_dir_all(&repo).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
        run("git", &["init", "-q", "-b", "main"], Some(&repo))?;
        std::fs::write(repo.join("README"), "bench\n").map_err(|e| e.to_string())?;
        run("git", &["add", "."], Some(&repo))?;
        run("git", &["commit", "-qm", "start"], Some(&repo))?;
        Ok(())
    };
    if let Err(e) = setup() {
        eprintln!("{e}");
        return ExitCode::from(1);
    }
    let policy = root.join("policy.yaml");
    let written = std::fs::write(
        &policy,
        format!(
            "sweep:\n  worktrees:\n    repos: [\"{}\"]\n    base: main\n",
            repo.display()
        ),
    );
    if written.is_err() {
        eprintln!("cannot write the policy");
        return ExitCode::from(1);
    }
    println!("| containers + worktrees | items planned | run 1 ms | run 2 ms | run 3 ms |");
    println!("|---:|---:|---:|---:|---:|");
    let mut made = 0;
    let mut failed = false;
    for target in [50, 100, 200] {
        while made < target {
            let name = format!("nwbench-{}-{made}", std::process::id());
            let created = run(
                "docker",
                &[
                    "create", "--label", LABEL, "--name", &name, IMAGE, "sleep", "1",
                ],
                None,
            )
            .and_then(|_| {
                let path = root.join(format!("wt-{made}"));
                run(
                    "git",
                    &[
                        "worktree",
                        "add",
                        "-q",
                        "-b",
                        &format!("b{made}"),
                        &path.to_string_lossy(),
                    ],
                    Some(&repo),
                )
            });
            if let Err(e) = created {
                eprintln!("{e}");
                failed = true;
                break;
            }
            made += 1;
        }
        if failed {
            break;
        }
        let mut times = Vec::new();
        let mut planned = 0;
        for _ in 0..3 {
            let started = Instant::now();
            let out = Command::new(&binary)
                .args(["sweep", "plan", "--json"])
                .env("NIGHTWATCH_HOME", &home)
                .env("NIGHTWATCH_POLICY", &policy)
                .output();
            let took = started.elapsed();
            match out {
                Ok(out) if out.status.success() => {
                    planned = serde_json::from_slice::<serde_json::Value>(&out.stdout)
                        .ok()
                        .and_then(|v| v["entries"].as_array().map(Vec::len))
                        .unwrap_or(0);
                    times.push(took);
                }
                Ok(out) => {
                    eprintln!(
                        "sweep plan failed: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    failed = true;
                    break;
                }
                Err(e) => {
                    eprintln!("cannot run nightwatch: {e}");
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            break;
        }
        let ms = |d: &Duration| format!("{:.0}", d.as_secs_f64() * 1000.0);
        println!(
            "| {target} + {target} | {planned} | {} | {} | {} |",
            ms(&times[0]),
            ms(&times[1]),
            ms(&times[2])
        );
    }
    if !failed && let Err(e) = apply_phase(&binary, &root, &home, &repo) {
        eprintln!("{e}");
        failed = true;
    }
    if !failed && let Err(e) = running_phase(&binary, &root, &home) {
        eprintln!("{e}");
        failed = true;
    }
    cleanup_containers();
    let _ = std::fs::remove_dir_all(&root);
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `sweep plan` then `sweep apply --yes` with 300 agents' containers (created, never started,
/// so idle as of a week ahead) among everything above: every removal re-inspected, put through
/// policy and recorded before the next starts. Beside it, the machine's own limit: as many
/// containers removed by `docker rm`, 50 to a call, with no decision and no record.
fn apply_phase(binary: &Path, root: &Path, home: &Path, repo: &Path) -> Result<(), String> {
    const CONTAINERS: usize = 300;
    let make = |tag: &str| -> Result<Vec<String>, String> {
        (0..CONTAINERS)
            .map(|i| {
                let name = format!("nwapply-{tag}-{}-{i}", std::process::id());
                run(
                    "docker",
                    &[
                        "create",
                        "--label",
                        LABEL,
                        "--label",
                        "nightwatch.agent=bench",
                        "--name",
                        &name,
                        IMAGE,
                        "sleep",
                        "1",
                    ],
                    None,
                )
            })
            .collect()
    };
    make("janitor")?;
    let policy = root.join("apply-policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "sweep:\n  worktrees:\n    repos: [\"{}\"]\n    base: main\nrules:\n  - id: janitor\n    verdict: allow\n    actor: {{ kind: [janitor] }}\n",
            repo.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    let week = (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(7 * 24)).to_string();
    let plan = root.join("plan.json");
    let nightwatch = |args: &[&str]| timed_run(binary, home, &policy, args);
    let plan_path = plan.to_string_lossy().into_owned();
    let (planned, _) = nightwatch(&["sweep", "plan", "--now", &week, "--out", &plan_path])?;
    let entries = std::fs::read_to_string(&plan)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["entries"].as_array().map(Vec::len))
        .unwrap_or(0);
    let (applied, printed) = nightwatch(&[
        "sweep", "apply", "--plan", &plan_path, "--yes", "--now", &week,
    ])?;
    let removed = count_removed(&printed);
    let bare_ids = make("bare")?;
    let started = Instant::now();
    for chunk in bare_ids.chunks(50) {
        let mut args = vec!["rm"];
        args.extend(chunk.iter().map(String::as_str));
        run("docker", &args, None)?;
    }
    let bare = started.elapsed();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!();
    println!(
        "| plan: items | plan ms | apply: removed | apply ms | ms per removal | bare `docker rm` of {CONTAINERS}, ms | bare ms per container |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {entries} | {:.0} | {removed} | {:.0} | {:.1} | {:.0} | {:.1} |",
        ms(planned),
        ms(applied),
        ms(applied) / removed.max(1) as f64,
        ms(bare),
        ms(bare) / CONTAINERS as f64
    );
    if removed != CONTAINERS {
        return Err(format!(
            "apply removed {removed} of the {CONTAINERS} agents' containers:\n{printed}"
        ));
    }
    Ok(())
}

/// `sweep apply` of agents' containers that are running and ignore SIGTERM, so each stop waits
/// out the janitor's 10 s stop timeout: one after another that is 10 s a container; the
/// janitor overlaps eight. Beside it, the machine's own limit: `docker stop` of as many in one
/// call (the CLI stops them all at once), then `docker rm`.
fn running_phase(binary: &Path, root: &Path, home: &Path) -> Result<(), String> {
    const RUNNING: usize = 16;
    let make = |tag: &str| -> Result<Vec<String>, String> {
        (0..RUNNING)
            .map(|i| {
                let name = format!("nwrun-{tag}-{}-{i}", std::process::id());
                run(
                    "docker",
                    &[
                        "run",
                        "-d",
                        "--label",
                        LABEL,
                        "--label",
                        "nightwatch.agent=bench",
                        "--name",
                        &name,
                        IMAGE,
                        "sh",
                        "-c",
                        "trap '' TERM; while true; do sleep 1; done",
                    ],
                    None,
                )
            })
            .collect()
    };
    let ours = make("janitor")?;
    let policy = root.join("running-policy.yaml");
    std::fs::write(
        &policy,
        "rules:\n  - id: janitor\n    verdict: allow\n    actor: { kind: [janitor] }\n",
    )
    .map_err(|e| e.to_string())?;
    let week = (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(7 * 24)).to_string();
    let plan = root.join("running-plan.json");
    let plan_path = plan.to_string_lossy().into_owned();
    let nightwatch = |args: &[&str]| timed_run(binary, home, &policy, args);
    nightwatch(&["sweep", "plan", "--now", &week, "--out", &plan_path])?;
    // Only this phase's containers: whatever else the host holds is not what is measured.
    let mut planned: serde_json::Value = std::fs::read_to_string(&plan)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or("the plan cannot be read")?;
    let entries: Vec<serde_json::Value> = planned["entries"]
        .as_array()
        .ok_or("the plan has no entries")?
        .iter()
        .filter(|e| ours.iter().any(|id| e["id"] == id.as_str()))
        .cloned()
        .collect();
    planned["entries"] = serde_json::Value::from(entries);
    std::fs::write(&plan, planned.to_string()).map_err(|e| e.to_string())?;
    let (applied, printed) = nightwatch(&[
        "sweep", "apply", "--plan", &plan_path, "--yes", "--now", &week,
    ])?;
    let removed = count_removed(&printed);
    let bare_ids = make("bare")?;
    let started = Instant::now();
    let mut stop = vec!["stop", "-t", "10"];
    stop.extend(bare_ids.iter().map(String::as_str));
    run("docker", &stop, None)?;
    let mut rm = vec!["rm"];
    rm.extend(bare_ids.iter().map(String::as_str));
    run("docker", &rm, None)?;
    let bare = started.elapsed();
    println!();
    println!(
        "| running containers (SIGTERM ignored, 10 s stop timeout) | apply: removed | apply s | one after another, s (at least) | bare `docker stop` + `rm` of {RUNNING}, s |"
    );
    println!("|---:|---:|---:|---:|---:|");
    println!(
        "| {RUNNING} | {removed} | {:.1} | {} | {:.1} |",
        applied.as_secs_f64(),
        RUNNING * 10,
        bare.as_secs_f64()
    );
    if removed != RUNNING {
        return Err(format!(
            "apply removed {removed} of the {RUNNING} running containers:\n{printed}"
        ));
    }
    Ok(())
}

/// `nightwatch ARGS` with `home` and `policy`: how long it took and what it printed, or why
/// it failed.
fn timed_run(
    binary: &Path,
    home: &Path,
    policy: &Path,
    args: &[&str],
) -> Result<(Duration, String), String> {
    let started = Instant::now();
    let out = Command::new(binary)
        .args(args)
        .env("NIGHTWATCH_HOME", home)
        .env("NIGHTWATCH_POLICY", policy)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let took = started.elapsed();
    if !out.status.success() {
        return Err(format!(
            "nightwatch {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok((took, String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// How many items `sweep apply` printed as removed (`[12/300] removed  container NAME: ...`).
fn count_removed(printed: &str) -> usize {
    printed
        .lines()
        .filter(|l| l.starts_with('[') && l.contains("] removed "))
        .count()
}
