//! `lock_file:` looks for files matching a glob whose last change is at least some age ago.
//!
//! The walk itself ([`walk_glob`]) is shared with the freshness watchers, which ask the
//! opposite question of the same files (is the newest one young enough?).

use crate::spec::{LockFileCheck, PathGlob};
use crate::{Outcome, human_ms, span_ms};
use std::fs::{self, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::time::Instant;

/// A glob with `**` over a big tree could walk for ever; past this many entries, the walk
/// cannot tell.
pub const MAX_ENTRIES: usize = 100_000;

/// How a walk over a glob's files ended when it was not cut short.
#[derive(Debug, Default)]
pub struct Walked {
    /// The first directory or file that could not be read (other than one that vanished):
    /// what matched may be incomplete.
    pub unreadable: Option<String>,
}

/// Visits every existing file (or link, or directory) matching `glob` with its metadata,
/// reading only the directories the glob can reach: from its literal root, no deeper than its
/// components (unbounded only for `**`), never following a symlinked directory. `Err` says
/// why the walk stopped early: past [`MAX_ENTRIES`] entries or past `deadline`.
pub fn walk_glob(
    glob: &PathGlob,
    deadline: Instant,
    visit: &mut dyn FnMut(&str, &Metadata),
) -> Result<Walked, String> {
    let mut walk = Walk {
        glob,
        deadline,
        entries: 0,
        unreadable: None,
        visit,
    };
    if glob.is_literal() {
        walk.consider(glob.as_str());
    } else {
        walk.dir(glob.root(), 0)?;
    }
    Ok(Walked {
        unreadable: walk.unreadable,
    })
}

/// A file's last modification, Unix milliseconds.
pub fn mtime_ms(meta: &Metadata) -> i64 {
    meta.mtime()
        .saturating_mul(1000)
        .saturating_add(meta.mtime_nsec() / 1_000_000)
}

struct Walk<'a> {
    glob: &'a PathGlob,
    deadline: Instant,
    entries: usize,
    unreadable: Option<String>,
    visit: &'a mut dyn FnMut(&str, &Metadata),
}

/// What the lock-file check makes of the files the walk visits.
struct Ages {
    now_ms: i64,
    min_ms: i64,
    oldest: Option<(String, i64)>,
    matched: usize,
    younger: usize,
}

pub(crate) fn probe(check: &LockFileCheck, now_ms: i64, deadline: Instant) -> Outcome {
    let glob = &check.glob;
    let mut ages = Ages {
        now_ms,
        min_ms: span_ms(check.min_age),
        oldest: None,
        matched: 0,
        younger: 0,
    };
    let walked = walk_glob(glob, deadline, &mut |path, meta| ages.consider(path, meta));
    match walked {
        Ok(walked) => ages.outcome(glob, walked.unreadable),
        Err(stop) => Outcome::unknown(stop),
    }
}

impl Walk<'_> {
    /// Reads one directory `depth` levels below the glob's root, descending while a match can
    /// still be deeper. `Err` stops the walk: out of time or too big.
    fn dir(&mut self, dir: &str, depth: usize) -> Result<(), String> {
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            // Nothing there, nothing matches.
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
        match fs::metadata(path).or_else(|_| fs::symlink_metadata(path)) {
            Ok(meta) => (self.visit)(path, &meta),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                self.unreadable
                    .get_or_insert(format!("cannot stat {path}: {e}"));
            }
        }
    }
}

impl Ages {
    fn consider(&mut self, path: &str, meta: &Metadata) {
        let age_ms = self.now_ms.saturating_sub(mtime_ms(meta)).max(0);
        if age_ms < self.min_ms {
            self.younger += 1;
            return;
        }
        self.matched += 1;
        if self.oldest.as_ref().is_none_or(|(_, a)| age_ms > *a) {
            self.oldest = Some((path.to_owned(), age_ms));
        }
    }

    fn outcome(self, glob: &PathGlob, unreadable: Option<String>) -> Outcome {
        let glob = glob.as_str();
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
        if let Some(reason) = unreadable {
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
