//! Nothing above the store traits reaches PostgreSQL's driver: only this crate may depend on
//! it or name it (the host's one opening module will name this crate, not the driver). Fails
//! the build on a violation, naming where.

use std::path::{Path, PathBuf};

const THIS_CRATE: &str = "nightwatch-postgres";

/// The driver's crates.
const DRIVER: [&str; 4] = ["postgres", "tokio-postgres", "r2d2", "r2d2_postgres"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the workspace root above crates/nightwatch-postgres")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_source_outside_this_crate_names_the_driver() {
    let root = workspace_root();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .flatten()
    {
        if krate.file_name() != THIS_CRATE {
            rust_files(&krate.path().join("src"), &mut files);
        }
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    let mut violations = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if ["postgres::", "r2d2", "tokio_postgres"]
                .iter()
                .any(|d| names(code, d))
            {
                let relative = file.strip_prefix(&root).unwrap_or(&file);
                violations.push(format!("{}:{}: {code}", relative.display(), n + 1));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "only {THIS_CRATE} may name PostgreSQL's driver; hold the nightwatch-store traits \
         elsewhere:\n{}",
        violations.join("\n")
    );
}

/// Whether `code` names `path` as a path of its own: `postgres::` but not
/// `nightwatch_postgres::` (this crate, which other crates may name).
fn names(code: &str, path: &str) -> bool {
    code.match_indices(path).any(|(at, _)| {
        !code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn the_driver_check_tells_the_driver_from_this_crate() {
    assert!(names("use postgres::Client;", "postgres::"));
    assert!(names("let c: r2d2::Pool<M> = x;", "r2d2"));
    assert!(!names("use nightwatch_postgres::PgStores;", "postgres::"));
}

#[test]
fn no_other_crate_depends_on_the_driver() {
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
            let built_with = dependency["kind"].is_null() || dependency["kind"] == "build";
            if built_with && DRIVER.contains(&dependency_name) && name != THIS_CRATE {
                violations.push(format!("{name} depends on {dependency_name}"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "only {THIS_CRATE} may depend on PostgreSQL's driver:\n{}",
        violations.join("\n")
    );
}
