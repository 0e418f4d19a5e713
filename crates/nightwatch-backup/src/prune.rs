//! Retention: removing old snapshots and the objects no remaining snapshot uses. Every removal
//! and every snapshot kept past a limit is reported, so the caller can record both.

use crate::BackupError;
use crate::limits::{ByteSize, Retention};
use crate::state::{ObjectHash, SnapshotId};
use crate::store::{BackupStore, Tombstone, parse_manifest};
use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::PathBuf;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// What a prune did and what it deliberately did not do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub removed: Vec<PrunedSnapshot>,
    /// Over a limit but kept, because the caller still needs them.
    pub kept: Vec<KeptSnapshot>,
    /// Manifests that could not be read. While there are any, no object is collected: their
    /// references are unknown.
    pub unreadable: Vec<UnreadableManifest>,
    pub objects_removed: u64,
    /// Bytes of manifests and objects removed.
    pub bytes_freed: u64,
    /// Bytes the remaining snapshots use (manifests plus the objects they name).
    pub bytes_kept: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrunedSnapshot {
    pub id: SnapshotId,
    pub created_ms: i64,
    pub why: Limit,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptSnapshot {
    pub id: SnapshotId,
    pub created_ms: i64,
    /// The limits it is over.
    pub over: Vec<Limit>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnreadableManifest {
    pub file: PathBuf,
    pub error: String,
}

/// A retention limit a snapshot was over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    OlderThan { keep_days: u32 },
    OverTotal { max_total_bytes: ByteSize },
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::OlderThan { keep_days } => write!(f, "older than {keep_days} days"),
            Limit::OverTotal { max_total_bytes } => {
                write!(f, "backups over their {max_total_bytes} cap")
            }
        }
    }
}

struct Listed {
    id: SnapshotId,
    created_ms: i64,
    manifest_bytes: u64,
    objects: BTreeMap<ObjectHash, u64>,
}

