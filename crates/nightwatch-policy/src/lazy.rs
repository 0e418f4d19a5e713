//! Globs compiled on first need, and skipped when they cannot match.
//!
//! A hook process loads the policy, makes one decision and exits, so what matters is the cost of
//! loading plus one decision. Two things keep it small:
//!
//! - Each glob keeps the literal text before its first and after its last glob character (its
//!   *frame*). A text without that prefix and suffix cannot match, and most texts fail there,
//!   so the glob's regex is built only for the few that pass.
//! - A policy file's globs are parsed when it is read, so that a bad one is reported with its
//!   line. The built-in policy's are not ([`read_trusted`]): the tests parse every one of them.

use globset::{GlobBuilder, GlobMatcher};
use std::cell::Cell;
use std::sync::OnceLock;

thread_local! {
    /// Set while the built-in policy is read: its globs are known to parse.
    static TRUSTED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `read` with glob checking off, for the built-in policy only.
pub(crate) fn read_trusted<T>(read: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            TRUSTED.set(false);
        }
    }
    TRUSTED.set(true);
    let _reset = Reset;
    read()
}

/// How `*` treats `/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Separator {
    /// Words (command names, flags, tools, hosts): `*` matches `/` too.
    Crossed,
    /// Paths: `*` stays within a component and `**` crosses.
    Respected,
}

/// One glob, its matcher built on first need.
#[derive(Clone, Debug)]
pub(crate) struct LazyGlob {
    text: String,
    separator: Separator,
    /// The frame as byte ranges of `text` (`text[..prefix_end]`, `text[suffix_start..]`):
    /// a policy holds hundreds of globs, and loading it should not allocate for each twice.
    prefix_end: usize,
    suffix_start: usize,
    /// Literal runs every match contains, in this order (`.ssh/authorized_keys` in
    /// `**/.ssh/authorized_keys*`); found on first need.
    inner: OnceLock<Vec<String>>,
    shape: Shape,
    /// None when the glob did not build: only possible for a trusted glob, which the tests
    /// rule out; it then counts as matching, since a rule that cannot tell must not be skipped.
    matcher: OnceLock<Option<GlobMatcher>>,
}

impl LazyGlob {
    /// Parses `text` (unless reading the built-in policy) and records its frame. The error
    /// is what is wrong with the glob, for the caller to place.
    pub(crate) fn new(text: &str, separator: Separator) -> Result<LazyGlob, String> {
        if !TRUSTED.get() {
            builder(text, separator)
                .build()
                .map_err(|err| err.kind().to_string())?;
        }
        let (prefix, suffix) = frame(text);
        Ok(LazyGlob {
            text: text.to_owned(),
            separator,
            prefix_end: prefix.len(),
            suffix_start: text.len() - suffix.len(),
            inner: OnceLock::new(),
            shape: Shape::of(text, separator),
            matcher: OnceLock::new(),
        })
    }

    /// The glob as written.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The literal text every match ends with.
    pub(crate) fn suffix(&self) -> &str {
        self.text.get(self.suffix_start..).unwrap_or("")
    }

    fn prefix(&self) -> &str {
        self.text.get(..self.prefix_end).unwrap_or("")
    }

    pub(crate) fn is_match(&self, text: &str) -> bool {
        let (prefix, suffix) = (self.prefix(), self.suffix());
        if !(text.starts_with(prefix)
            && text.ends_with(suffix)
            && contains_in_order(text, self.inner.get_or_init(|| inner_runs(&self.text))))
        {
            return false;
        }
        if let Some(matched) = self.shape.is_match(prefix, suffix, text) {
            return matched;
        }
        let matcher = self.matcher.get_or_init(|| {
            builder(&self.text, self.separator)
                .build()
                .ok()
                .map(|glob| glob.compile_matcher())
        });
        matcher.as_ref().is_none_or(|m| m.is_match(text))
    }
}

/// Several globs: a text matches when any one does.
///
/// A long list (the built-in policy's credential stores are well over a hundred globs) is
/// indexed by the last byte of each glob's literal suffix: a text is tried only against the
/// globs that can end the way it ends, plus those whose suffix is empty (`dir/**`).
#[derive(Clone, Debug)]
pub(crate) struct LazyGlobSet {
    globs: Vec<LazyGlob>,
    /// Positions in `globs` by the last byte of their suffix; None for short lists.
    by_last_byte: Option<Box<[Vec<u32>; 256]>>,
    /// Globs with an empty suffix, which any text may match.
    open_ended: Vec<u32>,
}

/// Lists shorter than this are scanned whole: the index would not pay for itself.
const INDEXED_FROM: usize = 16;

