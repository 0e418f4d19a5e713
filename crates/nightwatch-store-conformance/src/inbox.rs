//! What every `AlertInbox` must do: arrivals stored unsettled, settled with their record,
//! found by alert, time and cursor, numbered in the order they were stored.

use crate::{Backend, Place};
use nightwatch_store::{Arrival, Disposition, Settlement};
use std::collections::HashSet;
use std::sync::{Arc, Barrier};

fn arrival(alert_id: &str, at: i64) -> Arrival<'_> {
    Arrival {
        received_ms: at,
        source: "alertmanager",
        alert_id,
        status: "firing",
        title: "DiskFull",
        host: Some("db1"),
        alert_json: r#"{"identity":"x"}"#,
    }
}

pub fn arrivals_are_stored_unsettled_then_settled_with_their_record(backend: &dyn Backend) {
    let place = backend.place();
    let inbox = place.inbox();
    let ids = inbox
        .receive(&[arrival("alert_1", 10), arrival("alert_2", 11)])
        .unwrap();
    assert_eq!(ids.len(), 2);
    assert!(ids[0] < ids[1], "ids in the order given: {ids:?}");
    assert_eq!(inbox.unrecorded(10).unwrap().len(), 2);
    let stored = inbox.get(ids[0]).unwrap().unwrap();
    assert_eq!(stored.disposition, None);
    assert_eq!(stored.host.as_deref(), Some("db1"));
    assert_eq!(stored.alert["identity"], "x");
    inbox
        .settle(&[Settlement {
            arrival: ids[0],
            disposition: Disposition::Routed,
            reason: "route disk",
            route: Some("disk"),
            task_id: Some(7),
            record: "r5",
        }])
        .unwrap();
    let left: Vec<i64> = inbox.unrecorded(10).unwrap().iter().map(|a| a.id).collect();
    assert_eq!(left, [ids[1]], "only the settled one is recorded");
    let stored = inbox.get(ids[0]).unwrap().unwrap();
    assert_eq!(stored.disposition, Some(Disposition::Routed));
    assert_eq!(stored.reason.as_deref(), Some("route disk"));
    assert_eq!(stored.route.as_deref(), Some("disk"));
    assert_eq!(stored.task_id, Some(7));
    assert_eq!(stored.record.as_deref(), Some("r5"));
    assert_eq!(inbox.get(ids[1] + 100).unwrap(), None);
    assert!(inbox.receive(&[]).unwrap().is_empty());
    inbox.settle(&[]).unwrap();
}

/// Unsettled arrivals are found wherever they are: before, between and after settled ones,
/// and after arrivals stored since the last look; each until it is settled, and never again.
pub fn unsettled_arrivals_are_found_among_settled_ones_until_settled(backend: &dyn Backend) {
    let place = backend.place();
    let inbox = place.inbox();
    let settle = |ids: &[i64]| {
        let settlements: Vec<Settlement<'_>> = ids
            .iter()
            .map(|&arrival| Settlement {
                arrival,
                disposition: Disposition::NoRoute,
                reason: "no route matches",
                route: None,
                task_id: None,
                record: "r",
            })
            .collect();
        inbox.settle(&settlements).unwrap();
    };
    let left = || -> Vec<i64> { inbox.unrecorded(10).unwrap().iter().map(|a| a.id).collect() };
    let receive = |n: usize| -> Vec<i64> {
        let alerts: Vec<Arrival<'_>> = (0..n).map(|i| arrival("a", i as i64)).collect();
        inbox.receive(&alerts).unwrap()
    };
    let a = receive(5);
    settle(&[a[1], a[2], a[4]]);
    assert_eq!(left(), [a[0], a[3]]);
    settle(&[a[0]]);
    assert_eq!(left(), [a[3]], "settled since the last look");
    let b = receive(2);
    assert_eq!(left(), [a[3], b[0], b[1]], "stored since the last look");
    settle(&[b[1]]);
    assert_eq!(left(), [a[3], b[0]]);
    settle(&[a[3], b[0]]);
    assert!(left().is_empty());
    assert!(left().is_empty(), "looking again finds nothing");
    let c = receive(3);
    settle(&[c[0]]);
    assert_eq!(left(), [c[1], c[2]]);
    settle(&[c[1], c[2], c[1]]);
    assert!(left().is_empty());
    let got = inbox.get(c[1]).unwrap().unwrap();
    assert_eq!(got.record.as_deref(), Some("r"));
}

