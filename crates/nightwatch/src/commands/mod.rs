//! One module per subcommand. Each returns the process exit status.

mod check;
mod exec;
mod hook;
mod init;
mod install;
mod ledger;
mod policy;

use crate::cli::{Cli, Command, PolicyCommand, PolicySource};
use crate::home;
use anyhow::Context;
use nightwatch_policy::Policy;

pub fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Check(args) => check::run(args),
        Command::Init(args) => init::run(args),
        Command::Policy(PolicyCommand::Test(args)) => policy::test(args),
        Command::Hook(args) => Ok(hook::run(args)),
        Command::Install(args) => install::run(args),
        Command::Exec(args) => exec::run(args),
        Command::Log(args) => ledger::log(args),
        Command::Show(args) => ledger::show(args),
        Command::Export(args) => ledger::export(args),
        Command::Verify => ledger::verify(),
    }
}

/// The policy source for commands without `--policy` (the hooks): `$NIGHTWATCH_POLICY`, else
/// the data directory's, else the built-in one.
pub fn policy_from_environment() -> PolicySource {
    PolicySource {
        policy: std::env::var_os("NIGHTWATCH_POLICY")
            .filter(|p| !p.is_empty())
            .map(std::path::PathBuf::from),
    }
}

/// The ledger in the data directory.
pub fn open_ledger() -> anyhow::Result<nightwatch_ledger::SqliteLedger> {
    let dir = home::data_dir();
    nightwatch_ledger::SqliteLedger::open(&dir)
        .with_context(|| format!("cannot open the ledger in {}", dir.display()))
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

fn load_with(
    source: &PolicySource,
    compile: fn(&str) -> Result<Policy, nightwatch_policy::PolicyError>,
) -> anyhow::Result<(Policy, Origin)> {
    let path = match &source.policy {
        Some(path) => path.clone(),
        None => {
            let path = home::policy_file();
            if !path.exists() {
                return Ok((Policy::builtin(), Origin::Builtin));
            }
            path
        }
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read policy {}", path.display()))?;
    let policy = compile(&text).map_err(|error| anyhow::anyhow!("{}:{error}", path.display()))?;
    Ok((policy, Origin::File(path)))
}
