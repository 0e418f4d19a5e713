//! Policy: YAML rules in, a verdict with its rule and reason out.
//!
//! [`Policy::from_yaml`] reads and compiles a policy file (and runs the examples it carries);
//! [`Policy::decide`] turns an [`Action`] into a [`Decision`]. Deciding is pure: no file, no
//! clock, no network, and it never panics, whatever the action or the policy says. The edges
//! read the file and supply the time of day in
//! [`Context::minute_of_day`](nightwatch_core::Context::minute_of_day).
//!
//! # The file
//!
//! ```yaml
//! version: 1
//! default: ask          # verdict when no rule matches (default: ask)
//! opaque: ask           # verdict for an opaque invocation that would otherwise be allowed
//!                       # (ask, halt or deny; never allow; default: ask)
//! rules:
//!   - id: docker-belongs-on-the-dev-host      # required, unique
//!     verdict: deny                           # required: allow | ask | halt | deny
//!     reason: "this VM is not a home for apps" # optional, shown to the agent
//!     instead: "run it on the dev host: ssh devbox 'docker ...'"  # optional
//!     # Matchers: every one given must hold (AND); a list inside a matcher means any (OR).
//!     # A rule without matchers matches everything.
//!     tool: exec            # glob(s) over Tool::name(): exec, read, write, edit, fetch,
//!                           # mcp__server__tool, or any other tool's name
//!     command: "docker *"   # command pattern(s), see below; only matches exec invocations
//!     read_only: true       # only invocations whose effects are read-only (and not opaque);
//!                           # for other tools: read and fetch
//!     paths: ["/etc/**"]    # glob(s) over any path touched, of any kind
//!     reads: [".env"]       # glob(s) over paths read (a read tool's path counts)
//!     writes: ["/dev/sd*"]  # ... written, truncated, chmod-ed (a write or edit tool's path)
//!     deletes: ["/"]        # ... removed or moved away
//!     effects: [network, privilege]        # any of these set: network, privilege,
//!                                          # process_control, service_control, runs_code
//!     effects_all: [network, runs_code]    # all of these set
//!     actor: { kind: [agent], id: ["claude*"] }   # kind(s) and/or id glob(s)
//!     tier: [observe, draft]                      # glob(s) over the actor's trust tier
//!     host: ["prod-*"]      # glob(s) over the remote target when the invocation runs
//!                           # elsewhere (ssh, docker exec, kubectl exec; `user@` is ignored),
//!                           # else over Context::host
//!     time: "22:00-06:00"   # local time-of-day window(s); may wrap midnight
//! examples:
//!   - command: "cd /srv && docker compose up"   # an exec line, run as an agent
//!     expect: deny
//!   - tool: read                                # or another tool: read/write/edit take
//!     path: /etc/shadow                         # `path:`, fetch takes `url:`
//!     expect: deny
//!   # optional per example: actor: {kind, id}, tier, host, time: "HH:MM"
//! ```
//!
//! Unknown keys, verdicts and effects, bad globs, duplicate ids and `opaque: allow` are
//! refused with the line and column to fix ([`PolicyError`]). So is a failing example: a
//! policy carries its own tests.
//!
//! ## Command patterns
//!
//! A pattern is split on whitespace; `'...'` or `"..."` groups a token that holds spaces.
//!
//! - The first token is a glob over the command's name (`argv[0]`). If it contains `/` it is
//!   a glob over the path the command was named by instead (`/usr/local/bin/*`).
//! - A later token starting with `-` is a flag the invocation must carry, anywhere. Flag names
//!   are normalised with `nightwatch_core::normalise_flag` exactly as the analyser normalises
//!   invocations, so `rm --recursive` in a pattern is `rm -r`. `-rf` requires `-r` and `-f`
//!   (or a single flag spelled `-rf`, for commands like `find -delete` whose options are not
//!   letters). `--force*` is a glob over names (it also matches the canonical form of
//!   `--force` when normalisation renames it). `--output=*.txt` requires a value matching.
//! - Any other token matches the positionals in order, as a prefix: `*` alone is any run of
//!   zero or more positionals, anything else a glob over exactly one. Positionals after the
//!   last token are allowed unless the pattern ends with `$`.
//! - A token that starts with a quote is always one positional glob: `'-1'` matches the word
//!   `-1` after `--`, `'*'` matches exactly one positional, `'$'` a literal `$`.
//! - Globs over words let `*` cross `/` (`*:main` matches `HEAD:refs/heads/main`).
//!
//! `git status` matches `git status -s`; `git branch $` matches `git branch -a` but not
//! `git branch topic`; `kill * 1` matches `kill -9 1`; `rm -r /` matches `rm -fr / tmp`.
//!
//! ## Path globs
//!
//! `*` does not cross `/`, `**` does. A glob without `/` matches the file name anywhere
//! (`.env`, `*.pem`). A glob starting with `!` is an exception within its list. A trailing `/`
//! is ignored. A path that still holds glob characters is also tested through its static
//! prefix (`/etc/*` through `/etc`, `~/*` through `~`), since `rm -rf /etc/*` empties `/etc`.
//!
//! # Deciding
//!
//! - An exec line is analysed into invocations (by the [`Analyser`] the policy was compiled
//!   with, `nightwatch_shell::analyse`) and each is
//!   judged on its own: of all rules that match, the strictest verdict wins (allow < ask <
//!   halt < deny), ties going to the earliest rule in the file. No rule: the policy's default.
//! - The line's verdict is the strictest over its invocations, explained by the first
//!   invocation with that verdict. A line that runs nothing gets the default.
//! - An opaque invocation (one whose command cannot be known from the text) is never allowed:
//!   where it would be, it gets the `opaque:` verdict. `command:` and `read_only: true` never
//!   match an opaque invocation.
//! - Other tools are one subject: `command:` never matches them, `read_only` holds for read
//!   and fetch, and their path counts as read (read) or written (write, edit). A fetch has the
//!   `network` effect; other tools have no effect flags and are matched by `tool:`.
//! - **Fail closed.** A matcher over a fact the action does not carry (a `time:` window
//!   without a time of day, `tier:` for an actor without one, `host:` with no host known)
//!   counts as matching for a rule whose verdict is ask, halt or deny, and as not matching for
//!   an allow rule. Not knowing never makes an action more permitted.
//!
//! # Speed
//!
//! The hook runs this before every agent command, so everything that can be is done when the
//! policy is loaded:
//!
//! - Every glob is compiled once. Tokens without glob syntax are compared as strings; a word
//!   glob first checks its literal prefix and suffix (`mkfs*` needs `mkfs...`), so most words
//!   are turned away before any regex runs. Path lists are one `GlobSet` each,
//!   compiled on first use (`lazy.rs`).
//! - Rules are indexed by the literal command name of their `command:` patterns. An
//!   invocation looks only at the rules under its name plus the few without a literal name
//!   (globbed names, or no `command:` at all), the two lists merged in file order.
//! - Each rule knows which kinds of path and which effects it needs; one AND against what the
//!   invocation carries skips a path or effect rule before any of its globs runs.
//! - A rule that cannot beat the verdict found so far is not matched at all, and the search
//!   stops at the first deny.
//!
//! Per decision, the only allocations are the [`Decision`] itself (which holds a copy of each
//! invocation and its reason) and one small list of positionals per invocation. Measured in a
//! release build on a 2-core machine, a line of five invocations against 200 rules costs about
//! 4 µs beyond the shell analysis, of which building the `Decision` is about half.

