//! What every `FleetLedger` must do when the fleet's records are read across hosts, and every
//! `FleetInbox` when the fleet's arrivals are. Only the in-memory and the PostgreSQL stores
//! hold a fleet (SQLite is a host's own), so these cases are not in
//! [`crate::conformance_tests!`]: this crate's own tests run them on the in-memory fleet and
//! `nightwatch-postgres`'s on its own.

use crate::fixtures::{T0, decision};
use nightwatch_ledger::Filter;
use nightwatch_store::memory::MemoryLedger;
use nightwatch_store::{
    AlertInbox, Arrival, ArrivalCursor, Disposition, FleetArrival, FleetCursor, FleetInbox,
    FleetLedger, FleetRecord, Ledger, Settlement, ship,
};
use std::sync::Arc;

/// Three hosts' records, shipped: their times interleave, two hosts record in the same
/// millisecond, and one host records twice in one. Returns every record as the fleet must
/// list it: newest first by time, then host name, then sequence number.
fn three_hosts(fleet: &dyn FleetLedger) -> Vec<FleetRecord> {
    // (host, seconds after T0, verdict); a host's records in the order it wrote them.
    let written = [
        ("web-1", 0, "allow"),
        ("web-1", 2, "deny"),
        ("web-1", 2, "allow"),
        ("web-1", 7, "allow"),
        ("db-1", 1, "allow"),
        ("db-1", 2, "ask"),
        ("db-1", 5, "deny"),
        ("db-1", 9, "allow"),
        ("db-10", 2, "allow"),
        ("db-10", 3, "allow"),
        ("db-10", 11, "halt"),
    ];
    let mut all = Vec::new();
    for host in ["web-1", "db-1", "db-10"] {
        let own = MemoryLedger::new();
        for (n, (_, secs, verdict)) in written.iter().filter(|w| w.0 == host).enumerate() {
            let mut entry = decision(n as i64, host, "df -h", verdict);
            entry.timestamp_ms = T0 + secs * 1000;
            let record = own.append(entry).unwrap();
            all.push(FleetRecord {
                host: host.into(),
                record,
            });
        }
        let shipped = ship(&own, fleet, host, 100, T0).unwrap();
        assert_eq!(shipped.behind, 0);
    }
    all.sort_by_key(|r| std::cmp::Reverse(FleetCursor::of(r)));
    all
}

fn places(records: &[FleetRecord]) -> Vec<(String, u64)> {
    records
        .iter()
        .map(|r| (r.host.clone(), r.record.seq))
        .collect()
}

/// Every host's records come newest first, each with its host; read a page at a time from
/// the last record of the page before, each comes exactly once, even where records share a
/// millisecond across a page's edge; one host's, and a filter's, are read alike.
pub fn the_fleets_records_page_newest_first_across_hosts_each_once(fleet: &dyn FleetLedger) {
    let all = three_hosts(fleet);
    let every = fleet.records(None, &Filter::default(), None).unwrap();
    assert_eq!(places(&every), places(&all));
    assert_eq!(every, all, "the records as the hosts wrote them");

    for size in [1, 2, 3, 4, 11, 50] {
        let page = Filter {
            limit: Some(size),
            ..Filter::default()
        };
        let mut read = Vec::new();
        let mut before: Option<FleetCursor> = None;
        loop {
            let got = fleet.records(None, &page, before.as_ref()).unwrap();
            assert!(got.len() <= size);
            read.extend(got.iter().cloned());
            match got.last() {
                Some(last) if got.len() == size => before = Some(FleetCursor::of(last)),
                _ => break,
            }
            assert!(read.len() <= all.len(), "pages of {size} repeat records");
        }
        assert_eq!(places(&read), places(&all), "pages of {size}");
    }

    let db1 = fleet
        .records(Some("db-1"), &Filter::default(), None)
        .unwrap();
    let want: Vec<_> = all.iter().filter(|r| r.host == "db-1").cloned().collect();
    assert_eq!(places(&db1), places(&want), "db-1's only (not db-10's)");
    let first_two = Filter {
        limit: Some(2),
        ..Filter::default()
    };
    let page = fleet.records(Some("db-1"), &first_two, None).unwrap();
    let rest = fleet
        .records(
            Some("db-1"),
            &Filter::default(),
            Some(&FleetCursor::of(&page[1])),
        )
        .unwrap();
    assert_eq!(places(&[page, rest].concat()), places(&want));

    let denied = Filter {
        verdict: Some("deny".into()),
        since_ms: Some(T0 + 2_000),
        ..Filter::default()
    };
    let got = fleet.records(None, &denied, None).unwrap();
    assert_eq!(
        places(&got),
        [("db-1".to_string(), 3), ("web-1".to_string(), 2)],
        "the filter's fields apply across hosts"
    );

    assert!(
        fleet
            .records(Some("mail-1"), &Filter::default(), None)
            .unwrap()
            .is_empty()
    );
    assert!(
        fleet
            .records(None, &Filter::default(), Some(&FleetCursor::end()))
            .unwrap()
            .is_empty(),
        "nothing comes before the end"
    );
}

