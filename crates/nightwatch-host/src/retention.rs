//! Backup retention that never drops, silently or otherwise, the backup an undo would need
//! next: every snapshot of a recent decision and the latest backup of every path are kept past
//! the limits, and the run is recorded through the engine.

use nightwatch_backup::{BackupStore, Retention, SnapshotId};
use nightwatch_gate::{Engine, Event};
use nightwatch_ledger::{Filter, Safeguards, event};
use nightwatch_store::LedgerReader;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// What a retention run removed and kept.
pub struct Pruned {
    /// One line, as `backups prune` prints it and the record gives as its reason.
    pub summary: String,
    /// One line per manifest that could not be read (object cleanup stopped for them).
    pub unreadable: Vec<String>,
    inputs: Value,
    removed: Vec<Value>,
    kept: Vec<Value>,
}

impl Pruned {
    /// Records the run through `engine`, unless it changed and found nothing.
    pub fn record(&self, engine: &Engine<'_>) -> anyhow::Result<()> {
        if self.removed.is_empty() && self.kept.is_empty() && self.unreadable.is_empty() {
            return Ok(());
        }
        engine.record(Event::BackupPruned {
            inputs: self.inputs.clone(),
            summary: self.summary.clone(),
            problems: self.unreadable.clone(),
            removed: json!(self.removed),
            kept: json!(self.kept),
        })?;
        Ok(())
    }
}

/// Prunes `store` to `retention` as of the engine's now, keeping what the ledger's decisions
/// say an undo may still need.
pub fn prune(
    engine: &Engine<'_>,
    ledger: &dyn LedgerReader,
    store: &BackupStore,
    retention: &Retention,
) -> anyhow::Result<Pruned> {
    let now = engine.now_ms();
    let recent_from = now.saturating_sub(i64::from(retention.keep_days) * 24 * 3600 * 1000);

    // Every backed-up decision: which snapshot, when, which paths.
    let decisions = ledger.query(&Filter {
        event: Some(event::DECISION.to_owned()),
        ..Filter::default()
    })?;
    let mut recent: BTreeSet<String> = BTreeSet::new();
    let mut latest_for_path: BTreeMap<String, (i64, String)> = BTreeMap::new();
    for decision in &decisions {
        let Some(backup) = Safeguards::of(decision.safeguards.as_ref()).backup else {
            continue;
        };
        let Some(snapshot) = backup.snapshot.as_deref() else {
            continue;
        };
        if decision.timestamp_ms >= recent_from {
            recent.insert(snapshot.to_owned());
        }
        for path in backup.paths.iter().flatten().map(String::as_str) {
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
    let pruned = store.prune(retention, now, &still_needed)?;

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
    Ok(Pruned {
        summary,
        unreadable,
        inputs: json!({
            "keep_days": retention.keep_days,
            "max_total_bytes": retention.max_total_bytes.map(|b| b.0),
        }),
        removed,
        kept,
    })
}
