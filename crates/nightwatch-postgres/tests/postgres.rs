//! What only the PostgreSQL stores have: connecting and migrating, hosts sharing one
//! database, shipping a host's chain, the database's own refusals, and notifications.

mod support;

use nightwatch_ledger::{Entry, Filter, RecordActor, event};
use nightwatch_postgres::{PgStores, TASKS_CHANNEL};
use nightwatch_store::memory::MemoryLedger;
use nightwatch_store::{
    AlertInbox, Arrival, JanitorStore, Ledger, LedgerReader, Offered, StoreError, TaskFilter,
    TaskQueue, verify,
};
use nightwatch_tasks::{Outcome, Policy, Status};
use postgres::fallible_iterator::FallibleIterator;
use std::sync::{Arc, Barrier};
use std::time::Duration;

fn entry(n: i64, session: &str) -> Entry {
    let mut e = Entry::new(
        event::DECISION,
        1_771_039_042_000 + n,
        RecordActor {
            kind: "agent".into(),
            id: "claude-code".into(),
        },
        "exec",
    );
    e.session_id = Some(session.into());
    e.verdict = Some("allow".into());
    e.call_id = Some(format!("toolu_{n}"));
    e
}

#[test]
fn a_server_that_is_not_there_is_an_error_that_says_where() {
    let port = support::free_port();
    let url = format!("postgres://nightwatch@127.0.0.1:{port}/fleet?connect_timeout=5");
    let error = PgStores::connect(&url, "db1")
        .err()
        .expect("nothing listens");
    let text = error.to_string();
    assert!(matches!(error, StoreError::Backend { .. }), "{error:?}");
    assert!(
        text.contains(&format!(
            "cannot connect to PostgreSQL at 127.0.0.1 port {port}"
        )),
        "{text}"
    );
    assert!(text.contains("database fleet, user nightwatch"), "{text}");

    let error = PgStores::connect("postgres://[::1", "db1").err().unwrap();
    assert!(
        error
            .to_string()
            .contains("not a PostgreSQL connection string"),
        "{error}"
    );
    let db = support::database();
    let error = PgStores::connect(&db.url, "").err().unwrap();
    assert!(error.to_string().contains("host name"), "{error}");
}

#[test]
fn a_password_in_the_url_never_reaches_an_error() {
    let port = support::free_port();
    let url = format!("postgres://nightwatch:hunter2@127.0.0.1:{port}/fleet?connect_timeout=5");
    let text = PgStores::connect(&url, "db1").err().unwrap().to_string();
    assert!(!text.contains("hunter2"), "{text}");
}

