//! Server-rendered pages: "what happened tonight" (the timeline), one agent session read like a
//! runbook, and one alert from arrival to resolution.
//!
//! Pure: records, arrivals and tasks in, an HTML `String` out; no I/O, and no clock (the caller
//! passes `now`). Markup is built with maud's `html!`, which escapes every spliced value by its
//! type; data text goes through [`Text`], which also shows control characters as their pictures
//! and replaces bidirectional overrides. Alerts come from the network and are hostile. Pages
//! carry a Content-Security-Policy that forbids scripts, so a missed escape still runs nothing.
//! No JavaScript, no external resources; the one chart is inline SVG.
//!
//! Stable hooks for tests and scrapers: the timeline is `#timeline` with `li.entry.kind-*`
//! carrying `data-verdict`, `data-host`, `data-actor` (an alert's row also `data-alert` and
//! `data-outcome`, its dispositions `li.fold[data-disposition]`, an arrival's with `data-arrival`); `#summary`, `#filters`,
//! `#chart`, `#order` (the toggle), `#earlier` (the page of older entries); a session's facts
//! are `#facts` (`#outcome`) and its steps `#steps > li.step`; an alert page has `#arrivals`,
//! `#tasks`, `#records`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use maud::{DOCTYPE, Markup, PreEscaped, Render, html};
use nightwatch_intake::Alert;
use nightwatch_ledger::{Record, event, rfc3339};
use nightwatch_store::{ArrivalCursor, FleetArrival, FleetCursor, FleetRecord, Task, TaskEvent};
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
const HOUR_MS: i64 = 3_600_000;
/// The chart keeps at most this many bars; a longer window gets wider buckets.
const CHART_BARS: i64 = 48;
const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'";

/// The timeline's window and filters, read from the page's query string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineQuery {
    pub since_ms: i64,
    pub until_ms: i64,
    pub host: Option<String>,
    pub actor: Option<String>,
    pub verdict: Option<String>,
    /// `order=oldest`: the page reads from the top down in time; newest first otherwise.
    pub oldest_first: bool,
    /// `limit=N`: at most this many of each source on a page (the caller's own bound still
    /// applies), so a short page can be asked for.
    pub limit: Option<usize>,
    /// This page shows what each source holds before these (`records_before`,
    /// `arrivals_before`, `tasks_before`): the page after a cut one.
    pub before: PageCursor,
    /// Set by the caller when it had to leave the window's oldest entries out (it reads a
    /// bounded number from each source): where the page of those starts. The page then links
    /// to it instead of starting mid-window silently.
    pub earlier: Option<PageCursor>,
}

/// Where a page of the timeline starts, by source: only what comes before these (a record's
/// place in the ledger's order, an arrival's in the inbox's, the task's id). A source read to
/// its end before is `Some(0)` (for records, [`FleetCursor::end`], for arrivals,
/// [`ArrivalCursor::end`]): nothing of it is left.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageCursor {
    pub records: Option<FleetCursor>,
    pub arrivals: Option<ArrivalCursor>,
    pub tasks: Option<i64>,
}

impl TimelineQuery {
    /// Reads `since`, `until`, `host`, `actor`, `verdict`, `order` and `limit` (other keys are
    /// ignored; empty values count as absent). `since` and `until` take what [`instant`] reads:
    /// RFC 3339 (`2026-02-14T03:00:00Z`; a time without a zone, or a bare date, is UTC), a span
    /// before `now_ms` (`12h`, `30m`, `2d`, `90s`, `1w`), a clock time (`2am`), `yesterday` or
    /// `now`. Defaults: the 12 hours before `now_ms`, newest first. The error is a sentence for
    /// the page.
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
            records: get("records_before")
                .map(|text| crate::api::record_cursor("records_before", text))
                .transpose()?,
            arrivals: get("arrivals_before")
                .map(|text| crate::api::arrival_cursor("arrivals_before", text))
                .transpose()?,
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
        let oldest_first = match get("order").map(str::to_ascii_lowercase).as_deref() {
            None | Some("newest") => false,
            Some("oldest") => true,
            Some(other) => {
                return Err(format!(
                    "order {:?} is not one of newest, oldest",
                    clip(other, 32).0
                ));
            }
        };
        let limit = get("limit")
            .map(|text| {
                text.parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("limit {:?} is not a count", clip(text, 32).0))
            })
            .transpose()?;
        Ok(TimelineQuery {
            since_ms,
            until_ms,
            host: get("host").map(str::to_owned),
            actor: get("actor").map(str::to_owned),
            verdict,
            oldest_first,
            limit,
            before,
            earlier: None,
        })
    }

    /// How many of one source a page reads: the caller's `most`, or less when `limit` says.
    /// Whether an arrival falls in this page's share of the arrivals: it is one of those
    /// the page read (`on_page`), or the arrivals are not paged at all (no cursor, none cut
    /// off), so one the page did not read is outside the window and nowhere else either.
    fn arrival_on_this_page(&self, on_page: bool) -> bool {
        let paged = self.before.arrivals.is_some()
            || self
                .earlier
                .as_ref()
                .and_then(|e| e.arrivals.as_ref())
                .is_some_and(|cut| *cut != ArrivalCursor::end());
        on_page || !paged
    }

    pub fn page_size(&self, most: usize) -> usize {
        self.limit.map_or(most, |l| l.min(most))
    }

    /// The page of this window and filters that starts at `cursor`, in `oldest_first` order.
    fn link(&self, cursor: &PageCursor, oldest_first: bool) -> String {
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
                link.push_str(&format!("&{key}={}", enc(value)));
            }
        }
        if oldest_first {
            link.push_str("&order=oldest");
        }
        if let Some(limit) = self.limit {
            link.push_str(&format!("&limit={limit}"));
        }
        let ids = [
            (
                "records_before",
                cursor.records.as_ref().map(crate::api::cursor_text),
            ),
            (
                "arrivals_before",
                cursor
                    .arrivals
                    .as_ref()
                    .map(crate::api::arrival_cursor_text),
            ),
            ("tasks_before", cursor.tasks.map(|n| n.to_string())),
        ];
        for (key, id) in ids {
            if let Some(id) = id {
                link.push_str(&format!("&{key}={}", enc(&id)));
            }
        }
        link
    }

    fn page_link(&self, cursor: &PageCursor) -> String {
        self.link(cursor, self.oldest_first)
    }

    /// Whether an entry with these fields passes the host, actor and verdict filters. A host
    /// filter `db1` matches any of `hosts` that is `db1`, `db1.example.com` or `db1:9100`.
    fn keeps(&self, hosts: &[&str], actors: &[&str], verdict: Option<&str>) -> bool {
        if let Some(want) = &self.host {
            let want = want.to_ascii_lowercase();
            let named = |host: &&str| {
                host.to_ascii_lowercase()
                    .strip_prefix(want.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', ':']))
            };
            if !hosts.iter().any(named) {
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

// ---- text as the pages show it --------------------------------------------------------------

/// Text that came from data. maud escapes it; this also shows control characters (ANSI colour
/// codes in command output) as their visible pictures, and bidirectional overrides, which can
/// make text read differently from what it is, as U+FFFD.
struct Text<'a>(&'a str);

impl Render for Text<'_> {
    fn render_to(&self, out: &mut String) {
        let shown: String = self.0.chars().map(visible).collect();
        shown.as_str().render_to(out);
    }
}

fn visible(c: char) -> char {
    match c {
        '\n' | '\t' | '\r' => c,
        '\0'..='\x1f' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
        '\x7f' => '\u{2421}',
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => '\u{fffd}',
        _ => c,
    }
}

/// A sentence the daemon wrote (a reason, a task's change), with the machine times in it read
/// for people: see [`humane`].
struct Prose<'a> {
    text: &'a str,
    now_ms: i64,
}

impl Render for Prose<'_> {
    fn render_to(&self, out: &mut String) {
        Text(&humane(self.text, self.now_ms)).render_to(out);
    }
}

fn prose(text: &str, now_ms: i64) -> Prose<'_> {
    Prose { text, now_ms }
}

/// Rewrites the machine times in a reason for people: an RFC 3339 timestamp or unix
/// milliseconds (what older records carry: "no new task until 1796157378455") become a clock
/// time in UTC (with the day when it is not `now_ms`'s), and `N ms` of a second or more a
/// duration. Everything else is left as written.
fn humane(text: &str, now_ms: i64) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let word_before = |at: usize| at > 0 && (bytes[at - 1].is_ascii_alphanumeric());
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() || word_before(i) {
            let len = text[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&text[i..i + len]);
            i += len;
            continue;
        }
        let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        let after = i + digits;
        // RFC 3339: a year, then a dash.
        if digits == 4 && bytes.get(after) == Some(&b'-') {
            let span = bytes[i..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || b"-:.+TZtz".contains(b))
                .count();
            let mut token = &text[i..i + span];
            // A sentence's full stop or a colon after the time is not part of it.
            while token.ends_with(['.', ':', '-', '+']) {
                token = &token[..token.len() - 1];
            }
            if let Some(ms) = nightwatch_time::parse_rfc3339(token) {
                out.push_str(&human_time(ms, now_ms));
                i += token.len();
                continue;
            }
        }
        let ends_word = !bytes.get(after).is_some_and(u8::is_ascii_alphanumeric);
        let number: Option<i64> = text[i..after].parse().ok();
        // Unix milliseconds between 2001 and 2100: thirteen digits standing alone.
        if digits == 13
            && ends_word
            && let Some(ms) = number.filter(|n| (978_307_200_000..4_102_444_800_000).contains(n))
        {
            out.push_str(&human_time(ms, now_ms));
            i = after;
            continue;
        }
        if text[after..].starts_with(" ms")
            && !bytes.get(after + 3).is_some_and(u8::is_ascii_alphanumeric)
            && let Some(n) = number.filter(|n| *n >= 1000)
        {
            out.push_str(&duration_text(n as u64));
            i = after + 3;
            continue;
        }
        out.push_str(&text[i..after]);
        i = after;
    }
    out
}

fn zoned(ms: i64) -> Option<jiff::Zoned> {
    jiff::Timestamp::from_millisecond(ms)
        .ok()
        .map(|t| t.to_zoned(READING_ZONE))
}

/// `04:17:01 UTC` on `now_ms`'s day, `Sat 14 Feb 04:17:01 UTC` on another day of its year,
/// `14 Feb 2027 04:17 UTC` in another year.
fn human_time(ms: i64, now_ms: i64) -> String {
    let (Some(t), Some(now)) = (zoned(ms), zoned(now_ms)) else {
        return rfc3339(ms);
    };
    if t.date() == now.date() {
        t.strftime("%H:%M:%S UTC").to_string()
    } else if t.year() == now.year() {
        t.strftime("%a %-d %b %H:%M:%S UTC").to_string()
    } else {
        t.strftime("%-d %b %Y %H:%M UTC").to_string()
    }
}

/// `Sat 14 Feb 2026`.
fn human_date(ms: i64) -> String {
    zoned(ms).map_or_else(|| rfc3339(ms), |t| t.strftime("%a %-d %b %Y").to_string())
}

fn duration_text(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{} min {:02} s", ms / 60_000, ms % 60_000 / 1000),
        3_600_000..86_400_000 => {
            format!("{} h {:02} min", ms / 3_600_000, ms % 3_600_000 / 60_000)
        }
        _ => format!("{} d {} h", ms / 86_400_000, ms % 86_400_000 / 3_600_000),
    }
}

fn span_text(from: i64, to: i64) -> String {
    duration_text(to.saturating_sub(from).max(0) as u64)
}

/// `HH:MM:SS`, with the day in front when it differs from the previous one shown.
fn time_cell(ms: i64, day: &mut Option<String>) -> Markup {
    let full = rfc3339(ms);
    let date = zoned(ms).map_or_else(|| rfc3339(ms), |t| t.strftime("%a %-d %b").to_string());
    let hms = zoned(ms).map_or_else(|| full.clone(), |t| t.strftime("%H:%M:%S").to_string());
    let new_day = day.as_deref() != Some(date.as_str());
    if new_day {
        *day = Some(date.clone());
    }
    html! {
        time datetime=(full) title=(full) {
            @if new_day { span.date { (date) } " " }
            (hms)
        }
    }
}

/// `HH:MM:SS` alone, for lines under a row that already shows the day.
fn clock(ms: i64) -> Markup {
    let full = rfc3339(ms);
    let hms = zoned(ms).map_or_else(|| full.clone(), |t| t.strftime("%H:%M:%S").to_string());
    html! { time datetime=(full) title=(full) { (hms) } }
}

/// `Sat 14 Feb 2026, 03:17:22 UTC`.
fn time_full(ms: i64) -> Markup {
    let full = rfc3339(ms);
    let hms = zoned(ms).map_or_else(|| full.clone(), |t| t.strftime("%H:%M:%S").to_string());
    html! { time datetime=(full) title=(full) { (human_date(ms)) ", " (hms) " UTC" } }
}

// ---- words for verdicts, dispositions and outcomes ------------------------------------------

/// How a verdict reads: its word, its class and what it meant for the action. Ask, halt and
/// deny look and read differently: an ask waits, a halt stopped and called for a person, a
/// denial is final.
fn verdict_look(v: &str) -> (&'static str, &'static str, &'static str) {
    match v {
        "allow" => ("allowed", "v-allow", "policy let it run"),
        "ask" => (
            "asked",
            "v-ask",
            "waits for a person's approval; it has not run",
        ),
        "halt" => (
            "halted",
            "v-halt",
            "stopped and held for a person; it did not run",
        ),
        "deny" => ("denied", "v-deny", "refused; it did not run"),
        _ => ("", "v-other", "a verdict this page does not know"),
    }
}

fn verdict_badge(v: &str) -> Markup {
    let (word, class, meaning) = verdict_look(v);
    html! {
        span class={ "badge " (class) } title=(meaning) {
            @if word.is_empty() { (Text(v)) } @else { (word) }
        }
    }
}

/// The classes of a timeline entry or a step with this verdict.
fn verdict_classes(v: Option<&str>) -> &'static str {
    match v {
        Some("deny") => " veto is-deny",
        Some("halt") => " veto is-halt",
        Some("ask") => " asked is-ask",
        _ => "",
    }
}

