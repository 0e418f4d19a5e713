//! The host: what a command needs from this machine, built once: the captured environment,
//! the clock, the data directory and its ledger, the guards, the escalator. Its
//! [`Host::engine`] is how every command proposes and records.

use crate::clock::Clock;
use crate::environment::Environment;
use nightwatch_gate::{Engine, Escalator, LiveGuards};
use nightwatch_store::{Ledger, LedgerReader};
use std::path::PathBuf;
use std::sync::Arc;

impl nightwatch_gate::Clock for Clock {
    fn now_ms(&self) -> i64 {
        Clock::now_ms(self)
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
        crate::commands::send_escalation_in_background(record_id, &self.env);
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
        let ledger = crate::commands::open_ledger_in(&data_dir)?;
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
