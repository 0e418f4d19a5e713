//! `nightwatch why APP` for an app under idle control: why it is awake, or why it slept, read
//! from the idle controller's records (its `idle` flips, its `suspend_app` and `wake_app`
//! decisions and their results). What the controller sees live (every request since the last
//! flip) is at the daemon's `/api/idle/APP`.

use nightwatch_ledger::{Record, event};
use serde_json::Value;

/// The controller's records about `app`, oldest first.
pub fn about<'a>(app: &str, records: &'a [Record]) -> Vec<&'a Record> {
    records
        .iter()
        .filter(|r| r.inputs.get("app").and_then(Value::as_str) == Some(app))
        .filter(|r| r.event == event::IDLE || r.tool == "suspend_app" || r.tool == "wake_app")
        .collect()
}

/// The answer, as lines: the state and why, then what held it or let it sleep, then the
/// latest `last` records.
pub fn explain(app: &str, records: &[&Record], last: usize) -> Vec<String> {
    let mut out = Vec::new();
    let flips: Vec<&&Record> = records.iter().filter(|r| r.event == event::IDLE).collect();
    let Some(now) = flips
        .iter()
        .rev()
        .find(|r| r.inputs["from"] != r.inputs["to"])
        .or(flips.last())
    else {
        out.push(format!("{app}: no state recorded yet"));
        return out;
    };
    let phase = now.inputs["to"].as_str().unwrap_or("?");
    out.push(format!(
        "{app} is {phase} since {} ({}): {}",
        now.timestamp_text(),
        now.id,
        now.reasons.first().map(String::as_str).unwrap_or("")
    ));
    let since = now.seq;
    let suspends: Vec<&&Record> = records
        .iter()
        .filter(|r| r.tool == "suspend_app" && r.event == event::DECISION)
        .collect();
    match phase {
        "asleep" => {
            // The allowed suspend before the flip carries what the controller saw.
            if let Some(decided) = suspends
                .iter()
                .rev()
                .find(|r| r.seq < since && r.verdict.as_deref() == Some("allow"))
            {
                out.push(format!(
                    "why it slept: nobody used it for {}",
                    idle_for(decided)
                ));
                out.extend(person_line(&decided.inputs["last_person"]));
                out.extend(robots_line(&decided.inputs["seen"]));
                out.extend(signals_line(&decided.inputs["signals"]));
            }
        }
        "awake" => match now.inputs.get("person").filter(|p| p.is_object()) {
            Some(person) => {
                out.push("why it is awake: a person's request woke it".into());
                out.extend(person_line(person));
            }
            None => out.push(format!(
                "why it is awake: {}",
                now.reasons.first().map(String::as_str).unwrap_or("?")
            )),
        },
        _ => {}
    }
    let refusal = |r: &&&Record| r.inputs.get("refused").is_some();
    if let Some(hold) = flips
        .iter()
        .rev()
        .filter(|r| !refusal(r))
        .find(|r| r.seq >= since && r.inputs["from"] == r.inputs["to"])
    {
        out.push(format!(
            "held: {} ({}, {})",
            hold.reasons.first().map(String::as_str).unwrap_or("?"),
            hold.timestamp_text(),
            hold.id
        ));
    }
    // A robot's request refused while it slept: the first of each, with why.
    for refused in flips.iter().filter(|r| r.seq >= since && refusal(r)) {
        out.push(format!(
            "refused ({}, {}): {}",
            refused.timestamp_text(),
            refused.id,
            refused.reasons.first().map(String::as_str).unwrap_or("?")
        ));
    }
    for veto in suspends
        .iter()
        .filter(|r| r.seq >= since && r.verdict.as_deref() != Some("allow"))
    {
        out.push(format!(
            "suspend refused ({}, {}): {} by {}: {}",
            veto.timestamp_text(),
            veto.id,
            veto.verdict.as_deref().unwrap_or("?"),
            veto.rule.as_deref().unwrap_or("policy"),
            veto.reasons.join("; ")
        ));
    }
    out.push(String::new());
    out.push(format!("latest {} record(s):", last.min(records.len())));
    for r in records.iter().rev().take(last).rev() {
        let what = match (r.event.as_str(), r.tool.as_str()) {
            (event::IDLE, _) => format!(
                "{} -> {}",
                r.inputs["from"].as_str().unwrap_or("?"),
                r.inputs["to"].as_str().unwrap_or("?")
            ),
            (event::DECISION, tool) => {
                format!("{tool} {}", r.verdict.as_deref().unwrap_or("?"))
            }
            (event::RESULT, tool) => match r.outputs.as_ref().and_then(|o| o.exit_code) {
                Some(0) => format!("{tool} done"),
                _ => format!("{tool} FAILED"),
            },
            (other, _) => other.to_owned(),
        };
        out.push(format!("  {}  {:>7}  {what}", r.timestamp_text(), r.id));
        for reason in &r.reasons {
            out.push(format!("  {:32}{reason}", ""));
        }
    }
    out
}