mod command;
mod document;
mod egress;
mod error;
mod extends;
mod lazy;
mod locate;
mod paths;
mod rule;
mod safeguards;

pub use error::PolicyError;
pub use extends::{ReadBase, no_files};
pub use safeguards::{BackupSettings, Criteria, Escalation, Safeguards, TrustSettings};

use document::PolicyFile;
use nightwatch_core::{Action, Invocation, Tool, Verdict};
use rule::{Presence, Rule, Subject, Target};
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;

/// The built-in policy, as `nightwatch init` writes it out for operators to edit.
pub const DEFAULT_POLICY_YAML: &str = include_str!("default.yaml");

/// The same policy as JSON without its examples, made by `build.rs`: what [`Policy::builtin`]
/// reads, because the hook loads it on every call and JSON reads many times faster than YAML.
const DEFAULT_POLICY_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/default-policy.json"));

/// What turns an exec line into every command it would run: `nightwatch_shell::analyse`. A
/// policy is handed it when it is compiled rather than linking the parser, so that the rules
/// stay free of the parser's dependencies (which reach libc for things nightwatch never calls).
pub type Analyser = fn(&str) -> Vec<Invocation>;

/// A compiled policy. Immutable, and cheap to share between threads.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Reads the exec lines this policy judges (and its examples).
    analyse: Analyser,
    default: Verdict,
    opaque: Verdict,
    rules: Vec<Rule>,
    /// Rules whose every `command:` pattern names its command literally, by that name.
    by_command: HashMap<String, Vec<usize>>,
    /// Rules that apply to invocations but are not indexed by name.
    exec_unindexed: Vec<usize>,
    /// Rules that can match a non-exec tool (those without `command:`).
    tool_rules: Vec<usize>,
    examples: Vec<Example>,
    safeguards: Safeguards,
    sweep: nightwatch_spec::sweep::SweepRules,
    /// Where network effects may go (`egress:`); None puts no limit beyond the rules.
    egress: Option<egress::Egress>,
}

