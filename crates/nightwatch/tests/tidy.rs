//! Tidy tests: the architecture's rules, checked over the source so that a violation fails the
//! build's tests instead of waiting for a review.
//!
//! - Only the host reads the system clock or the process environment: every other crate gets
//!   time from the engine's clock and variables from the captured environment, so a test or a
//!   resident gate can give them another, and a simulated "now" never leaks into records.
//! - Only the engine appends to the ledger: every actor proposes and records through it.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("the workspace holds crates/nightwatch")
        .to_path_buf()
}

/// Every `.rs` file under each crate's `src/`, with its text up to its unit tests (which live
/// at the end of a file, after `#[cfg(test)]`, and may read what they like).
fn sources() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let crates = workspace().join("crates");
    for entry in std::fs::read_dir(&crates).expect("crates/") {
        let src = entry.expect("entry").path().join("src");
        let mut stack = vec![src];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).expect("source reads");
                    let code = match text.find("#[cfg(test)]") {
                        Some(at) => text[..at].to_owned(),
                        None => text,
                    };
                    let name = path
                        .strip_prefix(workspace())
                        .expect("inside the workspace")
                        .display()
                        .to_string();
                    out.push((name, code));
                }
            }
        }
    }
    out.sort();
    out
}

/// Lines of `code` that contain any of `needles`, outside comments.
fn uses(code: &str, needles: &[&str]) -> Vec<String> {
    code.lines()
        .enumerate()
        .filter(|(_, line)| {
            let line = line.trim_start();
            !line.starts_with("//") && needles.iter().any(|n| line.contains(n))
        })
        .map(|(n, line)| format!("{}: {}", n + 1, line.trim()))
        .collect()
}

#[test]
fn only_the_host_reads_the_clock_or_the_environment() {
    // The host's capture: the one place each is read.
    let host = [
        "crates/nightwatch-host/src/environment.rs",
        "crates/nightwatch-host/src/clock.rs",
    ];
    let reads = [
        "env::var(",
        "env::var_os(",
        "env::vars(",
        "env::current_dir(",
        "SystemTime::now(",
        "Timestamp::now(",
        "Zoned::now(",
        "TimeZone::system(",
    ];
    let sources = sources();
    assert!(sources.len() > 100, "the walk found the sources");
    let mut found = Vec::new();
    for (file, code) in &sources {
        if host.contains(&file.as_str()) {
            continue;
        }
        for line in uses(code, &reads) {
            found.push(format!("{file}:{line}"));
        }
    }
    assert!(
        found.is_empty(),
        "read the clock or the environment outside the host (take them from the engine's \
         clock or the captured environment):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_above_would_catch_a_read() {
    let planted = "fn now() -> i64 {\n    std::time::SystemTime::now();\n    0\n}\n";
    assert_eq!(uses(planted, &["SystemTime::now("]).len(), 1);
    let commented = "// SystemTime::now() is read by the host only\n";
    assert!(uses(commented, &["SystemTime::now("]).is_empty());
}

#[test]
fn only_the_engine_appends_to_the_ledger() {
    // The engine writes; the store crates define and implement the append it calls.
    let writers = [
        "crates/nightwatch-gate/src/engine.rs",
        "crates/nightwatch-gate/src/lib.rs",
    ];
    let stores = [
        "crates/nightwatch-store/",
        "crates/nightwatch-store-conformance/",
        "crates/nightwatch-sqlite/",
        "crates/nightwatch-postgres/",
    ];
    let mut found = Vec::new();
    for (file, code) in &sources() {
        if writers.contains(&file.as_str()) || stores.iter().any(|s| file.starts_with(s)) {
            continue;
        }
        // `Vec::append` takes `&mut`; a ledger's takes an entry.
        for line in uses(code, &[".append("]) {
            if !line.contains(".append(&mut") {
                found.push(format!("{file}:{line}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "appended to the ledger outside the engine (record a typed Event through \
         Engine::record instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn only_the_engine_and_the_stores_hold_a_writable_ledger() {
    // Everything else is handed a `LedgerReader`; these build the engine from a store.
    let allowed = [
        "crates/nightwatch-gate/src/",
        "crates/nightwatch-store/",
        "crates/nightwatch-store-conformance/",
        "crates/nightwatch-sqlite/",
        "crates/nightwatch-postgres/",
        "crates/nightwatch-host/src/stores.rs",
        "crates/nightwatch-host/src/host.rs",
        "crates/nightwatch-host/src/hook.rs",
        "crates/nightwatch-host/src/resident.rs",
        "crates/nightwatch-serve/src/lib.rs",
    ];
    let mut found = Vec::new();
    for (file, code) in &sources() {
        if allowed.iter().any(|a| file.starts_with(a)) {
            continue;
        }
        for line in uses(
            code,
            &["dyn Ledger>", "dyn Ledger ", "dyn Ledger)", "dyn Ledger,"],
        ) {
            found.push(format!("{file}:{line}"));
        }
    }
    assert!(
        found.is_empty(),
        "a writable ledger outside the engine's builders (take a LedgerReader):\n{}",
        found.join("\n")
    );
}
