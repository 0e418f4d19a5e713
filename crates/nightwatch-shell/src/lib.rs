//! Shell analysis (being written): `analyse(line)` returns every command the line would run.
use nightwatch_core::{Arg, Invocation};
use std::borrow::Cow;

/// Every command the line would run. Never panics; what cannot be judged comes back opaque.
pub fn analyse(line: &str) -> Vec<Invocation> {
    let argv: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    let args = argv.iter().skip(1).map(|w| Arg::Positional(w.clone())).collect();
    vec![Invocation { argv, args, ..Invocation::default() }]
}

/// The canonical name of `flag` for `program` (`rm --recursive` is `-r`).
pub fn normalise_flag<'a>(_program: &str, flag: &'a str) -> Cow<'a, str> {
    Cow::Borrowed(flag)
}
