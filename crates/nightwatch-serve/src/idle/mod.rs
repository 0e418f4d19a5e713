//! Idle control in the daemon: the controller ([`control`]), the readiness check
//! ([`ready`]), and forward-auth with each app's state in the API ([`http`]). The pure parts (classification, the state machine, the `idle:` section) are
//! `nightwatch-idle`'s.

pub mod control;
pub mod http;
pub mod ready;