/// Three hosts' arrivals, each received by its own host's inbox (`inbox_of`): their times
/// interleave, three hosts receive in the same millisecond, one host twice in one, and one
/// alert arrives on all three. Returns every arrival as the fleet must list it, oldest first:
/// by time, then host name, then the host's arrival number.
fn three_hosts_arrivals(inbox_of: &dyn Fn(&str) -> Arc<dyn AlertInbox>) -> Vec<FleetArrival> {
    // (host, seconds after T0, alert id); a host's arrivals in the order it received them.
    let received = [
        ("web-1", 0, "a"),
        ("web-1", 2, "b"),
        ("web-1", 2, "shared"),
        ("web-1", 7, "c"),
        ("db-1", 1, "d"),
        ("db-1", 2, "shared"),
        ("db-1", 5, "e"),
        ("db-1", 9, "f"),
        ("db-10", 2, "g"),
        ("db-10", 3, "h"),
        ("db-10", 11, "shared"),
    ];
    let mut all = Vec::new();
    for host in ["web-1", "db-1", "db-10"] {
        let inbox = inbox_of(host);
        let mine: Vec<_> = received.iter().filter(|r| r.0 == host).collect();
        // Two batches, as two deliveries.
        for batch in mine.chunks(3) {
            let arrivals: Vec<Arrival> = batch
                .iter()
                .map(|(_, secs, alert_id)| Arrival {
                    received_ms: T0 + secs * 1000,
                    source: "alertmanager",
                    alert_id,
                    status: "firing",
                    title: "DiskFull",
                    host: Some("db1"),
                    alert_json: r#"{"identity":"x"}"#,
                })
                .collect();
            for id in inbox.receive(&arrivals).unwrap() {
                all.push(FleetArrival {
                    host: host.into(),
                    arrival: inbox.get(id).unwrap().unwrap(),
                });
            }
        }
        // Each host settles its arrival of the shared alert: a settled arrival reads alike.
        let shared = all
            .iter_mut()
            .find(|a| a.host == host && a.arrival.alert_id == "shared")
            .unwrap();
        let record = format!("r{}", shared.arrival.id);
        inbox
            .settle(&[Settlement {
                arrival: shared.arrival.id,
                disposition: Disposition::Deduplicated,
                reason: "a task for it is live",
                route: Some("disk"),
                task_id: Some(7),
                record: &record,
            }])
            .unwrap();
        shared.arrival = inbox.get(shared.arrival.id).unwrap().unwrap();
        assert_eq!(shared.arrival.record.as_deref(), Some(record.as_str()));
    }
    all.sort_by_key(ArrivalCursor::of);
    all
}

fn arrival_places(arrivals: &[FleetArrival]) -> Vec<(String, i64)> {
    arrivals
        .iter()
        .map(|a| (a.host.clone(), a.arrival.id))
        .collect()
}

