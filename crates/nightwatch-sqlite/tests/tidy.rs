//! Nothing above the store traits names SQLite: only this crate, and the host's one module
//! that opens the stores, may. Fails the build on a violation, naming where.

use std::path::{Path, PathBuf};

/// The only source file outside this crate that may name the backend.
const OPENING_MODULE: &str = "crates/nightwatch-host/src/stores.rs";

const THIS_CRATE: &str = "nightwatch-sqlite";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the workspace root above crates/nightwatch-sqlite")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_source_above_the_traits_names_sqlite() {
    let root = workspace_root();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).expect("crates/") {
        let krate = krate.expect("a crate directory").path();
        if krate.file_name().is_some_and(|n| n == THIS_CRATE) {
            continue;
        }
        rust_files(&krate.join("src"), &mut files);
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    let mut violations = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&root).unwrap_or(&file);
        if relative == Path::new(OPENING_MODULE) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        for (n, line) in text.lines().enumerate() {
            if line.contains("rusqlite") || line.contains("Sqlite") {
                violations.push(format!("{}:{}: {}", relative.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "only {THIS_CRATE} and {OPENING_MODULE} may name SQLite; open stores there and hold \
         the nightwatch-store traits elsewhere:\n{}",
        violations.join("\n")
    );
}

#[test]
fn no_crate_above_the_traits_depends_on_sqlite() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    assert!(
        packages.len() > 10,
        "found only {} packages",
        packages.len()
    );
    let mut violations = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default();
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let dependency_name = dependency["name"].as_str().unwrap_or_default();
            // Tests may reach into a database file to tamper with it or hold its lock (kind
            // "dev"); what a crate is built with may not.
            let built_with = dependency["kind"].is_null() || dependency["kind"] == "build";
            let allowed = match dependency_name {
                "rusqlite" => name == THIS_CRATE,
                // The host opens the stores (in its one opening module).
                THIS_CRATE => name == "nightwatch-host",
                _ => true,
            };
            if built_with && !allowed {
                violations.push(format!("{name} depends on {dependency_name}"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "only {THIS_CRATE} may depend on rusqlite, and only the host on {THIS_CRATE}:\n{}",
        violations.join("\n")
    );
}
