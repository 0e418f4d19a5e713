//! Hostile input: watcher specs and watched files that try to make a probe panic, recurse
//! without end or read without bound.

mod support;

use proptest::prelude::*;

use nightwatch_store::memory::MemoryLedger;
use nightwatch_watch::drift::DriftSpec;
use nightwatch_watch::live::{CommandSpec, FreshSpec, HttpSpec, QuerySpec};
use nightwatch_watch::state::StateSpec;
use nightwatch_watch::{NoContainers, Seen};
use support::{AnsweringDatabases, NOW_MS, env};

fn read_all(yaml: &str) {
    let _ = yaml_serde::from_str::<DriftSpec>(yaml);
    let _ = yaml_serde::from_str::<FreshSpec>(yaml);
    let _ = yaml_serde::from_str::<CommandSpec>(yaml);
    let _ = yaml_serde::from_str::<HttpSpec>(yaml);
    let _ = yaml_serde::from_str::<QuerySpec>(yaml);
    let _ = yaml_serde::from_str::<StateSpec>(yaml);
}

#[test]
fn hostile_specs_are_refused_without_panicking() {
    for yaml in [
        "",
        "~",
        "[]",
        "{ file: null }",
        "{ file: \"/\\u0000\", content: x }",
        "{ file: /a.ini, key: \"\", equals: 1 }",
        "{ file: /a.ini, key: \".\", equals: 1 }",
        "{ sysctl: \"\", equals: 1 }",
        "{ sysctl: \"net/../../etc\", equals: 1 }",
        "{ glob: \"/**/**/**\", younger_than: 1h }",
        "{ glob: \"/[\", younger_than: 1h }",
        "{ glob: /x, younger_than: 99999999999d }",
        "{ url: \"http://a b\" }",
        "{ url: http://x, body_matches: \"(a{1000}){1000}\" }",
        "{ argv: [\"\"] }",
        "{ database: \"\", sql: x }",
        "{ unit: \"a b\" }",
        "{ container: \"../x\" }",
        "{ equals: { a: b } }",
    ] {
        read_all(yaml);
    }
}

#[test]
fn hostile_files_are_unknown_or_found_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let deep_json = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_yaml = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_toml = format!("a = {}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_toml_tables = format!("a = {}1{}", "{b = ".repeat(50_000), "}".repeat(50_000));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("deep.json", deep_json.into_bytes()),
        ("deep.yaml", deep_yaml.into_bytes()),
        ("deep.toml", deep_toml.into_bytes()),
        ("tables.toml", deep_toml_tables.into_bytes()),
        ("binary.ini", vec![0xff, 0xfe, 0x00, 0x80]),
        ("alias.yaml", b"a: &a [*a]\n".to_vec()),
        (
            "bomb.yaml",
            b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n".to_vec(),
        ),
        ("empty.yaml", Vec::new()),
        ("empty.toml", Vec::new()),
        ("empty.json", Vec::new()),
    ];
    let ledger = MemoryLedger::new();
    let dbs = AnsweringDatabases::default();
    let e = env(NOW_MS, &ledger, &dbs, &NoContainers);
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let spec: DriftSpec = yaml_serde::from_str(&format!(
            "{{ file: {}, key: a.0.b, equals: 1 }}",
            path.display()
        ))
        .unwrap();
        let seen = spec.run(&e);
        assert_eq!(seen.len(), 1);
        assert_ne!(seen[0].seen, Seen::Ok, "{name}: {:?}", seen[0]);
    }
}

proptest! {
    #[test]
    fn any_spec_text_reads_or_is_refused(text in "\\PC{0,120}") {
        read_all(&text);
    }

    #[test]
    fn any_file_content_gives_one_observation(text in "\\PC{0,300}", ext in "(ini|yaml|json|toml)") {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("f.{ext}"));
        std::fs::write(&path, &text).unwrap();
        let spec: DriftSpec = yaml_serde::from_str(&format!(
            "{{ file: {}, key: a.b, present: true }}",
            path.display()
        ))
        .unwrap();
        let ledger = MemoryLedger::new();
        let dbs = AnsweringDatabases::default();
        prop_assert_eq!(spec.run(&env(NOW_MS, &ledger, &dbs, &NoContainers)).len(), 1);
    }
}
