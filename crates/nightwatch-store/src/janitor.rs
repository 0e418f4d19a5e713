//! The janitor's memory between runs, as a store: [`JanitorState`] is the plain value the
//! planner reads; a [`JanitorStore`] keeps it so a restart forgets nothing.

use crate::StoreError;
use nightwatch_janitor::{JanitorState, Kind};

/// Where [`JanitorState`] is kept.
///
/// Saving merges rather than overwrites: a first sighting only moves earlier and activity
/// only later, so an event watcher writing activity while a sweep runs loses nothing.
pub trait JanitorStore: Send + Sync {
    /// Reads the whole state. Rows of a kind this build does not know are skipped.
    fn load(&self) -> Result<JanitorState, StoreError>;

    /// Writes `state` in one transaction and clears its list of forgotten and released items.
    fn save(&self, state: &mut JanitorState) -> Result<(), StoreError>;

    /// Records activity straight into the store, for an event watcher running beside sweeps;
    /// an older time never moves it back.
    fn note_activity(&self, kind: Kind, id: &str, at_ms: i64) -> Result<(), StoreError>;

    /// The latest recorded activity of one item.
    fn activity(&self, kind: Kind, id: &str) -> Result<Option<i64>, StoreError>;
}
