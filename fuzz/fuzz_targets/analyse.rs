//! `nightwatch_shell::analyse` must return on any input: bytes in, lossy UTF-8, analysed.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    for invocation in nightwatch_shell::analyse(&line) {
        if let Some(reason) = &invocation.opaque {
            assert!(!reason.is_empty(), "opaque invocation without a reason");
        }
    }
});
