//! `nightwatch gate`: the resident gate (nightwatch-host's `resident`), serving hook calls on
//! the data directory's socket until killed.

use crate::cli::GateArgs;
use crate::environment::Environment;
use nightwatch_host::resident::{self, Resident};
use std::sync::Arc;

pub fn run(_args: GateArgs) -> anyhow::Result<u8> {
    let dir = crate::home::data_dir_in(&Environment::of_process());
    let listener = resident::bind(&dir)?;
    let world = Arc::new(Resident::open(&dir)?);
    eprintln!(
        "nightwatch: resident gate on {}; hooks in this data directory answer through it",
        resident::socket_path(&dir).display()
    );
    resident::serve(listener, world);
    Ok(0)
}
