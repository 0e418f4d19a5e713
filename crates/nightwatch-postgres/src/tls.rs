//! TLS to the database, asked for the way libpq's users ask: `sslmode=require` (or libpq's
//! `verify-ca` and `verify-full`) in the connection string, and `sslrootcert=FILE` for a
//! private certificate authority.
//!
//! When TLS is asked for, the server's certificate is always verified, its chain and its name,
//! against `sslrootcert`'s authorities or else the public ones (Mozilla's, built in): a server
//! that cannot be verified is refused, never talked to in the clear or taken on trust. Without
//! `sslmode`, or with `disable`, `allow` or `prefer`, no TLS is used, as before: trying it
//! would refuse the many servers whose certificate is a distribution's self-signed default,
//! which work in the clear today.
//!
//! The driver knows `sslmode` only as `disable`, `prefer` and `require`, and not `sslrootcert`
//! at all, so both are taken out of the string here ([`split`]) and the rest goes to it as
//! written.

use std::path::PathBuf;
use std::sync::Arc;

use percent_encoding::percent_decode_str;
use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use tokio_postgres_rustls::MakeRustlsConnect;

/// What a connection string asks of TLS.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsWish {
    /// `sslmode` is `require`, `verify-ca` or `verify-full`.
    pub required: bool,
    /// `sslrootcert`: the authorities to verify the server against instead of the public ones.
    pub root_cert: Option<PathBuf>,
}

/// `url` without what the driver does not understand, and what that asked: `sslrootcert` is
/// taken out, and `sslmode` is taken out too when TLS is asked for (the connector is then
/// given to the driver with its mode set to `require`) or kept as written when it is not.
/// Works on both forms, `postgres://...?sslmode=...` and `key=value` pairs.
pub fn split(url: &str) -> Result<(String, TlsWish), String> {
    // As the driver tells the two forms apart.
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        split_url(url)
    } else {
        split_pairs(url)
    }
}

/// Notes `key`'s `value` in `wish`; whether the pair stays in the string.
fn note(wish: &mut TlsWish, key: &str, value: &str) -> Result<bool, String> {
    match key {
        "sslrootcert" => {
            if value.is_empty() {
                return Err("sslrootcert is empty: name a file of PEM certificates".into());
            }
            wish.root_cert = Some(PathBuf::from(value));
            Ok(false)
        }
        "sslmode" => match value {
            "require" | "verify-ca" | "verify-full" => {
                wish.required = true;
                Ok(false)
            }
            "disable" | "allow" | "prefer" => {
                wish.required = false;
                Ok(false)
            }
            other => Err(format!(
                "sslmode {other:?} is not one of disable, allow, prefer, require, verify-ca, verify-full"
            )),
        },
        _ => Ok(true),
    }
}

fn split_url(url: &str) -> Result<(String, TlsWish), String> {
    let mut wish = TlsWish::default();
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), wish));
    };
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |text: &str| {
            percent_decode_str(text)
                .decode_utf8()
                .map(|t| t.into_owned())
                .map_err(|_| format!("{text:?} in the connection string is not UTF-8"))
        };
        if note(&mut wish, &decode(key)?, &decode(value)?)? {
            kept.push(pair);
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, wish))
}

/// `key=value` pairs as libpq writes them, read as the driver reads them: whitespace (any
/// Unicode whitespace) between pairs and around `=`, a value either quoted (`'...'`, with `\'`
/// and `\\`) or running to the next whitespace (with `\` escapes). What the driver should see
/// is left as written: only the pairs taken out go.
fn split_pairs(text: &str) -> Result<(String, TlsWish), String> {
    let mut wish = TlsWish::default();
    let mut kept = String::new();
    // Where the text not yet copied to `kept` begins.
    let mut copied = 0;
    let mut chars = text.char_indices().peekable();
    let at = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        chars.peek().map_or(text.len(), |&(i, _)| i)
    };
    let skip_spaces = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        while chars.next_if(|&(_, c)| c.is_whitespace()).is_some() {}
    };
    loop {
        skip_spaces(&mut chars);
        let start = at(&mut chars);
        if start == text.len() {
            break;
        }
        while chars
            .next_if(|&(_, c)| c != '=' && !c.is_whitespace())
            .is_some()
        {}
        let key = &text[start..at(&mut chars)];
        if key.is_empty() {
            return Err("a pair in the connection string has no name before its `=`".into());
        }
        skip_spaces(&mut chars);
        if chars.next_if(|&(_, c)| c == '=').is_none() {
            return Err(format!("{key:?} in the connection string has no `=`"));
        }
        skip_spaces(&mut chars);
        let mut value = String::new();
        if chars.next_if(|&(_, c)| c == '\'').is_some() {
            loop {
                match chars.next() {
                    None => return Err(format!("{key:?}'s quoted value is never closed")),
                    Some((_, '\'')) => break,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, c)) => value.push(c),
                        None => return Err(format!("{key:?}'s quoted value is never closed")),
                    },
                    Some((_, c)) => value.push(c),
                }
            }
        } else {
            while let Some((_, c)) = chars.next_if(|&(_, c)| !c.is_whitespace()) {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    c => value.push(c),
                }
            }
        }
        let end = at(&mut chars);
        if !note(&mut wish, key, &value)? {
            kept.push_str(&text[copied..start]);
            copied = end;
        }
    }
    kept.push_str(&text[copied..]);
    // Only the end: whitespace before a `postgres://` would make it another form.
    Ok((kept.trim_end().to_owned(), wish))
}

