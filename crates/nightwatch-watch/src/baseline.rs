//! Robot baselines: every actor's actions per hour and per day against what is expected of it.
//!
//! Seed 000's backup job fired 46 times a day where once was right, and a retrier hit a wall
//! 6,483 times; nothing said so, because nothing was broken. This watcher counts the ledger's
//! `decision` records (every action of every actor: an agent's call, `nightwatch exec`, a
//! runbook, the janitor, the idle controller, a robot reporting through the daemon's event
//! API) per actor (kind and id) and tool, and compares the counts with a declared expectation
//! or with a baseline learned from the actor's own history. A decision counts whatever its
//! verdict: a robot that keeps proposing a halted backup is still storming.
//!
//! ```yaml
//! watch:
//!   watchers:
//!     robots:
//!       every: 10m
//!       baselines:
//!         expect:                       # actor -> rate, or actor -> { tool -> rate }
//!           backup-job: 1/day           # an actor id (glob), any kind: each of its tools
//!           "robot:retrier": 60/h       # kind:id
//!           "script:nightly-*": { backup: 2/day, "prune*": 1/day }   # per tool (globs)
//!         learn: { days: 14, factor: 4, at_least: 20 }
//! ```
//!
//! - **Declared** (`expect`): a rate is a ceiling, `N/PERIOD` with PERIOD `h`, `hour`, `d`,
//!   `day` or any duration (`N/30m`). More than N actions in the last PERIOD (rolling) is a
//!   finding. When several entries match one actor and tool, each is judged and any exceeded
//!   one is the finding. Every actor and tool a declaration matches gets an `ok` observation
//!   when within it, so its finding clears.
//! - **Learned** (`learn`, for every actor and tool no declaration names): the count of the
//!   last 24 hours against the actor's typical day, the median of its counts over the
//!   previous `days` days (to the hour; days before the ledger's first record are not
//!   counted). More than `max(at_least, factor * typical)` is a finding. An actor within its
//!   baseline says nothing unless it was found before (then `ok`, so the finding clears):
//!   a ledger of thousands of actors does not become thousands of observations a run.
//!
//! Reading the ledger: the first run reads the learning window hour by hour (by time, with
//! the ledger's timestamp index); later runs read only what was appended since (by sequence
//! number) and keep per-hour counts, so a run every 10 minutes costs what those minutes
//! wrote. A first read that outlasts the watcher's timeout resumes where it stopped.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use globset::{Glob, GlobMatcher};
use nightwatch_ledger::{Filter, Record, event};
use nightwatch_store::LedgerReader;
use serde::Deserialize;
use serde_json::json;

use crate::{Env, Observation, Seen};

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;
/// The longest period a declared rate may name: a month.
const MAX_PERIOD: Duration = Duration::from_secs(31 * 24 * 3600);
/// How many records a later run reads at once.
const SEQ_CHUNK: u64 = 20_000;
/// The subject of the watcher's own trouble reading the ledger.
const LEDGER_SUBJECT: &str = "baselines: the ledger";

/// The watcher as declared, and what it remembers between runs.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "FileBaselines")]
pub struct BaselineSpec {
    pub expect: Vec<Expectation>,
    pub learn: Option<Learn>,
    /// Counts read so far, shared by the clones of one watcher (the daemon's copy and its
    /// runs).
    memory: Arc<Mutex<Memory>>,
}

/// One declared expectation: which actors and tools, and their ceiling.
#[derive(Clone, Debug)]
pub struct Expectation {
    /// As written: `backup-job`, `robot:retrier`.
    pub actor: String,
    kind: Option<String>,
    id: GlobMatcher,
    /// `None`: each of the actor's tools.
    tool: Option<(String, GlobMatcher)>,
    pub rate: Rate,
}

impl Expectation {
    fn matches(&self, key: &Key) -> bool {
        self.kind.as_ref().is_none_or(|k| *k == key.kind)
            && self.id.is_match(&key.id)
            && self
                .tool
                .as_ref()
                .is_none_or(|(_, t)| t.is_match(&key.tool))
    }
}

