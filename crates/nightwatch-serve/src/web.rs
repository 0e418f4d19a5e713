//! Server-rendered pages: "what happened tonight" (the timeline), one agent session read like a
//! runbook, and one alert from arrival to resolution.
//!
//! Pure: records, arrivals and tasks in, an HTML `String` out; no I/O, and no clock (the caller
//! passes `now`). Every text that came from data goes out through [`esc`], in text and in
//! attributes alike: alerts come from the network and are hostile. Pages carry a
//! Content-Security-Policy that forbids scripts, so a missed escape still runs nothing. No
//! JavaScript, no external resources.
//!
//! Stable hooks for tests and scrapers: the timeline is `#timeline` with `li.entry.kind-*`
//! carrying `data-verdict`, `data-host`, `data-actor`; `#summary`, `#filters`; a session's
//! steps are `#steps > li.step`; an alert page has `#arrivals`, `#tasks`, `#records`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use nightwatch_intake::Alert;
use nightwatch_ledger::{Record, event, rfc3339};
use nightwatch_store::{Task, TaskEvent};
use serde_json::Value;

use crate::inbox::AlertEvent;
use crate::route;

/// The timeline's window when `since` is not given.
const DEFAULT_WINDOW_MS: i64 = 12 * 3_600_000;
/// How much of a call's stdout or stderr a session page shows; the rest is in the API.
const OUTPUT_SHOWN_BYTES: usize = 16 * 1024;
/// How much of a command or of an inputs summary one timeline line shows.
const SUMMARY_SHOWN_BYTES: usize = 300;
const VERDICTS: [&str; 4] = ["allow", "ask", "halt", "deny"];

/// The timeline's window and filters, read from the page's query string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineQuery {
    pub since_ms: i64,
    pub until_ms: i64,
    pub host: Option<String>,
    pub actor: Option<String>,
    pub verdict: Option<String>,
    /// This page shows what each source holds before these (`records_before`,
    /// `arrivals_before`, `tasks_before`): the page after a cut one.
    pub before: PageCursor,
    /// Set by the caller when it had to leave the window's oldest entries out (it reads a
    /// bounded number from each source): where the page of those starts. The page then links
    /// to it instead of starting mid-window silently.
    pub earlier: Option<PageCursor>,
}

/// Where a page of the timeline starts, by source: only what comes before these (the ledger's
/// sequence, the arrival's and the task's id). A source read to its end before is `Some(0)`:
/// nothing of it is left.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageCursor {
    pub records: Option<u64>,
    pub arrivals: Option<i64>,
    pub tasks: Option<i64>,
}

