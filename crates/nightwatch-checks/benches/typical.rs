//! What a typical set of checks costs an action: a process scan, a lock-file glob and a circuit
//! breaker, all clear (the happy path). Run with `cargo bench -p nightwatch-checks`.

use nightwatch_checks::{CheckSpec, History, Probe, run_checks};
use std::time::{Duration, Instant};

struct NoFailures;

impl History for NoFailures {
    fn failures_since(&self, _: &str, _: &str, _: &str, _: i64) -> Result<u32, String> {
        Ok(0)
    }
}

fn spec(yaml: &str) -> CheckSpec {
    yaml_serde::from_str(yaml).expect("valid check")
}

fn measure(label: &str, checks: &[(&str, &CheckSpec)], probe: &Probe) {
    for _ in 0..50 {
        run_checks(checks, probe);
    }
    let mut samples: Vec<Duration> = (0..500)
        .map(|_| {
            let start = Instant::now();
            let findings = run_checks(checks, probe);
            let took = start.elapsed();
            assert!(findings.iter().all(|f| f.effect.is_none()), "{findings:?}");
            took
        })
        .collect();
    samples.sort();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!(
        "{label:<32} median {:>7.1} µs   p90 {:>7.1} µs   p99 {:>7.1} µs",
        pick(0.5).as_secs_f64() * 1e6,
        pick(0.9).as_secs_f64() * 1e6,
        pick(0.99).as_secs_f64() * 1e6,
    );
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..5 {
        std::fs::write(dir.path().join(format!("other_{i}.lock")), b"").expect("write");
    }
    let process = spec("process: { command: \"*no-such-migrate*\", min_age: 30m }");
    let process_by_name = spec("process: { name: \"no-such-migrate\", min_age: 30m }");
    let lock = spec(&format!(
        "lock_file: {{ glob: \"{}/migration_batch_*.lock\", min_age: 30m }}",
        dir.path().display()
    ));
    let breaker = spec("circuit_breaker: { failures: 5, within: 10m }");
    let now_ms = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_millis(),
    )
    .expect("fits");
    let probe = Probe {
        now_ms,
        local_minute_of_day: 720,
        local_weekday: jiff::civil::Weekday::Wednesday,
        actor_kind: "agent",
        actor_id: "claude-code",
        tool: "exec",
        fingerprint: "f00d",
        history: &NoFailures,
    };
    let processes = std::fs::read_dir("/proc")
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
            })
            .count()
        })
        .unwrap_or(0);
    println!("{processes} processes in /proc");
    measure(
        "process + lock_file + breaker",
        &[("p", &process), ("l", &lock), ("b", &breaker)],
        &probe,
    );
    measure(
        "process(name) + lock + breaker",
        &[("p", &process_by_name), ("l", &lock), ("b", &breaker)],
        &probe,
    );
    measure("process (command) alone", &[("p", &process)], &probe);
    measure("process (name) alone", &[("p", &process_by_name)], &probe);
    measure("lock_file alone", &[("l", &lock)], &probe);
    measure("circuit_breaker alone", &[("b", &breaker)], &probe);
}