/// How the learned baseline judges.
#[derive(Clone, Debug, PartialEq)]
pub struct Learn {
    /// How many days before the last 24 hours the typical day is taken from.
    pub days: u32,
    /// How many typical days' worth in the last 24 hours is a finding.
    pub factor: f64,
    /// Never a finding at or below this many a day, however quiet the history.
    pub at_least: u64,
}

impl Default for Learn {
    fn default() -> Learn {
        Learn {
            days: 14,
            factor: 4.0,
            at_least: 20,
        }
    }
}

/// A ceiling: at most `count` actions in any `per`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub count: u64,
    pub per: Duration,
}

/// Why a rate was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad rate {text:?}: {reason} (write e.g. 1/day, 60/h or 4/30m)")]
pub struct RateError {
    pub text: String,
    pub reason: String,
}

impl Rate {
    /// Reads `N/PERIOD`: `1/day`, `60/h`, `2/d`, `10/hour`, `4/30m`. The period goes through
    /// the one duration grammar (a bare unit is one of it); at most a month.
    pub fn parse(text: &str) -> Result<Rate, RateError> {
        let bad = |reason: &str| RateError {
            text: text.to_owned(),
            reason: reason.to_owned(),
        };
        let (count, per) = text
            .split_once('/')
            .ok_or_else(|| bad("a count, a slash and a period"))?;
        let count = count.trim();
        if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("the count is a whole number"));
        }
        let count: u64 = count.parse().map_err(|_| bad("the count is too large"))?;
        if count > 1_000_000_000 {
            return Err(bad("the count is too large"));
        }
        let per = per.trim();
        let spelled = if per.starts_with(|c: char| c.is_ascii_digit()) {
            per.to_owned()
        } else {
            format!("1{per}")
        };
        let per = nightwatch_time::parse_duration(&spelled).map_err(|e| bad(&e.to_string()))?;
        if per < Duration::from_secs(60) {
            return Err(bad("the period is at least a minute"));
        }
        if per > MAX_PERIOD {
            return Err(bad("the period is at most a month (31d)"));
        }
        Ok(Rate { count, per })
    }

    fn per_ms(&self) -> i64 {
        i64::try_from(self.per.as_millis()).unwrap_or(i64::MAX)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let per = match self.per.as_secs() {
            3600 => "h".to_owned(),
            86_400 => "day".to_owned(),
            _ => nightwatch_time::format_duration(self.per),
        };
        write!(f, "{}/{per}", self.count)
    }
}

/// Who did what: the counting key, and an observation's subject.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Key {
    kind: String,
    id: String,
    tool: String,
}

impl Key {
    fn of(r: &Record) -> Key {
        Key {
            kind: r.actor.kind.clone(),
            id: r.actor.id.clone(),
            tool: r.tool.clone(),
        }
    }

    fn subject(&self) -> String {
        format!("actor {}:{} {}", self.kind, self.id, self.tool)
    }

    fn who(&self) -> String {
        format!("{}:{}", self.kind, self.id)
    }
}

/// One actor and tool's actions, as read.
#[derive(Clone, Debug, Default)]
struct Counts {
    /// Actions per hour (Unix hour number), over the learning window.
    by_hour: BTreeMap<i64, u32>,
    /// Each action of the recent window: its time and whether it was allowed.
    recent: Vec<(i64, bool)>,
}

/// What the watcher remembers between runs.
#[derive(Debug, Default)]
struct Memory {
    counts: HashMap<Key, Counts>,
    /// Every record up to this sequence number is counted.
    cursor: Option<u64>,
    /// A first read in progress: the hour it goes on from, and the head it reads up to.
    first_read: Option<(i64, u64)>,
    /// The earliest action read: how far back the ledger's history goes.
    first_ms: Option<i64>,
    /// The subjects the last run raised (found or unknown): each gets an `ok` when it clears.
    raised: BTreeSet<String>,
}

