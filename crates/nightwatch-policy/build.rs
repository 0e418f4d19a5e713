//! Converts the built-in policy from YAML to JSON at build time. The hook loads the built-in
//! policy on every agent call, and reading JSON costs a small fraction of reading YAML; the
//! YAML stays the source that operators see and edit. Its `examples:` are left out here: they
//! are run by the tests, not on every load.

use std::path::PathBuf;

fn main() {
    let source = "src/default.yaml";
    println!("cargo::rerun-if-changed={source}");
    let yaml = std::fs::read_to_string(source).expect("src/default.yaml is readable");
    let mut document: serde_json::Value =
        yaml_serde::from_str(&yaml).expect("src/default.yaml is valid YAML");
    if let Some(map) = document.as_object_mut() {
        map.remove("examples");
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(
        out.join("default-policy.json"),
        serde_json::to_string(&document).expect("a JSON value serialises"),
    )
    .expect("OUT_DIR is writable");
}