/// What a disposition (of an arrival, or of a task's runbook) reads as.
fn disposition_word(d: &str) -> &str {
    match d {
        "routed" => "routed",
        "deduplicated" => "repeat, counted on its task",
        "suppressed" => "suppressed",
        "throttled" => "throttled",
        "no_route" => "no route",
        "cancelled" => "cancelled",
        "resolved" => "resolved",
        "test" => "test",
        "awaiting_approval" => "awaiting approval",
        "ran" => "ran and succeeded",
        "ran_with_refusals" => "ran with refusals",
        "failed" => "failed",
        "refused" => "refused",
        "escalated" => "escalated",
        "interrupted" => "interrupted",
        "stopped_after_crash" => "stopped after a crash",
        other => other,
    }
}

fn disposition_badge(d: &str) -> Markup {
    html! { span class={ "badge d-" (class_word(d)) } { (Text(disposition_word(d))) } }
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

/// The dispositions that end a task's attempt (the runner's records), as against those of an
/// arrival (the dispatcher's).
fn is_task_outcome(d: &str) -> bool {
    matches!(
        d,
        "ran"
            | "ran_with_refusals"
            | "failed"
            | "refused"
            | "escalated"
            | "interrupted"
            | "stopped_after_crash"
            | "awaiting_approval"
    )
}

fn disposition_of(r: &Record) -> Option<&str> {
    r.inputs.get("disposition").and_then(Value::as_str)
}

/// The task a record is about: its inputs' `task` (a number) or its context's (`t3`).
fn task_of(r: &Record) -> Option<i64> {
    r.inputs.get("task").and_then(Value::as_i64).or_else(|| {
        let t = r.context.task.as_deref()?;
        t.strip_prefix('t')?.parse().ok()
    })
}

/// What records say became of a task: its last outcome record (`ran_with_refusals`,
/// `escalated`, ...), if any of `records` is one.
fn task_outcome<'a>(task: i64, records: &[&'a Record]) -> Option<&'a Record> {
    records
        .iter()
        .filter(|r| r.event == event::DISPATCH && task_of(r) == Some(task))
        .filter(|r| disposition_of(r).is_some_and(is_task_outcome))
        .max_by_key(|r| (r.timestamp_ms, r.seq))
        .copied()
}

/// A task's status as it should read: `done` is not a success when the runbook's steps were
/// refused, and a task that gave up says whether anyone was told.
fn task_status_word(task: &Task, records: &[&Record]) -> (String, &'static str) {
    let status = task.lifecycle.status.as_str();
    let outcome = task_outcome(task.id, records).and_then(disposition_of);
    match (status, outcome) {
        ("done", Some("ran_with_refusals")) => ("done, with refused steps".into(), "st-warn"),
        ("done", _) => ("done".into(), "st-done"),
        ("gave_up", _) => ("gave up".into(), "st-gave_up"),
        (other, _) => (other.replace('_', " "), "st-other"),
    }
}

/// What a task's escalation did, from the records: who was told, or that nobody was.
fn escalation_text(task: i64, records: &[&Record]) -> String {
    let escalated = records
        .iter()
        .filter(|r| r.event == event::DISPATCH && task_of(r) == Some(task))
        .find(|r| disposition_of(r) == Some("escalated"));
    match escalated {
        Some(r) => {
            let told = nightwatch_ledger::Safeguards::of(r.safeguards.as_ref())
                .notify
                .unwrap_or_default();
            if told.is_empty() {
                format!(
                    "gave up; no notifier is configured, so nobody was told (record {})",
                    r.id
                )
            } else {
                format!(
                    "gave up; escalated to {} (record {})",
                    told.join(", "),
                    r.id
                )
            }
        }
        None => "gave up and was taken for escalation; no record here says who was told".into(),
    }
}

/// A task event's sentence as the page shows it: the escalation said as records prove it, and
/// a success that had refused steps said so.
fn task_event_text(e: &TaskEvent, records: &[&Record]) -> String {
    if e.to == nightwatch_tasks::Status::GaveUp && e.from == Some(nightwatch_tasks::Status::GaveUp)
    {
        return escalation_text(e.task_id, records);
    }
    if e.to == nightwatch_tasks::Status::Done
        && let Some(r) = task_outcome(e.task_id, records)
        && disposition_of(r) == Some("ran_with_refusals")
    {
        return format!(
            "{}; but the gate refused some of its steps (record {})",
            e.why, r.id
        );
    }
    e.why.clone()
}

// ---- the timeline ---------------------------------------------------------------------------

/// One line of the timeline before it is written out.
struct Item {
    at: i64,
    /// Keeps ties in a stable, sensible order: alerts, then records by seq.
    tie: (u8, i64),
    kind: &'static str,
    verdict: Option<String>,
    host: Option<String>,
    actor: String,
    /// Extra attributes of an alert's row.
    alert: Option<(String, String)>,
    body: Markup,
}

/// One alert's row: its arrivals, its tasks and what became of them, folded together.
#[derive(Default)]
struct AlertRow<'a> {
    arrivals: Vec<&'a FleetArrival>,
    tasks: Vec<(&'a Task, bool, bool)>,
    /// With the host whose ledger holds each.
    records: Vec<(&'a str, &'a Record)>,
    title: Option<String>,
    host: Option<String>,
    source: Option<String>,
}

/// One disposition inside an alert's row.
struct Fold {
    at: i64,
    tie: (u8, i64),
    /// The arrival's number, for an arrival's line.
    arrival: Option<i64>,
    disposition: String,
    body: Markup,
}

/// "What happened tonight": alerts (each one row, its arrivals, tasks and their outcomes
/// folded in), sessions, tool calls (each decision joined to its result), vetoes and sweeps in
/// one list, newest first unless the query says oldest, with the filters of `query` applied,
/// and a chart of decisions per hour. The caller has already limited `records`, `alerts` and
/// `tasks` to the query's window; a task's creation and finish are each shown when they fall
/// inside it. `records` are each with the host whose ledger holds them (in a fleet, every
/// host's): when they come from more than one host, each line names its host, and the host
/// filter matches that host as well as the one a record names in its context. `alerts` are
/// each with the host that received them (in a fleet, every host's), named on their lines
/// alike, and the host filter matches it too; an arrival's own record is the one its host
/// holds.
pub fn timeline_page(
    query: &TimelineQuery,
    now_ms: i64,
    records: &[FleetRecord],
    alerts: &[FleetArrival],
    tasks: &[Task],
) -> String {
    let in_window = |at: i64| at >= query.since_ms && at < query.until_ms;
    // The rows of alerts, by alert id; which task and which record belongs to which alert.
    let mut rows: BTreeMap<String, AlertRow> = BTreeMap::new();
    let mut task_alerts: HashMap<i64, String> = HashMap::new();
    for held in alerts {
        let a = &held.arrival;
        let row = rows.entry(a.alert_id.clone()).or_default();
        row.arrivals.push(held);
        if let Some(t) = a.task_id {
            task_alerts.insert(t, a.alert_id.clone());
        }
    }
    for task in tasks {
        let (alert_id, host) = task_alert(task, alerts);
        let created = in_window(task.created_at);
        let finished = task.lifecycle.finished_at.is_some_and(in_window);
        if let Some(id) = alert_id {
            task_alerts.insert(task.id, id.clone());
            let row = rows.entry(id).or_default();
            row.host = row.host.take().or(host);
            row.tasks.push((task, created, finished));
        }
    }
    // Arrivals and their records are told apart by host too: in a fleet, hosts' arrival
    // numbers and record ids overlap.
    let arrival_records: HashSet<(&str, &str)> = alerts
        .iter()
        .filter_map(|a| Some((a.host.as_str(), a.arrival.record.as_deref()?)))
        .collect();
    let on_page: HashSet<(&str, i64)> = alerts
        .iter()
        .map(|a| (a.host.as_str(), a.arrival.id))
        .collect();
    // Records are told apart by host and seq: in a fleet, hosts' sequence numbers overlap.
    let mut folded: HashSet<(&str, u64)> = HashSet::new();
    for FleetRecord {
        host: held_by,
        record: r,
    } in records.iter().filter(|r| r.record.event == event::DISPATCH)
    {
        // An arrival's own record belongs to the page its arrival is on (the arrival's line
        // says the same): when the sources are paged apart, it would otherwise make a second
        // line for the alert on this page.
        if let Some(arrival) = r.inputs.get("arrival").and_then(Value::as_i64)
            && !query.arrival_on_this_page(on_page.contains(&(held_by.as_str(), arrival)))
        {
            folded.insert((held_by, r.seq));
            continue;
        }
        let alert = r
            .context
            .alert_id
            .clone()
            .or_else(|| {
                r.inputs
                    .get("alert_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .or_else(|| task_of(r).and_then(|t| task_alerts.get(&t).cloned()));
        let Some(alert) = alert else { continue };
        folded.insert((held_by, r.seq));
        let row = rows.entry(alert).or_default();
        if row.title.is_none() {
            row.title = r
                .inputs
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        if row.host.is_none() {
            row.host = r.context.host.clone();
        }
        // An arrival's own record says what its line already says.
        if !arrival_records.contains(&(held_by.as_str(), r.id.as_str())) {
            row.records.push((held_by.as_str(), r));
        }
    }

    // When the page holds more than one host's entries, each line names its host.
    let from_hosts: BTreeSet<&str> = records
        .iter()
        .map(|r| r.host.as_str())
        .chain(alerts.iter().map(|a| a.host.as_str()))
        .collect();
    let name_hosts = from_hosts.len() > 1;
    let mut items = Vec::new();
    let mut task_ids = BTreeSet::new();
    for (alert_id, row) in &rows {
        let latest = row
            .arrivals
            .iter()
            .max_by_key(|a| ArrivalCursor::of(a))
            .map(|a| &a.arrival);
        let host = latest
            .and_then(|a| a.host.clone())
            .or_else(|| row.host.clone());
        let source = latest.map(|a| a.source.as_str()).or(row.source.as_deref());
        let mut actors = vec!["dispatcher", "nightwatch-serve"];
        actors.extend(row.arrivals.iter().map(|a| a.arrival.source.as_str()));
        // The host the alert is about, and every host that received it.
        let hosts: Vec<&str> = host
            .as_deref()
            .into_iter()
            .chain(row.arrivals.iter().map(|a| a.host.as_str()))
            .filter(|h| !h.is_empty())
            .collect();
        // An alert has no verdict, so a verdict filter hides it.
        if !query.keeps(&hosts, &actors, None) {
            continue;
        }
        if let Some(item) = alert_item(alert_id, row, host, source, query, name_hosts, now_ms) {
            task_ids.extend(row.tasks.iter().map(|(t, _, _)| t.id));
            items.push(item);
        }
    }
    let joined = Joined::new(records.iter().map(|r| &r.record));
    let mut sessions = BTreeSet::new();
    for FleetRecord {
        host: held_by,
        record: r,
    } in records
    {
        if joined.is_joined_result(r) || folded.contains(&(held_by.as_str(), r.seq)) {
            continue;
        }
        let verdict = r.verdict.as_deref();
        let actors = [r.actor.kind.as_str(), r.actor.id.as_str()];
        let hosts: Vec<&str> = r
            .context
            .host
            .iter()
            .map(String::as_str)
            .chain([held_by.as_str()])
            .filter(|h| !h.is_empty())
            .collect();
        if !query.keeps(&hosts, &actors, verdict) {
            continue;
        }
        if let Some(s) = &r.session_id {
            sessions.insert(s.as_str());
        }
        let mut item = record_item(held_by, r, joined.result_of(r), now_ms);
        if name_hosts {
            let body = item.body;
            item.body = html! { span.host { (Text(held_by)) } " " (body) };
            item.host = Some(held_by.clone());
        }
        items.push(item);
    }
    items.sort_by_key(|i| (i.at, i.tie));
    if !query.oldest_first {
        items.reverse();
    }

    let count = |kind: &str| items.iter().filter(|i| i.kind == kind).count();
    let verdicts = |v: &str| {
        items
            .iter()
            .filter(|i| i.verdict.as_deref() == Some(v))
            .count()
    };
    let summary = [
        ("alerts", count("alert"), "alerts"),
        ("tasks", task_ids.len(), "tasks"),
        ("sessions", sessions.len(), "sessions"),
        ("calls", count("call"), "tool calls"),
        ("deny", verdicts("deny"), "denied"),
        ("halt", verdicts("halt"), "halted"),
        ("ask", verdicts("ask"), "asked"),
        ("sweeps", count("sweep"), "janitor"),
    ];
    let decisions: Vec<(i64, &str)> = items
        .iter()
        .filter_map(|i| Some((i.at, i.verdict.as_deref()?)))
        .collect();
    let toggle = query.link(&PageCursor::default(), !query.oldest_first);
    let earlier = query.earlier.as_ref().map(|earlier| {
        html! {
            p #truncated .empty {
                "This window holds more than one page: its older entries are on "
                a #earlier href=(query.page_link(earlier)) { "the page of older entries" } "."
            }
        }
    });
    let mut day = None;
    let body = html! {
        h1 { "What happened tonight" }
        p.window {
            "From " (time_full(query.since_ms)) " to " (time_full(query.until_ms))
            " (" (span_text(query.since_ms, query.until_ms)) "), as of " (time_full(now_ms))
            ". Times are UTC."
        }
        (filter_form(query))
        ul #summary {
            @for (key, n, label) in summary {
                @let flagged = n > 0 && matches!(key, "deny" | "halt" | "ask");
                li data-count=(key) class=[flagged.then(|| format!("v-{key}"))] {
                    b { (n) } " " (label)
                }
            }
        }
        (decision_chart(query, &decisions))
        @if query.before != PageCursor::default() {
            p #newest .empty {
                "An earlier page of this window: "
                a href=(query.page_link(&PageCursor::default())) { "back to its newest entries" } "."
            }
        }
        h2 {
            @if query.oldest_first { "Oldest first" } @else { "Newest first" }
            " "
            a #order .order href=(toggle) {
                @if query.oldest_first { "show newest first" } @else { "show oldest first" }
            }
        }
        @if query.oldest_first { (earlier.clone().unwrap_or_default()) }
        @if items.is_empty() {
            p.empty { "Nothing happened in this window." }
        }
        ol #timeline {
            @for item in &items {
                li class={ "entry kind-" (item.kind) (verdict_classes(item.verdict.as_deref())) }
                    data-verdict=[item.verdict.as_deref().map(Text)]
                    data-host=[item.host.as_deref().map(Text)]
                    data-actor=(Text(&item.actor))
                    data-alert=[item.alert.as_ref().map(|a| Text(&a.0))]
                    data-outcome=[item.alert.as_ref().map(|a| Text(&a.1))] {
                    (time_cell(item.at, &mut day))
                    div.body { (item.body) }
                }
            }
        }
        @if !query.oldest_first { (earlier.unwrap_or_default()) }
    };
    page("What happened tonight", body)
}