impl TimelineQuery {
    /// Reads `since`, `until`, `host`, `actor` and `verdict` (other keys are ignored; empty
    /// values count as absent). `since` and `until` take what [`instant`] reads: RFC 3339
    /// (`2026-02-14T03:00:00Z`; a time without a zone, or a bare date, is UTC), a span before
    /// `now_ms` (`12h`, `30m`, `2d`, `90s`, `1w`), a clock time (`2am`), `yesterday` or `now`.
    /// Defaults: the 12 hours before `now_ms`. The error is a sentence for the page.
    pub fn from_params(
        params: &BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<TimelineQuery, String> {
        let get = |key: &str| params.get(key).map(|v| v.trim()).filter(|v| !v.is_empty());
        let until_ms = match get("until") {
            Some(text) => instant("until", text, now_ms)?,
            None => now_ms,
        };
        let since_ms = match get("since") {
            Some(text) => instant("since", text, now_ms)?,
            None => until_ms.saturating_sub(DEFAULT_WINDOW_MS),
        };
        if since_ms >= until_ms {
            return Err(format!(
                "since ({}) must be before until ({}): nothing can happen in that window",
                rfc3339(since_ms),
                rfc3339(until_ms)
            ));
        }
        let cursor = |key: &str| -> Result<Option<u64>, String> {
            get(key)
                .map(|text| {
                    text.parse::<u64>()
                        .ok()
                        .filter(|n| i64::try_from(*n).is_ok())
                        .ok_or_else(|| format!("{key} {:?} is not an id", clip(text, 32).0))
                })
                .transpose()
        };
        let as_id = |n: Option<u64>| n.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let before = PageCursor {
            records: cursor("records_before")?,
            arrivals: as_id(cursor("arrivals_before")?),
            tasks: as_id(cursor("tasks_before")?),
        };
        let verdict = get("verdict").map(str::to_ascii_lowercase);
        if let Some(v) = &verdict
            && !VERDICTS.contains(&v.as_str())
        {
            return Err(format!(
                "verdict {:?} is not one of allow, ask, halt, deny",
                clip(v, 64).0
            ));
        }
        Ok(TimelineQuery {
            since_ms,
            until_ms,
            host: get("host").map(str::to_owned),
            actor: get("actor").map(str::to_owned),
            verdict,
            before,
            earlier: None,
        })
    }

    /// The page of this window and filters that starts at `cursor`.
    fn page_link(&self, cursor: &PageCursor) -> String {
        let mut link = format!(
            "/?since={}&until={}",
            enc(&rfc3339(self.since_ms)),
            enc(&rfc3339(self.until_ms))
        );
        for (key, value) in [
            ("host", &self.host),
            ("actor", &self.actor),
            ("verdict", &self.verdict),
        ] {
            if let Some(value) = value {
                let _ = write!(link, "&{key}={}", enc(value));
            }
        }
        let ids = [
            ("records_before", cursor.records.map(|n| n.to_string())),
            ("arrivals_before", cursor.arrivals.map(|n| n.to_string())),
            ("tasks_before", cursor.tasks.map(|n| n.to_string())),
        ];
        for (key, id) in ids {
            if let Some(id) = id {
                let _ = write!(link, "&{key}={id}");
            }
        }
        link
    }

    /// Whether an entry with these fields passes the host, actor and verdict filters. A host
    /// filter `db1` also matches `db1.example.com` and `db1:9100`.
    fn keeps(&self, host: Option<&str>, actors: &[&str], verdict: Option<&str>) -> bool {
        if let Some(want) = &self.host {
            let Some(host) = host else { return false };
            let lower = host.to_ascii_lowercase();
            let want = want.to_ascii_lowercase();
            let prefix = lower
                .strip_prefix(want.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', ':']));
            if !prefix {
                return false;
            }
        }
        if let Some(want) = &self.actor
            && !actors.iter().any(|a| a == want)
        {
            return false;
        }
        match &self.verdict {
            Some(want) => verdict == Some(want.as_str()),
            None => true,
        }
    }
}

/// The zone the daemon reads operator times in (`2am`, `yesterday`, a date, a time without an
/// offset): UTC, as the page has always said, until the host hands the daemon its own zone.
pub(crate) const READING_ZONE: jiff::tz::TimeZone = jiff::tz::TimeZone::UTC;

/// A `since`/`until` value, read by the one grammar the CLI also uses
/// ([`nightwatch_time::parse_instant`]): RFC 3339, a date or a time without an offset (in
/// [`READING_ZONE`]), `now`, `today`, `yesterday`, a clock time (`2am`, `14:30`), or a span
/// before now (`12h`, `1h30m`, `2h ago`, `-1h`) or after it (`+1h`). The page and the JSON API
/// read times alike.
pub(crate) fn instant(key: &str, text: &str, now_ms: i64) -> Result<i64, String> {
    let now = jiff::Timestamp::from_millisecond(now_ms)
        .map_err(|e| format!("{key}: the daemon's clock is out of range: {e}"))?;
    nightwatch_time::parse_instant(text, now, &READING_ZONE).map_err(|e| format!("{key} {e}"))
}

/// One line of the timeline before it is written out.
struct Item {
    at: i64,
    /// Keeps ties in a stable, sensible order: arrivals, then tasks, then records by seq.
    tie: (u8, i64),
    kind: &'static str,
    verdict: Option<String>,
    host: Option<String>,
    actor: String,
    veto: bool,
    body: String,
}

/// "What happened tonight": alerts, tasks, sessions, tool calls (each decision joined to its
/// result), vetoes and sweeps in one list, oldest first, with the filters of `query` applied.
/// The caller has already limited `records`, `alerts` and `tasks` to the query's window; a
/// task's creation and finish are each shown when they fall inside it.
pub fn timeline_page(
    query: &TimelineQuery,
    now_ms: i64,
    records: &[Record],
    alerts: &[AlertEvent],
    tasks: &[Task],
) -> String {
    let mut items = Vec::new();
    for a in alerts {
        // An arrival has no verdict, so a verdict filter hides it.
        if query.keeps(a.host.as_deref(), &[a.source.as_str()], None) {
            items.push(alert_item(a));
        }
    }
    for task in tasks {
        let (alert_id, host) = task_alert(task, alerts);
        // Tasks are the dispatcher's and have no verdict.
        if !query.keeps(host.as_deref(), &["dispatcher", "nightwatch-serve"], None) {
            continue;
        }
        let mut at = vec![(task.created_at, false)];
        at.extend(task.lifecycle.finished_at.map(|f| (f, true)));
        for (at, finished) in at {
            if at < query.since_ms || at >= query.until_ms {
                continue;
            }
            items.push(task_item(
                task,
                at,
                finished,
                alert_id.as_deref(),
                host.clone(),
            ));
        }
    }
    let joined = Joined::new(records);
    let mut sessions = BTreeSet::new();
    for r in records {
        if joined.is_joined_result(r) {
            continue;
        }
        let verdict = r.verdict.as_deref();
        let actors = [r.actor.kind.as_str(), r.actor.id.as_str()];
        if !query.keeps(r.context.host.as_deref(), &actors, verdict) {
            continue;
        }
        if let Some(s) = &r.session_id {
            sessions.insert(s.as_str());
        }
        items.push(record_item(r, joined.result_of(r)));
    }
    items.sort_by_key(|i| (i.at, i.tie));

    let count = |kind: &str| items.iter().filter(|i| i.kind == kind).count();
    let verdicts = |v: &str| {
        items
            .iter()
            .filter(|i| i.verdict.as_deref() == Some(v))
            .count()
    };
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>What happened tonight</h1>\n<p class=\"window\">From {} to {} ({}), as of {}.</p>\n",
        time_full(query.since_ms),
        time_full(query.until_ms),
        duration_text(query.until_ms.saturating_sub(query.since_ms).max(0) as u64),
        time_full(now_ms),
    );
    body.push_str(&filter_form(query));
    body.push_str("<ul id=\"summary\">\n");
    let summary = [
        ("alerts", count("alert"), "alerts"),
        ("tasks", task_count(&items), "tasks"),
        ("sessions", sessions.len(), "sessions"),
        ("calls", count("call"), "tool calls"),
        ("deny", verdicts("deny"), "denied"),
        ("halt", verdicts("halt"), "halted"),
        ("ask", verdicts("ask"), "asked"),
        ("sweeps", count("sweep"), "janitor"),
    ];
    for (key, n, label) in summary {
        let class = if n > 0 && matches!(key, "deny" | "halt" | "ask") {
            format!(" class=\"v-{key}\"")
        } else {
            String::new()
        };
        let _ = writeln!(
            body,
            "<li data-count=\"{key}\"{class}><b>{n}</b> {label}</li>"
        );
    }
    body.push_str("</ul>\n");
    if let Some(earlier) = &query.earlier {
        let _ = writeln!(
            body,
            "<p id=\"truncated\" class=\"empty\">This window holds more than one page: its \
             oldest entries are on <a id=\"earlier\" href=\"{}\">the page before</a>.</p>",
            esc(&query.page_link(earlier))
        );
    }
    if query.before != PageCursor::default() {
        let _ = writeln!(
            body,
            "<p id=\"newest\" class=\"empty\">An earlier page of this window: \
             <a href=\"{}\">back to its newest entries</a>.</p>",
            esc(&query.page_link(&PageCursor::default()))
        );
    }
    body.push_str("<h2>Oldest first</h2>\n");
    if items.is_empty() {
        body.push_str("<p class=\"empty\">Nothing happened in this window.</p>\n");
    }
    body.push_str("<ol id=\"timeline\">\n");
    let mut day = None;
    for item in &items {
        let _ = write!(
            body,
            "<li class=\"entry kind-{}{}\"",
            item.kind,
            if item.veto { " veto" } else { "" }
        );
        if let Some(v) = &item.verdict {
            let _ = write!(body, " data-verdict=\"{}\"", esc(v));
        }
        if let Some(h) = &item.host {
            let _ = write!(body, " data-host=\"{}\"", esc(h));
        }
        let _ = writeln!(
            body,
            " data-actor=\"{}\">{}<div class=\"body\">{}</div></li>",
            esc(&item.actor),
            time_cell(item.at, &mut day),
            item.body
        );
    }
    body.push_str("</ol>\n");
    page("What happened tonight", &body)
}

fn task_count(items: &[Item]) -> usize {
    // A task shown twice (created and finished) is one task.
    let ids: HashSet<i64> = items
        .iter()
        .filter(|i| i.kind == "task")
        .map(|i| i.tie.1)
        .collect();
    ids.len()
}

fn filter_form(q: &TimelineQuery) -> String {
    let field = |name: &str, value: &str, hint: &str, extra: &str| {
        format!(
            "<label>{name} <input name=\"{name}\" value=\"{}\" placeholder=\"{hint}\"{extra}></label>\n",
            esc(value)
        )
    };
    let mut form = String::from("<form id=\"filters\" method=\"get\">\n");
    form.push_str(&field(
        "since",
        &rfc3339(q.since_ms),
        "12h, 2d or RFC 3339",
        "",
    ));
    form.push_str(&field("until", &rfc3339(q.until_ms), "now or RFC 3339", ""));
    form.push_str(&field(
        "host",
        q.host.as_deref().unwrap_or(""),
        "any host",
        "",
    ));
    form.push_str(&field(
        "actor",
        q.actor.as_deref().unwrap_or(""),
        "claude-code, janitor…",
        "",
    ));
    let verdict = q.verdict.as_deref().unwrap_or("");
    form.push_str(&field(
        "verdict",
        verdict,
        "any verdict",
        " list=\"verdicts\"",
    ));
    form.push_str("<datalist id=\"verdicts\">");
    for v in VERDICTS {
        let _ = write!(form, "<option value=\"{v}\"></option>");
    }
    form.push_str("</datalist>\n<button type=\"submit\">Show</button> ");
    form.push_str("<a href=\"?\">last 12 hours</a>\n</form>\n");
    form
}

fn alert_item(a: &AlertEvent) -> Item {
    let mut b = format!(
        "<span class=\"kind\">alert</span> <span class=\"status st-{}\">{}</span> {} \
         from <b>{}</b>: <strong>{}</strong>",
        class_word(&a.status),
        esc(&a.status),
        alert_link(&a.alert_id),
        esc(&a.source),
        esc(&a.title)
    );
    b.push_str(" &rarr; ");
    match a.disposition {
        Some(d) => {
            let _ = write!(b, "{}", disposition_badge(d.as_str()));
        }
        None => b.push_str("<span class=\"badge\">unsettled</span>"),
    }
    if let Some(route) = &a.route {
        let _ = write!(b, " route <code>{}</code>", esc(route));
    }
    if let Some(task) = a.task_id {
        let _ = write!(b, " task #{task}");
    }
    if let Some(host) = &a.host {
        let _ = write!(b, " on <span class=\"host\">{}</span>", esc(host));
    }
    if let Some(why) = &a.reason {
        let _ = write!(b, "<div class=\"why\">{}</div>", esc(why));
    }
    Item {
        at: a.received_ms,
        tie: (0, a.id),
        kind: "alert",
        verdict: None,
        host: a.host.clone(),
        actor: a.source.clone(),
        veto: false,
        body: b,
    }
}

/// The alert id and host of a task: from an arrival that names it, else from its alert JSON.
fn task_alert(task: &Task, alerts: &[AlertEvent]) -> (Option<String>, Option<String>) {
    if let Some(a) = alerts.iter().find(|a| a.task_id == Some(task.id)) {
        return (Some(a.alert_id.clone()), a.host.clone());
    }
    match serde_json::from_str::<Alert>(&task.alert_json) {
        Ok(alert) => (Some(route::alert_id(&alert)), route::alert_host(&alert)),
        Err(_) => (None, None),
    }
}

fn task_item(
    task: &Task,
    at: i64,
    finished: bool,
    alert_id: Option<&str>,
    host: Option<String>,
) -> Item {
    let life = &task.lifecycle;
    let mut b = format!(
        "<span class=\"kind\">task</span> task #{} for route <code>{}</code> ",
        task.id,
        esc(&task.route)
    );
    if finished {
        let _ = write!(
            b,
            "finished <span class=\"status st-{0}\">{0}</span> after {1} attempt(s), \
             {2} after it was created",
            life.status.as_str(),
            life.attempt,
            duration_text(at.saturating_sub(task.created_at).max(0) as u64)
        );
        if let Some(err) = &life.last_error {
            let _ = write!(b, "<div class=\"why\">last error: {}</div>", esc(err));
        }
    } else {
        let _ = write!(
            b,
            "created (now <span class=\"status st-{0}\">{0}</span>",
            life.status.as_str()
        );
        if task.repeats > 0 {
            let _ = write!(b, ", {} repeat(s) of the alert attached", task.repeats);
        }
        b.push(')');
    }
    if let Some(id) = alert_id {
        let _ = write!(b, " &middot; {}", alert_link(id));
    }
    Item {
        at,
        tie: (1, task.id),
        kind: "task",
        verdict: None,
        host,
        actor: "nightwatch-serve".into(),
        veto: false,
        body: b,
    }
}

/// Decisions joined to their results by call id.
struct Joined<'a> {
    results: HashMap<&'a str, &'a Record>,
    decided: HashSet<&'a str>,
}

impl<'a> Joined<'a> {
    fn new(records: impl IntoIterator<Item = &'a Record>) -> Joined<'a> {
        let mut results = HashMap::new();
        let mut decided = HashSet::new();
        for r in records {
            let Some(call) = r.call_id.as_deref() else {
                continue;
            };
            match r.event.as_str() {
                event::DECISION => {
                    decided.insert(call);
                }
                event::RESULT | event::UNGUARDED_RESULT => {
                    results.insert(call, r);
                }
                _ => {}
            }
        }
        Joined { results, decided }
    }

    fn result_of(&self, decision: &Record) -> Option<&'a Record> {
        if decision.event != event::DECISION {
            return None;
        }
        self.results.get(decision.call_id.as_deref()?).copied()
    }

    /// A result shown with its decision rather than on its own.
    fn is_joined_result(&self, r: &Record) -> bool {
        matches!(r.event.as_str(), event::RESULT | event::UNGUARDED_RESULT)
            && r.call_id
                .as_deref()
                .is_some_and(|c| self.decided.contains(c))
    }
}

fn record_kind(r: &Record) -> &'static str {
    let janitor = r.actor.kind == "janitor";
    match r.event.as_str() {
        event::DISPATCH => "dispatch",
        event::SESSION_START | event::SESSION_END | event::STOP => "session",
        event::SWEEP_KEEP | event::SWEEP_PLAN | event::QUARANTINED => "sweep",
        event::DECISION | event::RESULT | event::UNGUARDED_RESULT if janitor => "sweep",
        event::DECISION | event::RESULT | event::UNGUARDED_RESULT => "call",
        _ => "other",
    }
}

