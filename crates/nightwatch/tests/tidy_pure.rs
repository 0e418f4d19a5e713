//! Tidy: the pure crates stay pure. Their dependency closure (normal dependencies, as cargo
//! resolves them) has no SQLite, no TLS, no HTTP client, no libc and no async runtime, so the
//! core that decides can never grow a way to do I/O by a `Cargo.toml` line nobody reviewed.

use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::process::Command;

/// The crates that take values and return values.
const PURE: &[&str] = &[
    "nightwatch-core",
    "nightwatch-shell",
    "nightwatch-policy",
    "nightwatch-agents",
    "nightwatch-intake",
    "nightwatch-spec",
    "nightwatch-time",
];

/// What a pure crate must not reach, and what each one is.
const FORBIDDEN: &[(&str, &str)] = &[
    ("rusqlite", "SQLite"),
    ("libsqlite3-sys", "SQLite"),
    ("rustls", "TLS"),
    ("ring", "TLS"),
    ("aws-lc-rs", "TLS"),
    ("aws-lc-sys", "TLS"),
    ("native-tls", "TLS"),
    ("openssl", "TLS"),
    ("openssl-sys", "TLS"),
    ("ureq", "an HTTP client"),
    ("reqwest", "an HTTP client"),
    ("hyper", "an HTTP client"),
    ("libc", "libc"),
    ("tokio", "an async runtime"),
    ("async-std", "an async runtime"),
];

/// Known ways to libc that do no I/O nightwatch can reach, each allowed to one pure crate only:
/// (the pure crate, forbidden crate, the crate the way passes through, why). The walk from that
/// pure crate to that forbidden crate does not enter the crate passed through; every other way
/// to it, every other forbidden crate, and every other pure crate are still checked. The policy
/// crate has none: it is handed the shell analyser instead of linking it.
const EXEMPT: &[(&str, &str, &str, &str)] = &[
    (
        "nightwatch-shell",
        "libc",
        "stacker",
        "nightwatch-shell grows its stack for deeply nested input; stacker asks libc for the \
         stack's bounds and maps new segments",
    ),
    (
        "nightwatch-shell",
        "libc",
        "brush-parser",
        "the shell parser lists insta (snapshot testing) and cached (memoisation) as normal \
         dependencies, which reach libc for terminals, temp files and locks; nightwatch calls \
         none of that. The way out is a brush-parser without them",
    ),
    (
        "nightwatch-intake",
        "libc",
        "cpufeatures",
        "sha2 detects CPU features; on aarch64 and loongarch64 that reads the auxiliary vector \
         through libc",
    ),
];

/// The resolved graph: package names by id, and each package's normal dependencies.
struct Graph {
    names: BTreeMap<String, String>,
    deps: BTreeMap<String, Vec<String>>,
}

impl Graph {
    fn from_metadata(metadata: &Value) -> Graph {
        let names = metadata["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .map(|p| (str_of(&p["id"]), str_of(&p["name"])))
            .collect();
        let deps = metadata["resolve"]["nodes"]
            .as_array()
            .expect("resolve.nodes")
            .iter()
            .map(|node| {
                let normal = node["deps"]
                    .as_array()
                    .expect("deps")
                    .iter()
                    // A normal dependency has a `dep_kinds` entry with kind null.
                    .filter(|dep| {
                        dep["dep_kinds"]
                            .as_array()
                            .is_some_and(|kinds| kinds.iter().any(|k| k["kind"].is_null()))
                    })
                    .map(|dep| str_of(&dep["pkg"]))
                    .collect();
                (str_of(&node["id"]), normal)
            })
            .collect();
        Graph { names, deps }
    }

    fn name<'a>(&'a self, id: &'a str) -> &'a str {
        self.names.get(id).map_or(id, String::as_str)
    }

    fn id_of(&self, name: &str) -> Option<&str> {
        self.names
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(id, _)| id.as_str())
    }

    /// Every forbidden crate `root` reaches, each with the shortest way to it.
    fn violations(&self, root: &str) -> Vec<String> {
        let Some(start) = self.id_of(root) else {
            return vec![format!("{root} is not in the workspace's resolved graph")];
        };
        FORBIDDEN
            .iter()
            .filter_map(|(forbidden, what)| {
                let path = self.path_to(root, start, forbidden)?;
                Some(format!("{root} reaches {what}: {}", path.join(" -> ")))
            })
            .collect()
    }

