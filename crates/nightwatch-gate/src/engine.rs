//! The engine: the one door every actor goes through.
//!
//! [`Engine::propose`] is how any actor (an agent's hook, `exec`, a runbook, the janitor, a
//! person's undo, and every actor to come) gets a decision, and it does the same steps for
//! all: complete the context (host, local time of day), place the actor in its trust tier
//! (from the ledger, never from what the actor says), run the pipeline, record the decision,
//! and hand a halt's or an ask's record to the escalator. [`Engine::record`] is the only other
//! writer: typed [`Event`]s about actions and about other records.
//!
//! The engine stamps every record with the clock's *written* time. What is *judged* (time of
//! day, ages, approval expiry) uses the clock's *now*, which a simulation may move (`sweep
//! --now`); a record never says it was written at a simulated time.

use crate::{Failure, Gate, Proposal, Report, Ruling, record_context};
use nightwatch_core::{Action, Actor, Context};
use nightwatch_ledger::schema::{Answer, Delivery, Notified, Placement, Readable, Swept, Undone};
use nightwatch_ledger::{
    Entry, Filter, Outputs, Record, RecordActor, RecordContext, Safeguards, event,
};
use nightwatch_policy::Policy;
use nightwatch_store::{Ledger, StoreError as LedgerError};
use serde_json::{Value, json};

/// Where time comes from.
pub trait Clock: Send + Sync {
    /// The time actions are judged at.
    fn now_ms(&self) -> i64;
    /// The time records are stamped with: the real time, even when [`Clock::now_ms`] is
    /// simulated.
    fn written_ms(&self) -> i64 {
        self.now_ms()
    }
    /// The zone local time of day is read in.
    fn zone(&self) -> &jiff::tz::TimeZone;
}

/// Minutes since local midnight and the weekday at `ms` in `zone`; midnight on a Monday for a
/// time outside civil time's range (only a broken clock gives one).
pub fn local_time(ms: i64, zone: &jiff::tz::TimeZone) -> (u16, jiff::civil::Weekday) {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(at) => {
            let local = at.to_zoned(zone.clone());
            let minute = u16::from(local.hour().unsigned_abs()) * 60
                + u16::from(local.minute().unsigned_abs());
            (minute, local.weekday())
        }
        Err(_) => (0, jiff::civil::Weekday::Monday),
    }
}

/// A clock whose judged time is fixed elsewhere (`sweep --now`) while records keep the real
/// time of the clock it wraps.
pub struct Simulated<'a> {
    pub real: &'a dyn Clock,
    pub now_ms: i64,
}

impl Clock for Simulated<'_> {
    fn now_ms(&self) -> i64 {
        self.now_ms
    }
    fn written_ms(&self) -> i64 {
        self.real.written_ms()
    }
    fn zone(&self) -> &jiff::tz::TimeZone {
        self.real.zone()
    }
}

/// Whether the job an engine acts for still holds its place (a singleton job's lease): once
/// it does not, every action it proposes is denied with the reason, and recorded so. Another
/// host may have taken the job over, and two hosts must never act for it at once.
pub trait Fence: Send + Sync {
    /// `Ok` while the place is held at `now_ms`; otherwise why not.
    fn holds(&self, now_ms: i64) -> Result<(), String>;
}

/// Tells people about a record that names notifiers (its `safeguards.notify`), without holding
/// up the caller; the delivery records every attempt itself.
pub trait Escalator: Send + Sync {
    fn escalate(&self, record_id: &str);
}

/// An escalator for callers that deliver nothing themselves (tests, `check`): the record still
/// names its notifiers.
pub struct NoEscalator;

impl Escalator for NoEscalator {
    fn escalate(&self, _: &str) {}
}