impl BaselineSpec {
    /// The spec from its parts (a config built by hand rather than read).
    pub fn new(expect: Vec<Expectation>, learn: Option<Learn>) -> BaselineSpec {
        BaselineSpec {
            expect,
            learn,
            memory: Arc::default(),
        }
    }

    /// How far back the counts must go: the learning window, the longest declared period,
    /// and at least the last 24 hours.
    fn horizon_ms(&self) -> i64 {
        let learned = self
            .learn
            .as_ref()
            .map_or(0, |l| (i64::from(l.days) + 1) * DAY_MS);
        let declared = self
            .expect
            .iter()
            .map(|e| e.rate.per_ms())
            .max()
            .unwrap_or(0);
        learned.max(declared).max(DAY_MS)
    }

    /// How far back each action is kept with its time.
    fn recent_ms(&self) -> i64 {
        let declared = self
            .expect
            .iter()
            .map(|e| e.rate.per_ms())
            .max()
            .unwrap_or(0);
        declared.max(DAY_MS)
    }

    /// One run: reads what is new in the ledger, then judges every actor and tool.
    pub fn run(&self, env: &Env<'_>) -> Vec<Observation> {
        let mut memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        let deadline = Instant::now() + env.timeout;
        let mut out = Vec::new();
        match self.read(env.ledger, env.now_ms, deadline, &mut memory) {
            Ok(Reading::Done) => {}
            Ok(Reading::Partial { hours_left }) => {
                out.push(Observation::new(
                    LEDGER_SUBJECT,
                    Seen::Unknown,
                    format!(
                        "still reading the ledger's history ({hours_left} hours to go); \
                         the next run goes on where this one stopped"
                    ),
                ));
            }
            Err(e) => out.push(Observation::new(
                LEDGER_SUBJECT,
                Seen::Unknown,
                format!("cannot read the ledger: {e}"),
            )),
        }
        if out.is_empty() {
            out.extend(judge(self, &memory, env.now_ms));
            if memory.raised.contains(LEDGER_SUBJECT) {
                out.push(Observation::new(
                    LEDGER_SUBJECT,
                    Seen::Ok,
                    "the ledger is read again",
                ));
            }
        } else {
            // Judging half-read counts would clear findings that are still there.
            out.extend(
                memory
                    .raised
                    .iter()
                    .filter(|s| *s != LEDGER_SUBJECT)
                    .map(|s| {
                        Observation::new(
                            s.clone(),
                            Seen::Unknown,
                            "cannot tell: the ledger is not read yet",
                        )
                    }),
            );
        }
        memory.raised = out
            .iter()
            .filter(|o| o.seen != Seen::Ok)
            .map(|o| o.subject.clone())
            .collect();
        out
    }

