//! The idle controller: one more actor. It watches each app's traffic (through the proxy or
//! forward-auth) and signals, and when an app has been idle for its `idle_after` it proposes
//! `suspend_app` through the daemon's engine; a person's request to a sleeping app proposes
//! `wake_app`. Policy can refuse either and a pre-flight check can veto a suspend; the
//! decision is recorded whether it acts or not, and every state flip is an `idle` record.
//!
//! Concurrency: each app has one step lock (`steps`), so a suspend, a wake and a recovery
//! never overlap; requests wait on the phase (`phase`, a watch channel) without holding it.
//! State (`AppState`, the classifier, the last readiness answer) sits behind a plain mutex
//! held for a few lines, never across an await. Store calls (proposals, records) run on the
//! blocking pool, as every store call in the daemon does.
//!
//! Every step against the engine has `step_timeout`; a step that fails or times out is undone
//! (a pause that hung is resumed, then the readiness check must pass) and recorded. The
//! controller never deletes a container or a volume.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nightwatch_core::{Action, Actor, ActorKind, Context, Tool, Verdict};
use nightwatch_gate::{Event, IDLE_CONTROLLER, Proposal};
use nightwatch_idle::{
    Admission, AppSpec, AppState, Classifier, Due, Observed, PersonSeen, Phase, Refusal, Request,
    Runtime, SignalSeen, Traffic,
};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::ready::{self, ReadyAnswer};
use crate::Daemon;

/// How often each app is looked at (signals, idle time, recovery).
pub const TICK: Duration = Duration::from_secs(1);
/// How often an awake app's readiness answer is refreshed (what robots get while it sleeps).
const READY_REFRESH: Duration = Duration::from_secs(30);
/// The most of a request's path or user agent a record keeps.
const MAX_KEPT_TEXT: usize = 200;
/// Between readiness checks while an app wakes.
const WAKE_POLL: Duration = Duration::from_millis(50);
/// How long an awake app has to answer a health check `/idle/health` passes on.
const LIVE_HEALTH: Duration = Duration::from_secs(10);

/// A request, as the proxy or forward-auth saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub user_agent: Option<String>,
    pub client: std::net::IpAddr,
}

/// What to do with a request.
#[derive(Debug)]
pub enum Admit {
    /// The app is awake (or was woken for this request): forward it.
    Forward,
    /// A robot's health check while the app sleeps: the kept readiness answer (`None`: none
    /// was kept, so 503).
    Kept(Option<ReadyAnswer>),
    /// Not forwarded, and why: 503 with `Retry-After`, marked `X-Nightwatch-Asleep` when the
    /// app sleeps.
    Unavailable {
        why: String,
        retry_after: u64,
        asleep: bool,
    },
}

impl Admit {
    /// How it was answered, for `/metrics`: forwarded, kept or refused.
    pub fn as_str(&self) -> &'static str {
        match self {
            Admit::Forward => "forwarded",
            Admit::Kept(Some(_)) => "kept",
            Admit::Kept(None) | Admit::Unavailable { .. } => "refused",
        }
    }
}

/// What `/idle/health` gives a health check of an app: never a wake.
#[derive(Debug)]
pub enum Health {
    /// The app is awake: its own answer to the health check, now.
    Live(ReadyAnswer),
    /// Otherwise what a robot's health check through the proxy gets.
    Answer(Admit),
}

/// One app under control.
pub struct AppControl {
    pub spec: AppSpec,
    inner: Mutex<Inner>,
    /// One step at a time: suspend, wake, recover.
    steps: tokio::sync::Mutex<()>,
    phase: watch::Sender<Phase>,
}

struct Inner {
    state: AppState,
    classifier: Classifier,
    last_ready: Option<ReadyAnswer>,
    ready_checked: Option<Instant>,
}

/// Every app's controller, and what they share.
pub struct IdleControl {
    pub apps: Vec<Arc<AppControl>>,
    runtime: Arc<dyn Runtime>,
    /// The zero of the controller's monotonic milliseconds.
    base: Instant,
}

