//! The decision, as a pure function: items, rules, the time and the janitor's memory in; a
//! [`Plan`] out, with keep or remove and every reason for each item. Nothing here reads a
//! clock, a file or a socket, and nothing here can fail.

use crate::item::{
    BranchFacts, ContainerFacts, Facts, Item, Kind, MergeState, PathFacts, PrState, WorktreeFacts,
    fingerprint_of,
};
use crate::rules::{Span, SweepRules};
use crate::state::JanitorState;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Keep or remove.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Keep,
    Remove,
}

/// One item's decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEntry {
    pub kind: Kind,
    pub id: String,
    pub name: String,
    pub decision: Decision,
    /// Every reason, the ones that keep it first (`labelled nightwatch.keep=true`,
    /// `idle 9d 4h (last: finished 2026-03-01T10:00:00Z) > 5d`).
    pub reasons: Vec<String>,
    /// [`Item::fingerprint`] of the state planned for; apply removes only an item still in it.
    pub fingerprint: String,
    /// The age the rule compared: idle time, age since creation, time unmodified.
    pub age_ms: u64,
    /// The id of a worktree (also in this plan) that must be removed first: a branch checked
    /// out there. The facts and fingerprint are then those the branch will have afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The facts the decision read, so apply can say what changed.
    pub facts: Facts,
}

/// A sweep plan: written by `sweep plan --out FILE`, read back by `sweep apply --plan FILE`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The time ages were evaluated at (ms since 1970).
    pub now_ms: i64,
    /// Removals first in the order they must run (containers, paths, worktrees, branches),
    /// then the keeps.
    pub entries: Vec<PlanEntry>,
    /// The agent session whose leftovers this plan reaps (`sweep plan --session S`): only its
    /// containers, whatever their age. Apply decides again the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl Plan {
    pub fn removals(&self) -> impl Iterator<Item = &PlanEntry> {
        self.entries
            .iter()
            .filter(|e| e.decision == Decision::Remove)
    }

    pub fn keeps(&self) -> impl Iterator<Item = &PlanEntry> {
        self.entries.iter().filter(|e| e.decision == Decision::Keep)
    }

    pub fn to_json(&self) -> String {
        // A plan holds only strings, numbers and plain enums: serializing cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> Result<Plan, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// Decides every item. Items never seen before count as first seen `now_ms` (the caller
/// records sightings with [`JanitorState::observe`]).
pub fn plan(items: &[Item], rules: &SweepRules, now_ms: i64, state: &JanitorState) -> Plan {
    plan_in(items, rules, now_ms, state, None)
}

/// The leftovers of agent session `session` (seed 001: a session's end is when what it started
/// and left running can go): only the containers labelled with it, each removed whatever its
/// age unless something holds it (a keep label, an open exec session, a stack kept whole).
pub fn plan_session(
    items: &[Item],
    rules: &SweepRules,
    now_ms: i64,
    state: &JanitorState,
    session: &str,
) -> Plan {
    let its: Vec<Item> = items
        .iter()
        .filter(|i| started_by_session(i) == Some(session))
        .cloned()
        .collect();
    plan_in(&its, rules, now_ms, state, Some(session))
}

/// The session that started a container, as its ownership labels prove. The ledger's timing
/// join is never proof enough to reap (see [`crate::started_during`]).
fn started_by_session(item: &Item) -> Option<&str> {
    match &item.facts {
        Facts::Container(c) if c.labels.contains_key(crate::rules::OWNER_LABEL) => c
            .labels
            .get(crate::rules::SESSION_LABEL)
            .map(String::as_str),
        _ => None,
    }
}

fn plan_in(
    items: &[Item],
    rules: &SweepRules,
    now_ms: i64,
    state: &JanitorState,
    session: Option<&str>,
) -> Plan {
    let alone = Ctx::alone(session);
    let mut entries: Vec<PlanEntry> = Vec::with_capacity(items.len());
    // Branches last: one checked out only in a worktree that goes can follow it.
    for item in items.iter().filter(|i| i.kind() != Kind::Branch) {
        entries.push(entry(item, decide(item, rules, now_ms, state, &alone)));
    }
    keep_stacks_whole(&mut entries);
    let leaving: HashSet<&str> = entries
        .iter()
        .filter(|e| e.kind == Kind::Worktree && e.decision == Decision::Remove)
        .map(|e| e.id.as_str())
        .collect();
    let ctx = Ctx {
        leaving_worktrees: Some(&leaving),
        reaping: session,
    };
    let mut branches: Vec<PlanEntry> = items
        .iter()
        .filter(|i| i.kind() == Kind::Branch)
        .map(|item| entry(item, decide(item, rules, now_ms, state, &ctx)))
        .collect();
    entries.append(&mut branches);
    entries.sort_by_key(|e| (e.decision == Decision::Keep, e.kind.apply_rank()));
    Plan {
        now_ms,
        entries,
        session: session.map(str::to_owned),
    }
}

/// The compose project a container belongs to, from the label Compose puts on it.
pub(crate) fn compose_project(facts: &Facts) -> Option<&str> {
    match facts {
        Facts::Container(c) => c
            .labels
            .get(crate::rules::COMPOSE_PROJECT_LABEL)
            .map(String::as_str),
        _ => None,
    }
}

/// A compose stack goes whole or not at all: when any of its containers is kept, so are the
/// others, each with the reason (a database removed from under its web server helps no one).
fn keep_stacks_whole(entries: &mut [PlanEntry]) {
    let mut kept_in: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for e in entries.iter().filter(|e| e.decision == Decision::Keep) {
        if let Some(project) = compose_project(&e.facts) {
            kept_in
                .entry(project.to_owned())
                .or_insert_with(|| e.name.clone());
        }
    }
    for e in entries
        .iter_mut()
        .filter(|e| e.decision == Decision::Remove)
    {
        let Some(project) = compose_project(&e.facts) else {
            continue;
        };
        if let Some(kept) = kept_in.get(project) {
            e.decision = Decision::Keep;
            e.reasons.insert(
                0,
                format!("part of compose stack {project}, which goes whole or not at all: its container {kept} is kept"),
            );
        }
    }
}

fn entry(item: &Item, decided: Decided) -> PlanEntry {
    let facts = decided.expect_facts.unwrap_or_else(|| item.facts.clone());
    PlanEntry {
        kind: item.kind(),
        id: item.id.clone(),
        name: item.name.clone(),
        decision: decided.decision,
        reasons: decided.reasons,
        fingerprint: fingerprint_of(&item.id, &item.name, &facts),
        age_ms: decided.age_ms,
        after: decided.after,
        facts,
    }
}

/// What the rest of the plan means for one item.
pub(crate) struct Ctx<'a> {
    /// Worktrees this plan removes; `None` when deciding one item alone (apply).
    leaving_worktrees: Option<&'a HashSet<&'a str>>,
    /// The session whose leftovers are reaped, whatever their age.
    reaping: Option<&'a str>,
}

