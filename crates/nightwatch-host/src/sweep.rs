//! The janitor's sweep through the engine: list what agents left behind, decide keep or
//! remove for each (`plan_at`), then carry out a plan (`apply_plan`): every removal
//! re-inspected and proposed as the janitor's action, every keep, result and quarantine
//! recorded. `sweep plan | apply` and the daemon's schedule (`sweep_once`) run the same code.

use crate::environment::Environment;
use anyhow::Context as _;
use nightwatch_core::{Actor, ActorKind, Verdict};
use nightwatch_gate::{Engine, Event, Proposal, Report};
use nightwatch_janitor::JanitorState;
use nightwatch_janitor::{
    Applied, Decision, Facts, Inventory, Item, Kind, Outcome, PathInventory, Plan, PlanEntry,
    SweepRules, list_all, plan, plan_session, removal_action,
};
use nightwatch_ledger::Outputs;
use nightwatch_ledger::schema::Swept;
use nightwatch_policy::Policy;
use nightwatch_store::JanitorStore;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;

/// An inventory the sweep did not take, and why: recorded, never a silent decline.
#[derive(Clone, Debug)]
pub struct Unswept {
    pub kind: Kind,
    pub why: String,
    /// The run did not do what it was asked (an Engine that is configured but fails), as
    /// against a host that has nothing of the kind.
    pub failed: bool,
}

/// The inventories the sweep rules ask for: paths always, containers when the host has a
/// Docker Engine, worktrees and branches of the repositories `sweep.worktrees.repos` names;
/// and the kinds left out, with why.
fn inventories(rules: &SweepRules, env: &Environment) -> (Vec<Box<dyn Inventory>>, Vec<Unswept>) {
    let mut all: Vec<Box<dyn Inventory>> = vec![Box::new(PathInventory::from_rules(rules))];
    let mut unswept = Vec::new();
    match docker_here(rules, env) {
        Ok(Some(docker)) => all.push(Box::new(docker)),
        Ok(None) => unswept.push(Unswept {
            kind: Kind::Container,
            why: "containers not swept: no Docker Engine here (no DOCKER_HOST, no /var/run/docker.sock)".to_owned(),
            failed: false,
        }),
        Err(error) => unswept.push(Unswept {
            kind: Kind::Container,
            why: format!("containers not swept: {error}"),
            failed: true,
        }),
    }
    if rules.worktrees.repos.is_empty() {
        for (kind, kinds) in [(Kind::Worktree, "worktrees"), (Kind::Branch, "branches")] {
            unswept.push(Unswept {
                kind,
                why: format!(
                    "{kinds} not swept: no repositories configured (sweep.worktrees.repos)"
                ),
                failed: false,
            });
        }
    } else {
        let git = nightwatch_git::GitInventory::new(
            rules.worktrees.repos.clone(),
            rules.worktrees.base.clone(),
            rules.worktrees.pr.clone(),
            &|name| env.var(name).filter(|t| !t.is_empty()).map(str::to_owned),
        );
        all.push(Box::new(git.worktrees()));
        all.push(Box::new(git.branches()));
    }
    (all, unswept)
}

/// The record of a kind the sweep left out: a keep of everything of that kind, with why.
fn unswept_event(unswept: &Unswept) -> Event {
    Event::SweepKeep {
        tool: unswept.kind.tool_name().to_owned(),
        swept: swept(
            unswept.kind,
            "*",
            &format!("every {}", unswept.kind.as_str()),
            &[],
        ),
        reasons: vec![unswept.why.clone()],
    }
}

/// The Docker Engine, when this host has one (`DOCKER_HOST`, or the default socket).
pub(crate) fn docker_here(
    rules: &SweepRules,
    env: &Environment,
) -> Result<Option<nightwatch_docker::DockerInventory>, nightwatch_janitor::InventoryError> {
    let configured = env.var("DOCKER_HOST").is_some_and(|h| !h.is_empty());
    if !configured && !std::path::Path::new("/var/run/docker.sock").exists() {
        return Ok(None);
    }
    nightwatch_docker::DockerInventory::from_docker_host(env.var("DOCKER_HOST"), &rules.containers)
        .map(Some)
}