impl IdleControl {
    pub fn new(specs: Vec<AppSpec>, runtime: Arc<dyn Runtime>) -> IdleControl {
        let apps = specs
            .into_iter()
            .map(|spec| {
                Arc::new(AppControl {
                    spec,
                    inner: Mutex::new(Inner {
                        state: AppState::found(Phase::Waking, "not looked at yet", 0, 0),
                        classifier: Classifier::new(),
                        last_ready: None,
                        ready_checked: None,
                    }),
                    steps: tokio::sync::Mutex::new(()),
                    phase: watch::channel(Phase::Waking).0,
                })
            })
            .collect();
        IdleControl {
            apps,
            runtime,
            base: Instant::now(),
        }
    }

    pub fn app(&self, name: &str) -> Option<&Arc<AppControl>> {
        self.apps.iter().find(|a| a.spec.name == name)
    }

    /// The app a request's host names (forward-auth).
    pub fn app_for_host(&self, host: &str) -> Option<&Arc<AppControl>> {
        self.apps.iter().find(|a| a.spec.answers_to(host))
    }

    fn mono(&self) -> u64 {
        self.base.elapsed().as_millis() as u64
    }

    /// Finds each app's real state (after a start, or a restart that a crash cut mid-wake)
    /// and records it.
    pub async fn find_states(&self, daemon: &Arc<Daemon>) {
        for app in &self.apps {
            let _step = app.steps.lock().await;
            let observed = self.observe(app).await;
            let (phase, why) = match &observed {
                Ok(Observed::Running) => {
                    match ready::check(app.spec.upstream, &app.spec.ready, app.spec.step_timeout)
                        .await
                    {
                        Ok(answer) => {
                            app.keep_ready(answer);
                            (
                                Phase::Awake,
                                "found running, and its readiness check passes".to_owned(),
                            )
                        }
                        Err(why) => (
                            Phase::HalfAwake,
                            format!("found running, but its readiness check fails: {why}"),
                        ),
                    }
                }
                Ok(Observed::Paused) => (Phase::Asleep, "found paused".to_owned()),
                Ok(Observed::Stopped) => (Phase::Asleep, "found stopped".to_owned()),
                Ok(Observed::Missing) => (
                    Phase::Failed,
                    format!("{} not found", app.spec.target.describe()),
                ),
                Ok(Observed::Mixed(how)) => (Phase::Failed, format!("found half started: {how}")),
                Err(why) => (Phase::Failed, format!("cannot see it: {why}")),
            };
            let now_ms = daemon.now_ms();
            let details = {
                let mut inner = app.lock();
                inner.state = AppState::found(phase, why.clone(), now_ms, self.mono());
                json!({ "found": observed.as_ref().map(|o| o.as_str().to_owned()).unwrap_or_else(|e| e.clone()) })
            };
            app.phase.send_replace(phase);
            record(
                daemon,
                &app.spec,
                "unknown",
                phase,
                details,
                format!("the controller started: {why}"),
                Vec::new(),
            )
            .await;
        }
    }

