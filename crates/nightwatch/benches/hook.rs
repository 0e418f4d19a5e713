//! The whole `nightwatch hook claude` process for one `PreToolUse` call, durable ledger append
//! included, next to a minimal Python hook (a plain `main`, no criterion).
//!
//! ```text
//! cargo build --release && cargo bench -p nightwatch --bench hook
//! ```
//!
//! Runs `target/release/nightwatch hook claude` with `fixtures/payloads/claude/pre-bash.json` on
//! stdin and `NIGHTWATCH_HOME` set to a fresh temporary directory, and `python3` on a script that
//! only reads the JSON and prints a Claude allow reply, in turn, `BENCH_HOOK_RUNS` times
//! each (default 300) after 10 untimed warm-up calls each. Each time is from spawn to exit,
//! stdin written and stdout read. `BENCH_HOOK_BINARY=PATH` measures another build instead
//! (an earlier commit's, for a before-and-after).
//!
//! nightwatch runs four ways: with the built-in policy (which asks about this call), the same
//! answered by a resident gate (`nightwatch gate`, started by the bench), and with
//! a policy file that allows it, once without pre-flight checks and once with a typical set
//! (a long-running process, a lock file, and the circuit breaker over the ledger), so the two
//! file-policy rows differ only by the checks. Two more rows are Claude `Write`s under the
//! built-in policy, which asks about them and backs the target up first (an asked call may
//! still run): each call a different existing 4 KiB file, or a different new file, so the two
//! differ by the backup of the content.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const PYTHON_HOOK: &str = r#"import json,sys; json.load(sys.stdin); print(json.dumps({"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"ok"}}))
"#;

struct TempDir(PathBuf);