fn record_item(r: &Record, result: Option<&Record>) -> Item {
    let kind = record_kind(r);
    let veto = matches!(r.verdict.as_deref(), Some("deny" | "halt" | "ask"));
    let label = if kind == "other" {
        esc(&r.event)
    } else {
        kind.to_owned()
    };
    let mut b = format!("<span class=\"kind\">{label}</span> ");
    let actor = format!(
        "<span class=\"actor\" title=\"{}\">{}</span>",
        esc(&r.actor.kind),
        esc(&r.actor.id)
    );
    match kind {
        "dispatch" => {
            let disposition = r.inputs.get("disposition").and_then(Value::as_str);
            let _ = write!(
                b,
                "{} {}",
                esc(&r.tool),
                disposition.map(disposition_badge).unwrap_or_default()
            );
            if let Some(alert) = r
                .context
                .alert_id
                .as_deref()
                .or(r.inputs["alert_id"].as_str())
            {
                let _ = write!(b, " {}", alert_link(alert));
            }
            if let Some(route) = r.inputs.get("route").and_then(Value::as_str) {
                let _ = write!(b, " route <code>{}</code>", esc(route));
            }
            if let Some(task) = r.inputs.get("task").filter(|t| !t.is_null()) {
                let _ = write!(b, " task #{}", esc(&scalar_text(task)));
            }
            if let Some(title) = r.inputs.get("title").and_then(Value::as_str) {
                let _ = write!(b, ": {}", esc(title));
            }
            if let Some(s) = &r.session_id {
                let _ = write!(b, " &middot; session {}", session_link(s));
            }
        }
        "session" => {
            let what = match r.event.as_str() {
                event::SESSION_START => "started",
                event::STOP => "stopped",
                _ => "ended",
            };
            let id = r.session_id.as_deref().unwrap_or("?");
            let _ = write!(b, "{} {what} &middot; {actor}", session_link(id));
            if let Some(t) = &r.context.triggered_by {
                let _ = write!(b, " triggered by <code>{}</code>", esc(t));
            }
            if let Some(a) = &r.context.alert_id {
                let _ = write!(b, " {}", alert_link(a));
            }
        }
        _ => {
            let _ = write!(b, "{actor} <span class=\"tool\">{}</span>", esc(&r.tool));
            let summary = inputs_summary(r);
            if !summary.is_empty() {
                let (shown, cut) = clip(&summary, SUMMARY_SHOWN_BYTES);
                let _ = write!(
                    b,
                    " <code class=\"cmd\">{}{}</code>",
                    esc(shown),
                    if cut > 0 { "…" } else { "" }
                );
            }
            if let Some(v) = &r.verdict {
                let _ = write!(b, " {}", verdict_badge(v));
            }
            if let Some(rule) = &r.rule {
                let _ = write!(b, " <span class=\"rule\">{}</span>", esc(rule));
            }
            if r.event == event::UNGUARDED_RESULT {
                b.push_str(" <span class=\"badge v-halt\">no decision recorded</span>");
            }
            if let Some(res) = result.or((r.outputs.is_some()).then_some(r)) {
                b.push_str(&exit_text(res));
            }
            if let Some(s) = &r.session_id {
                let _ = write!(b, " &middot; {}", session_link(s));
            }
        }
    }
    let _ = write!(b, " {}", record_link(&r.id));
    if let Some(res) = result {
        let _ = write!(b, " {}", record_link(&res.id));
    }
    if let Some(why) = r.reasons.first() {
        let _ = write!(b, "<div class=\"why\">{}</div>", esc(why));
    }
    b.push_str(&vetoes(r.safeguards.as_ref(), false));
    Item {
        at: r.timestamp_ms,
        tie: (2, r.seq as i64),
        kind,
        verdict: r.verdict.clone(),
        host: r.context.host.clone(),
        actor: r.actor.id.clone(),
        veto,
        body: b,
    }
}

/// The checks that found something (all of them when `all`), the approval that let a call
/// through, and a backup that failed or was taken.
fn vetoes(safeguards: Option<&Value>, all: bool) -> String {
    use nightwatch_ledger::schema::{CheckOutcome, Readable};
    if safeguards.is_none() {
        return String::new();
    }
    let s = nightwatch_ledger::Safeguards::of(safeguards);
    let mut lines = Vec::new();
    let findings = s.checks.as_ref().and_then(Readable::read);
    for f in findings.into_iter().flatten() {
        if f.effect.is_none() && !all {
            continue;
        }
        let (outcome, found) = match &f.outcome {
            CheckOutcome::Matched { detail } => ("matched", detail),
            CheckOutcome::Clear { detail } => ("clear", detail),
            CheckOutcome::Unknown { reason } => ("unknown", reason),
        };
        let mut line = format!(
            "check <code>{}</code> ({}, {outcome}): {}",
            esc(&f.check),
            esc(&f.kind),
            esc(&f.message)
        );
        if !found.is_empty() {
            let _ = write!(line, " <span class=\"why\">({})</span>", esc(found));
        }
        if let Some(e) = f.effect {
            let _ = write!(line, " &rarr; {}", verdict_badge(e.as_str()));
        }
        lines.push(line);
    }
    if let Some(approval) = &s.approval {
        lines.push(format!(
            "approved by <b>{}</b> in {}",
            esc(&approval.by),
            record_link(&approval.record)
        ));
    }
    match &s.backup {
        Some(backup) if backup.error.is_some() => {
            lines.push(format!(
                "backup failed: {}",
                esc(backup.error.as_deref().unwrap_or_default())
            ));
        }
        Some(backup) if all && backup.snapshot.is_some() => {
            lines.push(format!(
                "backed up first: snapshot <code>{}</code>",
                esc(backup.snapshot.as_deref().unwrap_or_default())
            ));
        }
        _ => {}
    }
    if all && let Some(notify) = &s.notify {
        let names: Vec<String> = notify.iter().map(|n| esc(n)).collect();
        lines.push(format!("escalated to {}", names.join(", ")));
    }
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("<ul class=\"safeguards\">");
    for l in lines {
        let _ = write!(out, "<li>{l}</li>");
    }
    out.push_str("</ul>");
    out
}

/// A session "read like a runbook": who ran it and why, then every tool call as a numbered
/// step with its verdict, reasons and output. `records` are the session's, in any order.
pub fn session_page(session_id: &str, records: &[Record]) -> String {
    let mut records: Vec<&Record> = records.iter().collect();
    records.sort_by_key(|r| (r.timestamp_ms, r.seq));
    let first_ctx = |f: fn(&Record) -> Option<&String>| records.iter().find_map(|r| f(r));
    let actor = records
        .iter()
        .find(|r| r.event == event::SESSION_START || r.event == event::DECISION)
        .or(records.first())
        .map(|r| &r.actor);
    let start = records
        .iter()
        .find(|r| r.event == event::SESSION_START)
        .or(records.first())
        .map(|r| r.timestamp_ms);
    let end = records
        .iter()
        .rev()
        .find(|r| r.event == event::SESSION_END || r.event == event::STOP)
        .map(|r| r.timestamp_ms);

    let mut b = format!(
        "<h1>Session <code>{}</code></h1>\n<dl class=\"facts\">\n",
        esc(session_id)
    );
    let mut fact = |name: &str, html: String| {
        let _ = writeln!(b, "<dt>{name}</dt><dd>{html}</dd>");
    };
    if let Some(a) = actor {
        fact(
            "actor",
            format!(
                "{} <span class=\"muted\">({})</span>",
                esc(&a.id),
                esc(&a.kind)
            ),
        );
    }
    if let Some(t) = first_ctx(|r| r.context.triggered_by.as_ref()) {
        fact("triggered by", format!("<code>{}</code>", esc(t)));
    }
    if let Some(a) = first_ctx(|r| r.context.alert_id.as_ref()) {
        fact("alert", alert_link(a));
    }
    if let Some(h) = first_ctx(|r| r.context.host.as_ref()) {
        fact("host", esc(h));
    }
    if let Some(t) = first_ctx(|r| r.context.task.as_ref()) {
        fact("task", esc(t));
    }
    if let Some(s) = start {
        fact("started", time_full(s));
    }
    match (start, end) {
        (Some(s), Some(e)) => {
            fact("ended", time_full(e));
            fact("duration", duration_text(e.saturating_sub(s).max(0) as u64));
        }
        _ => {
            let unknown = "no end recorded (still running, or it stopped without saying)";
            fact("ended", format!("<span class=\"muted\">{unknown}</span>"));
        }
    }
    b.push_str("</dl>\n");

    let joined = Joined::new(records.iter().copied());
    let mut steps = String::new();
    let mut others = String::new();
    let mut n = 0;
    // Each list shows the date on its first line.
    let (mut step_day, mut other_day) = (None, None);
    for r in &records {
        let is_result = matches!(r.event.as_str(), event::RESULT | event::UNGUARDED_RESULT);
        if r.event == event::DECISION || is_result {
            if joined.is_joined_result(r) {
                continue;
            }
            n += 1;
            let result = if is_result {
                Some(*r)
            } else {
                joined.result_of(r)
            };
            steps.push_str(&step_html(n, r, result, &mut step_day));
        } else {
            let _ = write!(
                others,
                "<li>{} <b>{}</b> {} <span class=\"actor\">{}</span>",
                time_cell(r.timestamp_ms, &mut other_day),
                esc(&r.event),
                esc(&r.tool),
                esc(&r.actor.id)
            );
            if let Some(d) = r.inputs.get("disposition").and_then(Value::as_str) {
                let _ = write!(others, " {}", disposition_badge(d));
            }
            if let Some(why) = r.reasons.first() {
                let _ = write!(others, " <span class=\"why\">{}</span>", esc(why));
            }
            let _ = writeln!(others, " {}</li>", record_link(&r.id));
        }
    }
    let _ = writeln!(b, "<h2>Steps ({n})</h2>");
    if n == 0 {
        b.push_str("<p class=\"empty\">No tool calls were recorded in this session.</p>\n");
    }
    let _ = write!(b, "<ol id=\"steps\">\n{steps}</ol>\n");
    if !others.is_empty() {
        let _ = write!(
            b,
            "<h2>Session events</h2>\n<ul id=\"events\">\n{others}</ul>\n"
        );
    }
    page(&format!("Session {session_id}"), &b)
}