    /// Looks at every app each [`TICK`] until the daemon shuts down.
    pub async fn run(self: Arc<Self>, daemon: Arc<Daemon>) {
        self.find_states(&daemon).await;
        let mut ticks = tokio::time::interval(TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !daemon.is_shutting_down() {
            ticks.tick().await;
            for app in &self.apps {
                // An app busy with a step is looked at on a later tick.
                if let Ok(step) = app.steps.try_lock() {
                    self.tick(&daemon, app).await;
                    drop(step);
                }
            }
        }
    }

    async fn tick(&self, daemon: &Arc<Daemon>, app: &Arc<AppControl>) {
        let (phase, backing_off) = {
            let inner = app.lock();
            (inner.state.phase, self.mono() < inner.state.not_before_mono)
        };
        if backing_off {
            if phase == Phase::Awake {
                self.refresh_ready(app).await;
            }
            return;
        }
        let signals = if phase == Phase::Awake && !app.spec.signals.is_empty() {
            match self.signals(app).await {
                Ok(seen) => seen,
                Err(why) => {
                    // Signals that cannot be read must not let the app sleep under someone;
                    // declining is recorded, at most once per `failures.initial`.
                    let now = self.mono();
                    app.lock().state.declined(app.spec.failures.initial, now);
                    record(
                        daemon,
                        &app.spec,
                        phase.as_str(),
                        phase,
                        json!({}),
                        format!(
                            "not suspended: its signals cannot be read ({why}); looked at again in {}",
                            nightwatch_time::format_duration(app.spec.failures.initial)
                        ),
                        Vec::new(),
                    )
                    .await;
                    return;
                }
            }
        } else {
            Vec::new()
        };
        let on: Vec<(String, bool)> = signals
            .iter()
            .filter(|s| s.count > 0)
            .map(|s| (s.name.clone(), s.activity))
            .collect();
        let now = self.mono();
        let due = app.lock().state.due(&app.spec, &on, now);
        if !matches!(due, Due::Held { .. }) {
            app.lock().state.held_by.clear();
        }
        match due {
            Due::Wait => {
                if phase == Phase::Awake {
                    self.refresh_ready(app).await;
                }
            }
            Due::Held { by } => {
                let changed = {
                    let mut inner = app.lock();
                    inner.state.active_mono = now;
                    let changed = inner.state.held_by != by;
                    inner.state.held_by = by.clone();
                    changed
                };
                if changed {
                    let details = json!({ "signals": signals_json(&signals) });
                    record(
                        daemon,
                        &app.spec,
                        phase.as_str(),
                        phase,
                        details,
                        format!("kept awake by {}", by.join(", ")),
                        Vec::new(),
                    )
                    .await;
                }
            }
            Due::Suspend { idle_for } => self.suspend(daemon, app, idle_for, &signals).await,
            Due::Recover => {
                let _ = self.wake(daemon, app, None).await;
            }
        }
    }

    async fn refresh_ready(&self, app: &Arc<AppControl>) {
        let stale = app
            .lock()
            .ready_checked
            .is_none_or(|at| at.elapsed() >= READY_REFRESH);
        if stale
            && let Ok(answer) =
                ready::check(app.spec.upstream, &app.spec.ready, app.spec.step_timeout).await
        {
            app.keep_ready(answer);
        }
    }

    /// Proposes the suspend; when allowed, suspends within `step_timeout`, undoing a step
    /// that failed or timed out.
    async fn suspend(
        &self,
        daemon: &Arc<Daemon>,
        app: &Arc<AppControl>,
        idle_for: Duration,
        signals: &[SignalSeen],
    ) {
        let spec = &app.spec;
        let (last_person, seen) = {
            let inner = app.lock();
            (inner.state.last_person.clone(), inner.state.seen.clone())
        };
        let inputs = json!({
            "app": spec.name,
            "target": spec.target.describe(),
            "mode": spec.suspend.as_str(),
            "idle_for_s": idle_for.as_secs(),
            "last_person": last_person,
            "seen": seen,
            "signals": signals_json(signals),
        });
        let decided = match propose(daemon, spec, "suspend_app", inputs, "idle").await {
            Ok(d) => d,
            Err(why) => {
                tracing::error!("idle: {}: the suspend was not decided: {why}", spec.name);
                app.lock()
                    .state
                    .declined(spec.failures.initial, self.mono());
                return;
            }
        };
        if decided.verdict != Verdict::Allow {
            // The decision record (with the checks' findings) says why; it stays awake and is
            // proposed again after `failures.initial`, not every tick.
            app.lock()
                .state
                .declined(spec.failures.initial, self.mono());
            return;
        }
        let now_ms = daemon.now_ms();
        app.flip(
            Phase::Suspending,
            "idle, and the suspend was allowed",
            now_ms,
        );
        let started = Instant::now();
        let outcome = tokio::time::timeout(
            spec.step_timeout,
            self.runtime.suspend(&spec.target, spec.suspend),
        )
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "{} did not finish within {}",
                spec.suspend.as_str(),
                nightwatch_time::format_duration(spec.step_timeout)
            ))
        });
        let verified = match outcome {
            Ok(()) => match self.observe(app).await {
                Ok(Observed::Paused) | Ok(Observed::Stopped) => Ok(()),
                Ok(other) => Err(format!(
                    "after the {}, the engine says it is {}",
                    spec.suspend.as_str(),
                    other.as_str()
                )),
                Err(why) => Err(why),
            },
            Err(why) => Err(why),
        };
        let took = started.elapsed();
        match verified {
            Ok(()) => {
                let why = format!(
                    "{} after {} idle",
                    match spec.suspend {
                        nightwatch_idle::SuspendMode::Pause => "paused",
                        nightwatch_idle::SuspendMode::Stop => "stopped",
                    },
                    nightwatch_time::format_duration(idle_for)
                );
                decided.finished(daemon, Ok(&why), took).await;
                let now_ms = daemon.now_ms();
                app.flip(Phase::Asleep, &why, now_ms);
                record(
                    daemon,
                    spec,
                    "suspending",
                    Phase::Asleep,
                    json!({}),
                    why,
                    Vec::new(),
                )
                .await;
            }
            Err(why) => {
                let failure = format!("the {} failed: {why}", spec.suspend.as_str());
                decided.finished(daemon, Err(&failure), took).await;
                self.undo_suspend(daemon, app, failure).await;
            }
        }
    }

    /// Resumes an app whose suspend failed or hung, then checks it answers again.
    async fn undo_suspend(&self, daemon: &Arc<Daemon>, app: &Arc<AppControl>, failure: String) {
        let spec = &app.spec;
        let resumed = tokio::time::timeout(spec.step_timeout, self.runtime.resume(&spec.target))
            .await
            .unwrap_or_else(|_| Err("the resume did not finish in time".into()));
        let (phase, why) = match resumed {
            Ok(()) => match self.wait_ready(app, spec.wake_timeout).await {
                Ok(()) => (
                    Phase::Awake,
                    format!("{failure}; undone: resumed, and its readiness check passes"),
                ),
                Err(not) => (
                    Phase::HalfAwake,
                    format!("{failure}; resumed, but its readiness check fails: {not}"),
                ),
            },
            Err(e) => (
                Phase::Failed,
                format!("{failure}; the undo failed too: {e}"),
            ),
        };
        self.failed_step(daemon, app, Phase::Suspending, phase, why)
            .await;
    }

    /// Marks a failed step, backs off, records the flip, and on quarantine tells a person once.
    async fn failed_step(
        &self,
        daemon: &Arc<Daemon>,
        app: &Arc<AppControl>,
        from: Phase,
        phase: Phase,
        why: String,
    ) {
        let spec = &app.spec;
        let now_ms = daemon.now_ms();
        let now = self.mono();
        let (quarantined, failures, retry_in) = {
            let mut inner = app.lock();
            let failures_before = inner.state.failures;
            inner.state.flip(phase, why.clone(), now_ms);
            // `flip` to awake forgets failures: an undone step still counts as one.
            inner.state.failures = failures_before;
            let told = inner.state.failed(spec, now);
            (told, inner.state.failures, inner.state.retry_in(now))
        };
        let final_phase = app.lock().state.phase;
        app.phase.send_replace(final_phase);
        let details = json!({ "failures": failures, "retry_in_s": retry_in.as_secs() });
        if quarantined {
            let why = format!(
                "{why}; {failures} failures in a row: quarantined, the controller leaves it alone until a person looks (a person's request still tries to wake it)"
            );
            record(
                daemon,
                spec,
                from.as_str(),
                Phase::Quarantined,
                details,
                why,
                spec.failures.notify.clone(),
            )
            .await;
        } else {
            let why = format!(
                "{why}; failure {failures} in a row, next try in {}",
                nightwatch_time::format_duration(retry_in)
            );
            record(daemon, spec, from.as_str(), phase, details, why, Vec::new()).await;
        }
    }

    /// Wakes the app (for a person's request, or to recover it): proposes `wake_app`, resumes
    /// it, waits for its readiness check. Ok when it is awake.
    async fn wake(
        &self,
        daemon: &Arc<Daemon>,
        app: &Arc<AppControl>,
        person: Option<&PersonSeen>,
    ) -> Result<(), String> {
        let spec = &app.spec;
        // What was seen while it slept (robots answered, refused), for the wake's record.
        let (from, seen) = {
            let inner = app.lock();
            (inner.state.phase, inner.state.seen.clone())
        };
        if from == Phase::Awake {
            return Ok(());
        }
        let reason = match person {
            Some(p) => format!("a person's request ({} from {})", p.path, p.client),
            None => format!("recovering it from {}", from.as_str()),
        };
        let inputs = json!({
            "app": spec.name,
            "target": spec.target.describe(),
            "from": from.as_str(),
            "for": reason,
            "person": person,
        });
        let trigger = if person.is_some() {
            "request"
        } else {
            "recovery"
        };
        let decided = propose(daemon, spec, "wake_app", inputs, trigger)
            .await
            .map_err(|why| format!("the wake could not be decided: {why}"))?;
        if decided.verdict != Verdict::Allow {
            app.lock()
                .state
                .declined(spec.failures.initial, self.mono());
            return Err(format!(
                "policy says {} to waking it: {}",
                decided.verdict, decided.reason
            ));
        }
        let now_ms = daemon.now_ms();
        app.flip(Phase::Waking, format!("waking for {reason}"), now_ms);
        let started = Instant::now();
        let resumed = tokio::time::timeout(spec.step_timeout, self.runtime.resume(&spec.target))
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "the start did not finish within {}",
                    nightwatch_time::format_duration(spec.step_timeout)
                ))
            });
        let ready = match resumed {
            Ok(()) => self
                .wait_ready(app, spec.wake_timeout)
                .await
                .map_err(|why| (Phase::HalfAwake, format!("started, but not ready: {why}"))),
            Err(why) => Err((Phase::Failed, format!("cannot start it: {why}"))),
        };
        let took = started.elapsed();
        match ready {
            Ok(()) => {
                daemon.metrics.idle_woke(&spec.name, took);
                let why = format!("awake for {reason}: ready in {} ms", took.as_millis());
                decided.finished(daemon, Ok(&why), took).await;
                let now_ms = daemon.now_ms();
                app.flip(Phase::Awake, &why, now_ms);
                app.lock().state.active_mono = self.mono();
                record(
                    daemon,
                    spec,
                    from.as_str(),
                    Phase::Awake,
                    json!({ "wake_ms": took.as_millis() as u64, "person": person, "seen": seen }),
                    why,
                    Vec::new(),
                )
                .await;
                Ok(())
            }
            Err((phase, why)) => {
                decided.finished(daemon, Err(&why), took).await;
                self.failed_step(daemon, app, Phase::Waking, phase, why.clone())
                    .await;
                Err(why)
            }
        }
    }

    async fn wait_ready(&self, app: &Arc<AppControl>, within: Duration) -> Result<(), String> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let attempt = ready::check(
                app.spec.upstream,
                &app.spec.ready,
                left.min(Duration::from_secs(2))
                    .max(Duration::from_millis(50)),
            )
            .await;
            match attempt {
                Ok(answer) => {
                    app.keep_ready(answer);
                    return Ok(());
                }
                Err(why) if Instant::now() + WAKE_POLL >= deadline => {
                    return Err(format!(
                        "{why} (waited {})",
                        nightwatch_time::format_duration(within)
                    ));
                }
                Err(_) => tokio::time::sleep(WAKE_POLL).await,
            }
        }
    }

    async fn observe(&self, app: &AppControl) -> Result<Observed, String> {
        tokio::time::timeout(
            app.spec.step_timeout,
            self.runtime.observe(&app.spec.target),
        )
        .await
        .unwrap_or_else(|_| Err("the engine did not answer an inspect in time".into()))
    }

    async fn signals(&self, app: &AppControl) -> Result<Vec<SignalSeen>, String> {
        tokio::time::timeout(
            app.spec.step_timeout,
            self.runtime.signals(&app.spec.target, &app.spec.signals),
        )
        .await
        .unwrap_or_else(|_| Err("the engine did not answer in time".into()))
    }

    /// Classifies a request to `app`, counts it, and says what to do with it: forward (waking
    /// the app first for a person), or answer it here (nightwatch_idle's [`admission`]).
    pub async fn admit(&self, daemon: &Arc<Daemon>, app: &Arc<AppControl>, seen: &Seen) -> Admit {
        let (_, admission) = self.classify(daemon, app, seen).await;
        let admit = match admission {
            Admission::Forward => Admit::Forward,
            Admission::Kept => Admit::Kept(app.lock().last_ready.clone()),
            Admission::Refused(refusal) => Admit::from(refusal),
            Admission::Wake => self.wake_for_person(daemon, app).await,
        };
        daemon.metrics.idle_answer(&app.spec.name, admit.as_str());
        admit
    }

    /// A health check asked at `/idle/health` on the app's behalf (`target`: its path and
    /// query, as `host`): counted as a robot's request, and never a wake. Awake, the app
    /// answers it now; asleep, it gets the kept answer.
    pub async fn health(
        &self,
        daemon: &Arc<Daemon>,
        app: &Arc<AppControl>,
        seen: &Seen,
        target: &str,
        host: Option<&str>,
    ) -> Health {
        let (_, admission) = self.classify(daemon, app, seen).await;
        let admit = match admission {
            Admission::Forward => {
                match ready::fetch(
                    app.spec.upstream,
                    target,
                    host,
                    seen.user_agent.as_deref(),
                    LIVE_HEALTH,
                )
                .await
                {
                    Ok(answer) => {
                        daemon.metrics.idle_answer(&app.spec.name, "forwarded");
                        return Health::Live(answer);
                    }
                    // Put to sleep since it was asked: the kept answer, as for any robot.
                    Err(_) if app.lock().state.phase != Phase::Awake => {
                        Admit::Kept(app.lock().last_ready.clone())
                    }
                    Err(why) => Admit::Unavailable {
                        why: format!(
                            "{} is awake, but its health check got no answer: {why}",
                            app.spec.name
                        ),
                        retry_after: 5,
                        asleep: false,
                    },
                }
            }
            Admission::Kept => Admit::Kept(app.lock().last_ready.clone()),
            Admission::Refused(refusal) => Admit::from(refusal),
            // A health path is a robot's whoever asks it, so this is never reached; were it,
            // a health check still wakes nothing.
            Admission::Wake => Admit::Unavailable {
                why: format!(
                    "{} is not awake; a health check does not wake it",
                    app.spec.name
                ),
                retry_after: nightwatch_idle::admission::RETRY_AFTER.as_secs(),
                asleep: true,
            },
        };
        daemon.metrics.idle_answer(&app.spec.name, admit.as_str());
        Health::Answer(admit)
    }

    /// Classifies and counts a request; what it gets by the admission rules. The first
    /// refusal of each method and path since the last flip is recorded with why.
    async fn classify(
        &self,
        daemon: &Arc<Daemon>,
        app: &Arc<AppControl>,
        seen: &Seen,
    ) -> (Traffic, Admission) {
        let now = self.mono();
        let now_ms = daemon.now_ms();
        let (traffic, phase, admission, first_refusal) = {
            let mut inner = app.lock();
            let request = Request {
                method: &seen.method,
                path: &seen.path,
                user_agent: seen.user_agent.as_deref(),
                client: seen.client,
                at_ms: now,
            };
            let traffic = inner.classifier.classify(&app.spec, &request);
            let person = || PersonSeen {
                at_ms: now_ms,
                client: seen.client.to_string(),
                user_agent: nightwatch_idle::clipped(
                    seen.user_agent.as_deref().unwrap_or(""),
                    MAX_KEPT_TEXT,
                ),
                path: nightwatch_idle::clipped(&seen.path, MAX_KEPT_TEXT),
            };
            inner.state.saw(&traffic, person, now);
            let phase = inner.state.phase;
            let admission =
                nightwatch_idle::admission(&app.spec, phase, &traffic, &seen.method, &seen.path);
            let first = inner.state.answered(&admission, &seen.method, &seen.path);
            (traffic, phase, admission, first)
        };
        daemon.metrics.idle_request(&app.spec.name, &traffic);
        if let Admission::Refused(refusal) = &admission {
            // No silent refusal: the first of each kind is recorded with why (and logged);
            // the rest are counted (`/api/idle`, `/metrics`) until the app's state changes.
            if first_refusal {
                tracing::info!("idle: {}", refusal.why);
                let (kind, robot) = match &traffic {
                    Traffic::Robot { kind, why } => (kind.as_str(), why.as_str()),
                    Traffic::Person => ("person", ""),
                };
                let details = json!({ "refused": {
                    "method": nightwatch_idle::clipped(&seen.method, 16),
                    "path": nightwatch_idle::clipped(&seen.path, MAX_KEPT_TEXT),
                    "robot": kind,
                    "robot_why": robot,
                    "client": seen.client.to_string(),
                    "status": 503,
                    "retry_after_s": refusal.retry_after.as_secs(),
                }});
                record(
                    daemon,
                    &app.spec,
                    phase.as_str(),
                    phase,
                    details,
                    format!(
                        "{}; refused with 503 (more of the same are counted at /api/idle/{} until it wakes or sleeps again)",
                        refusal.why, app.spec.name
                    ),
                    Vec::new(),
                )
                .await;
            } else {
                tracing::debug!("idle: {}", refusal.why);
            }
        }
        (traffic, admission)
    }

    /// Wakes the app for a person's request (waiting for a step in progress first): forward
    /// once it is awake, 503 saying why when it could not be woken in time.
    async fn wake_for_person(&self, daemon: &Arc<Daemon>, app: &Arc<AppControl>) -> Admit {
        let person = app.lock().state.last_person.clone();
        let woke = tokio::time::timeout(app.spec.wake_timeout + app.spec.step_timeout, async {
            // Waits for a step in progress (a suspend finishing, another request's wake).
            let _step = app.steps.lock().await;
            self.wake(daemon, app, person.as_ref()).await
        })
        .await;
        match woke {
            Ok(Ok(())) => Admit::Forward,
            Ok(Err(why)) => Admit::Unavailable {
                why: format!("{} could not be woken: {why}", app.spec.name),
                retry_after: 5,
                asleep: false,
            },
            Err(_) => Admit::Unavailable {
                why: format!("{} did not wake in time", app.spec.name),
                retry_after: 5,
                asleep: false,
            },
        }
    }

    /// Each app's phase, for `/metrics` and the API.
    pub fn phases(&self) -> Vec<(String, Phase)> {
        self.apps
            .iter()
            .map(|a| (a.spec.name.clone(), a.lock().state.phase))
            .collect()
    }

    /// One app's state as it is now, for the API.
    pub fn state(&self, app: &AppControl) -> AppState {
        app.lock().state.clone()
    }
}

