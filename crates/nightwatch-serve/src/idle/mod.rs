//! Idle control (issue 17): apps are suspended while nobody uses them and woken when a person
//! asks. Each app is fronted by a reverse proxy in the daemon ([`proxy`]), so every request is
//! seen, and admitted or answered by the controller, before it reaches the app.

pub mod proxy;

#[cfg(test)]
mod proxy_tests;