/// Every host's arrivals, read together: oldest first, each with the host that received it;
/// the newest of a window a page at a time (`between` from the oldest of the page after) and
/// every arrival a page at a time (`after` from the newest of the page before), each exactly
/// once, even where hosts share a millisecond across a page's edge; one host's alike (db-1's
/// are not db-10's); one alert's arrivals on every host.
pub fn the_fleets_arrivals_page_across_hosts_each_once(
    inbox_of: &dyn Fn(&str) -> Arc<dyn AlertInbox>,
    fleet: &dyn FleetInbox,
) {
    let all = three_hosts_arrivals(inbox_of);
    let (since, until) = (T0 - 1, T0 + 60_000);
    let every = fleet.between(None, since, until, None, 100).unwrap();
    assert_eq!(arrival_places(&every), arrival_places(&all));
    assert_eq!(every, all, "the arrivals as the hosts received them");

    let window = fleet
        .between(None, T0 + 2_000, T0 + 9_000, None, 100)
        .unwrap();
    let want: Vec<_> = all
        .iter()
        .filter(|a| (T0 + 2_000..T0 + 9_000).contains(&a.arrival.received_ms))
        .cloned()
        .collect();
    assert_eq!(arrival_places(&window), arrival_places(&want));

    for size in [1, 2, 3, 4, 11, 50] {
        // Newest first, a window's pages.
        let mut read: Vec<FleetArrival> = Vec::new();
        let mut before: Option<ArrivalCursor> = None;
        loop {
            let got = fleet
                .between(None, since, until, before.as_ref(), size)
                .unwrap();
            assert!(got.len() <= size);
            read.splice(0..0, got.iter().cloned());
            match got.first() {
                Some(oldest) if got.len() == size => before = Some(ArrivalCursor::of(oldest)),
                _ => break,
            }
            assert!(read.len() <= all.len(), "pages of {size} repeat arrivals");
        }
        assert_eq!(
            arrival_places(&read),
            arrival_places(&all),
            "pages of {size}"
        );
        // Oldest first, from the start.
        let mut read: Vec<FleetArrival> = Vec::new();
        let mut after = ArrivalCursor::end();
        loop {
            let got = fleet.after(None, &after, size).unwrap();
            assert!(got.len() <= size);
            read.extend(got.iter().cloned());
            match got.last() {
                Some(newest) if got.len() == size => after = ArrivalCursor::of(newest),
                _ => break,
            }
            assert!(read.len() <= all.len(), "pages of {size} repeat arrivals");
        }
        assert_eq!(
            arrival_places(&read),
            arrival_places(&all),
            "after, pages of {size}"
        );
    }

    let db1: Vec<_> = all.iter().filter(|a| a.host == "db-1").cloned().collect();
    let got = fleet
        .between(Some("db-1"), since, until, None, 100)
        .unwrap();
    assert_eq!(arrival_places(&got), arrival_places(&db1), "db-1's only");
    let first_two = fleet.after(Some("db-1"), &ArrivalCursor::end(), 2).unwrap();
    let rest = fleet
        .after(Some("db-1"), &ArrivalCursor::of(&first_two[1]), 100)
        .unwrap();
    assert_eq!(
        arrival_places(&[first_two, rest].concat()),
        arrival_places(&db1)
    );
    let newest_two = fleet.between(Some("db-1"), since, until, None, 2).unwrap();
    let older = fleet
        .between(
            Some("db-1"),
            since,
            until,
            Some(&ArrivalCursor::of(&newest_two[0])),
            100,
        )
        .unwrap();
    assert_eq!(
        arrival_places(&[older, newest_two].concat()),
        arrival_places(&db1)
    );

    // One host's pages from any place in the fleet's order, another host's arrival as well
    // as its own (db-1 sorts before db-10 and web-1, and they share a millisecond).
    for host in ["web-1", "db-1", "db-10"] {
        for place in all.iter().map(ArrivalCursor::of) {
            let theirs = |keep: &dyn Fn(&ArrivalCursor) -> bool| -> Vec<(String, i64)> {
                arrival_places(
                    &all.iter()
                        .filter(|a| a.host == host && keep(&ArrivalCursor::of(a)))
                        .cloned()
                        .collect::<Vec<_>>(),
                )
            };
            let before = fleet
                .between(Some(host), since, until, Some(&place), 100)
                .unwrap();
            assert_eq!(
                arrival_places(&before),
                theirs(&|a| *a < place),
                "{host}'s arrivals before {place:?}"
            );
            let after = fleet.after(Some(host), &place, 100).unwrap();
            assert_eq!(
                arrival_places(&after),
                theirs(&|a| *a > place),
                "{host}'s arrivals after {place:?}"
            );
        }
    }

    let shared = fleet.for_alert("shared").unwrap();
    assert_eq!(
        arrival_places(&shared),
        [
            ("db-1".to_string(), 2),
            ("web-1".to_string(), 3),
            ("db-10".to_string(), 3)
        ],
        "one alert's arrivals on every host, in the fleet's order"
    );
    assert!(
        shared
            .iter()
            .all(|a| a.arrival.disposition == Some(Disposition::Deduplicated))
    );
    assert!(fleet.for_alert("nothing").unwrap().is_empty());
    assert!(
        fleet
            .between(Some("mail-1"), since, until, None, 100)
            .unwrap()
            .is_empty()
    );
    assert!(
        fleet
            .between(None, since, until, Some(&ArrivalCursor::end()), 100)
            .unwrap()
            .is_empty(),
        "nothing comes before the end"
    );
}

