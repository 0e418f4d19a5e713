//! Reading the ledger: `log`, `show`, `export`, `verify`.

use crate::cli::{ExportArgs, LogArgs, ShowArgs};
use crate::clock::Clock;
use crate::commands::open_ledger;
use crate::timespec;
use anyhow::{Context as _, bail};
use nightwatch_ledger::{Filter, Record, event};
use nightwatch_store::{LedgerReader, verify as verify_chain};
use std::fmt::Write as _;
use std::io::Write;

pub fn log(args: LogArgs) -> anyhow::Result<u8> {
    let clock = Clock::from_environment()?;
    let at = |text: &Option<String>, flag: &str| -> anyhow::Result<Option<i64>> {
        text.as_deref()
            .map(|t| {
                timespec::parse(t, clock.now(), clock.zone())
                    .map_err(|e| anyhow::anyhow!("{flag}: {e}"))
            })
            .transpose()
    };
    let filter = Filter {
        since_ms: at(&args.since, "--since")?,
        until_ms: at(&args.until, "--until")?,
        session: args.session.clone(),
        actor: args.actor.clone(),
        verdict: args.verdict.clone(),
        tool: args.tool.clone(),
        alert: args.alert.clone(),
        event: None,
        after_seq: None,
        before_seq: None,
        limit: args.limit,
    };
    let ledger = open_ledger()?;
    let records = ledger.query(&filter)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        for record in &records {
            writeln!(out, "{}", serde_json::to_string(record)?)?;
        }
        return Ok(0);
    }
    if records.is_empty() {
        writeln!(out, "no records match")?;
        return Ok(0);
    }
    let mut session: Option<&str> = None;
    for record in &records {
        let this_session = record.session_id.as_deref();
        if this_session != session || session.is_none() && record.seq == records[0].seq {
            writeln!(out, "{}", session_heading(record))?;
            session = this_session;
        }
        write!(out, "{}", runbook_line(record, &clock))?;
    }
    Ok(0)
}

/// `session sess_2a9f3b on prod-worker-01, triggered by uptime_kuma_alert (alert alert_88c2d1)`
fn session_heading(record: &Record) -> String {
    let mut heading = match &record.session_id {
        Some(session) => format!("\nsession {session}"),
        None => "\n(no session)".to_owned(),
    };
    if let Some(host) = &record.context.host {
        let _ = write!(heading, " on {host}");
    }
    if let Some(trigger) = &record.context.triggered_by {
        let _ = write!(heading, ", triggered by {trigger}");
    }
    if let Some(alert) = &record.context.alert_id {
        let _ = write!(heading, " (alert {alert})");
    }
    heading
}

/// One step as an operator reads it the next morning: when, what was proposed and the verdict
/// with its reason; what ran and how it ended.
fn runbook_line(record: &Record, clock: &Clock) -> String {
    let time = jiff::Timestamp::from_millisecond(record.timestamp_ms)
        .map(|t| {
            t.to_zoned(clock.zone().clone())
                .strftime("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|_| record.timestamp_text());
    let what = record.what();
    let mut line = String::new();
    match record.event.as_str() {
        event::DECISION => {
            let verdict = record.verdict.as_deref().unwrap_or("?");
            let _ = writeln!(line, "{time}  {:>5}  {verdict:<5} {what}", record.id);
            let rule = record.rule.as_deref().unwrap_or("no rule: the default");
            let reason = record.reasons.first().map(String::as_str).unwrap_or("");
            if verdict != "allow" {
                let _ = writeln!(line, "{:28}why: {reason} [{rule}]", "");
            }
            safeguard_lines(record, &mut line);
        }
        event::RESULT | event::UNGUARDED_RESULT => {
            let outputs = record.outputs.clone().unwrap_or_default();
            let ended = match outputs.exit_code {
                Some(0) => "ok".to_owned(),
                Some(code) => format!("exit {code}"),
                None => "ended".to_owned(),
            };
            let took = record
                .duration_ms
                .map(|d| format!(" in {d} ms"))
                .unwrap_or_default();
            let shown = first_line(if outputs.stdout.trim().is_empty() {
                &outputs.stderr
            } else {
                &outputs.stdout
            });
            let marker = if record.event == event::UNGUARDED_RESULT {
                "UNGUARDED "
            } else {
                ""
            };
            let _ = writeln!(
                line,
                "{time}  {:>5}  {marker}ran   {what}: {ended}{took}",
                record.id
            );
            if !shown.is_empty() {
                let _ = writeln!(line, "{:28}{shown}", "");
            }
        }
        other => {
            let said = record
                .reasons
                .first()
                .map(|r| format!(": {}", first_line(r)))
                .unwrap_or_default();
            let _ = writeln!(
                line,
                "{time}  {:>5}  {other}{said} ({} {})",
                record.id, record.actor.kind, record.actor.id
            );
        }
    }
    line
}

/// What guarded a decision: each check and what it found, the approval, the backup.
fn safeguard_lines(record: &Record, line: &mut String) {
    use nightwatch_ledger::schema::{CheckOutcome, Readable};
    let safeguards = nightwatch_ledger::Safeguards::of(record.safeguards.as_ref());
    let findings = safeguards.checks.as_ref().and_then(Readable::read);
    for finding in findings.into_iter().flatten() {
        let (found, detail) = match &finding.outcome {
            CheckOutcome::Matched { detail } => ("FOUND", detail.clone()),
            CheckOutcome::Clear { detail } => ("clear", detail.clone()),
            CheckOutcome::Unknown { reason } => ("UNKNOWN", format!("could not tell: {reason}")),
        };
        let _ = writeln!(
            line,
            "{:28}checked {}: {found}: {}",
            "",
            finding.check,
            first_line(&detail)
        );
    }
    if let Some(approval) = &safeguards.approval {
        let _ = writeln!(
            line,
            "{:28}approved by {} ({})",
            "", approval.by, approval.record
        );
    }
    if let Some(backup) = &safeguards.backup {
        let paths = backup.paths.as_ref().map_or(0, Vec::len);
        if let Some(snapshot) = &backup.snapshot {
            let _ = writeln!(
                line,
                "{:28}backed up {paths} path(s) first (snapshot {})",
                "",
                &snapshot[..snapshot.len().min(12)]
            );
        }
        if let Some(error) = &backup.error {
            let _ = writeln!(line, "{:28}backup FAILED: {}", "", first_line(error));
        }
    }
    if let Some(notify) = &safeguards.notify {
        let _ = writeln!(line, "{:28}notified: {}", "", notify.join(", "));
    }
}

fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() > 100 {
        format!("{}...", line.chars().take(97).collect::<String>())
    } else {
        line.to_owned()
    }
}

pub fn show(args: ShowArgs) -> anyhow::Result<u8> {
    let ledger = open_ledger()?;
    let Some(record) = ledger.get(&args.id)? else {
        bail!(
            "no record {} in the ledger (ids look like r42; `nightwatch log` lists them)",
            args.id
        );
    };
    // A decision and its result are one story: show the other half too.
    let partner = match (&record.call_id, record.event.as_str()) {
        (Some(call), event::DECISION) => ledger
            .query(&Filter::default())?
            .into_iter()
            .find(|r| r.call_id.as_deref() == Some(call) && r.event != event::DECISION),
        (Some(call), _) => ledger.decision_for_call(call)?,
        _ => None,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&record)?);
        return Ok(0);
    }
    let clock = Clock::from_environment()?;
    print!("{}", runbook_line(&record, &clock));
    println!("{}", serde_json::to_string_pretty(&record)?);
    if let Some(partner) = partner {
        println!(
            "\njoined by call id {}:",
            partner.call_id.as_deref().unwrap_or("")
        );
        print!("{}", runbook_line(&partner, &clock));
    }
    Ok(0)
}