fn filter_form(q: &TimelineQuery) -> Markup {
    let field = |name: &'static str, value: String, hint: &'static str, list: Option<&str>| {
        html! {
            label { (name) " " input name=(name) value=(Text(&value)) placeholder=(hint) list=[list]; }
        }
    };
    html! {
        form #filters method="get" {
            (field("since", rfc3339(q.since_ms), "12h, 2d or RFC 3339", None))
            (field("until", rfc3339(q.until_ms), "now or RFC 3339", None))
            (field("host", q.host.clone().unwrap_or_default(), "any host", None))
            (field("actor", q.actor.clone().unwrap_or_default(), "claude-code, janitor…", None))
            (field("verdict", q.verdict.clone().unwrap_or_default(), "any verdict", Some("verdicts")))
            datalist #verdicts { @for v in VERDICTS { option value=(v) {} } }
            @if q.oldest_first { input type="hidden" name="order" value="oldest"; }
            @if let Some(limit) = q.limit { input type="hidden" name="limit" value=(limit); }
            button type="submit" { "Show" } " "
            a href="?" { "last 12 hours" }
        }
    }
}

/// Decisions per hour (or per longer bucket, for a long window) by verdict, as stacked bars in
/// inline SVG with a title and a description a screen reader reads, and a legend in text.
fn decision_chart(query: &TimelineQuery, decisions: &[(i64, &str)]) -> Markup {
    if decisions.is_empty() {
        return html! { p #chart .empty { "No decisions in this window to chart." } };
    }
    let start = query.since_ms.div_euclid(HOUR_MS) * HOUR_MS;
    let hours = (query.until_ms - start + HOUR_MS - 1) / HOUR_MS;
    let per_bar = ((hours + CHART_BARS - 1) / CHART_BARS).max(1);
    let bucket_ms = per_bar * HOUR_MS;
    let bars = ((query.until_ms - start + bucket_ms - 1) / bucket_ms).max(1) as usize;
    let mut counts = vec![[0usize; 4]; bars];
    for (at, v) in decisions {
        let Some(k) = VERDICTS.iter().position(|x| x == v) else {
            continue;
        };
        let b = ((at - start).max(0) / bucket_ms) as usize;
        if let Some(bar) = counts.get_mut(b) {
            bar[k] += 1;
        }
    }
    let totals: [usize; 4] = std::array::from_fn(|k| counts.iter().map(|c| c[k]).sum());
    let most = counts
        .iter()
        .map(|c| c.iter().sum::<usize>())
        .max()
        .unwrap_or(0)
        .max(1);
    let (width, height, top, bottom, left) = (960.0_f64, 150.0_f64, 12.0, 22.0, 30.0);
    let plot = height - top - bottom;
    let bar_w = (width - left) / bars as f64;
    let label = |b: usize| -> String {
        let from = start + b as i64 * bucket_ms;
        let hm = |ms: i64| zoned(ms).map_or_else(String::new, |t| t.strftime("%H:%M").to_string());
        format!("{}–{}", hm(from), hm(from + bucket_ms))
    };
    let words = |c: &[usize; 4]| -> String {
        let parts: Vec<String> = (0..4)
            .filter(|k| c[*k] > 0)
            .map(|k| format!("{} {}", c[k], verdict_look(VERDICTS[k]).0))
            .collect();
        if parts.is_empty() {
            "no decisions".into()
        } else {
            parts.join(", ")
        }
    };
    let busiest = counts
        .iter()
        .enumerate()
        .max_by_key(|(b, c)| (c.iter().sum::<usize>(), std::cmp::Reverse(*b)))
        .map(|(b, c)| format!("busiest {} with {}", label(b), c.iter().sum::<usize>()))
        .unwrap_or_default();
    let unit = if per_bar == 1 {
        "hour".to_string()
    } else {
        format!("{per_bar} hours")
    };
    let description = format!(
        "{} decisions from {} to {} UTC: {}; {busiest}.",
        decisions.len(),
        label(0).split('–').next().unwrap_or(""),
        label(bars - 1).split('–').nth(1).unwrap_or(""),
        words(&totals)
    );
    let every = (bars / 12).max(1);
    // Each bar's segments, stacked from the axis up: (verdict index, y, height).
    let stacks: Vec<Vec<(usize, f64, f64)>> = counts
        .iter()
        .map(|c| {
            let mut y = top + plot;
            (0..4)
                .filter(|k| c[*k] > 0)
                .map(|k| {
                    let h = plot * c[k] as f64 / most as f64;
                    y -= h;
                    (k, y, h)
                })
                .collect()
        })
        .collect();
    let num = |v: f64| format!("{v:.1}");
    html! {
        figure #chart {
            svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox={ "0 0 " (width) " " (height) }
                aria-labelledby="chart-title chart-desc" preserveAspectRatio="none" {
                title #chart-title { "Decisions per " (unit) " by verdict" }
                desc #chart-desc { (description) }
                line.axis x1=(left) y1=(top + plot) x2=(width) y2=(top + plot) {}
                text.tick x=(left - 4.0) y=(top + 8.0) text-anchor="end" { (most) }
                text.tick x=(left - 4.0) y=(top + plot) text-anchor="end" { "0" }
                @for (b, (c, stack)) in counts.iter().zip(&stacks).enumerate() {
                    @let x = left + b as f64 * bar_w;
                    g.bar data-hour=(label(b)) {
                        title { (label(b)) ": " (words(c)) }
                        @for (k, y, h) in stack {
                            rect class={ "c-" (VERDICTS[*k]) } data-verdict=(VERDICTS[*k])
                                data-count=(c[*k]) x=(num(x + 1.0)) y=(num(*y))
                                width=(num((bar_w - 2.0).max(1.0))) height=(num(*h)) {}
                        }
                        @if b % every == 0 {
                            text.tick x=(num(x + 2.0)) y=(height - 6.0) {
                                (label(b).split('–').next().unwrap_or(""))
                            }
                        }
                    }
                }
            }
            figcaption {
                "Decisions per " (unit) " (UTC): "
                @for k in 0..4 {
                    span class={ "key c-" (VERDICTS[k]) } data-verdict=(VERDICTS[k]) {
                        (totals[k]) " " (verdict_look(VERDICTS[k]).0)
                    }
                    " "
                }
            }
        }
    }
}

/// The alert id and host of a task: from an arrival that names it, else from its alert JSON.
fn task_alert(task: &Task, alerts: &[FleetArrival]) -> (Option<String>, Option<String>) {
    if let Some(a) = alerts
        .iter()
        .map(|a| &a.arrival)
        .find(|a| a.task_id == Some(task.id))
    {
        return (Some(a.alert_id.clone()), a.host.clone());
    }
    match serde_json::from_str::<Alert>(&task.alert_json) {
        Ok(alert) => (Some(route::alert_id(&alert)), route::alert_host(&alert)),
        Err(_) => (None, None),
    }
}

/// The row of one alert: its headline, then every arrival, task creation and finish and
/// task outcome in time order. `None` when nothing of it falls in the window.
fn alert_item(
    alert_id: &str,
    row: &AlertRow,
    host: Option<String>,
    source: Option<&str>,
    query: &TimelineQuery,
    name_hosts: bool,
    now_ms: i64,
) -> Option<Item> {
    let mut folds: Vec<Fold> = Vec::new();
    let routed_tasks: HashSet<i64> = row
        .arrivals
        .iter()
        .map(|a| &a.arrival)
        .filter(|a| a.disposition == Some(crate::inbox::Disposition::Routed))
        .filter_map(|a| a.task_id)
        .collect();
    let mut held = row.arrivals.clone();
    held.sort_by_key(|a| ArrivalCursor::of(a));
    let arrivals: Vec<&AlertEvent> = held.iter().map(|a| &a.arrival).collect();
    for (n, (a, received_by)) in arrivals
        .iter()
        .zip(held.iter().map(|h| h.host.as_str()))
        .enumerate()
    {
        let disposition = a.disposition.map_or("unsettled", |d| d.as_str());
        folds.push(Fold {
            at: a.received_ms,
            tie: (0, a.id),
            arrival: Some(a.id),
            disposition: disposition.to_owned(),
            body: html! {
                span class={ "status st-" (class_word(&a.status)) } { (Text(&a.status)) }
                @if n > 0 && a.status == "firing" { " again" }
                " from " b { (Text(&a.source)) }
                @if name_hosts && !received_by.is_empty() { " received by " span.host { (Text(received_by)) } }
                " → " (disposition_badge(disposition))
                @if let Some(route) = &a.route { " route " code { (Text(route)) } }
                @if let Some(task) = a.task_id { " task #" (task) }
                @if let Some(why) = &a.reason { div.why { (prose(why, now_ms)) } }
            },
        });
    }
    let record_refs: Vec<&Record> = row.records.iter().map(|(_, r)| *r).collect();
    for (task, created, finished) in &row.tasks {
        if *created && !routed_tasks.contains(&task.id) {
            folds.push(Fold {
                at: task.created_at,
                tie: (1, task.id),
                arrival: None,
                disposition: "task_created".into(),
                body: html! { "task #" (task.id) " created for route " code { (Text(&task.route)) } },
            });
        }
        if *finished && let Some(f) = task.lifecycle.finished_at {
            let (word, class) = task_status_word(task, &record_refs);
            folds.push(Fold {
                at: f,
                tie: (1, task.id),
                arrival: None,
                disposition: "task_finished".into(),
                body: html! {
                    "task #" (task.id) " (route " code { (Text(&task.route)) } ") finished: " span class={ "status " (class) } { (word) }
                    " after " (task.lifecycle.attempt) " attempt(s), "
                    (span_text(task.created_at, f)) " after it was created"
                    @if let Some(err) = &task.lifecycle.last_error {
                        div.why { "last error: " (prose(err, now_ms)) }
                    }
                },
            });
        }
    }
    for (held_by, r) in &row.records {
        let d = disposition_of(r).unwrap_or("other");
        folds.push(Fold {
            at: r.timestamp_ms,
            tie: (2, r.seq as i64),
            arrival: None,
            disposition: d.to_owned(),
            body: html! {
                (disposition_badge(d))
                @if let Some(t) = task_of(r) { " task #" (t) }
                @if d == "escalated" {
                    @let told = nightwatch_ledger::Safeguards::of(r.safeguards.as_ref()).notify.unwrap_or_default();
                    @if told.is_empty() {
                        " " span.nobody { "nobody was told: no notifier is configured" }
                    } @else {
                        " told " (Text(&told.join(", ")))
                    }
                }
                @if let Some(s) = &r.session_id { " · session " (session_link(s)) }
                " " (record_link(held_by, &r.id))
                @if let Some(why) = r.reasons.first() { div.why { (prose(why, now_ms)) } }
            },
        });
    }
    folds.retain(|f| f.at >= query.since_ms && f.at < query.until_ms);
    folds.sort_by_key(|f| (f.at, f.tie));
    let first = folds.first()?;
    let (at, tie) = (first.at, (0, first.tie.1));
    let latest = arrivals.last();
    let title = latest
        .map(|a| a.title.as_str())
        .or(row.title.as_deref())
        .unwrap_or("");
    // What the row comes to: the last task outcome, else the last arrival's disposition.
    let outcome = folds
        .iter()
        .rev()
        .find(|f| is_task_outcome(&f.disposition))
        .or_else(|| {
            folds
                .iter()
                .rev()
                .find(|f| !f.disposition.starts_with("task_"))
        })
        .map_or("unsettled", |f| f.disposition.as_str())
        .to_owned();
    let status = latest.map(|a| a.status.as_str());
    let body = html! {
        span.kind { "alert" } " "
        @if let Some(status) = status {
            span class={ "status st-" (class_word(status)) } { (Text(status)) } " "
        }
        strong.title { (Text(title)) } " "
        @if let Some(source) = source { "from " b { (Text(source)) } " " }
        @if let Some(h) = &host { "on " span.host { (Text(h)) } " " }
        "· " (alert_link(alert_id)) " → " (disposition_badge(&outcome))
        ol.folds {
            @for f in &folds {
                li.fold data-disposition=(Text(&f.disposition)) data-arrival=[f.arrival] {
                    (clock(f.at))
                    " " (f.body)
                }
            }
        }
    };
    Some(Item {
        at,
        tie,
        kind: "alert",
        verdict: None,
        host,
        actor: source.unwrap_or("nightwatch-serve").to_owned(),
        alert: Some((alert_id.to_owned(), outcome)),
        body,
    })
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
        event::IDLE => "idle",
        event::WATCH => "watch",
        event::SESSION_START | event::SESSION_END | event::STOP => "session",
        event::SWEEP_KEEP | event::SWEEP_PLAN | event::QUARANTINED => "sweep",
        event::DECISION | event::RESULT | event::UNGUARDED_RESULT if janitor => "sweep",
        event::DECISION | event::RESULT | event::UNGUARDED_RESULT => "call",
        _ => "other",
    }
}

/// What the janitor judged: `container ci-runner-old` (from its inputs, else its tool's name).
fn swept_thing(r: &Record) -> String {
    let kind = r
        .inputs
        .get("kind")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| {
            r.tool
                .split_once('_')
                .map_or(r.tool.clone(), |(_, k)| k.to_owned())
        });
    let name = r
        .inputs
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .or(r.inputs.get("id").and_then(Value::as_str))
        .unwrap_or("?");
    // A kind the sweep did not take is recorded as id `*` (named `every container`).
    if name == "*" || r.inputs.get("id").and_then(Value::as_str) == Some("*") {
        format!("every {kind}")
    } else {
        format!("{kind} {name}")
    }
}