/// The controller as one app's proxy sees it: every request is admitted (or answered) here.
pub struct Door {
    daemon: Arc<Daemon>,
    control: Arc<IdleControl>,
    app: Arc<AppControl>,
}

impl Door {
    pub fn new(daemon: Arc<Daemon>, control: Arc<IdleControl>, app: Arc<AppControl>) -> Door {
        Door {
            daemon,
            control,
            app,
        }
    }
}

impl super::proxy::Doorman for Door {
    fn admit<'a>(
        &'a self,
        facts: &'a super::proxy::Facts,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = super::proxy::Admission> + Send + 'a>>
    {
        Box::pin(async move {
            let seen = Seen {
                method: facts.method.clone(),
                path: facts.path.clone(),
                user_agent: facts.user_agent.clone(),
                client: facts.client,
            };
            let admit = self.control.admit(&self.daemon, &self.app, &seen).await;
            match super::http::answer(&self.app.spec.name, admit) {
                None => super::proxy::Admission::Forward,
                Some(reply) => super::proxy::Admission::Answer(reply),
            }
        })
    }
}

impl AppControl {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic mid-update leaves plain data; the next tick looks at the engine again.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn flip(&self, phase: Phase, why: impl Into<String>, now_ms: i64) {
        self.lock().state.flip(phase, why, now_ms);
        self.phase.send_replace(phase);
    }

