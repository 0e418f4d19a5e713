//! The entries the ledger cases append: seed 004's night, decisions and their results.

use nightwatch_ledger::{Entry, Outputs, RecordActor, RecordContext, event};
use serde_json::json;

pub const T0: i64 = 1_771_039_042_000; // 2026-02-14T03:17:22Z, seed 004's night

pub fn agent() -> RecordActor {
    RecordActor {
        kind: "agent".into(),
        id: "claude-code".into(),
    }
}

/// A decision to run `line` in session `session`, `n` seconds after T0.
pub fn decision(n: i64, session: &str, line: &str, verdict: &str) -> Entry {
    Entry {
        session_id: Some(session.into()),
        inputs: json!({ "command": line }),
        context: RecordContext {
            triggered_by: Some("alert".into()),
            alert_id: Some("disk-full-web-1".into()),
            host: Some("web-1".into()),
            task: None,
        },
        verdict: Some(verdict.into()),
        rule: Some("read-only".into()),
        reasons: vec![format!("{line} only reads")],
        call_id: Some(format!("toolu_{n}")),
        ..Entry::new(event::DECISION, T0 + n * 1000, agent(), "exec")
    }
}

pub fn result(n: i64, session: &str, stdout: &str) -> Entry {
    Entry {
        session_id: Some(session.into()),
        outputs: Some(Outputs {
            exit_code: Some(0),
            stdout: stdout.into(),
            stderr: String::new(),
        }),
        duration_ms: Some(12),
        call_id: Some(format!("toolu_{n}")),
        ..Entry::new(event::RESULT, T0 + n * 1000 + 500, agent(), "exec")
    }
}

/// Text hostile input can carry: a NUL (which PostgreSQL's `text` refuses), the escape a store
/// may write for it (U+FFFF) alone and as it would appear escaped, and another control.
pub const HOSTILE: &str = "a\0b\u{FFFF}0c\u{FFFF}\u{FFFF}d\u{1}\u{FFFF}";