fn idle_for(decided: &Record) -> String {
    decided.inputs["idle_for_s"]
        .as_u64()
        .map(|s| nightwatch_time::format_duration(std::time::Duration::from_secs(s)))
        .unwrap_or_else(|| "its idle_after".into())
}

fn person_line(person: &Value) -> Option<String> {
    let path = person.get("path")?.as_str()?;
    let at = person
        .get("at_ms")
        .and_then(Value::as_i64)
        .map(nightwatch_time::rfc3339)
        .unwrap_or_default();
    Some(format!(
        "the last person: {} asked {path} at {at} ({})",
        person["client"].as_str().unwrap_or("?"),
        person["user_agent"].as_str().unwrap_or("no user agent")
    ))
}

fn robots_line(seen: &Value) -> Option<String> {
    let by_name = seen.get("robots_by_name")?.as_object()?;
    if by_name.is_empty() {
        return Some("robots seen: none".into());
    }
    let listed: Vec<String> = by_name
        .iter()
        .map(|(name, n)| format!("{name} {}", n.as_u64().unwrap_or(0)))
        .collect();
    Some(format!(
        "robots seen (not activity, they did not keep it awake): {}",
        listed.join(", ")
    ))
}

fn signals_line(signals: &Value) -> Option<String> {
    let on: Vec<String> = signals
        .as_array()?
        .iter()
        .filter(|s| s["count"].as_u64().unwrap_or(0) > 0)
        .map(|s| {
            let activity = if s["activity"] == false {
                " (not activity)"
            } else {
                ""
            };
            format!(
                "{} {}{activity}",
                s["name"].as_str().unwrap_or("?"),
                s["count"]
            )
        })
        .collect();
    (!on.is_empty()).then(|| format!("signals on: {}", on.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(
        seq: u64,
        event: &str,
        tool: &str,
        verdict: Option<&str>,
        inputs: Value,
        why: &str,
    ) -> Record {
        Record {
            id: format!("r{seq}"),
            seq,
            event: event.into(),
            timestamp_ms: 1_764_700_000_000 + seq as i64 * 1000,
            session_id: None,
            actor: nightwatch_ledger::RecordActor {
                kind: "idle-controller".into(),
                id: "idle-controller".into(),
            },
            tool: tool.into(),
            inputs,
            outputs: None,
            context: Default::default(),
            duration_ms: None,
            verdict: verdict.map(str::to_owned),
            rule: Some("idle-controller".into()),
            reasons: vec![why.into()],
            call_id: None,
            redacted: vec![],
            cwd: None,
            safeguards: None,
            prev_hash: String::new(),
            hash: String::new(),
        }
    }

    #[test]
    fn an_app_that_slept_says_who_was_last_and_which_robots_did_not_count() {
        let records = vec![
            record(
                1,
                event::IDLE,
                "idle",
                None,
                json!({"app": "shop", "from": "unknown", "to": "awake"}),
                "the controller started: found running",
            ),
            record(
                2,
                event::DECISION,
                "suspend_app",
                Some("halt"),
                json!({"app": "shop"}),
                "a backup is running",
            ),
            record(
                3,
                event::DECISION,
                "suspend_app",
                Some("allow"),
                json!({
                    "app": "shop", "idle_for_s": 900,
                    "last_person": {"at_ms": 1_764_700_000_000i64, "client": "192.0.2.7", "user_agent": "Firefox", "path": "/cart"},
                    "seen": {"persons": 0, "robots": {"monitor": 180}, "robots_by_name": {"Uptime Kuma": 180}},
                    "signals": [{"name": "replication", "count": 1, "activity": false}],
                }),
                "nobody used it",
            ),
            record(
                4,
                event::IDLE,
                "idle",
                None,
                json!({"app": "shop", "from": "suspending", "to": "asleep"}),
                "paused after 15m idle",
            ),
            record(
                5,
                event::IDLE,
                "idle",
                None,
                json!({"app": "cart", "from": "awake", "to": "asleep"}),
                "not this app",
            ),
            record(
                6,
                event::IDLE,
                "idle",
                None,
                json!({"app": "shop", "from": "asleep", "to": "asleep",
                "refused": {"method": "POST", "path": "/orders/sync", "robot": "polling"}}),
                "shop is asleep; a robot's POST /orders/sync (polling: asks /orders/sync every 5s) does not wake it",
            ),
        ];
        let about = about("shop", &records);
        assert_eq!(about.len(), 5);
        let text = explain("shop", &about, 10).join("\n");
        assert!(text.starts_with("shop is asleep since"), "{text}");
        assert!(text.contains("paused after 15m idle"), "{text}");
        assert!(text.contains("nobody used it for 15m"), "{text}");
        assert!(
            text.contains("the last person: 192.0.2.7 asked /cart"),
            "{text}"
        );
        assert!(text.contains("Uptime Kuma 180"), "{text}");
        assert!(text.contains("replication 1 (not activity)"), "{text}");
        assert!(
            !text.contains("suspend refused"),
            "an earlier veto is history, not why: {text}"
        );
        assert!(text.contains("suspend_app halt"), "{text}");
        assert!(
            text.contains("refused (") && text.contains("POST /orders/sync (polling"),
            "{text}"
        );
        assert!(!text.contains("held:"), "a refusal holds nothing: {text}");
    }

    #[test]
    fn an_awake_app_says_who_woke_it_and_what_holds_it_and_the_vetoes() {
        let records = vec![
            record(
                1,
                event::IDLE,
                "idle",
                None,
                json!({"app": "shop", "from": "asleep", "to": "awake",
                "person": {"at_ms": 1, "client": "192.0.2.9", "user_agent": "curl/8", "path": "/"}}),
                "awake for a person's request",
            ),
            record(
                2,
                event::IDLE,
                "idle",
                None,
                json!({"app": "shop", "from": "awake", "to": "awake"}),
                "kept awake by exec",
            ),
            record(
                3,
                event::DECISION,
                "suspend_app",
                Some("halt"),
                json!({"app": "shop"}),
                "a backup is running",
            ),
        ];
        let about = about("shop", &records);
        let text = explain("shop", &about, 2).join("\n");
        assert!(text.starts_with("shop is awake since"), "{text}");
        assert!(text.contains("a person's request woke it"), "{text}");
        assert!(text.contains("192.0.2.9 asked /"), "{text}");
        assert!(text.contains("held: kept awake by exec"), "{text}");
        assert!(text.contains("suspend refused"), "{text}");
        assert!(text.contains("a backup is running"), "{text}");
        assert!(text.contains("latest 2 record(s)"), "{text}");
    }
}
