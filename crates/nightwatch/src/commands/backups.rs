//! `nightwatch backups prune`: retention that never drops, silently or otherwise, the backup
//! an undo would need next (nightwatch-host's `retention`), said and recorded.

use crate::cli::BackupsPruneArgs;
use crate::commands::load_policy;
use crate::host::Host;
use nightwatch_host::retention;

pub fn prune(args: BackupsPruneArgs) -> anyhow::Result<u8> {
    let host = Host::open()?;
    let engine = host.engine();
    let (policy, _) = load_policy(&args.source)?;
    let store = host.backups()?;
    let pruned = retention::prune(
        &engine,
        host.ledger(),
        store,
        &policy.safeguards().backup.retention,
    )?;
    println!("{}", pruned.summary);
    for line in &pruned.unreadable {
        eprintln!("nightwatch: unreadable backup manifest {line}");
    }
    pruned.record(&engine)?;
    Ok(u8::from(!pruned.unreadable.is_empty()))
}
