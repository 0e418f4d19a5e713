//! The alert inbox the daemon stores every arrival in, before its sender gets a reply: the
//! `AlertInbox` trait of `nightwatch-store` and the values it keeps. Which store holds them
//! is the binary's choice (`alerts.db` through `nightwatch-sqlite`).

pub use nightwatch_store::{AlertEvent, AlertInbox, Arrival, Disposition, Settlement};