/// Containers' exec and attach activity from the Engine's recent events, remembered in the
/// janitor's state (the Engine forgets them).
fn note_container_activity(
    store: &dyn JanitorStore,
    rules: &SweepRules,
    env: &Environment,
    now: i64,
) {
    if let Ok(Some(docker)) = docker_here(rules, env) {
        let since = now.saturating_sub(24 * 3600 * 1000);
        if let Err(error) = docker.record_activity(store, since, now) {
            eprintln!("nightwatch: container activity not read: {error}");
        }
    }
}

/// The longest an agent's shell call runs (Claude Code's Bash tool stops at 10 minutes): how
/// far back from a container's creation the ledger is read for the call that made it.
const LONGEST_CALL_MS: i64 = 10 * 60 * 1000;

/// Notes, in `state`, which agent session may have started each container that carries no
/// owner label, by joining the Engine's creation times to the agents' calls in the ledger
/// whose results are recorded (see [`nightwatch_janitor::started_during`]). The plan only
/// shows this to a person; it never removes on it. The ledger is read only around those times.
fn note_owners_from_ledger(
    data_dir: &std::path::Path,
    items: &[Item],
    state: &mut JanitorState,
) -> anyhow::Result<()> {
    use nightwatch_ledger::{Filter, event};
    let mut created: Vec<i64> = items
        .iter()
        .filter_map(|item| match &item.facts {
            Facts::Container(c) if !c.labels.contains_key(nightwatch_janitor::OWNER_LABEL) => {
                c.created_ms
            }
            _ => None,
        })
        .collect();
    if created.is_empty() {
        return Ok(());
    }
    created.sort_unstable();
    // The stretches of time a call that created one of them was decided in, merged.
    let mut stretches: Vec<(i64, i64)> = Vec::new();
    for at in created {
        let from = nightwatch_janitor::calls_since(at, LONGEST_CALL_MS);
        let until = at.saturating_add(LONGEST_CALL_MS);
        match stretches.last_mut() {
            Some((_, end)) if from <= *end => *end = until,
            _ => stretches.push((from, until)),
        }
    }
    let ledger = crate::stores::ledger(data_dir).context("cannot open the ledger")?;
    let mut calls = Vec::new();
    for (from, until) in stretches {
        let read = |name: &str, until: i64| {
            ledger.query(&Filter {
                since_ms: Some(from),
                until_ms: Some(until),
                actor: Some(ActorKind::Agent.as_str().to_owned()),
                event: Some(name.to_owned()),
                ..Filter::default()
            })
        };
        let finished: HashMap<String, i64> =
            read(event::RESULT, until.saturating_add(LONGEST_CALL_MS))?
                .into_iter()
                .filter_map(|r| Some((r.call_id?, r.timestamp_ms)))
                .collect();
        for record in read(event::DECISION, until)? {
            let runs = matches!(record.verdict.as_deref(), Some("allow" | "ask"));
            let Some(command) = record.inputs.get("command").and_then(Value::as_str) else {
                continue;
            };
            if !runs {
                continue;
            }
            // Only a call whose result is recorded provably ran: an ask nobody approved, or a
            // call whose agent died, is no evidence.
            let Some(until_ms) = record
                .call_id
                .as_ref()
                .and_then(|id| finished.get(id).copied())
            else {
                continue;
            };
            calls.push(nightwatch_janitor::AgentCall {
                agent: record.actor.id.clone(),
                session: record.session_id.clone(),
                record: record.id.clone(),
                command: command.to_owned(),
                cwd: record.cwd.clone(),
                from_ms: record.timestamp_ms,
                until_ms,
            });
        }
    }
    for (id, by) in nightwatch_janitor::started_during(items, &calls) {
        state.note_started_by(&id, by);
    }
    Ok(())
}

