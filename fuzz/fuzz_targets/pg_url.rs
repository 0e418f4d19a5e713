//! A fleet database's connection string (`NIGHTWATCH_DATABASE_URL`, a `query:` watcher's URL),
//! whatever an operator or a config file holds: the TLS options are taken out before the driver
//! reads the rest, never with a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use nightwatch_postgres::tls::split;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok((rest, _)) = split(&text) {
        assert!(rest.len() <= text.len());
        // What was kept holds no TLS option any more: split again, it asks for nothing.
        if let Ok((again, wish)) = split(&rest) {
            assert!(!wish.required && wish.root_cert.is_none(), "{text:?} -> {rest:?}");
            assert_eq!(again.len(), rest.len());
        }
    }
});
