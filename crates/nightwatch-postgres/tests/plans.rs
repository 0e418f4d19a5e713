//! Every statement the fleet stores run for a daemon costs as much with ten times the history
//! as without: no plan reads a range of history to find a batch's few rows.
//!
//! A plan that walks history passes every functional test and only shows under load, hours
//! later (the settlement's merge join over a host's arrivals, the claim's walk of a route's
//! index). So this test watches the plans themselves: PostgreSQL's `auto_explain` runs every
//! statement of the probe's sessions with `EXPLAIN (ANALYZE, BUFFERS)` and sends each plan to
//! the client as a notice, which the driver hands to `log`, which this binary captures. Plans
//! are generic (`plan_cache_mode = force_generic_plan`), the plan a prepared statement keeps
//! for good. The same work (an intake batch, its settlement, shipping, a claim and its result,
//! the pages' reads) is probed three times: with a small history, again after ten times more
//! history with the plans cached from the small one (stale statistics), and with fresh plans
//! after `ANALYZE`. Each statement's buffers (pages hit or read) must not grow with history
//! beyond a B-tree level or two.
//!
//! Its own cluster: it loads a library into the database's sessions, which needs a superuser.

mod support;

use nightwatch_ledger::{Entry, Filter, Record, RecordActor, event};
use nightwatch_postgres::{PgOptions, PgStores};
use nightwatch_store::memory::MemoryLedger;
use nightwatch_store::{
    AlertInbox, Arrival, ArrivalCursor, Disposition, FleetInbox, FleetLedger, Leases, Ledger,
    LedgerReader, Offer, QueueOp, Settlement, TaskFilter, TaskQueue,
};
use nightwatch_tasks::{Outcome, Policy, Status};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Plans sent by the server as notices since the last [`take_plans`].
static PLANS: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct PlanCapture;

impl log::Log for PlanCapture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let message = record.args().to_string();
        if let Some((_, plan)) = message.split_once("plan:\n") {
            PLANS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(plan.to_string());
        }
    }

    fn flush(&self) {}
}

static CAPTURE: PlanCapture = PlanCapture;

/// Each statement's text, and the most buffers one run of it touched.
type Costs = BTreeMap<String, (u64, serde_json::Value)>;

fn take_plans() -> Costs {
    let plans = std::mem::take(&mut *PLANS.lock().unwrap_or_else(|p| p.into_inner()));
    let mut costs = Costs::new();
    for text in plans {
        let plan: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("auto_explain's JSON does not parse ({e}): {text}"));
        let query = plan["Query Text"].as_str().unwrap_or_default();
        // One text for every size of a batch: `unnest` of arrays keeps a statement's text the
        // same; statements the test itself does not run (the driver's own) are left out.
        let query = query.split_whitespace().collect::<Vec<_>>().join(" ");
        let top = &plan["Plan"];
        let buffers = ["Shared Hit Blocks", "Shared Read Blocks"]
            .iter()
            .map(|k| top[*k].as_u64().unwrap_or(0))
            .sum::<u64>();
        let entry = costs.entry(query).or_insert((0, serde_json::Value::Null));
        if buffers >= entry.0 {
            *entry = (buffers, top.clone());
        }
    }
    costs
}

const HOSTS: [&str; 3] = ["web-1", "web-2", "web-3"];
/// The host whose chain is appended in the fleet's database itself (not shipped).
const OWN_CHAIN: &str = "web-own";
const T0: i64 = 1_790_000_000_000;
/// A host with a little history of its own in a busy fleet.
const QUIET: &str = "db-1";

/// A host's `n`th record: a dispatch of its `n`th alert, and (as the agents on a host make
/// most records) two of every three an agent's allowed call in a session of thirty.
fn entry(host: &str, n: u64) -> Entry {
    let actor = |kind: &str, id: &str| RecordActor {
        kind: kind.into(),
        id: id.into(),
    };
    if n.is_multiple_of(3) {
        let mut e = Entry::new(
            event::DISPATCH,
            T0 + n as i64,
            actor("daemon", "nightwatch"),
            "dispatch",
        );
        e.context.alert_id = Some(format!("{host}/alert-{n}"));
        return e;
    }
    let mut e = Entry::new(
        event::DECISION,
        T0 + n as i64,
        actor("agent", "claude-code"),
        "exec",
    );
    e.session_id = Some(format!("{host}/session-{}", n / 30));
    e.verdict = Some("allow".into());
    e.call_id = Some(format!("{host}/call-{n}"));
    e
}