/// Progress, on stderr (a terminal, or the log of a cron job).
pub fn progress(message: &str) {
    eprintln!("{message}");
}

/// A plan, and the kinds that could not be listed (so none of them is planned).
pub struct Planned {
    pub plan: Plan,
    /// Kinds whose listing failed: the run did not do what it was asked.
    pub unlisted: Vec<String>,
    /// Kinds not swept at all, and why (recorded by whoever records the run).
    pub unswept: Vec<Unswept>,
}

impl Planned {
    /// Whether the plan leaves out something it was asked to cover.
    pub fn incomplete(&self) -> bool {
        !self.unlisted.is_empty() || self.unswept.iter().any(|u| u.failed)
    }
}

/// One sweep at a time per data directory: two at once would both act on one plan's items
/// and race on the janitor's memory. Held until dropped (the OS lets go if the process dies).
pub struct SweepLock {
    _file: std::fs::File,
}

impl SweepLock {
    /// Takes the lock, waiting at most `wait` for another sweep to finish; `now_ms` (the
    /// time records are written at) is noted in it for the next one's message.
    pub fn acquire(
        data_dir: &std::path::Path,
        wait: std::time::Duration,
        now_ms: i64,
    ) -> anyhow::Result<SweepLock> {
        use std::io::{Read as _, Seek as _, Write as _};
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("cannot create {}", data_dir.display()))?;
        let path = data_dir.join("sweep.lock");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open the sweep lock {}", path.display()))?;
        let deadline = std::time::Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    anyhow::bail!(
                        "another sweep is running in this data directory ({}); it was left to \
                         finish. Try again when it is done, or pass --wait SECONDS",
                        holder.trim()
                    );
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(e).with_context(|| format!("cannot lock {}", path.display()));
                }
            }
        }
        // Who holds it, for the message a second sweep prints.
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(
            file,
            "pid {}, since {}",
            std::process::id(),
            jiff::Timestamp::from_millisecond(now_ms).unwrap_or_default()
        );
        Ok(SweepLock { _file: file })
    }
}

/// Lists what agents left behind and decides keep or remove for each, as of `now`.
/// With `session`, only that agent session's leftovers, whatever their age (see
/// [`nightwatch_janitor::plan_session`]).
pub fn plan_at(
    data_dir: &std::path::Path,
    env: &Environment,
    policy: &Policy,
    now: i64,
    wall: i64,
    session: Option<&str>,
) -> anyhow::Result<Planned> {
    let rules = policy.sweep();
    let store =
        crate::stores::janitor_state(data_dir).context("cannot open the janitor's state")?;
    note_container_activity(store.as_ref(), rules, env, wall);
    let mut state = store.load()?;
    let (owned, unswept) = inventories(rules, env);
    for u in &unswept {
        eprintln!("nightwatch: {}", u.why);
    }
    let inventories: Vec<&dyn Inventory> = owned.iter().map(|i| i.as_ref()).collect();
    progress("listing what agents left behind...");
    let listing = list_all(&inventories);
    let mut unlisted = Vec::new();
    let mut unswept = unswept;
    for (kind, error) in &listing.errors {
        let line = format!("cannot list {kind}s, so none is planned: {error}");
        eprintln!("nightwatch: {line}");
        unswept.push(Unswept {
            kind: *kind,
            why: line.clone(),
            failed: true,
        });
        unlisted.push(line);
    }
    // A sighting is a fact of the real world: `--now` moves what is judged, not when it was seen.
    state.observe(&listing.items, wall);
    store.save(&mut state)?;
    note_owners_from_ledger(data_dir, &listing.items, &mut state)?;
    let planned = match session {
        Some(session) => plan_session(&listing.items, rules, now, &state, session),
        None => plan(&listing.items, rules, now, &state),
    };
    progress(&format!(
        "listed {} item(s): {} to remove, {} to keep",
        planned.entries.len(),
        planned.removals().count(),
        planned.keeps().count()
    ));
    Ok(Planned {
        plan: planned,
        unlisted,
        unswept,
    })
}