impl BackupStore {
    /// Removes snapshots older than `keep_days`, then the oldest while the store is over
    /// `max_total_bytes`, except those `still_needed` says the caller needs (an undo not yet
    /// done, say), then every object no remaining snapshot names. A pruned snapshot leaves a
    /// tombstone so [`BackupStore::load`] can say it was pruned.
    pub fn prune(
        &self,
        retention: &Retention,
        now_ms: i64,
        still_needed: &dyn Fn(&SnapshotId) -> bool,
    ) -> Result<Pruned, BackupError> {
        let _lock = self.lock(true)?;
        let mut report = Pruned::default();
        let mut listed = Vec::new();
        let dir = self.snapshots_dir();
        for item in fs::read_dir(&dir).map_err(|e| BackupError::io(&dir, e))? {
            let item = item.map_err(|e| BackupError::io(&dir, e))?;
            let file = item.path();
            let id = item
                .file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| SnapshotId::parse(n).ok());
            let read = match id {
                Some(id) => fs::read(&file)
                    .map_err(|e| e.to_string())
                    .and_then(|bytes| {
                        let snapshot = parse_manifest(&id, &bytes).map_err(|e| e.to_string())?;
                        Ok(Listed {
                            id,
                            created_ms: snapshot.created_ms,
                            manifest_bytes: bytes.len() as u64,
                            objects: snapshot.objects().map(|(h, s)| (h.clone(), s)).collect(),
                        })
                    }),
                None => Err("not named <snapshot id>.json".into()),
            };
            match read {
                Ok(snapshot) => listed.push(snapshot),
                Err(error) => report.unreadable.push(UnreadableManifest { file, error }),
            }
        }
        listed.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));

        let cutoff = now_ms.saturating_sub(i64::from(retention.keep_days).saturating_mul(DAY_MS));
        let mut kept: BTreeMap<SnapshotId, KeptSnapshot> = BTreeMap::new();
        let mut keep_over = |s: &Listed, limit: Limit| {
            kept.entry(s.id.clone())
                .or_insert_with(|| KeptSnapshot {
                    id: s.id.clone(),
                    created_ms: s.created_ms,
                    over: Vec::new(),
                })
                .over
                .push(limit);
        };
        let mut remaining = Vec::new();
        let mut removing = Vec::new();
        for s in listed {
            if s.created_ms < cutoff {
                let limit = Limit::OlderThan {
                    keep_days: retention.keep_days,
                };
                if still_needed(&s.id) {
                    keep_over(&s, limit);
                } else {
                    removing.push((s, limit));
                    continue;
                }
            }
            remaining.push(s);
        }

        // Objects are shared between snapshots: count references so the bytes a removal
        // frees are the objects only it used.
        let mut refs: BTreeMap<ObjectHash, (u32, u64)> = BTreeMap::new();
        for s in &remaining {
            for (hash, size) in &s.objects {
                refs.entry(hash.clone()).or_insert((0, *size)).0 += 1;
            }
        }
        let mut total: u64 = remaining.iter().map(|s| s.manifest_bytes).sum::<u64>()
            + refs.values().map(|(_, size)| size).sum::<u64>();
        if let Some(max) = retention.max_total_bytes {
            let limit = Limit::OverTotal {
                max_total_bytes: max,
            };
            let mut still = Vec::new();
            for s in remaining {
                if total <= max.0 {
                    still.push(s);
                } else if still_needed(&s.id) {
                    keep_over(&s, limit);
                    still.push(s);
                } else {
                    total = total.saturating_sub(s.manifest_bytes);
                    for hash in s.objects.keys() {
                        if let Some((count, size)) = refs.get_mut(hash) {
                            *count -= 1;
                            if *count == 0 {
                                total = total.saturating_sub(*size);
                                refs.remove(hash);
                            }
                        }
                    }
                    removing.push((s, limit));
                }
            }
            remaining = still;
        }
        drop(remaining);
        report.kept = kept.into_values().collect();
        report.kept.sort_by_key(|k| k.created_ms);

        for (s, why) in removing {
            let tombstone = Tombstone {
                pruned_ms: now_ms,
                created_ms: s.created_ms,
                why: why.to_string(),
            };
            let bytes = serde_json::to_vec(&tombstone).map_err(|e| BackupError::Corrupt {
                what: "a tombstone".into(),
                detail: e.to_string(),
            })?;
            self.write_atomically(&self.tombstone_path(&s.id), &bytes)?;
            let manifest = self.manifest_path(&s.id);
            fs::remove_file(&manifest).map_err(|e| BackupError::io(&manifest, e))?;
            report.bytes_freed += s.manifest_bytes;
            report.removed.push(PrunedSnapshot {
                id: s.id,
                created_ms: s.created_ms,
                why,
            });
        }

        if report.unreadable.is_empty() {
            self.collect_objects(&refs, &mut report)?;
        }
        // Under the exclusive lock no snapshot is being written: anything in tmp/ is left
        // over from a crash.
        let tmp = self.tmp_dir();
        for item in fs::read_dir(&tmp).map_err(|e| BackupError::io(&tmp, e))? {
            let path = item.map_err(|e| BackupError::io(&tmp, e))?.path();
            fs::remove_file(&path).map_err(|e| BackupError::io(&path, e))?;
        }
        report.bytes_kept = total;
        Ok(report)
    }

    /// Deletes every object not in `refs`.
    fn collect_objects(
        &self,
        refs: &BTreeMap<ObjectHash, (u32, u64)>,
        report: &mut Pruned,
    ) -> Result<(), BackupError> {
        let objects = self.objects_dir();
        for fan in fs::read_dir(&objects).map_err(|e| BackupError::io(&objects, e))? {
            let fan = fan.map_err(|e| BackupError::io(&objects, e))?;
            let fan_name = fan.file_name();
            let fan_path = fan.path();
            if !fan_path.is_dir() {
                continue;
            }
            for item in fs::read_dir(&fan_path).map_err(|e| BackupError::io(&fan_path, e))? {
                let item = item.map_err(|e| BackupError::io(&fan_path, e))?;
                let name = format!(
                    "{}{}",
                    fan_name.to_string_lossy(),
                    item.file_name().to_string_lossy()
                );
                let referenced = ObjectHash::parse(&name).is_ok_and(|h| refs.contains_key(&h));
                if !referenced {
                    let path = item.path();
                    let size = item.metadata().map(|m| m.len()).unwrap_or(0);
                    fs::remove_file(&path).map_err(|e| BackupError::io(&path, e))?;
                    report.objects_removed += 1;
                    report.bytes_freed += size;
                }
            }
        }
        Ok(())
    }
}