impl<'a> Ctx<'a> {
    /// Deciding one item alone (as apply does), in a plan that reaps `session` if set.
    pub(crate) fn alone(session: Option<&'a str>) -> Ctx<'a> {
        Ctx {
            leaving_worktrees: None,
            reaping: session,
        }
    }
}

/// One item's decision, before it becomes a [`PlanEntry`].
pub(crate) struct Decided {
    pub(crate) decision: Decision,
    pub(crate) reasons: Vec<String>,
    pub(crate) age_ms: u64,
    pub(crate) after: Option<String>,
    /// The facts expected when the removal runs, when they differ from today's.
    expect_facts: Option<Facts>,
}

/// Reasons that keep an item whatever its age (`holds`), and the age test's verdict.
#[derive(Default)]
struct Reasons {
    holds: Vec<String>,
    removes: Vec<String>,
    /// Why the age test alone keeps it (too young, not idle long enough).
    young: Vec<String>,
    /// Facts worth showing that decide nothing (a keep-until that has passed).
    notes: Vec<String>,
}

impl Reasons {
    fn finish(self, age_ms: u64) -> Decided {
        let remove = self.holds.is_empty() && self.young.is_empty() && !self.removes.is_empty();
        let mut reasons = self.holds;
        let decision = if remove {
            reasons.extend(self.removes);
            Decision::Remove
        } else {
            reasons.extend(self.young);
            reasons.extend(self.removes);
            Decision::Keep
        };
        reasons.extend(self.notes);
        if reasons.is_empty() {
            reasons.push("nothing says to remove it".to_owned());
        }
        Decided {
            decision,
            reasons,
            age_ms,
            after: None,
            expect_facts: None,
        }
    }
}

pub(crate) fn decide(
    item: &Item,
    rules: &SweepRules,
    now_ms: i64,
    state: &JanitorState,
    ctx: &Ctx<'_>,
) -> Decided {
    let kind = item.kind();
    let first_seen = state.first_seen(kind, &item.id).unwrap_or(now_ms);
    let mut reasons = Reasons::default();
    let mut after = None;
    let mut expect_facts = None;
    let age_ms = match &item.facts {
        Facts::Container(c) => {
            let reaped = ctx.reaping.filter(|s| started_by_session(item) == Some(*s));
            match reaped {
                Some(session) => reap(c, rules, now_ms, state, item, session, &mut reasons),
                None => container(c, rules, now_ms, first_seen, state, item, &mut reasons),
            }
        }
        Facts::Worktree(w) => worktree(w, rules, now_ms, first_seen, &mut reasons),
        Facts::Branch(b) => {
            let leaving = b
                .checked_out_in
                .as_deref()
                .filter(|path| ctx.leaving_worktrees.is_some_and(|l| l.contains(path)));
            if let Some(path) = leaving {
                after = Some(path.to_owned());
                let mut expected = b.clone();
                expected.checked_out_in = None;
                expect_facts = Some(Facts::Branch(expected));
            }
            branch(b, rules, now_ms, first_seen, leaving, &mut reasons)
        }
        Facts::Path(p) => path(p, rules, now_ms, &mut reasons),
    };
    failure_holds(kind, &item.id, now_ms, state, &mut reasons);
    let mut decided = reasons.finish(age_ms);
    if decided.decision == Decision::Remove {
        decided.after = after;
        decided.expect_facts = expect_facts;
    }
    decided
}

/// A container of a session being reaped: what holds any container still holds it; its age
/// does not.
fn reap(
    c: &ContainerFacts,
    rules: &SweepRules,
    now_ms: i64,
    state: &JanitorState,
    item: &Item,
    session: &str,
    r: &mut Reasons,
) -> u64 {
    // The holds are the container rule's; only its verdict on age is set aside.
    let mut held = Reasons::default();
    let age = container(c, rules, now_ms, now_ms, state, item, &mut held);
    r.holds = held.holds;
    r.notes = held.notes;
    r.removes.push(format!(
        "left by agent session {session}, whose leftovers are being reaped (sweep --session)"
    ));
    age
}

fn container(
    c: &ContainerFacts,
    rules: &SweepRules,
    now_ms: i64,
    first_seen: i64,
    state: &JanitorState,
    item: &Item,
    r: &mut Reasons,
) -> u64 {
    let cr = &rules.containers;
    // Only proof puts a container in scope: an ownership label, or the operator's scope.
    let in_scope = cr.scope.includes(&c.labels, &item.name);
    match (&in_scope, state.started_by(&item.id)) {
        // Said last, after the facts that decide.
        (Some(_), _) => {}
        // A timing join is a clue, never proof: a person decides (seed 001: "touch only what
        // you started").
        (None, Some(by)) => r.holds.push(format!(
            "no {owner} label, so not provably an agent's: {}; a person decides: label it \
             {owner}=AGENT (or name it in sweep.containers.scope) for the janitor to judge it, \
             or remove it by hand",
            by.describe(),
            owner = crate::rules::OWNER_LABEL
        )),
        (None, None) => r.holds.push(format!(
            "not in the janitor's scope: no {} label says an agent started it, and \
             sweep.containers.scope names none of its labels, its name or its compose project",
            crate::rules::OWNER_LABEL
        )),
    }
    if !c.exec_ids.is_empty() {
        r.holds.push(format!(
            "in use: {} exec session(s) open in it now",
            c.exec_ids.len()
        ));
    }
    if let Some(value) = c.labels.get(&cr.keep_label) {
        if matches!(
            value.trim().to_ascii_lowercase().as_str(),
            "false" | "0" | "no"
        ) {
            r.notes.push(format!(
                "labelled {}={value}, which does not keep it",
                cr.keep_label
            ));
        } else {
            r.holds.push(format!("labelled {}={value}", cr.keep_label));
        }
    }
    if let Some(value) = c.labels.get(&cr.keep_until_label) {
        match keep_until_ms(value) {
            Some(until) if until > now_ms => r.holds.push(format!(
                "labelled {}={value}: kept until {}",
                cr.keep_until_label,
                time(until)
            )),
            Some(until) => r.notes.push(format!(
                "labelled {}={value}, which passed at {}",
                cr.keep_until_label,
                time(until)
            )),
            None => r.holds.push(format!(
                "labelled {}={value}, which is not a date (YYYY-MM-DD or RFC 3339): kept to be safe",
                cr.keep_until_label
            )),
        }
    }
    let (created, created_what) = match c.created_ms {
        Some(at) => (at, "created"),
        None => (first_seen, "first seen"),
    };
    let looping = is_looping(c, cr.restart_loop_restarts, now_ms);
    let age_ms;
    if looping {
        age_ms = elapsed(now_ms, created);
        let test = format!(
            "restart loop ({} restarts, {}): aged from creation, {} old ({created_what} {})",
            c.restart_count,
            c.status,
            Span::from_ms(age_ms),
            time(created)
        );
        if age_ms > cr.restart_loop_max_age.as_ms() {
            r.removes
                .push(format!("{test} > {}", cr.restart_loop_max_age));
        } else {
            r.young
                .push(format!("{test}, not over {}", cr.restart_loop_max_age));
        }
    } else {
        let activity = state.activity(Kind::Container, &item.id);
        let (last, last_what) = [
            (c.created_ms, "created"),
            (c.started_ms, "started"),
            (c.finished_ms, "finished"),
            (activity, "activity seen"),
        ]
        .into_iter()
        .filter_map(|(at, what)| at.map(|at| (at, what)))
        .max_by_key(|(at, _)| *at)
        .unwrap_or((first_seen, "first seen"));
        age_ms = elapsed(now_ms, last);
        let test = format!(
            "idle {} (last: {last_what} {})",
            Span::from_ms(age_ms),
            time(last)
        );
        if age_ms > cr.max_idle.as_ms() {
            r.removes.push(format!("{test} > {}", cr.max_idle));
        } else {
            r.young.push(format!("{test}, not over {}", cr.max_idle));
        }
    }
    if let Some(rule) = cr.max_age.iter().find(|rule| rule.matches(&item.name)) {
        let age = elapsed(now_ms, created);
        if age > rule.max_age().as_ms() {
            // Over its named maximum age it goes however recently it was active.
            r.young.clear();
            r.removes.push(format!(
                "{} old ({created_what} {}) > {} for containers named {}",
                Span::from_ms(age),
                time(created),
                rule.max_age(),
                rule.name()
            ));
        }
    }
    r.notes.extend(in_scope);
    age_ms
}

/// How recently a running container with many restarts must have started to count as still
/// looping: a loop restarts within seconds or minutes (Docker's backoff tops out at a minute),
/// while restarts long past (a reboot, an upgrade) say nothing about today.
const LOOP_WINDOW_MS: i64 = 15 * 60 * 1000;

/// A container is looping while it crashes and restarts: restarting now, exited with an error
/// after `restarts` restarts, or running again after them within [`LOOP_WINDOW_MS`]. Its
/// restart count alone, accumulated over a whole life, is not a loop.
fn is_looping(c: &ContainerFacts, restarts: u32, now_ms: i64) -> bool {
    if c.status == "restarting" {
        return true;
    }
    if c.restart_count < restarts {
        return false;
    }
    match c.status.as_str() {
        "exited" | "dead" => c.exit_code.is_some_and(|code| code != 0),
        "running" => c
            .started_ms
            .is_some_and(|started| now_ms.saturating_sub(started) <= LOOP_WINDOW_MS),
        _ => false,
    }
}

/// `2026-06-30` keeps through the end of that day (UTC); an RFC 3339 time keeps until then.
fn keep_until_ms(value: &str) -> Option<i64> {
    let value = value.trim();
    if let Ok(ts) = value.parse::<jiff::Timestamp>() {
        return Some(ts.as_millisecond());
    }
    let date: jiff::civil::Date = value.parse().ok()?;
    let next = date.tomorrow().ok()?;
    let ts = next
        .to_zoned(jiff::tz::TimeZone::UTC)
        .ok()?
        .timestamp()
        .as_millisecond();
    Some(ts - 1)
}

fn worktree(
    w: &WorktreeFacts,
    rules: &SweepRules,
    now_ms: i64,
    first_seen: i64,
    r: &mut Reasons,
) -> u64 {
    let base = &rules.worktrees.base;
    if w.is_main {
        r.holds.push("the main worktree".to_owned());
    }
    match &w.locked {
        Some(why) if why.trim().is_empty() => r.holds.push("locked".to_owned()),
        Some(why) => r.holds.push(format!("locked: {why}")),
        None => {}
    }
    match &w.dirty {
        Some(what) => r.holds.push(format!("uncommitted changes: {what}")),
        None => r.removes.push("clean".to_owned()),
    }
    if !w.in_use_by.is_empty() {
        let users: Vec<String> = w
            .in_use_by
            .iter()
            .map(|p| format!("pid {} ({})", p.pid, p.command))
            .collect();
        r.holds.push(format!("in use by {}", users.join(", ")));
    }
    let what = match &w.branch {
        Some(b) => format!("branch {b}"),
        None => format!("detached HEAD {}", short(&w.head)),
    };
    match &w.merge {
        MergeState::Ancestor { into } if into == base => {
            r.removes.push(format!("{what} merged into {into}"));
        }
        MergeState::SquashedContent { into } if into == base => r
            .removes
            .push(format!("{what} merged into {into} by content (squash)")),
        MergeState::Ancestor { into } | MergeState::SquashedContent { into } => r
            .holds
            .push(format!("{what} merged into {into}, not the base {base}")),
        MergeState::NotMerged { into } => r.holds.push(format!("{what} not merged into {into}")),
        MergeState::Unknown { why } => r.holds.push(format!("merge state unknown: {why}")),
    }
    match &w.pr {
        PrState::Merged { commit } => r.removes.push(format!("PR merged from {}", short(commit))),
        PrState::Closed => r.removes.push("PR closed".to_owned()),
        PrState::NoPr => r.removes.push("no PR".to_owned()),
        PrState::Open { url: Some(url) } => r.holds.push(format!("PR open: {url}")),
        PrState::Open { url: None } => r.holds.push("PR open".to_owned()),
        PrState::Unknown { why } => r.holds.push(format!("PR state unknown: {why}")),
    }
    let (born, born_what) = match w.created_ms {
        Some(at) => (at, "created"),
        None => (first_seen, "first seen"),
    };
    let age = elapsed(now_ms, born);
    let min_age = rules.worktrees.min_age;
    let test = format!("{} old ({born_what} {})", Span::from_ms(age), time(born));
    if age < min_age.as_ms() {
        r.young.push(format!("too young: {test} < {min_age}"));
    } else {
        r.removes.push(format!("{test} ≥ {min_age}"));
    }
    age
}

/// A branch goes when a PR merged from exactly its tip (or, under `branches.ancestry: true`,
/// when the base holds its tip), and it is old enough. Ancestry is not enough by default: a
/// branch an agent made a moment ago at the base's tip is "in the base" as well.
fn branch(
    b: &BranchFacts,
    rules: &SweepRules,
    now_ms: i64,
    first_seen: i64,
    leaving_worktree: Option<&str>,
    r: &mut Reasons,
) -> u64 {
    let base = &rules.branches.base;
    let ancestry = rules.branches.ancestry;
    if &b.name == base {
        r.holds.push(format!("the base branch {base}"));
    }
    match (&b.checked_out_in, leaving_worktree) {
        (Some(_), Some(path)) => r
            .removes
            .push(format!("after its worktree {path} is removed")),
        (Some(path), None) => r.holds.push(format!("checked out in worktree {path}")),
        (None, _) => {}
    }
    let tip = short(&b.tip);
    let in_base = b.merged_commit.as_deref() == Some(b.tip.as_str());
    let pr_at_tip = matches!(&b.pr, PrState::Merged { commit } if commit == &b.tip);
    let pr_says = match &b.pr {
        PrState::Merged { .. } if pr_at_tip => None,
        PrState::Merged { commit } => Some(format!(
            "PR merged from {} but the tip is now {tip}",
            short(commit)
        )),
        // Work in progress, whatever else is true.
        PrState::Open { url } => {
            r.holds.push(match url {
                Some(url) => format!("PR open: {url}"),
                None => "PR open".to_owned(),
            });
            None
        }
        PrState::Closed => Some("PR closed without merging".to_owned()),
        PrState::NoPr => Some("no PR for this branch".to_owned()),
        PrState::Unknown { why } => Some(format!("PR state unknown: {why}")),
    };
    if pr_at_tip {
        r.removes.push(format!("PR merged from its tip {tip}"));
    }
    if let Some(why) = pr_says {
        // Shown either way; it keeps the branch unless ancestry, allowed, already proves it.
        if ancestry && in_base {
            r.notes.push(why);
        } else {
            r.holds.push(why);
        }
    }
    match (in_base, ancestry) {
        (true, true) => r
            .removes
            .push(format!("tip {tip} is in {base} (branches.ancestry: true)")),
        (true, false) if !pr_at_tip => r.holds.push(format!(
            "tip {tip} is in {base}, but ancestry alone does not delete a branch (branches.ancestry: false)"
        )),
        (false, true) if !pr_at_tip => r.holds.push(format!("tip {tip} is not in {base}")),
        _ => {}
    }
    // The later of the tip's commit and the first sighting: a new branch at an old commit
    // is as young as the sighting.
    let (since, since_what) = match b.tip_time_ms {
        Some(at) if at > first_seen => (at, "tip committed"),
        _ => (first_seen, "first seen"),
    };
    let age = elapsed(now_ms, since);
    let min_age = rules.branches.min_age;
    let test = format!("{} old ({since_what} {})", Span::from_ms(age), time(since));
    if age < min_age.as_ms() {
        r.young.push(format!("too young: {test} < {min_age}"));
    } else {
        r.removes.push(format!("{test} ≥ {min_age}"));
    }
    age
}

fn path(p: &PathFacts, rules: &SweepRules, now_ms: i64, r: &mut Reasons) -> u64 {
    let Some(rule) = rules.path_rule(&p.rule) else {
        r.holds
            .push(format!("no paths rule for glob {} any more", p.rule));
        return 0;
    };
    if p.keep_file {
        r.holds.push(format!("contains {}", rule.keep_file()));
    }
    let Some(modified) = p.modified_ms else {
        r.holds
            .push("modification time unknown (unreadable, or too many entries)".to_owned());
        return 0;
    };
    let age = elapsed(now_ms, modified);
    let test = format!(
        "unmodified for {} (last: {})",
        Span::from_ms(age),
        time(modified)
    );
    if age > rule.max_age().as_ms() {
        r.removes.push(format!("{test} > {}", rule.max_age()));
    } else {
        r.young.push(format!("{test}, not over {}", rule.max_age()));
    }
    age
}

fn failure_holds(kind: Kind, id: &str, now_ms: i64, state: &JanitorState, r: &mut Reasons) {
    let Some(f) = state.failures(kind, id) else {
        return;
    };
    if f.quarantined {
        r.holds.push(format!(
            "quarantined after {} failed removals (last: {}): release it to try again",
            f.count, f.last_error
        ));
    } else if f.next_try_ms > now_ms {
        r.holds.push(format!(
            "backing off after {} failed removal{} (last: {}): next try after {}",
            f.count,
            if f.count == 1 { "" } else { "s" },
            f.last_error,
            time(f.next_try_ms)
        ));
    }
}

fn elapsed(now_ms: i64, since_ms: i64) -> u64 {
    u64::try_from(now_ms.saturating_sub(since_ms)).unwrap_or(0)
}

/// `2026-03-01T10:00:00Z`, to the second.
pub(crate) fn time(ms: i64) -> String {
    match jiff::Timestamp::from_second(ms.div_euclid(1000)) {
        Ok(ts) => ts.to_string(),
        Err(_) => format!("{ms} ms since 1970"),
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
