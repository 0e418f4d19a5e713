//! Shell analysis: a bash line in, every command it would run out.
//!
//! `analyse` parses the line with a real bash grammar (brush-parser) and walks everything that
//! would execute: pipelines, lists, subshells, groups, loop and branch bodies, functions defined in
//! the line, command and process substitutions, expansions hidden in words and here-documents. It
//! unwraps wrappers (`sudo`, `env`, `xargs`, `find -exec`, `bash -c`, `ssh HOST CMD`, ...) and keeps
//! both the wrapper and what it runs. Each [`Invocation`] carries normalised argv and flags and the
//! [`Effects`](nightwatch_core::Effects) its text reveals: paths read, written, deleted and
//! searched whole, environment variables set and revealed (printed, written or sent), and network
//! destinations, whichever way the line spells them.
//!
//! The analysis is pure and total: no I/O, no clock, and no input makes it panic or abort. What
//! cannot be judged from the text (a command name computed at runtime, a script piped from the
//! network, a parse error, a limit hit) comes back as an *opaque* invocation with the reason.

mod effects;
mod environment;
mod limits;
mod network;
mod walk;
mod word;
mod wrappers;

use nightwatch_core::Invocation;

pub use limits::{MAX_INPUT_BYTES, MAX_NESTING};

/// Every command the line would run, outermost wrappers first, in source order.
///
/// Never panics. A line that cannot be parsed, or that exceeds a limit, gives one opaque
/// invocation (empty argv) whose `opaque` field says why.
pub fn analyse(line: &str) -> Vec<Invocation> {
    // The walk calls into brush-parser in several places (words, braces, arithmetic); a panic
    // in any of them must make the line opaque, never take the gate down.
    std::panic::catch_unwind(|| walk::analyse_script(line, 0)).unwrap_or_else(|_| {
        vec![Invocation {
            opaque: Some("the shell analysis failed on this line".to_owned()),
            ..Invocation::default()
        }]
    })
}

#[cfg(test)]
mod tests;
