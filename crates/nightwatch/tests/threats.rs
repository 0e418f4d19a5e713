//! The built-in policy against issue 11's threat classes, one corpus file per class in
//! `tests/corpus/threats/`: attacks with the exact verdict a careful guard gives, and the
//! everyday lines beside them that must keep theirs. An entry is a shell line or a tool call
//! (read, write, edit, fetch, an MCP tool with its path arguments, a Codex `apply_patch`), each
//! decided as an agent's action.

use nightwatch_agents::{Agent, HookEvent, parse_event};
use nightwatch_core::{Action, Actor, ActorKind, Tool, Verdict};
use nightwatch_policy::Policy;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

const THREATS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/threats");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    /// A shell line; absent for a tool call.
    #[serde(default)]
    line: Option<String>,
    /// read | write | edit | fetch | mcp | apply_patch
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    url: Option<String>,
    /// An MCP tool's full name, `mcp__SERVER__TOOL`.
    #[serde(default)]
    name: Option<String>,
    /// An MCP tool's path arguments.
    #[serde(default)]
    paths: Vec<String>,
    /// A Codex patch (`*** Begin Patch` ...).
    #[serde(default)]
    patch: Option<String>,
    expect: String,
    kind: Kind,
    #[serde(default)]
    why: Option<String>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Attack,
    Everyday,
}

#[derive(Clone, Copy)]
enum Expect {
    Exactly(Verdict),
    /// Anything but allow: the verdict may be ask or deny depending on how deep the analysis sees.
    NotAllow,
}

impl Expect {
    fn parse(text: &str) -> Option<Expect> {
        match text {
            "not-allow" => Some(Expect::NotAllow),
            _ => Verdict::parse(text).map(Expect::Exactly),
        }
    }

    fn holds(self, verdict: Verdict) -> bool {
        match self {
            Expect::Exactly(expected) => verdict == expected,
            Expect::NotAllow => verdict != Verdict::Allow,
        }
    }
}

/// One entry, checked and turned into the tool it proposes.
struct Case {
    file: String,
    kind: Kind,
    expect: Expect,
    expect_text: String,
    why: Option<String>,
    tool: Tool,
}

/// Every corpus file, in name order, with its entries checked; a malformed entry fails here,
/// naming its file and position.
fn load() -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(THREATS)
        .unwrap_or_else(|e| panic!("{THREATS}: {e}"))
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus files in {THREATS}");

    let mut cases = Vec::new();
    for path in files {
        let file = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let entries: Vec<Entry> =
            yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (index, entry) in entries.into_iter().enumerate() {
            let at = format!("{file} entry {}", index + 1);
            let expect = Expect::parse(&entry.expect)
                .unwrap_or_else(|| panic!("{at}: unknown expectation {:?}", entry.expect));
            let tool = tool_of(&entry).unwrap_or_else(|e| panic!("{at}: {e}"));
            if entry.kind == Kind::Attack && matches!(expect, Expect::Exactly(Verdict::Allow)) {
                panic!("{at}: an attack expected to be allowed is not an attack");
            }
            cases.push(Case {
                file: file.clone(),
                kind: entry.kind,
                expect,
                expect_text: entry.expect,
                why: entry.why,
                tool,
            });
        }
    }
    cases
}

/// The tool an entry proposes, built the way the agents' hooks build it.
fn tool_of(entry: &Entry) -> Result<Tool, String> {
    let required = |field: &Option<String>, name: &str| {
        field
            .clone()
            .ok_or_else(|| format!("tool {:?} needs `{name}:`", entry.tool))
    };
    let tool = match (&entry.line, entry.tool.as_deref()) {
        (Some(line), None) => Tool::Exec { line: line.clone() },
        (Some(_), Some(_)) => return Err("give `line:` or `tool:`, not both".into()),
        (None, None) => return Err("give `line:` or `tool:`".into()),
        (None, Some("read")) => Tool::Read {
            path: required(&entry.path, "path")?,
        },
        (None, Some("write")) => Tool::Write {
            path: required(&entry.path, "path")?,
        },
        (None, Some("edit")) => Tool::Edit {
            path: required(&entry.path, "path")?,
        },
        (None, Some("fetch")) => Tool::Fetch {
            url: required(&entry.url, "url")?,
        },
        (None, Some("mcp")) => {
            let name = required(&entry.name, "name")?;
            let (server, tool) = name
                .strip_prefix("mcp__")
                .and_then(|rest| rest.split_once("__"))
                .ok_or_else(|| format!("{name:?} is not mcp__SERVER__TOOL"))?;
            Tool::Mcp {
                server: server.to_string(),
                tool: tool.to_string(),
                paths: entry.paths.clone(),
            }
        }
        (None, Some("apply_patch")) => patch_tool(&required(&entry.patch, "patch")?)?,
        (None, Some(other)) => return Err(format!("unknown tool {other:?}")),
    };
    Ok(tool)
}

