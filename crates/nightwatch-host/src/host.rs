//! The host: what a command needs from this machine, built once: the captured environment,
//! the clock, the data directory and its ledger, the guards, the escalator. Its
//! [`Host::engine`] is how every command proposes and records.

use crate::clock::Clock;
use crate::environment::Environment;
use anyhow::Context as _;
use nightwatch_gate::{Engine, Escalator, LiveGuards};
use nightwatch_store::{Ledger, LedgerReader};
use std::path::PathBuf;
use std::sync::Arc;

impl nightwatch_gate::Clock for Clock {
    fn now_ms(&self) -> i64 {
        Clock::now_ms(self)
    }
    fn written_ms(&self) -> i64 {
        Clock::written_ms(self)
    }
    fn zone(&self) -> &jiff::tz::TimeZone {
        Clock::zone(self)
    }
}

/// Escalation from a process of its own (`nightwatch escalate`), with the caller's variables,
/// so the caller's answer never waits for delivery.
pub struct Background {
    pub env: Environment,
}

impl Escalator for Background {
    fn escalate(&self, record_id: &str) {
        send_escalation_in_background(record_id, &self.env);
    }
}

pub struct Host {
    pub env: Environment,
    pub clock: Clock,
    pub data_dir: PathBuf,
    /// This machine's name as records write it (`NIGHTWATCH_HOST`, else the hostname).
    pub name: Option<String>,
    pub guards: LiveGuards,
    ledger: Arc<dyn Ledger>,
    escalator: Background,
}

impl Host {
    /// The host as this process's environment describes it, with its ledger open.
    pub fn open() -> anyhow::Result<Host> {
        Host::open_in(Environment::of_process())
    }

    pub fn open_in(env: Environment) -> anyhow::Result<Host> {
        let clock = Clock::from_env(&env)?;
        let data_dir = crate::home::data_dir_in(&env);
        let ledger = crate::stores::ledger(&data_dir)
            .with_context(|| format!("cannot open the ledger in {}", data_dir.display()))?;
        let guards = LiveGuards::new(&data_dir).with_places(crate::paths::places(&env));
        let name = crate::context::from_env(&env).host;
        Ok(Host {
            escalator: Background { env: env.clone() },
            env,
            clock,
            data_dir,
            name,
            guards,
            ledger,
        })
    }

    /// The ledger, for reading: writing is the engine's.
    pub fn ledger(&self) -> &dyn LedgerReader {
        self.ledger.as_ref()
    }

    /// The engine: every proposal and every record of this command goes through it; halts,
    /// asks and records naming notifiers escalate through `nightwatch escalate`.
    pub fn engine(&self) -> Engine<'_> {
        Engine::new(
            self.ledger.as_ref(),
            &self.guards,
            &self.clock,
            &self.escalator,
            self.name.clone(),
        )
    }

    /// Opens the backup store (undo, retention).
    pub fn backups(&self) -> anyhow::Result<&nightwatch_backup::BackupStore> {
        self.guards.store().map_err(anyhow::Error::msg)
    }
}

/// Sends a halt's or an ask's escalation from a process of its own (`nightwatch escalate`), so
/// that the caller gets its answer now while delivery retries for as long as it needs. The
/// child gets its own process group, so it outlives a hook that the agent times out. A child
/// that cannot start is said on stderr; the decision is already recorded either way.
pub fn send_escalation_in_background(record_id: &str, env: &Environment) {
    if let Err(error) = start_in_background(&["escalate", record_id], env) {
        eprintln!("nightwatch: cannot start the escalation for {record_id}: {error}");
    }
}

/// Starts `nightwatch ARGS...` (this binary) with `env`'s variables in a process group of its
/// own, so it outlives the caller; its id. What it does, it records in the ledger.
pub fn start_in_background(args: &[&str], env: &Environment) -> std::io::Result<u32> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()?;
    let child = std::process::Command::new(exe)
        .args(args)
        .envs(env.pairs())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()?;
    Ok(child.id())
}
