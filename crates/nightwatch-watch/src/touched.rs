//! Which actor last touched a path, as the ledger remembers it: what turns "the knob is gone"
//! into "the knob is gone, and agent:claude-code rewrote that file at 03:12 (r4821)".
//!
//! A record wrote a path when it is an allowed `decision` (or an `unguarded-result`, a call
//! that ran without asking) whose action writes or deletes it. The gate already lists exactly
//! those paths, made absolute, in the decision's `safeguards.backup` (`paths` it saved,
//! `skipped` ones it could not): that list is read first. Records without one (backups off,
//! or written before backups) fall back to a file tool's own inputs (`file_path`, `path`,
//! `notebook_path`, relative ones against the record's `cwd`); an exec line without a backup
//! list is not guessed at from its text. A backed-up directory touches everything under it
//! (`rm -r /etc/app` removed `/etc/app/app.ini`).

use std::path::{Path, PathBuf};

use nightwatch_ledger::schema::Safeguards;
use nightwatch_ledger::{Filter, Record, event};
use nightwatch_store::{LedgerReader, StoreError};
use serde::Serialize;

/// Records read per query, newest first.
const PAGE: usize = 500;
/// The most records of one kind read in a search: the window is recent, and a search must not
/// read a million-record ledger end to end on every drift.
pub const MAX_SCANNED: usize = 20_000;

/// The actor whose record last wrote a path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Toucher {
    /// `kind:id`, like `agent:claude-code`.
    pub actor: String,
    pub record_id: String,
    pub at_ms: i64,
    pub session: Option<String>,
    /// The call in one line (`write /etc/app/app.ini`, or the exec line).
    pub summary: String,
}

/// The newest record at or after `since_ms` whose action wrote or deleted `path`; `None` when
/// the recent ledger names none (within [`MAX_SCANNED`] records of each kind).
pub fn last_touched(
    ledger: &dyn LedgerReader,
    path: &str,
    since_ms: Option<i64>,
) -> Result<Option<Toucher>, StoreError> {
    let target = Path::new(path);
    let mut best: Option<Record> = None;
    for kind in [event::DECISION, event::UNGUARDED_RESULT] {
        let found = newest(ledger, kind, since_ms, &mut |r| writes(r, target))?;
        if let Some(found) = found
            && best.as_ref().is_none_or(|b| found.seq > b.seq)
        {
            best = Some(found);
        }
    }
    Ok(best.map(|r| Toucher {
        actor: format!("{}:{}", r.actor.kind, r.actor.id),
        summary: r.what(),
        record_id: r.id,
        at_ms: r.timestamp_ms,
        session: r.session_id,
    }))
}

/// The newest record of `kind` at or after `since_ms` that `wanted` accepts, reading pages
/// newest first, at most [`MAX_SCANNED`] records.
pub(crate) fn newest(
    ledger: &dyn LedgerReader,
    kind: &str,
    since_ms: Option<i64>,
    wanted: &mut dyn FnMut(&Record) -> bool,
) -> Result<Option<Record>, StoreError> {
    let mut before_seq = None;
    let mut scanned = 0;
    while scanned < MAX_SCANNED {
        let page = ledger.query(&Filter {
            since_ms,
            event: Some(kind.to_owned()),
            before_seq,
            limit: Some(PAGE),
            ..Filter::default()
        })?;
        scanned += page.len();
        let full = page.len() == PAGE;
        before_seq = page.first().map(|r| r.seq);
        if let Some(found) = page.into_iter().rev().find(|r| wanted(r)) {
            return Ok(Some(found));
        }
        if !full {
            break;
        }
    }
    Ok(None)
}

/// Whether the record's action wrote or deleted `target` (or a directory holding it).
fn writes(record: &Record, target: &Path) -> bool {
    if record.event == event::DECISION && record.verdict.as_deref() != Some("allow") {
        return false;
    }
    let covers = |written: &Path| target == written || target.starts_with(written);
    let backup = Safeguards::of(record.safeguards.as_ref()).backup;
    if let Some(backup) = backup {
        let saved = backup.paths.unwrap_or_default();
        // `skipped` entries are `PATH: why`.
        let skipped = backup.skipped.unwrap_or_default();
        if !saved.is_empty() || !skipped.is_empty() {
            return saved.iter().any(|p| covers(Path::new(p)))
                || skipped.iter().any(|entry| {
                    entry
                        .match_indices(": ")
                        .any(|(at, _)| covers(Path::new(&entry[..at])))
                });
        }
    }
    if !matches!(record.tool.as_str(), "write" | "edit") {
        return false;
    }
    ["file_path", "path", "notebook_path"]
        .iter()
        .filter_map(|key| record.inputs.get(key).and_then(serde_json::Value::as_str))
        .filter_map(|raw| absolute(raw, record.cwd.as_deref()))
        .any(|p| covers(&p))
}

fn absolute(raw: &str, cwd: Option<&str>) -> Option<PathBuf> {
    let path = Path::new(raw);
    if path.is_absolute() {
        return Some(path.to_path_buf());
    }
    let cwd = Path::new(cwd?);
    cwd.is_absolute().then(|| cwd.join(path))
}