/// What one host has done so far: its local chain (shipped to the fleet) and a counter for
/// distinct alerts.
struct Host {
    name: &'static str,
    local: MemoryLedger,
    shipped: usize,
    alerts: u64,
}

impl Host {
    fn new(name: &'static str) -> Host {
        Host {
            name,
            local: MemoryLedger::new(),
            shipped: 0,
            alerts: 0,
        }
    }

    /// One intake batch of `n` distinct alerts as the daemon writes it: arrivals stored,
    /// tasks offered, records chained locally and shipped, arrivals settled; every second
    /// alert of the batch then resolves (its task cancelled), as most alerts do.
    fn intake(&mut self, stores: &PgStores, n: usize, now: i64) {
        let first = self.alerts;
        self.alerts += n as u64;
        let ids: Vec<String> = (first..self.alerts)
            .map(|a| format!("{}/alert-{a}", self.name))
            .collect();
        let arrivals: Vec<Arrival<'_>> = ids
            .iter()
            .map(|id| Arrival {
                received_ms: now,
                source: "alertmanager",
                alert_id: id,
                status: "firing",
                title: "DiskFull",
                host: Some(self.name),
                alert_json: "{\"labels\":{\"alertname\":\"DiskFull\"}}",
            })
            .collect();
        let inbox = stores.inbox();
        let arrived = inbox.receive(&arrivals).unwrap();
        let queue = stores.task_queue(Policy::default());
        let offers: Vec<QueueOp<'_>> = ids
            .iter()
            .zip(&arrived)
            .map(|(id, arrival)| {
                QueueOp::Offer(Offer {
                    arrival: Some(*arrival),
                    ..Offer::plain(id, "{}", "disk")
                })
            })
            .collect();
        let answers = queue.apply(&offers, now).unwrap();
        assert_eq!(answers.len(), n);
        let records: Vec<Record> = (first..self.alerts)
            .map(|a| self.local.append(entry(self.name, a)).unwrap())
            .collect();
        self.ship(stores, now);
        let settlements: Vec<Settlement<'_>> = arrived
            .iter()
            .zip(&records)
            .map(|(arrival, record)| Settlement {
                arrival: *arrival,
                disposition: Disposition::Routed,
                reason: "route disk",
                route: Some("disk"),
                task_id: None,
                record: &record.id,
            })
            .collect();
        inbox.settle(&settlements).unwrap();
        let resolves: Vec<QueueOp<'_>> = ids
            .iter()
            .step_by(2)
            .map(|identity| QueueOp::Resolve { identity })
            .collect();
        queue.apply(&resolves, now + 1).unwrap();
    }

    fn ship(&mut self, stores: &PgStores, now: i64) {
        let all = self.local.query(&Filter::default()).unwrap();
        let head = all.last().map(|r| (r.seq, r.hash.clone()));
        let fleet = stores.fleet();
        fleet
            .ship(self.name, &all[self.shipped..], head, now)
            .unwrap();
        self.shipped = all.len();
    }
}

/// History: `batches` intake batches of 50 alerts on every host, a chain appended in the
/// database, and some tasks run to their end.
fn fill(
    stores: &[PgStores],
    admin: &mut postgres::Client,
    hosts: &mut [Host],
    batches: usize,
    now: &mut i64,
) {
    for batch in 0..batches {
        if batch % 10 == 9 {
            // What autovacuum does to the churning count deltas about once a minute.
            admin.batch_execute("VACUUM task_counts").unwrap();
        }
        for (stores, host) in stores.iter().zip(hosts.iter_mut()) {
            host.intake(stores, 50, *now);
        }
        let own = stores[0].ledger_of(OWN_CHAIN);
        own.append_all((0..50).map(|n| entry(OWN_CHAIN, n)).collect())
            .unwrap();
        let queue = stores[0].task_queue(Policy::default());
        // Each daemon's housekeeping after its batches.
        for stores in stores {
            stores
                .task_queue(Policy::default())
                .take_escalations(*now)
                .unwrap();
        }
        for _ in 0..3 {
            if let Some(claim) = queue.claim("filler", *now, 60_000).unwrap() {
                queue
                    .complete(claim.task_id, claim.attempt, &Outcome::Succeeded, *now + 1)
                    .unwrap();
            }
        }
        *now += 1_000;
    }
}