fn step_html(n: usize, r: &Record, result: Option<&Record>, day: &mut Option<String>) -> String {
    let verdict = r.verdict.as_deref();
    let mark = match verdict {
        Some("deny") => Some("Denied: it did not run"),
        Some("halt") => Some("Halted: it did not run; a person was called"),
        Some("ask") => Some("Asked: it waits for a person's approval"),
        _ => None,
    };
    let mut s = format!(
        "<li class=\"step{}\" id=\"step-{n}\"",
        if mark.is_some() { " veto" } else { "" }
    );
    if let Some(v) = verdict {
        let _ = write!(s, " data-verdict=\"{}\"", esc(v));
    }
    let _ = write!(
        s,
        ">\n<div class=\"step-head\"><span class=\"n\">{n}</span> {} <span class=\"tool\">{}</span>",
        time_cell(r.timestamp_ms, day),
        esc(&r.tool)
    );
    if let Some(v) = verdict {
        let _ = write!(s, " {}", verdict_badge(v));
    }
    if let Some(rule) = &r.rule {
        let _ = write!(s, " rule <span class=\"rule\">{}</span>", esc(rule));
    }
    if r.event == event::UNGUARDED_RESULT || r.event == event::RESULT {
        s.push_str(" <span class=\"badge v-halt\">no decision recorded</span>");
    }
    let _ = write!(s, " {}", record_link(&r.id));
    if r.actor.kind != "agent" {
        let _ = write!(s, " <span class=\"muted\">by {}</span>", esc(&r.actor.id));
    }
    s.push_str("</div>\n");
    if let Some(m) = mark {
        let _ = writeln!(s, "<p class=\"veto-mark\">{m}</p>");
    }
    let command = match r.inputs.get("command").and_then(Value::as_str) {
        Some(c) => format!("$ {c}"),
        None if r.inputs.is_null() => String::new(),
        None => serde_json::to_string_pretty(&r.inputs).unwrap_or_default(),
    };
    if !command.is_empty() {
        let _ = writeln!(
            s,
            "<pre class=\"cmd\">{}</pre>",
            clipped(&command, OUTPUT_SHOWN_BYTES, &r.id)
        );
    }
    if let Some(cwd) = &r.cwd {
        let _ = writeln!(s, "<p class=\"muted\">in <code>{}</code></p>", esc(cwd));
    }
    if !r.reasons.is_empty() {
        s.push_str("<ul class=\"reasons\">");
        for why in &r.reasons {
            let _ = write!(s, "<li>{}</li>", esc(why));
        }
        s.push_str("</ul>\n");
    }
    s.push_str(&vetoes(r.safeguards.as_ref(), true));
    if let Some(res) = result {
        s.push_str("<div class=\"output\">");
        s.push_str(&exit_text(res));
        if res.id != r.id {
            let _ = write!(s, " {}", record_link(&res.id));
        }
        if !res.redacted.is_empty() {
            let _ = write!(
                s,
                " <span class=\"muted\">redacted: {}</span>",
                esc(&res.redacted.join(", "))
            );
        }
        if let Some(out) = &res.outputs {
            for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                if !text.is_empty() {
                    let _ = write!(
                        s,
                        "<div class=\"stream\">{name}</div><pre class=\"{name}\">{}</pre>",
                        clipped(text, OUTPUT_SHOWN_BYTES, &res.id)
                    );
                }
            }
        }
        s.push_str("</div>\n");
    } else if mark.is_none() {
        s.push_str("<p class=\"muted\">No result recorded.</p>\n");
    }
    s.push_str("</li>\n");
    s
}

/// One alert "from arrival to resolution": what it says, every arrival and what the
/// dispatcher did with it, each task with its history, and the ledger records about it.
pub fn alert_page(
    alert_id: &str,
    arrivals: &[AlertEvent],
    tasks: &[(Task, Vec<TaskEvent>)],
    records: &[Record],
) -> String {
    let mut arrivals: Vec<&AlertEvent> = arrivals.iter().collect();
    arrivals.sort_by_key(|a| (a.received_ms, a.id));
    let latest = arrivals.last();
    let title = latest.map(|a| a.title.as_str()).unwrap_or("");
    let mut b = format!(
        "<h1>Alert <code>{}</code>: {}</h1>\n<dl class=\"facts\">\n",
        esc(alert_id),
        esc(title)
    );
    if let Some(a) = latest {
        let alert = &a.alert;
        let _ = writeln!(b, "<dt>source</dt><dd>{}</dd>", esc(&a.source));
        let _ = writeln!(
            b,
            "<dt>status</dt><dd><span class=\"status st-{}\">{}</span></dd>",
            class_word(&a.status),
            esc(&a.status)
        );
        if let Some(h) = &a.host {
            let _ = writeln!(b, "<dt>host</dt><dd>{}</dd>", esc(h));
        }
        if let Some(first) = arrivals.first() {
            let _ = writeln!(
                b,
                "<dt>first arrived</dt><dd>{}</dd>",
                time_full(first.received_ms)
            );
        }
        let _ = writeln!(
            b,
            "<dt>last arrived</dt><dd>{}</dd>",
            time_full(a.received_ms)
        );
        for key in ["monitor", "message", "identity"] {
            if let Some(v) = alert[key].as_str().filter(|v| !v.is_empty()) {
                let _ = writeln!(b, "<dt>{key}</dt><dd>{}</dd>", esc(v));
            }
        }
        if let Some(link) = alert["link"].as_str() {
            // Only web links become links: a `javascript:` URL from a sender stays text.
            let lower = link.to_ascii_lowercase();
            let html = if lower.starts_with("https://") || lower.starts_with("http://") {
                format!(
                    "<a href=\"{0}\" rel=\"noreferrer noopener\">{0}</a>",
                    esc(link)
                )
            } else {
                esc(link)
            };
            let _ = writeln!(b, "<dt>link</dt><dd>{html}</dd>");
        }
    }
    b.push_str("</dl>\n");
    if let Some(a) = latest {
        let mut rows = String::new();
        for group in ["labels", "annotations"] {
            for (k, v) in a.alert[group].as_object().into_iter().flatten() {
                let _ = writeln!(
                    rows,
                    "<tr><td>{group}</td><th scope=\"row\">{}</th><td>{}</td></tr>",
                    esc(k),
                    esc(&scalar_text(v))
                );
            }
        }
        if !rows.is_empty() {
            b.push_str("<h2>Labels and annotations</h2>\n");
            b.push_str(&table_open("id=\"labels\"", &["kind", "name", "value"]));
            b.push_str(&rows);
            b.push_str("</tbody></table>\n");
        }
    }

    let _ = writeln!(b, "<h2>Arrivals ({})</h2>", arrivals.len());
    let columns = [
        "#",
        "arrived",
        "status",
        "disposition",
        "why",
        "route",
        "task",
        "record",
    ];
    b.push_str(&table_open("id=\"arrivals\"", &columns));
    let mut day = None;
    for a in &arrivals {
        let disposition = a.disposition.map(|d| d.as_str()).unwrap_or("unsettled");
        let attrs = format!("class=\"arrival\" data-disposition=\"{disposition}\"");
        let status = format!(
            "<span class=\"status st-{}\">{}</span>",
            class_word(&a.status),
            esc(&a.status)
        );
        b.push_str(&row(
            &attrs,
            &[
                a.id.to_string(),
                time_cell(a.received_ms, &mut day),
                status,
                disposition_badge(disposition),
                esc(a.reason.as_deref().unwrap_or("")),
                esc(a.route.as_deref().unwrap_or("")),
                a.task_id.map(|t| format!("#{t}")).unwrap_or_default(),
                a.record.as_deref().map(record_link).unwrap_or_default(),
            ],
        ));
    }
    b.push_str("</tbody></table>\n");

    let _ = writeln!(b, "<h2>Tasks ({})</h2>\n<div id=\"tasks\">", tasks.len());
    if tasks.is_empty() {
        b.push_str("<p class=\"empty\">No task was created for this alert.</p>\n");
    }
    for (task, events) in tasks {
        b.push_str(&task_html(task, events));
    }
    b.push_str("</div>\n");

    let mut records: Vec<&Record> = records.iter().collect();
    records.sort_by_key(|r| (r.timestamp_ms, r.seq));
    let _ = writeln!(b, "<h2>Ledger records ({})</h2>", records.len());
    let columns = ["time", "record", "event", "actor", "what", "session"];
    b.push_str(&table_open("id=\"records\"", &columns));
    let mut day = None;
    for r in &records {
        let mut what = format!("<span class=\"tool\">{}</span>", esc(&r.tool));
        if let Some(d) = r.inputs.get("disposition").and_then(Value::as_str) {
            let _ = write!(what, " {}", disposition_badge(d));
        } else {
            let summary = inputs_summary(r);
            if !summary.is_empty() {
                let (shown, cut) = clip(&summary, SUMMARY_SHOWN_BYTES);
                let _ = write!(
                    what,
                    " <code class=\"cmd\">{}{}</code>",
                    esc(shown),
                    if cut > 0 { "…" } else { "" }
                );
            }
        }
        if let Some(v) = &r.verdict {
            let _ = write!(what, " {}", verdict_badge(v));
        }
        if r.outputs.is_some() {
            what.push_str(&exit_text(r));
        }
        if let Some(why) = r.reasons.first() {
            let _ = write!(what, "<div class=\"why\">{}</div>", esc(why));
        }
        let attrs = format!(
            "class=\"record kind-{}\" data-event=\"{}\"",
            record_kind(r),
            esc(&r.event)
        );
        b.push_str(&row(
            &attrs,
            &[
                time_cell(r.timestamp_ms, &mut day),
                record_link(&r.id),
                esc(&r.event),
                esc(&r.actor.id),
                what,
                r.session_id
                    .as_deref()
                    .map(session_link)
                    .unwrap_or_default(),
            ],
        ));
    }
    b.push_str("</tbody></table>\n");
    page(&format!("Alert {alert_id}: {title}"), &b)
}