/// Records a plan `sweep plan` made: each item planned, keep or remove, with its reasons, and
/// each kind left out; so `nightwatch why` can answer before anything is applied. A plan
/// judged at another time than now (`--now`) is a what-if, and each record says so.
pub fn record_plan(engine: &Engine<'_>, planned: &Planned, what_if: bool) -> anyhow::Result<()> {
    let what_if_ms = what_if.then_some(planned.plan.now_ms);
    let mut events: Vec<Event> = planned.unswept.iter().map(unswept_event).collect();
    events.extend(
        planned
            .plan
            .entries
            .iter()
            .map(|entry| Event::SweepPlanned {
                tool: entry.kind.tool_name().to_owned(),
                swept: swept(entry.kind, &entry.id, &entry.name, &[]),
                remove: entry.decision == Decision::Remove,
                reasons: entry.reasons.clone(),
                what_if_ms,
            }),
    );
    engine.record_all(events)?;
    Ok(())
}

/// Puts each removal through the engine: policy may forbid it, its decision is recorded, and a
/// halt or an ask is escalated like any actor's.
struct JanitorGate<'a> {
    engine: &'a Engine<'a>,
    policy: &'a Policy,
    /// The call id of each item's decision, to join its result to it.
    calls: &'a RefCell<HashMap<String, String>>,
}

impl nightwatch_janitor::Gate for JanitorGate<'_> {
    fn allow(&mut self, item: &Item, entry: &PlanEntry) -> Result<(), String> {
        let call_id = format!(
            "sweep-{}-{}",
            &entry.fingerprint[..entry.fingerprint.len().min(16)],
            self.engine.clock().written_ms()
        );
        let ruling = self
            .engine
            .propose(
                self.policy,
                Proposal {
                    action: removal_action(item),
                    call_id: Some(call_id.clone()),
                    inputs: inputs_of(item.kind(), &item.id, &item.name, &entry.reasons),
                    cwd: None,
                },
            )
            .map_err(|e| format!("the decision could not be recorded: {e}"))?;
        self.calls.borrow_mut().insert(item.id.clone(), call_id);
        match ruling.decision.verdict {
            Verdict::Allow => Ok(()),
            verdict => Err(format!(
                "policy says {verdict} ({}): {}",
                ruling.record.id, ruling.decision.reason
            )),
        }
    }
}

fn inputs_of(kind: Kind, id: &str, name: &str, reasons: &[String]) -> Value {
    serde_json::to_value(swept(kind, id, name, reasons)).unwrap_or(Value::Null)
}

fn swept(kind: Kind, id: &str, name: &str, reasons: &[String]) -> Swept {
    Swept {
        kind: kind.as_str().to_owned(),
        id: id.to_owned(),
        name: name.to_owned(),
        reasons: reasons.to_vec(),
    }
}

/// How an apply went.
#[derive(Default)]
pub struct Tally {
    pub kept: usize,
    pub removed: usize,
    pub failed: usize,
    pub changed: usize,
    /// Planned removals that could not be tried (the item could not be inspected, or its
    /// kind could not be reached): the run did not do what it was asked.
    pub not_done: usize,
}

impl Tally {
    pub fn summary(&self) -> String {
        let mut text = format!(
            "kept {}, removed {}, failed {}, changed since the plan {}",
            self.kept, self.removed, self.failed, self.changed
        );
        if self.not_done > 0 {
            text.push_str(&format!(", not done {}", self.not_done));
        }
        text
    }

    /// Whether anything asked of the run went undone or failed.
    pub fn incomplete(&self) -> bool {
        self.failed > 0 || self.not_done > 0
    }
}