/// A Codex patch mapped by the hook's own code, through its public door: the `PreToolUse`
/// payload Codex sends, so the corpus judges what the hook would.
fn patch_tool(patch: &str) -> Result<Tool, String> {
    let payload = serde_json::json!({
        "hook_event_name": "PreToolUse",
        "tool_name": "apply_patch",
        "tool_input": { "command": patch },
    });
    match parse_event(Agent::Codex, payload.to_string().as_bytes()) {
        Ok(HookEvent::BeforeTool { tool, .. }) => Ok(tool),
        Ok(other) => Err(format!("apply_patch parsed as {}", other.name())),
        Err(e) => Err(format!("apply_patch: {e}")),
    }
}

/// How a mismatch names its action: the line itself, or the tool and what it touches.
fn describe(tool: &Tool) -> String {
    match tool {
        Tool::Exec { line } => format!("{line:?}"),
        Tool::Read { path } | Tool::Write { path } | Tool::Edit { path } => {
            format!("{} {path}", tool.name())
        }
        Tool::Fetch { url } => format!("fetch {url}"),
        Tool::Mcp { paths, .. } => format!("{} {paths:?}", tool.name()),
        Tool::Named { name } => format!("tool {name}"),
    }
}

fn agent_action(tool: Tool) -> Action {
    Action::new(Actor::new(ActorKind::Agent, "agent"), tool)
}

#[test]
fn the_threat_corpus_covers_every_class_with_attacks_and_everyday_lines() {
    let cases = load();
    let attacks = cases.iter().filter(|c| c.kind == Kind::Attack).count();
    let everyday = cases.len() - attacks;
    assert!(attacks >= 400, "only {attacks} attack entries");
    assert!(everyday >= 200, "only {everyday} everyday entries");

    let mut per_file: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for case in &cases {
        let counts = per_file.entry(&case.file).or_default();
        match case.kind {
            Kind::Attack => counts.0 += 1,
            Kind::Everyday => counts.1 += 1,
        }
    }
    let thin: Vec<String> = per_file
        .iter()
        .filter(|(_, (attacks, everyday))| *attacks == 0 || *everyday == 0)
        .map(|(file, (attacks, everyday))| {
            format!("{file}: {attacks} attacks, {everyday} everyday")
        })
        .collect();
    assert!(
        thin.is_empty(),
        "every class needs both attacks and the everyday lines beside them:\n{}",
        thin.join("\n")
    );
}

#[test]
fn no_action_appears_twice_in_the_threat_corpus() {
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    let mut repeated = Vec::new();
    let cases = load();
    for case in &cases {
        let key = format!("{:?}", case.tool);
        if let Some(first) = seen.insert(key, &case.file) {
            repeated.push(format!(
                "{} (in {first} and {})",
                describe(&case.tool),
                case.file
            ));
        }
    }
    assert!(
        repeated.is_empty(),
        "{} entries repeat an earlier one:\n{}",
        repeated.len(),
        repeated.join("\n")
    );
}

#[test]
fn every_threat_class_gets_its_expected_verdicts() {
    let policy = Policy::builtin(nightwatch_shell::analyse);
    let cases = load();
    // Per file: (attacks wrong, attacks, everyday wrong, everyday).
    let mut tally: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    let mut wrong = Vec::new();
    for case in &cases {
        let decision = policy.decide(&agent_action(case.tool.clone()));
        let ok = case.expect.holds(decision.verdict);
        let counts = tally.entry(&case.file).or_default();
        let (miss, total) = match case.kind {
            Kind::Attack => (0, 1),
            Kind::Everyday => (2, 3),
        };
        counts[total] += 1;
        if !ok {
            counts[miss] += 1;
            wrong.push(format!(
                "{} [{}] {}: expected {} ({}), got {}: {}",
                case.file,
                match case.kind {
                    Kind::Attack => "attack",
                    Kind::Everyday => "everyday",
                },
                describe(&case.tool),
                case.expect_text,
                case.why.as_deref().unwrap_or("-"),
                decision.verdict,
                decision.reason
            ));
        }
    }
    let summary: Vec<String> = tally
        .iter()
        .map(|(file, [attacks_wrong, attacks, everyday_wrong, everyday])| {
            format!(
                "{file}: {attacks_wrong} of {attacks} attacks, {everyday_wrong} of {everyday} everyday mis-decided"
            )
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} threat-corpus entries mis-decided\n{}\n\n{}",
        wrong.len(),
        cases.len(),
        summary.join("\n"),
        wrong.join("\n")
    );
}
