//! Text as PostgreSQL keeps it. Its `text` cannot hold a NUL character, and hostile input can
//! carry one anywhere (an agent's session id, an alert's label, a runbook's error): refused, one
//! such value would fail its whole batch, and a host's ledger holding one could never be shipped.
//! So every text nightwatch stores is written through [`encode`] and read through [`decode`]:
//! NUL as U+FFFF `0`, and U+FFFF itself doubled. Any string comes back exactly as it went in, equal strings stay equal (a
//! lookup by identity works on the stored form), and text holding neither character, nearly
//! all of it, is passed through untouched.

use std::borrow::Cow;

/// The escape: U+FFFF, a noncharacter, which text meant to be read never contains.
const ESCAPE: char = '\u{FFFF}';

/// `s` as stored.
pub fn encode(s: &str) -> Cow<'_, str> {
    if !s.contains(['\0', ESCAPE]) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\0' => {
                out.push(ESCAPE);
                out.push('0');
            }
            ESCAPE => {
                out.push(ESCAPE);
                out.push(ESCAPE);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Stored text `s` as it was given. An escape followed by anything else (which nightwatch never
/// writes) is kept as it stands.
pub fn decode(s: &str) -> Cow<'_, str> {
    if !s.contains(ESCAPE) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != ESCAPE {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('0') => {
                chars.next();
                out.push('\0');
            }
            Some(&ESCAPE) => {
                chars.next();
                out.push(ESCAPE);
            }
            _ => out.push(ESCAPE),
        }
    }
    Cow::Owned(out)
}

/// Optional text as stored.
pub fn encode_opt(s: Option<&str>) -> Option<Cow<'_, str>> {
    s.map(encode)
}

/// Stored text read back, owned.
pub fn decoded(s: String) -> String {
    match decode(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(owned) => owned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn text_without_nul_or_escape_is_passed_through_untouched() {
        for s in ["", "plain", "héllo wörld", "tab\tand\nnewline", "\u{FFFE}"] {
            assert!(matches!(encode(s), Cow::Borrowed(_)), "{s:?}");
            assert!(matches!(decode(s), Cow::Borrowed(_)), "{s:?}");
        }
    }

    #[test]
    fn nul_and_the_escape_are_written_without_a_nul() {
        assert_eq!(encode("a\0b"), "a\u{FFFF}0b");
        assert_eq!(encode("\u{FFFF}0"), "\u{FFFF}\u{FFFF}0");
        assert!(!encode("\0\0\u{FFFF}\0").contains('\0'));
    }

    proptest! {
        #[test]
        fn any_string_round_trips_and_stays_distinct(a in ".*", b in ".*") {
            let stored = encode(&a);
            prop_assert!(!stored.contains('\0'));
            prop_assert_eq!(decode(&stored), a.as_str());
            prop_assert_eq!(encode(&a) == encode(&b), a == b);
        }

        #[test]
        fn strings_made_of_nuls_and_escapes_round_trip(
            parts in proptest::collection::vec(prop_oneof![Just("\0"), Just("\u{FFFF}"), Just("0"), Just("x")], 0..24)
        ) {
            let s: String = parts.concat();
            let stored = encode(&s);
            prop_assert_eq!(decode(&stored), s.as_str());
        }

        #[test]
        fn a_prefix_stays_a_prefix(a in ".*", b in ".*") {
            let whole = format!("{a}{b}");
            prop_assert!(encode(&whole).starts_with(encode(&a).as_ref()));
        }
    }
}
