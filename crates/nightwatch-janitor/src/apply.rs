//! Carrying out a plan: every removal re-inspects its item first and goes ahead only when the
//! item is still in the state that was planned, the rules still say remove (now, with today's
//! labels, activity and backoff), and the gate allows it. Failures back off and, after
//! enough, quarantine the item, which is reported once.

use crate::inventory::{Inventory, Removal};
use crate::item::{Item, Kind};
use crate::plan::{Ctx, Decision, Plan, PlanEntry, compose_project, decide, time};
use crate::rules::SweepRules;
use crate::state::JanitorState;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// Asked before each removal: the place the gate decides the janitor's action (and records it).
pub trait Gate {
    /// `Ok(())` to go ahead, `Err(why)` to leave the item alone.
    fn allow(&mut self, item: &Item, entry: &PlanEntry) -> Result<(), String>;
}

/// A gate that allows everything, for tests and dry runs of the removal path.
pub struct AllowAll;

impl Gate for AllowAll {
    fn allow(&mut self, _: &Item, _: &PlanEntry) -> Result<(), String> {
        Ok(())
    }
}

/// What happened to one planned removal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub kind: Kind,
    pub id: String,
    pub name: String,
    pub outcome: Outcome,
    /// The steps the inventory took (only when it was asked to remove).
    pub removal: Option<Removal>,
    /// This round's failure quarantined the item: notify now; later rounds stay quiet.
    pub newly_quarantined: bool,
}

/// The result of one planned removal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    Removed,
    /// Inspect says the item no longer exists.
    AlreadyGone,
    /// Changed since the plan: left alone. `what` names the facts that differ.
    Changed {
        what: Vec<String>,
    },
    /// Unchanged, but the rules now keep it (a new activity, backing off, quarantined).
    NowKept {
        reasons: Vec<String>,
    },
    /// The gate said no.
    Refused {
        why: String,
    },
    /// The inventory tried and failed; the next try waits, or the item is quarantined.
    Failed {
        error: String,
        failures: u32,
        next_try_ms: i64,
        quarantined: bool,
    },
    /// Not tried: no inventory for the kind, or its worktree was not removed first.
    Skipped {
        why: String,
    },
    /// The item could not be inspected; nothing was done and nothing counted against it.
    Uninspectable {
        error: String,
    },
}

/// Carries out the plan's removals, worktrees before branches. Keeps in the plan are not
/// touched. `state` learns of removals (forgotten) and failures (backoff, quarantine).
pub fn apply(
    plan: &Plan,
    inventories: &[&dyn Inventory],
    rules: &SweepRules,
    now_ms: i64,
    state: &mut JanitorState,
    gate: &mut dyn Gate,
) -> Vec<Applied> {
    let mut results = Vec::new();
    let finished = apply_each(
        plan,
        inventories,
        rules,
        now_ms,
        state,
        gate,
        &mut |a, _| {
            results.push(a.clone());
            Ok(())
        },
    );
    debug_assert!(finished.is_ok(), "collecting cannot fail");
    results
}

