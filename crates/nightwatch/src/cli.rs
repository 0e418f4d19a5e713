//! Every flag, defined once: help text comes from here.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Exit status for errors (bad usage, unreadable or invalid policy). Never 0.
pub const EXIT_ERROR: u8 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "nightwatch",
    version,
    about = "The gate and the ledger around AI agents and robots on real servers.",
    long_about = "nightwatch decides every action an agent or a robot proposes (allow, deny with \
                  where to go instead, ask a human, or halt and notify) by one policy, and says why.",
    after_help = "Start with `nightwatch check 'cd /srv && docker compose up -d'`, then \
                  `nightwatch init` to write the default policy where you can edit it."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decide one shell line by policy and explain the verdict.
    ///
    /// Every command the line would run is judged: pipelines, lists, substitutions, here-docs,
    /// and what wrappers such as sudo, xargs, find -exec, bash -c and ssh run. The strictest
    /// verdict wins. Exit status: 0 allow, 2 deny, 3 ask, 4 halt, 1 error.
    Check(CheckArgs),
    /// Write the built-in policy, with its comments, to a file you can edit.
    Init(InitArgs),
    /// Work with policy files.
    #[command(subcommand)]
    Policy(PolicyCommand),
}

#[derive(Debug, Args)]
pub struct PolicySource {
    /// Policy file. Default: $NIGHTWATCH_HOME/policy.yaml when it exists, else the built-in policy.
    #[arg(long, value_name = "FILE", env = "NIGHTWATCH_POLICY")]
    pub policy: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub source: PolicySource,
    /// Print one JSON object instead of the explanation.
    #[arg(long)]
    pub json: bool,
    /// The whole command line, as one argument: quote it.
    #[arg(value_name = "LINE")]
    pub line: String,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to write the policy. Default: $NIGHTWATCH_HOME/policy.yaml.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace a file that already exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Run the examples inside a policy file and report each one.
    Test(PolicyTestArgs),
}

#[derive(Debug, Args)]
pub struct PolicyTestArgs {
    #[command(flatten)]
    pub source: PolicySource,
    /// Print JSON lines, one per example.
    #[arg(long)]
    pub json: bool,
}