/// Carries out `planned` through `engine`: the plan's keeps recorded first, then each removal
/// re-inspected, proposed, carried out, and its result recorded (with the janitor's memory
/// saved) before the next one starts. `line` gets one line per item as it finishes.
pub fn apply_plan(
    engine: &Engine<'_>,
    policy: &Policy,
    data_dir: &std::path::Path,
    env: &Environment,
    planned: &Plan,
    line: &mut dyn FnMut(&str),
) -> anyhow::Result<Tally> {
    let rules = policy.sweep();
    let now = engine.now_ms();
    let store =
        crate::stores::janitor_state(data_dir).context("cannot open the janitor's state")?;
    let mut state = store.load()?;
    let planned_items: Vec<Item> = planned
        .removals()
        .map(|e| Item {
            id: e.id.clone(),
            name: e.name.clone(),
            facts: e.facts.clone(),
        })
        .collect();
    note_owners_from_ledger(data_dir, &planned_items, &mut state)?;
    let (owned, unswept) = inventories(rules, env);
    let inventories: Vec<&dyn Inventory> = owned.iter().map(|i| i.as_ref()).collect();
    let mut tally = Tally::default();
    // The plan's keeps: "the decision gets logged either way". One commit for all of them.
    let mut keeps: Vec<Event> = unswept.iter().map(unswept_event).collect();
    keeps.extend(planned.keeps().map(|entry| {
        tally.kept += 1;
        Event::SweepKeep {
            tool: entry.kind.tool_name().to_owned(),
            swept: swept(entry.kind, &entry.id, &entry.name, &[]),
            reasons: entry.reasons.clone(),
        }
    }));
    engine.record_all(keeps)?;
    let calls = RefCell::new(HashMap::new());
    let mut gate = JanitorGate {
        engine,
        policy,
        calls: &calls,
    };
    let total = planned.removals().count();
    progress(&format!("re-inspecting and removing {total} item(s)..."));
    let janitor = Actor::new(ActorKind::Janitor, "janitor");
    let mut finished = 0usize;
    let mut record_one = |result: &Applied, state: &mut JanitorState| -> anyhow::Result<()> {
        store.save(state)?;
        match &result.outcome {
            Outcome::Removed | Outcome::Failed { .. } => {
                if matches!(result.outcome, Outcome::Removed) {
                    tally.removed += 1;
                } else {
                    tally.failed += 1;
                }
                let call = calls.borrow().get(&result.id).cloned();
                record_result(engine, &janitor, result, call.as_ref())?;
                if result.newly_quarantined {
                    engine.record(Event::Quarantine {
                        tool: result.kind.tool_name().to_owned(),
                        swept: swept(result.kind, &result.id, &result.name, &[]),
                        why: format!(
                            "gave up removing {} {} after repeated failures; it stays until a human looks: {}",
                            result.kind.as_str(),
                            result.name,
                            describe(&result.outcome)
                        ),
                        notify: policy.safeguards().escalate.halt.clone(),
                    })?;
                }
            }
            other => {
                match other {
                    Outcome::Changed { .. } => tally.changed += 1,
                    Outcome::Uninspectable { .. } | Outcome::Skipped { .. } => tally.not_done += 1,
                    _ => tally.kept += 1,
                }
                engine.record(Event::SweepKeep {
                    tool: result.kind.tool_name().to_owned(),
                    swept: swept(result.kind, &result.id, &result.name, &[]),
                    reasons: vec![describe(other)],
                })?;
            }
        }
        finished += 1;
        line(&format!(
            "[{finished}/{total}] {:<8} {:<9} {}: {}",
            match result.outcome {
                Outcome::Removed => "removed",
                Outcome::Failed { .. } => "FAILED",
                Outcome::Changed { .. } => "changed",
                Outcome::Uninspectable { .. } | Outcome::Skipped { .. } => "NOT DONE",
                _ => "kept",
            },
            result.kind.as_str(),
            result.name,
            describe(&result.outcome)
        ));
        Ok(())
    };
    nightwatch_janitor::apply_each(
        planned,
        &inventories,
        rules,
        now,
        &mut state,
        &mut gate,
        &mut |result, state| record_one(result, state).map_err(|e| format!("{e:#}")),
    )
    .map_err(|why| anyhow::anyhow!("the sweep stopped: a result could not be recorded: {why}"))?;
    Ok(tally)
}