    fn keep_ready(&self, answer: Option<ReadyAnswer>) {
        let mut inner = self.lock();
        inner.ready_checked = Some(Instant::now());
        if answer.is_some() {
            inner.last_ready = answer;
        }
    }

    /// Follows the app's phase (tests and the API wait on it).
    pub fn watch(&self) -> watch::Receiver<Phase> {
        self.phase.subscribe()
    }
}

impl From<Refusal> for Admit {
    fn from(refusal: Refusal) -> Admit {
        Admit::Unavailable {
            why: refusal.why,
            retry_after: refusal.retry_after.as_secs(),
            asleep: refusal.asleep,
        }
    }
}

fn signals_json(signals: &[SignalSeen]) -> Value {
    Value::Array(
        signals
            .iter()
            .map(|s| json!({ "name": s.name, "count": s.count, "activity": s.activity }))
            .collect(),
    )
}

/// A step the engine decided: what the controller proposed, and the verdict. Its result is
/// recorded through [`Decided::finished`], joined to the decision by call id.
struct Decided {
    verdict: Verdict,
    reason: String,
    tool: &'static str,
    call_id: String,
    inputs: Value,
    app: String,
}

/// Proposes `tool` for `app` through the daemon's engine. An error: nothing was recorded, so
/// nothing may be done.
async fn propose(
    daemon: &Arc<Daemon>,
    app: &AppSpec,
    tool: &'static str,
    inputs: Value,
    trigger: &str,
) -> Result<Decided, String> {
    let daemon = daemon.clone();
    let call_id = format!("idle-{}-{}-{}", app.name, tool, daemon.now_ms());
    let proposal = Proposal {
        action: Action {
            actor: Actor::new(ActorKind::IdleController, IDLE_CONTROLLER),
            tool: Tool::Named { name: tool.into() },
            context: Context {
                triggered_by: Some(trigger.to_owned()),
                ..Context::default()
            },
        },
        call_id: Some(call_id.clone()),
        inputs: inputs.clone(),
        cwd: None,
    };
    let ruling = tokio::task::spawn_blocking(move || {
        let policy = daemon.edges.policy()?;
        daemon
            .engine()
            .propose(&policy, proposal)
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("the proposal's thread failed: {e}"))??;
    Ok(Decided {
        verdict: ruling.decision.verdict,
        reason: ruling.decision.reason,
        tool,
        call_id,
        inputs,
        app: app.name.clone(),
    })
}

impl Decided {
    /// Records what the step did (`Ok` with a summary, or `Err` with why it failed).
    async fn finished(self, daemon: &Arc<Daemon>, outcome: Result<&str, &str>, took: Duration) {
        let (exit_code, stdout, stderr) = match outcome {
            Ok(summary) => (0, summary.to_owned(), String::new()),
            Err(why) => (1, String::new(), why.to_owned()),
        };
        let report = nightwatch_gate::Report {
            actor: Actor::new(ActorKind::IdleController, IDLE_CONTROLLER),
            tool: self.tool.to_owned(),
            session_id: None,
            call_id: Some(self.call_id),
            inputs: self.inputs,
            outputs: nightwatch_ledger::Outputs {
                exit_code: Some(exit_code),
                stdout,
                stderr,
            },
            duration_ms: Some(took.as_millis() as u64),
            context: Context::default(),
            cwd: None,
        };
        let daemon = daemon.clone();
        let written =
            tokio::task::spawn_blocking(move || daemon.engine().record(Event::Result(report)))
                .await;
        if !matches!(written, Ok(Ok(_))) {
            tracing::error!(
                "idle: {}: the result of {} could not be recorded",
                self.app,
                self.tool
            );
        }
    }
}

/// Records a flip (or a hold, `from == to`).
async fn record(
    daemon: &Arc<Daemon>,
    app: &AppSpec,
    from: &str,
    to: Phase,
    details: Value,
    why: String,
    notify: Vec<String>,
) {
    let event = Event::Idle {
        app: app.name.clone(),
        from: from.to_owned(),
        to: to.as_str().to_owned(),
        details,
        why,
        notify,
    };
    let daemon = daemon.clone();
    let name = app.name.clone();
    let written = tokio::task::spawn_blocking(move || daemon.engine().record(event)).await;
    if !matches!(written, Ok(Ok(_))) {
        tracing::error!("idle: {name}: a state flip could not be recorded");
    }
}
