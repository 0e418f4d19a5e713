//! Idle control in the daemon: apps are suspended while nobody uses them and woken when a
//! person asks. Each app is fronted by a reverse proxy ([`proxy`]), or by the operator's own
//! proxy through forward-auth ([`http`]), so every request is seen and admitted or answered
//! by the controller ([`control`]) before it reaches the app; [`ready`] is the readiness
//! check that says an app answers. The pure parts (the `idle:` section, classification, the
//! state machine) are `nightwatch-idle`'s.

pub mod control;
pub mod http;
pub mod proxy;
pub mod ready;

#[cfg(test)]
mod proxy_tests;