    /// Brings the counts up to the ledger's head.
    fn read(
        &self,
        ledger: &dyn LedgerReader,
        now_ms: i64,
        deadline: Instant,
        memory: &mut Memory,
    ) -> Result<Reading, nightwatch_store::StoreError> {
        let head = ledger
            .query(&Filter {
                limit: Some(1),
                ..Filter::default()
            })?
            .first()
            .map_or(0, |r| r.seq);
        if memory.cursor.is_some_and(|c| c > head)
            || memory.first_read.is_some_and(|(_, h)| h > head)
        {
            // Another ledger than the one counted (restored, replaced): start again.
            *memory = Memory {
                raised: std::mem::take(&mut memory.raised),
                ..Memory::default()
            };
        }
        let horizon = now_ms.saturating_sub(self.horizon_ms());
        let recent_from = now_ms.saturating_sub(self.recent_ms());
        if memory.cursor.is_none() {
            // The first read, by time: the timestamp index finds the window's records
            // without walking older ones. Records appended meanwhile (past `head`) are left
            // to the next run's read by sequence number.
            let (mut hour, head) = memory
                .first_read
                .unwrap_or((horizon.div_euclid(HOUR_MS), head));
            // How far back the history goes: the ledger's first record (by its key, cheap).
            if let Some(first) = ledger
                .query(&Filter {
                    before_seq: Some(2),
                    ..Filter::default()
                })?
                .first()
            {
                memory.first_ms = Some(first.timestamp_ms);
            }
            let last_hour = now_ms.div_euclid(HOUR_MS);
            while hour <= last_hour {
                if Instant::now() > deadline {
                    memory.first_read = Some((hour, head));
                    return Ok(Reading::Partial {
                        hours_left: last_hour - hour + 1,
                    });
                }
                let records = ledger.query(&Filter {
                    since_ms: Some(hour * HOUR_MS),
                    // The last hour takes what is stamped later too (a clock ahead).
                    until_ms: (hour < last_hour).then_some((hour + 1) * HOUR_MS),
                    event: Some(event::DECISION.to_owned()),
                    ..Filter::default()
                })?;
                for r in records.iter().filter(|r| r.seq <= head) {
                    count(memory, r, horizon, recent_from);
                }
                hour += 1;
            }
            memory.first_read = None;
            memory.cursor = Some(head);
        } else {
            let mut after = memory.cursor.unwrap_or(0);
            while after < head {
                let upto = head.min(after.saturating_add(SEQ_CHUNK));
                let records = ledger.query(&Filter {
                    after_seq: Some(after),
                    before_seq: Some(upto.saturating_add(1)),
                    event: Some(event::DECISION.to_owned()),
                    ..Filter::default()
                })?;
                for r in &records {
                    count(memory, r, horizon, recent_from);
                }
                after = upto;
                memory.cursor = Some(after);
            }
        }
        prune(memory, horizon, recent_from);
        Ok(Reading::Done)
    }
}

enum Reading {
    Done,
    Partial { hours_left: i64 },
}

fn count(memory: &mut Memory, r: &Record, horizon: i64, recent_from: i64) {
    if r.event != event::DECISION || r.timestamp_ms < horizon {
        return;
    }
    memory.first_ms = Some(
        memory
            .first_ms
            .map_or(r.timestamp_ms, |f| f.min(r.timestamp_ms)),
    );
    let counts = memory.counts.entry(Key::of(r)).or_default();
    *counts
        .by_hour
        .entry(r.timestamp_ms.div_euclid(HOUR_MS))
        .or_default() += 1;
    if r.timestamp_ms >= recent_from {
        let allowed = r.verdict.as_deref() == Some("allow");
        counts.recent.push((r.timestamp_ms, allowed));
    }
}

/// Forgets what has aged out of the windows.
fn prune(memory: &mut Memory, horizon: i64, recent_from: i64) {
    let first_hour = horizon.div_euclid(HOUR_MS);
    memory.counts.retain(|_, c| {
        c.by_hour = c.by_hour.split_off(&first_hour);
        c.recent.retain(|(t, _)| *t >= recent_from);
        !c.by_hour.is_empty() || !c.recent.is_empty()
    });
}

