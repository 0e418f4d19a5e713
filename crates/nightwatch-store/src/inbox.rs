//! The alert inbox's trait and what it stores: every alert that arrived, kept before its
//! sender gets a reply, with what the dispatcher did with it and why.
//!
//! A row is written in two steps: [`AlertInbox::receive`] stores the alert as it came (durable
//! through a power loss) before anything else happens, and [`AlertInbox::settle`] adds the
//! disposition and its ledger record once both are written. A row left unsettled by a crash or
//! a storage failure is found again by [`AlertInbox::unrecorded`], so no arrival is ever
//! without a record. Both take many arrivals at once: concurrent deliveries share commits.

use crate::StoreError;
use serde::Serialize;

/// What the dispatcher did with one arrival. Every arrival gets exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// A new task was queued for a route.
    Routed,
    /// A task for the same alert identity is still live; the arrival was counted on it.
    Deduplicated,
    /// A task for this identity ran recently (cooldown); no new task.
    Suppressed,
    /// The route reached its limit of tasks per hour; no new task.
    Throttled,
    /// No route matches the alert; nothing runs.
    NoRoute,
    /// The alert resolved and a task that had not started was cancelled.
    Cancelled,
    /// The alert resolved; nothing to cancel (no task, or one already running).
    Resolved,
    /// A test notification ("send test" button): acknowledged, never runs anything.
    Test,
}

impl Disposition {
    pub const ALL: [Disposition; 8] = [
        Disposition::Routed,
        Disposition::Deduplicated,
        Disposition::Suppressed,
        Disposition::Throttled,
        Disposition::NoRoute,
        Disposition::Cancelled,
        Disposition::Resolved,
        Disposition::Test,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Routed => "routed",
            Disposition::Deduplicated => "deduplicated",
            Disposition::Suppressed => "suppressed",
            Disposition::Throttled => "throttled",
            Disposition::NoRoute => "no_route",
            Disposition::Cancelled => "cancelled",
            Disposition::Resolved => "resolved",
            Disposition::Test => "test",
        }
    }

    pub fn parse(text: &str) -> Option<Disposition> {
        Disposition::ALL.into_iter().find(|d| d.as_str() == text)
    }
}

/// One arrival, as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AlertEvent {
    /// Arrival number, 1, 2, 3, ...
    pub id: i64,
    pub received_ms: i64,
    /// `uptime-kuma`, `alertmanager`, the generic hook's name, or one of nightwatch's own:
    /// `watch`, `schedule`, `nightwatch` (the daemon's write check).
    pub source: String,
    /// The short id every record about this alert carries (`alert_88c2d1`): the same for the
    /// firing and the resolved notification of one problem.
    pub alert_id: String,
    /// `firing`, `resolved` or `test`.
    pub status: String,
    pub title: String,
    /// The host the alert is about, when its labels name one (`host`, `hostname`, `instance`).
    pub host: Option<String>,
    /// The whole `nightwatch_intake::Alert` as JSON, the sender's raw JSON inside it.
    pub alert: serde_json::Value,
    /// `None` until settled.
    pub disposition: Option<Disposition>,
    pub reason: Option<String>,
    pub route: Option<String>,
    pub task_id: Option<i64>,
    /// The ledger record of the disposition, once written.
    pub record: Option<String>,
}

/// What [`AlertInbox::receive`] stores.
pub struct Arrival<'a> {
    pub received_ms: i64,
    pub source: &'a str,
    pub alert_id: &'a str,
    pub status: &'a str,
    pub title: &'a str,
    pub host: Option<&'a str>,
    pub alert_json: &'a str,
}

/// What [`AlertInbox::settle`] adds to an arrival: what the dispatcher did with it, and the
/// ledger record that says so.
pub struct Settlement<'a> {
    pub arrival: i64,
    pub disposition: Disposition,
    pub reason: &'a str,
    pub route: Option<&'a str>,
    pub task_id: Option<i64>,
    pub record: &'a str,
}