/// How far back a run looks for removals that an earlier run decided and never finished.
const INTERRUPTED_LOOKBACK_MS: i64 = 30 * 24 * 3600 * 1000;

/// A removal the janitor was allowed to make whose result was never recorded: the run that
/// made it was killed (or the host went down) between the decision and the result.
#[derive(Clone, Debug)]
pub struct Unfinished {
    /// The decision's record id.
    pub record: String,
    pub call_id: String,
    pub kind: Kind,
    pub id: String,
    pub name: String,
    pub decided_ms: i64,
}

/// The janitor's allowed removals of the last 30 days with no result, oldest first.
pub fn unfinished_removals(
    ledger: &dyn nightwatch_store::LedgerReader,
    now: i64,
) -> anyhow::Result<Vec<Unfinished>> {
    use nightwatch_ledger::{Filter, event};
    let read = |name: &str| {
        ledger.query(&Filter {
            since_ms: Some(now.saturating_sub(INTERRUPTED_LOOKBACK_MS)),
            actor: Some(ActorKind::Janitor.as_str().to_owned()),
            event: Some(name.to_owned()),
            ..Filter::default()
        })
    };
    let closed: std::collections::HashSet<String> = read(event::RESULT)?
        .into_iter()
        .filter_map(|r| r.call_id)
        .collect();
    Ok(read(event::DECISION)?
        .into_iter()
        .filter(|r| r.verdict.as_deref() == Some(Verdict::Allow.as_str()))
        .filter_map(|r| {
            let call_id = r.call_id.clone().filter(|c| !closed.contains(c))?;
            let text = |key: &str| r.inputs.get(key).and_then(Value::as_str).map(str::to_owned);
            Some(Unfinished {
                kind: Kind::parse(&text("kind")?)?,
                id: text("id")?,
                name: text("name").unwrap_or_default(),
                record: r.id.clone(),
                call_id,
                decided_ms: r.timestamp_ms,
            })
        })
        .collect())
}

/// Finds the removals an interrupted run left without a result, re-inspects each item and
/// records what became of it, joined to its decision: gone (the removal finished before the
/// run died), or still there, in whatever state it is now (it is judged again from that
/// state by this run's plan). An item that cannot be inspected gets no result yet: the next
/// run tries again. Returns one line per item.
pub fn finish_interrupted(
    engine: &Engine<'_>,
    rules: &SweepRules,
    env: &Environment,
) -> anyhow::Result<Vec<String>> {
    let unfinished = unfinished_removals(engine.ledger(), engine.now_ms())?;
    if unfinished.is_empty() {
        return Ok(Vec::new());
    }
    let (owned, _) = inventories(rules, env);
    let janitor = Actor::new(ActorKind::Janitor, "janitor");
    let mut lines = Vec::new();
    for u in unfinished {
        let Some(inventory) = owned.iter().find(|i| i.kind() == u.kind) else {
            lines.push(format!(
                "{} {} ({}): removal {} was interrupted; no {} inventory here to re-inspect it",
                u.kind.as_str(),
                u.name,
                u.id,
                u.record,
                u.kind.as_str()
            ));
            continue;
        };
        let (ok, found) = match inventory.inspect(&u.id) {
            Ok(None) => (
                true,
                "gone: the interrupted removal had finished".to_owned(),
            ),
            Ok(Some(item)) => (
                false,
                format!(
                    "still there ({}): the removal was interrupted before it finished; this run \
                 judges it again as it is now",
                    state_words(&item)
                ),
            ),
            Err(error) => {
                lines.push(format!(
                    "{} {}: removal {} was interrupted and it cannot be inspected now ({error}); \
                     the next run looks again",
                    u.kind.as_str(),
                    u.name,
                    u.record
                ));
                continue;
            }
        };
        engine.record(Event::Result(Report {
            actor: janitor.clone(),
            tool: u.kind.tool_name().to_owned(),
            session_id: None,
            call_id: Some(u.call_id.clone()),
            inputs: inputs_of(u.kind, &u.id, &u.name, &[]),
            outputs: Outputs {
                exit_code: Some(i64::from(!ok)),
                stdout: if ok { found.clone() } else { String::new() },
                stderr: if ok {
                    String::new()
                } else {
                    format!("interrupted: {found}")
                },
            },
            duration_ms: None,
            context: nightwatch_core::Context::default(),
            cwd: None,
        }))?;
        lines.push(format!(
            "{} {}: removal {} was interrupted; found {found}",
            u.kind.as_str(),
            u.name,
            u.record
        ));
    }
    Ok(lines)
}