/// Every observation of one run over the counts read.
fn judge(spec: &BaselineSpec, memory: &Memory, now_ms: i64) -> Vec<Observation> {
    let mut keys: Vec<&Key> = memory.counts.keys().collect();
    keys.sort();
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for key in keys {
        let counts = &memory.counts[key];
        let declared: Vec<&Expectation> = spec.expect.iter().filter(|e| e.matches(key)).collect();
        let observation = if !declared.is_empty() {
            Some(judge_declared(key, counts, &declared, now_ms))
        } else if let Some(learn) = &spec.learn {
            let window = Window::of(counts, now_ms, memory.first_ms, learn.days);
            let judged = judge_learned(learn, &window);
            let subject = key.subject();
            match judged {
                Judged::Above { threshold, typical } => Some(
                    Observation::new(
                        subject,
                        Seen::Found,
                        format!(
                            "{} proposed {} {} times in the last 24h; its typical day is {typical} \
                             (median of {} days), so more than {threshold} is far above it",
                            key.who(),
                            key.tool,
                            window.last_day,
                            window.days.len()
                        ),
                    )
                    .with_details(json!({
                        "actor": key.who(), "tool": key.tool, "count": window.last_day,
                        "window": "24h", "typical": typical, "days": window.days,
                        "threshold": threshold, "factor": learn.factor, "at_least": learn.at_least,
                    })),
                ),
                Judged::Within { threshold, typical } if memory.raised.contains(&subject) => Some(
                    Observation::new(
                        subject,
                        Seen::Ok,
                        format!(
                            "{} proposed {} {} times in the last 24h, within its baseline \
                             ({threshold}; typical {typical})",
                            key.who(),
                            key.tool,
                            window.last_day
                        ),
                    )
                    .with_details(json!({
                        "actor": key.who(), "tool": key.tool, "count": window.last_day,
                        "window": "24h", "typical": typical, "threshold": threshold,
                    })),
                ),
                Judged::Within { .. } => None,
            }
        } else {
            None
        };
        if let Some(o) = observation {
            seen.insert(o.subject.clone());
            out.push(o);
        }
    }
    // A subject raised before that has nothing left in the window at all.
    for subject in &memory.raised {
        if subject != LEDGER_SUBJECT && !seen.contains(subject) {
            out.push(Observation::new(
                subject.clone(),
                Seen::Ok,
                "no actions left in the window",
            ));
        }
    }
    out
}

fn judge_declared(
    key: &Key,
    counts: &Counts,
    declared: &[&Expectation],
    now_ms: i64,
) -> Observation {
    let in_window = |e: &Expectation| {
        let from = now_ms.saturating_sub(e.rate.per_ms());
        let mut n = 0u64;
        let mut allowed = 0u64;
        for (t, ok) in &counts.recent {
            if *t >= from {
                n += 1;
                allowed += u64::from(*ok);
            }
        }
        (n, allowed)
    };
    let judged: Vec<(&Expectation, u64, u64)> = declared
        .iter()
        .map(|e| {
            let (n, allowed) = in_window(e);
            (*e, n, allowed)
        })
        .collect();
    let over = judged.iter().find(|(e, n, _)| *n > e.rate.count);
    let (e, n, allowed) = over.copied().unwrap_or(judged[0]);
    let window = nightwatch_time::format_duration(e.rate.per);
    let window = if window == "1d" {
        "24h".to_owned()
    } else {
        window
    };
    let seen = if over.is_some() {
        Seen::Found
    } else {
        Seen::Ok
    };
    let summary = format!(
        "{} proposed {} {n} times in the last {window} ({allowed} allowed); expected at most {}",
        key.who(),
        key.tool,
        e.rate
    );
    Observation::new(key.subject(), seen, summary).with_details(json!({
        "actor": key.who(), "tool": key.tool, "count": n, "allowed": allowed,
        "window": window, "expected": e.rate.to_string(), "declared_for": e.actor,
    }))
}

/// One actor and tool's counts as the learned baseline sees them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Actions in the last 24 hours.
    pub last_day: u64,
    /// Actions in each of the previous days the ledger covers, most recent first.
    pub days: Vec<u64>,
}

impl Window {
    fn of(counts: &Counts, now_ms: i64, first_ms: Option<i64>, days: u32) -> Window {
        let now_hour = now_ms.div_euclid(HOUR_MS);
        // Day k is the 24 hours ending k days before this hour: (now_hour-24(k+1), now_hour-24k].
        let day = |k: i64| -> u64 {
            let hi = now_hour - 24 * k;
            counts
                .by_hour
                .range(hi - 23..=hi)
                .map(|(_, n)| u64::from(*n))
                .sum()
        };
        let from = now_ms.saturating_sub(DAY_MS);
        let last_day = counts.recent.iter().filter(|(t, _)| *t >= from).count() as u64;
        let covered =
            |k: i64| first_ms.is_some_and(|f| f <= (now_hour - 24 * (k + 1) + 1) * HOUR_MS);
        let days = (1..=i64::from(days))
            .take_while(|k| covered(*k))
            .map(day)
            .collect();
        Window { last_day, days }
    }
}