impl LazyGlobSet {
    pub(crate) fn new(globs: Vec<LazyGlob>) -> LazyGlobSet {
        let mut open_ended = Vec::new();
        let by_last_byte = (globs.len() >= INDEXED_FROM).then(|| {
            let mut buckets: Box<[Vec<u32>; 256]> = Box::new(std::array::from_fn(|_| Vec::new()));
            for (index, glob) in globs.iter().enumerate() {
                let index = u32::try_from(index).unwrap_or(u32::MAX);
                match glob.suffix().as_bytes().last() {
                    Some(&last) => buckets[usize::from(last)].push(index),
                    None => open_ended.push(index),
                }
            }
            buckets
        });
        LazyGlobSet {
            globs,
            by_last_byte,
            open_ended,
        }
    }

    /// The globs as written.
    pub(crate) fn texts(&self) -> impl Iterator<Item = &str> {
        self.globs.iter().map(LazyGlob::text)
    }

    pub(crate) fn is_match(&self, text: &str) -> bool {
        let Some(buckets) = &self.by_last_byte else {
            return self.globs.iter().any(|glob| glob.is_match(text));
        };
        let ending = text
            .as_bytes()
            .last()
            .map_or(&[][..], |&last| buckets[usize::from(last)].as_slice());
        ending.iter().chain(&self.open_ended).any(|&index| {
            self.globs
                .get(index as usize)
                .is_some_and(|g| g.is_match(text))
        })
    }
}

/// Path globs whose only glob syntax is one `**`, which the frame decides without a regex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// No glob characters: the text itself.
    Literal,
    /// `dir/**`: anything below `dir`.
    Below,
    /// `**/name`: `name` in any directory.
    Anywhere,
    /// `dir/**/name`: `name` anywhere below `dir`.
    BelowAnywhere,
    /// Anything else: the regex decides.
    Other,
}

impl Shape {
    fn of(text: &str, separator: Separator) -> Shape {
        if !text.contains(is_glob_char) {
            return Shape::Literal;
        }
        if separator != Separator::Respected {
            return Shape::Other;
        }
        let literal = |part: &str| !part.contains(is_glob_char);
        let (head, tail) = match text.split_once("**") {
            Some(split) if literal(split.0) && literal(split.1) => split,
            _ => return Shape::Other,
        };
        match (head, tail) {
            ("", "") => Shape::Other,
            (head, "") if head.len() > 1 && head.ends_with('/') => Shape::Below,
            ("", tail) if tail.len() > 1 && tail.starts_with('/') => Shape::Anywhere,
            (head, tail)
                if head.len() > 1
                    && head.ends_with('/')
                    && tail.len() > 1
                    && tail.starts_with('/') =>
            {
                Shape::BelowAnywhere
            }
            _ => Shape::Other,
        }
    }

    /// The answer, when the shape gives one, for a text already within the frame: `prefix`
    /// is the directory without its `/`, `suffix` the name without its `/`.
    fn is_match(self, prefix: &str, suffix: &str, text: &str) -> Option<bool> {
        let below = text
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('/'));
        let named = |rest: &str| {
            rest == suffix
                || rest
                    .strip_suffix(suffix)
                    .is_some_and(|dir| dir.ends_with('/'))
        };
        match self {
            Shape::Literal => Some(text == prefix),
            Shape::Below => Some(below.is_some()),
            Shape::Anywhere => Some(named(text)),
            Shape::BelowAnywhere => Some(below.is_some_and(named)),
            Shape::Other => None,
        }
    }
}

fn builder(text: &str, separator: Separator) -> GlobBuilder<'_> {
    let mut builder = GlobBuilder::new(text);
    builder
        .literal_separator(separator == Separator::Respected)
        .backslash_escape(true)
        .empty_alternates(true);
    builder
}

fn is_glob_char(c: char) -> bool {
    matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\' | ',')
}

/// The literal text every match starts and ends with: what precedes the first glob character
/// and follows the last. A `/` next to `**` is left out, since `**/x` also matches `x` and
/// `a/**/b` also matches `a/b`.
fn frame(text: &str) -> (&str, &str) {
    let Some(first) = text.find(is_glob_char) else {
        return (text, text);
    };
    let last = text.rfind(is_glob_char).map_or(first, |at| at + 1);
    let mut prefix = &text[..first];
    if text[first..].starts_with("**") {
        prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    }
    let mut suffix = &text[last.max(first)..];
    if text[..last].ends_with("**") {
        suffix = suffix.strip_prefix('/').unwrap_or(suffix);
    }
    (prefix, suffix)
}

