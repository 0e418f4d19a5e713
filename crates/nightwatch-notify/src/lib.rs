//! Telling people when nightwatch halts an action or needs a human to decide.
//!
//! The gate writes every decision to the ledger; some of them (a halt, an ask) also need someone to
//! hear about it now, on a phone or in a team channel. This crate is that edge: the policy's
//! `notifiers:` section is read into [`NotifierSpec`]s (validated while it is read, so a bad URL or
//! a zero retry count is a policy error with a line and column, not a surprise at 3 a.m.; the
//! types live in nightwatch-spec so policy can read them without an HTTP client), an
//! [`Escalation`] is rendered for each channel (ntfy, Slack, a generic JSON webhook, or a local
//! command), and [`deliver`] sends it with retries and exponential backoff.
//!
//! Delivery never panics and never fails silently: it returns a [`Delivery`] holding every
//! [`Attempt`] with its outcome and reason, which the caller writes into the ledger next to the
//! record it is about. Secrets are named by environment variable in the policy and looked up
//! through an injected function, and the backoff sleep is injected too, so tests neither touch the
//! process environment nor wait.
//!
//! ```yaml
//! notifiers:
//!   oncall-phone:
//!     ntfy: { url: "https://ntfy.sh/ops-alerts", token_env: NTFY_TOKEN, priority: 4, tags: [warning] }
//!     retry: { attempts: 5, initial: 1s, max: 30s }
//!     timeout: 5s
//!   team-channel:
//!     slack: { webhook_url_env: SLACK_WEBHOOK }
//!   incident-bot:
//!     webhook: { url: "http://127.0.0.1:9000/escalations", headers: { X-Source: nightwatch } }
//!   pager-script:
//!     command: { argv: ["/usr/local/bin/page-oncall", "--team", "ops"] }
//! ```

mod command;
mod deliver;
mod escalation;
mod failure;
mod http;

use nightwatch_spec::notify as spec;

pub use deliver::{Attempt, AttemptOutcome, Delivery, deliver, deliver_all};
pub use escalation::Escalation;
pub use spec::{
    Channel, CommandChannel, Endpoint, EnvName, HeaderName, HttpUrl, NotifierSpec, Notifiers,
    NtfyChannel, Retry, Secret, SlackChannel, SpecError, WebhookChannel,
};