fn task_html(task: &Task, events: &[TaskEvent]) -> String {
    let life = &task.lifecycle;
    let mut s = format!(
        "<section class=\"task\" id=\"task-{0}\" data-status=\"{1}\">\n\
         <h3>Task #{0} &middot; route <code>{2}</code> &middot; \
         <span class=\"status st-{1}\">{1}</span></h3>\n\
         <p>created {3}, attempt {4}, {5} repeat(s) attached",
        task.id,
        life.status.as_str(),
        esc(&task.route),
        time_full(task.created_at),
        life.attempt,
        task.repeats
    );
    if let Some(f) = life.finished_at {
        let _ = write!(
            s,
            ", finished {} ({} after creation)",
            time_full(f),
            duration_text(f.saturating_sub(task.created_at).max(0) as u64)
        );
    }
    s.push_str("</p>\n");
    if let Some(err) = &life.last_error {
        let _ = writeln!(s, "<p class=\"why\">last error: {}</p>", esc(err));
    }
    s.push_str(&table_open(
        "class=\"task-events\"",
        &["time", "change", "why"],
    ));
    let mut day = None;
    for e in events {
        let from = e.from.map(|f| f.as_str()).unwrap_or("new");
        let change = format!("{from} &rarr; <b>{}</b>", e.to.as_str());
        s.push_str(&row("", &[time_cell(e.at, &mut day), change, esc(&e.why)]));
    }
    s.push_str("</tbody></table>\n</section>\n");
    s
}

/// A page for a failed request: the status and what to do about it.
pub fn error_page(status: u16, message: &str) -> String {
    let phrase = match status {
        400 => "Bad request",
        404 => "Not found",
        405 => "Method not allowed",
        500 => "Internal server error",
        503 => "Service unavailable",
        _ => "Error",
    };
    let body = format!(
        "<h1>{status} {phrase}</h1>\n<p class=\"error\" id=\"error\">{}</p>\n\
         <p><a href=\"/\">Back to what happened tonight</a></p>\n",
        esc(message)
    );
    page(&format!("{status} {phrase}"), &body)
}

// ---- small pieces shared by the pages ------------------------------------------------------

/// Escapes text for HTML text and quoted attributes. Control characters (ANSI colour codes in
/// command output) are shown as their visible pictures, and bidirectional overrides, which
/// can make text read differently from what it is, as U+FFFD.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' | '\r' => out.push(c),
            '\0'..='\x1f' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}')),
            '\x7f' => out.push('\u{2421}'),
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => out.push('\u{fffd}'),
            _ => out.push(c),
        }
    }
    out
}

/// Percent-encodes one URL path segment (everything but unreserved characters).
fn enc(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn session_link(id: &str) -> String {
    let (short, cut) = clip(id, 12);
    format!(
        "<a class=\"session\" href=\"/sessions/{}\" title=\"{}\">{}{}</a>",
        enc(id),
        esc(id),
        esc(short),
        if cut > 0 { "…" } else { "" }
    )
}

fn alert_link(id: &str) -> String {
    format!(
        "<a class=\"alert\" href=\"/alerts/{}\">{}</a>",
        enc(id),
        esc(id)
    )
}

fn record_link(id: &str) -> String {
    format!(
        "<a class=\"rid\" href=\"/api/records/{}\">{}</a>",
        enc(id),
        esc(id)
    )
}

fn verdict_badge(v: &str) -> String {
    format!(
        "<span class=\"badge v-{}\">{}</span>",
        class_word(v),
        esc(v)
    )
}

fn disposition_badge(d: &str) -> String {
    format!(
        "<span class=\"badge d-{}\">{}</span>",
        class_word(d),
        esc(d).replace('_', " ")
    )
}

/// A word safe inside a class name: known words pass, anything else is `other`.
fn class_word(word: &str) -> &str {
    if !word.is_empty()
        && word.len() <= 24
        && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    {
        word
    } else {
        "other"
    }
}

/// `<table {attrs}>` with a header row of `columns`, and the body opened.
fn table_open(attrs: &str, columns: &[&str]) -> String {
    let mut s = format!("<table {attrs}><thead><tr>");
    for c in columns {
        let _ = write!(s, "<th>{c}</th>");
    }
    s.push_str("</tr></thead><tbody>\n");
    s
}

/// One table row of cells that are already HTML.
fn row(attrs: &str, cells: &[String]) -> String {
    let mut s = if attrs.is_empty() {
        String::from("<tr>")
    } else {
        format!("<tr {attrs}>")
    };
    for c in cells {
        let _ = write!(s, "<td>{c}</td>");
    }
    s.push_str("</tr>\n");
    s
}

/// ` exit 0 · 1.2 s` for a record with outputs.
fn exit_text(r: &Record) -> String {
    let mut s = String::new();
    if let Some(out) = &r.outputs {
        match out.exit_code {
            Some(0) => s.push_str(" <span class=\"exit ok\">exit 0</span>"),
            Some(code) => {
                let _ = write!(s, " <span class=\"exit fail\">exit {code}</span>");
            }
            None => s.push_str(" <span class=\"exit\">no exit code</span>"),
        }
    }
    if let Some(d) = r.duration_ms {
        let _ = write!(s, " <span class=\"dur\">{}</span>", duration_text(d));
    }
    s
}

/// The command, else the path or URL, else the inputs as compact JSON.
fn inputs_summary(record: &Record) -> String {
    if let Some(target) = record.target() {
        return target.to_owned();
    }
    match &record.inputs {
        Value::Null => String::new(),
        Value::Object(m) if m.is_empty() => String::new(),
        other => other.to_string(),
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The first `max` bytes of `text` (cut at a character boundary) and how many bytes were cut.
fn clip(text: &str, max: usize) -> (&str, usize) {
    if text.len() <= max {
        return (text, 0);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], text.len() - end)
}

/// Escaped and clipped text, with a note naming the record that holds the rest.
fn clipped(text: &str, max: usize, record: &str) -> String {
    let (shown, cut) = clip(text, max);
    let mut s = esc(shown);
    if cut > 0 {
        let _ = write!(
            s,
            "\n<span class=\"cut\">… {cut} more bytes: see {}</span>",
            record_link(record)
        );
    }
    s
}

/// `HH:MM:SS`, with the date in front when it differs from the previous one shown.
fn time_cell(ms: i64, day: &mut Option<String>) -> String {
    let full = rfc3339(ms);
    let (date, rest) = full.split_once('T').unwrap_or((&full, ""));
    let hms = rest.get(..8).unwrap_or(rest);
    let date_html = if day.as_deref() == Some(date) {
        String::new()
    } else {
        *day = Some(date.to_owned());
        format!("<span class=\"date\">{date}</span> ")
    };
    format!("<time datetime=\"{full}\" title=\"{full}\">{date_html}{hms}</time>")
}

fn time_full(ms: i64) -> String {
    let full = rfc3339(ms);
    format!(
        "<time datetime=\"{full}\" title=\"{full}\">{}</time>",
        full.replace('T', " ")
    )
}

fn duration_text(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{} min {:02} s", ms / 60_000, ms % 60_000 / 1000),
        _ => format!("{} h {:02} min", ms / 3_600_000, ms % 3_600_000 / 60_000),
    }
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>{} · nightwatch</title>\n<style>{CSS}</style>\n</head>\n<body>\n\
         <header class=\"top\"><a href=\"/\">nightwatch</a></header>\n<main>\n{body}</main>\n</body>\n</html>\n",
        esc(title)
    )
}