/// A janitor record's headline: what became of the thing, not the action's name.
fn sweep_headline(r: &Record, result: Option<&Record>) -> (String, &'static str) {
    let thing = swept_thing(r);
    let verb = |kind: &str| r.tool.split('_').next().unwrap_or(kind).to_owned();
    match r.event.as_str() {
        event::SWEEP_KEEP => (format!("kept {thing}"), "kept"),
        event::SWEEP_PLAN => {
            let decision = r.inputs.get("decision").and_then(Value::as_str);
            if decision == Some("remove") {
                (format!("plans to {} {thing}", verb("remove")), "planned")
            } else {
                (format!("plans to keep {thing}"), "kept")
            }
        }
        event::QUARANTINED => (format!("gave up removing {thing}"), "quarantined"),
        _ => {
            let exit = result
                .or(r.outputs.is_some().then_some(r))
                .and_then(|res| res.outputs.as_ref()?.exit_code);
            match (r.verdict.as_deref(), exit) {
                (Some("allow") | None, Some(0)) => {
                    (format!("{}d {thing}", verb("remove")), "removed")
                }
                (Some("allow") | None, Some(_)) => {
                    (format!("failed to {} {thing}", verb("remove")), "failed")
                }
                (Some("allow"), None) => (format!("{} {thing}", verb("remove")), "removing"),
                _ => (
                    format!("not allowed to {} {thing}", verb("remove")),
                    "refused",
                ),
            }
        }
    }
}

fn record_item(held_by: &str, r: &Record, result: Option<&Record>, now_ms: i64) -> Item {
    let kind = record_kind(r);
    let actor = html! {
        span.actor title=(Text(&r.actor.kind)) { (Text(&r.actor.id)) }
    };
    let summary = inputs_summary(r);
    let (shown, cut) = clip(&summary, SUMMARY_SHOWN_BYTES);
    let body = html! {
        span.kind { @if kind == "other" { (Text(&r.event)) } @else { (kind) } } " "
        @match kind {
            "dispatch" => {
                @let d = disposition_of(r).unwrap_or("other");
                (disposition_badge(d))
                @if let Some(t) = task_of(r) { " task #" (t) }
                @if let Some(route) = r.inputs.get("route").and_then(Value::as_str) {
                    " route " code { (Text(route)) }
                }
                @if let Some(title) = r.inputs.get("title").and_then(Value::as_str) {
                    ": " (Text(title))
                }
                @if let Some(s) = &r.session_id { " · session " (session_link(s)) }
            }
            "session" => {
                @let what = match r.event.as_str() {
                    event::SESSION_START => "started",
                    event::STOP => "stopped",
                    _ => "ended",
                };
                (session_link(r.session_id.as_deref().unwrap_or("?"))) " " (what) " · " (actor)
                @if let Some(t) = &r.context.triggered_by { " triggered by " code { (Text(t)) } }
                @if let Some(a) = &r.context.alert_id { " " (alert_link(a)) }
            }
            "idle" => {
                @let text = |k: &str| r.inputs.get(k).and_then(Value::as_str).unwrap_or("?").to_owned();
                code { (Text(&text("app"))) } " "
                @if text("from") == text("to") { (Text(&text("to"))) } @else {
                    (Text(&text("from"))) " → " strong { (Text(&text("to"))) }
                }
            }
            "watch" => {
                @let text = |k: &str| r.inputs.get(k).and_then(Value::as_str).unwrap_or("?").to_owned();
                code { (Text(&text("watcher"))) } " "
                span class={ "seen seen-" (text("seen")) } { (Text(&text("seen"))) } " "
                (Text(&text("subject")))
            }
            "sweep" => {
                @let (headline, class) = sweep_headline(r, result);
                span class={ "sweep-what sw-" (class) } { (Text(&headline)) }
                @if class == "kept" && let Some(why) = r.reasons.first() {
                    ": " span.kept-why { (prose(why, now_ms)) }
                }
                @if let Some(v) = &r.verdict { " " (verdict_badge(v)) }
                @if let Some(res) = result.or(r.outputs.is_some().then_some(r)) { (exit_text(res)) }
            }
            _ => {
                (actor)
                // `exec` names both the actor and its tool: say it once.
                @if r.tool != r.actor.id { " " span.tool { (Text(&r.tool)) } }
                @if !summary.is_empty() {
                    " " code.cmd { (Text(shown)) @if cut > 0 { "…" } }
                }
                @if let Some(v) = &r.verdict { " " (verdict_badge(v)) }
                @if let Some(rule) = &r.rule { " " span.rule { (Text(rule)) } }
                @if r.event == event::UNGUARDED_RESULT {
                    " " span.badge.v-other { "no decision recorded" }
                }
                @if let Some(res) = result.or(r.outputs.is_some().then_some(r)) { (exit_text(res)) }
                @if let Some(s) = &r.session_id { " · " (session_link(s)) }
            }
        }
        " " (record_link(held_by, &r.id))
        @if let Some(res) = result { " " (record_link(held_by, &res.id)) }
        @if let Some(why) = r.reasons.first() {
            @if !(kind == "sweep" && sweep_headline(r, result).1 == "kept") {
                div.why { (prose(why, now_ms)) }
            }
        }
        (vetoes(held_by, r.safeguards.as_ref(), false))
    };
    Item {
        at: r.timestamp_ms,
        tie: (2, r.seq as i64),
        kind,
        verdict: r.verdict.clone(),
        host: r.context.host.clone(),
        actor: r.actor.id.clone(),
        alert: None,
        body,
    }
}

/// The checks that found something (all of them when `all`), the approval that let a call
/// through, and a backup that failed or was taken.
fn vetoes(held_by: &str, safeguards: Option<&Value>, all: bool) -> Markup {
    use nightwatch_ledger::schema::{CheckOutcome, Readable};
    if safeguards.is_none() {
        return html! {};
    }
    let s = nightwatch_ledger::Safeguards::of(safeguards);
    let findings: Vec<_> = s
        .checks
        .as_ref()
        .and_then(Readable::read)
        .into_iter()
        .flatten()
        .filter(|f| all || f.effect.is_some())
        .collect();
    let backup_failed = s.backup.as_ref().and_then(|b| b.error.as_deref());
    let snapshot = s
        .backup
        .as_ref()
        .and_then(|b| b.snapshot.as_deref())
        .filter(|_| all);
    let notify = s.notify.as_ref().filter(|_| all);
    if findings.is_empty()
        && s.approval.is_none()
        && backup_failed.is_none()
        && snapshot.is_none()
        && notify.is_none()
    {
        return html! {};
    }
    html! {
        ul.safeguards {
            @for f in &findings {
                @let (outcome, found) = match &f.outcome {
                    CheckOutcome::Matched { detail } => ("matched", detail),
                    CheckOutcome::Clear { detail } => ("clear", detail),
                    CheckOutcome::Unknown { reason } => ("unknown", reason),
                };
                li {
                    "check " code { (Text(&f.check)) } " (" (Text(&f.kind)) ", " (outcome) "): "
                    (Text(&f.message))
                    @if !found.is_empty() { " " span.why { "(" (Text(found)) ")" } }
                    @if let Some(e) = f.effect { " → " (verdict_badge(e.as_str())) }
                }
            }
            @if let Some(approval) = &s.approval {
                li { "approved by " b { (Text(&approval.by)) } " in " (record_link(held_by, &approval.record)) }
            }
            @if let Some(error) = backup_failed {
                li { "backup failed: " (Text(error)) }
            }
            @if let Some(snapshot) = snapshot {
                li { "backed up first: snapshot " code { (Text(snapshot)) } }
            }
            @if let Some(names) = notify {
                li { "escalated to " (Text(&names.join(", "))) }
            }
        }
    }
}

// ---- a session ------------------------------------------------------------------------------

/// How a session ended, from its records: the runbook's outcome when a task ran it, else its
/// end, else nothing known.
struct SessionOutcome {
    /// `succeeded`, `ran with refusals`, `failed`, `ended`, ... for the page.
    word: String,
    class: &'static str,
    ended: Option<i64>,
    why: Option<String>,
}

fn session_outcome(records: &[&Record], refused: usize) -> SessionOutcome {
    let ended_record = records
        .iter()
        .rev()
        .find(|r| r.event == event::SESSION_END || r.event == event::STOP);
    let outcome = records
        .iter()
        .rev()
        .find(|r| r.event == event::DISPATCH && disposition_of(r).is_some_and(is_task_outcome));
    // The runbook's own result ends a runbook's session even before its outcome is recorded.
    let runbook_done = records.iter().rev().find(|r| {
        r.tool == "runbook" && matches!(r.event.as_str(), event::RESULT | event::UNGUARDED_RESULT)
    });
    // A refused step means the session did not do what it set out to, whatever it exited.
    let refusals = |word: &str| {
        if refused > 0 {
            (
                format!("ran with refusals: the gate refused {refused} step(s)"),
                "o-warn",
            )
        } else {
            (word.to_owned(), "o-ok")
        }
    };
    let (word, class) = match outcome.and_then(|r| disposition_of(r)) {
        Some("ran") => refusals("succeeded"),
        Some("ran_with_refusals") => (
            format!(
                "ran with refusals: the gate refused {} step(s)",
                refused.max(1)
            ),
            "o-warn",
        ),
        Some("awaiting_approval") => ("waiting for a person's approval".into(), "o-ask"),
        Some(d) => (disposition_word(d).to_owned(), "o-bad"),
        None if ended_record.is_some() => refusals("ended"),
        None if runbook_done.is_some() => refusals("the runbook finished"),
        None => ("no end recorded".into(), "o-open"),
    };
    let waiting = class == "o-ask";
    let ended = ended_record
        .map(|r| r.timestamp_ms)
        .or_else(|| outcome.filter(|_| !waiting).map(|r| r.timestamp_ms))
        .or_else(|| runbook_done.map(|r| r.timestamp_ms));
    SessionOutcome {
        word,
        class,
        ended,
        why: outcome.and_then(|r| r.reasons.first().cloned()),
    }
}

/// A session "read like a runbook": who ran it and why, how it ended, then every tool call as
/// a numbered step with its verdict, reasons and output. `records` are the session's, in any
/// order.
pub fn session_page(session_id: &str, held: &[FleetRecord], now_ms: i64) -> String {
    let mut held: Vec<&FleetRecord> = held.iter().collect();
    held.sort_by_key(|f| FleetCursor::of(f));
    let records: Vec<&Record> = held.iter().map(|f| &f.record).collect();
    // The hosts whose ledgers hold the session (in a fleet, any of them).
    let mut holders: Vec<&str> = held
        .iter()
        .map(|f| f.host.as_str())
        .filter(|h| !h.is_empty())
        .collect();
    holders.sort_unstable();
    holders.dedup();
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
    let refused = records
        .iter()
        .filter(|r| r.event == event::DECISION && r.tool != "runbook")
        .filter(|r| matches!(r.verdict.as_deref(), Some("deny" | "halt")))
        .count();
    let outcome = session_outcome(&records, refused);

    let joined = Joined::new(records.iter().copied());
    let mut steps = Vec::new();
    let mut others = Vec::new();
    for FleetRecord {
        host: held_by,
        record: r,
    } in held.iter().copied()
    {
        let is_result = matches!(r.event.as_str(), event::RESULT | event::UNGUARDED_RESULT);
        if r.event == event::DECISION || is_result {
            if joined.is_joined_result(r) {
                continue;
            }
            let result = if is_result {
                Some(r)
            } else {
                joined.result_of(r)
            };
            steps.push((held_by.as_str(), r, result));
        } else {
            others.push((held_by.as_str(), r));
        }
    }
    let (mut step_day, mut other_day) = (None, None);
    let body = html! {
        h1 { "Session " code { (Text(session_id)) } }
        dl #facts .facts {
            @if let Some(a) = actor {
                dt { "actor" } dd { (Text(&a.id)) " " span.muted { "(" (Text(&a.kind)) ")" } }
            }
            @if let Some(t) = first_ctx(|r| r.context.triggered_by.as_ref()) {
                dt { "triggered by" } dd { code { (Text(t)) } }
            }
            @if let Some(a) = first_ctx(|r| r.context.alert_id.as_ref()) {
                dt { "alert" } dd { (alert_link(a)) }
            }
            @if let Some(h) = first_ctx(|r| r.context.host.as_ref()) {
                dt { "host" } dd { (Text(h)) }
            }
            @if !holders.is_empty() {
                dt { "recorded on" } dd #recorded-on { (Text(&holders.join(", "))) }
            }
            @if let Some(t) = first_ctx(|r| r.context.task.as_ref()) {
                dt { "task" } dd { (Text(t)) }
            }
            dt { "outcome" }
            dd #outcome class=(outcome.class) {
                (outcome.word)
                @if let Some(why) = &outcome.why { div.why { (prose(why, now_ms)) } }
            }
            @if let Some(s) = start { dt { "started" } dd { (time_full(s)) } }
            @match (start, outcome.ended) {
                (Some(s), Some(e)) => {
                    dt { "ended" } dd #ended { (time_full(e)) }
                    dt { "duration" } dd #duration { (span_text(s, e)) }
                }
                _ => {
                    dt { "ended" }
                    dd #ended { span.muted { "no end recorded (still running, or it stopped without saying)" } }
                }
            }
        }
        h2 { "Steps (" (steps.len()) ")" }
        @if steps.is_empty() { p.empty { "No tool calls were recorded in this session." } }
        ol #steps {
            @for (n, (held_by, r, result)) in steps.iter().enumerate() {
                (step_html(n + 1, held_by, r, *result, refused, &mut step_day, now_ms))
            }
        }
        @if !others.is_empty() {
            h2 { "Session events" }
            ul #events {
                @for (held_by, r) in &others {
                    li {
                        (time_cell(r.timestamp_ms, &mut other_day)) " "
                        @match disposition_of(r) {
                            Some(d) => { (disposition_badge(d)) }
                            None => { b { (Text(&r.event)) } " " (Text(&r.tool)) }
                        }
                        " " span.actor { (Text(&r.actor.id)) }
                        @if let Some(why) = r.reasons.first() { " " span.why { (prose(why, now_ms)) } }
                        " " (record_link(held_by, &r.id))
                    }
                }
            }
        }
    };
    page(&format!("Session {session_id}"), body)
}