    /// The shortest way from `start` (the pure crate `root`) to the crate named `target`, not
    /// entering the crates [`EXEMPT`] lets `root` reach it through.
    fn path_to<'a>(&'a self, root: &str, start: &'a str, target: &str) -> Option<Vec<&'a str>> {
        let exempt = |id: &str| {
            EXEMPT.iter().any(|(pure, forbidden, through, _)| {
                *pure == root && *forbidden == target && *through == self.name(id)
            })
        };
        let mut parent: BTreeMap<&str, Option<&str>> = BTreeMap::from([(start, None)]);
        let mut queue = VecDeque::from([start]);
        while let Some(id) = queue.pop_front() {
            if self.name(id) == target {
                let mut path = Vec::new();
                let mut at = Some(id);
                while let Some(step) = at {
                    path.push(self.name(step));
                    at = parent[step];
                }
                path.reverse();
                return Some(path);
            }
            for dep in self.deps.get(id).into_iter().flatten() {
                if !parent.contains_key(dep.as_str()) && !exempt(dep) {
                    parent.insert(dep, Some(id));
                    queue.push_back(dep);
                }
            }
        }
        None
    }
}

fn str_of(value: &Value) -> String {
    value.as_str().expect("a string").to_owned()
}

/// The platform this is built on, from `cargo -vV`.
fn host_triple() -> String {
    let output = Command::new(env!("CARGO"))
        .arg("-vV")
        .output()
        .expect("cargo -vV runs");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("cargo -vV names the host")
        .trim()
        .to_owned()
}

/// The workspace's resolved graph for this host: a dependency gated to another platform (a
/// WebAssembly-only random source, say) is not compiled here, so it is not counted.
fn workspace_metadata() -> Value {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let host = host_triple();
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--manifest-path",
            manifest,
        ])
        .args(["--filter-platform", &host])
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

#[test]
fn pure_crates_reach_no_sqlite_tls_http_client_libc_or_async_runtime() {
    let graph = Graph::from_metadata(&workspace_metadata());
    let violations: Vec<String> = PURE.iter().flat_map(|c| graph.violations(c)).collect();
    assert!(
        violations.is_empty(),
        "pure crates must not depend on these (move the type they need to a pure crate such as \
         nightwatch-spec):\n{}",
        violations.join("\n")
    );
}

/// The walk itself: a forbidden crate two steps away is found and its path named, an exempt
/// edge is not followed from the crate it is granted to, and is followed from any other.
#[test]
fn the_walk_names_the_path_to_a_forbidden_crate() {
    let node = |id: &str, deps: &[(&str, Option<&str>)]| {
        let deps: Vec<Value> = deps
            .iter()
            .map(|(pkg, kind)| serde_json::json!({ "pkg": pkg, "dep_kinds": [{ "kind": kind }] }))
            .collect();
        serde_json::json!({ "id": id, "deps": deps })
    };
    let packages: Vec<Value> = [
        "nightwatch-shell",
        "nightwatch-policy",
        "spec",
        "checks",
        "ureq",
        "stacker",
        "libc",
        "tempfile",
        "mid",
    ]
    .iter()
    .map(|n| serde_json::json!({ "id": n, "name": n }))
    .collect();
    let metadata = serde_json::json!({
        "packages": packages,
        "resolve": { "nodes": [
            node("nightwatch-shell", &[("spec", None), ("stacker", None), ("tempfile", Some("dev"))]),
            node("spec", &[("checks", None)]),
            node("checks", &[("ureq", None)]),
            node("stacker", &[("libc", None)]),
            node("tempfile", &[("libc", None)]),
            node("nightwatch-policy", &[("mid", None), ("stacker", None)]),
            node("mid", &[("libc", None)]),
        ]},
    });
    let graph = Graph::from_metadata(&metadata);
    assert_eq!(
        graph.violations("nightwatch-shell"),
        ["nightwatch-shell reaches an HTTP client: nightwatch-shell -> spec -> checks -> ureq"]
    );
    // The shell's exemption is the shell's: the policy reaching libc through stacker is found.
    assert_eq!(
        graph.violations("nightwatch-policy"),
        ["nightwatch-policy reaches libc: nightwatch-policy -> mid -> libc"]
    );
    let without_mid = {
        let mut metadata = metadata.clone();
        metadata["resolve"]["nodes"][5] = node("nightwatch-policy", &[("stacker", None)]);
        Graph::from_metadata(&metadata)
    };
    assert_eq!(
        without_mid.violations("nightwatch-policy"),
        ["nightwatch-policy reaches libc: nightwatch-policy -> stacker -> libc"]
    );
}