/// What the engine records besides decisions. Each variant is one kind of record, typed, so no
/// caller builds a ledger entry itself.
#[derive(Clone, Debug)]
pub enum Event {
    /// What an action produced, joined to its decision by call id.
    Result(Report),
    /// A refusal nightwatch made because it could not decide.
    Refusal(Failure),
    /// The agent declined a call it had asked about (its person or its classifier said no):
    /// the call closes without running. `reason` is the agent's.
    Declined(Failure),
    /// An agent's session step (`session-start`, `stop`, ...).
    Lifecycle {
        step: String,
        actor: Actor,
        context: Context,
        details: Value,
    },
    /// What the daemon did with an alert or its task.
    Dispatch(Dispatch),
    /// The janitor left something in place, and why.
    SweepKeep {
        tool: String,
        swept: Swept,
        reasons: Vec<String>,
    },
    /// `sweep plan` decided an item (keep, or remove when applied), and why.
    SweepPlanned {
        tool: String,
        swept: Swept,
        remove: bool,
        reasons: Vec<String>,
        /// A what-if plan (`sweep plan --now +6d`): the time it was judged at, which is not
        /// when it was planned. Recorded as `what_if_ms`, so no reader takes it for real.
        what_if_ms: Option<i64>,
    },
    /// The janitor gave up removing something after repeated failures; the halt notifiers
    /// are told.
    Quarantine {
        tool: String,
        swept: Swept,
        why: String,
        notify: Vec<String>,
    },
    /// A scheduled sweep could not run at all.
    SweepFailed { why: String },
    /// This host declined a job that runs in one place only (`stood-down`): who holds its
    /// lease and until when, when known, and why, so no host declines silently.
    StoodDown {
        job: String,
        holder: Option<String>,
        until_ms: Option<i64>,
        why: String,
    },
    /// A job that runs in one place only starts here, under lease `token` held by `holder`
    /// until `until_ms` (`singleton-start`).
    SingletonStarted {
        job: String,
        holder: String,
        token: u64,
        until_ms: i64,
    },
    /// That job ended (`singleton-end`): how it went and what became of its lease.
    SingletonFinished {
        job: String,
        holder: String,
        token: u64,
        why: String,
    },
    /// The idle controller's word on an app (`idle`): a state flip `from` -> `to` (the same
    /// phase twice for a hold or a finding), what it saw in `details`, and why. Naming
    /// notifiers escalates it, as a quarantine does.
    Idle {
        app: String,
        from: String,
        to: String,
        details: Value,
        why: String,
        notify: Vec<String>,
    },
    /// A watcher's word on a subject (`watch`): what its runs saw (`seen`: ok, found,
    /// unknown), how many runs the record stands for, and what it compared in `details`.
    /// Naming notifiers escalates it, as a quarantine does.
    Watch {
        watcher: String,
        kind: String,
        subject: String,
        seen: String,
        runs: u64,
        summary: String,
        details: Value,
        notify: Vec<String>,
    },
    /// A person's undo of a record's changes, done or not.
    Undo {
        by: Actor,
        decision: Box<Record>,
        undone: Undone,
        call_id: String,
        outcome: Result<Vec<String>, String>,
    },
    /// A person's approval of an asked call.
    Approval {
        by: Actor,
        asked: Box<Record>,
        expires_ms: i64,
        why: String,
    },
    /// A person's rejection of an asked call.
    Rejection {
        by: Actor,
        asked: Box<Record>,
        why: String,
    },
    /// A person placed an agent in a trust tier.
    Trust {
        by: Actor,
        placement: Placement,
        host: Option<String>,
    },
    /// One notifier's delivery of an escalation about `about`.
    Notification {
        about: Box<Record>,
        notified: Notified,
        delivered: bool,
        summary: String,
        delivery: Readable<Delivery>,
    },
    /// A retention run over backups.
    BackupPruned {
        inputs: Value,
        summary: String,
        problems: Vec<String>,
        removed: Value,
        kept: Value,
    },
    /// A worker caught a panic while handling something; what it was about and the message.
    InternalError {
        actor: Actor,
        about: String,
        context: Context,
        why: String,
    },
}

/// A `dispatch` record: what the daemon did with an alert or a task.
#[derive(Clone, Debug)]
pub struct Dispatch {
    /// The route, as the rule that decided.
    pub route: Option<String>,
    pub session_id: Option<String>,
    /// `disposition` (`routed`, `deduplicated`, `ran`, `failed`, `refused`, `escalated`,
    /// ...) and what it is about (`alert_id`, `task`, `attempt`, `title`, ...).
    pub inputs: Value,
    pub context: RecordContext,
    pub why: String,
    /// Notifiers told about it.
    pub notify: Vec<String>,
    /// The tool it is about (`alert`, `runbook`).
    pub tool: String,
}

