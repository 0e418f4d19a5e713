//! The filesystem inventory: entries matching each `paths:` rule's glob, aged by their newest
//! modification time.
//!
//! The walk starts at the glob's literal directory and never leaves it: symlinks are listed as
//! themselves and never followed, and removing one unlinks the link, not its target. An id is
//! only inspected or removed if a rule covers it and no directory between the rule's prefix and
//! it is a symlink, so an edited plan file cannot point the janitor elsewhere.

use crate::inventory::{Inventory, InventoryError, Removal};
use crate::item::{Facts, Item, Kind, PathFacts};
use crate::rules::{PathRule, SweepRules};
use std::fs::Metadata;
use std::io::ErrorKind;
use std::path::{Component, Path};
use std::time::UNIX_EPOCH;

/// Entries a listing may visit under one prefix before it gives up and asks for a narrower glob.
const WALK_LIMIT: usize = 200_000;
/// Entries inside one matched directory read to find its newest change; past this it is
/// treated as of unknown age (and kept).
const AGE_LIMIT: usize = 20_000;
/// Depth limit for globs with `**`.
const DEEP_LIMIT: usize = 64;

/// Sweeps temporary files and directories by glob and age.
pub struct PathInventory {
    rules: Vec<PathRule>,
}

impl PathInventory {
    pub fn new(rules: &[PathRule]) -> PathInventory {
        PathInventory {
            rules: rules.to_vec(),
        }
    }

    pub fn from_rules(rules: &SweepRules) -> PathInventory {
        PathInventory::new(&rules.paths)
    }

    /// The rule covering `path`, after checking the path is plain and the way to it has no
    /// symlink. `Ok(None)` when a directory on the way is gone.
    fn guard<'a>(
        &'a self,
        id: &'a str,
    ) -> Result<Option<(&'a PathRule, &'a Path)>, InventoryError> {
        let refused = |reason: String| InventoryError::Refused {
            id: id.to_owned(),
            reason,
        };
        let path = Path::new(id);
        let plain = path.is_absolute()
            && path
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !plain || path.parent().is_none() {
            return Err(refused(
                "not a plain absolute path below a directory".to_owned(),
            ));
        }
        let Some(rule) = self.rules.iter().find(|r| r.covers(path)) else {
            return Err(refused("no paths rule covers it".to_owned()));
        };
        // Every directory strictly between the prefix and the path must be a real directory.
        let mut between: Vec<&Path> = path
            .ancestors()
            .skip(1)
            .take_while(|a| *a != rule.prefix())
            .collect();
        between.reverse();
        for dir in between {
            match std::fs::symlink_metadata(dir) {
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
                Err(source) => {
                    return Err(InventoryError::Io {
                        path: dir.to_path_buf(),
                        source,
                    });
                }
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(refused(format!(
                        "{} is a symlink, which the janitor does not follow",
                        dir.display()
                    )));
                }
                Ok(meta) if !meta.is_dir() => return Ok(None),
                Ok(_) => {}
            }
        }
        Ok(Some((rule, path)))
    }

    fn walk(&self, rule: &PathRule, out: &mut Vec<Item>) -> Result<(), InventoryError> {
        let prefix = rule.prefix();
        // The prefix itself may be a symlink (`/tmp` on some systems): that is the rule's
        // author's choice. Below it, nothing is followed.
        match std::fs::metadata(prefix) {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(source) => {
                return Err(InventoryError::Io {
                    path: prefix.to_path_buf(),
                    source,
                });
            }
            Ok(meta) if !meta.is_dir() => return Ok(()),
            Ok(_) => {}
        }
        let max_depth = rule.depth().unwrap_or(DEEP_LIMIT);
        let mut stack = vec![(prefix.to_path_buf(), 0usize)];
        let mut visited = 0usize;
        while let Some((dir, depth)) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(source) if depth == 0 => {
                    return Err(InventoryError::Io { path: dir, source });
                }
                // Nothing in an unreadable directory could be removed either.
                Err(_) => continue,
            };
            for entry in entries.flatten() {
                visited += 1;
                if visited > WALK_LIMIT {
                    return Err(InventoryError::Unavailable {
                        what: format!("paths under {}", prefix.display()),
                        reason: format!(
                            "more than {WALK_LIMIT} entries to walk for `{}`; make the glob narrower",
                            rule.glob()
                        ),
                    });
                }
                let path = entry.path();
                let Ok(file_type) = entry.file_type() else {
                    continue;
                };
                if rule.covers(&path) {
                    // Two rules may match one path: the first decides it, as in `inspect`.
                    let first = self.rules.iter().find(|r| r.covers(&path));
                    if first.is_some_and(|r| std::ptr::eq(r, rule))
                        && let Some(item) = item_at(rule, &path)
                    {
                        out.push(item);
                    }
                } else if file_type.is_dir() && depth + 1 < max_depth {
                    stack.push((path, depth + 1));
                }
            }
        }
        Ok(())
    }
}