/// Hostile text in every field of an arrival and its settlement (a NUL, the escape a store may
/// use for it) is kept exactly and found by it, and the arrivals beside it are not lost.
pub fn hostile_text_in_an_arrival_is_kept_exactly(backend: &dyn Backend) {
    use crate::fixtures::HOSTILE;
    let place = backend.place();
    let inbox = place.inbox();
    let alert_id = format!("alert_{HOSTILE}");
    let json = serde_json::json!({ "title": HOSTILE }).to_string();
    let hostile = Arrival {
        received_ms: 10,
        source: HOSTILE,
        alert_id: &alert_id,
        status: HOSTILE,
        title: HOSTILE,
        host: Some(HOSTILE),
        alert_json: &json,
    };
    let ids = inbox
        .receive(&[arrival("alert_1", 9), hostile, arrival("alert_2", 11)])
        .unwrap();
    assert_eq!(ids.len(), 3, "the arrivals beside it are stored too");
    inbox
        .settle(&[Settlement {
            arrival: ids[1],
            disposition: Disposition::Routed,
            reason: HOSTILE,
            route: Some(HOSTILE),
            task_id: None,
            record: HOSTILE,
        }])
        .unwrap();
    let stored = inbox.get(ids[1]).unwrap().unwrap();
    assert_eq!(
        (
            stored.source.as_str(),
            stored.alert_id.as_str(),
            stored.status.as_str(),
            stored.title.as_str(),
            stored.host.as_deref(),
        ),
        (HOSTILE, alert_id.as_str(), HOSTILE, HOSTILE, Some(HOSTILE))
    );
    assert_eq!(stored.alert["title"], HOSTILE);
    assert_eq!(
        (
            stored.reason.as_deref(),
            stored.route.as_deref(),
            stored.record.as_deref()
        ),
        (Some(HOSTILE), Some(HOSTILE), Some(HOSTILE))
    );
    let found: Vec<i64> = inbox
        .for_alert(&alert_id)
        .unwrap()
        .iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(found, [ids[1]]);
}

pub fn arrivals_survive_reopening_and_are_found_by_alert_and_time(backend: &dyn Backend) {
    let place = backend.place();
    {
        let inbox = place.inbox();
        inbox.receive(&[arrival("alert_1", 10)]).unwrap();
        inbox
            .receive(&[arrival("alert_2", 20), arrival("alert_1", 30)])
            .unwrap();
    }
    let inbox = place.inbox();
    assert_eq!(inbox.count().unwrap(), 3);
    let times = |events: Vec<nightwatch_store::AlertEvent>| {
        events.iter().map(|e| e.received_ms).collect::<Vec<_>>()
    };
    assert_eq!(times(inbox.for_alert("alert_1").unwrap()), [10, 30]);
    assert_eq!(times(inbox.between(15, 31, None, 10).unwrap()), [20, 30]);
    assert_eq!(
        times(inbox.between(0, 100, None, 2).unwrap()),
        [20, 30],
        "a limit keeps the newest, in order"
    );
    let third = inbox.for_alert("alert_1").unwrap()[1].id;
    assert_eq!(
        times(inbox.between(0, 100, Some(third), 10).unwrap()),
        [10, 20],
        "only arrivals stored before the cursor"
    );
}

/// Daemons' intake writers storing at once: every arrival gets its own id, and a reader
/// paging with `after` reads each exactly once, in the order they were stored.
pub fn the_after_cursor_reads_every_arrival_once_even_from_concurrent_receivers(
    backend: &dyn Backend,
) {
    const WRITERS: usize = 4;
    const BATCHES: usize = 15;
    let place: Arc<dyn Place> = Arc::from(backend.place());
    let start = Arc::new(Barrier::new(WRITERS));
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (place, start) = (Arc::clone(&place), Arc::clone(&start));
            std::thread::spawn(move || {
                let inbox = place.inbox();
                start.wait();
                let mut ids = Vec::new();
                for b in 0..BATCHES {
                    let name = format!("alert_{w}_{b}");
                    let at = (w * 1_000 + b) as i64;
                    ids.extend(
                        inbox
                            .receive(&[arrival(&name, at), arrival(&name, at)])
                            .unwrap(),
                    );
                }
                ids
            })
        })
        .collect();
    let written: Vec<i64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let unique: HashSet<i64> = written.iter().copied().collect();
    assert_eq!(unique.len(), WRITERS * BATCHES * 2, "ids are never shared");
    let inbox = place.inbox();
    let mut read = Vec::new();
    let mut after = 0;
    loop {
        let page = inbox.after(after, 7).unwrap();
        if page.is_empty() {
            break;
        }
        after = page.last().unwrap().id;
        read.extend(page.iter().map(|e| e.id));
    }
    let mut sorted = written.clone();
    sorted.sort_unstable();
    assert_eq!(read, sorted, "each arrival once, in id order");
    assert_eq!(inbox.count().unwrap(), written.len() as i64);
}

pub fn unrecorded_arrivals_come_oldest_first_up_to_the_limit(backend: &dyn Backend) {
    let place = backend.place();
    let inbox = place.inbox();
    let ids = inbox
        .receive(&[
            arrival("a", 1),
            arrival("b", 2),
            arrival("c", 3),
            arrival("d", 4),
        ])
        .unwrap();
    inbox
        .settle(&[Settlement {
            arrival: ids[0],
            disposition: Disposition::NoRoute,
            reason: "no route matches",
            route: None,
            task_id: None,
            record: "r1",
        }])
        .unwrap();
    let left: Vec<i64> = inbox.unrecorded(2).unwrap().iter().map(|e| e.id).collect();
    assert_eq!(left, [ids[1], ids[2]]);
    let settled = inbox.get(ids[0]).unwrap().unwrap();
    assert_eq!(settled.disposition, Some(Disposition::NoRoute));
    assert_eq!((settled.route, settled.task_id), (None, None));
}
