//! The built-in policy must decide any exec line, and never allow one with an opaque invocation.

#![no_main]

use libfuzzer_sys::fuzz_target;
use nightwatch_core::{Action, Verdict};
use nightwatch_policy::Policy;
use std::sync::OnceLock;

static POLICY: OnceLock<Policy> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let policy = POLICY.get_or_init(|| Policy::builtin(nightwatch_shell::analyse));
    let decision = policy.decide(&Action::exec(line));
    if decision
        .invocations
        .iter()
        .any(|judged| judged.invocation.is_opaque())
    {
        assert_ne!(
            decision.verdict,
            Verdict::Allow,
            "an opaque line was allowed: {line:?}"
        );
    }
});