/// The connector for `wish`: the public authorities, or `sslrootcert`'s only.
pub(crate) fn connector(wish: &TlsWish) -> Result<MakeRustlsConnect, String> {
    let mut roots = RootCertStore::empty();
    match &wish.root_cert {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!(
                    "sslrootcert {} holds no certificate that can be used",
                    path.display()
                ));
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn wish(required: bool, root: Option<&str>) -> TlsWish {
        TlsWish {
            required,
            root_cert: root.map(PathBuf::from),
        }
    }

    #[test]
    fn a_url_gives_up_what_the_driver_does_not_know() {
        let (rest, w) = split(
            "postgres://nw:p%40ss@db.internal:5432/fleet?sslmode=verify-full&sslrootcert=%2Fetc%2Fnw%2Fca.pem&connect_timeout=5",
        )
        .unwrap();
        assert_eq!(
            rest,
            "postgres://nw:p%40ss@db.internal:5432/fleet?connect_timeout=5"
        );
        assert_eq!(w, wish(true, Some("/etc/nw/ca.pem")));
        let (rest, w) = split("postgresql://db/fleet?sslmode=require").unwrap();
        assert_eq!(
            (rest.as_str(), w),
            ("postgresql://db/fleet", wish(true, None))
        );
        let (rest, w) = split("postgres://db/fleet").unwrap();
        assert_eq!(
            (rest.as_str(), w),
            ("postgres://db/fleet", wish(false, None))
        );
        let (_, w) = split("postgres://db/fleet?sslmode=prefer").unwrap();
        assert_eq!(w, wish(false, None));
    }

    #[test]
    fn key_value_pairs_give_up_the_same() {
        let (rest, w) = split(
            "host=db.internal  dbname = fleet sslmode=verify-ca sslrootcert='/etc/my ca/it\\'s.pem' password='a b'",
        )
        .unwrap();
        assert_eq!(rest, "host=db.internal  dbname = fleet   password='a b'");
        assert_eq!(w, wish(true, Some("/etc/my ca/it's.pem")));
        let (rest, w) = split("host=db sslrootcert=/ca\\ x.pem").unwrap();
        assert_eq!(
            (rest.as_str(), w),
            ("host=db", wish(false, Some("/ca x.pem")))
        );
    }

    #[test]
    fn what_cannot_be_read_is_an_error_that_says_what() {
        for (bad, says) in [
            ("postgres://db/f?sslmode=always", "sslmode"),
            ("host=db sslmode=maybe", "sslmode"),
            ("host=db sslrootcert=", "sslrootcert"),
            ("postgres://db/f?sslrootcert=", "sslrootcert"),
            ("host=db password='open", "never closed"),
            ("host db", "no `=`"),
            ("='x' host=db", "no name"),
            ("postgres://db/f?sslrootcert=%FF", "UTF-8"),
        ] {
            let why = split(bad).unwrap_err();
            assert!(why.contains(says), "{bad}: {why}");
        }
    }

    /// Strings the fuzzer found (`fuzz_targets/pg_url.rs`): whatever is kept is never longer
    /// than what was given, and holds no TLS option any more, read as the driver reads it.
    #[test]
    fn what_the_fuzzer_found_stays_fixed() {
        for text in [
            "='.\u{FFFD}=='.\u{FFFD}=}}",
            "\u{b}sslrootcert=&sslmod",
            "a='x'sslmode=require b=c",
            "\u{2003}sslmode=require\u{85}host=db",
            "\npostgres://\u{ffff}?#&sslrootcert==\u{c}&ss=\t\tgres://{=?&e",
        ] {
            if let Ok((rest, _)) = split(text) {
                assert!(rest.len() <= text.len(), "{text:?} -> {rest:?}");
                if let Ok((_, again)) = split(&rest) {
                    assert_eq!(again, TlsWish::default(), "{text:?} -> {rest:?}");
                }
            }
        }
        let (rest, w) = split("\u{2003}sslmode=require\u{85}host=db").unwrap();
        assert_eq!((rest.trim_start(), w.required), ("host=db", true));
    }

    #[test]
    fn a_missing_or_empty_authority_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.pem");
        assert!(connector(&wish(true, missing.to_str())).is_err());
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let why = connector(&wish(true, empty.to_str())).err().unwrap();
        assert!(why.contains("no certificate"), "{why}");
        assert!(
            connector(&wish(true, None)).is_ok(),
            "the public authorities"
        );
    }

    proptest! {
        // Any string: an answer or an error, never a panic; what is kept is never longer.
        #[test]
        fn any_string_is_split_or_refused(text in "\\PC{0,80}") {
            if let Ok((rest, _)) = split(&text) {
                prop_assert!(rest.len() <= text.len());
            }
        }

        // Pairs the driver knows survive the split as written, in order.
        #[test]
        fn other_pairs_survive(
            values in proptest::collection::vec("[a-z0-9._-]{1,12}", 1..5),
            mode in prop_oneof![Just("require"), Just("verify-full"), Just("disable")],
        ) {
            let keys = ["host", "dbname", "user", "application_name", "port"];
            let pairs: Vec<String> = values.iter().zip(keys).map(|(v, k)| format!("{k}={v}")).collect();
            let text = format!("{} sslmode={mode} sslrootcert=/ca.pem", pairs.join(" "));
            let (rest, w) = split(&text).unwrap();
            prop_assert_eq!(rest, pairs.join(" "));
            prop_assert_eq!(w.required, mode != "disable");
            let url = format!("postgres://db/f?{}&sslmode={mode}", pairs.join("&"));
            let (rest, _) = split(&url).unwrap();
            prop_assert_eq!(rest, format!("postgres://db/f?{}", pairs.join("&")));
        }
    }
}
