//! What the gate asks of the world beside the ledger: what the paths an action names are
//! called here (symlinks, protected locations), probing it before an action (pre-flight
//! checks) and keeping a way back from it (backups). A trait, so the pipeline's tests need no
//! processes or files; [`LiveGuards`] is the real thing.

use crate::facts::{LiveFacts, Places};
use nightwatch_backup::{BackupStore, Limits, Observation, Snapshot};
use nightwatch_checks::{CheckSpec, Finding, History, Probe};
use nightwatch_ledger::{Filter, event};
use nightwatch_policy::{NoFacts, PathFacts};
use nightwatch_store::LedgerReader;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The actor and action a set of checks is about.
pub struct CheckSubject<'a> {
    pub actor_kind: &'a str,
    pub actor_id: &'a str,
    /// The tool's name, which the rate check counts by.
    pub tool: &'a str,
    /// The action's identity: [`nightwatch_checks::fingerprint`] of its tool and inputs.
    pub fingerprint: &'a str,
    pub now_ms: i64,
    /// Local minute of day and weekday at `now_ms`, in the engine clock's zone.
    pub local_minute_of_day: u16,
    pub local_weekday: jiff::civil::Weekday,
}

pub trait Guards {
    /// What the paths of a call made in `cwd` are called here, for policy to judge every name
    /// (see [`LiveFacts`]). Without facts each path is judged as written.
    fn path_facts(&self, cwd: Option<&str>) -> Box<dyn PathFacts + '_> {
        let _ = cwd;
        Box::new(NoFacts)
    }

    /// Runs the checks, one finding each; a check that cannot run is a finding too.
    fn run_checks(
        &self,
        checks: &[(&str, &CheckSpec)],
        subject: &CheckSubject<'_>,
        history: &dyn History,
    ) -> Vec<Finding>;

    /// Saves the paths as they are, before an action changes them.
    fn back_up(&self, paths: &[PathBuf], limits: &Limits, now_ms: i64) -> Result<Snapshot, String>;

    /// The paths as they are now (after the action), to tell later whether anyone changed them.
    fn observe(&self, paths: &[PathBuf], limits: &Limits) -> Observation;
}

/// Paths resolved on this filesystem for the caller's [`Places`], checks against this
/// machine, backups in the data directory's `backups/` (opened on first use: most actions
/// write nothing).
#[derive(Clone)]
pub struct LiveGuards {
    backups: PathBuf,
    store: Arc<OnceLock<Result<BackupStore, String>>>,
    places: Arc<Places>,
}

impl LiveGuards {
    /// Guards whose only known place is the data directory itself (`$NIGHTWATCH_HOME`); the
    /// edges give the caller's with [`LiveGuards::with_places`].
    pub fn new(data_dir: &Path) -> LiveGuards {
        LiveGuards {
            backups: data_dir.join("backups"),
            store: Arc::new(OnceLock::new()),
            places: Arc::new(Places {
                named: vec![crate::facts::Named {
                    path: data_dir.to_path_buf(),
                    name: "$NIGHTWATCH_HOME".to_owned(),
                    tree: true,
                }],
                ..Places::default()
            }),
        }
    }

    /// The same guards (one backup store) resolving paths for a caller at `places`: a
    /// resident gate answers hooks of many environments.
    pub fn with_places(&self, places: Places) -> LiveGuards {
        LiveGuards {
            places: Arc::new(places),
            ..self.clone()
        }
    }

    /// The backup store, for undo and retention.
    pub fn store(&self) -> Result<&BackupStore, String> {
        self.store
            .get_or_init(|| {
                BackupStore::open(&self.backups)
                    .map_err(|e| format!("cannot open the backup store: {e}"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl Guards for LiveGuards {
    fn path_facts(&self, cwd: Option<&str>) -> Box<dyn PathFacts + '_> {
        Box::new(LiveFacts::new(&self.places, cwd))
    }

    fn run_checks(
        &self,
        checks: &[(&str, &CheckSpec)],
        subject: &CheckSubject<'_>,
        history: &dyn History,
    ) -> Vec<Finding> {
        let probe = Probe {
            now_ms: subject.now_ms,
            local_minute_of_day: subject.local_minute_of_day,
            local_weekday: subject.local_weekday,
            actor_kind: subject.actor_kind,
            actor_id: subject.actor_id,
            tool: subject.tool,
            fingerprint: subject.fingerprint,
            history,
        };
        nightwatch_checks::run_checks(checks, &probe)
    }

    fn back_up(&self, paths: &[PathBuf], limits: &Limits, now_ms: i64) -> Result<Snapshot, String> {
        self.store()?
            .snapshot(paths, limits, now_ms)
            .map_err(|e| e.to_string())
    }

    fn observe(&self, paths: &[PathBuf], limits: &Limits) -> Observation {
        BackupStore::observe(paths, limits)
    }
}

/// Past actions as the ledger remembers them. Failures: results of the same actor whose action
/// has the same fingerprint (the one stored with the result, taken before redaction) and whose
/// exit code was not 0. Allowed actions: the same actor's decisions of the same tool whose
/// verdict was allow.
pub struct LedgerHistory<'a> {
    pub ledger: &'a dyn LedgerReader,
}

impl History for LedgerHistory<'_> {
    fn failures_since(
        &self,
        actor_kind: &str,
        actor_id: &str,
        fingerprint: &str,
        since_ms: i64,
    ) -> Result<u32, String> {
        let results = self
            .ledger
            .query(&Filter {
                since_ms: Some(since_ms),
                actor: Some(actor_id.to_owned()),
                event: Some(event::RESULT.to_owned()),
                ..Filter::default()
            })
            .map_err(|e| format!("cannot read past results from the ledger: {e}"))?;
        let failed = results
            .iter()
            .filter(|r| r.actor.kind == actor_kind && r.actor.id == actor_id)
            .filter(|r| {
                r.outputs
                    .as_ref()
                    .is_some_and(|o| o.exit_code.is_some_and(|code| code != 0))
            })
            .filter(|r| crate::fingerprint_of(r) == fingerprint)
            .count();
        Ok(u32::try_from(failed).unwrap_or(u32::MAX))
    }

    fn allowed_since(
        &self,
        actor_kind: &str,
        actor_id: &str,
        tool: &str,
        since_ms: i64,
    ) -> Result<u32, String> {
        // The store narrows by time, actor, tool, verdict and event; only the actor's kind is
        // compared here (the filter's actor matches a kind or an id).
        let allowed = self
            .ledger
            .query(&Filter {
                since_ms: Some(since_ms),
                actor: Some(actor_id.to_owned()),
                tool: Some(tool.to_owned()),
                verdict: Some(nightwatch_core::Verdict::Allow.as_str().to_owned()),
                event: Some(event::DECISION.to_owned()),
                ..Filter::default()
            })
            .map_err(|e| format!("cannot read past decisions from the ledger: {e}"))?;
        let count = allowed
            .iter()
            .filter(|r| r.actor.kind == actor_kind && r.actor.id == actor_id)
            .count();
        Ok(u32::try_from(count).unwrap_or(u32::MAX))
    }
}