/// What policy says about an action, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub verdict: Verdict,
    /// The rule that decided, or None when the default or the `opaque:` verdict did.
    pub rule: Option<String>,
    /// A sentence for the agent and the ledger.
    pub reason: String,
    /// Where to go instead, from the deciding rule.
    pub instead: Option<String>,
    /// Each invocation of an exec line with its own verdict; empty for other tools.
    pub invocations: Vec<JudgedInvocation>,
    /// Pre-flight checks the deciding rules attach, and the policy's `always_check:`, in
    /// order and without repeats. The gate runs them unless the verdict is already deny.
    pub checks: Vec<String>,
    /// Notifiers the deciding rules name, for when the final verdict is halt or ask.
    pub notify: Vec<String>,
}

/// One rule of a policy, for people reading it (`nightwatch policy explain`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuleSummary<'a> {
    pub id: &'a str,
    pub verdict: Verdict,
    pub reason: Option<&'a str>,
    pub instead: Option<&'a str>,
    /// Pre-flight checks it runs when it decides.
    pub checks: &'a [String],
    /// Notifiers told when its decision ends as halt or ask.
    pub notify: &'a [String],
    /// The base policy it came from (`builtin`, or a file), None for the policy's own file.
    pub from: Option<&'a str>,
}

/// One invocation of an exec line and what policy says about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JudgedInvocation {
    pub invocation: Invocation,
    pub verdict: Verdict,
    pub rule: Option<String>,
    pub reason: String,
    pub instead: Option<String>,
    #[serde(skip)]
    checks: Vec<String>,
    #[serde(skip)]
    notify: Vec<String>,
}

/// An example carried by the policy file: an action and the verdict it must get.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Example {
    pub action: Action,
    pub expect: Verdict,
    /// Where the example starts in the file, when it could be found.
    pub line: Option<usize>,
    pub column: Option<usize>,
}

impl Example {
    /// The command line, or the tool and its target.
    pub fn description(&self) -> String {
        match &self.action.tool {
            Tool::Exec { line } => format!("`{line}`"),
            Tool::Read { path } => format!("read {path}"),
            Tool::Write { path } => format!("write {path}"),
            Tool::Edit { path } => format!("edit {path}"),
            Tool::Fetch { url } => format!("fetch {url}"),
            other => format!("tool {}", other.name()),
        }
    }
}

/// One example run against the policy, for `nightwatch policy test`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExampleOutcome {
    /// Position in `examples:`, from 0.
    pub index: usize,
    pub line: Option<usize>,
    pub description: String,
    pub expected: Verdict,
    pub actual: Verdict,
    pub passed: bool,
    /// The deciding rule, or None when the default or the `opaque:` verdict decided.
    pub rule: Option<String>,
    pub reason: String,
}

impl Policy {
    /// Reads and compiles a policy, then runs its examples: a failing example is an error.
    /// `analyse` reads exec lines (`nightwatch_shell::analyse`).
    pub fn from_yaml(source: &str, analyse: Analyser) -> Result<Policy, PolicyError> {
        Policy::from_yaml_at(source, None, analyse, &extends::no_files)
    }

    /// As [`Policy::from_yaml`], for the policy file at `at` (None: text from elsewhere):
    /// an `extends:` naming a file is read through `read`.
    pub fn from_yaml_at(
        source: &str,
        at: Option<&Path>,
        analyse: Analyser,
        read: ReadBase<'_>,
    ) -> Result<Policy, PolicyError> {
        // `nightwatch init` writes the built-in policy out; until an operator edits it, it is
        // the built-in policy, whose examples the tests run. Only exact text qualifies.
        if source == DEFAULT_POLICY_YAML {
            return Ok(Policy::builtin(analyse));
        }
        let policy = Policy::compile_at(source, at, analyse, read)?;
        if let Some(failed) = policy.run_examples().into_iter().find(|o| !o.passed) {
            let example = policy.examples.get(failed.index);
            return Err(PolicyError::ExampleFailed {
                index: failed.index,
                line: example.and_then(|e| e.line),
                column: example.and_then(|e| e.column),
                description: failed.description,
                expected: failed.expected,
                actual: failed.actual,
                rule: failed.rule,
            });
        }
        Ok(policy)
    }

    /// The built-in policy ([`DEFAULT_POLICY_YAML`]). Its examples are run by the tests, not
    /// here, so that this never fails; should it ever not compile, the result asks about
    /// everything rather than allowing anything.
    pub fn builtin(analyse: Analyser) -> Policy {
        match Policy::builtin_file() {
            Ok(file) => Policy::from_file(file, Vec::new(), analyse),
            Err(_) => Policy::ask_everything(analyse),
        }
    }