/// What a daemon of `probe`'s host does, and what its pages and `fleet status` read.
fn probe(probe: &PgStores, admin: &mut postgres::Client, host: &mut Host, now: i64) -> Costs {
    // The count deltas' table churns: a row per task change, folded away every few hundred
    // writes. Autovacuum keeps its dead rows to about a minute's worth, which a test filled
    // in seconds never sees; this stands in for it (and touches no other table's plans), as
    // in `fill`.
    admin.batch_execute("VACUUM task_counts").unwrap();
    take_plans();
    host.intake(probe, 8, now);
    let inbox = probe.inbox();
    inbox.unrecorded(100).unwrap();
    let queue = probe.task_queue(Policy::default());
    let claim = queue.claim("probe-worker", now, 60_000).unwrap().unwrap();
    queue
        .heartbeat(claim.task_id, claim.attempt, now + 1, 60_000)
        .unwrap();
    queue
        .complete(claim.task_id, claim.attempt, &Outcome::Succeeded, now + 2)
        .unwrap();
    let routes = vec!["disk".to_string()];
    queue
        .claim_for("probe-worker", Some(&routes), now, 60_000)
        .unwrap();
    queue.take_escalations(now).unwrap();
    queue.counts().unwrap();
    queue.oldest_ready(now).unwrap();
    queue.task(claim.task_id).unwrap();
    queue.events(claim.task_id).unwrap();
    let page = TaskFilter {
        limit: Some(50),
        ..TaskFilter::default()
    };
    queue.tasks(&page).unwrap();
    queue
        .tasks(&TaskFilter {
            after: Some(claim.task_id),
            ..page.clone()
        })
        .unwrap();
    queue.active_between(now - 60_000, now, None, 50).unwrap();
    inbox.after(1, 50).unwrap();
    inbox.between(now - 60_000, now + 1, None, 50).unwrap();
    inbox.for_alert(&format!("{}/alert-7", host.name)).unwrap();
    let fleet_inbox = probe.fleet_inbox();
    fleet_inbox
        .between(None, now - 60_000, now + 1, None, 50)
        .unwrap();
    fleet_inbox
        .after(Some("web-2"), &ArrivalCursor::end(), 50)
        .unwrap();
    // One host's page in a busy fleet, the host itself quiet: "what happened on db-1?"
    fleet_inbox
        .between(Some(QUIET), now - 60_000, now + 1, None, 50)
        .unwrap();
    fleet_inbox
        .after(Some(QUIET), &ArrivalCursor::end(), 50)
        .unwrap();
    let fleet = probe.fleet();
    let newest = Filter {
        limit: Some(50),
        ..Filter::default()
    };
    fleet.records(None, &newest, None).unwrap();
    fleet.records(Some("web-2"), &newest, None).unwrap();
    fleet.records(Some(QUIET), &newest, None).unwrap();
    // A session's, an alert's and the denials' records across the fleet, and one host's.
    for filter in [
        Filter {
            session: Some(format!("{}/session-3", host.name)),
            ..newest.clone()
        },
        Filter {
            alert: Some(format!("{}/alert-9", host.name)),
            ..newest.clone()
        },
        Filter {
            verdict: Some("deny".into()),
            ..newest.clone()
        },
    ] {
        fleet.records(None, &filter, None).unwrap();
        fleet.records(Some(host.name), &filter, None).unwrap();
    }
    for prefix in [format!("{QUIET}-"), "filler".to_string()] {
        queue
            .tasks(&TaskFilter {
                worker_prefix: Some(prefix),
                ..page.clone()
            })
            .unwrap();
    }
    // "What failed tonight?": a status few tasks have, and one most have.
    for status in [Status::GaveUp, Status::Done, Status::Cancelled] {
        queue
            .tasks(&TaskFilter {
                status: Some(status),
                ..page.clone()
            })
            .unwrap();
    }
    fleet.shipped(host.name).unwrap();
    // `nightwatch fleet status`.
    fleet.hosts().unwrap();
    probe.leases().list().unwrap();
    let own = probe.ledger_of(OWN_CHAIN);
    own.append_all((0..8).map(|n| entry(OWN_CHAIN, n)).collect())
        .unwrap();
    own.query(&newest).unwrap();
    let leases = probe.leases();
    leases.acquire("sweep", host.name, 60_000, now).unwrap();
    take_plans()
}