impl TempDir {
    fn new(prefix: &str) -> TempDir {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!("{prefix}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).expect("create a temporary directory");
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One call: spawn, write `input` to stdin, read stdout to the end, wait. Returns the wall time
/// and the reply.
fn call(command: &mut Command, input: &[u8]) -> (Duration, std::process::Output) {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the hook");
    child
        .stdin
        .take()
        .expect("the hook's stdin")
        .write_all(input)
        .expect("write the hook input");
    let output = child.wait_with_output().expect("wait for the hook");
    (started.elapsed(), output)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn check(name: &str, output: &std::process::Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() || !stdout.contains("permissionDecision") {
        eprintln!(
            "{name} failed: {}\nstdout: {stdout}\nstderr: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        std::process::exit(1);
    }
}

/// One row of the table: its name, how to run it, its inputs (one, sent every time, or one per
/// call) and the times measured.
type Contender<'a> = (&'a str, &'a mut Command, Vec<Vec<u8>>, Vec<Duration>);

fn main() -> ExitCode {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    // `BENCH_HOOK_BINARY` measures another build (an earlier commit's) the same way.
    let binary = std::env::var_os("BENCH_HOOK_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../../target/release/nightwatch"));
    let payload_path = manifest.join("../../fixtures/payloads/claude/pre-bash.json");
    if !binary.is_file() {
        eprintln!(
            "{} is missing: run `cargo build --release` first",
            binary.display()
        );
        return ExitCode::from(1);
    }
    let payload = match std::fs::read(&payload_path) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("cannot read {}: {e}", payload_path.display());
            return ExitCode::from(1);
        }
    };
    let runs: usize = std::env::var("BENCH_HOOK_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);

    let home = TempDir::new("nightwatch-bench-hook-home");
    let scripts = TempDir::new("nightwatch-bench-hook-py");
    let script = scripts.0.join("hook.py");
    std::fs::write(&script, PYTHON_HOOK).expect("write the Python hook");

    let mut nightwatch = Command::new(&binary);
    nightwatch
        .args(["hook", "claude"])
        .env("NIGHTWATCH_HOME", &home.0)
        .env_remove("NIGHTWATCH_POLICY")
        .env_remove("NIGHTWATCH_NOW");
    // `python3` may be a launcher script (pyenv's shim is bash running `pyenv exec`, about
    // 90 ms on its own); the interpreter it resolves to is what a hook would pay for.
    let python_bin = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".to_string());
    let mut python = Command::new(&python_bin);
    python.arg(&script);

    let policies = TempDir::new("nightwatch-bench-hook-policies");
    let rules = r#"
rules:
  - id: vacuum-journal
    verdict: allow
    command: ["journalctl --vacuum-time=*"]
"#;
    let unchecked = policies.0.join("unchecked.yaml");
    std::fs::write(&unchecked, rules).expect("write a policy");
    let checked = policies.0.join("checked.yaml");
    std::fs::write(
        &checked,
        format!(
            r#"
checks:
  active-migration:
    process: {{ command: "*migrate*", min_age: 30m }}
  migration-lock:
    lock_file: {{ glob: "{}/migration_batch_*.lock", min_age: 30m }}
  retry-storm:
    circuit_breaker: {{ failures: 5, within: 10m }}
always_check: [retry-storm]
{}    checks: [active-migration, migration-lock]
"#,
            policies.0.display(),
            rules.trim_start()
        ),
    )
    .expect("write a policy");
    let homes = [
        TempDir::new("nightwatch-bench-hook-unchecked"),
        TempDir::new("nightwatch-bench-hook-checked"),
    ];
    let mut without_checks = Command::new(&binary);
    without_checks
        .args(["hook", "claude"])
        .env("NIGHTWATCH_HOME", &homes[0].0)
        .env("NIGHTWATCH_POLICY", &unchecked)
        .env_remove("NIGHTWATCH_NOW");
    let mut with_checks = Command::new(&binary);
    with_checks
        .args(["hook", "claude"])
        .env("NIGHTWATCH_HOME", &homes[1].0)
        .env("NIGHTWATCH_POLICY", &checked)
        .env_remove("NIGHTWATCH_NOW");

    // The same built-in-policy call answered by a resident gate (`nightwatch gate`) that
    // keeps the policy loaded and the ledger open.
    let gate_home = TempDir::new("nightwatch-bench-hook-gate");
    let mut gate = Command::new(&binary)
        .arg("gate")
        .env("NIGHTWATCH_HOME", &gate_home.0)
        .env_remove("NIGHTWATCH_POLICY")
        .stderr(Stdio::null())
        .spawn()
        .expect("start the resident gate");
    let socket = gate_home.0.join("gate.sock");
    let waited = Instant::now();
    while !socket.exists() && waited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut through_gate = Command::new(&binary);
    through_gate
        .args(["hook", "claude"])
        .env("NIGHTWATCH_HOME", &gate_home.0)
        .env_remove("NIGHTWATCH_POLICY")
        .env_remove("NIGHTWATCH_NOW");

    // Claude `Write`s under the built-in policy, which asks about them and backs up the target
    // first (an asked call may still run): each call a different file, of an existing 4 KiB
    // file (its content is stored) or of a new one (only its absence is noted).
    let work = TempDir::new("nightwatch-bench-hook-work");
    let write_payloads = |existing: bool| -> Vec<Vec<u8>> {
        (0..runs + 11)
            .map(|i| {
                let file = work.0.join(format!(
                    "{}-{i}.conf",
                    if existing { "app" } else { "new" }
                ));
                if existing {
                    let line = format!("upstream_{i} = 10.0.{}.{}:8080\n", i / 250, i % 250);
                    std::fs::write(&file, line.repeat(4096 / line.len() + 1))
                        .expect("write a file to back up");
                }
                format!(
                    r#"{{"session_id":"sess_bench","cwd":"{cwd}","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{{"file_path":"{file}","content":"port = {i}\n"}},"tool_use_id":"toolu_{i}"}}"#,
                    cwd = work.0.display(),
                    file = file.display()
                )
                .into_bytes()
            })
            .collect()
    };
    let backed_up = write_payloads(true);
    let created = write_payloads(false);
    let write_homes = [
        TempDir::new("nightwatch-bench-hook-write-existing"),
        TempDir::new("nightwatch-bench-hook-write-new"),
    ];
    let builtin_in = |home: &TempDir| {
        let mut command = Command::new(&binary);
        command
            .args(["hook", "claude"])
            .env("NIGHTWATCH_HOME", &home.0)
            .env_remove("NIGHTWATCH_POLICY")
            .env_remove("NIGHTWATCH_NOW");
        command
    };
    let mut write_existing = builtin_in(&write_homes[0]);
    let mut write_new = builtin_in(&write_homes[1]);
    let (_, reply) = call(&mut write_existing, &backed_up[runs + 10]);
    check("Write of an existing file", &reply);
    println!(
        "nightwatch's reply (Write of an existing file): {}",
        String::from_utf8_lossy(&reply.stdout).trim()
    );

    let (_, first) = call(&mut nightwatch, &payload);
    check("nightwatch hook claude", &first);
    let (_, first) = call(&mut through_gate, &payload);
    check("nightwatch hook claude, resident gate", &first);
    for (name, command) in [
        ("policy file, no checks", &mut without_checks),
        ("policy file, 3 checks", &mut with_checks),
    ] {
        let (_, reply) = call(command, &payload);
        check(name, &reply);
        println!(
            "nightwatch's reply ({name}): {}",
            String::from_utf8_lossy(&reply.stdout).trim()
        );
    }
    println!("binary: {}", binary.display());
    println!("payload: {}", payload_path.display());
    println!("python3: {python_bin}");
    println!("NIGHTWATCH_HOME: {}", home.0.display());
    println!(
        "nightwatch's reply: {}",
        String::from_utf8_lossy(&first.stdout).trim()
    );
    let (_, first) = call(&mut python, &payload);
    check("python3 hook", &first);

    let same = |p: &[u8]| vec![p.to_vec()];
    let mut contenders: Vec<Contender> = vec![
        (
            "`nightwatch hook claude`, built-in policy",
            &mut nightwatch,
            same(&payload),
            Vec::new(),
        ),
        (
            "`nightwatch hook claude`, built-in policy, resident gate",
            &mut through_gate,
            same(&payload),
            Vec::new(),
        ),
        (
            "`nightwatch hook claude`, policy file, no checks",
            &mut without_checks,
            same(&payload),
            Vec::new(),
        ),
        (
            "`nightwatch hook claude`, policy file, 3 checks",
            &mut with_checks,
            same(&payload),
            Vec::new(),
        ),
        (
            "`Write`, built-in policy (ask), a 4 KiB file backed up first",
            &mut write_existing,
            backed_up,
            Vec::new(),
        ),
        (
            "`Write`, built-in policy (ask), a new file (nothing to back up)",
            &mut write_new,
            created,
            Vec::new(),
        ),
        (
            "python3, read JSON + print allow",
            &mut python,
            same(&payload),
            Vec::new(),
        ),
    ];
    // Call `n` of a contender: its own input `n`, or its one input again.
    let input = |inputs: &[Vec<u8>], n: usize| inputs[n % inputs.len()].clone();
    for n in 0..10 {
        for (_, command, inputs, _) in contenders.iter_mut() {
            call(command, &input(inputs, n));
        }
    }
    for i in 0..runs {
        // Rotate which goes first, so none always follows the same one.
        let count = contenders.len();
        for k in 0..count {
            let (_, command, inputs, times) = &mut contenders[(i + k) % count];
            let this = input(inputs, i + 10);
            times.push(call(command, &this).0);
        }
    }
    let _ = gate.kill();
    let _ = gate.wait();
    let ledger = home.0.join("ledger.db");
    println!(
        "ledger after the run: {} ({} bytes)",
        ledger.display(),
        std::fs::metadata(&ledger).map(|m| m.len()).unwrap_or(0)
    );
    println!();
    println!(
        "| hook ({runs} calls each, interleaved) | median ms | mean ms | p90 ms | p99 ms | max ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, _, _, times) in contenders.iter_mut() {
        times.sort();
        let mean = times.iter().sum::<Duration>() / u32::try_from(times.len().max(1)).unwrap_or(1);
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            ms(percentile(times, 0.5)),
            ms(mean),
            ms(percentile(times, 0.9)),
            ms(percentile(times, 0.99)),
            ms(times.last().copied().unwrap_or_default()),
        );
    }
    ExitCode::SUCCESS
}