    /// The built-in policy as read, before it is compiled (for `extends: builtin`).
    fn builtin_file() -> Result<PolicyFile, String> {
        lazy::read_trusted(|| serde_json::from_str::<PolicyFile>(DEFAULT_POLICY_JSON))
            .map_err(|e| e.to_string())
    }

    /// Reads and compiles a policy without running its examples, for `nightwatch policy test`,
    /// which reports every example rather than stopping at the first that fails.
    pub fn compile(source: &str, analyse: Analyser) -> Result<Policy, PolicyError> {
        Policy::compile_at(source, None, analyse, &extends::no_files)
    }

    /// As [`Policy::compile`], for the policy file at `at`, reading what it extends through
    /// `read`.
    pub fn compile_at(
        source: &str,
        at: Option<&Path>,
        analyse: Analyser,
        read: ReadBase<'_>,
    ) -> Result<Policy, PolicyError> {
        let mut file = Policy::read_file(source)?;
        let examples = std::mem::take(&mut file.examples);
        let mut file = extends::fold_in_base(file, source, at, read, 0)?;
        file.examples = examples;
        check_references(&file, source)?;
        Policy::compiled(file, source, analyse)
    }

    /// The text as a policy file, each of its own rules' ids used once (what it extends not
    /// yet read).
    fn read_file(source: &str) -> Result<PolicyFile, PolicyError> {
        // When the policy does not read, read it again as plain YAML to tell a syntax error
        // from a policy error. Only then: the hook path reads the file on every call.
        let file: PolicyFile = yaml_serde::from_str(source).map_err(|err| {
            match yaml_serde::from_str::<yaml_serde::Value>(source) {
                Err(syntax) => PolicyError::from_yaml(&syntax, true),
                Ok(_) => PolicyError::from_yaml(&err, false),
            }
        })?;
        unique_rule_ids(&file, source)?;
        Ok(file)
    }

    fn compiled(
        mut file: PolicyFile,
        source: &str,
        analyse: Analyser,
    ) -> Result<Policy, PolicyError> {
        let positions = locate::list_items(source, "examples");
        let examples = std::mem::take(&mut file.examples)
            .into_iter()
            .enumerate()
            .map(|(index, spec)| {
                let at = positions.get(index).copied();
                Example {
                    action: spec.action,
                    expect: spec.expect,
                    line: at.map(|(line, _)| line),
                    column: at.map(|(_, column)| column),
                }
            })
            .collect();
        Ok(Policy::from_file(file, examples, analyse))
    }
}

/// Every rule id of the file used once.
fn unique_rule_ids(file: &PolicyFile, source: &str) -> Result<(), PolicyError> {
    let mut first_use: HashMap<&str, usize> = HashMap::new();
    for (index, rule) in file.rules.iter().enumerate() {
        if let Some(first) = first_use.insert(&rule.id, index) {
            let (line, column) = locate::item_field(source, "rules", index, "id").unwrap_or((1, 1));
            let first_line = locate::item_field(source, "rules", first, "id")
                .map(|(line, _)| format!(" at line {line}"))
                .unwrap_or_default();
            return Err(PolicyError::Invalid {
                line,
                column,
                message: format!(
                    "duplicate rule id {:?} (already used by rule {}{first_line})",
                    rule.id,
                    first + 1
                ),
            });
        }
    }
    Ok(())
}

impl Policy {
    fn from_file(file: PolicyFile, examples: Vec<Example>, analyse: Analyser) -> Policy {
        let mut policy = Policy::assemble(
            file.default.map_or(Verdict::Ask, |v| v.0),
            file.opaque.map_or(Verdict::Ask, |v| v.0),
            file.rules,
            examples,
            analyse,
        );
        policy.safeguards = Safeguards {
            checks: file.checks,
            always_check: file.always_check,
            notifiers: file.notifiers,
            escalate: file.escalate.unwrap_or_default(),
            backup: file.backup.unwrap_or_default(),
            trust: file.trust.unwrap_or_default(),
        };
        policy.sweep = file.sweep.unwrap_or_default();
        policy.egress = file.egress.map(document::RawEgress::compile);
        policy
    }

    /// What the janitor removes and keeps (`sweep:`; the seed's rules when absent).
    pub fn sweep(&self) -> &nightwatch_spec::sweep::SweepRules {
        &self.sweep
    }

    /// Whether any rule is scoped to trust tiers: only then does an actor's tier matter.
    pub fn uses_tiers(&self) -> bool {
        self.rules.iter().any(|rule| rule.tiers.is_some())
    }