pub fn export(args: ExportArgs) -> anyhow::Result<u8> {
    let crate::cli::ExportFormat::Jsonl = args.format;
    let ledger = open_ledger()?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut failure = None;
    ledger
        .scan(&mut |record| {
            let line = serde_json::to_string(record)
                .map_err(|e| nightwatch_store::StoreError::Visit(e.to_string()))?;
            if let Err(e) = writeln!(out, "{line}") {
                failure = Some(e);
                return Err(nightwatch_store::StoreError::Visit(
                    "stdout closed".to_owned(),
                ));
            }
            Ok(())
        })
        .or_else(|e| if failure.is_some() { Ok(()) } else { Err(e) })?;
    out.flush().context("writing the export")?;
    Ok(0)
}

pub fn verify() -> anyhow::Result<u8> {
    let ledger = open_ledger()?;
    let report = verify_chain(&ledger)?;
    if let Some(bad) = &report.first_bad {
        println!(
            "TAMPERED: {} records read; the first bad record is {} (seq {}): {}",
            report.records, bad.id, bad.seq, bad.problem
        );
        return Ok(1);
    }
    if let Some(problem) = &report.checkpoint_problem {
        println!("TAMPERED: the head checkpoint cannot be trusted: {problem}");
        return Ok(1);
    }
    let head = report
        .head_checkpoint
        .as_ref()
        .map(|(seq, hash)| {
            format!(
                ", head checkpoint at seq {seq} ({}...)",
                &hash[..hash.len().min(12)]
            )
        })
        .unwrap_or_default();
    // Removals an interrupted apply decided and never finished: not tampering, but a story
    // with no end yet, which the next sweep finishes.
    let clock = Clock::from_environment()?;
    let unfinished = nightwatch_host::sweep::unfinished_removals(ledger.as_ref(), clock.now_ms())?;
    if !unfinished.is_empty() {
        println!(
            "note: {} janitor removal(s) decided and never finished (an apply was \
             interrupted); the next `sweep plan` or `sweep apply` re-inspects each and records \
             what became of it:",
            unfinished.len()
        );
        for u in unfinished.iter().take(20) {
            println!("  {} ({} {} {})", u.record, u.kind.as_str(), u.name, u.id);
        }
    }
    // The first word is the verdict, and the exit status says the same: 0 intact, 2 unguarded.
    if report.unguarded.is_empty() {
        println!(
            "intact: {} records, hash chain unbroken{head}",
            report.records
        );
        return Ok(0);
    }
    println!(
        "UNGUARDED: {} records, hash chain unbroken{head}, but {} result(s) ran with no \
         recorded decision (the hook was bypassed or missing):",
        report.records,
        report.unguarded.len()
    );
    for (seq, id) in report.unguarded.iter().take(20) {
        println!("  {id} (seq {seq})");
    }
    if report.unguarded.len() > 20 {
        println!("  ... and {} more", report.unguarded.len() - 20);
    }
    Ok(2)
}