/// The store of arrivals.
pub trait AlertInbox: Send + Sync {
    /// Stores arrivals, unsettled, durably, in one commit; returns their ids, in order.
    fn receive(&self, arrivals: &[Arrival<'_>]) -> Result<Vec<i64>, StoreError>;

    /// Adds to each arrival what the dispatcher did with it and the record that holds it, in
    /// one commit. May be written without waiting for the disk: a settlement lost to a power
    /// cut leaves the arrival unrecorded, and [`AlertInbox::unrecorded`] brings it back.
    fn settle(&self, settlements: &[Settlement<'_>]) -> Result<(), StoreError>;

    /// Arrivals not settled yet, oldest first: what a crash or a storage failure interrupted.
    fn unrecorded(&self, limit: usize) -> Result<Vec<AlertEvent>, StoreError>;

    /// One arrival.
    fn get(&self, id: i64) -> Result<Option<AlertEvent>, StoreError>;

    /// Every arrival for one alert id, oldest first.
    fn for_alert(&self, alert_id: &str) -> Result<Vec<AlertEvent>, StoreError>;

    /// Arrivals stored after arrival `after_id`, oldest first, at most `limit`: a cursor that
    /// reads every arrival exactly once, page by page, whatever their times.
    fn after(&self, after_id: i64, limit: usize) -> Result<Vec<AlertEvent>, StoreError>;

    /// Arrivals received in `[since_ms, until_ms)`, oldest first, at most `limit` (the newest);
    /// with `before`, only arrivals stored before that one (the cursor of the page after).
    fn between(
        &self,
        since_ms: i64,
        until_ms: i64,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AlertEvent>, StoreError>;

    /// How many arrivals are stored.
    fn count(&self) -> Result<i64, StoreError>;
}

/// An arrival as the fleet holds it: with the host whose daemon received it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FleetArrival {
    pub host: String,
    pub arrival: AlertEvent,
}

/// An arrival's place in the fleet's order, which [`FleetInbox`] reads in: by the time it was
/// received, then the receiving host's name (compared byte by byte), then its number on that
/// host. Arrivals are numbered per host, so two never share a place, and a page read from the
/// place of the last arrival of the page before neither skips nor repeats one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ArrivalCursor {
    pub received_ms: i64,
    pub host: String,
    pub id: i64,
}

impl ArrivalCursor {
    /// Before every arrival: read newest first from it, nothing is left (the end); read
    /// oldest first, everything is.
    pub fn end() -> ArrivalCursor {
        ArrivalCursor {
            received_ms: i64::MIN,
            host: String::new(),
            id: 0,
        }
    }

    /// Where `arrival` is: the page after it starts with the arrival that comes next.
    pub fn of(arrival: &FleetArrival) -> ArrivalCursor {
        ArrivalCursor {
            received_ms: arrival.arrival.received_ms,
            host: arrival.host.clone(),
            id: arrival.arrival.id,
        }
    }
}

/// Every host's arrivals held together: in a fleet, the inbox every host's daemon receives
/// into, read across hosts. A host alone has none (its own [`AlertInbox`] is all there is).
/// The reads are [`AlertInbox`]'s, across hosts, in the fleet's order ([`ArrivalCursor`]).
///
/// An arrival stored after a page was read, with a place before that page's cursor (another
/// host's clock behind, or a commit that landed late), is not on the pages that follow: the
/// cursor pages what the fleet held when each page was read.
pub trait FleetInbox: Send + Sync {
    /// Arrivals of every host (or of `host` only) received in `[since_ms, until_ms)`, oldest
    /// first, at most `limit` (the newest); with `before`, only those before that place (the
    /// cursor of the page after).
    fn between(
        &self,
        host: Option<&str>,
        since_ms: i64,
        until_ms: i64,
        before: Option<&ArrivalCursor>,
        limit: usize,
    ) -> Result<Vec<FleetArrival>, StoreError>;

    /// Arrivals of every host (or of `host` only) after place `after`, oldest first, at most
    /// `limit`: read from the last arrival of the page before, each comes once.
    fn after(
        &self,
        host: Option<&str>,
        after: &ArrivalCursor,
        limit: usize,
    ) -> Result<Vec<FleetArrival>, StoreError>;

    /// Every arrival of one alert id on every host, oldest first in the fleet's order.
    fn for_alert(&self, alert_id: &str) -> Result<Vec<FleetArrival>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::Disposition;

    #[test]
    fn disposition_names_round_trip() {
        for d in Disposition::ALL {
            assert_eq!(Disposition::parse(d.as_str()), Some(d));
        }
    }
}