/// As [`apply`], handing each item's result to `done` (with the state it left) before the
/// next item starts, so a caller can make it durable: a run killed half way leaves every
/// finished item accounted for. An error from `done` stops the run there and is returned.
pub fn apply_each(
    plan: &Plan,
    inventories: &[&dyn Inventory],
    rules: &SweepRules,
    now_ms: i64,
    state: &mut JanitorState,
    gate: &mut dyn Gate,
    done: &mut dyn FnMut(&Applied, &mut JanitorState) -> Result<(), String>,
) -> Result<usize, String> {
    let mut removals: Vec<&PlanEntry> = plan.removals().collect();
    removals.sort_by_key(|e| e.kind.apply_rank());
    let mut seen: HashSet<(Kind, &str)> = HashSet::new();
    let mut gone: HashSet<&str> = HashSet::new();
    let mut stacks: HashMap<&str, Option<String>> = HashMap::new();
    let session = plan.session.as_deref();
    let mut count = 0;
    let mut report = |entry: &PlanEntry,
                      outcome: Outcome,
                      removal: Option<Removal>,
                      newly_quarantined: bool,
                      state: &mut JanitorState|
     -> Result<(), String> {
        count += 1;
        done(
            &Applied {
                kind: entry.kind,
                id: entry.id.clone(),
                name: entry.name.clone(),
                outcome,
                removal,
                newly_quarantined,
            },
            state,
        )
    };
    let mut next = 0;
    while next < removals.len() {
        // A batch: items of one kind, each inspected, decided again and allowed by the gate,
        // then removed together (as many at once as the inventory can); each result is
        // handed on as it finishes.
        let kind = removals[next].kind;
        let inventory = inventories.iter().find(|i| i.kind() == kind);
        let at_once = inventory.map_or(1, |i| i.removals_at_once().max(1));
        let mut batch: Vec<(&PlanEntry, Item)> = Vec::new();
        while next < removals.len() && removals[next].kind == kind && batch.len() < at_once {
            let entry = removals[next];
            next += 1;
            if !seen.insert((entry.kind, entry.id.as_str())) {
                continue;
            }
            // A compose stack is looked at whole before any of it goes.
            let held = compose_project(&entry.facts).and_then(|project| {
                stacks
                    .entry(project)
                    .or_insert_with(|| {
                        stack_held(
                            project,
                            &removals,
                            inventories,
                            rules,
                            now_ms,
                            state,
                            session,
                        )
                    })
                    .clone()
            });
            let ready = match held {
                Some(why) => Err(Outcome::NowKept { reasons: vec![why] }),
                None => ready(entry, inventory, rules, now_ms, state, gate, &gone, session),
            };
            match ready {
                Ok(item) => batch.push((entry, item)),
                Err(outcome) => {
                    if entry.kind == Kind::Worktree && outcome == Outcome::AlreadyGone {
                        gone.insert(entry.id.as_str());
                    }
                    report(entry, outcome, None, false, state)?;
                }
            }
        }
        let (Some(inventory), false) = (inventory, batch.is_empty()) else {
            continue;
        };
        let items: Vec<&Item> = batch.iter().map(|(_, item)| item).collect();
        inventory.remove_all(&items, now_ms, &mut |index, removal| {
            let Some((entry, _)) = batch.get(index) else {
                return Err(format!(
                    "the inventory reported a removal #{index} it was not given"
                ));
            };
            let (outcome, newly_quarantined) = finish(entry, &removal, rules, now_ms, state);
            if entry.kind == Kind::Worktree && outcome == Outcome::Removed {
                gone.insert(entry.id.as_str());
            }
            report(entry, outcome, Some(removal), newly_quarantined, state)
        })?;
    }
    Ok(count)
}

/// Why compose stack `project` must stay whole, if it must: a planned member that changed
/// since the plan, cannot be inspected, or that the rules now keep. `None` lets it go.
#[allow(clippy::too_many_arguments)]
fn stack_held(
    project: &str,
    removals: &[&PlanEntry],
    inventories: &[&dyn Inventory],
    rules: &SweepRules,
    now_ms: i64,
    state: &JanitorState,
    session: Option<&str>,
) -> Option<String> {
    let members = removals
        .iter()
        .filter(|e| compose_project(&e.facts) == Some(project));
    for member in members {
        let inventory = inventories.iter().find(|i| i.kind() == member.kind)?;
        let why = match inventory.inspect(&member.id) {
            Ok(None) => continue,
            Err(e) => format!("could not be inspected: {e}"),
            Ok(Some(item)) if item.fingerprint() != member.fingerprint => {
                "changed since the plan".to_owned()
            }
            Ok(Some(item)) => {
                let now = decide(&item, rules, now_ms, state, &Ctx::alone(session));
                if now.decision == Decision::Remove {
                    continue;
                }
                format!("is kept now: {}", now.reasons.join("; "))
            }
        };
        return Some(format!(
            "compose stack {project} goes whole or not at all, and its container {} {why}",
            member.name
        ));
    }
    None
}