    /// Checks, notifiers, backup and trust settings.
    pub fn safeguards(&self) -> &Safeguards {
        &self.safeguards
    }

    fn ask_everything(analyse: Analyser) -> Policy {
        Policy::assemble(Verdict::Ask, Verdict::Ask, Vec::new(), Vec::new(), analyse)
    }

    /// Builds the indexes over compiled rules.
    fn assemble(
        default: Verdict,
        opaque: Verdict,
        rules: Vec<Rule>,
        examples: Vec<Example>,
        analyse: Analyser,
    ) -> Policy {
        let mut by_command: HashMap<String, Vec<usize>> = HashMap::new();
        let mut exec_unindexed = Vec::new();
        let mut tool_rules = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            if rule.command.is_none() {
                tool_rules.push(index);
            }
            if !rule.applies_to_exec {
                continue;
            }
            let literal_names: Option<Vec<&str>> = rule
                .command
                .as_ref()
                .and_then(|patterns| patterns.iter().map(|p| p.literal_name()).collect());
            match literal_names {
                Some(names) => {
                    for name in names {
                        let indexed = by_command.entry(name.to_owned()).or_default();
                        if indexed.last() != Some(&index) {
                            indexed.push(index);
                        }
                    }
                }
                None => exec_unindexed.push(index),
            }
        }
        Policy {
            analyse,
            default,
            opaque,
            rules,
            by_command,
            exec_unindexed,
            tool_rules,
            examples,
            safeguards: Safeguards::default(),
            sweep: nightwatch_spec::sweep::SweepRules::default(),
            egress: None,
        }
    }

    /// Decides an action; exec lines are read with the policy's [`Analyser`]. A file
    /// tool's path is judged as written and as its lexical normal form (`//etc/./shadow`).
    pub fn decide(&self, action: &Action) -> Decision {
        self.decide_with(action, &NoFacts)
    }

    /// Decides an action as [`Policy::decide`] does, judging every path both as written and by
    /// the other names `facts` knows for it (the absolute form from the session's directory,
    /// the target of a symlink, a protected location's symbolic name): strictest wins. The
    /// edges supply the facts; the policy itself touches no file.
    pub fn decide_with(&self, action: &Action, facts: &dyn PathFacts) -> Decision {
        match &action.tool {
            Tool::Exec { line } => {
                let mut invocations = (self.analyse)(line);
                for invocation in &mut invocations {
                    invocation
                        .effects
                        .add_other_names(|path| facts.aliases(path));
                }
                self.decide_exec(action, invocations)
            }
            _ => {
                let mut strictest = self.decide_tool(action);
                for alias in tool_aliases(&action.tool, facts) {
                    if strictest.verdict == Verdict::Deny {
                        break;
                    }
                    let aliased = Action {
                        tool: alias,
                        ..action.clone()
                    };
                    let decision = self.decide_tool(&aliased);
                    // Stricter wins; at the same verdict, a rule's reason beats the default's.
                    let named = decision.verdict == strictest.verdict
                        && strictest.rule.is_none()
                        && decision.rule.is_some();
                    if decision.verdict > strictest.verdict || named {
                        strictest = decision;
                    }
                }
                strictest
            }
        }
    }

    /// Decides an exec action whose line the caller has already analysed. For other tools the
    /// invocations are ignored.
    pub fn decide_analysed(&self, action: &Action, invocations: &[Invocation]) -> Decision {
        match &action.tool {
            Tool::Exec { .. } => self.decide_exec(action, invocations.to_vec()),
            _ => self.decide_tool(action),
        }
    }

    /// The examples the policy file carries.
    pub fn examples(&self) -> &[Example] {
        &self.examples
    }

    /// Runs every example, for `nightwatch policy test`.
    pub fn run_examples(&self) -> Vec<ExampleOutcome> {
        self.examples
            .iter()
            .enumerate()
            .map(|(index, example)| {
                let decision = self.decide(&example.action);
                ExampleOutcome {
                    index,
                    line: example.line,
                    description: example.description(),
                    expected: example.expect,
                    actual: decision.verdict,
                    passed: decision.verdict == example.expect,
                    rule: decision.rule,
                    reason: decision.reason,
                }
            })
            .collect()
    }

    /// How many rules the policy has.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// The rules' ids, in file order.
    pub fn rule_ids(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|rule| rule.id.as_str())
    }

    /// The rules as `nightwatch policy explain` shows them, in the order they are tried.
    pub fn rules(&self) -> impl Iterator<Item = RuleSummary<'_>> {
        self.rules.iter().map(|rule| RuleSummary {
            id: &rule.id,
            verdict: rule.verdict,
            reason: rule.reason.as_deref(),
            instead: rule.instead.as_deref(),
            checks: &rule.checks,
            notify: &rule.notify,
            from: rule.from.as_deref(),
        })
    }

    /// The verdict when no rule matches.
    pub fn default_verdict(&self) -> Verdict {
        self.default
    }

    /// The verdict for an opaque invocation that would otherwise be allowed.
    pub fn opaque_verdict(&self) -> Verdict {
        self.opaque
    }

    fn decide_exec(&self, action: &Action, invocations: Vec<Invocation>) -> Decision {
        let judged: Vec<JudgedInvocation> = invocations
            .into_iter()
            .map(|invocation| self.judge_invocation(action, invocation))
            .collect();
        let Some(verdict) = judged.iter().map(|j| j.verdict).max() else {
            return Decision {
                verdict: self.default,
                rule: None,
                reason: format!("nothing to run; the policy's default is {}", self.default),
                instead: None,
                invocations: judged,
                checks: self.safeguards.always_check.clone(),
                notify: Vec::new(),
            };
        };
        let mut checks = Vec::new();
        let mut notify = Vec::new();
        for one in &judged {
            extend_unique(&mut checks, &one.checks);
            extend_unique(&mut notify, &one.notify);
        }
        extend_unique(&mut checks, &self.safeguards.always_check);
        let (rule, reason, instead) = match judged.iter().find(|j| j.verdict == verdict) {
            Some(first) if judged.len() > 1 => (
                first.rule.clone(),
                format!("{}: {}", describe(&first.invocation), first.reason),
                first.instead.clone(),
            ),
            Some(only) => (only.rule.clone(), only.reason.clone(), only.instead.clone()),
            None => (None, String::new(), None),
        };
        Decision {
            verdict,
            rule,
            reason,
            instead,
            invocations: judged,
            checks,
            notify,
        }
    }

    fn judge_invocation(&self, action: &Action, invocation: Invocation) -> JudgedInvocation {
        let positionals: Vec<&str> = invocation.positionals().collect();
        let subject = Subject {
            actor: &action.actor,
            context: &action.context,
            tool_name: "exec",
            target: Target::Invocation {
                invocation: &invocation,
                positionals: &positionals,
            },
        };
        let indexed = self
            .by_command
            .get(invocation.name())
            .map_or(&[][..], Vec::as_slice);
        let deciding =
            self.strictest_match(InFileOrder::new(indexed, &self.exec_unindexed), &subject);
        let (mut verdict, mut rule, mut reason, mut instead) = self.explain(deciding);
        // `X=1` alone runs nothing: unless a rule says otherwise (`LD_PRELOAD=...`), it is not
        // the default's to ask about; what uses the variable is judged on its own.
        if deciding.is_none() && only_sets_variables(&invocation) {
            verdict = Verdict::Allow;
            reason = "sets shell variables and runs nothing".to_owned();
        }
        let (checks, notify) =
            deciding.map_or_else(Default::default, |r| (r.checks.clone(), r.notify.clone()));
        // What cannot be read is never allowed, whatever allowed it.
        if verdict == Verdict::Allow
            && let Some(why) = &invocation.opaque
        {
            let allowed_by = rule
                .take()
                .map(|id| format!(" (rule {id} alone would allow it)"))
                .unwrap_or_default();
            verdict = self.opaque;
            reason = format!("cannot be judged from the text: {why}{allowed_by}");
            instead = None;
        }
        if invocation.effects.network
            && let Some((stricter, why)) = self.egress_limit(verdict, &invocation.effects.hosts)
        {
            verdict = stricter;
            rule = Some(EGRESS_RULE.to_owned());
            reason = why;
            instead = Some(EGRESS_INSTEAD.to_owned());
        }
        JudgedInvocation {
            invocation,
            verdict,
            rule,
            reason,
            instead,
            checks,
            notify,
        }
    }

    fn decide_tool(&self, action: &Action) -> Decision {
        let tool_name = action.tool.name();
        let subject = Subject {
            actor: &action.actor,
            context: &action.context,
            tool_name: &tool_name,
            target: Target::Tool(&action.tool),
        };
        let deciding = self.strictest_match(self.tool_rules.iter().copied(), &subject);
        let (mut verdict, mut rule, mut reason, mut instead) = self.explain(deciding);
        if let Tool::Fetch { url } = &action.tool {
            let hosts: Vec<String> = egress::url_host(url).into_iter().collect();
            if let Some((stricter, why)) = self.egress_limit(verdict, &hosts) {
                verdict = stricter;
                rule = Some(EGRESS_RULE.to_owned());
                reason = why;
                instead = Some(EGRESS_INSTEAD.to_owned());
            }
        }
        let mut checks = deciding.map_or_else(Vec::new, |r| r.checks.clone());
        extend_unique(&mut checks, &self.safeguards.always_check);
        Decision {
            verdict,
            rule,
            reason,
            instead,
            invocations: Vec::new(),
            checks,
            notify: deciding.map_or_else(Vec::new, |r| r.notify.clone()),
        }
    }

    /// The `egress:` verdict when it is stricter than `verdict` for a network effect reaching
    /// `hosts`, with the reason.
    fn egress_limit(&self, verdict: Verdict, hosts: &[String]) -> Option<(Verdict, String)> {
        let egress = self.egress.as_ref()?;
        if egress.otherwise <= verdict {
            return None;
        }
        let why = egress.outside(hosts)?;
        Some((egress.otherwise, format!("rule {EGRESS_RULE}: {why}")))
    }

    /// The earliest of the strictest matching rules among the candidates (in file order).
    fn strictest_match(
        &self,
        candidates: impl Iterator<Item = usize>,
        subject: &Subject<'_>,
    ) -> Option<&Rule> {
        let present = Presence::of(subject);
        let mut best: Option<&Rule> = None;
        for index in candidates {
            let Some(rule) = self.rules.get(index) else {
                continue;
            };
            // An earlier rule at least as strict already wins; no need to match this one.
            if best.is_some_and(|b| b.verdict >= rule.verdict) {
                continue;
            }
            if present.covers(rule.needs) && rule.matches(subject) {
                best = Some(rule);
                if rule.verdict == Verdict::Deny {
                    break;
                }
            }
        }
        best
    }

    /// Verdict, rule id, reason and instead for the deciding rule, or for the default.
    fn explain(
        &self,
        deciding: Option<&Rule>,
    ) -> (Verdict, Option<String>, String, Option<String>) {
        match deciding {
            Some(rule) => {
                let reason = match &rule.reason {
                    Some(text) => format!("rule {}: {text}", rule.id),
                    None => format!("rule {} ({})", rule.id, rule.verdict),
                };
                (
                    rule.verdict,
                    Some(rule.id.clone()),
                    reason,
                    rule.instead.clone(),
                )
            }
            None => (
                self.default,
                None,
                format!("no rule matched; the policy's default is {}", self.default),
                None,
            ),
        }
    }
}

