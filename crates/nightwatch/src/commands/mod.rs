//! One module per subcommand. Each returns the process exit status.

mod approve;
mod backups;
mod check;
mod escalate;
mod exec;
mod hook;
mod init;
mod install;
mod ledger;
mod policy;
mod replay;
mod resident;
mod serve;
mod sweep;
mod trust;
mod undo;

use crate::cli::{
    BackupsCommand, Cli, Command, PolicyCommand, PolicySource, SweepCommand, TrustCommand,
};
use crate::home;
use anyhow::Context;
use nightwatch_policy::Policy;

pub fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Check(args) => check::run(args),
        Command::Init(args) => init::run(args),
        Command::Policy(PolicyCommand::Test(args)) => policy::test(args),
        Command::Policy(PolicyCommand::Replay(args)) => replay::run(args),
        Command::Trust(TrustCommand::Set(args)) => trust::set(args),
        Command::Trust(TrustCommand::Report(args)) => trust::report(args),
        Command::Hook(args) => Ok(hook::run(args)),
        Command::Install(args) => install::run(args),
        Command::Exec(args) => exec::run(args),
        Command::Log(args) => ledger::log(args),
        Command::Show(args) => ledger::show(args),
        Command::Export(args) => ledger::export(args),
        Command::Undo(args) => undo::run(args),
        Command::Backups(BackupsCommand::Prune(args)) => backups::prune(args),
        Command::Approve(args) => approve::approve(args),
        Command::Reject(args) => approve::reject(args),
        Command::Escalate(args) => escalate::run(args),
        Command::Gate(args) => resident::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Sweep(SweepCommand::Plan(args)) => sweep::plan_command(args),
        Command::Sweep(SweepCommand::Apply(args)) => sweep::apply_command(args),
        Command::Why(args) => sweep::why(args),
        Command::Verify => ledger::verify(),
    }
}

/// `nightwatch hook AGENT` when a resident gate listens: read the call, hand it over, print
/// the answer, with nothing else loaded (no argument parser, no worker thread). None when the
/// command line is anything else or no gate listens; the normal path then takes over, input
/// not yet read.
pub fn hook_through_resident_gate() -> Option<u8> {
    let mut args = std::env::args().skip(1);
    let (Some(_hook), Some(agent), None) = (args.next(), args.next(), args.next()) else {
        return None;
    };
    let agent = agent.parse::<nightwatch_agents::Agent>().ok()?;
    let env = crate::environment::Environment::of_process();
    let stream = resident::connect(&env)?;
    Some(hook::answer_through(stream, agent, &env))
}

/// The ledger in the data directory.
/// The ledger in the data directory, for reading: commands write through the host's engine.
pub fn open_ledger() -> anyhow::Result<std::sync::Arc<dyn nightwatch_store::LedgerReader>> {
    Ok(open_ledger_in(&home::data_dir())?)
}

pub fn open_ledger_in(
    dir: &std::path::Path,
) -> anyhow::Result<std::sync::Arc<dyn nightwatch_store::Ledger>> {
    crate::stores::ledger(dir)
        .with_context(|| format!("cannot open the ledger in {}", dir.display()))
}

/// The policy source a hook uses, from captured variables: `NIGHTWATCH_POLICY`, else the data
/// directory's `policy.yaml` when it exists, else the built-in policy.
pub fn policy_source_in(env: &crate::environment::Environment) -> PolicySource {
    let policy = match env.var("NIGHTWATCH_POLICY") {
        Some(path) => Some(std::path::PathBuf::from(path)),
        None => Some(home::policy_file_in(env)).filter(|path| path.exists()),
    };
    PolicySource { policy }
}

/// Sends a halt's or an ask's escalation from a process of its own (`nightwatch escalate`), so
/// that the agent gets its answer now while delivery retries for as long as it needs. The
/// child gets its own process group, so it outlives a hook that the agent times out. A child
/// that cannot start is said on stderr; the decision is already recorded either way.
pub fn send_escalation_in_background(record_id: &str, env: &crate::environment::Environment) {
    use std::os::unix::process::CommandExt;
    let started = std::env::current_exe().and_then(|exe| {
        std::process::Command::new(exe)
            .args(["escalate", record_id])
            .envs(env.pairs())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
    });
    if let Err(error) = started {
        eprintln!("nightwatch: cannot start the escalation for {record_id}: {error}");
    }
}

/// Where the policy came from, for messages.
pub enum Origin {
    File(std::path::PathBuf),
    Builtin,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::Builtin => f.write_str("the built-in policy"),
        }
    }
}

/// Loads the policy named by `--policy`, else the data directory's, else the built-in one.
/// A file that exists but does not load is an error, never a silent fallback.
pub fn load_policy(source: &PolicySource) -> anyhow::Result<(Policy, Origin)> {
    load_with(source, Policy::from_yaml)
}

/// As [`load_policy`], without running the examples at load.
pub fn load_policy_for_test(source: &PolicySource) -> anyhow::Result<(Policy, Origin)> {
    load_with(source, Policy::compile)
}

/// Policies kept by a long-running process (the resident gate, the daemon), each read again
/// when its file's content changes: the one strategy for every process that keeps a policy.
/// A hook process answers one call and loads its policy once.
#[derive(Default)]
pub struct Policies {
    kept: std::sync::Mutex<
        std::collections::HashMap<Option<std::path::PathBuf>, (u64, std::sync::Arc<Policy>)>,
    >,
}

impl Policies {
    /// The policy `source` names, compiled again only when its text changed.
    pub fn get(&self, source: &PolicySource) -> anyhow::Result<std::sync::Arc<Policy>> {
        use std::hash::{Hash, Hasher};
        let path = policy_path(source);
        let text = match &path {
            Some(path) => std::fs::read_to_string(path)
                .with_context(|| format!("cannot read policy {}", path.display()))?,
            None => String::new(),
        };
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let content = hasher.finish();
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, policy)) = kept.get(&path)
            && *seen == content
        {
            return Ok(std::sync::Arc::clone(policy));
        }
        let policy = std::sync::Arc::new(match &path {
            Some(path) => Policy::from_yaml(&text)
                .map_err(|error| anyhow::anyhow!("{}:{error}", path.display()))?,
            None => Policy::builtin(),
        });
        // One version per file: a file edited often must not fill memory.
        kept.insert(path, (content, std::sync::Arc::clone(&policy)));
        Ok(policy)
    }
}

/// The policy file `source` names, the data directory's when it names none and that exists;
/// None for the built-in policy.
fn policy_path(source: &PolicySource) -> Option<std::path::PathBuf> {
    match &source.policy {
        Some(path) => Some(path.clone()),
        None => Some(home::policy_file()).filter(|path| path.exists()),
    }
}

fn load_with(
    source: &PolicySource,
    compile: fn(&str) -> Result<Policy, nightwatch_policy::PolicyError>,
) -> anyhow::Result<(Policy, Origin)> {
    let Some(path) = policy_path(source) else {
        return Ok((Policy::builtin(), Origin::Builtin));
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read policy {}", path.display()))?;
    let policy = compile(&text).map_err(|error| anyhow::anyhow!("{}:{error}", path.display()))?;
    Ok((policy, Origin::File(path)))
}