impl Inventory for PathInventory {
    fn kind(&self) -> Kind {
        Kind::Path
    }

    fn list(&self) -> Result<Vec<Item>, InventoryError> {
        let mut items = Vec::new();
        for rule in &self.rules {
            self.walk(rule, &mut items)?;
        }
        items.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(items)
    }

    fn inspect(&self, id: &str) -> Result<Option<Item>, InventoryError> {
        let Some((rule, path)) = self.guard(id)? else {
            return Ok(None);
        };
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(source) => Err(InventoryError::Io {
                path: path.to_path_buf(),
                source,
            }),
            Ok(_) => item_at(rule, path)
                .map(Some)
                .ok_or_else(|| InventoryError::Refused {
                    id: id.to_owned(),
                    reason: "its name is not UTF-8".to_owned(),
                }),
        }
    }

    fn remove(&self, item: &Item, _now_ms: i64) -> Removal {
        const STEP: &str = "remove path";
        if !matches!(item.facts, Facts::Path(_)) {
            return Removal::new().failed(STEP, format!("{} is not a path", item.id));
        }
        let path = match self.guard(&item.id) {
            Err(e) => return Removal::new().failed(STEP, e.to_string()),
            Ok(None) => return Removal::new().done(STEP, "already gone"),
            Ok(Some((rule, path))) if path == Path::new("/") || path == rule.prefix() => {
                return Removal::new().failed(STEP, "refused: the root or the rule's own prefix");
            }
            Ok(Some((_, path))) => path,
        };
        let meta = match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Removal::new().done(STEP, "already gone");
            }
            Err(e) => return Removal::new().failed(STEP, e.to_string()),
            Ok(meta) => meta,
        };
        let (result, detail) = if meta.file_type().is_symlink() {
            (
                std::fs::remove_file(path),
                "unlinked the symlink; its target is left alone",
            )
        } else if meta.is_dir() {
            // std's remove_dir_all does not follow symlinks inside the tree.
            (std::fs::remove_dir_all(path), "removed the directory")
        } else {
            (std::fs::remove_file(path), "removed the file")
        };
        match result {
            Ok(()) => Removal::new().done(STEP, detail),
            Err(e) if e.kind() == ErrorKind::NotFound => Removal::new().done(STEP, "already gone"),
            Err(e) => Removal::new().failed(STEP, e.to_string()),
        }
    }
}

fn item_at(rule: &PathRule, path: &Path) -> Option<Item> {
    let id = path.to_str()?.to_owned();
    let meta = std::fs::symlink_metadata(path).ok()?;
    let is_symlink = meta.file_type().is_symlink();
    let is_dir = meta.is_dir();
    let modified_ms = if is_dir {
        newest_in(path, &meta)
    } else {
        modified_ms(&meta)
    };
    let keep_file = is_dir && std::fs::symlink_metadata(path.join(rule.keep_file())).is_ok();
    Some(Item {
        name: id.clone(),
        facts: Facts::Path(PathFacts {
            path: id.clone(),
            rule: rule.glob().to_owned(),
            is_dir,
            is_symlink,
            modified_ms,
            keep_file,
        }),
        id,
    })
}

/// The newest modification time in a directory tree (not following symlinks), or `None` when
/// any of it cannot be read or it is too large: a directory of unknown age is kept.
fn newest_in(dir: &Path, meta: &Metadata) -> Option<i64> {
    let mut newest = modified_ms(meta)?;
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).ok()? {
            let entry = entry.ok()?;
            seen += 1;
            if seen > AGE_LIMIT {
                return None;
            }
            let meta = std::fs::symlink_metadata(entry.path()).ok()?;
            newest = newest.max(modified_ms(&meta)?);
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    Some(newest)
}

fn modified_ms(meta: &Metadata) -> Option<i64> {
    let since = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(since.as_millis()).ok()
}