const CSS: &str = "
:root{color-scheme:light dark;--fg:#1d2330;--muted:#5b6475;--bg:#f5f6f8;--card:#fff;--line:#dde1e8;
--allow:#1a7f37;--ask:#9a6700;--halt:#bc4c00;--deny:#cf222e;--link:#0b5cad;--code:#eef1f5}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ef;--muted:#9aa3b2;--bg:#14171c;--card:#1c2027;
--line:#2d333d;--link:#6cb6ff;--code:#252b34;--allow:#3fb950;--ask:#d29922;--halt:#f0883e;--deny:#f85149}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header.top{background:#1d2330;padding:8px 20px}header.top a{color:#fff;font-weight:700;text-decoration:none}
main{max-width:1200px;margin:0 auto;padding:12px 20px 48px}
h1{font-size:22px;margin:12px 0 4px}h2{font-size:16px;margin:22px 0 8px}h3{font-size:15px;margin:0 0 6px}
a{color:var(--link)}
code,pre,time{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
code{background:var(--code);padding:0 3px;border-radius:3px;overflow-wrap:anywhere}
pre{background:var(--code);padding:8px 10px;border-radius:4px;margin:6px 0;white-space:pre-wrap;
overflow-wrap:anywhere;max-height:28em;overflow:auto}
.muted,.window,.why,.date{color:var(--muted)}.why{font-size:13px}
#filters{display:flex;flex-wrap:wrap;gap:8px 12px;align-items:end;background:var(--card);
border:1px solid var(--line);border-radius:6px;padding:10px 12px;margin:10px 0}
#filters label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}
#filters input{font:inherit;padding:4px 6px;border:1px solid var(--line);border-radius:4px;
background:var(--bg);color:var(--fg);width:14em}
#filters button{font:inherit;padding:5px 14px}
#summary{display:flex;flex-wrap:wrap;gap:8px;list-style:none;padding:0;margin:10px 0}
#summary li{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:6px 14px;color:var(--muted)}
#summary b{display:block;font-size:20px;color:var(--fg)}
#summary li.v-deny b{color:var(--deny)}#summary li.v-halt b{color:var(--halt)}#summary li.v-ask b{color:var(--ask)}
#timeline{list-style:none;padding:0;margin:0;background:var(--card);border:1px solid var(--line);border-radius:6px}
.entry{display:grid;grid-template-columns:11em 1fr;gap:10px;padding:6px 12px;border-bottom:1px solid var(--line);
border-left:4px solid transparent}
.entry:last-child{border-bottom:0}.entry>time{color:var(--muted);white-space:nowrap}
.entry.kind-alert{border-left-color:#8250df}.entry.kind-task{border-left-color:#6e7781}
.entry.kind-session{border-left-color:#0969da}.entry.kind-dispatch{border-left-color:#1b7c83}
.entry.kind-sweep{border-left-color:#9a6700}
.veto{background:color-mix(in srgb,var(--deny) 7%,var(--card))}.entry.veto{border-left-color:var(--deny)}
.kind{display:inline-block;min-width:5.5em;font-size:11px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.badge{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;font-weight:600;border:1px solid currentColor;line-height:1.5}
.v-allow{color:var(--allow)}.v-ask{color:var(--ask)}.v-halt{color:var(--halt)}.v-deny{color:var(--deny)}
.d-routed,.d-ran,.d-resolved{color:var(--allow)}.d-failed,.d-escalated,.d-interrupted{color:var(--deny)}
.d-throttled,.d-suppressed,.d-no_route,.d-awaiting_approval,.d-ran_with_refusals{color:var(--ask)}
.status{font-weight:600}.st-firing,.st-gave_up{color:var(--deny)}.st-resolved,.st-done{color:var(--allow)}
.exit.ok{color:var(--allow)}.exit.fail{color:var(--deny);font-weight:600}.dur,.rid,.rule{color:var(--muted);font-size:12.5px}
.rule{font-family:ui-monospace,monospace}
.safeguards{margin:4px 0;padding-left:18px;font-size:13px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 14px;background:var(--card);
border:1px solid var(--line);border-radius:6px;padding:10px 14px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
#steps{list-style:none;padding:0;margin:0}
.step{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px 14px;margin:0 0 10px}
.step.veto{border-color:var(--deny);border-left-width:5px}
.step-head .n{display:inline-block;min-width:1.8em;height:1.8em;line-height:1.8em;text-align:center;border-radius:50%;
background:var(--fg);color:var(--bg);font-weight:700;margin-right:4px}
.veto-mark{color:var(--deny);font-weight:700;margin:6px 0}
.reasons{margin:4px 0;padding-left:18px}.stream{font-size:12px;color:var(--muted);margin-top:6px}
.stderr{border-left:3px solid var(--halt)}.cut{color:var(--muted);font-style:italic}
table{border-collapse:collapse;width:100%;background:var(--card);border:1px solid var(--line);margin:4px 0 10px}
th,td{text-align:left;vertical-align:top;padding:5px 8px;border-bottom:1px solid var(--line)}
thead th{font-size:12px;color:var(--muted);font-weight:600}
.task{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px 14px;margin:0 0 10px}
.error{font-size:16px}.empty{color:var(--muted);font-style:italic}
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbox::Disposition;
    use nightwatch_ledger::{Outputs, RecordActor, RecordContext, parse_rfc3339};
    use nightwatch_tasks::{Lifecycle, Status};
    use serde_json::json;

    /// 2026-02-14T03:17:22Z
    const T0: i64 = 1_771_039_042_000;
    const MIN: i64 = 60_000;
    const EVIL: &str = "<script>alert(1)</script>\"onx='y' &amp";
    /// How [`EVIL`] reads once escaped (inside JSON its quote is `\&quot;`).
    const EVIL_ESCAPED: &str = "&lt;script&gt;alert(1)&lt;/script&gt;";
    /// What the pages are rendered at.
    const NOW: i64 = T0 + 60 * MIN;

    /// A query string as key-value pairs.
    type Params = &'static [(&'static str, &'static str)];

    fn rec(seq: u64, event: &str, at: i64, actor: (&str, &str), tool: &str) -> Record {
        Record {
            id: Record::id_for(seq),
            seq,
            event: event.into(),
            timestamp_ms: at,
            session_id: None,
            actor: RecordActor {
                kind: actor.0.into(),
                id: actor.1.into(),
            },
            tool: tool.into(),
            inputs: Value::Null,
            outputs: None,
            context: RecordContext::default(),
            duration_ms: None,
            verdict: None,
            rule: None,
            reasons: Vec::new(),
            call_id: None,
            redacted: Vec::new(),
            cwd: None,
            safeguards: None,
            prev_hash: "0".repeat(64),
            hash: "0".repeat(64),
        }
    }

    fn decision(seq: u64, at: i64, command: &str, verdict: &str, host: Option<&str>) -> Record {
        let mut r = rec(seq, event::DECISION, at, ("agent", "claude-code"), "exec");
        r.session_id = Some("sess-1".into());
        r.call_id = Some(format!("call-{seq}"));
        r.inputs = json!({ "command": command });
        r.verdict = Some(verdict.into());
        r.rule = Some(format!("rule-{verdict}"));
        r.reasons = vec![format!("because {verdict}")];
        r.context.host = host.map(str::to_owned);
        r
    }

    fn result(seq: u64, at: i64, call: &str, exit: i64, stdout: &str) -> Record {
        let mut r = rec(seq, event::RESULT, at, ("agent", "claude-code"), "exec");
        r.session_id = Some("sess-1".into());
        r.call_id = Some(call.into());
        r.outputs = Some(Outputs {
            exit_code: Some(exit),
            stdout: stdout.into(),
            stderr: String::new(),
        });
        r.duration_ms = Some(1_250);
        r
    }

    fn arrival(id: i64, at: i64, host: Option<&str>, disposition: Disposition) -> AlertEvent {
        AlertEvent {
            id,
            received_ms: at,
            source: "uptime-kuma".into(),
            alert_id: "alert_88c2d1".into(),
            status: "firing".into(),
            title: "alert-db1 disk is down".into(),
            host: host.map(str::to_owned),
            alert: json!({
                "labels": { "runbook": "disk-cleanup" },
                "annotations": { "summary": "disk 86%" },
                "message": "Disk usage 86% exceeds 85%",
                "link": "https://kuma.example/dashboard/7",
            }),
            disposition: Some(disposition),
            reason: Some("route disk-full matches".into()),
            route: Some("disk-full".into()),
            task_id: Some(3),
            record: Some("r1".into()),
        }
    }

    fn task(id: i64, created: i64, route: &str) -> Task {
        Task {
            id,
            identity: "uptime-kuma/7".into(),
            alert_json: "{}".into(),
            route: route.into(),
            created_at: created,
            repeats: 1,
            last_seen: created,
            lifecycle: Lifecycle {
                status: Status::Done,
                attempt: 1,
                ready_at: created,
                lease_until: None,
                worker: None,
                last_error: None,
                finished_at: Some(created + 5 * MIN),
                deferrals: 0,
            },
        }
    }

    fn query(pairs: &[(&str, &str)]) -> Result<TimelineQuery, String> {
        let params = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TimelineQuery::from_params(&params, NOW)
    }

    fn window() -> TimelineQuery {
        query(&[("since", "1d")]).unwrap()
    }

    #[test]
    fn a_cut_window_links_to_the_page_before_with_its_filters() {
        let mut q = query(&[("since", "1d"), ("host", "db 1&x"), ("verdict", "deny")]).unwrap();
        assert!(!timeline_page(&q, NOW, &[], &[], &[]).contains("id=\"truncated\""));
        q.earlier = Some(PageCursor {
            records: Some(42),
            arrivals: Some(0),
            tasks: Some(7),
        });
        let html = timeline_page(&q, NOW, &[], &[], &[]);
        assert!(html.contains("id=\"truncated\""), "{html}");
        let href = html
            .split("id=\"earlier\" href=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("a link to the page before");
        assert!(
            href.contains("&amp;host=db%201%26x&amp;verdict=deny"),
            "{href}"
        );
        assert!(
            href.ends_with("&amp;records_before=42&amp;arrivals_before=0&amp;tasks_before=7"),
            "{href}"
        );
        // That link, read back, is the same window and filters from the cursor on.
        let unescaped = href.replace("&amp;", "&");
        let params: Vec<(String, String)> = unescaped
            .trim_start_matches("/?")
            .split('&')
            .map(|pair| {
                let (k, v) = pair.split_once('=').unwrap();
                let v = percent_encoding::percent_decode_str(v)
                    .decode_utf8()
                    .unwrap();
                (k.to_owned(), v.into_owned())
            })
            .collect();
        let refs: Vec<(&str, &str)> = params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let next = query(&refs).unwrap();
        assert_eq!((next.since_ms, next.until_ms), (q.since_ms, q.until_ms));
        assert_eq!(next.host.as_deref(), Some("db 1&x"));
        assert_eq!(next.before, q.earlier.unwrap());
        assert!(timeline_page(&next, NOW, &[], &[], &[]).contains("id=\"newest\""));
    }

    #[test]
    fn a_cursor_that_is_not_an_id_is_refused_with_why() {
        for bad in ["-1", "soon", "99999999999999999999", "1.5"] {
            let err = query(&[("records_before", bad)]).unwrap_err();
            assert!(err.contains("records_before"), "{bad}: {err}");
        }
        assert_eq!(
            query(&[("tasks_before", "12")]).unwrap().before.tasks,
            Some(12)
        );
    }

    /// The timeline list only, without the form and summary.
    fn timeline_of(html: &str) -> &str {
        let start = html.find("<ol id=\"timeline\">").expect("timeline list");
        &html[start..]
    }

    fn assert_inert(html: &str, what: &str) {
        assert!(
            !html.contains("<script"),
            "{what}: a raw <script> in\n{html}"
        );
        assert!(
            html.contains(EVIL_ESCAPED),
            "{what}: the escaped text is missing from\n{html}"
        );
        assert!(
            html.contains("onx=&#39;y&#39;"),
            "{what}: the quote is missing"
        );
        assert_eq!(
            html.matches("onx=").count(),
            html.matches("&quot;onx=&#39;y&#39;").count(),
            "{what}: an unescaped quote in\n{html}"
        );
    }

    #[test]
    fn hostile_text_is_escaped_in_every_timeline_field() {
        type Edit = fn(&mut Record, &mut AlertEvent, &mut Task);
        let cases: &[(&str, Edit)] = &[
            ("actor kind", |r, _, _| r.actor.kind = EVIL.into()),
            ("actor id", |r, _, _| r.actor.id = EVIL.into()),
            ("tool", |r, _, _| r.tool = EVIL.into()),
            ("command", |r, _, _| r.inputs = json!({ "command": EVIL })),
            ("inputs", |r, _, _| r.inputs = json!({ "x": EVIL })),
            ("rule", |r, _, _| r.rule = Some(EVIL.into())),
            ("reason", |r, _, _| r.reasons = vec![EVIL.into()]),
            ("verdict", |r, _, _| r.verdict = Some(EVIL.into())),
            ("host", |r, _, _| r.context.host = Some(EVIL.into())),
            ("session", |r, _, _| r.session_id = Some(EVIL.into())),
            ("record id", |r, _, _| r.id = EVIL.into()),
            ("check", |r, _, _| {
                r.safeguards = Some(json!({ "checks": [{ "check": EVIL, "kind": "process",
                    "outcome": "matched", "detail": EVIL, "effect": "deny", "message": EVIL }] }))
            }),
            ("session event", |r, _, _| {
                r.event = event::SESSION_START.into();
                r.context.triggered_by = Some(EVIL.into());
                r.context.alert_id = Some(EVIL.into());
            }),
            ("dispatch", |r, _, _| {
                r.event = event::DISPATCH.into();
                r.inputs = json!({ "disposition": EVIL, "route": EVIL, "task": EVIL, "title": EVIL, "alert_id": EVIL });
            }),
            ("sweep", |r, _, _| {
                r.event = event::SWEEP_KEEP.into();
                r.actor.kind = "janitor".into();
                r.inputs = json!({ "name": EVIL });
            }),
            ("alert source", |_, a, _| a.source = EVIL.into()),
            ("alert id", |_, a, _| a.alert_id = EVIL.into()),
            ("alert status", |_, a, _| a.status = EVIL.into()),
            ("alert title", |_, a, _| a.title = EVIL.into()),
            ("alert host", |_, a, _| a.host = Some(EVIL.into())),
            ("alert reason", |_, a, _| a.reason = Some(EVIL.into())),
            ("alert route", |_, a, _| a.route = Some(EVIL.into())),
            ("task route", |_, _, t| t.route = EVIL.into()),
            ("task error", |_, _, t| {
                t.lifecycle.last_error = Some(EVIL.into())
            }),
        ];
        for (what, edit) in cases {
            let mut r = decision(1, T0, "df -h", "allow", Some("db1"));
            let mut a = arrival(1, T0, Some("db1"), Disposition::Routed);
            let mut t = task(3, T0, "disk-full");
            edit(&mut r, &mut a, &mut t);
            let html = timeline_page(&window(), T0 + MIN, &[r], &[a], &[t]);
            assert_inert(&html, what);
        }
        let mut hostile_filters = window();
        hostile_filters.host = Some(EVIL.into());
        let html = timeline_page(&hostile_filters, T0, &[], &[], &[]);
        assert_inert(&html, "host filter");
        assert_inert(&error_page(400, EVIL), "error message");
    }

    #[test]
    fn hostile_text_is_escaped_on_session_and_alert_pages() {
        type Edit = fn(&mut Record);
        // Whether the alert page's records table shows the field too.
        let cases: &[(&str, bool, Edit)] = &[
            ("command", true, |r| r.inputs = json!({ "command": EVIL })),
            ("inputs", true, |r| {
                r.inputs = json!({ "file_path": 1, "content": EVIL })
            }),
            ("stdout", false, |r| {
                r.outputs.as_mut().unwrap().stdout = EVIL.into()
            }),
            ("stderr", false, |r| {
                r.outputs.as_mut().unwrap().stderr = EVIL.into()
            }),
            ("cwd", false, |r| r.cwd = Some(EVIL.into())),
            ("redacted", false, |r| r.redacted = vec![EVIL.into()]),
            ("reason", true, |r| r.reasons = vec![EVIL.into()]),
            ("rule", false, |r| r.rule = Some(EVIL.into())),
            ("alert id", false, |r| {
                r.context.alert_id = Some(EVIL.into())
            }),
            ("triggered by", false, |r| {
                r.context.triggered_by = Some(EVIL.into())
            }),
            ("host", false, |r| r.context.host = Some(EVIL.into())),
            ("actor", true, |r| r.actor.id = EVIL.into()),
            ("approval", false, |r| {
                r.safeguards = Some(json!({ "approval": { "by": EVIL, "record": EVIL } }))
            }),
            ("backup", false, |r| {
                r.safeguards = Some(json!({ "backup": { "error": EVIL } }))
            }),
        ];
        for (what, on_alert_page, edit) in cases {
            // One record that is its own result (an unguarded result) carries every field.
            let mut r = result(1, T0, "c1", 0, "ok");
            r.event = event::UNGUARDED_RESULT.into();
            edit(&mut r);
            assert_inert(&session_page("sess-1", std::slice::from_ref(&r)), what);
            if *on_alert_page {
                assert_inert(&alert_page("alert_1", &[], &[], &[r]), what);
            }
        }
        assert_inert(&session_page(EVIL, &[]), "session id");

        type AlertEdit = fn(&mut AlertEvent, &mut Task, &mut TaskEvent);
        let cases: &[(&str, AlertEdit)] = &[
            ("label", |a, _, _| a.alert["labels"] = json!({ EVIL: EVIL })),
            ("annotation", |a, _, _| {
                a.alert["annotations"] = json!({ "x": EVIL })
            }),
            ("message", |a, _, _| a.alert["message"] = json!(EVIL)),
            ("monitor", |a, _, _| a.alert["monitor"] = json!(EVIL)),
            ("link", |a, _, _| {
                a.alert["link"] = json!(format!("https://x/{EVIL}"))
            }),
            ("title", |a, _, _| a.title = EVIL.into()),
            ("source", |a, _, _| a.source = EVIL.into()),
            ("reason", |a, _, _| a.reason = Some(EVIL.into())),
            ("record", |a, _, _| a.record = Some(EVIL.into())),
            ("task route", |_, t, _| t.route = EVIL.into()),
            ("task event", |_, _, e| e.why = EVIL.into()),
        ];
        for (what, edit) in cases {
            let mut a = arrival(1, T0, Some("db1"), Disposition::Routed);
            let mut t = task(3, T0, "disk-full");
            let mut e = TaskEvent {
                seq: 1,
                task_id: 3,
                at: T0,
                from: None,
                to: Status::Pending,
                why: "offered".into(),
            };
            edit(&mut a, &mut t, &mut e);
            assert_inert(
                &alert_page("alert_88c2d1", &[a], &[(t, vec![e])], &[]),
                what,
            );
        }
        assert_inert(&alert_page(EVIL, &[], &[], &[]), "alert id");

        let mut a = arrival(1, T0, None, Disposition::Routed);
        a.alert["link"] = json!("javascript:alert(1)");
        let html = alert_page("alert_88c2d1", &[a], &[], &[]);
        assert!(!html.contains("href=\"javascript"), "{html}");
    }

    #[test]
    fn filters_keep_the_matching_entries() {
        let mut sweep = rec(
            5,
            event::DECISION,
            T0 + 4 * MIN,
            ("janitor", "janitor"),
            "remove_container",
        );
        sweep.inputs = json!({ "name": "ctr-old" });
        sweep.verdict = Some("allow".into());
        let records = [
            decision(1, T0 + MIN, "cmd-db1-allow", "allow", Some("db1")),
            result(2, T0 + MIN + 100, "call-1", 0, ""),
            decision(3, T0 + 2 * MIN, "cmd-web2-deny", "deny", Some("web2")),
            sweep,
        ];
        let alerts = [arrival(1, T0, Some("db1.example.com"), Disposition::Routed)];
        let tasks = [task(3, T0 + 10, "route-disk")];
        let markers = [
            "cmd-db1-allow",
            "cmd-web2-deny",
            "ctr-old",
            "alert-db1",
            "route-disk",
        ];
        let cases: &[(Params, &[&str])] = &[
            (&[], &markers),
            (
                &[("host", "db1")],
                &["cmd-db1-allow", "alert-db1", "route-disk"],
            ),
            (&[("host", "DB1.example.com")], &["alert-db1", "route-disk"]),
            (&[("host", "db")], &[]),
            (&[("actor", "janitor")], &["ctr-old"]),
            (
                &[("actor", "claude-code")],
                &["cmd-db1-allow", "cmd-web2-deny"],
            ),
            (&[("actor", "agent")], &["cmd-db1-allow", "cmd-web2-deny"]),
            (&[("actor", "uptime-kuma")], &["alert-db1"]),
            (&[("actor", "dispatcher")], &["route-disk"]),
            (&[("verdict", "deny")], &["cmd-web2-deny"]),
            (&[("verdict", "allow")], &["cmd-db1-allow", "ctr-old"]),
            (&[("verdict", "allow"), ("host", "web2")], &[]),
        ];
        for (params, expected) in cases {
            let mut pairs = vec![("since", "1d")];
            pairs.extend_from_slice(params);
            let q = query(&pairs).unwrap();
            let html = timeline_page(&q, T0 + 10 * MIN, &records, &alerts, &tasks);
            let list = timeline_of(&html);
            for m in markers {
                assert_eq!(
                    list.contains(m),
                    expected.contains(&m),
                    "filter {params:?}: {m} should be {}\n{list}",
                    if expected.contains(&m) {
                        "shown"
                    } else {
                        "hidden"
                    }
                );
            }
        }
    }

    #[test]
    fn a_call_is_joined_to_its_result_and_counted() {
        let records = [
            decision(1, T0, "df -h", "allow", Some("db1")),
            result(2, T0 + 1_000, "call-1", 0, "Filesystem"),
            decision(
                3,
                T0 + 2_000,
                "rm -rf /var/lib/postgresql",
                "deny",
                Some("db1"),
            ),
        ];
        let html = timeline_page(&window(), T0 + MIN, &records, &[], &[]);
        assert_eq!(
            timeline_of(&html)
                .matches("<li class=\"entry kind-call")
                .count(),
            2
        );
        assert!(html.contains("exit 0"), "{html}");
        assert!(html.contains("class=\"entry kind-call veto\" data-verdict=\"deny\" data-host=\"db1\" data-actor=\"claude-code\""), "{html}");
        assert!(html.contains("<li data-count=\"calls\"><b>2</b>"), "{html}");
        assert!(
            html.contains("<li data-count=\"deny\" class=\"v-deny\"><b>1</b>"),
            "{html}"
        );
        assert!(
            html.contains("<li data-count=\"sessions\"><b>1</b>"),
            "{html}"
        );
        assert!(html.contains("href=\"/sessions/sess-1\""), "{html}");
        assert!(html.contains("href=\"/api/records/r2\""), "{html}");
    }

    #[test]
    fn times_show_the_date_only_when_it_changes() {
        let midnight = parse_rfc3339("2026-02-15T00:00:00Z").unwrap();
        let records = [
            decision(1, midnight - MIN, "a", "allow", None),
            decision(2, midnight - MIN / 2, "b", "allow", None),
            decision(3, midnight + MIN, "c", "allow", None),
        ];
        let html = timeline_page(&window(), midnight + 2 * MIN, &records, &[], &[]);
        let list = timeline_of(&html);
        assert_eq!(
            list.matches("<span class=\"date\">2026-02-14</span>")
                .count(),
            1
        );
        assert_eq!(
            list.matches("<span class=\"date\">2026-02-15</span>")
                .count(),
            1
        );
        assert!(
            list.contains("title=\"2026-02-14T23:59:30Z\">23:59:30</time>"),
            "{list}"
        );
    }

    #[test]
    fn timeline_query_reads_spans_times_and_refuses_nonsense() {
        let ok: &[(Params, i64, i64)] = &[
            (&[], NOW - 12 * 60 * MIN, NOW),
            (&[("since", "30m")], NOW - 30 * MIN, NOW),
            (
                &[("since", "2h ago"), ("until", "-1h")],
                NOW - 120 * MIN,
                NOW - 60 * MIN,
            ),
            (
                &[("since", "2d"), ("until", "now")],
                NOW - 2 * 1440 * MIN,
                NOW,
            ),
            (
                &[
                    ("since", "2026-02-14T01:00:00Z"),
                    ("until", "2026-02-14T03:00:00+01:00"),
                ],
                parse_rfc3339("2026-02-14T01:00:00Z").unwrap(),
                parse_rfc3339("2026-02-14T02:00:00Z").unwrap(),
            ),
            (
                &[("since", "2026-02-14")],
                parse_rfc3339("2026-02-14T00:00:00Z").unwrap(),
                NOW,
            ),
            (
                &[("since", "2026-02-14T01:30")],
                parse_rfc3339("2026-02-14T01:30:00Z").unwrap(),
                NOW,
            ),
            (&[("since", " "), ("host", "")], NOW - 12 * 60 * MIN, NOW),
            // The CLI's grammar: clock times and calendar words, read in UTC.
            (
                &[("since", "yesterday"), ("until", "2am")],
                parse_rfc3339("2026-02-13T00:00:00Z").unwrap(),
                parse_rfc3339("2026-02-14T02:00:00Z").unwrap(),
            ),
        ];
        for (params, since, until) in ok {
            let q = query(params).unwrap_or_else(|e| panic!("{params:?}: {e}"));
            assert_eq!((q.since_ms, q.until_ms), (*since, *until), "{params:?}");
        }
        let q = query(&[("host", " db1 "), ("actor", "janitor"), ("verdict", "DENY")]).unwrap();
        assert_eq!(q.host.as_deref(), Some("db1"));
        assert_eq!(q.actor.as_deref(), Some("janitor"));
        assert_eq!(q.verdict.as_deref(), Some("deny"));
        assert_eq!(query(&[("host", "")]).unwrap().host, None);

        let bad: &[(Params, &str)] = &[
            (&[("since", "soon")], "since \"soon\" is neither"),
            (&[("until", "12x")], "until \"12x\" is neither"),
            (&[("since", "h")], "since \"h\""),
            (
                &[("since", "99999999999999999d")],
                "since \"99999999999999999d\"",
            ),
            (&[("since", "1h"), ("until", "2h")], "must be before until"),
            (&[("verdict", "maybe")], "verdict \"maybe\" is not one of"),
        ];
        for (params, message) in bad {
            let err = query(params).expect_err(&format!("{params:?} should be refused"));
            assert!(err.contains(message), "{params:?}: {err}");
        }
    }

    #[test]
    fn session_page_numbers_steps_in_time_order_and_marks_the_denied_one() {
        let mut start = rec(
            1,
            event::SESSION_START,
            T0,
            ("agent", "claude-code"),
            "session",
        );
        start.session_id = Some("sess-1".into());
        start.context.alert_id = Some("alert_88c2d1".into());
        start.context.triggered_by = Some("uptime_kuma_alert".into());
        let mut end = rec(
            9,
            event::SESSION_END,
            T0 + 3 * MIN,
            ("agent", "claude-code"),
            "session",
        );
        end.session_id = Some("sess-1".into());
        let mut stderr = result(4, T0 + 61_000, "call-3", 1, "");
        stderr.outputs.as_mut().unwrap().stderr = "du: cannot read".into();
        let records = [
            end,
            decision(
                5,
                T0 + 2 * MIN,
                "rm -rf /var/lib/docker",
                "deny",
                Some("db1"),
            ),
            stderr,
            decision(3, T0 + MIN, "du -sh /var/log", "allow", Some("db1")),
            result(2, T0 + 1_500, "call-1", 0, "Filesystem Size"),
            decision(1, T0 + 1_000, "df -h", "allow", Some("db1")),
            start,
        ];
        let html = session_page("sess-1", &records);
        assert_eq!(html.matches("<li class=\"step").count(), 3, "{html}");
        let at = |s: &str| {
            html.find(s)
                .unwrap_or_else(|| panic!("{s} missing:\n{html}"))
        };
        assert!(at("$ df -h") < at("$ du -sh /var/log"));
        assert!(at("$ du -sh /var/log") < at("$ rm -rf /var/lib/docker"));
        assert!(
            html.contains("<li class=\"step veto\" id=\"step-3\" data-verdict=\"deny\">"),
            "{html}"
        );
        assert!(html.contains("Denied: it did not run"), "{html}");
        assert!(
            html.contains("<li class=\"step\" id=\"step-1\" data-verdict=\"allow\">"),
            "{html}"
        );
        assert!(
            html.contains("<pre class=\"stdout\">Filesystem Size</pre>"),
            "{html}"
        );
        assert!(
            html.contains("<pre class=\"stderr\">du: cannot read</pre>"),
            "{html}"
        );
        assert!(html.contains("exit 1"), "{html}");
        assert!(html.contains("href=\"/alerts/alert_88c2d1\""), "{html}");
        assert!(
            html.contains("<dt>duration</dt><dd>3 min 00 s</dd>"),
            "{html}"
        );
    }

    #[test]
    fn long_output_is_cut_and_points_at_the_record() {
        let mut r = result(7, T0, "c", 0, &"é".repeat(OUTPUT_SHOWN_BYTES));
        r.event = event::UNGUARDED_RESULT.into();
        let html = session_page("s", &[r]);
        assert!(
            html.contains(&format!("{} more bytes", OUTPUT_SHOWN_BYTES)),
            "cut at a char boundary"
        );
        assert!(html.contains("href=\"/api/records/r7\""));
    }

    #[test]
    fn alert_page_shows_each_arrival_with_its_disposition() {
        let mut resolved = arrival(3, T0 + 20 * MIN, Some("db1"), Disposition::Resolved);
        resolved.status = "resolved".into();
        resolved.task_id = None;
        let arrivals = [
            arrival(2, T0 + MIN, Some("db1"), Disposition::Deduplicated),
            resolved,
            arrival(1, T0, Some("db1"), Disposition::Routed),
        ];
        let events = vec![
            TaskEvent {
                seq: 1,
                task_id: 3,
                at: T0,
                from: None,
                to: Status::Pending,
                why: "offered".into(),
            },
            TaskEvent {
                seq: 2,
                task_id: 3,
                at: T0 + MIN,
                from: Some(Status::Pending),
                to: Status::Running,
                why: "claimed by w1".into(),
            },
        ];
        let mut dispatch = rec(
            1,
            event::DISPATCH,
            T0,
            ("dispatcher", "nightwatch-serve"),
            "alert",
        );
        dispatch.inputs = json!({ "disposition": "routed", "alert_id": "alert_88c2d1", "task": 3 });
        let mut call = decision(2, T0 + 2 * MIN, "df -h", "allow", Some("db1"));
        call.context.alert_id = Some("alert_88c2d1".into());
        let html = alert_page(
            "alert_88c2d1",
            &arrivals,
            &[(task(3, T0, "disk-full"), events)],
            &[call, dispatch],
        );
        let at = |s: &str| {
            html.find(s)
                .unwrap_or_else(|| panic!("{s} missing:\n{html}"))
        };
        assert!(at("data-disposition=\"routed\"") < at("data-disposition=\"deduplicated\""));
        assert!(at("data-disposition=\"deduplicated\"") < at("data-disposition=\"resolved\""));
        assert!(html.contains("<table id=\"arrivals\">"));
        assert!(html.contains("<div id=\"tasks\">"));
        assert!(html.contains("<table id=\"records\">"));
        assert!(html.contains("pending &rarr; <b>running</b>"), "{html}");
        assert!(at("data-event=\"dispatch\"") < at("data-event=\"decision\""));
        assert!(html.contains("href=\"/sessions/sess-1\""), "{html}");
        assert!(
            html.contains("<td>labels</td><th scope=\"row\">runbook</th><td>disk-cleanup</td>"),
            "{html}"
        );
        assert!(
            html.contains("href=\"https://kuma.example/dashboard/7\""),
            "{html}"
        );
    }

    #[test]
    fn pages_are_html5_with_a_title_and_no_script() {
        for html in [
            timeline_page(&window(), T0, &[], &[], &[]),
            session_page("s", &[]),
            alert_page("a", &[], &[], &[]),
            error_page(404, "no such alert"),
        ] {
            assert!(html.starts_with("<!doctype html>\n<html lang=\"en\">"));
            assert!(html.contains("<title>") && html.contains("<style>"));
            assert!(!html.contains("<script"));
        }
        assert!(error_page(404, "gone").contains("<h1>404 Not found</h1>"));
    }

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(enc("a b/c?d#e%"), "a%20b%2Fc%3Fd%23e%25");
        assert_eq!(enc("sess-1_x.y~z"), "sess-1_x.y~z");
        assert_eq!(enc("é"), "%C3%A9");
    }
}
