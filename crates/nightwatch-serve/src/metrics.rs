//! Prometheus metrics, in the text exposition format at `/metrics`.
//!
//! Counters are kept in process (they restart at zero with the daemon, as Prometheus expects);
//! the gauges (tasks by state, queue age) are read from the task store at each scrape, so they
//! are true across restarts.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub endpoint: String,
    pub code: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceReason {
    pub source: String,
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DispositionLabel {
    pub disposition: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerdictLabel {
    pub verdict: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WatcherLabel {
    pub watcher: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AppLabel {
    pub app: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AppStateLabel {
    pub app: String,
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AppAnswerLabel {
    pub app: String,
    /// `forwarded` (to the app), `kept` (its kept readiness answer) or `refused` (503).
    pub answer: String,
}

/// How a request to an app under idle control can be answered.
const IDLE_ANSWERS: [&str; 3] = ["forwarded", "kept", "refused"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AppTrafficLabel {
    pub app: String,
    /// `person`, or the robot's kind (`monitor`, `crawler`, `polling`, ...).
    pub traffic: String,
}

/// Wake latency buckets, seconds: an unpause takes milliseconds, a start seconds.
const WAKE_BUCKETS: [f64; 10] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0];

pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    rejects: Family<SourceReason, Counter>,
    dispositions: Family<DispositionLabel, Counter>,
    decisions: Family<VerdictLabel, Counter>,
    runbooks: Family<OutcomeLabel, Counter>,
    claims: Counter,
    escalations: Counter,
    sweeps: Family<OutcomeLabel, Counter>,
    tasks: Family<StateLabel, Gauge>,
    queue_age: Gauge<f64, AtomicU64>,
    shipped: Counter,
    ship_failures: Counter,
    ship_behind: Gauge,
    idle_state: Family<AppStateLabel, Gauge>,
    idle_wakes: Family<AppLabel, Counter>,
    idle_wake_seconds: Family<AppLabel, Histogram>,
    idle_requests: Family<AppTrafficLabel, Counter>,
    idle_answers: Family<AppAnswerLabel, Counter>,
    watch_runs: Family<WatcherLabel, Counter>,
    watch_seconds: Family<WatcherLabel, Counter<f64, AtomicU64>>,
    heartbeats: Family<OutcomeLabel, Counter>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("nightwatch");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by endpoint and status code",
            requests.clone(),
        );
        let rejects = Family::<SourceReason, Counter>::default();
        registry.register(
            "webhook_rejects",
            "Webhook requests refused (unauthorized, unparseable, too_large, storage)",
            rejects.clone(),
        );
        let dispositions = Family::<DispositionLabel, Counter>::default();
        registry.register(
            "alerts",
            "Alerts received, by what the dispatcher did with them",
            dispositions.clone(),
        );
        let decisions = Family::<VerdictLabel, Counter>::default();
        registry.register(
            "decisions",
            "Decisions recorded in the ledger since the daemon started (hooks, exec, janitor, runbooks), by verdict",
            decisions.clone(),
        );
        let runbooks = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "runbooks",
            "Runbook runs that ended, by outcome",
            runbooks.clone(),
        );
        let claims = Counter::default();
        registry.register("task_claims", "Tasks claimed by a worker", claims.clone());
        let escalations = Counter::default();
        registry.register(
            "escalations",
            "Tasks that gave up and were handed to a person",
            escalations.clone(),
        );
        let sweeps = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "sweeps",
            "Scheduled janitor sweeps, by outcome",
            sweeps.clone(),
        );
        let tasks = Family::<StateLabel, Gauge>::default();
        registry.register(
            "tasks",
            "Tasks in the queue, by state (read at scrape time)",
            tasks.clone(),
        );
        let queue_age = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "queue_age_seconds",
            "How long the longest-waiting claimable task has waited (0 when none waits)",
            queue_age.clone(),
        );
        let shipped = Counter::default();
        registry.register(
            "fleet_shipped_records",
            "Records of this host's ledger shipped to the fleet store",
            shipped.clone(),
        );
        let ship_failures = Counter::default();
        registry.register(
            "fleet_ship_failures",
            "Rounds of shipping to the fleet store that failed (the records wait here)",
            ship_failures.clone(),
        );
        let ship_behind = Gauge::default();
        registry.register(
            "fleet_ship_behind_records",
            "Records of this host's ledger the fleet store did not hold after the last round",
            ship_behind.clone(),
        );
        let idle_state = Family::<AppStateLabel, Gauge>::default();
        registry.register(
            "idle_app_state",
            "Apps under idle control: 1 for the state each app is in, 0 for the others",
            idle_state.clone(),
        );
        let idle_wakes = Family::<AppLabel, Counter>::default();
        registry.register(
            "idle_wakes",
            "Apps woken by the idle controller (for a person's request, or to recover)",
            idle_wakes.clone(),
        );
        let idle_wake_seconds = Family::<AppLabel, Histogram>::new_with_constructor(
            (|| Histogram::new(WAKE_BUCKETS)) as fn() -> Histogram,
        );
        registry.register(
            "idle_wake_seconds",
            "From the wake's start to the app's readiness check passing",
            idle_wake_seconds.clone(),
        );
        let idle_requests = Family::<AppTrafficLabel, Counter>::default();
        registry.register(
            "idle_requests",
            "Requests to apps under idle control, by who asked: person, or the robot's kind",
            idle_requests.clone(),
        );
        let idle_answers = Family::<AppAnswerLabel, Counter>::default();
        registry.register(
            "idle_answers",
            "Requests to apps under idle control, by how they were answered: forwarded to the app, the kept readiness answer (a robot's health check while it slept), or refused with 503",
            idle_answers.clone(),
        );
        let watch_runs = Family::<WatcherLabel, Counter>::default();
        registry.register("watch_runs", "Runs of each watcher", watch_runs.clone());
        let watch_seconds = Family::<WatcherLabel, Counter<f64, AtomicU64>>::default();
        registry.register(
            "watch_run_seconds",
            "Time spent in each watcher's runs, seconds",
            watch_seconds.clone(),
        );
        let heartbeats = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "heartbeats",
            "Heartbeats: sent, withheld (nightwatch unhealthy) or failed (the monitor did not take it)",
            heartbeats.clone(),
        );
        // Every series an alert rule may watch exists from the start, at zero: `rate()` over a
        // series that appears only on its first event misses that event.
        for d in crate::inbox::Disposition::ALL {
            let _ = dispositions.get_or_create(&DispositionLabel {
                disposition: d.as_str().into(),
            });
        }
        for verdict in ["allow", "ask", "deny", "halt"] {
            let _ = decisions.get_or_create(&VerdictLabel {
                verdict: verdict.into(),
            });
        }
        for outcome in ["succeeded", "failed"] {
            let _ = runbooks.get_or_create(&OutcomeLabel {
                outcome: outcome.into(),
            });
        }
        for source in ["uptime-kuma", "alertmanager"] {
            for reason in [
                "unauthorized",
                "unparseable",
                "too_large",
                "timeout",
                "storage",
            ] {
                let _ = rejects.get_or_create(&SourceReason {
                    source: source.into(),
                    reason: reason.into(),
                });
            }
        }
        Metrics {
            registry,
            requests,
            rejects,
            dispositions,
            decisions,
            runbooks,
            claims,
            escalations,
            sweeps,
            tasks,
            queue_age,
            shipped,
            ship_failures,
            ship_behind,
            idle_state,
            idle_wakes,
            idle_wake_seconds,
            idle_requests,
            idle_answers,
            watch_runs,
            watch_seconds,
            heartbeats,
        }
    }

    /// A watcher's run ended, taking `took`.
    pub fn watched(&self, watcher: &str, took: std::time::Duration) {
        let label = WatcherLabel {
            watcher: watcher.to_owned(),
        };
        self.watch_runs.get_or_create(&label).inc();
        self.watch_seconds
            .get_or_create(&label)
            .inc_by(took.as_secs_f64());
    }

    /// A heartbeat `sent`, `withheld` or `failed`.
    pub fn heartbeat(&self, outcome: &str) {
        self.heartbeats
            .get_or_create(&OutcomeLabel {
                outcome: outcome.to_owned(),
            })
            .inc();
    }

    /// A request to an app under idle control, by who asked.
    pub fn idle_request(&self, app: &str, traffic: &nightwatch_idle::Traffic) {
        let traffic = match traffic {
            nightwatch_idle::Traffic::Person => "person",
            nightwatch_idle::Traffic::Robot { kind, .. } => kind.as_str(),
        };
        self.idle_requests
            .get_or_create(&AppTrafficLabel {
                app: app.to_owned(),
                traffic: traffic.to_owned(),
            })
            .inc();
    }

    /// How a request to an app under idle control was answered (`forwarded`, `kept`,
    /// `refused`).
    pub fn idle_answer(&self, app: &str, answer: &str) {
        self.idle_answers
            .get_or_create(&AppAnswerLabel {
                app: app.to_owned(),
                answer: answer.to_owned(),
            })
            .inc();
    }

    /// An app woke, taking `took`.
    pub fn idle_woke(&self, app: &str, took: std::time::Duration) {
        let label = AppLabel {
            app: app.to_owned(),
        };
        self.idle_wakes.get_or_create(&label).inc();
        self.idle_wake_seconds
            .get_or_create(&label)
            .observe(took.as_secs_f64());
    }

    /// Sets each app's state gauge (at scrape time).
    pub fn idle_phases(&self, phases: &[(String, nightwatch_idle::Phase)]) {
        for (app, now) in phases {
            for phase in nightwatch_idle::Phase::ALL {
                self.idle_state
                    .get_or_create(&AppStateLabel {
                        app: app.clone(),
                        state: phase.as_str().to_owned(),
                    })
                    .set(i64::from(phase == *now));
            }
            let _ = self
                .idle_wakes
                .get_or_create(&AppLabel { app: app.clone() });
            // Every kind of traffic exists from the first scrape, at zero, as the other series.
            let kinds = nightwatch_idle::RobotKind::ALL.map(nightwatch_idle::RobotKind::as_str);
            for traffic in std::iter::once("person").chain(kinds) {
                let _ = self.idle_requests.get_or_create(&AppTrafficLabel {
                    app: app.clone(),
                    traffic: traffic.into(),
                });
            }
            for answer in IDLE_ANSWERS {
                let _ = self.idle_answers.get_or_create(&AppAnswerLabel {
                    app: app.clone(),
                    answer: answer.into(),
                });
            }
        }
    }

    pub fn request(&self, endpoint: &str, code: u16) {
        self.requests
            .get_or_create(&RequestLabels {
                endpoint: endpoint.to_owned(),
                code,
            })
            .inc();
    }

    pub fn reject(&self, source: &str, reason: &str) {
        self.rejects
            .get_or_create(&SourceReason {
                source: source.to_owned(),
                reason: reason.to_owned(),
            })
            .inc();
    }

    pub fn disposition(&self, d: crate::inbox::Disposition) {
        self.dispositions
            .get_or_create(&DispositionLabel {
                disposition: d.as_str().to_owned(),
            })
            .inc();
    }

    pub fn decision(&self, verdict: &str) {
        self.decisions
            .get_or_create(&VerdictLabel {
                verdict: verdict.to_owned(),
            })
            .inc();
    }

    pub fn runbook(&self, succeeded: bool) {
        let name = if succeeded { "succeeded" } else { "failed" };
        self.runbooks
            .get_or_create(&OutcomeLabel {
                outcome: name.into(),
            })
            .inc();
    }

    pub fn claimed(&self) {
        self.claims.inc();
    }

    pub fn escalated(&self) {
        self.escalations.inc();
    }

    /// A round of shipping to the fleet store: records shipped, and how many still wait.
    pub fn shipped(&self, records: usize, behind: u64) {
        self.shipped.inc_by(records as u64);
        self.ship_behind
            .set(i64::try_from(behind).unwrap_or(i64::MAX));
    }

    pub fn ship_failed(&self) {
        self.ship_failures.inc();
    }

    pub fn sweep(&self, ok: bool) {
        let name = if ok { "ran" } else { "failed" };
        self.sweeps
            .get_or_create(&OutcomeLabel {
                outcome: name.into(),
            })
            .inc();
    }

    /// Sets the gauges from the store and renders everything.
    pub fn render(&self, counts: &[(nightwatch_tasks::Status, i64)], queue_age_s: f64) -> String {
        for status in nightwatch_tasks::Status::ALL {
            let n = counts
                .iter()
                .find(|(s, _)| *s == status)
                .map_or(0, |(_, n)| *n);
            self.tasks
                .get_or_create(&StateLabel {
                    state: status.as_str().to_owned(),
                })
                .set(n);
        }
        self.queue_age.set(queue_age_s);
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_has_every_family_with_its_values() {
        let m = Metrics::new();
        m.request("/hooks/alertmanager", 200);
        m.reject("alertmanager", "unauthorized");
        m.disposition(crate::inbox::Disposition::Routed);
        m.decision("allow");
        let text = m.render(&[(nightwatch_tasks::Status::Pending, 3)], 1.5);
        for line in [
            "nightwatch_http_requests_total{endpoint=\"/hooks/alertmanager\",code=\"200\"} 1",
            "nightwatch_webhook_rejects_total{source=\"alertmanager\",reason=\"unauthorized\"} 1",
            "nightwatch_alerts_total{disposition=\"routed\"} 1",
            "nightwatch_decisions_total{verdict=\"allow\"} 1",
            "nightwatch_tasks{state=\"pending\"} 3",
            "nightwatch_tasks{state=\"gave_up\"} 0",
            "nightwatch_queue_age_seconds 1.5",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn an_idle_apps_series_exist_from_the_first_scrape_and_count_by_who_asked() {
        let m = Metrics::new();
        m.idle_phases(&[("shop".into(), nightwatch_idle::Phase::Asleep)]);
        m.idle_request(
            "shop",
            &nightwatch_idle::Traffic::Robot {
                kind: nightwatch_idle::RobotKind::Monitor,
                why: "Uptime Kuma".into(),
            },
        );
        m.idle_answer("shop", "refused");
        m.idle_woke("shop", std::time::Duration::from_millis(15));
        let text = m.render(&[], 0.0);
        for line in [
            "nightwatch_idle_app_state{app=\"shop\",state=\"asleep\"} 1",
            "nightwatch_idle_app_state{app=\"shop\",state=\"awake\"} 0",
            "nightwatch_idle_requests_total{app=\"shop\",traffic=\"monitor\"} 1",
            "nightwatch_idle_requests_total{app=\"shop\",traffic=\"polling\"} 0",
            "nightwatch_idle_requests_total{app=\"shop\",traffic=\"person\"} 0",
            "nightwatch_idle_answers_total{app=\"shop\",answer=\"refused\"} 1",
            "nightwatch_idle_answers_total{app=\"shop\",answer=\"kept\"} 0",
            "nightwatch_idle_wakes_total{app=\"shop\"} 1",
            "nightwatch_idle_wake_seconds_count{app=\"shop\"} 1",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }
}
