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

pub use nightwatch_host::host::send_escalation_in_background;

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

/// The policy file `source` names, the data directory's when it names none and that exists;
/// None for the built-in policy.
pub fn policy_path(source: &PolicySource) -> Option<std::path::PathBuf> {
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