/// A few words on an item's state: a container's status, exit code and restarts.
fn state_words(item: &Item) -> String {
    match &item.facts {
        Facts::Container(c) => match c.exit_code {
            Some(code) if c.status != "running" => format!("{}, exit code {code}", c.status),
            _ => c.status.clone(),
        },
        _ => "present".to_owned(),
    }
}

/// One scheduled sweep of the daemon, in process: plan as of now, then apply it.
pub fn sweep_once(
    engine: &Engine<'_>,
    policy: &Policy,
    data_dir: &std::path::Path,
    env: &Environment,
) -> anyhow::Result<String> {
    let now = engine.now_ms();
    let _lock = SweepLock::acquire(
        data_dir,
        std::time::Duration::ZERO,
        engine.clock().written_ms(),
    )?;
    for line in finish_interrupted(engine, policy.sweep(), env)? {
        progress(&line);
    }
    let planned = plan_at(data_dir, env, policy, now, now, None)?;
    let tally = apply_plan(engine, policy, data_dir, env, &planned.plan, &mut |_| {})?;
    let mut summary = tally.summary();
    if !planned.unlisted.is_empty() {
        summary.push_str(&format!("; {}", planned.unlisted.join("; ")));
    }
    Ok(summary)
}

/// What became of one planned item, in words.
pub fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Removed => "removed".to_owned(),
        Outcome::AlreadyGone => "already gone".to_owned(),
        Outcome::Changed { what } => {
            format!("changed since the plan ({}): left alone", what.join(", "))
        }
        Outcome::NowKept { reasons } => format!("kept now: {}", reasons.join("; ")),
        Outcome::Refused { why } => format!("refused: {why}"),
        Outcome::Failed {
            error,
            failures,
            quarantined,
            ..
        } => format!(
            "failed ({failures} time(s)){}: {error}",
            if *quarantined { ", quarantined" } else { "" }
        ),
        Outcome::Skipped { why } => format!("skipped: {why}"),
        Outcome::Uninspectable { error } => format!("could not be inspected: {error}"),
    }
}

fn record_result(
    engine: &Engine<'_>,
    janitor: &Actor,
    result: &Applied,
    call_id: Option<&String>,
) -> anyhow::Result<()> {
    let steps: Vec<String> = result
        .removal
        .as_ref()
        .map(|r| {
            r.steps
                .iter()
                .map(|s| {
                    format!(
                        "{}: {} {}",
                        s.what,
                        if s.ok { "ok" } else { "FAILED" },
                        s.detail
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let ok = matches!(result.outcome, Outcome::Removed);
    engine.record(Event::Result(Report {
        actor: janitor.clone(),
        tool: result.kind.tool_name().to_owned(),
        session_id: None,
        call_id: call_id.cloned(),
        inputs: inputs_of(result.kind, &result.id, &result.name, &[]),
        outputs: Outputs {
            exit_code: Some(i64::from(!ok)),
            stdout: steps.join("\n"),
            stderr: if ok {
                String::new()
            } else {
                describe(&result.outcome)
            },
        },
        duration_ms: None,
        context: nightwatch_core::Context::default(),
        cwd: None,
    }))?;
    Ok(())
}