/// The literal runs between glob characters, up to the first `[`, `{` or `\\` (whose insides
/// are not literal text every match contains). A `/` next to `**` is left out, as in [`frame`].
fn inner_runs(text: &str) -> Vec<String> {
    let mut runs = Vec::new();
    let mut run = String::new();
    let mut after_recursive = false;
    let mut chars = text.chars().peekable();
    let mut finish = |run: &mut String, before_recursive: bool, after_recursive: bool| {
        let mut literal = run.as_str();
        if before_recursive {
            literal = literal.strip_suffix('/').unwrap_or(literal);
        }
        if after_recursive {
            literal = literal.strip_prefix('/').unwrap_or(literal);
        }
        if !literal.is_empty() {
            runs.push(literal.to_owned());
        }
        run.clear();
    };
    while let Some(c) = chars.next() {
        match c {
            '*' | '?' => {
                let recursive = c == '*' && chars.peek() == Some(&'*');
                finish(&mut run, recursive, after_recursive);
                if recursive {
                    chars.next();
                }
                after_recursive = recursive;
            }
            '[' | '{' | '\\' | ']' | '}' | ',' => {
                // Stop here: what follows may be alternatives or a class, not required text.
                run.clear();
                return runs;
            }
            c => run.push(c),
        }
    }
    finish(&mut run, false, after_recursive);
    runs
}

/// Whether every run occurs in `text`, each after the one before.
fn contains_in_order(text: &str, runs: &[String]) -> bool {
    let mut rest = text;
    for run in runs {
        match rest.find(run.as_str()) {
            Some(at) => rest = &rest[at + run.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn frames_are_the_literal_ends() {
        assert_eq!(frame("/etc/**"), ("/etc", ""));
        assert_eq!(frame("**/.env*"), ("", ""));
        assert_eq!(frame("**/id_rsa"), ("", "id_rsa"));
        assert_eq!(frame("/var/**/app.log"), ("/var", "app.log"));
        assert_eq!(frame("*.pem"), ("", ".pem"));
        assert_eq!(frame("--force*"), ("--force", ""));
        assert_eq!(frame("plain"), ("plain", "plain"));
        assert_eq!(frame(r"a\*b"), ("a", "b"));
        assert_eq!(frame("{a,b}c"), ("", "c"));
    }

    #[test]
    fn simple_path_shapes_match_as_the_regex_does() {
        let cases = [
            (
                "/etc/**",
                &["/etc/x", "/etc/", "/etc/a/b", "/etc", "/etcx/a", "/x/etc/a"][..],
            ),
            (
                "**/id_rsa",
                &["id_rsa", "/id_rsa", "a/id_rsa", "a/xid_rsa", "id_rsa/x"],
            ),
            (
                "/a/**/b",
                &["/a/b", "/a/x/b", "/a//b", "/a/xb", "/ab", "/a/b/c"],
            ),
            ("/etc/shadow", &["/etc/shadow", "/etc/shadowx"]),
        ];
        for (glob, texts) in cases {
            let lazy = LazyGlob::new(glob, Separator::Respected).unwrap();
            assert_ne!(lazy.shape, Shape::Other, "{glob}");
            let regex = builder(glob, Separator::Respected)
                .build()
                .unwrap()
                .compile_matcher();
            for text in texts {
                assert_eq!(
                    lazy.is_match(text),
                    regex.is_match(text),
                    "{glob} on {text}"
                );
            }
        }
    }

    #[test]
    fn inner_runs_are_the_required_literals() {
        assert_eq!(
            inner_runs("**/.ssh/authorized_keys*"),
            [".ssh/authorized_keys"]
        );
        assert_eq!(inner_runs("/var/**/app-*.log"), ["/var", "app-", ".log"]);
        assert_eq!(inner_runs("/etc/{a,b}/x"), Vec::<String>::new());
        assert_eq!(inner_runs("*.pem"), [".pem"]);
        assert!(!contains_in_order(
            "/var/log/journal",
            &inner_runs("**/.ssh/id_*")
        ));
        assert!(contains_in_order(
            "/root/.ssh/id_rsa",
            &inner_runs("**/.ssh/id_*")
        ));
    }

    #[test]
    fn trusted_reading_skips_the_check_and_resets() {
        assert!(LazyGlob::new("[", Separator::Crossed).is_err());
        let unchecked = read_trusted(|| LazyGlob::new("[", Separator::Crossed));
        // A trusted glob that cannot build cannot tell: it counts as matching.
        assert!(unchecked.is_ok_and(|glob| glob.is_match("anything")));
        assert!(LazyGlob::new("[", Separator::Crossed).is_err());
    }

    fn glob_text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("*".to_owned()),
                Just("**".to_owned()),
                Just("?".to_owned()),
                Just("/".to_owned()),
                Just("{a,b}".to_owned()),
                Just("[ab]".to_owned()),
                "[a-c.]{1,3}",
            ],
            1..6,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        /// The frame is only ever a shortcut: it never turns a match into a non-match.
        #[test]
        fn the_frame_never_rejects_a_match(
            glob in glob_text(),
            text in "[a-c./]{0,8}",
            paths in any::<bool>(),
        ) {
            let separator = if paths { Separator::Respected } else { Separator::Crossed };
            if let Ok(built) = builder(&glob, separator).build() {
                let lazy = LazyGlob::new(&glob, separator).unwrap();
                prop_assert_eq!(lazy.is_match(&text), built.compile_matcher().is_match(&text));
            }
        }
    }
}
