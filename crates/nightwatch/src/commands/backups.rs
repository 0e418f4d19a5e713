//! `nightwatch backups prune`: retention that never drops, silently or otherwise, the backup
//! an undo would need next.

use crate::cli::BackupsPruneArgs;
use crate::clock::Clock;
use crate::commands::{live_guards, load_policy, open_ledger};
use nightwatch_backup::SnapshotId;
use nightwatch_ledger::{Entry, Filter, Outputs, RecordActor, event};
use nightwatch_store::Ledger;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

pub fn prune(args: BackupsPruneArgs) -> anyhow::Result<u8> {
    let clock = Clock::from_environment()?;
    let (policy, _) = load_policy(&args.source)?;
    let retention = policy.safeguards().backup.retention;
    let ledger = open_ledger()?;
    let guards = live_guards();
    let store = guards.store().map_err(anyhow::Error::msg)?;
    let now = clock.now_ms();
    let recent_from = now.saturating_sub(i64::from(retention.keep_days) * 24 * 3600 * 1000);

    // Every backed-up decision: which snapshot, when, which paths.
    let decisions = ledger.query(&Filter {
        event: Some(event::DECISION.to_owned()),
        ..Filter::default()
    })?;
    let mut recent: BTreeSet<String> = BTreeSet::new();
    let mut latest_for_path: BTreeMap<String, (i64, String)> = BTreeMap::new();
    for decision in &decisions {
        let Some(backup) = decision.safeguards.as_ref().and_then(|s| s.get("backup")) else {
            continue;
        };
        let Some(snapshot) = backup.get("snapshot").and_then(Value::as_str) else {
            continue;
        };
        if decision.timestamp_ms >= recent_from {
            recent.insert(snapshot.to_owned());
        }
        for path in backup
            .get("paths")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let newer = latest_for_path
                .get(path)
                .is_none_or(|(at, _)| decision.timestamp_ms >= *at);
            if newer {
                latest_for_path.insert(
                    path.to_owned(),
                    (decision.timestamp_ms, snapshot.to_owned()),
                );
            }
        }
    }
    let latest: BTreeSet<&str> = latest_for_path
        .values()
        .map(|(_, id)| id.as_str())
        .collect();
    let still_needed =
        |id: &SnapshotId| recent.contains(id.as_str()) || latest.contains(id.as_str());
    let pruned = store.prune(&retention, now, &still_needed)?;

    let removed: Vec<Value> = pruned
        .removed
        .iter()
        .map(|p| json!({ "snapshot": p.id.as_str(), "why": p.why.to_string() }))
        .collect();
    let kept: Vec<Value> = pruned
        .kept
        .iter()
        .map(|k| {
            json!({
                "snapshot": k.id.as_str(),
                "over": k.over.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "why": "an undo may still need it: it is recent, or the latest backup of a path",
            })
        })
        .collect();
    let unreadable: Vec<String> = pruned
        .unreadable
        .iter()
        .map(|u| format!("{}: {}", u.file.display(), u.error))
        .collect();
    let summary = format!(
        "removed {} backup(s), freeing {} bytes; kept {} past the limits because an undo may \
         still need them{}",
        removed.len(),
        pruned.bytes_freed,
        kept.len(),
        if unreadable.is_empty() {
            String::new()
        } else {
            format!(
                "; {} unreadable manifest(s) stopped object cleanup",
                unreadable.len()
            )
        }
    );
    println!("{summary}");
    for line in &unreadable {
        eprintln!("nightwatch: unreadable backup manifest {line}");
    }
    if removed.is_empty() && kept.is_empty() && unreadable.is_empty() {
        return Ok(0);
    }
    let mut entry = Entry::new(
        event::BACKUP_PRUNED,
        now,
        RecordActor {
            kind: "nightwatch".into(),
            id: "retention".into(),
        },
        "backups",
    );
    entry.inputs = json!({
        "keep_days": retention.keep_days,
        "max_total_bytes": retention.max_total_bytes.map(|b| b.0),
    });
    entry.outputs = Some(Outputs {
        exit_code: Some(i64::from(!unreadable.is_empty())),
        stdout: summary.clone(),
        stderr: unreadable.join("\n"),
    });
    entry.reasons = vec![summary];
    entry.safeguards = Some(json!({ "removed": removed, "kept": kept }));
    ledger.append(entry)?;
    Ok(u8::from(!unreadable.is_empty()))
}