fn step_html(
    n: usize,
    held_by: &str,
    r: &Record,
    result: Option<&Record>,
    refused: usize,
    day: &mut Option<String>,
    now_ms: i64,
) -> Markup {
    let verdict = r.verdict.as_deref();
    let told = nightwatch_ledger::Safeguards::of(r.safeguards.as_ref())
        .notify
        .unwrap_or_default();
    let mark = match verdict {
        Some("deny") => Some("Denied: it did not run.".to_owned()),
        Some("halt") if told.is_empty() => Some(
            "Halted: it did not run, and it waits for a person; its record names no notifier, so \
             nobody was told."
                .to_owned(),
        ),
        Some("halt") => Some(format!(
            "Halted: it did not run, and it waits for a person; escalated to {}.",
            told.join(", ")
        )),
        Some("ask") => Some(format!(
            "Asked: it has not run; it waits for a person's approval (nightwatch approve {}).",
            r.id
        )),
        _ => None,
    };
    let command = command_text(&r.inputs);
    let fields = if command.is_none() {
        input_fields(&r.inputs)
    } else {
        Vec::new()
    };
    html! {
        li class={ "step" (verdict_classes(verdict)) } id={ "step-" (n) } data-verdict=[verdict.map(Text)] {
            div.step-head {
                span.n { (n) } " " (time_cell(r.timestamp_ms, day)) " " span.tool { (Text(&r.tool)) }
                @if let Some(v) = verdict { " " (verdict_badge(v)) }
                @if let Some(rule) = &r.rule { " rule " span.rule { (Text(rule)) } }
                @if r.event == event::UNGUARDED_RESULT || r.event == event::RESULT {
                    " " span.badge.v-other { "no decision recorded" }
                }
                " " (record_link(held_by, &r.id))
                @if r.actor.kind != "agent" { " " span.muted { "by " (Text(&r.actor.id)) } }
            }
            @if let Some(m) = &mark {
                p class={ "veto-mark " (verdict_look(verdict.unwrap_or_default()).1) } { (Text(m)) }
            }
            @if let Some(c) = &command {
                pre.cmd { (clipped(&format!("$ {c}"), OUTPUT_SHOWN_BYTES, held_by, &r.id)) }
            }
            @if !fields.is_empty() {
                dl.inputs {
                    @for (k, v) in &fields {
                        dt { (Text(k)) }
                        dd { @if v.contains('\n') || v.len() > 120 { pre { (clipped(v, OUTPUT_SHOWN_BYTES, held_by, &r.id)) } } @else { (Text(v)) } }
                    }
                }
            }
            @if let Some(cwd) = &r.cwd { p.muted { "in " code { (Text(cwd)) } } }
            @if !r.reasons.is_empty() {
                ul.reasons { @for why in &r.reasons { li { (prose(why, now_ms)) } } }
            }
            (vetoes(held_by, r.safeguards.as_ref(), true))
            @if let Some(res) = result {
                div.output {
                    (exit_text(res))
                    // A runbook's own exit 0 is not the session's success when the gate
                    // refused some of its steps.
                    @if r.tool == "runbook" && refused > 0
                        && res.outputs.as_ref().and_then(|o| o.exit_code) == Some(0)
                    {
                        " " span.o-warn.refused-steps { "but the gate refused " (refused) " of its steps" }
                    }
                    @if res.id != r.id { " " (record_link(held_by, &res.id)) }
                    @if !res.redacted.is_empty() {
                        " " span.muted { "redacted: " (Text(&res.redacted.join(", "))) }
                    }
                    @if let Some(out) = &res.outputs {
                        @for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                            @if !text.is_empty() {
                                div.stream { (name) }
                                pre class=(name) { (clipped(text, OUTPUT_SHOWN_BYTES, held_by, &res.id)) }
                            }
                        }
                    }
                }
            } @else if mark.is_none() {
                p.muted { "No result recorded." }
            }
        }
    }
}

// ---- an alert -------------------------------------------------------------------------------

/// One alert "from arrival to resolution": what it says, every arrival and what the
/// dispatcher did with it, each task with its history (said as the records prove it), and
/// the ledger records about it.
pub fn alert_page(
    alert_id: &str,
    arrivals: &[FleetArrival],
    tasks: &[(Task, Vec<TaskEvent>)],
    held_records: &[FleetRecord],
    now_ms: i64,
) -> String {
    let mut held: Vec<&FleetArrival> = arrivals.iter().collect();
    held.sort_by_key(|a| ArrivalCursor::of(a));
    // Each arrival with the host that received it (in a fleet, any host), when hosts are named.
    let name_hosts = held.iter().any(|a| !a.host.is_empty());
    let arrivals: Vec<&AlertEvent> = held.iter().map(|a| &a.arrival).collect();
    let latest = arrivals.last();
    let title = latest.map(|a| a.title.as_str()).unwrap_or("");
    let mut held_records: Vec<&FleetRecord> = held_records.iter().collect();
    held_records.sort_by_key(|f| FleetCursor::of(f));
    let records: Vec<&Record> = held_records.iter().map(|f| &f.record).collect();
    let labels: Vec<(&str, &String, String)> = latest
        .map(|a| {
            ["labels", "annotations"]
                .into_iter()
                .flat_map(|group| {
                    a.alert[group]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(move |(k, v)| (group, k, plain(v)))
                })
                .collect()
        })
        .unwrap_or_default();
    let (mut arrival_day, mut record_day) = (None, None);
    let body = html! {
        h1 { "Alert " code { (Text(alert_id)) } ": " (Text(title)) }
        dl.facts {
            @if let Some(a) = latest {
                dt { "source" } dd { (Text(&a.source)) }
                dt { "status" } dd { span class={ "status st-" (class_word(&a.status)) } { (Text(&a.status)) } }
                @if let Some(h) = &a.host { dt { "host" } dd { (Text(h)) } }
                @if let Some(first) = arrivals.first() {
                    dt { "first arrived" } dd { (time_full(first.received_ms)) }
                }
                dt { "last arrived" } dd { (time_full(a.received_ms)) }
                @for key in ["monitor", "message", "identity"] {
                    @if let Some(v) = a.alert[key].as_str().filter(|v| !v.is_empty()) {
                        dt { (key) } dd { (Text(v)) }
                    }
                }
                @if let Some(link) = a.alert["link"].as_str() {
                    dt { "link" }
                    dd {
                        // Only web links become links: a `javascript:` URL from a sender stays text.
                        @let lower = link.to_ascii_lowercase();
                        @if lower.starts_with("https://") || lower.starts_with("http://") {
                            a href=(Text(link)) rel="noreferrer noopener" { (Text(link)) }
                        } @else {
                            (Text(link))
                        }
                    }
                }
            }
        }
        @if !labels.is_empty() {
            h2 { "Labels and annotations" }
            table #labels {
                thead { tr { th { "kind" } th { "name" } th { "value" } } }
                tbody {
                    @for (group, k, v) in &labels {
                        tr { td { (group) } th scope="row" { (Text(k)) } td { (Text(v)) } }
                    }
                }
            }
        }
        h2 { "Arrivals (" (arrivals.len()) ")" }
        table #arrivals {
            thead { tr {
                @if name_hosts { th { "received by" } }
                @for c in ["#", "arrived", "status", "disposition", "why", "route", "task", "record"] { th { (c) } }
            } }
            tbody {
                @for (a, received_by) in arrivals.iter().zip(held.iter().map(|h| h.host.as_str())) {
                    @let disposition = a.disposition.map_or("unsettled", |d| d.as_str());
                    tr.arrival data-disposition=(Text(disposition)) {
                        @if name_hosts { td.host { (Text(received_by)) } }
                        td { (a.id) }
                        td { (time_cell(a.received_ms, &mut arrival_day)) }
                        td { span class={ "status st-" (class_word(&a.status)) } { (Text(&a.status)) } }
                        td { (disposition_badge(disposition)) }
                        td { @if let Some(why) = &a.reason { (prose(why, now_ms)) } }
                        td { @if let Some(route) = &a.route { (Text(route)) } }
                        td { @if let Some(t) = a.task_id { "#" (t) } }
                        td { @if let Some(r) = &a.record { (record_link(received_by, r)) } }
                    }
                }
            }
        }
        h2 { "Tasks (" (tasks.len()) ")" }
        div #tasks {
            @if tasks.is_empty() { p.empty { "No task was created for this alert." } }
            @for (task, events) in tasks { (task_html(task, events, &records, now_ms)) }
        }
        h2 { "Ledger records (" (records.len()) ")" }
        table #records {
            thead { tr { @for c in ["time", "record", "event", "actor", "what", "session"] { th { (c) } } } }
            tbody {
                @for FleetRecord { host: held_by, record: r } in held_records.iter().copied() {
                    tr class={ "record kind-" (record_kind(r)) (verdict_classes(r.verdict.as_deref())) } data-event=(Text(&r.event)) {
                        td { (time_cell(r.timestamp_ms, &mut record_day)) }
                        td {
                            @if name_hosts && !held_by.is_empty() { span.host { (Text(held_by)) } " " }
                            (record_link(held_by, &r.id))
                        }
                        td { (Text(&r.event)) }
                        td { (Text(&r.actor.id)) }
                        td { (record_what(r, now_ms)) }
                        td { @if let Some(s) = &r.session_id { (session_link(s)) } }
                    }
                }
            }
        }
    };
    page(&format!("Alert {alert_id}: {title}"), body)
}

/// The "what" cell of an alert page's record: its disposition or call, verdict, exit, why.
fn record_what(r: &Record, now_ms: i64) -> Markup {
    let summary = inputs_summary(r);
    let (shown, cut) = clip(&summary, SUMMARY_SHOWN_BYTES);
    html! {
        span.tool { (Text(&r.tool)) }
        @if let Some(d) = disposition_of(r) {
            " " (disposition_badge(d))
        } @else if record_kind(r) == "sweep" {
            " " (Text(&sweep_headline(r, None).0))
        } @else if !summary.is_empty() {
            " " code.cmd { (Text(shown)) @if cut > 0 { "…" } }
        }
        @if let Some(v) = &r.verdict { " " (verdict_badge(v)) }
        @if r.outputs.is_some() { (exit_text(r)) }
        @if let Some(why) = r.reasons.first() { div.why { (prose(why, now_ms)) } }
    }
}

fn task_html(task: &Task, events: &[TaskEvent], records: &[&Record], now_ms: i64) -> Markup {
    let life = &task.lifecycle;
    let (word, class) = task_status_word(task, records);
    let mut day = None;
    html! {
        section.task id={ "task-" (task.id) } data-status=(life.status.as_str()) {
            h3 {
                "Task #" (task.id) " · route " code { (Text(&task.route)) } " · "
                span class={ "status " (class) } { (word) }
            }
            p {
                "created " (time_full(task.created_at)) ", attempt " (life.attempt) ", "
                (task.repeats) " repeat(s) attached"
                @if let Some(f) = life.finished_at {
                    ", finished " (time_full(f)) " (" (span_text(task.created_at, f)) " after creation)"
                }
            }
            @if let Some(err) = &life.last_error { p.why { "last error: " (prose(err, now_ms)) } }
            table.task-events {
                thead { tr { th { "time" } th { "change" } th { "why" } } }
                tbody {
                    @for e in events {
                        tr {
                            td { (time_cell(e.at, &mut day)) }
                            td {
                                (e.from.map_or("new", |f| f.as_str())) " → "
                                // The queue notes the hand-over as a change to the same status.
                                @if e.from == Some(e.to) { b { "escalation" } } @else { b { (e.to.as_str()) } }
                            }
                            td { (prose(&task_event_text(e, records), now_ms)) }
                        }
                    }
                }
            }
        }
    }
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
    let body = html! {
        h1 { (status) " " (phrase) }
        p #error .error { (Text(message)) }
        p { a href="/" { "Back to what happened tonight" } }
    };
    page(&format!("{status} {phrase}"), body)
}

// ---- small pieces shared by the pages ------------------------------------------------------

/// Percent-encodes one URL path segment or query value (everything but unreserved
/// characters). maud escapes the result again for the attribute.
pub(crate) fn enc(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn session_link(id: &str) -> Markup {
    let (short, cut) = clip(id, 12);
    html! {
        a.session href={ "/sessions/" (enc(id)) } title=(Text(id)) { (Text(short)) @if cut > 0 { "…" } }
    }
}

fn alert_link(id: &str) -> Markup {
    html! { a.alert href={ "/alerts/" (enc(id)) } { (Text(id)) } }
}

/// A link to record `id` of `held_by`'s ledger (every host numbers its own records; a host
/// with no name links to its own).
fn record_link(held_by: &str, id: &str) -> Markup {
    html! {
        a.rid href={ "/api/records/" (enc(id)) @if !held_by.is_empty() { "?host=" (enc(held_by)) } } { (Text(id)) }
    }
}

/// ` exit 0 · 1.2 s` for a record with outputs.
fn exit_text(r: &Record) -> Markup {
    html! {
        @if let Some(out) = &r.outputs {
            " "
            @match out.exit_code {
                Some(0) => { span.exit.ok { "exit 0" } }
                Some(code) => { span.exit.fail { "exit " (code) } }
                None => { span.exit { "no exit code" } }
            }
        }
        @if let Some(d) = r.duration_ms { " " span.dur { (duration_text(d)) } }
    }
}

/// A command as one line: a string, or an argv (a runbook's `run:`) joined by spaces.
fn command_text(inputs: &Value) -> Option<String> {
    match inputs.get("command")? {
        Value::String(c) => Some(c.clone()),
        Value::Array(argv) => Some(argv.iter().map(plain).collect::<Vec<_>>().join(" ")),
        _ => None,
    }
}

/// Inputs as name and text, for people rather than parsers: no JSON.
fn input_fields(inputs: &Value) -> Vec<(String, String)> {
    match inputs {
        Value::Object(map) => map
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), plain(v)))
            .collect(),
        Value::Null => Vec::new(),
        other => vec![("input".into(), plain(other))],
    }
}

/// The command, else the path or URL, else the inputs as `name value` pairs.
fn inputs_summary(record: &Record) -> String {
    if let Some(command) = command_text(&record.inputs) {
        return command;
    }
    if let Some(target) = record.target() {
        return target.to_owned();
    }
    input_fields(&record.inputs)
        .into_iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// A value as text: strings as they are, lists joined by spaces, maps as `name value`.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join(" "),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k} {}", plain(v)))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// The first `max` bytes of `text` (cut at a character boundary) and how many bytes were cut.
pub(crate) fn clip(text: &str, max: usize) -> (&str, usize) {
    if text.len() <= max {
        return (text, 0);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], text.len() - end)
}

/// Clipped text, with a note naming the record that holds the rest.
fn clipped(text: &str, max: usize, held_by: &str, record: &str) -> Markup {
    let (shown, cut) = clip(text, max);
    html! {
        (Text(shown))
        @if cut > 0 {
            "\n" span.cut { "… " (cut) " more bytes: see " (record_link(held_by, record)) }
        }
    }
}

fn page(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta http-equiv="Content-Security-Policy" content=(CSP);
                meta name="referrer" content="no-referrer";
                title { (Text(title)) " · nightwatch" }
                style { (PreEscaped(CSS)) }
            }
            body {
                header.top { a href="/" { "nightwatch" } }
                main { (body) }
            }
        }
    }
    .into_string()
}