/// A host's clock as it last measured it against the fleet's: kept per host, the latest
/// noting wins, a host that has shipped nothing yet is listed with it, and shipping neither
/// needs nor clears it.
pub fn a_hosts_clock_is_kept_as_last_noted_even_before_it_ships(fleet: &dyn FleetLedger) {
    fleet.note_clock("db-1", 3_600_000).unwrap();
    fleet.note_clock("web-1", 40).unwrap();
    fleet.note_clock("web-1", -1_250).unwrap();
    let clock = |host: &str| {
        let hosts = fleet.hosts().unwrap();
        let found = hosts.iter().find(|h| h.host == host);
        found.map(|h| (h.clock_ahead_ms, h.shipped.is_some()))
    };
    assert_eq!(clock("db-1"), Some((Some(3_600_000), false)));
    assert_eq!(clock("web-1"), Some((Some(-1_250), false)));

    let own = MemoryLedger::new();
    own.append(decision(0, "web-1", "df -h", "allow")).unwrap();
    ship(&own, fleet, "web-1", 100, T0).unwrap();
    assert_eq!(clock("web-1"), Some((Some(-1_250), true)));
    let other = MemoryLedger::new();
    other
        .append(decision(0, "batch-1", "df -h", "allow"))
        .unwrap();
    ship(&other, fleet, "batch-1", 100, T0).unwrap();
    assert_eq!(clock("batch-1"), Some((None, true)), "never noted");
    let names: Vec<String> = fleet.hosts().unwrap().into_iter().map(|h| h.host).collect();
    assert_eq!(
        names,
        ["batch-1", "db-1", "web-1"],
        "each host once, by name"
    );
}

#[cfg(test)]
mod tests {
    use nightwatch_store::AlertInbox;
    use nightwatch_store::memory::{MemoryFleet, MemoryInboxes};
    use std::sync::Arc;

    #[test]
    fn the_fleets_arrivals_page_across_hosts_each_once() {
        let fleet = MemoryInboxes::new();
        super::the_fleets_arrivals_page_across_hosts_each_once(
            &|host| Arc::new(fleet.host(host)) as Arc<dyn AlertInbox>,
            &fleet,
        );
    }

    #[test]
    fn the_fleets_records_page_newest_first_across_hosts_each_once() {
        super::the_fleets_records_page_newest_first_across_hosts_each_once(&MemoryFleet::new());
    }

    #[test]
    fn a_hosts_clock_is_kept_as_last_noted_even_before_it_ships() {
        super::a_hosts_clock_is_kept_as_last_noted_even_before_it_ships(&MemoryFleet::new());
    }
}