#[test]
fn no_statement_on_a_daemons_path_costs_more_as_history_grows() {
    log::set_logger(&CAPTURE).unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let server = support::own_server();
    let db = server.database();
    let stores: Vec<PgStores> = HOSTS
        .iter()
        .map(|h| PgStores::connect(&db.url, h).unwrap())
        .collect();
    let mut hosts: Vec<Host> = HOSTS.iter().map(|h| Host::new(h)).collect();
    let mut now = T0;
    let quiet = PgStores::connect(&db.url, QUIET).unwrap();
    Host::new(QUIET).intake(&quiet, 8, now);
    let queue = quiet.task_queue(Policy::default());
    for n in 0..3 {
        let claim = queue
            .claim(&format!("{QUIET}-worker-{n}"), now, 60_000)
            .unwrap()
            .unwrap();
        queue
            .complete(claim.task_id, claim.attempt, &Outcome::Succeeded, now)
            .unwrap();
    }
    now += 1_000;

    let mut admin = server.client(&db);
    // Stale means stale: no autovacuum analyzing the tables as they grow, which would make
    // the cached plans new ones (this binary's cluster is this test's alone).
    admin
        .batch_execute("ALTER SYSTEM SET autovacuum = off")
        .unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    fill(&stores, &mut admin, &mut hosts, 10, &mut now);
    admin.batch_execute("ANALYZE").unwrap();
    admin
        .batch_execute(&format!(
            "ALTER DATABASE \"{name}\" SET session_preload_libraries = 'auto_explain';
             ALTER DATABASE \"{name}\" SET auto_explain.log_min_duration = 0;
             ALTER DATABASE \"{name}\" SET auto_explain.log_analyze = on;
             ALTER DATABASE \"{name}\" SET auto_explain.log_buffers = on;
             ALTER DATABASE \"{name}\" SET auto_explain.log_timing = off;
             ALTER DATABASE \"{name}\" SET auto_explain.log_format = json;
             ALTER DATABASE \"{name}\" SET auto_explain.log_level = notice;
             ALTER DATABASE \"{name}\" SET auto_explain.log_nested_statements = on;
             ALTER DATABASE \"{name}\" SET plan_cache_mode = force_generic_plan;",
            name = db.name
        ))
        .unwrap();

    // One connection, so that the second probe meets the plans the first one cached.
    let one_connection = || PgOptions {
        max_connections: 1,
        ..PgOptions::default()
    };
    let watched = PgStores::connect_with(&db.url, "web-1", one_connection()).unwrap();
    let small = probe(&watched, &mut admin, &mut hosts[0], now);
    assert!(
        [
            "INSERT INTO tasks",
            "INSERT INTO alert_settlements",
            "INSERT INTO ledger_records",
            "FOR UPDATE SKIP LOCKED",
        ]
        .iter()
        .all(|part| small.keys().any(|q| q.contains(part))),
        "the probe's plans were captured: {:#?}",
        small.keys().collect::<Vec<_>>()
    );

    fill(&stores, &mut admin, &mut hosts, 100, &mut now);
    let stale = probe(&watched, &mut admin, &mut hosts[0], now);
    admin.batch_execute("ANALYZE").unwrap();
    let fresh = probe(
        &PgStores::connect_with(&db.url, "web-1", one_connection()).unwrap(),
        &mut admin,
        &mut hosts[0],
        now,
    );

    let mut grew = Vec::new();
    let mut compared = 0;
    for (query, (before, _)) in &small {
        for (when, costs) in [("cached plan", &stale), ("fresh plan", &fresh)] {
            if let Some((after, plan)) = costs.get(query) {
                compared += 1;
                eprintln!("{when}: {before} -> {after} buffers: {query:.100}");
                // Ten times the rows adds at most a level or two to each B-tree a statement
                // descends; a walk over history grows with it.
                if *after > before * 2 + 24 {
                    grew.push(format!(
                        "{when}: {before} -> {after} buffers: {query}\n{}",
                        serde_json::to_string_pretty(plan).unwrap()
                    ));
                }
            }
        }
    }
    assert!(
        compared >= 60,
        "most of the probe's statements ran with both histories ({compared} comparisons)"
    );
    assert!(
        grew.is_empty(),
        "{} statements cost more with ten times the history:\n{}",
        grew.len(),
        grew.join("\n\n")
    );
}
