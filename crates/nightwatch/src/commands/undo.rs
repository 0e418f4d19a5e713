//! `nightwatch undo RECORD | --session S`: put back what an action changed, from the backup
//! taken before it (nightwatch-host's `undo`), saying what happened to each decision.

use crate::cli::UndoArgs;
use crate::context;
use crate::host::Host;
use anyhow::bail;
use nightwatch_host::undo::{Outcome, Target, Undo};

pub fn run(args: UndoArgs) -> anyhow::Result<u8> {
    let host = Host::open()?;
    let engine = host.engine();
    let store = host.backups()?;
    let by = context::human(args.by.clone(), &host.env);
    let (policy, _) = nightwatch_host::policies::load(
        nightwatch_host::policies::policy_file(None, &host.env).as_deref(),
    )?;
    let undo = Undo {
        engine: &engine,
        ledger: host.ledger(),
        store,
        policy: &policy,
        by,
        force: args.force,
    };
    let target = match (args.record, args.session) {
        (Some(id), _) => Target::Record(id),
        (None, Some(session)) => Target::Session(session),
        (None, None) => bail!("name a record or --session"),
    };
    let decisions = undo.decisions(&target)?;
    if decisions.is_empty() {
        println!("nothing in that session was backed up, so there is nothing to undo");
        return Ok(0);
    }
    for decision in &decisions {
        match undo.one(decision)? {
            Outcome::Done {
                record, summary, ..
            } => println!("{summary} ({record})"),
            Outcome::Refused {
                decision,
                record,
                verdict,
                reason,
            } => {
                eprintln!(
                    "nightwatch: policy says {verdict} to undoing {decision} ({record}): {reason}"
                );
                return Ok(1);
            }
            Outcome::Failed {
                decision,
                record,
                why,
                forcible,
            } => {
                eprintln!("nightwatch: did not undo {decision} ({record}): {why}");
                if forcible {
                    eprintln!("to restore anyway: nightwatch undo {decision} --force");
                }
                return Ok(1);
            }
        }
    }
    Ok(0)
}