/// Hosts starting at once against a new database: every one opens, and each migration is
/// applied exactly once.
#[test]
fn hosts_opening_a_new_database_at_once_migrate_it_exactly_once() {
    const HOSTS: usize = 8;
    let db = support::database();
    let start = Arc::new(Barrier::new(HOSTS));
    let threads: Vec<_> = (0..HOSTS)
        .map(|h| {
            let (url, start) = (db.url.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                PgStores::connect(&url, &format!("host{h}")).map(|_| ())
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap().unwrap();
    }
    let mut client = support::server().client(&db);
    let rows = client
        .query(
            "SELECT store, version FROM schema_migrations ORDER BY store, version",
            &[],
        )
        .unwrap();
    let applied: Vec<(String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    // Each store's migrations, once each, in order.
    let want: Vec<(String, i64)> = [
        // The fleet's order across hosts came with a second step (each store's own); each
        // host's clock against the fleet's with the fleet ledger's third; the unsettled
        // arrivals in a table of their own with the inbox's third, its settlements with the
        // fourth, the mark the search for unsettled ones starts from with the fifth, one host's
        // arrivals in time order with the sixth; new tasks counted per statement with the
        // queue's third, a host's and a finished status's tasks indexed with its fourth; a
        // session's, an alert's and a verdict's records across hosts with the fleet ledger's
        // fourth.
        ("alert inbox", 6),
        ("fleet ledger", 4),
        ("janitor state", 1),
        ("leases", 1),
        ("ledger", 1),
        ("task queue", 4),
    ]
    .into_iter()
    .flat_map(|(store, versions)| (1..=versions).map(move |v| (store.to_string(), v)))
    .collect();
    assert_eq!(applied, want);
}

#[test]
fn a_database_from_a_newer_nightwatch_is_refused() {
    let db = support::database();
    drop(PgStores::connect(&db.url, "db1").unwrap());
    support::server()
        .client(&db)
        .execute(
            "INSERT INTO schema_migrations (store, version) VALUES ('janitor state', 99)",
            &[],
        )
        .unwrap();
    match PgStores::connect(&db.url, "db1") {
        Err(StoreError::SchemaTooNew {
            store,
            found,
            known,
        }) => assert_eq!((store, found, known), ("janitor state", 99, 1)),
        Err(other) => panic!("expected SchemaTooNew, got {other:?}"),
        Ok(_) => panic!("a newer schema was opened"),
    }
}

/// Hosts share the database, not their chains: each host's records are its own 1, 2, 3, ...
/// and verify on their own, and a host's reader sees no other host's records.
#[test]
fn each_host_keeps_its_own_chain() {
    let db = support::database();
    let a = PgStores::connect(&db.url, "web-1").unwrap().ledger();
    let b = PgStores::connect(&db.url, "web-2").unwrap().ledger();
    for n in 0..5 {
        a.append(entry(n, "a")).unwrap();
        b.append(entry(n, "b")).unwrap();
        b.append(entry(n + 100, "b")).unwrap();
    }
    assert_eq!((a.last_seq().unwrap(), b.last_seq().unwrap()), (5, 10));
    for (ledger, session, n) in [(&a, "a", 5), (&b, "b", 10)] {
        let records = ledger.query(&Filter::default()).unwrap();
        assert_eq!(records.len(), n);
        assert!(
            records
                .iter()
                .all(|r| r.session_id.as_deref() == Some(session))
        );
        let report = verify(&**ledger).unwrap();
        assert!(report.is_intact(), "{report:?}");
        assert_eq!(report.head_checkpoint.map(|c| c.0), Some(n as u64));
    }
    assert_eq!(a.get("r7").unwrap(), None, "web-2's r7 is not web-1's");
    assert_eq!(
        a.decision_for_call("toolu_100").unwrap(),
        None,
        "nor is its call"
    );
    assert_eq!(a.host(), "web-1");
}

/// A host's own records reach the fleet's store as they are, once: shipping again changes
/// nothing, and the copy is the same chain.
#[test]
fn shipping_a_hosts_records_is_idempotent_and_keeps_its_chain() {
    let db = support::database();
    let local = MemoryLedger::new();
    let records: Vec<_> = (0..6)
        .map(|n| local.append(entry(n, "s")).unwrap())
        .collect();
    let fleet = PgStores::connect(&db.url, "collector")
        .unwrap()
        .ledger_of("web-1");
    assert_eq!(fleet.last_seq().unwrap(), 0);
    assert_eq!(fleet.ship(&records[..3]).unwrap(), 3);
    assert_eq!(fleet.last_seq().unwrap(), 3);
    assert_eq!(fleet.ship(&records[..5]).unwrap(), 2, "only the new ones");
    assert_eq!(fleet.ship(&records).unwrap(), 1);
    assert_eq!(
        fleet.ship(&records).unwrap(),
        0,
        "shipping again changes nothing"
    );
    assert_eq!(fleet.ship(&[]).unwrap(), 0);
    assert_eq!(fleet.query(&Filter::default()).unwrap(), records);
    let report = verify(&*fleet).unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.head_checkpoint.map(|c| c.0), Some(6));
    // The host itself, opened on the fleet's store, goes on from the shipped tail.
    let own = PgStores::connect(&db.url, "web-1").unwrap().ledger();
    let next = own.append(entry(6, "s")).unwrap();
    assert_eq!((next.seq, &next.prev_hash), (7, &records[5].hash));
}

/// Batches larger than one insert statement carries (records go in as arrays, a few hundred
/// at a time), shipped and appended, with text PostgreSQL cannot hold as it is: every record
/// comes back the same, in one intact chain.
#[test]
fn batches_of_many_records_ship_and_append_whole() {
    let db = support::database();
    let local = MemoryLedger::new();
    let records: Vec<_> = (0..1_203)
        .map(|n| local.append(entry(n, &format!("s\0{n}"))).unwrap())
        .collect();
    let fleet = PgStores::connect(&db.url, "collector")
        .unwrap()
        .ledger_of("web-1");
    assert_eq!(fleet.ship(&records[..2]).unwrap(), 2);
    assert_eq!(fleet.ship(&records).unwrap(), 1_201, "all but the two held");
    assert_eq!(fleet.query(&Filter::default()).unwrap(), records);

    let own = PgStores::connect(&db.url, "web-2").unwrap().ledger();
    let appended = own
        .append_all((0..1_107).map(|n| entry(n, "t\u{FFFF}")).collect())
        .unwrap();
    assert_eq!(appended.len(), 1_107);
    assert_eq!(
        appended.iter().map(|r| r.seq).collect::<Vec<_>>(),
        (1..=1_107).collect::<Vec<u64>>()
    );
    assert_eq!(own.query(&Filter::default()).unwrap(), appended);
    for ledger in [&fleet, &own] {
        let report = verify(&**ledger).unwrap();
        assert!(report.is_intact(), "{report:?}");
    }
}

#[test]
fn a_shipped_record_that_differs_from_the_one_held_is_refused_as_corrupt() {
    let db = support::database();
    let fleet = PgStores::connect(&db.url, "collector")
        .unwrap()
        .ledger_of("web-1");
    let first = MemoryLedger::new();
    let ours: Vec<_> = (0..3)
        .map(|n| first.append(entry(n, "s")).unwrap())
        .collect();
    fleet.ship(&ours).unwrap();

    // Another chain claiming the same host: its record 2 is not the one held.
    let second = MemoryLedger::new();
    let theirs: Vec<_> = (0..4)
        .map(|n| second.append(entry(n * 7, "t")).unwrap())
        .collect();
    let error = fleet.ship(&theirs).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    assert!(error.to_string().contains("two chains claim"), "{error}");

    // A record edited after it was chained does not hash to its hash.
    let mut edited = ours[2].clone();
    edited.verdict = Some("deny".into());
    let error = fleet.ship(&[edited]).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");

    // A gap: records after one the store never got. Nothing of the call is stored.
    let more: Vec<_> = (3..6)
        .map(|n| first.append(entry(n, "s")).unwrap())
        .collect();
    let error = fleet.ship(&more[1..]).unwrap_err();
    assert!(error.to_string().contains("in order, from 4"), "{error}");
    assert_eq!(fleet.last_seq().unwrap(), 3);
    assert_eq!(fleet.ship(&more).unwrap(), 3);
    assert!(verify(&*fleet).unwrap().is_intact());
}

/// The database itself refuses to change or remove records and task events, and a second
/// live task for one identity.
#[test]
fn the_database_refuses_edits_of_records_and_events_and_a_second_live_task() {
    let db = support::database();
    let stores = PgStores::connect(&db.url, "db1").unwrap();
    stores.ledger().append(entry(1, "s")).unwrap();
    stores
        .task_queue(Policy::default())
        .offer("disk/db1", "{}", "r", 0)
        .unwrap();
    let mut client = support::server().client(&db);
    for sql in [
        "UPDATE ledger_records SET verdict = 'deny'",
        "DELETE FROM ledger_records",
        "TRUNCATE ledger_records",
        "UPDATE task_events SET why = 'x'",
        "DELETE FROM task_events",
        "UPDATE ledger_heads SET seq = 0",
        "DELETE FROM ledger_heads",
    ] {
        let error = client.batch_execute(sql).unwrap_err();
        let text = error.as_db_error().map(|e| e.message().to_string());
        let text = text.unwrap_or_default();
        assert!(
            text.contains("append-only") || text.contains("only moves forward"),
            "{sql}: {text}"
        );
    }
    let dup = client.batch_execute(
        "INSERT INTO tasks (host, identity, alert_json, route, created_ms, last_seen_ms,
             status, attempt, ready_ms)
         VALUES ('db2', 'disk/db1', '{}', 'r', 0, 0, 'pending', 0, 0)",
    );
    assert!(dup.is_err(), "a second live task was stored");
}

/// A tail cut off the records (which takes switching their trigger off) shows against the
/// head kept beside them.
#[test]
fn a_tail_cut_off_the_records_shows_against_the_head() {
    let db = support::database();
    let ledger = PgStores::connect(&db.url, "db1").unwrap().ledger();
    for n in 0..4 {
        ledger.append(entry(n, "s")).unwrap();
    }
    support::server()
        .client(&db)
        .batch_execute(
            "ALTER TABLE ledger_records DISABLE TRIGGER ledger_records_append_only;
             DELETE FROM ledger_records WHERE seq > 2;",
        )
        .unwrap();
    let report = verify(&*ledger).unwrap();
    assert!(!report.is_intact(), "{report:?}");
    assert_eq!(report.records, 2);
    assert_eq!(report.head_checkpoint.map(|c| c.0), Some(4));
}

/// A task claimable now is announced to listeners; one that becomes claimable only later (a
/// retry's backoff, a resolve delay) is not, since a worker woken now would find nothing: the
/// workers' next look after its time finds it.
#[test]
fn a_task_claimable_now_is_notified_and_a_delayed_one_is_not() {
    let db = support::database();
    let queue = PgStores::connect(&db.url, "db1")
        .unwrap()
        .task_queue(Policy::default());
    let mut listener = support::server().client(&db);
    listener
        .batch_execute(&format!("LISTEN {TASKS_CHANNEL}"))
        .unwrap();
    let mut heard = |within: Duration| {
        let mut notes = listener.notifications();
        let mut waiting = notes.timeout_iter(within);
        let note = waiting.next().unwrap();
        note.map(|n| n.channel().to_owned())
    };
    let Offered::Created(id) = queue.offer("disk/db1", "{}", "r", 0).unwrap() else {
        panic!("expected a new task");
    };
    assert_eq!(
        heard(Duration::from_secs(10)).as_deref(),
        Some(TASKS_CHANNEL),
        "an offer claimable now is announced"
    );
    let claim = queue.claim("w", 0, 60_000).unwrap().unwrap();
    let failed = Outcome::Failed {
        error: "boom".into(),
    };
    assert_eq!(
        queue.complete(id, claim.attempt, &failed, 10).unwrap(),
        Status::Pending
    );
    let delayed = PgStores::connect(&db.url, "db1")
        .unwrap()
        .task_queue(Policy {
            resolve_delay_ms: 60_000,
            ..Policy::default()
        });
    assert!(matches!(
        delayed.offer("disk/db2", "{}", "r", 0).unwrap(),
        Offered::Created(_)
    ));
    assert_eq!(
        heard(Duration::from_secs(1)),
        None,
        "a retry after its backoff and a delayed offer are not announced"
    );
}

/// Daemons on different hosts offering one alert at once: one task for the fleet, made by
/// one of them, the others' offers counted on it, each event naming the host that wrote it.
#[test]
fn daemons_on_several_hosts_offering_one_alert_make_one_task() {
    const DAEMONS: usize = 6;
    let db = support::database();
    let start = Arc::new(Barrier::new(DAEMONS));
    let threads: Vec<_> = (0..DAEMONS)
        .map(|d| {
            let (url, start) = (db.url.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                let queue = PgStores::connect(&url, &format!("host{d}"))
                    .unwrap()
                    .task_queue(Policy::default());
                start.wait();
                queue.offer("kuma/42", "{}", "r", 0).unwrap()
            })
        })
        .collect();
    let answers: Vec<Offered> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let made = answers
        .iter()
        .filter(|a| matches!(a, Offered::Created(_)))
        .count();
    assert_eq!(made, 1, "{answers:?}");
    let queue = PgStores::connect(&db.url, "host9")
        .unwrap()
        .task_queue(Policy::default());
    let tasks = queue.tasks(&TaskFilter::default()).unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].repeats, DAEMONS as u32 - 1);
    let creator: String = support::server()
        .client(&db)
        .query_one("SELECT e.host FROM task_events e", &[])
        .unwrap()
        .get(0);
    assert!(creator.starts_with("host"), "{creator}");
    // A worker on another host claims it.
    let claim = queue.claim("host9/w1", 0, 60_000).unwrap().unwrap();
    assert_eq!(claim.task_id, tasks[0].id);
}

