//! The message: what happened, and how a person can act on it.

use serde::{Deserialize, Serialize};

/// Longest a single field may be in a rendered message; past this a phone screen or a Slack
/// preview is no longer readable, and the full text is one `inspect` away.
const FIELD_LIMIT: usize = 600;

/// Longest title; ntfy shows it on one line of a notification.
const TITLE_LIMIT: usize = 120;

/// One decision that people need to hear about now.
///
/// Rendered as text for ntfy and Slack; sent as this JSON to webhooks and commands, so its field
/// names are a wire format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Escalation {
    /// The verdict: `halt`, `ask`, ...
    pub verdict: String,
    /// The ledger record this is about, e.g. `r1842`.
    pub record_id: String,
    /// The actor, e.g. `agent claude-code (session abc)`.
    pub who: String,
    /// Tool and summary, e.g. `exec: systemctl restart app`.
    pub what: String,
    /// Rule, reason and check findings.
    pub why: String,
    /// Host and working directory.
    #[serde(rename = "where")]
    pub where_: String,
    /// When it happened, RFC 3339.
    pub when: String,
    /// The command that approves it, for asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<String>,
    /// The command that shows the full record.
    pub inspect: String,
}

impl Escalation {
    /// One line for a notification title: the verdict and what was stopped.
    pub fn title(&self) -> String {
        let title = format!("nightwatch {}: {}", self.verdict, one_line(&self.what));
        shorten(&title, TITLE_LIMIT)
    }

    /// Plain text, one field a line, for channels that show text as it is (ntfy).
    pub fn plain_text(&self) -> String {
        let mut text = String::new();
        for (label, value) in self.fields() {
            text.push_str(label);
            text.push_str(": ");
            text.push_str(&shorten(value, FIELD_LIMIT));
            text.push('\n');
        }
        text.pop();
        text
    }

    /// Slack `mrkdwn`: a bold headline, then the fields; user text is escaped so an action
    /// containing `<!channel>` cannot ping a whole channel.
    pub fn slack_text(&self) -> String {
        let mut text = format!(
            "*nightwatch {}* ({})",
            slack_escape(&one_line(&self.verdict)),
            slack_escape(&one_line(&self.record_id))
        );
        for (label, value) in self.fields() {
            text.push_str("\n*");
            text.push_str(label);
            text.push_str(":* ");
            text.push_str(&slack_escape(&shorten(value, FIELD_LIMIT)));
        }
        text
    }

    /// The fields a person reads, in the order they read them.
    fn fields(&self) -> Vec<(&'static str, &str)> {
        let mut fields = vec![
            ("what", self.what.as_str()),
            ("who", self.who.as_str()),
            ("why", self.why.as_str()),
            ("where", self.where_.as_str()),
            ("when", self.when.as_str()),
        ];
        if let Some(approve) = &self.approve {
            fields.push(("approve", approve.as_str()));
        }
        fields.push(("inspect", self.inspect.as_str()));
        fields
    }
}

/// Newlines and other control characters folded to spaces, for places that hold one line.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// At most `limit` characters, cut at a character boundary and marked with an ellipsis.
pub(crate) fn shorten(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(limit.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Slack's three control characters in `mrkdwn`.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Escalation {
        Escalation {
            verdict: "halt".into(),
            record_id: "r1842".into(),
            who: "agent claude-code (session abc)".into(),
            what: "exec: systemctl restart app".into(),
            why: "rule no-restarts: restarts need a human".into(),
            where_: "web-1:/srv/app".into(),
            when: "2026-02-14T03:17:00Z".into(),
            approve: None,
            inspect: "nightwatch show r1842".into(),
        }
    }

    #[test]
    fn title_names_verdict_and_action_on_one_line() {
        let mut escalation = sample();
        escalation.what = "exec: a\nb".into();
        assert_eq!(escalation.title(), "nightwatch halt: exec: a b");
    }

    #[test]
    fn slack_text_cannot_ping_a_channel() {
        let mut escalation = sample();
        escalation.what = "exec: echo <!channel> & more".into();
        let text = escalation.slack_text();
        assert!(text.contains("echo &lt;!channel&gt; &amp; more"), "{text}");
        assert!(text.starts_with("*nightwatch halt* (r1842)"), "{text}");
    }

    #[test]
    fn long_fields_are_shortened_at_a_char_boundary() {
        let long = "é".repeat(FIELD_LIMIT * 2);
        let short = shorten(&long, FIELD_LIMIT);
        assert_eq!(short.chars().count(), FIELD_LIMIT);
        assert!(short.ends_with('…'));
    }

    #[test]
    fn approve_line_only_for_asks() {
        let mut escalation = sample();
        assert!(!escalation.plain_text().contains("approve:"));
        escalation.approve = Some("nightwatch approve r1842".into());
        assert!(
            escalation
                .plain_text()
                .contains("approve: nightwatch approve r1842")
        );
    }
}
