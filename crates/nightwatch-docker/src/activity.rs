//! Activity the Engine reports but inspect does not show: a `docker exec` or `docker attach`
//! leaves a container's created, started and finished times alone, yet means someone is
//! using it. The Engine keeps only its most recent events, so they are copied into the
//! janitor's state as they are read.

use crate::engine::DockerInventory;
use bollard::query_parameters::EventsOptionsBuilder;
use futures_util::StreamExt;
use nightwatch_janitor::{InventoryError, Kind};
use nightwatch_store::{JanitorStore, StoreError};
use std::collections::HashMap;

/// The container events that count as activity. `exec_die` too: the end of a long
/// interactive session is as much use as its start. Start and stop are in inspect's times
/// too, but only the latest of each; the stream keeps every one. `unpause` is idle control
/// waking an app for a person, so an app people use every day through idle control is in use,
/// however long ago it was created or started.
pub const ACTIVITY_EVENTS: [&str; 7] = [
    "exec_create",
    "exec_start",
    "exec_die",
    "attach",
    "start",
    "stop",
    "unpause",
];

/// Why activity could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum ActivityError {
    #[error(transparent)]
    Engine(#[from] InventoryError),
    #[error("cannot record container activity: {0}")]
    State(#[from] StoreError),
}

impl DockerInventory {
    /// Reads the Engine's exec and attach events for containers between `since_ms` and
    /// `until_ms` (ms since 1970, the Engine's clock) and notes each in `store`, which keeps
    /// the latest per container. Returns the number of events noted.
    ///
    /// The Engine closes the stream at `until_ms`, so this returns then: an `until_ms` in
    /// the future makes it a watcher for that long. Events already noted stay noted when
    /// the stream breaks off with an error.
    pub fn record_activity(
        &self,
        store: &dyn JanitorStore,
        since_ms: i64,
        until_ms: i64,
    ) -> Result<usize, ActivityError> {
        let client = self.client()?;
        let filters = HashMap::from([
            ("type", vec!["container"]),
            ("event", ACTIVITY_EVENTS.to_vec()),
        ]);
        let options = EventsOptionsBuilder::new()
            .since(&engine_time(since_ms))
            .until(&engine_time(until_ms))
            .filters(&filters)
            .build();
        let mut events = client.events(Some(options));
        let mut noted = 0;
        while let Some(event) = self.block_on(events.next()) {
            let event = event.map_err(|e| self.error("read events", e))?;
            let id = event.actor.and_then(|a| a.id).filter(|id| !id.is_empty());
            let at_ms = event
                .time_nano
                .map(|ns| ns / 1_000_000)
                .or(event.time.map(|s| s.saturating_mul(1000)));
            if let (Some(id), Some(at_ms)) = (id, at_ms) {
                store.note_activity(Kind::Container, &id, at_ms)?;
                noted += 1;
            }
        }
        Ok(noted)
    }
}

/// `seconds.nanoseconds`, the form the Engine's `since` and `until` read.
fn engine_time(ms: i64) -> String {
    let ms = ms.max(0);
    format!("{}.{:09}", ms / 1000, (ms % 1000) * 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::engine_time;

    #[test]
    fn engine_time_is_seconds_dot_nanoseconds() {
        assert_eq!(engine_time(1_772_359_200_123), "1772359200.123000000");
        assert_eq!(engine_time(-5), "0.000000000");
    }
}