/// The counts are kept as +1/-1 rows, folded into one row per status by the housekeeping's
/// look for escalations once a few hundred writes have passed (through any of the stores'
/// queue handles), and by a read that finds more than a thousand: what a read sums stays
/// small though nothing reads for a long time, and the counts stay exact.
#[test]
fn the_counts_are_folded_by_the_housekeeping_and_stay_exact() {
    let db = support::database();
    let stores = PgStores::connect(&db.url, "db1").unwrap();
    let rows = || -> i64 {
        support::server()
            .client(&db)
            .query_one("SELECT count(*) FROM task_counts", &[])
            .unwrap()
            .get(0)
    };
    let housekeeping = stores.task_queue(Policy::default());
    for n in 0..1_500 {
        // A handle per alert: the writes are counted for the stores, not per handle.
        let queue = stores.task_queue(Policy::default());
        let identity = format!("flap/{n}");
        queue.offer(&identity, "{}", "r", n).unwrap();
        if n % 3 != 0 {
            queue.resolve(&identity, n).unwrap();
        }
        // The daemon looks for escalations after its batches.
        if n % 10 == 9 {
            housekeeping.take_escalations(n).unwrap();
        }
    }
    // 2,500 writes made 3,500 changes of count; unread, at most the last ~200 writes' are
    // left (each write adds at most two).
    let unread = rows();
    assert!(unread <= 2 * 220 + 5, "{unread} count rows, never read");
    let want = vec![(Status::Cancelled, 1_000), (Status::Pending, 500)];
    assert_eq!(housekeeping.counts().unwrap(), want);
    assert_eq!(housekeeping.counts().unwrap(), want);
}

