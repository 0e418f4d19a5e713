//! Turning monitoring webhooks into alerts that nightwatch can act on.
//!
//! A later `nightwatch serve` daemon receives HTTP requests from monitoring tools and turns each
//! alert into an agent task. This crate is the pure part of that edge: request bytes, the
//! `Content-Type` header and the query string go in, [`Alert`] values come out. It does no I/O,
//! reads no clock and never panics, whatever the bytes are, so the daemon can hand it anything it
//! receives and reply `400` with the [`IntakeError`]'s message when it fails.
//!
//! Three senders are understood:
//!
//! - [`parse_alertmanager`]: Prometheus Alertmanager's `webhook_config`, version `"4"`; one request
//!   carries a group, and every alert in it (firing and resolved) becomes an [`Alert`].
//! - [`parse_uptime_kuma`]: Uptime Kuma's webhook notification as JSON, as `multipart/form-data`
//!   with a `data` field, as a user's custom template, or as a GET query.
//! - [`parse_generic`]: any JSON body, read through a [`GenericMapping`] of JSON pointers.
//!
//! The wire formats stay here: the rest of nightwatch sees only [`Alert`], whose
//! [`identity`](Alert::identity) is stable across the firing and resolved notifications of the
//! same problem, so a resolution can find the task its firing started.

mod alert;
mod alertmanager;
mod error;
mod generic;
mod uptime_kuma;
mod wire;

pub use alert::{Alert, Source, Status};
pub use alertmanager::parse_alertmanager;
pub use error::IntakeError;
pub use generic::{GenericMapping, parse_generic};
pub use uptime_kuma::parse_uptime_kuma;
