//! `lock_file:` looks for files matching a glob whose last change is at least some age ago.

use crate::spec::{LockFileCheck, PathGlob};
use crate::{Outcome, human_ms, span_ms};
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::time::Instant;

/// A glob with `**` over a big tree could walk for ever; past this many entries, the check
/// cannot tell.
const MAX_ENTRIES: usize = 100_000;

struct Walk<'a> {
    glob: &'a PathGlob,
    now_ms: i64,
    min_ms: i64,
    deadline: Instant,
    entries: usize,
    oldest: Option<(String, i64)>,
    matched: usize,
    younger: usize,
    /// The first directory that could not be read (other than one that vanished).
    unreadable: Option<String>,
}

pub(crate) fn probe(check: &LockFileCheck, now_ms: i64, deadline: Instant) -> Outcome {
    let glob = &check.glob;
    let mut walk = Walk {
        glob,
        now_ms,
        min_ms: span_ms(check.min_age),
        deadline,
        entries: 0,
        oldest: None,
        matched: 0,
        younger: 0,
        unreadable: None,
    };
    if glob.is_literal() {
        walk.consider(glob.as_str());
    } else if let Err(stop) = walk.dir(glob.root(), 0) {
        return Outcome::unknown(stop);
    }
    walk.outcome()
}

impl Walk<'_> {
    /// Reads one directory `depth` levels below the glob's root, descending while a match can
    /// still be deeper. `Err` stops the walk: out of time or too big.
    fn dir(&mut self, dir: &str, depth: usize) -> Result<(), String> {
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            // Nothing there, nothing locked.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                self.unreadable
                    .get_or_insert(format!("cannot read {dir}: {e}"));
                return Ok(());
            }
        };
        let deeper = self.glob.depth().is_none_or(|d| depth + 1 < d);
        for entry in entries {
            self.entries += 1;
            if self.entries > MAX_ENTRIES {
                return Err(format!(
                    "more than {MAX_ENTRIES} entries under {}",
                    self.glob.root()
                ));
            }
            if self.entries.is_multiple_of(256) && Instant::now() >= self.deadline {
                return Err("the walk ran out of time".to_owned());
            }
            let Ok(entry) = entry else { continue };
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                // A name that is not UTF-8 cannot match a UTF-8 glob.
                continue;
            };
            let path = if dir.ends_with('/') {
                format!("{dir}{name}")
            } else {
                format!("{dir}/{name}")
            };
            if self.glob.is_match(&path) {
                self.consider(&path);
            }
            // Never follow a symlinked directory: a loop would never end.
            if deeper && entry.file_type().is_ok_and(|t| t.is_dir()) {
                self.dir(&path, depth + 1)?;
            }
        }
        Ok(())
    }

    fn consider(&mut self, path: &str) {
        let meta = match fs::metadata(path).or_else(|_| fs::symlink_metadata(path)) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(e) => {
                self.unreadable
                    .get_or_insert(format!("cannot stat {path}: {e}"));
                return;
            }
        };
        let mtime_ms = meta
            .mtime()
            .saturating_mul(1000)
            .saturating_add(meta.mtime_nsec() / 1_000_000);
        let age_ms = self.now_ms.saturating_sub(mtime_ms).max(0);
        if age_ms < self.min_ms {
            self.younger += 1;
            return;
        }
        self.matched += 1;
        if self.oldest.as_ref().is_none_or(|(_, a)| age_ms > *a) {
            self.oldest = Some((path.to_owned(), age_ms));
        }
    }

    fn outcome(self) -> Outcome {
        let glob = self.glob.as_str();
        if let Some((path, age_ms)) = self.oldest {
            let more = if self.matched > 1 {
                format!(" (and {} more)", self.matched - 1)
            } else {
                String::new()
            };
            return Outcome::matched(format!(
                "{path} was last modified {} ago{more}",
                human_ms(u64::try_from(age_ms).unwrap_or_default())
            ));
        }
        // Nothing old enough was seen, but part of the tree could not be read: it may be there.
        if let Some(reason) = self.unreadable {
            return Outcome::unknown(reason);
        }
        let min = human_ms(u64::try_from(self.min_ms).unwrap_or_default());
        if self.younger > 0 {
            Outcome::clear(format!(
                "{} file(s) match {glob}, all modified within {min}",
                self.younger
            ))
        } else {
            Outcome::clear(format!("no file matches {glob}"))
        }
    }
}