/// A queue from before new tasks were counted per statement: upgrading keeps its counts, and
/// batches of new tasks (some of whose identities another host already holds) keep them exact.
#[test]
fn upgrading_the_queue_keeps_its_counts_exact() {
    use nightwatch_store::{Offer, QueueOp};
    let db = support::database();
    let connect = || {
        PgStores::connect(&db.url, "db1")
            .unwrap()
            .task_queue(Policy::default())
    };
    let queue = connect();
    for n in 0..30 {
        queue.offer(&format!("old/{n}"), "{}", "r", n).unwrap();
    }
    queue.resolve("old/0", 30).unwrap();
    drop(queue);
    // Back to the schema before: a trigger call per task, and the events' foreign key.
    support::server()
        .client(&db)
        .batch_execute(
            "DROP TRIGGER tasks_counts_inserted ON tasks;
             DROP TRIGGER tasks_counts ON tasks;
             CREATE TRIGGER tasks_counts AFTER INSERT OR UPDATE OF status OR DELETE ON tasks
                 FOR EACH ROW EXECUTE FUNCTION nightwatch_task_counts();
             ALTER TABLE task_events ADD CONSTRAINT task_events_task_id_fkey
                 FOREIGN KEY (task_id) REFERENCES tasks (id);
             DROP INDEX tasks_worker;
             DROP INDEX tasks_finished_status;
             DELETE FROM schema_migrations WHERE store = 'task queue' AND version >= 3;",
        )
        .unwrap();
    let queue = connect();
    let offers: Vec<Offer<'_>> = ["old/1", "new/1", "new/2", "old/0", "new/3"]
        .into_iter()
        .map(|identity| Offer::plain(identity, "{}", "r"))
        .collect();
    let ops: Vec<QueueOp<'_>> = offers.iter().copied().map(QueueOp::Offer).collect();
    queue.apply(&ops, 40).unwrap();
    queue.resolve("new/2", 41).unwrap();
    assert_eq!(
        queue.counts().unwrap(),
        vec![(Status::Cancelled, 2), (Status::Pending, 32)]
    );
    let in_place: i64 = support::server()
        .client(&db)
        .query_one(
            "SELECT count(*) FROM pg_constraint WHERE conname = 'task_events_task_id_fkey'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(in_place, 0, "the foreign key is gone again");
}

/// Each host's inbox and janitor state are its own, in the one database: ids count from 1
/// per host, and nothing of one host shows in another's.
#[test]
fn hosts_keep_their_own_arrivals_and_janitor_state() {
    let db = support::database();
    let a = PgStores::connect(&db.url, "web-1").unwrap();
    let b = PgStores::connect(&db.url, "web-2").unwrap();
    let arrival = |alert_id| Arrival {
        received_ms: 10,
        source: "uptime-kuma",
        alert_id,
        status: "firing",
        title: "Down",
        host: Some("web-1"),
        alert_json: "{}",
    };
    assert_eq!(
        a.inbox().receive(&[arrival("x"), arrival("y")]).unwrap(),
        [1, 2]
    );
    assert_eq!(b.inbox().receive(&[arrival("z")]).unwrap(), [1]);
    assert_eq!(a.inbox().count().unwrap(), 2);
    assert_eq!(b.inbox().get(1).unwrap().unwrap().alert_id, "z");
    assert!(b.inbox().for_alert("x").unwrap().is_empty());
    assert_eq!(b.inbox().unrecorded(10).unwrap().len(), 1);

    use nightwatch_janitor::Kind;
    a.janitor().note_activity(Kind::Container, "c1", 5).unwrap();
    assert_eq!(b.janitor().activity(Kind::Container, "c1").unwrap(), None);
    assert_eq!(
        a.janitor().activity(Kind::Container, "c1").unwrap(),
        Some(5)
    );
    assert_eq!(
        b.janitor().load().unwrap(),
        nightwatch_janitor::JanitorState::new()
    );
}

/// An inbox from before settlements had tables of their own (settled in the arrival's row,
/// the unsettled found by an index on it): upgrading keeps every settlement and every
/// unsettled arrival (of every host) unsettled; from then on an arrival's row is never
/// rewritten, however often it is settled.
#[test]
fn upgrading_the_inbox_keeps_its_settlements_and_never_rewrites_an_arrival() {
    use nightwatch_store::{Disposition, Settlement};
    let db = support::database();
    let arrival = |alert_id| Arrival {
        received_ms: 10,
        source: "alertmanager",
        alert_id,
        status: "firing",
        title: "DiskFull",
        host: None,
        alert_json: "{}",
    };
    let settled = |arrival, record| Settlement {
        arrival,
        disposition: Disposition::Routed,
        reason: "route disk",
        route: Some("disk"),
        task_id: Some(arrival),
        record,
    };
    {
        let web = PgStores::connect(&db.url, "web-1").unwrap().inbox();
        let ids = web
            .receive(&[arrival("a"), arrival("b"), arrival("c")])
            .unwrap();
        web.settle(&[settled(ids[1], "rec-b")]).unwrap();
        let other = PgStores::connect(&db.url, "web-2").unwrap().inbox();
        other.receive(&[arrival("d")]).unwrap();
    }
    // Back to the schema of two versions before.
    let mut client = support::server().client(&db);
    client
        .batch_execute(
            "ALTER TABLE alert_events ADD COLUMN disposition TEXT, ADD COLUMN reason TEXT,
                 ADD COLUMN route TEXT, ADD COLUMN task_id BIGINT, ADD COLUMN record TEXT;
             UPDATE alert_events e SET disposition = s.disposition, reason = s.reason,
                 route = s.route, task_id = s.task_id, record = s.record
             FROM alert_settlements s WHERE s.host = e.host AND s.id = e.id;
             DROP TABLE alert_settlements;
             DROP TABLE alert_events_unsettled;
             DROP TABLE alert_settled_through;
             CREATE INDEX alert_events_unrecorded ON alert_events (host, id) WHERE record IS NULL;
             DELETE FROM schema_migrations WHERE store = 'alert inbox' AND version >= 3;",
        )
        .unwrap();

    let web = PgStores::connect(&db.url, "web-1").unwrap().inbox();
    let left: Vec<i64> = web.unrecorded(10).unwrap().iter().map(|a| a.id).collect();
    assert_eq!(left, [1, 3], "the unsettled ones, not the settled one");
    let kept = web.get(2).unwrap().unwrap();
    assert_eq!(
        (kept.disposition, kept.record.as_deref(), kept.task_id),
        (Some(Disposition::Routed), Some("rec-b"), Some(2)),
        "the settlement made before the upgrade"
    );
    let other = PgStores::connect(&db.url, "web-2").unwrap().inbox();
    assert_eq!(other.unrecorded(10).unwrap().len(), 1, "another host's too");

    // Eight new arrivals settled, one of them twice, and an old one: no arrival's row is
    // updated. The server's statistics count the table's updates; a connection reports its
    // own at most about ten seconds after going idle, so the inserts are waited for.
    let ids = web
        .receive(&(0..8).map(|_| arrival("e")).collect::<Vec<_>>())
        .unwrap();
    let mut settlements: Vec<Settlement<'_>> = ids.iter().map(|id| settled(*id, "rec")).collect();
    settlements.push(settled(1, "rec-a"));
    web.settle(&settlements).unwrap();
    web.settle(&[settled(ids[0], "rec-again")]).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let (inserted, updated) = loop {
        let row = client
            .query_one(
                "SELECT n_tup_ins, n_tup_upd FROM pg_stat_user_tables \
                 WHERE relname = 'alert_events'",
                &[],
            )
            .unwrap();
        let (inserted, updated): (i64, i64) = (row.get(0), row.get(1));
        if inserted >= 12 || std::time::Instant::now() > deadline {
            break (inserted, updated);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(inserted, 12, "every arrival, counted");
    // The only updates: the old schema's settlement moved back by the test itself.
    let moved_back = 1;
    assert_eq!(updated, moved_back, "no settlement rewrote an arrival");
    assert_eq!(
        web.get(ids[0]).unwrap().unwrap().record.as_deref(),
        Some("rec-again"),
        "the last settlement holds"
    );
    let left: Vec<i64> = web.unrecorded(100).unwrap().iter().map(|a| a.id).collect();
    assert_eq!(left, [3]);
}

/// The fleet's view: each host's records shipped from its own ledger, in batches; the hosts
/// with their lag; a chain the fleet holds only part of does not verify whole; another chain
/// under a host's name is refused and nothing of it is kept.
#[test]
fn the_fleet_holds_every_hosts_chain_and_knows_what_it_lacks() {
    use nightwatch_store::{FleetLedger, ShipError, ship};
    let db = support::database();
    let fleet = PgStores::connect(&db.url, "collector").unwrap().fleet();
    let web = MemoryLedger::new();
    let batch = MemoryLedger::new();
    for n in 0..30 {
        web.append(entry(n, "web")).unwrap();
    }
    for n in 0..12 {
        batch.append(entry(n, "batch")).unwrap();
    }
    loop {
        let shipped = ship(&web, &*fleet, "web-1", 7, 10_000).unwrap();
        if shipped.behind == 0 {
            assert_eq!(shipped.through, 30);
            break;
        }
    }
    let first = ship(&batch, &*fleet, "batch-1", 5, 11_000).unwrap();
    assert_eq!((first.records, first.through, first.behind), (5, 5, 7));

    let hosts = fleet.hosts().unwrap();
    let names: Vec<_> = hosts.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(names, ["batch-1", "web-1"]);
    assert_eq!(hosts[0].lag(), 7, "batch-1 reported 12, the fleet holds 5");
    assert_eq!((hosts[1].lag(), hosts[1].reported_ms), (0, Some(10_000)));
    assert_eq!(hosts[1].shipped.as_ref().map(|s| s.0), Some(30));

    let whole = verify(&*fleet.host_ledger("web-1").unwrap()).unwrap();
    assert!(whole.is_intact(), "{whole:?}");
    assert_eq!(whole.records, 30);
    let partial = verify(&*fleet.host_ledger("batch-1").unwrap()).unwrap();
    assert!(
        !partial.is_intact(),
        "the fleet lacks batch-1's last 7 records"
    );

    // Another machine shipping under web-1's name with a chain of its own.
    let impostor = MemoryLedger::new();
    for n in 0..31 {
        impostor.append(entry(n + 100, "other")).unwrap();
    }
    let err = ship(&impostor, &*fleet, "web-1", 100, 12_000).unwrap_err();
    assert!(matches!(err, ShipError::Diverged { .. }), "{err}");
    assert_eq!(fleet.shipped("web-1").unwrap().map(|s| s.0), Some(30));
}

/// The fleet's records read across hosts: the shared case, on PostgreSQL.
#[test]
fn the_fleets_records_page_newest_first_across_hosts_each_once() {
    let db = support::database();
    let fleet = PgStores::connect(&db.url, "collector").unwrap().fleet();
    nightwatch_store_conformance::fleet::the_fleets_records_page_newest_first_across_hosts_each_once(
        &*fleet,
    );
}

/// Each host's clock as it last noted it: the shared case, on PostgreSQL.
#[test]
fn a_hosts_clock_is_kept_as_last_noted_even_before_it_ships() {
    let db = support::database();
    let fleet = PgStores::connect(&db.url, "collector").unwrap().fleet();
    nightwatch_store_conformance::fleet::a_hosts_clock_is_kept_as_last_noted_even_before_it_ships(
        &*fleet,
    );
}

/// Every host's arrivals read together: the shared case, on PostgreSQL.
#[test]
fn the_fleets_arrivals_page_across_hosts_each_once() {
    let db = support::database();
    let reader = PgStores::connect(&db.url, "collector").unwrap();
    let url = db.url.clone();
    nightwatch_store_conformance::fleet::the_fleets_arrivals_page_across_hosts_each_once(
        &|host| PgStores::connect(&url, host).unwrap().inbox() as Arc<dyn AlertInbox>,
        &*reader.fleet_inbox(),
    );
}

/// A daemon's idle workers hear at once that another host made a task claimable: the word
/// comes through `ready_signal`, a burst of offers is one wake, and silence is a timeout.
#[test]
fn the_word_of_a_claimable_task_reaches_a_listener_on_another_host() {
    let db = support::database();
    let listener = PgStores::connect(&db.url, "host-a")
        .unwrap()
        .task_queue(Policy::default());
    let other = PgStores::connect(&db.url, "host-b")
        .unwrap()
        .task_queue(Policy::default());
    let mut signal = listener
        .ready_signal()
        .unwrap()
        .expect("PostgreSQL's queue has word");
    assert!(
        !signal.wait(Duration::from_millis(200)).unwrap(),
        "no word while nothing happens"
    );
    for n in 0..5 {
        other
            .offer(&format!("disk/{n}"), "{}", "disk", 1_000)
            .unwrap();
    }
    let started = std::time::Instant::now();
    assert!(
        signal.wait(Duration::from_secs(10)).unwrap(),
        "the offers were heard"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "at once, not at a poll"
    );
    // The burst was taken whole, or nearly: no backlog of five wakes.
    let mut more = 0;
    while signal.wait(Duration::from_millis(100)).unwrap() {
        more += 1;
    }
    assert!(more < 5, "{more} further wakes for one burst");
}

#[test]
fn a_watchers_query_returns_a_row_or_none_and_cannot_write() {
    let db = support::database();
    let mut client = support::server().client(&db);
    client
        .batch_execute(
            "CREATE TABLE jobs (name TEXT, finished_at BIGINT);
             INSERT INTO jobs VALUES ('backup', 1000);",
        )
        .expect("table");
    let second = Duration::from_secs(5);
    let row = "SELECT 1 FROM jobs WHERE name = 'backup'";
    assert!(nightwatch_postgres::query_returns_row(&db.url, row, second).expect("query"));
    let none = "SELECT 1 FROM jobs WHERE finished_at > 5000";
    assert!(!nightwatch_postgres::query_returns_row(&db.url, none, second).expect("query"));
    let write = "DELETE FROM jobs RETURNING name";
    let error = nightwatch_postgres::query_returns_row(&db.url, write, second).unwrap_err();
    assert!(error.to_string().contains("read-only"), "{error}");
    let left: i64 = client
        .query_one("SELECT count(*) FROM jobs", &[])
        .expect("count")
        .get(0);
    assert_eq!(left, 1, "the row is still there");
    let slow = "SELECT 1 FROM pg_sleep(5)";
    let error = nightwatch_postgres::query_returns_row(&db.url, slow, Duration::from_millis(300))
        .unwrap_err();
    assert!(error.to_string().contains("statement timeout"), "{error}");
}

/// The fleet database's own clock, which the hazards watcher compares each host's with: it
/// reads the server's time of the statement, here on this machine's clock.
#[test]
fn the_fleet_tells_its_databases_clock() {
    use nightwatch_store::FleetLedger;
    let db = support::database();
    let fleet = PgStores::connect(&db.url, "collector").unwrap().fleet();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let clock = fleet.clock_ms().unwrap().expect("PostgreSQL has a clock");
    let after = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        (before - 1_000..=after + 1_000).contains(&clock),
        "{before} <= {clock} <= {after}"
    );
    // The in-memory fleet has no clock of its own and says so.
    let memory = nightwatch_store::memory::MemoryFleet::new();
    assert_eq!(memory.clock_ms().unwrap(), None);
}