/// The rule name a decision made by `egress:` carries.
const EGRESS_RULE: &str = "egress";
const EGRESS_INSTEAD: &str =
    "reach only the hosts in the policy's egress.allow, or ask the operator to add this one";

/// What the edge knows about paths on this machine, for [`Policy::decide_with`].
pub trait PathFacts {
    /// Other names `path` (as an action wrote it) goes by here: its absolute form, where its
    /// symlinks lead, the symbolic name of a protected location that holds it. Empty when it
    /// has none or nothing is known.
    fn aliases(&self, path: &str) -> Vec<String>;
}

/// The facts, plus each path's lexical normal form when it differs from the path as written
/// (file tools' paths come from the agent, not from the shell analysis, which normalises).
struct Normalised<'a>(&'a dyn PathFacts);

impl PathFacts for Normalised<'_> {
    fn aliases(&self, path: &str) -> Vec<String> {
        let mut aliases = self.0.aliases(path);
        let normal = nightwatch_core::normalise_path(path);
        if normal != path && !aliases.contains(&normal) {
            aliases.extend(self.0.aliases(&normal));
            aliases.push(normal);
        }
        aliases
    }
}

/// No facts: every path is judged as written.
pub struct NoFacts;

impl PathFacts for NoFacts {
    fn aliases(&self, _path: &str) -> Vec<String> {
        Vec::new()
    }
}