/// The idle controller's actor id, on its proposals and its `idle` records.
pub const IDLE_CONTROLLER: &str = "idle-controller";

/// The watchers' actor id, on their proposals and their `watch` records.
pub const WATCHER: &str = "watcher";

/// The actor every daemon record is written by.
pub fn dispatcher() -> RecordActor {
    RecordActor {
        kind: nightwatch_core::ActorKind::Dispatcher.as_str().to_owned(),
        id: "nightwatch-serve".to_owned(),
    }
}

/// The one pipeline with everything it needs from outside.
pub struct Engine<'a> {
    ledger: &'a dyn Ledger,
    guards: &'a dyn crate::Guards,
    clock: &'a dyn Clock,
    escalator: &'a dyn Escalator,
    host: Option<String>,
    fence: Option<&'a dyn Fence>,
}

impl<'a> Engine<'a> {
    pub fn new(
        ledger: &'a dyn Ledger,
        guards: &'a dyn crate::Guards,
        clock: &'a dyn Clock,
        escalator: &'a dyn Escalator,
        host: Option<String>,
    ) -> Engine<'a> {
        Engine {
            ledger,
            guards,
            clock,
            escalator,
            host,
            fence: None,
        }
    }

    /// The time actions are judged at.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The ledger the engine records into, for readers that must see what it wrote.
    pub fn ledger(&self) -> &'a dyn Ledger {
        self.ledger
    }

    /// The engine's clock: what it judges at and stamps records with.
    pub fn clock(&self) -> &'a dyn Clock {
        self.clock
    }

    /// This engine with another clock (see [`Simulated`]).
    pub fn with_clock<'b>(&self, clock: &'b dyn Clock) -> Engine<'b>
    where
        'a: 'b,
    {
        Engine {
            ledger: self.ledger,
            guards: self.guards,
            clock,
            escalator: self.escalator,
            host: self.host.clone(),
            fence: self.fence,
        }
    }

    /// This engine with another escalator.
    pub fn with_escalator<'b>(&self, escalator: &'b dyn Escalator) -> Engine<'b>
    where
        'a: 'b,
    {
        Engine {
            escalator,
            ..self.with_clock(self.clock)
        }
    }

    /// This engine acting for a job that must hold `fence` (see [`Fence`]).
    pub fn with_fence<'b>(&self, fence: &'b dyn Fence) -> Engine<'b>
    where
        'a: 'b,
    {
        Engine {
            fence: Some(fence),
            ..self.with_clock(self.clock)
        }
    }

    /// Decides the proposal under `policy` and records the decision; a halt or ask is handed
    /// to the escalator. An error means nothing was recorded: the caller must refuse.
    pub fn propose(&self, policy: &Policy, proposal: Proposal) -> Result<Ruling, LedgerError> {
        let mut proposal = proposal;
        let judged_ms = self.clock.now_ms();
        self.complete(&mut proposal.action, policy, judged_ms)?;
        let ruling = Gate::new(policy, self.ledger, self.guards, self.fence).propose(
            proposal,
            judged_ms,
            self.clock.written_ms(),
            self.clock.zone(),
        )?;
        if !ruling.notify.is_empty() {
            self.escalator.escalate(&ruling.record.id);
        }
        Ok(ruling)
    }

    /// The context and tier every actor's action is judged with: the host and the local time
    /// of day from here, the tier from the ledger's trust placements.
    fn complete(
        &self,
        action: &mut Action,
        policy: &Policy,
        judged_ms: i64,
    ) -> Result<(), LedgerError> {
        if action.context.host.is_none() {
            action.context.host = self.host.clone();
        }
        action.context.minute_of_day = Some(local_time(judged_ms, self.clock.zone()).0);
        // Read only when a rule looks at tiers; otherwise the tier cannot change a verdict.
        if policy.uses_tiers() {
            let placements = self.ledger.query(&Filter {
                event: Some(event::TRUST.to_owned()),
                ..Filter::default()
            })?;
            action.actor.tier = Some(nightwatch_trust::tier_from_trust_records(
                &placements,
                &action.actor.id,
                &policy.safeguards().trust,
            ));
        } else {
            action.actor.tier = None;
        }
        Ok(())
    }

    /// Records `event`; a record naming notifiers is handed to the escalator.
    pub fn record(&self, event: Event) -> Result<Record, LedgerError> {
        let mut records = self.record_all(vec![event])?;
        records.pop().ok_or_else(|| LedgerError::Backend {
            store: nightwatch_store::store_name::LEDGER,
            message: "an append stored no record".into(),
        })
    }

    /// Records `events` in order, in one commit where the store can (an intake batch); each
    /// record naming notifiers is handed to the escalator once all are durable.
    pub fn record_all(&self, events: Vec<Event>) -> Result<Vec<Record>, LedgerError> {
        let written = self.clock.written_ms();
        let entries = events
            .into_iter()
            .map(|event| self.entry_of(event, written))
            .collect::<Result<Vec<_>, _>>()?;
        let notify: Vec<bool> = entries
            .iter()
            .map(|entry| Safeguards::names_notifiers(entry.safeguards.as_ref()))
            .collect();
        let records = self.ledger.append_all(entries)?;
        for (record, notify) in records.iter().zip(notify) {
            if notify {
                self.escalator.escalate(&record.id);
            }
        }
        Ok(records)
    }

    /// The ledger entry that records `event`, stamped `written`.
    fn entry_of(&self, event: Event, written: i64) -> Result<Entry, LedgerError> {
        Ok(match event {
            Event::Result(report) => {
                crate::result_entry(self.ledger, self.guards, report, written)?
            }
            Event::Refusal(failure) => crate::refusal_entry(failure, written),
            Event::Declined(declined) => crate::declined_entry(declined, written),
            Event::Lifecycle {
                step,
                actor,
                context,
                details,
            } => {
                let mut entry = Entry::new(step, written, RecordActor::from(&actor), "session");
                entry.session_id = context.session.clone();
                entry.inputs = details;
                entry.context = record_context(&context);
                entry
            }
            Event::Dispatch(dispatch) => {
                let mut entry = Entry::new(
                    event::DISPATCH,
                    written,
                    dispatcher(),
                    dispatch.tool.clone(),
                );
                entry.inputs = dispatch.inputs;
                entry.session_id = dispatch.session_id;
                entry.context = dispatch.context;
                entry.rule = dispatch.route;
                entry.reasons = vec![dispatch.why];
                entry.safeguards = notify_only(dispatch.notify);
                entry
            }
            Event::SweepKeep {
                tool,
                swept,
                reasons,
            } => {
                let mut entry = janitor_entry(event::SWEEP_KEEP, written, tool, &swept);
                entry.reasons = reasons;
                entry
            }
            Event::SweepPlanned {
                tool,
                swept,
                remove,
                reasons,
                what_if_ms,
            } => {
                let mut entry = janitor_entry(event::SWEEP_PLAN, written, tool, &swept);
                if let Value::Object(inputs) = &mut entry.inputs {
                    let decision = if remove { "remove" } else { "keep" };
                    inputs.insert("decision".to_owned(), Value::from(decision));
                    if let Some(at) = what_if_ms {
                        inputs.insert("what_if_ms".to_owned(), Value::from(at));
                    }
                }
                entry.reasons = reasons;
                entry
            }
            Event::Quarantine {
                tool,
                swept,
                why,
                notify,
            } => {
                // Not a verdict: no policy made it. The halt notifiers are told all the same.
                let mut entry = janitor_entry(event::QUARANTINED, written, tool, &swept);
                entry.reasons = vec![why];
                entry.safeguards = notify_only(notify);
                entry
            }
            Event::SweepFailed { why } => {
                let mut entry = Entry::new(event::SWEEP_FAILED, written, dispatcher(), "sweep");
                entry.reasons = vec![why];
                entry
            }
            Event::StoodDown {
                job,
                holder,
                until_ms,
                why,
            } => {
                let mut entry = Entry::new(event::STOOD_DOWN, written, dispatcher(), job.clone());
                entry.inputs = json!({ "job": job, "holder": holder, "until_ms": until_ms });
                entry.context.host = self.host.clone();
                entry.reasons = vec![why];
                entry
            }
            Event::SingletonStarted {
                job,
                holder,
                token,
                until_ms,
            } => {
                let mut entry =
                    Entry::new(event::SINGLETON_START, written, dispatcher(), job.clone());
                entry.inputs = json!({
                    "job": job, "holder": holder, "token": token, "until_ms": until_ms,
                });
                entry.context.host = self.host.clone();
                entry.reasons = vec![format!(
                    "{holder} holds the lease on {job} (token {token}); it runs here"
                )];
                entry
            }
            Event::SingletonFinished {
                job,
                holder,
                token,
                why,
            } => {
                let mut entry =
                    Entry::new(event::SINGLETON_END, written, dispatcher(), job.clone());
                entry.inputs = json!({ "job": job, "holder": holder, "token": token });
                entry.context.host = self.host.clone();
                entry.reasons = vec![why];
                entry
            }
            Event::Idle {
                app,
                from,
                to,
                details,
                why,
                notify,
            } => {
                let controller =
                    Actor::new(nightwatch_core::ActorKind::IdleController, IDLE_CONTROLLER);
                let mut entry =
                    Entry::new(event::IDLE, written, RecordActor::from(&controller), "idle");
                let mut inputs = json!({ "app": app, "from": from, "to": to });
                if let (Some(all), Value::Object(more)) = (inputs.as_object_mut(), details) {
                    for (k, v) in more {
                        all.entry(k).or_insert(v);
                    }
                }
                entry.inputs = inputs;
                entry.context.host = self.host.clone();
                entry.reasons = vec![why];
                entry.safeguards = notify_only(notify);
                entry
            }
            Event::Watch {
                watcher,
                kind,
                subject,
                seen,
                runs,
                summary,
                details,
                notify,
            } => {
                let actor = Actor::new(nightwatch_core::ActorKind::Watcher, WATCHER);
                let mut entry = Entry::new(
                    event::WATCH,
                    written,
                    RecordActor::from(&actor),
                    kind.clone(),
                );
                let mut inputs = json!({
                    "watcher": watcher, "kind": kind, "subject": subject, "seen": seen,
                    "runs": runs,
                });
                if let (Some(all), Value::Object(more)) = (inputs.as_object_mut(), details) {
                    for (k, v) in more {
                        all.entry(k).or_insert(v);
                    }
                }
                entry.inputs = inputs;
                entry.context.host = self.host.clone();
                entry.reasons = vec![summary];
                entry.safeguards = notify_only(notify);
                entry
            }
            Event::Undo {
                by,
                decision,
                undone,
                call_id,
                outcome,
            } => {
                let mut entry = Entry::new(event::UNDO, written, RecordActor::from(&by), "undo");
                entry.session_id = decision.session_id.clone();
                entry.context = decision.context.clone();
                entry.call_id = Some(call_id);
                entry.inputs = serde_json::to_value(&undone).unwrap_or(Value::Null);
                match outcome {
                    Ok(steps) => {
                        entry.outputs = Some(Outputs {
                            exit_code: Some(0),
                            stdout: steps.join("\n"),
                            stderr: String::new(),
                        });
                        entry.reasons =
                            vec![format!("undid {}: {}", decision.id, steps.join("; "))];
                        entry.safeguards = Safeguards {
                            restored: Some(steps),
                            ..Safeguards::default()
                        }
                        .into_value();
                    }
                    Err(why) => {
                        entry.outputs = Some(Outputs {
                            exit_code: Some(1),
                            stdout: String::new(),
                            stderr: why.clone(),
                        });
                        entry.reasons = vec![format!("did not undo {}: {why}", decision.id)];
                    }
                }
                entry
            }
            Event::Approval {
                by,
                asked,
                expires_ms,
                why,
            } => {
                let mut entry = answer_entry(event::APPROVAL, written, &by, &asked);
                let answer = Answer {
                    expires_ms: Some(expires_ms),
                    why: Some(why),
                    ..answer_of(&asked)
                };
                entry.inputs = serde_json::to_value(&answer).unwrap_or(Value::Null);
                entry.reasons = vec![format!(
                    "{} approved {} for {} {}, once, until {}",
                    by.id,
                    asked.id,
                    asked.actor.kind,
                    asked.actor.id,
                    nightwatch_ledger::rfc3339(expires_ms)
                )];
                entry
            }
            Event::Rejection { by, asked, why } => {
                let mut entry = answer_entry(event::REJECTION, written, &by, &asked);
                let answer = Answer {
                    why: Some(why),
                    ..answer_of(&asked)
                };
                entry.inputs = serde_json::to_value(&answer).unwrap_or(Value::Null);
                entry.reasons = vec![format!(
                    "{} rejected {}; any approval of it is void",
                    by.id, asked.id
                )];
                entry
            }
            Event::Trust {
                by,
                placement,
                host,
            } => {
                let mut entry = Entry::new(event::TRUST, written, RecordActor::from(&by), "trust");
                entry.inputs = serde_json::to_value(&placement).unwrap_or(Value::Null);
                entry.context = RecordContext {
                    host: host.or_else(|| self.host.clone()),
                    ..RecordContext::default()
                };
                entry
            }
            Event::Notification {
                about,
                notified,
                delivered,
                summary,
                delivery,
            } => {
                let mut entry = Entry::new(
                    event::NOTIFICATION,
                    written,
                    RecordActor {
                        kind: "nightwatch".into(),
                        id: "escalation".into(),
                    },
                    "notify",
                );
                entry.session_id = about.session_id.clone();
                entry.context = about.context.clone();
                entry.inputs = serde_json::to_value(&notified).unwrap_or(Value::Null);
                entry.outputs = Some(Outputs {
                    exit_code: Some(i64::from(!delivered)),
                    stdout: summary.clone(),
                    stderr: String::new(),
                });
                entry.reasons = vec![summary];
                entry.safeguards = Safeguards {
                    delivery: Some(delivery),
                    ..Safeguards::default()
                }
                .into_value();
                entry
            }
            Event::BackupPruned {
                inputs,
                summary,
                problems,
                removed,
                kept,
            } => {
                let mut entry = Entry::new(
                    event::BACKUP_PRUNED,
                    written,
                    RecordActor {
                        kind: "nightwatch".into(),
                        id: "retention".into(),
                    },
                    "backups",
                );
                entry.inputs = inputs;
                entry.outputs = Some(Outputs {
                    exit_code: Some(i64::from(!problems.is_empty())),
                    stdout: summary.clone(),
                    stderr: problems.join("\n"),
                });
                entry.reasons = vec![summary];
                entry.safeguards = Some(json!({ "removed": removed, "kept": kept }));
                entry
            }
            Event::InternalError {
                actor,
                about,
                context,
                why,
            } => {
                let mut entry = Entry::new(
                    event::INTERNAL_ERROR,
                    written,
                    RecordActor::from(&actor),
                    about,
                );
                entry.session_id = context.session.clone();
                entry.context = record_context(&context);
                entry.reasons = vec![why];
                entry
            }
        })
    }
}