/// The item to remove, re-inspected, still as planned, still to be removed by the rules, and
/// allowed by the gate; or what became of it instead.
#[allow(clippy::too_many_arguments)]
fn ready(
    entry: &PlanEntry,
    inventory: Option<&&dyn Inventory>,
    rules: &SweepRules,
    now_ms: i64,
    state: &mut JanitorState,
    gate: &mut dyn Gate,
    worktrees_gone: &HashSet<&str>,
    session: Option<&str>,
) -> Result<Item, Outcome> {
    let Some(inventory) = inventory else {
        return Err(Outcome::Skipped {
            why: format!("no inventory for {}s", entry.kind),
        });
    };
    if let Some(worktree) = &entry.after
        && !worktrees_gone.contains(worktree.as_str())
    {
        return Err(Outcome::Skipped {
            why: format!("its worktree {worktree} was not removed first: left for a later round"),
        });
    }
    let item = match inventory.inspect(&entry.id) {
        Err(e) => {
            return Err(Outcome::Uninspectable {
                error: e.to_string(),
            });
        }
        Ok(None) => {
            state.forget(entry.kind, &entry.id);
            return Err(Outcome::AlreadyGone);
        }
        Ok(Some(item)) => item,
    };
    if item.kind() != entry.kind || item.id != entry.id || item.fingerprint() != entry.fingerprint {
        return Err(Outcome::Changed {
            what: changes(entry, &item),
        });
    }
    let now = decide(&item, rules, now_ms, state, &Ctx::alone(session));
    if now.decision == Decision::Keep {
        return Err(Outcome::NowKept {
            reasons: now.reasons,
        });
    }
    if let Err(why) = gate.allow(&item, entry) {
        return Err(Outcome::Refused { why });
    }
    Ok(item)
}

/// What a removal the inventory carried out means: removed (forgotten), or a failure that
/// backs off or quarantines; and whether this failure is the one that quarantined it.
fn finish(
    entry: &PlanEntry,
    removal: &Removal,
    rules: &SweepRules,
    now_ms: i64,
    state: &mut JanitorState,
) -> (Outcome, bool) {
    if removal.succeeded() {
        state.forget(entry.kind, &entry.id);
        return (Outcome::Removed, false);
    }
    let error = removal
        .error()
        .unwrap_or_else(|| "removal failed".to_owned());
    let failed = state.record_failure(entry.kind, &entry.id, now_ms, &rules.failures, &error);
    (
        Outcome::Failed {
            error,
            failures: failed.count,
            next_try_ms: failed.next_try_ms,
            quarantined: failed.quarantined,
        },
        failed.newly_quarantined,
    )
}

/// The facts that differ between the plan and now, as `field: before → after`.
fn changes(entry: &PlanEntry, item: &Item) -> Vec<String> {
    if item.kind() != entry.kind || item.id != entry.id {
        return vec![format!(
            "inspect returned {} {} for {} {}",
            item.kind(),
            item.id,
            entry.kind,
            entry.id
        )];
    }
    let mut what = Vec::new();
    if item.name != entry.name {
        what.push(format!("name: {} → {}", entry.name, item.name));
    }
    let (Ok(serde_json::Value::Object(before)), Ok(serde_json::Value::Object(after))) = (
        serde_json::to_value(&entry.facts),
        serde_json::to_value(&item.facts),
    ) else {
        return what;
    };
    for (key, old) in &before {
        let new = after.get(key).unwrap_or(&serde_json::Value::Null);
        if new != old {
            what.push(format!("{key}: {} → {}", brief(old), brief(new)));
        }
    }
    for (key, new) in &after {
        if !before.contains_key(key) {
            what.push(format!("{key}: (none) → {}", brief(new)));
        }
    }
    if what.is_empty() {
        // Same facts, different fingerprint: the plan file was edited.
        what.push("the plan's fingerprint does not match its facts".to_owned());
    }
    what
}

fn brief(value: &serde_json::Value) -> String {
    let text = match value {
        serde_json::Value::Number(n) => match (n.as_i64(), value_is_time(n)) {
            (Some(ms), true) => time(ms),
            _ => n.to_string(),
        },
        other => other.to_string(),
    };
    if text.chars().count() > 80 {
        let mut cut: String = text.chars().take(77).collect();
        cut.push('…');
        cut
    } else {
        text
    }
}

/// Milliseconds after 2001 are shown as times; counts and pids are far smaller.
fn value_is_time(n: &serde_json::Number) -> bool {
    n.as_i64().is_some_and(|v| v > 978_307_200_000)
}