/// The same tool aimed at each other name of its path(s).
fn tool_aliases(tool: &Tool, facts: &dyn PathFacts) -> Vec<Tool> {
    let facts = &Normalised(facts);
    match tool {
        Tool::Read { path } => facts
            .aliases(path)
            .into_iter()
            .map(|path| Tool::Read { path })
            .collect(),
        Tool::Write { path } => facts
            .aliases(path)
            .into_iter()
            .map(|path| Tool::Write { path })
            .collect(),
        Tool::Edit { path } => facts
            .aliases(path)
            .into_iter()
            .map(|path| Tool::Edit { path })
            .collect(),
        Tool::Mcp {
            server,
            tool: name,
            paths,
        } => {
            let mut all = paths.clone();
            for path in paths {
                for alias in facts.aliases(path) {
                    if !all.contains(&alias) {
                        all.push(alias);
                    }
                }
            }
            if all.len() == paths.len() {
                return Vec::new();
            }
            vec![Tool::Mcp {
                server: server.clone(),
                tool: name.clone(),
                paths: all,
            }]
        }
        _ => Vec::new(),
    }
}

/// Two ascending lists of rule indices merged into one ascending walk.
struct InFileOrder<'a> {
    first: &'a [usize],
    second: &'a [usize],
}

impl<'a> InFileOrder<'a> {
    fn new(first: &'a [usize], second: &'a [usize]) -> InFileOrder<'a> {
        InFileOrder { first, second }
    }
}