fn notify_only(notify: Vec<String>) -> Option<Value> {
    Safeguards {
        notify: (!notify.is_empty()).then_some(notify),
        ..Safeguards::default()
    }
    .into_value()
}

fn janitor_entry(kind: &str, written: i64, tool: String, swept: &Swept) -> Entry {
    let janitor = Actor::new(nightwatch_core::ActorKind::Janitor, "janitor");
    let mut entry = Entry::new(kind, written, RecordActor::from(&janitor), tool);
    entry.inputs = serde_json::to_value(Swept {
        reasons: Vec::new(),
        ..swept.clone()
    })
    .unwrap_or(Value::Null);
    entry
}

fn answer_entry(kind: &str, written: i64, by: &Actor, asked: &Record) -> Entry {
    let mut entry = Entry::new(kind, written, RecordActor::from(by), "approval");
    entry.session_id = asked.session_id.clone();
    entry.context = asked.context.clone();
    entry
}

/// An answer bound to the asking actor and the asked call's identity: the fingerprint the
/// decision stored, or for a decision recorded before fingerprints were stored, one computed
/// from its (redacted) inputs as was done then.
fn answer_of(asked: &Record) -> Answer {
    Answer {
        record: asked.id.clone(),
        fingerprint: crate::fingerprint_of(asked),
        actor_id: asked.actor.id.clone(),
        expires_ms: None,
        why: None,
    }
}
