//! One module per subcommand. Each returns the process exit status.

mod agent_probe;
mod approve;
mod backups;
mod check;
mod escalate;
mod exec;
mod fleet;
mod hazards;
mod hook;
mod idle;
mod init;
mod install;
mod ledger;
mod manual;
mod policy;
mod replay;
mod resident;
mod serve;
mod sweep;
mod trust;
mod undo;

use crate::cli::{
    BackupsCommand, Cli, Command, FleetCommand, PolicyCommand, PolicySource, SweepCommand,
    TrustCommand,
};
use crate::home;
use anyhow::Context;
use nightwatch_host::Origin;
use nightwatch_policy::Policy;

pub fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Check(args) => check::run(args),
        Command::Init(args) => init::run(args),
        Command::Policy(PolicyCommand::Test(args)) => policy::test(args),
        Command::Policy(PolicyCommand::Replay(args)) => replay::run(args),
        Command::Policy(PolicyCommand::Explain(args)) => policy::explain(args),
        Command::Policy(PolicyCommand::Diff(args)) => policy::diff(args),
        Command::Trust(TrustCommand::Set(args)) => trust::set(args),
        Command::Trust(TrustCommand::Report(args)) => trust::report(args),
        Command::Hook(args) => Ok(hook::run(args)),
        Command::Install(args) => install::run(args),
        Command::Uninstall(args) => install::uninstall(args),
        Command::Completions(args) => manual::completions(args),
        Command::Man(args) => manual::man(args),
        Command::Doctor(args) => install::doctor(args),
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
        Command::Verify(args) if args.fleet => fleet::verify(),
        Command::Verify(_) => ledger::verify(),
        Command::Fleet(FleetCommand::Status(args)) => fleet::status(args),
        Command::Hazards(args) => hazards::run(args),
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
    let stream = nightwatch_host::resident::connect(&env)?;
    Some(hook::answer_through(stream, agent, &env))
}

/// The ledger in the data directory, for reading: commands write through the host's engine.
pub fn open_ledger() -> anyhow::Result<std::sync::Arc<dyn nightwatch_store::LedgerReader>> {
    let dir = home::data_dir();
    Ok(crate::stores::ledger(&dir)
        .with_context(|| format!("cannot open the ledger in {}", dir.display()))?)
}

/// The policy file a command's `--policy` (or `NIGHTWATCH_POLICY`) names, else the data
/// directory's when it exists; None for the built-in policy.
pub fn policy_file(source: &PolicySource) -> Option<std::path::PathBuf> {
    nightwatch_host::policies::policy_file(
        source.policy.as_deref(),
        &crate::environment::Environment::of_process(),
    )
}

/// Loads the policy `source` names; a file that does not load is an error.
pub fn load_policy(source: &PolicySource) -> anyhow::Result<(Policy, Origin)> {
    nightwatch_host::policies::load(policy_file(source).as_deref())
}