impl Iterator for InFileOrder<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match (self.first.split_first(), self.second.split_first()) {
            (Some((&a, rest_a)), Some((&b, rest_b))) => {
                if a <= b {
                    self.first = rest_a;
                    Some(a)
                } else {
                    self.second = rest_b;
                    Some(b)
                }
            }
            (Some((&a, rest)), None) => {
                self.first = rest;
                Some(a)
            }
            (None, Some((&b, rest))) => {
                self.second = rest;
                Some(b)
            }
            (None, None) => None,
        }
    }
}

/// An assignment without a command (`X=1;`): variables set, nothing run, read or written.
fn only_sets_variables(invocation: &Invocation) -> bool {
    let effects = &invocation.effects;
    invocation.argv.is_empty()
        && invocation.opaque.is_none()
        && !effects.sets_env.is_empty()
        && effects.reads.is_empty()
        && effects.writes.is_empty()
        && effects.deletes.is_empty()
        && effects.searches.is_empty()
        && effects.reveals_env.is_empty()
        && !effects.network
        && !effects.privilege
        && !effects.process_control
        && !effects.service_control
        && !effects.runs_code
}

/// `` `rm -rf /` (via sudo) ``: an invocation as a reason names it.
fn describe(invocation: &Invocation) -> String {
    let mut text = if invocation.argv.is_empty() {
        "the line".to_owned()
    } else {
        let words: Vec<String> = invocation.argv.iter().map(|w| quote_word(w)).collect();
        format!("`{}`", words.join(" "))
    };
    if !invocation.via.is_empty() {
        text.push_str(&format!(" (via {})", invocation.via.join(", ")));
    }
    if let Some(remote) = &invocation.remote {
        text.push_str(&format!(" on {}", remote.target));
    }
    text
}

fn quote_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| !c.is_whitespace() && !matches!(c, '\'' | '"' | '`' | '\\'));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests;

fn extend_unique(into: &mut Vec<String>, more: &[String]) {
    for id in more {
        if !into.contains(id) {
            into.push(id.clone());
        }
    }
}

/// Every check and notifier a rule or setting names must be declared, and the trust tiers
/// must make sense: a typo here would silently skip a safeguard.
fn check_references(file: &PolicyFile, source: &str) -> Result<(), PolicyError> {
    let invalid = |(line, column): (usize, usize), message: String| PolicyError::Invalid {
        line,
        column,
        message,
    };
    let top = |key: &str| (locate::top_level(source, key).unwrap_or(1), 1);
    for (index, rule) in file.rules.iter().enumerate() {
        for id in &rule.checks {
            if !file.checks.contains_key(id) {
                let at = locate::item_field(source, "rules", index, "checks").unwrap_or((1, 1));
                return Err(invalid(
                    at,
                    format!(
                        "rule {:?} names check {id:?}, which `checks:` does not declare",
                        rule.id
                    ),
                ));
            }
        }
        for id in &rule.notify {
            if !file.notifiers.contains_key(id) {
                let at = locate::item_field(source, "rules", index, "notify").unwrap_or((1, 1));
                return Err(invalid(
                    at,
                    format!(
                        "rule {:?} notifies {id:?}, which `notifiers:` does not declare",
                        rule.id
                    ),
                ));
            }
        }
    }
    for id in &file.always_check {
        if !file.checks.contains_key(id) {
            return Err(invalid(
                top("always_check"),
                format!("`always_check:` names check {id:?}, which `checks:` does not declare"),
            ));
        }
    }
    let escalate = file.escalate.clone().unwrap_or_default();
    for id in escalate
        .halt
        .iter()
        .chain(&escalate.ask)
        .chain(&escalate.deny)
    {
        if !file.notifiers.contains_key(id) {
            return Err(invalid(
                top("escalate"),
                format!("`escalate:` names notifier {id:?}, which `notifiers:` does not declare"),
            ));
        }
    }
    let trust = file.trust.clone().unwrap_or_default();
    if trust.tiers.is_empty() {
        return Err(invalid(
            top("trust"),
            "`trust.tiers` needs at least one tier".to_owned(),
        ));
    }
    if let Some(default) = &trust.default
        && !trust.tiers.contains(default)
    {
        return Err(invalid(
            top("trust"),
            format!("`trust.default` is {default:?}, which is not one of `trust.tiers`"),
        ));
    }
    Ok(())
}
