//! What every `FleetLedger` must do when the fleet's records are read across hosts. Only the
//! in-memory and the PostgreSQL stores hold a fleet (SQLite is a host's own), so this case is
//! not in [`crate::conformance_tests!`]: this crate's own tests run it on the in-memory fleet
//! and `nightwatch-postgres`'s on its own.

use crate::fixtures::{T0, decision};
use nightwatch_ledger::Filter;
use nightwatch_store::memory::MemoryLedger;
use nightwatch_store::{FleetCursor, FleetLedger, FleetRecord, Ledger, ship};

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

#[cfg(test)]
mod tests {
    use nightwatch_store::memory::MemoryFleet;

    #[test]
    fn the_fleets_records_page_newest_first_across_hosts_each_once() {
        super::the_fleets_records_page_newest_first_across_hosts_each_once(&MemoryFleet::new());
    }
}