const CSS: &str = "
:root{color-scheme:light dark;--fg:#1d2330;--muted:#5b6475;--bg:#f5f6f8;--card:#fff;--line:#dde1e8;
--allow:#1a7f37;--ask:#9a6700;--halt:#8250df;--deny:#cf222e;--link:#0b5cad;--code:#eef1f5}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ef;--muted:#9aa3b2;--bg:#14171c;--card:#1c2027;
--line:#2d333d;--link:#6cb6ff;--code:#252b34;--allow:#3fb950;--ask:#d29922;--halt:#bc8cff;--deny:#f85149}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header.top{background:#1d2330;padding:8px 20px}header.top a{color:#fff;font-weight:700;text-decoration:none}
main{max-width:1200px;margin:0 auto;padding:12px 20px 48px}
h1{font-size:22px;margin:12px 0 4px}h2{font-size:16px;margin:22px 0 8px}h3{font-size:15px;margin:0 0 6px}
h2 .order{font-size:13px;font-weight:400;margin-left:10px}
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
#chart{margin:10px 0;background:var(--card);border:1px solid var(--line);border-radius:6px;padding:8px 12px}
#chart svg{width:100%;height:150px;display:block}
#chart .axis{stroke:var(--line)}#chart .tick{fill:var(--muted);font-size:11px}
#chart figcaption{font-size:12px;color:var(--muted)}
#chart .key{display:inline-block;padding-left:14px;position:relative;margin-right:8px}
#chart .key::before{content:'';position:absolute;left:0;top:3px;width:10px;height:10px;border-radius:2px;background:currentColor}
rect.c-allow{fill:var(--allow)}rect.c-ask{fill:var(--ask)}rect.c-halt{fill:var(--halt)}rect.c-deny{fill:var(--deny)}
.key.c-allow{color:var(--allow)}.key.c-ask{color:var(--ask)}.key.c-halt{color:var(--halt)}.key.c-deny{color:var(--deny)}
#timeline{list-style:none;padding:0;margin:0;background:var(--card);border:1px solid var(--line);border-radius:6px}
.entry{display:grid;grid-template-columns:9.5em 1fr;gap:10px;padding:6px 12px;border-bottom:1px solid var(--line);
border-left:4px solid transparent}
.entry:last-child{border-bottom:0}.entry>time{color:var(--muted);white-space:nowrap}
.entry.kind-alert{border-left-color:#0969da}
.entry.kind-session{border-left-color:#6e7781}.entry.kind-dispatch{border-left-color:#1b7c83}
.entry.kind-sweep{border-left-color:#57606a}.entry.kind-watch{border-left-color:#8250df}
.seen{font-weight:600}.seen-found,.seen-unknown{color:var(--deny)}.seen-ok{color:var(--allow)}
.is-deny{background:color-mix(in srgb,var(--deny) 9%,var(--card))}.entry.is-deny{border-left-color:var(--deny)}
.is-halt{background:color-mix(in srgb,var(--halt) 10%,var(--card))}.entry.is-halt{border-left:6px double var(--halt)}
.is-ask{background:color-mix(in srgb,var(--ask) 10%,var(--card))}.entry.is-ask{border-left:4px dashed var(--ask)}
.folds{list-style:none;margin:4px 0 0;padding:0 0 0 10px;border-left:2px solid var(--line)}
.folds li{padding:1px 0}.folds time{color:var(--muted);margin-right:4px}
.title{font-weight:700}.nobody{color:var(--deny);font-weight:600}
.kind{display:inline-block;min-width:5.5em;font-size:11px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.badge{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;font-weight:600;border:1px solid currentColor;line-height:1.5}
.v-allow{color:var(--allow)}
.badge.v-ask{color:var(--ask);border-style:dashed}
.badge.v-halt{color:#fff;background:var(--halt);border-color:var(--halt)}
.badge.v-deny{color:#fff;background:var(--deny);border-color:var(--deny)}
.v-other{color:var(--muted)}
.d-routed,.d-ran,.d-resolved{color:var(--allow)}.d-failed,.d-escalated,.d-interrupted,.d-refused{color:var(--deny)}
.d-throttled,.d-suppressed,.d-no_route,.d-awaiting_approval{color:var(--ask)}
.badge.d-ran_with_refusals{color:#fff;background:var(--ask);border-color:var(--ask)}
.sw-kept{color:var(--allow);font-weight:600}.sw-removed{font-weight:600}.sw-failed,.sw-refused,.sw-quarantined{color:var(--deny);font-weight:600}
.status{font-weight:600}.st-firing,.st-gave_up{color:var(--deny)}.st-resolved,.st-done{color:var(--allow)}.st-warn{color:var(--ask)}
dd .why{font-weight:400}.o-ok{color:var(--allow);font-weight:600}.o-warn{color:var(--ask);font-weight:700}.o-bad{color:var(--deny);font-weight:700}
.o-ask{color:var(--ask);font-weight:600}.o-open{color:var(--muted)}
.exit.ok{color:var(--allow)}.exit.fail{color:var(--deny);font-weight:600}.dur,.rid,.rule{color:var(--muted);font-size:12.5px}
.rule{font-family:ui-monospace,monospace}
.safeguards{margin:4px 0;padding-left:18px;font-size:13px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 14px;background:var(--card);
border:1px solid var(--line);border-radius:6px;padding:10px 14px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
dl.inputs{display:grid;grid-template-columns:max-content 1fr;gap:2px 10px;margin:6px 0}dl.inputs dt{color:var(--muted)}dl.inputs dd{margin:0}
#steps{list-style:none;padding:0;margin:0}
.step{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px 14px;margin:0 0 10px}
.step.is-deny{border-color:var(--deny);border-left-width:5px}
.step.is-halt{border-color:var(--halt);border-left:7px double var(--halt)}
.step.is-ask{border-color:var(--ask);border-left:5px dashed var(--ask)}
.step-head .n{display:inline-block;min-width:1.8em;height:1.8em;line-height:1.8em;text-align:center;border-radius:50%;
background:var(--fg);color:var(--bg);font-weight:700;margin-right:4px}
.veto-mark{font-weight:700;margin:6px 0}.veto-mark.v-deny{color:var(--deny)}.veto-mark.v-halt{color:var(--halt)}.veto-mark.v-ask{color:var(--ask)}
.reasons{margin:4px 0;padding-left:18px}.stream{font-size:12px;color:var(--muted);margin-top:6px}
.stderr{border-left:3px solid var(--deny)}.cut{color:var(--muted);font-style:italic}
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
    const EVIL: &str = "<script>alert(1)</script>\"onx='y' &amp\u{1b}[31m\u{202e}";
    /// How [`EVIL`] reads once escaped.
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

    /// `arrivals` as a host alone with no name received them.
    fn received(arrivals: &[AlertEvent]) -> Vec<FleetArrival> {
        arrivals
            .iter()
            .map(|arrival| FleetArrival {
                host: String::new(),
                arrival: arrival.clone(),
            })
            .collect()
    }

    /// `records` as a host alone with no name holds them.
    fn held(records: &[Record]) -> Vec<FleetRecord> {
        records
            .iter()
            .map(|record| FleetRecord {
                host: String::new(),
                record: record.clone(),
            })
            .collect()
    }

    /// The place of db1's record `seq`, written `seq` ms after T0.
    fn place(seq: u64) -> FleetCursor {
        FleetCursor {
            timestamp_ms: T0 + seq as i64,
            host: "db1".into(),
            seq,
        }
    }

    #[test]
    fn a_cut_window_links_to_the_page_before_with_its_filters() {
        let mut q = query(&[("since", "1d"), ("host", "db 1&x"), ("verdict", "deny")]).unwrap();
        assert!(!timeline_page(&q, NOW, &[], &[], &[]).contains("id=\"truncated\""));
        q.earlier = Some(PageCursor {
            records: Some(place(42)),
            arrivals: Some(ArrivalCursor::end()),
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
            href.ends_with(
                "&amp;records_before=1771039042042.42.db1&amp;arrivals_before=-9223372036854775808.0.&amp;tasks_before=7"
            ),
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

    /// When the arrivals and the records are paged apart, an arrival's own dispatch record
    /// is shown on its arrival's page only: every alert is one line on one page, however the
    /// sources were cut (5,000 arrivals in one millisecond made 5,000 lines on a 2,000-arrival
    /// page before).
    #[test]
    fn an_alert_is_one_line_on_the_page_of_its_arrival_when_sources_are_paged_apart() {
        let at = NOW - HOUR_MS;
        let arrivals: Vec<AlertEvent> = (1..=6)
            .map(|id| {
                let mut a = arrival(id, at, Some("db1"), Disposition::NoRoute);
                a.alert_id = format!("alert_{id:06}");
                a.record = Some(Record::id_for(id as u64));
                a.task_id = None;
                a
            })
            .collect();
        let records: Vec<Record> = (1..=6u64)
            .map(|seq| {
                let mut r = rec(seq, event::DISPATCH, at, ("dispatcher", "nightwatch-serve"), "alert");
                r.inputs = json!({ "disposition": "no_route", "arrival": seq, "alert_id": format!("alert_{seq:06}") });
                r.context.alert_id = Some(format!("alert_{seq:06}"));
                r
            })
            .collect();
        let alert_lines = |html: &str| html.matches("class=\"entry kind-alert").count();
        // The newest page read all six records but only arrivals 4 to 6 (cut at 4).
        let mut newest = window();
        newest.earlier = Some(PageCursor {
            records: Some(FleetCursor::end()),
            arrivals: Some(ArrivalCursor {
                received_ms: at,
                host: String::new(),
                id: 4,
            }),
            tasks: Some(0),
        });
        let html = timeline_page(
            &newest,
            NOW,
            &held(&records),
            &received(&arrivals[3..]),
            &[],
        );
        assert_eq!(alert_lines(&html), 3, "{html}");
        for id in 1..=3 {
            assert!(
                !html.contains(&format!("alert_{id:06}")),
                "alert {id} belongs to the page before"
            );
        }
        // The page before holds arrivals 1 to 3 and no record (all six were read already).
        let mut before = window();
        before.before = PageCursor {
            records: Some(FleetCursor::end()),
            arrivals: Some(ArrivalCursor {
                received_ms: at,
                host: String::new(),
                id: 4,
            }),
            tasks: Some(0),
        };
        let html = timeline_page(&before, NOW, &[], &received(&arrivals[..3]), &[]);
        assert_eq!(alert_lines(&html), 3, "{html}");
        // A record read on a later page than its arrival is left to the arrival's page too.
        let html = timeline_page(
            &before,
            NOW,
            &held(&records[4..]),
            &received(&arrivals[..3]),
            &[],
        );
        assert_eq!(alert_lines(&html), 3, "{html}");
    }

    /// In a fleet the timeline holds every host's records: each line names the host that
    /// recorded it, two hosts' records with the same seq are both shown, and the host filter
    /// matches the host whose ledger holds a record as well as the host its context names.
    #[test]
    fn fleet_records_name_their_host_and_the_host_filter_matches_it() {
        let at = NOW - HOUR_MS;
        let on = |host: &str, record: Record| FleetRecord {
            host: host.into(),
            record,
        };
        let records = [
            on(
                "web-1",
                decision(1, at, "ls /srv/web", "allow", Some("web-1")),
            ),
            on("db-1", decision(1, at + 1, "df -h /var/db", "allow", None)),
            on(
                "db-1",
                decision(2, at + 2, "rm -rf /tmp/web-1", "deny", Some("web-1")),
            ),
        ];
        let shown = |q: &TimelineQuery| {
            let html = timeline_page(q, NOW, &records, &[], &[]);
            ["ls /srv/web", "df -h /var/db", "rm -rf /tmp/web-1"].map(|line| html.contains(line))
        };
        let html = timeline_page(&window(), NOW, &records, &[], &[]);
        assert_eq!(shown(&window()), [true, true, true], "{html}");
        assert_eq!(
            html.matches("<span class=\"host\">db-1</span>").count(),
            2,
            "{html}"
        );
        assert_eq!(html.matches("data-host=\"db-1\"").count(), 2, "{html}");
        let host = |name| query(&[("since", "1d"), ("host", name)]).unwrap();
        assert_eq!(shown(&host("db-1")), [false, true, true]);
        assert_eq!(shown(&host("web-1")), [true, false, true]);
        assert_eq!(shown(&host("db-10")), [false, false, false]);
        // One host's records (a host alone) name no host on each line, as before.
        let alone = timeline_page(&window(), NOW, &records[1..], &[], &[]);
        assert!(!alone.contains("<span class=\"host\">"), "{alone}");
    }

    /// An arrival names its dispatch record by id (`r1`), and in a fleet another host has a
    /// record `r1` too: only the arrival's own host's record is the arrival's, and the other
    /// host's alert keeps its line.
    #[test]
    fn an_arrivals_record_is_its_own_hosts_not_another_hosts_with_the_same_id() {
        let at = NOW - HOUR_MS;
        let mut a = arrival(1, at, Some("web-1"), Disposition::NoRoute);
        a.alert_id = "alert_here".into();
        a.record = Some("r1".into());
        a.task_id = None;
        let dispatch = |host: &str, alert: &str| {
            let mut r = rec(
                1,
                event::DISPATCH,
                at,
                ("dispatcher", "nightwatch-serve"),
                "alert",
            );
            r.inputs = json!({ "disposition": "no_route", "arrival": 1, "alert_id": alert });
            r.context.alert_id = Some(alert.into());
            FleetRecord {
                host: host.into(),
                record: r,
            }
        };
        let records = [
            dispatch("web-1", "alert_here"),
            dispatch("db-1", "alert_there"),
        ];
        let a = FleetArrival {
            host: "web-1".into(),
            arrival: a,
        };
        let html = timeline_page(&window(), NOW, &records, &[a], &[]);
        let alerts = html.matches("class=\"entry kind-alert").count();
        assert_eq!(alerts, 2, "{html}");
        assert!(html.contains("data-alert=\"alert_there\""), "{html}");
    }

    /// In a fleet the timeline holds every host's arrivals: each arrival's line names the host
    /// that received it, two hosts' arrivals with the same number are both shown, and the
    /// host filter matches the receiving host as well as the host the alert is about.
    #[test]
    fn fleet_arrivals_name_the_host_that_received_them_and_the_host_filter_matches_it() {
        let at = NOW - HOUR_MS;
        let on = |host: &str, alert_id: &str, about: &str| {
            let mut a = arrival(1, at, Some(about), Disposition::NoRoute);
            a.alert_id = alert_id.into();
            a.task_id = None;
            FleetArrival {
                host: host.into(),
                arrival: a,
            }
        };
        let arrivals = [
            on("web-1", "alert_disk", "db-7"),
            on("db-1", "alert_disk", "db-7"),
            on("db-1", "alert_load", "mail-3"),
        ];
        let shown = |q: &TimelineQuery| {
            let html = timeline_page(q, NOW, &[], &arrivals, &[]);
            ["alert_disk", "alert_load"].map(|id| html.contains(&format!("data-alert=\"{id}\"")))
        };
        let html = timeline_page(&window(), NOW, &[], &arrivals, &[]);
        assert_eq!(
            html.matches("class=\"entry kind-alert").count(),
            2,
            "{html}"
        );
        assert_eq!(html.matches("data-arrival=\"1\"").count(), 3, "{html}");
        for host in ["web-1", "db-1"] {
            assert!(
                html.contains(&format!("received by <span class=\"host\">{host}</span>")),
                "{host}: {html}"
            );
        }
        let host = |name| query(&[("since", "1d"), ("host", name)]).unwrap();
        assert_eq!(shown(&host("web-1")), [true, false]);
        assert_eq!(shown(&host("db-1")), [true, true]);
        assert_eq!(
            shown(&host("mail-3")),
            [false, true],
            "the host it is about"
        );
        assert_eq!(shown(&host("db-10")), [false, false]);
        // One host's arrivals (a host alone) name no receiving host on each line, as before.
        let alone = timeline_page(&window(), NOW, &[], &arrivals[2..], &[]);
        assert!(!alone.contains("received by"), "{alone}");
    }

    #[test]
    fn a_cursor_that_is_not_an_id_is_refused_with_why() {
        for bad in ["-1", "soon", "99999999999999999999", "1.5", "4"] {
            for key in ["records_before", "arrivals_before"] {
                let err = query(&[(key, bad)]).unwrap_err();
                assert!(err.starts_with(key), "{bad}: {err}");
            }
        }
        // An arrival's place across hosts: time received, number, host.
        assert_eq!(
            query(&[("arrivals_before", "1771039042000.4.db-1")])
                .unwrap()
                .before
                .arrivals,
            Some(ArrivalCursor {
                received_ms: 1_771_039_042_000,
                host: "db-1".into(),
                id: 4,
            })
        );
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
        assert!(html.contains("onx='y'"), "{what}: the text is missing");
        // Every `onx=` follows an escaped quote: none closed an attribute.
        assert_eq!(
            html.matches("onx=").count(),
            html.matches("&quot;onx='y'").count(),
            "{what}: an unescaped quote in\n{html}"
        );
        assert!(
            !html.contains('\u{1b}') && !html.contains('\u{202e}'),
            "{what}: a control character or a bidirectional override passed through"
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
            ("dispatch", |r, a, _| {
                // Not the arrival's own record, which its line already says.
                a.record = None;
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
            let html = timeline_page(&window(), T0 + MIN, &held(&[r]), &received(&[a]), &[t]);
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
            assert_inert(
                &session_page("sess-1", &held(std::slice::from_ref(&r)), NOW),
                what,
            );
            if *on_alert_page {
                assert_inert(&alert_page("alert_1", &[], &[], &held(&[r]), NOW), what);
            }
        }
        assert_inert(&session_page(EVIL, &[], NOW), "session id");

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
                &alert_page("alert_88c2d1", &received(&[a]), &[(t, vec![e])], &[], NOW),
                what,
            );
        }
        assert_inert(&alert_page(EVIL, &[], &[], &[], NOW), "alert id");

        let mut a = arrival(1, T0, None, Disposition::Routed);
        a.alert["link"] = json!("javascript:alert(1)");
        let html = alert_page("alert_88c2d1", &received(&[a]), &[], &[], NOW);
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
            // An alert's row holds its task: either actor finds both.
            (&[("actor", "uptime-kuma")], &["alert-db1", "route-disk"]),
            (&[("actor", "dispatcher")], &["alert-db1", "route-disk"]),
            (&[("verdict", "deny")], &["cmd-web2-deny"]),
            (&[("verdict", "allow")], &["cmd-db1-allow", "ctr-old"]),
            (&[("verdict", "allow"), ("host", "web2")], &[]),
        ];
        for (params, expected) in cases {
            let mut pairs = vec![("since", "1d")];
            pairs.extend_from_slice(params);
            let q = query(&pairs).unwrap();
            let html = timeline_page(
                &q,
                T0 + 10 * MIN,
                &held(&records),
                &received(&alerts),
                &tasks,
            );
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
        let html = timeline_page(&window(), T0 + MIN, &held(&records), &[], &[]);
        assert_eq!(
            timeline_of(&html)
                .matches("<li class=\"entry kind-call")
                .count(),
            2
        );
        assert!(html.contains("exit 0"), "{html}");
        assert!(html.contains("class=\"entry kind-call veto is-deny\" data-verdict=\"deny\" data-host=\"db1\" data-actor=\"claude-code\""), "{html}");
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
    fn an_idle_apps_state_flips_are_on_the_timeline() {
        let mut slept = rec(
            1,
            event::IDLE,
            T0,
            ("idle-controller", "idle-controller"),
            "idle",
        );
        slept.inputs = serde_json::json!({"app": "shop", "from": "suspending", "to": "asleep"});
        slept.reasons = vec!["paused after 15m idle".into()];
        let mut kept = rec(
            2,
            event::IDLE,
            T0 + 1_000,
            ("idle-controller", "idle-controller"),
            "idle",
        );
        kept.inputs = serde_json::json!({"app": "<cart>", "from": "awake", "to": "awake"});
        kept.reasons = vec!["kept awake by exec".into()];
        let records = [slept, kept];
        let html = timeline_page(&window(), T0 + MIN, &held(&records), &[], &[]);
        let list = timeline_of(&html);
        assert_eq!(
            list.matches("<li class=\"entry kind-idle").count(),
            2,
            "{list}"
        );
        assert!(
            list.contains("<code>shop</code> suspending → <strong>asleep</strong>"),
            "{list}"
        );
        assert!(list.contains("paused after 15m idle"), "{list}");
        assert!(list.contains("<code>&lt;cart&gt;</code> awake"), "{list}");
    }

    #[test]
    fn a_watchers_findings_are_on_the_timeline() {
        let mut found = rec(1, event::WATCH, T0, ("watcher", "watcher"), "fresh");
        found.inputs = serde_json::json!({
            "watcher": "backups", "kind": "fresh", "subject": "/var/backups/<db>/*.dump",
            "seen": "found", "runs": 1,
        });
        found.reasons = vec!["the newest backup is 3d old".into()];
        let records = [found];
        let html = timeline_page(&window(), T0 + MIN, &held(&records), &[], &[]);
        let list = timeline_of(&html);
        assert_eq!(
            list.matches("<li class=\"entry kind-watch").count(),
            1,
            "{list}"
        );
        assert!(
            list.contains("<code>backups</code> <span class=\"seen seen-found\">found</span> /var/backups/&lt;db&gt;/*.dump"),
            "{list}"
        );
        assert!(list.contains("the newest backup is 3d old"), "{list}");
    }

    #[test]
    fn times_show_the_date_only_when_it_changes() {
        let midnight = parse_rfc3339("2026-02-15T00:00:00Z").unwrap();
        let records = [
            decision(1, midnight - MIN, "a", "allow", None),
            decision(2, midnight - MIN / 2, "b", "allow", None),
            decision(3, midnight + MIN, "c", "allow", None),
        ];
        let html = timeline_page(&window(), midnight + 2 * MIN, &held(&records), &[], &[]);
        let list = timeline_of(&html);
        assert_eq!(
            list.matches("<span class=\"date\">Sat 14 Feb</span>")
                .count(),
            1
        );
        assert_eq!(
            list.matches("<span class=\"date\">Sun 15 Feb</span>")
                .count(),
            1
        );
        assert!(
            list.contains("title=\"2026-02-14T23:59:00Z\">23:59:00</time>"),
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
        let html = session_page("sess-1", &held(&records), NOW);
        assert_eq!(html.matches("<li class=\"step").count(), 3, "{html}");
        let at = |s: &str| {
            html.find(s)
                .unwrap_or_else(|| panic!("{s} missing:\n{html}"))
        };
        assert!(at("$ df -h") < at("$ du -sh /var/log"));
        assert!(at("$ du -sh /var/log") < at("$ rm -rf /var/lib/docker"));
        assert!(
            html.contains("<li class=\"step veto is-deny\" id=\"step-3\" data-verdict=\"deny\">"),
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
            html.contains("<dt>duration</dt><dd id=\"duration\">3 min 00 s</dd>"),
            "{html}"
        );
    }

    #[test]
    fn long_output_is_cut_and_points_at_the_record() {
        let mut r = result(7, T0, "c", 0, &"é".repeat(OUTPUT_SHOWN_BYTES));
        r.event = event::UNGUARDED_RESULT.into();
        let html = session_page("s", &held(&[r]), NOW);
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
            &received(&arrivals),
            &[(task(3, T0, "disk-full"), events.clone())],
            &held(&[call.clone(), dispatch.clone()]),
            NOW,
        );
        assert!(!html.contains("received by"), "a host with no name: {html}");
        // In a fleet, each arrival with the host that received it, in the fleet's order.
        let on = |host: &str, a: &AlertEvent| FleetArrival {
            host: host.into(),
            arrival: a.clone(),
        };
        let fleet = [
            on("web-1", &arrivals[2]),
            on("db-1", &arrivals[1]),
            on("db-1", &arrivals[0]),
        ];
        let shown = alert_page("alert_88c2d1", &fleet, &[], &[], NOW);
        assert!(shown.contains("<th>received by</th>"), "{shown}");
        let cells: Vec<&str> = shown
            .split("<td class=\"host\">")
            .skip(1)
            .map(|rest| rest.split('<').next().unwrap())
            .collect();
        assert_eq!(cells, ["web-1", "db-1", "db-1"], "{shown}");
        let html = alert_page(
            "alert_88c2d1",
            &received(&arrivals),
            &[(task(3, T0, "disk-full"), events)],
            &held(&[call, dispatch]),
            NOW,
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
        assert!(html.contains("pending → <b>running</b>"), "{html}");
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
            session_page("s", &[], NOW),
            alert_page("a", &[], &[], &[], NOW),
            error_page(404, "no such alert"),
        ] {
            assert!(html.starts_with("<!DOCTYPE html><html lang=\"en\">"));
            assert!(html.contains("<title>") && html.contains("<style>"));
            assert!(!html.contains("<script"));
        }
        assert!(error_page(404, "gone").contains("<h1>404 Not found</h1>"));
    }

    #[test]
    fn machine_times_in_reasons_read_for_people() {
        // On NOW's day a clock time; another day with its name; another year with the year.
        let cases: &[(&str, &str)] = &[
            (
                "no new task until 1771040000000 (5m from now)",
                "no new task until 03:33:20 UTC (5m from now)",
            ),
            (
                "ended done at 2026-02-14T03:17:22Z; no new task until 2026-02-14T03:47:22.500Z.",
                "ended done at 03:17:22 UTC; no new task until 03:47:22 UTC.",
            ),
            (
                "retry in 90000 ms at 2026-02-13T23:00:00Z",
                "retry in 1 min 30 s at Fri 13 Feb 23:00:00 UTC",
            ),
            (
                "until 2027-01-02T08:00:00+00:00",
                "until 2 Jan 2027 08:00 UTC",
            ),
            // Numbers that are not times stay as they are.
            (
                "exit 1771040000 after 250 ms; r1771040000000x",
                "exit 1771040000 after 250 ms; r1771040000000x",
            ),
            (
                "pid 4242, 12 files, 2026-99-99T00:00:00Z",
                "pid 4242, 12 files, 2026-99-99T00:00:00Z",
            ),
            ("é 1771040000000", "é 03:33:20 UTC"),
        ];
        for (text, expected) in cases {
            assert_eq!(humane(text, NOW), *expected, "{text}");
        }
    }

    fn kept(seq: u64, at: i64, name: &str, why: &str) -> Record {
        let mut r = rec(
            seq,
            event::SWEEP_KEEP,
            at,
            ("janitor", "janitor"),
            "remove_container",
        );
        r.inputs = json!({ "kind": "container", "id": "c1", "name": name });
        r.reasons = vec![why.into()];
        r
    }

    fn dispatch(seq: u64, at: i64, disposition: &str, task: i64, why: &str) -> Record {
        let mut r = rec(
            seq,
            event::DISPATCH,
            at,
            ("dispatcher", "nightwatch-serve"),
            "runbook",
        );
        r.inputs = json!({ "disposition": disposition, "alert_id": "alert_88c2d1", "task": task });
        r.context.alert_id = Some("alert_88c2d1".into());
        r.session_id = Some("sess_88c2d1-t3".into());
        r.reasons = vec![why.into()];
        r
    }

    #[test]
    fn ask_halt_and_deny_read_and_look_different() {
        let records = [
            decision(1, T0, "cmd-ask", "ask", None),
            decision(2, T0 + MIN, "cmd-halt", "halt", None),
            decision(3, T0 + 2 * MIN, "cmd-deny", "deny", None),
        ];
        let html = timeline_page(&window(), NOW, &held(&records), &[], &[]);
        let entry = |cmd: &str| {
            timeline_of(&html)
                .split("<li ")
                .find(|e| e.contains(cmd))
                .unwrap_or_else(|| panic!("{cmd} missing"))
                .to_owned()
        };
        let looks = [
            ("cmd-ask", "asked is-ask", "badge v-ask", ">asked<"),
            ("cmd-halt", "veto is-halt", "badge v-halt", ">halted<"),
            ("cmd-deny", "veto is-deny", "badge v-deny", ">denied<"),
        ];
        for (cmd, class, badge, word) in looks {
            let e = entry(cmd);
            assert!(
                e.contains(class) && e.contains(badge) && e.contains(word),
                "{cmd}: {e}"
            );
            for (other, other_class, other_badge, _) in looks {
                if other != cmd {
                    assert!(
                        !e.contains(other_class) && !e.contains(other_badge),
                        "{cmd} looks like {other}: {e}"
                    );
                }
            }
        }
        let session = session_page("sess-1", &held(&records), NOW);
        assert!(
            session.contains(
                "Asked: it has not run; it waits for a person's approval (nightwatch approve r1)"
            ),
            "{session}"
        );
        assert!(session.contains("Halted: it did not run"), "{session}");
        assert!(
            session.contains("nobody was told"),
            "a halt without notifiers says so: {session}"
        );
        assert!(session.contains("Denied: it did not run."), "{session}");
    }

    #[test]
    fn an_alert_is_one_row_with_its_dispositions_folded_in() {
        let mut repeat = arrival(2, T0 + MIN, Some("db1"), Disposition::Deduplicated);
        repeat.record = Some("r9".into());
        let arrivals = [arrival(1, T0, Some("db1"), Disposition::Routed), repeat];
        let mut t = task(3, T0, "disk-full");
        t.alert_json = "{}".into();
        let mut routed = dispatch(1, T0, "routed", 3, "route disk-full matches");
        routed.tool = "alert".into();
        let records = [
            routed,
            dispatch(
                2,
                T0 + 4 * MIN,
                "ran_with_refusals",
                3,
                "the gate refused 1 of its steps",
            ),
        ];
        let html = timeline_page(&window(), NOW, &held(&records), &received(&arrivals), &[t]);
        let list = timeline_of(&html);
        assert_eq!(list.matches("class=\"entry ").count(), 1, "{list}");
        assert!(
            list.contains("data-alert=\"alert_88c2d1\" data-outcome=\"ran_with_refusals\""),
            "{list}"
        );
        let folds: Vec<&str> = list
            .split("<li class=\"fold\" data-disposition=\"")
            .skip(1)
            .map(|f| f.split('"').next().unwrap())
            .collect();
        // The routed record is the first arrival's own (r1): said once.
        assert_eq!(
            folds,
            [
                "routed",
                "deduplicated",
                "ran_with_refusals",
                "task_finished"
            ]
        );
        assert!(
            html.contains("<li data-count=\"alerts\"><b>1</b>"),
            "{html}"
        );
        assert!(html.contains("<li data-count=\"tasks\"><b>1</b>"), "{html}");
        assert!(
            list.contains("done, with refused steps"),
            "a refused step is not a plain done: {list}"
        );
    }

    #[test]
    fn kept_janitor_items_are_headlined_as_kept() {
        let records = [
            kept(1, T0, "pg-replica", "keep label nightwatch.keep=true"),
            {
                let mut every = kept(2, T0 + 1, "every container", "no Docker Engine here");
                every.inputs["id"] = json!("*");
                every
            },
        ];
        let html =
            timeline_of(&timeline_page(&window(), NOW, &held(&records), &[], &[])).to_owned();
        assert!(html.contains("<span class=\"sweep-what sw-kept\">kept container pg-replica</span>: <span class=\"kept-why\">keep label nightwatch.keep=true</span>"), "{html}");
        assert!(
            html.contains(
                ">kept every container</span>: <span class=\"kept-why\">no Docker Engine here"
            ),
            "{html}"
        );
        assert!(
            !html.contains("remove_container"),
            "headlined by the action's name: {html}"
        );
    }

    #[test]
    fn newest_first_by_default_and_oldest_on_request_with_links_that_keep_the_order() {
        let records = [
            decision(1, T0, "first-call", "allow", None),
            decision(2, T0 + MIN, "second-call", "allow", None),
        ];
        let newest = timeline_page(&window(), NOW, &held(&records), &[], &[]);
        let oldest_q = query(&[("since", "1d"), ("order", "oldest"), ("limit", "2")]).unwrap();
        let oldest = timeline_page(&oldest_q, NOW, &held(&records), &[], &[]);
        let pos = |html: &str, s: &str| timeline_of(html).find(s).unwrap();
        assert!(pos(&newest, "second-call") < pos(&newest, "first-call"));
        assert!(pos(&oldest, "first-call") < pos(&oldest, "second-call"));
        assert!(newest.contains("<h2>Newest first "), "{newest}");
        let toggle = |html: &str| {
            html.split("id=\"order\"")
                .nth(1)
                .and_then(|r| r.split("href=\"").nth(1))
                .and_then(|r| r.split('"').next())
                .unwrap()
                .replace("&amp;", "&")
        };
        assert!(toggle(&newest).contains("&order=oldest"), "{newest}");
        assert!(!toggle(&oldest).contains("order="), "{oldest}");
        assert!(toggle(&oldest).contains("&limit=2"));
        // Paging keeps the order and the page size; the form keeps them too.
        let mut cut = oldest_q.clone();
        cut.earlier = Some(PageCursor {
            records: Some(place(1)),
            arrivals: Some(ArrivalCursor::end()),
            tasks: Some(0),
        });
        let html = timeline_page(&cut, NOW, &held(&records), &[], &[]);
        let earlier = html
            .split("id=\"earlier\" href=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert!(
            earlier
                .contains("&amp;order=oldest&amp;limit=2&amp;records_before=1771039042001.1.db1"),
            "{earlier}"
        );
        assert!(
            html.contains("<input type=\"hidden\" name=\"order\" value=\"oldest\">"),
            "{html}"
        );
        // Oldest first, the older page is linked above the list; newest first, below it.
        assert!(html.find("id=\"earlier\"").unwrap() < html.find("<ol id=\"timeline\"").unwrap());
        let mut cut_newest = window();
        cut_newest.earlier = cut.earlier.clone();
        let html = timeline_page(&cut_newest, NOW, &held(&records), &[], &[]);
        assert!(html.find("id=\"earlier\"").unwrap() > html.find("<ol id=\"timeline\"").unwrap());
        assert!(
            query(&[("order", "sideways")])
                .unwrap_err()
                .contains("order")
        );
        assert!(query(&[("limit", "0")]).unwrap_err().contains("limit"));
        assert_eq!(query(&[("limit", "7")]).unwrap().page_size(5000), 7);
        assert_eq!(query(&[("limit", "70000")]).unwrap().page_size(5000), 5000);
    }

    #[test]
    fn a_session_says_how_it_ended() {
        let mut runbook = rec(
            1,
            event::DECISION,
            T0,
            ("dispatcher", "nightwatch-serve"),
            "runbook",
        );
        runbook.session_id = Some("sess_88c2d1-t3".into());
        runbook.call_id = Some("rb".into());
        runbook.verdict = Some("allow".into());
        runbook.inputs = json!({ "command": ["/srv/runbooks/disk.sh", "--fast"], "route": "disk" });
        let mut refused = decision(2, T0 + MIN, "rm -rf /var/lib", "deny", None);
        refused.session_id = runbook.session_id.clone();
        let mut done = result(3, T0 + 2 * MIN, "rb", 0, "");
        done.tool = "runbook".into();
        done.actor = runbook.actor.clone();
        done.session_id = runbook.session_id.clone();
        let outcome = |html: &str| {
            html.split("<dd id=\"outcome\" class=\"")
                .nth(1)
                .unwrap()
                .split("</dd>")
                .next()
                .unwrap()
                .to_owned()
        };
        let cases: &[(&[Record], &str, &str, bool)] = &[
            // The runbook exited 0 after a refusal: no success, and it ended.
            (
                &[
                    runbook.clone(),
                    refused.clone(),
                    done.clone(),
                    dispatch(
                        4,
                        T0 + 2 * MIN + 5,
                        "ran_with_refusals",
                        3,
                        "exited 0, but the gate refused 1 of its steps",
                    ),
                ],
                "o-warn",
                "ran with refusals",
                true,
            ),
            // An older record that says `ran` is not believed over the refused step.
            (
                &[
                    runbook.clone(),
                    refused.clone(),
                    done.clone(),
                    dispatch(4, T0 + 2 * MIN + 5, "ran", 3, "ran"),
                ],
                "o-warn",
                "ran with refusals",
                true,
            ),
            (
                &[
                    runbook.clone(),
                    done.clone(),
                    dispatch(4, T0 + 2 * MIN + 5, "ran", 3, "ran"),
                ],
                "o-ok",
                "succeeded",
                true,
            ),
            // Finished without an outcome record yet: the runbook's result is its end.
            (
                &[runbook.clone(), done.clone()],
                "o-ok",
                "the runbook finished",
                true,
            ),
            (&[runbook.clone()], "o-open", "no end recorded", false),
        ];
        for (records, class, word, ended) in cases {
            let html = session_page("sess_88c2d1-t3", &held(records), NOW);
            let o = outcome(&html);
            assert!(o.starts_with(class) && o.contains(word), "{word}: {o}");
            assert!(!o.contains("succeeded") || *word == "succeeded", "{o}");
            assert_eq!(html.contains("still running"), !ended, "{html}");
            assert_eq!(html.contains("<dd id=\"duration\">2 min"), *ended, "{html}");
            // The runbook step's own exit 0 says the refusal beside it, as the outcome does.
            assert_eq!(
                html.contains("but the gate refused 1 of its steps"),
                *class == "o-warn",
                "{html}"
            );
        }
        let html = session_page("s", &held(&[runbook]), NOW);
        assert!(
            html.contains("$ /srv/runbooks/disk.sh --fast"),
            "an argv is a command line: {html}"
        );
    }

    #[test]
    fn a_task_that_gave_up_says_who_was_told_as_its_records_prove() {
        let mut t = task(3, T0, "disk-full");
        t.lifecycle.status = Status::GaveUp;
        let handed = TaskEvent {
            seq: 9,
            task_id: 3,
            at: T0 + 5 * MIN,
            from: Some(Status::GaveUp),
            to: Status::GaveUp,
            why: "escalation handed to a person".into(),
        };
        let mut told = dispatch(5, T0 + 5 * MIN, "escalated", 3, "gave up");
        let nobody = told.clone();
        told.safeguards = Some(json!({ "notify": ["ntfy-oncall"] }));
        let cases: &[(&[Record], &str)] = &[
            (
                std::slice::from_ref(&nobody),
                "no notifier is configured, so nobody was told",
            ),
            (std::slice::from_ref(&told), "escalated to ntfy-oncall"),
            (&[], "no record here says who was told"),
        ];
        for (records, says) in cases {
            let html = alert_page(
                "alert_88c2d1",
                &[],
                &[(t.clone(), vec![handed.clone()])],
                &held(records),
                NOW,
            );
            let events = html.split("class=\"task-events\"").nth(1).unwrap();
            assert!(events.contains(says), "{says}: {events}");
            assert!(!html.contains("handed to a person"), "{html}");
        }
        let timeline = timeline_page(&window(), NOW, &held(&[nobody]), &[], &[]);
        assert!(
            timeline.contains("nobody was told: no notifier is configured"),
            "{timeline}"
        );
    }

    #[test]
    fn the_chart_counts_decisions_per_hour_by_verdict() {
        let q = query(&[
            ("since", "2026-02-14T01:00:00Z"),
            ("until", "2026-02-14T05:00:00Z"),
        ])
        .unwrap();
        let at = |t: &str| parse_rfc3339(t).unwrap();
        let records = [
            decision(1, at("2026-02-14T02:05:00Z"), "a", "allow", None),
            decision(2, at("2026-02-14T02:59:59Z"), "b", "deny", None),
            decision(3, at("2026-02-14T03:00:00Z"), "c", "ask", None),
            decision(4, at("2026-02-14T03:30:00Z"), "d", "allow", None),
            decision(5, at("2026-02-14T04:10:00Z"), "e", "halt", None),
        ];
        let html = timeline_page(&q, NOW, &held(&records), &[], &[]);
        let chart = html
            .split("<figure id=\"chart\">")
            .nth(1)
            .unwrap()
            .split("</figure>")
            .next()
            .unwrap();
        assert_eq!(chart.matches("<g class=\"bar\"").count(), 4, "{chart}");
        for (hour, says) in [
            ("01:00–02:00", "no decisions"),
            ("02:00–03:00", "1 allowed, 1 denied"),
            ("03:00–04:00", "1 allowed, 1 asked"),
            ("04:00–05:00", "1 halted"),
        ] {
            assert!(
                chart.contains(&format!(
                    "data-hour=\"{hour}\"><title>{hour}: {says}</title>"
                )),
                "{hour}\n{chart}"
            );
        }
        assert!(chart.contains("<title id=\"chart-title\">Decisions per hour by verdict</title>"));
        assert!(
            chart.contains(
                "5 decisions from 01:00 to 05:00 UTC: 2 allowed, 1 asked, 1 halted, 1 denied"
            ),
            "{chart}"
        );
        assert_eq!(chart.matches("<rect class=\"c-allow\"").count(), 2);
        // A verdict filter charts what it keeps.
        let q = query(&[
            ("since", "2026-02-14T01:00:00Z"),
            ("until", "2026-02-14T05:00:00Z"),
            ("verdict", "deny"),
        ])
        .unwrap();
        let html = timeline_page(&q, NOW, &held(&records), &[], &[]);
        assert!(html.contains("1 decisions from"), "{html}");
        let empty = timeline_page(&window(), NOW, &[], &[], &[]);
        assert!(empty.contains("No decisions in this window to chart."));
    }

    #[test]
    fn rows_show_no_json_and_no_epoch_milliseconds() {
        let mut write = rec(1, event::DECISION, T0, ("agent", "claude-code"), "Write");
        write.inputs = json!({ "content": "x", "mode": { "append": true }, "lines": [1, 2] });
        write.verdict = Some("allow".into());
        let mut a = arrival(1, T0, None, Disposition::Suppressed);
        a.reason = Some("cooldown: no new task until 1771040000000 (5m from now)".into());
        let html = timeline_page(
            &window(),
            NOW,
            &held(&[write.clone()]),
            &received(&[a.clone()]),
            &[],
        );
        let list = timeline_of(&html);
        assert!(
            list.contains("content x · lines 1 2 · mode append true"),
            "{list}"
        );
        assert!(!list.contains("{&quot;") && !list.contains("{\""), "{list}");
        assert!(list.contains("until 03:33:20 UTC"), "{list}");
        assert!(!list.contains("1771040000000"), "{list}");
        let page = alert_page("alert_88c2d1", &received(&[a]), &[], &held(&[write]), NOW);
        assert!(
            !page.contains("1771040000000") && !page.contains("{&quot;"),
            "{page}"
        );
    }

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(enc("a b/c?d#e%"), "a%20b%2Fc%3Fd%23e%25");
        assert_eq!(enc("sess-1_x.y~z"), "sess-1_x.y~z");
        assert_eq!(enc("é"), "%C3%A9");
    }
}