/// The learned baseline's word on one actor and tool.
#[derive(Clone, Debug, PartialEq)]
pub enum Judged {
    Above { threshold: u64, typical: u64 },
    Within { threshold: u64, typical: u64 },
}

/// Judges a window against the learned baseline: the typical day is the median of the
/// previous days (none: 0); more than `max(at_least, factor * typical)` is far above it.
pub fn judge_learned(learn: &Learn, window: &Window) -> Judged {
    let typical = median(&window.days);
    let scaled = (learn.factor * typical as f64).ceil();
    let scaled = if scaled.is_finite() && scaled < u64::MAX as f64 {
        scaled as u64
    } else {
        u64::MAX
    };
    let threshold = scaled.max(learn.at_least);
    if window.last_day > threshold {
        Judged::Above { threshold, typical }
    } else {
        Judged::Within { threshold, typical }
    }
}

fn median(days: &[u64]) -> u64 {
    if days.is_empty() {
        return 0;
    }
    let mut sorted = days.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() / 2]
}

// ---- the section as written ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileBaselines {
    #[serde(default)]
    expect: BTreeMap<String, FileRate>,
    learn: Option<FileLearn>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum FileRate {
    Each(String),
    PerTool(BTreeMap<String, String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLearn {
    days: Option<u32>,
    factor: Option<f64>,
    at_least: Option<u64>,
}

/// Why the `baselines:` section was refused.
#[derive(Debug, thiserror::Error)]
#[error("baselines: {0}")]
pub struct BaselineError(String);

fn glob(field: &str, text: &str) -> Result<GlobMatcher, BaselineError> {
    if text.is_empty() {
        return Err(BaselineError(format!(
            "{field}: an empty name matches nothing"
        )));
    }
    Glob::new(text)
        .map(|g| g.compile_matcher())
        .map_err(|e| BaselineError(format!("{field}: {e}")))
}

fn expectation(actor: &str, tool: Option<&str>, rate: &str) -> Result<Expectation, BaselineError> {
    let field = format!("expect.{actor}");
    // `kind:id` when the part before the first colon is an actor kind; else an id of any kind.
    let (kind, id) = match actor.split_once(':') {
        Some((kind, id)) if nightwatch_core::ActorKind::parse(kind).is_some() => {
            (Some(kind.to_owned()), id)
        }
        Some((kind, _)) if kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') => {
            return Err(BaselineError(format!(
                "{field}: {kind:?} is not an actor kind (one of {})",
                nightwatch_core::ActorKind::ALL
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        _ => (None, actor),
    };
    let tool = match tool {
        Some(t) => Some((t.to_owned(), glob(&format!("{field}.{t}"), t)?)),
        None => None,
    };
    Ok(Expectation {
        actor: actor.to_owned(),
        kind,
        id: glob(&field, id)?,
        tool,
        rate: Rate::parse(rate).map_err(|e| BaselineError(format!("{field}: {e}")))?,
    })
}

impl TryFrom<FileBaselines> for BaselineSpec {
    type Error = BaselineError;

    fn try_from(file: FileBaselines) -> Result<BaselineSpec, BaselineError> {
        let mut expect = Vec::new();
        for (actor, rate) in &file.expect {
            match rate {
                FileRate::Each(rate) => expect.push(expectation(actor, None, rate)?),
                FileRate::PerTool(tools) => {
                    if tools.is_empty() {
                        return Err(BaselineError(format!(
                            "expect.{actor}: name a tool and its rate, or give one rate"
                        )));
                    }
                    for (tool, rate) in tools {
                        expect.push(expectation(actor, Some(tool), rate)?);
                    }
                }
            }
        }
        let learn = match file.learn {
            None => None,
            Some(l) => {
                let d = Learn::default();
                let learn = Learn {
                    days: l.days.unwrap_or(d.days),
                    factor: l.factor.unwrap_or(d.factor),
                    at_least: l.at_least.unwrap_or(d.at_least),
                };
                if !(1..=90).contains(&learn.days) {
                    return Err(BaselineError("learn.days: between 1 and 90".into()));
                }
                if !(learn.factor.is_finite() && (1.0..=1000.0).contains(&learn.factor)) {
                    return Err(BaselineError("learn.factor: between 1 and 1000".into()));
                }
                if learn.at_least == 0 {
                    return Err(BaselineError(
                        "learn.at_least: at least 1 (a robot's first action is no storm)".into(),
                    ));
                }
                Some(learn)
            }
        };
        if expect.is_empty() && learn.is_none() {
            return Err(BaselineError(
                "say what to compare with: expect: { backup-job: 1/day } or learn: {}".into(),
            ));
        }
        Ok(BaselineSpec::new(expect, learn))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spec(text: &str) -> Result<BaselineSpec, String> {
        yaml_serde::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn rates_read_in_every_spelling() {
        for (text, count, secs) in [
            ("1/day", 1, 86_400),
            ("1/d", 1, 86_400),
            ("60/h", 60, 3600),
            ("60/hour", 60, 3600),
            ("4/30m", 4, 1800),
            (" 2 / day ", 2, 86_400),
            ("0/day", 0, 86_400),
            ("1/7d", 1, 7 * 86_400),
        ] {
            let rate = Rate::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!((rate.count, rate.per.as_secs()), (count, secs), "{text}");
        }
        assert_eq!(Rate::parse("1/day").unwrap().to_string(), "1/day");
        assert_eq!(Rate::parse("60/hour").unwrap().to_string(), "60/h");
    }

    #[test]
    fn hostile_rates_are_refused_with_why() {
        for (text, why) in [
            ("", "a count, a slash"),
            ("1", "a count, a slash"),
            ("/day", "whole number"),
            ("-1/day", "whole number"),
            ("1.5/day", "whole number"),
            ("99999999999999999999999/day", "too large"),
            ("1/", "bad rate"),
            ("1/fortnight", "bad rate"),
            ("1/1s", "at least a minute"),
            ("1/0m", "at least a minute"),
            ("1/400d", "at most a month"),
            ("1/day/h", "bad rate"),
        ] {
            let err = Rate::parse(text).expect_err(text).to_string();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    proptest! {
        #[test]
        fn any_text_is_read_or_refused(text in "\\PC{0,24}") {
            let _ = Rate::parse(&text);
        }

        #[test]
        fn written_rates_read_back(count in 0u64..1_000_000, minutes in 1u64..44_640) {
            let rate = Rate::parse(&format!("{count}/{minutes}m")).unwrap();
            prop_assert_eq!(rate.count, count);
            prop_assert_eq!(rate.per, Duration::from_secs(minutes * 60));
            prop_assert_eq!(Rate::parse(&rate.to_string()).unwrap(), rate);
        }
    }

    #[test]
    fn the_section_reads_in_its_one_form() {
        let s = spec(
            "expect:\n  backup-job: 1/day\n  \"robot:retrier\": 60/h\n  \"script:nightly-*\": { backup: 2/day, \"prune*\": 1/day }\nlearn: { days: 7 }\n",
        )
        .unwrap();
        assert_eq!(s.expect.len(), 4);
        let key = |kind: &str, id: &str, tool: &str| Key {
            kind: kind.into(),
            id: id.into(),
            tool: tool.into(),
        };
        let backup = s.expect.iter().find(|e| e.actor == "backup-job").unwrap();
        assert!(backup.matches(&key("robot", "backup-job", "backup")));
        assert!(backup.matches(&key("script", "backup-job", "anything")));
        let retrier = s
            .expect
            .iter()
            .find(|e| e.actor == "robot:retrier")
            .unwrap();
        assert!(!retrier.matches(&key("agent", "retrier", "x")));
        let nightly: Vec<_> = s
            .expect
            .iter()
            .filter(|e| e.actor.starts_with("script:"))
            .collect();
        assert!(
            nightly
                .iter()
                .any(|e| e.matches(&key("script", "nightly-db", "prune-old")))
        );
        assert!(
            !nightly
                .iter()
                .any(|e| e.matches(&key("script", "nightly-db", "restore")))
        );
        assert_eq!(
            s.learn,
            Some(Learn {
                days: 7,
                ..Learn::default()
            })
        );
    }

    #[test]
    fn section_mistakes_are_refused() {
        for (text, why) in [
            ("{}", "say what to compare with"),
            ("expect: { backup-job: often }", "bad rate"),
            ("expect: { \"droid:x\": 1/day }", "not an actor kind"),
            ("expect: { x: {} }", "name a tool"),
            ("expect: { \"[\": 1/day }", "expect.["),
            ("learn: { days: 0 }", "between 1 and 90"),
            ("learn: { factor: 0.5 }", "between 1 and 1000"),
            ("learn: { factor: .nan }", "between 1 and 1000"),
            ("learn: { at_least: 0 }", "at least 1"),
            ("learn: { dayz: 3 }", "unknown field"),
            ("expect: [backup-job]", "invalid type"),
        ] {
            let err = spec(text)
                .err()
                .unwrap_or_else(|| panic!("{text}: accepted"));
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    fn window(last_day: u64, days: &[u64]) -> Window {
        Window {
            last_day,
            days: days.to_vec(),
        }
    }

    #[test]
    fn the_learned_baseline_flags_far_above_the_typical_day() {
        let learn = Learn::default();
        // (last 24h, previous days, found?)
        let cases: &[(u64, &[u64], bool)] = &[
            // A steady retrier: 100 a day, today 380 (within 4x), 401 (above).
            (380, &[100, 90, 110, 100, 105, 95, 100], false),
            (401, &[100, 90, 110, 100, 105, 95, 100], true),
            // One busy day in the history does not raise the median.
            (401, &[100, 5000, 100, 100, 100], true),
            // A robot with no history: at_least is the floor.
            (20, &[], false),
            (21, &[], true),
            // Seed 000: the retrier's 6,483 against a quiet history.
            (6483, &[3, 0, 5, 2, 4, 1, 0, 3, 2, 6, 1, 0, 2, 3], true),
            // A quiet robot stays quiet.
            (3, &[3, 0, 5, 2], false),
        ];
        for (last, days, found) in cases {
            let judged = judge_learned(&learn, &window(*last, days));
            assert_eq!(
                matches!(judged, Judged::Above { .. }),
                *found,
                "{last} against {days:?}: {judged:?}"
            );
        }
        assert_eq!(
            judge_learned(
                &Learn {
                    factor: 1000.0,
                    at_least: 1,
                    days: 1
                },
                &window(u64::MAX, &[u64::MAX])
            ),
            Judged::Within {
                threshold: u64::MAX,
                typical: u64::MAX
            }
        );
    }

    #[test]
    fn days_before_the_first_record_are_not_counted() {
        let now = 100 * DAY_MS + 30 * 60_000;
        let mut counts = Counts::default();
        for d in 1..=3 {
            *counts
                .by_hour
                .entry((now - d * DAY_MS).div_euclid(HOUR_MS))
                .or_default() += 10;
        }
        counts.recent.push((now - 60_000, true));
        // The ledger began three and a half days ago: days 1 and 2 are whole, day 3 is not.
        let w = Window::of(&counts, now, Some(now - 3 * DAY_MS - 12 * HOUR_MS), 14);
        assert_eq!(w, window(1, &[10, 10]));
        let w = Window::of(&counts, now, Some(now - 2 * DAY_MS - 12 * HOUR_MS), 14);
        assert_eq!(w, window(1, &[10]));
        let w = Window::of(&counts, now, Some(now - 30 * DAY_MS), 14);
        assert_eq!(w, window(1, &[10, 10, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
        let w = Window::of(&counts, now, Some(now - 30 * DAY_MS), 2);
        assert_eq!(w, window(1, &[10, 10]));
    }
}
