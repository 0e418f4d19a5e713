//! Path globs: `paths:`, `reads:`, `writes:` and `deletes:` matchers.

use crate::lazy::{LazyGlob, LazyGlobSet, Separator};
use nightwatch_core::normalise_path;

/// One path glob as written, checked when the policy is read.
#[derive(Clone, Debug)]
pub(crate) struct PathGlob {
    /// Written with a leading `!`: an exception within its list.
    negated: bool,
    glob: LazyGlob,
    /// A glob written under `~` also names the same place in every home directory
    /// (`/home/*/...`, `/root/...`): a path an action spells absolutely is the same file.
    homes: Vec<LazyGlob>,
}

/// Where home directories live, for globs written under `~`.
const HOME_DIRECTORIES: [&str; 2] = ["/home/*", "/root"];
/// The same, as components, with `~` itself.
const HOME_COMPONENTS: [&[&str]; 3] = [&["~"], &["/", "home", "*"], &["/", "root"]];

/// Glob characters in a path as written (the shell expands them at runtime).
fn has_glob(path: &str) -> bool {
    path.contains(['*', '?', '[', '{'])
}

impl PathGlob {
    pub(crate) fn compile(text: &str) -> Result<PathGlob, String> {
        let (negated, pattern) = match text.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let pattern = trim_trailing_slashes(pattern);
        if pattern.is_empty() {
            return Err(format!("empty path glob {text:?}"));
        }
        // A pattern without `/` names a file anywhere (`.env`, `*.pem`); `~` is home itself.
        let anchored = if pattern.contains('/') || pattern == "~" {
            pattern.to_owned()
        } else {
            format!("**/{pattern}")
        };
        let glob = LazyGlob::new(&anchored, Separator::Respected)
            .map_err(|kind| format!("bad glob {text:?}: {kind}"))?;
        let homes = match anchored.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => HOME_DIRECTORIES
                .iter()
                .map(|home| LazyGlob::new(&format!("{home}{rest}"), Separator::Respected))
                .collect::<Result<_, _>>()
                .map_err(|kind| format!("bad glob {text:?}: {kind}"))?,
            _ => Vec::new(),
        };
        Ok(PathGlob {
            negated,
            glob,
            homes,
        })
    }
}

/// A compiled list of path globs: a path matches when some positive glob matches it and no
/// `!` glob does.
#[derive(Clone, Debug)]
pub(crate) struct PathMatcher {
    include: LazyGlobSet,
    exclude: Option<LazyGlobSet>,
    /// The positive globs in components, for [`PathMatcher::may_overlap`] and
    /// [`PathMatcher::may_hold`]; made on first use (most hook calls never need them).
    include_parts: std::sync::OnceLock<Vec<GlobParts>>,
    /// Whether a globbed path that may name a matching file counts as a match.
    overlapping: bool,
}

impl PathMatcher {
    pub(crate) fn new(globs: Vec<PathGlob>) -> Result<PathMatcher, String> {
        let mut include = Vec::new();
        let mut exclude = Vec::new();
        for glob in globs {
            let all = std::iter::once(glob.glob).chain(glob.homes);
            if glob.negated {
                exclude.extend(all);
            } else {
                include.extend(all);
            }
        }
        if include.is_empty() {
            return Err("a path list needs at least one glob without `!`".to_owned());
        }
        Ok(PathMatcher {
            include: LazyGlobSet::new(include),
            exclude: (!exclude.is_empty()).then(|| LazyGlobSet::new(exclude)),
            include_parts: std::sync::OnceLock::new(),
            overlapping: false,
        })
    }

    fn include_parts(&self) -> &[GlobParts] {
        self.include_parts.get_or_init(|| {
            self.include
                .texts()
                .flat_map(expand_braces)
                .map(|text| GlobParts::of(&text))
                .collect()
        })
    }

    pub(crate) fn overlapping(mut self, overlapping: bool) -> PathMatcher {
        self.overlapping = overlapping;
        self
    }

    /// Whether the path matches. A path that still holds glob characters (`/etc/*`) also
    /// matches through its static prefix (`/etc`), since it touches what is in there.
    pub(crate) fn is_match(&self, path: &str) -> bool {
        let path = trim_trailing_slashes(path);
        self.matches_exactly(path)
            || static_prefix(path).is_some_and(|p| self.matches_exactly(p))
            || self.overlapping && has_glob(path) && self.may_overlap(path)
    }

    /// Whether the path matches, or (for matchers stricter than allow) is a directory that
    /// may hold a match: what a recursive search, archive or removal of it reaches. `~`,
    /// `/home/alice`, `/` and `~/.ssh` hold `~/.ssh/id_rsa`; a project directory does not
    /// hold a file the list names anywhere (`.env`), or it would hold everything.
    pub(crate) fn is_match_or_holds(&self, path: &str) -> bool {
        self.is_match(path) || self.overlapping && self.may_hold(trim_trailing_slashes(path))
    }

    fn may_hold(&self, directory: &str) -> bool {
        if self.exclude.as_ref().is_some_and(|e| e.is_match(directory)) {
            return false;
        }
        let directory = match directory.strip_prefix("~/..") {
            // The parent of home is where homes are.
            Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("/home{rest}"),
            _ => directory.to_owned(),
        };
        let directory = normalise_path(&directory);
        // With no working directory known, `..` climbs to somewhere unknown, maybe home.
        if directory.split('/').all(|part| part == "..") {
            return true;
        }
        let root: Vec<&str> = components(&directory);
        self.include_parts().iter().any(|glob| {
            let parts = &glob.parts;
            if glob.anywhere {
                // A file named anywhere counts from inside its own directory (a search of
                // `~/.ssh` reaches `**/.ssh/id_*`) and from above a home, where such files
                // live (`~`, `/home`, `/`); a search of `src` reaches neither.
                let inside = (1..parts.len())
                    .any(|k| k <= root.len() && holds_from(&root[root.len() - k..], &[], parts));
                inside
                    || HOME_COMPONENTS
                        .iter()
                        .any(|home| holds_from(&root, home, parts))
            } else {
                holds_from(&root, &[], parts)
            }
        })
    }

    /// Whether a globbed path could expand to a path some positive glob names: the two are
    /// compared component by component, either side's wildcards matching the other's text
    /// (`~/.ss?/id_*` against `**/.ssh/*`). A path whose own text an exception matches
    /// (`~/.ssh/*.pub` against `!*.pub`) expands only to exceptions. This errs towards a match.
    fn may_overlap(&self, path: &str) -> bool {
        // A malformed glob (an unclosed bracket) is not a wildcard over secrets: it is judged
        // as the text it is.
        if shell_glob(path) != path {
            return false;
        }
        if self.exclude.as_ref().is_some_and(|e| e.is_match(path)) {
            return false;
        }
        let path = components(path);
        let Some(last) = path.last() else {
            return false;
        };
        let mut parts: Vec<&str> = Vec::new();
        self.include_parts().iter().any(|glob| {
            // Most globs are turned away by their last component alone.
            let ends_open = glob.parts.last().is_none_or(|p| p == "**");
            if !ends_open
                && !glob
                    .parts
                    .last()
                    .is_some_and(|p| component_may_match(p, last))
            {
                return false;
            }
            parts.clear();
            if glob.anywhere {
                parts.push("**");
            }
            parts.extend(glob.parts.iter().map(String::as_str));
            globs_may_meet(&path, &parts)
        })
    }

    fn matches_exactly(&self, path: &str) -> bool {
        !path.is_empty()
            && self.include.is_match(path)
            && !self.exclude.as_ref().is_some_and(|e| e.is_match(path))
    }
}

/// A glob's brace groups spelled out (`a/{b,c}` is `a/b` and `a/c`), for the comparisons
/// that go component by component. Bounded: a glob with too many stays as written.
fn expand_braces(text: &str) -> Vec<String> {
    const MOST: usize = 64;
    let mut done = Vec::new();
    let mut pending = vec![text.to_owned()];
    while let Some(glob) = pending.pop() {
        let group = glob.find('{').and_then(|open| {
            let close = open + glob[open..].find('}')?;
            Some((open, close))
        });
        match group {
            Some((open, close)) if done.len() + pending.len() < MOST => {
                for choice in glob[open + 1..close].split(',') {
                    pending.push(format!("{}{choice}{}", &glob[..open], &glob[close + 1..]));
                }
            }
            _ => done.push(glob),
        }
    }
    done
}

/// A positive glob split into components once, for the comparisons that go component by
/// component. `anywhere` is a leading `**/`, kept apart from the rest.
#[derive(Clone, Debug)]
struct GlobParts {
    anywhere: bool,
    parts: Vec<String>,
}

impl GlobParts {
    fn of(text: &str) -> GlobParts {
        let (anywhere, rest) = match text.strip_prefix("**/") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        GlobParts {
            anywhere,
            parts: components(rest).into_iter().map(str::to_owned).collect(),
        }
    }
}

/// A path's components, `/` standing for the root itself.
fn components(path: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if path.starts_with('/') {
        parts.insert(0, "/");
    }
    parts
}

/// Whether some path matches both component lists; `**` in `glob` spans any number of
/// components. A table over positions, so hostile input costs at most their product.
fn globs_may_meet(path: &[&str], glob: &[&str]) -> bool {
    if path.len() > 64 || glob.len() > 64 {
        return true;
    }
    // meets[i * width + j]: path[i..] and glob[j..] may match the same components.
    let width = glob.len() + 1;
    let mut meets = vec![false; (path.len() + 1) * width];
    meets[path.len() * width + glob.len()] = true;
    for i in (0..=path.len()).rev() {
        for j in (0..glob.len()).rev() {
            meets[i * width + j] = if glob[j] == "**" {
                meets[i * width + j + 1] || i < path.len() && meets[(i + 1) * width + j]
            } else {
                i < path.len()
                    && meets[(i + 1) * width + j + 1]
                    && component_may_match(glob[j], path[i])
            };
        }
    }
    meets[0]
}

/// Whether a directory whose components are `root` is, or is above, something the glob
/// `prefix` followed by `glob` (split into components) matches. A `**` reaches any depth.
fn holds_from(root: &[&str], prefix: &[&str], glob: &[String]) -> bool {
    let length = prefix.len() + glob.len();
    // The glob's own match is `is_match`'s to find, with the list's exceptions.
    if root.len() >= length && !glob.iter().any(|p| p == "**") {
        return false;
    }
    let mut patterns = prefix
        .iter()
        .copied()
        .chain(glob.iter().map(String::as_str));
    for part in root {
        let Some(pattern) = patterns.next() else {
            // The directory is below what the glob names.
            return false;
        };
        if pattern == "**" {
            return true;
        }
        if !component_may_match(pattern, part) {
            return false;
        }
    }
    true
}

/// Whether one path component may match one glob component; either may hold wildcards.
/// Brackets and braces are taken to match: this errs towards holding.
fn component_may_match(pattern: &str, part: &str) -> bool {
    if pattern == part {
        return true;
    }
    // The shell's `*`, `?` and `[...]` never match a leading dot: `src/*/*.rs` cannot
    // reach `.ssh`, `~/.*/credentials` can.
    if pattern.starts_with('.') && part.starts_with(['*', '?', '[']) {
        return false;
    }
    let (pattern, part) = (simple_wildcards(pattern), simple_wildcards(part));
    wildcards_meet(pattern.as_bytes(), part.as_bytes())
}

/// A glob component with only `*` and `?` left: a bracket expression is one character (`?`),
/// a brace group any text (`*`), an escaped character itself. Wider than the glob, never
/// narrower.
fn simple_wildcards(component: &str) -> std::borrow::Cow<'_, str> {
    if !component.contains(['[', '{', '\\']) {
        return component.into();
    }
    let mut out = String::with_capacity(component.len());
    let mut chars = component.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    out.push(escaped);
                }
            }
            '[' | '{' => {
                let close = if c == '[' { ']' } else { '}' };
                // `{}` and `{x}` are literal to bash; only `{a,b}` and `{1..3}` expand.
                if c == '{'
                    && !component[at..]
                        .split('}')
                        .next()
                        .is_some_and(|group| group.contains(',') || group.contains(".."))
                {
                    out.push(c);
                    continue;
                }
                // The first `]` right after `[` (or `[!`) belongs to the set.
                let search_from = at + 1 + usize::from(component[at + 1..].starts_with(['!', '^']));
                let first = search_from
                    + usize::from(c == '[' && component[search_from..].starts_with(']'));
                match component[first..].find(close) {
                    Some(end) => {
                        out.push(if c == '[' { '?' } else { '*' });
                        let stop = first + end;
                        while chars.peek().is_some_and(|(i, _)| *i <= stop) {
                            chars.next();
                        }
                    }
                    None => out.push(c),
                }
            }
            _ => out.push(c),
        }
    }
    out.into()
}

/// Whether some text matches both `*`/`?` patterns (`.bash_hist*` and `.*_history` both
/// match `.bash_history`). A table over positions, so hostile input costs at most the product
/// of the lengths.
fn wildcards_meet(a: &[u8], b: &[u8]) -> bool {
    let wild = |text: &[u8]| text.iter().any(|&c| c == b'*' || c == b'?');
    // The common cases need no table: one side plain text.
    match (wild(a), wild(b)) {
        (false, false) => return a == b,
        (true, false) => return wildcard_match(a, b),
        (false, true) => return wildcard_match(b, a),
        (true, true) => {}
    }
    if a.len() > 256 || b.len() > 256 {
        return true;
    }
    // meets[i * width + j]: a[i..] and b[j..] match some common text.
    let width = b.len() + 1;
    let mut meets = vec![false; (a.len() + 1) * width];
    for i in (0..=a.len()).rev() {
        for j in (0..=b.len()).rev() {
            meets[i * width + j] = if i == a.len() && j == b.len() {
                true
            } else if i < a.len() && a[i] == b'*' {
                meets[(i + 1) * width + j] || j < b.len() && meets[i * width + j + 1]
            } else if j < b.len() && b[j] == b'*' {
                meets[i * width + j + 1] || i < a.len() && meets[(i + 1) * width + j]
            } else {
                i < a.len()
                    && j < b.len()
                    && (a[i] == b[j] || a[i] == b'?' || b[j] == b'?')
                    && meets[(i + 1) * width + j + 1]
            };
        }
    }
    meets[0]
}

/// `*` and `?` in `pattern` over plain `text`, iteratively (no recursion on hostile input).
fn wildcard_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                backtrack = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match backtrack {
                Some((star, from)) => {
                    p = star + 1;
                    t = from + 1;
                    backtrack = Some((star, from + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// A path as the shell would glob it: an unclosed `[` or `{` is a literal character.
fn shell_glob(path: &str) -> std::borrow::Cow<'_, str> {
    let unclosed = |open: char, close: char| {
        path.match_indices(open)
            .any(|(at, _)| !path[at + 1..].contains(close))
    };
    if !unclosed('[', ']') && !unclosed('{', '}') {
        return path.into();
    }
    let mut out = String::with_capacity(path.len() + 4);
    for (at, c) in path.char_indices() {
        let literal = match c {
            '[' => !path[at + 1..].contains(']'),
            '{' => !path[at + 1..].contains('}'),
            _ => false,
        };
        if literal {
            out.push('\\');
        }
        out.push(c);
    }
    out.into()
}

fn trim_trailing_slashes(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() && path.starts_with('/') {
        "/"
    } else {
        trimmed
    }
}

/// The components before the first one holding a glob character: `/etc/*` → `/etc`,
/// `/*` → `/`, `~/*` → `~`. None when the first component is already globbed.
fn static_prefix(path: &str) -> Option<&str> {
    let first_glob = path.find(['*', '?', '[', '{'])?;
    let slash = path[..first_glob].rfind('/')?;
    Some(if slash == 0 { "/" } else { &path[..slash] })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(globs: &[&str]) -> PathMatcher {
        let compiled = globs
            .iter()
            .map(|g| PathGlob::compile(g).unwrap_or_else(|e| panic!("{g:?}: {e}")))
            .collect();
        PathMatcher::new(compiled).unwrap_or_else(|e| panic!("{globs:?}: {e}"))
    }

    fn check(globs: &[&str], path: &str, expect: bool) {
        assert_eq!(
            matcher(globs).is_match(path),
            expect,
            "globs {globs:?} against {path:?}"
        );
    }

    #[test]
    fn path_globs_match_as_documented() {
        let system = &["/", "/etc", "/usr", "/usr/*", "~", "/home/*"];
        let secrets = &[
            "**/.ssh/id_*",
            "!*.pub",
            ".env",
            ".env.*",
            "!.env.example",
            "*.key",
            "**/.aws/credentials",
        ];
        let table: &[(&[&str], &str, bool)] = &[
            (system, "/", true),
            (system, "/etc", true),
            (system, "/etc/", true),
            (system, "/etc/nginx", false),
            (system, "/usr/lib", true),
            (system, "/usr/local/bin/tool", false),
            (system, "/home/alice", true),
            (system, "/home/alice/project", false),
            (system, "~", true),
            (system, "~/project", false),
            // Globbed children touch the directory they sit in.
            (system, "/*", true),
            (system, "/etc/*", true),
            (system, "~/*", true),
            (system, "~/.*", true),
            (system, "/usr/local/*", true),
            (system, "/tmp/*", false),
            (system, "*", false),
            (system, "build/*", false),
            (system, "", false),
            // Names without `/` match anywhere; `!` makes exceptions.
            (secrets, "~/.ssh/id_rsa", true),
            (secrets, "/home/alice/.ssh/id_ed25519", true),
            (secrets, "/root/.ssh/id_rsa.pub", false),
            (secrets, ".ssh/id_rsa", true),
            (secrets, ".env", true),
            (secrets, "app/.env", true),
            (secrets, "/srv/app/.env.production", true),
            (secrets, ".env.example", false),
            (secrets, "app/.env.example", false),
            (secrets, "environment", false),
            (secrets, "tls/server.key", true),
            (secrets, "~/.aws/credentials", true),
            (secrets, "/root/.aws/credentials", true),
            (secrets, "~/.aws/config", false),
            // `*` does not cross `/`; `**` does.
            (&["/etc/*"], "/etc/passwd", true),
            (&["/etc/*"], "/etc/ssh/sshd_config", false),
            (&["/etc/**"], "/etc/ssh/sshd_config", true),
            (&["/etc/sudoers.d/**"], "/etc/sudoers.d/90-agent", true),
            (&["/dev/sd*"], "/dev/sda1", true),
            (&["/dev/sd*"], "/dev/null", false),
        ];
        for (globs, path, expect) in table {
            check(globs, path, *expect);
        }
    }

    #[test]
    fn globbed_paths_match_broad_matchers_they_may_overlap() {
        let broad = |globs: &[&str]| matcher(globs).overlapping(true);
        assert!(broad(&[".env", "!.env.example"]).is_match(".env*"));
        assert!(broad(&["**/.ssh/id_*", "!**/*.pub"]).is_match("~/.ssh/*"));
        assert!(broad(&["/etc/shadow"]).is_match("/etc/sha*"));
        assert!(!broad(&["/etc/shadow"]).is_match("/var/*.log"));
        // Allow rules are not broadened: `/srv/*` may hold more than `/srv/app`.
        assert!(!matcher(&["/srv/app/**"]).is_match("/srv/*"));
    }

    #[test]
    fn globs_under_home_match_in_every_home() {
        let keys = matcher(&["~/.aws/credentials", "!~/.aws/skip"]);
        assert!(keys.is_match("~/.aws/credentials"));
        assert!(keys.is_match("/home/alice/.aws/credentials"));
        assert!(keys.is_match("/root/.aws/credentials"));
        assert!(!keys.is_match("/srv/alice/.aws/credentials"));
        assert!(!matcher(&["~/.aws/**", "!~/.aws/config"]).is_match("/home/bob/.aws/config"));
    }

    #[test]
    fn directories_that_may_hold_a_match() {
        let stores = matcher(&[
            "**/.ssh/*",
            "!*.pub",
            "**/.aws/credentials",
            "~/.config/gcloud/**",
            "/etc/shadow",
            ".env",
        ])
        .overlapping(true);
        let table: &[(&str, bool)] = &[
            ("~", true),
            ("~/", true),
            ("$HOME", true),
            ("/", true),
            ("/home", true),
            ("/home/alice", true),
            ("/root", true),
            ("~/.ssh", true),
            ("/home/alice/.ssh", true),
            ("~/.aws", true),
            ("~/.config", true),
            ("~/.config/gcloud/legacy_credentials", true),
            ("/etc", true),
            ("..", true),
            ("../..", true),
            ("~/..", true),
            // A project holds files named anywhere (`.env`), but is not searched for them.
            ("src", false),
            (".", false),
            ("~/src/app", false),
            ("/srv/app", false),
            ("/etc/nginx", false),
            ("/home/alice/project", false),
            ("../sibling", false),
            ("~/.config/nvim", false),
        ];
        for (directory, holds) in table {
            assert_eq!(
                stores.is_match_or_holds(directory),
                *holds,
                "{directory:?} holds a credential store"
            );
        }
        // Allow rules name only what they say.
        assert!(!matcher(&["**/.ssh/*"]).is_match_or_holds("~"));
    }

    #[test]
    fn globbed_paths_meet_globs_component_by_component() {
        let stores = matcher(&[
            "**/.ssh/*",
            "!*.pub",
            "**/.aws/credentials",
            "/etc/shadow",
            ".*_history",
            "*.key",
        ])
        .overlapping(true);
        for (path, meets) in [
            ("~/.ss?/id_*", true),
            ("~/.[s]sh/id_rsa", true),
            ("/home/*/.aws/*", true),
            ("~/.*/credentials", true),
            ("/etc/sha*", true),
            ("/e*/shadow", true),
            ("~/.ssh/*.pub", false),
            ("notes[*", false),
            ("notes{*", false),
            ("src/*.rs", false),
            ("*.md", false),
            ("/var/log/*.log", false),
            ("src/**/*.rs", false),
            ("src/*/*.rs", false),
            ("/sys/class/net/*/address", false),
            ("{}", false),
            ("~/.bash_hist*", true),
        ] {
            assert_eq!(stores.is_match(path), meets, "{path:?}");
        }
    }

    #[test]
    fn unclosed_brackets_are_literal() {
        assert_eq!(shell_glob("notes[*"), "notes\\[*");
        assert_eq!(shell_glob("a[bc]*"), "a[bc]*");
        assert_eq!(shell_glob("x{y"), "x\\{y");
    }

    #[test]
    fn components_reduce_to_simple_wildcards() {
        for (component, simple) in [
            ("[s]sh", "?sh"),
            ("id_{rsa,dsa}", "id_*"),
            ("notes\\[*", "notes[*"),
            ("notes[*", "notes[*"),
            ("[]x]y", "?y"),
            ("[!a]b", "?b"),
            ("plain", "plain"),
            ("{}", "{}"),
            ("x{y}", "x{y}"),
        ] {
            assert_eq!(simple_wildcards(component), simple, "{component:?}");
        }
    }

    #[test]
    fn wildcards_meet_when_some_text_matches_both() {
        for (a, b, expect) in [
            ("*", "", true),
            ("id_*", "id_rsa", true),
            ("?sh", "ssh", true),
            ("a*b*c", "aXbYc", true),
            ("a*b", "ac", false),
            ("**", "x", true),
            (".bash_hist*", ".*_history", true),
            ("*.md", "*.rs", false),
            ("*.json", "config*", true),
            ("id_*", "*.pub", true),
            ("x?", "xyz", false),
        ] {
            assert_eq!(
                wildcards_meet(a.as_bytes(), b.as_bytes()),
                expect,
                "{a} {b}"
            );
            assert_eq!(
                wildcards_meet(b.as_bytes(), a.as_bytes()),
                expect,
                "{b} {a}"
            );
        }
    }

    #[test]
    fn static_prefixes() {
        assert_eq!(static_prefix("/etc/*"), Some("/etc"));
        assert_eq!(static_prefix("/*"), Some("/"));
        assert_eq!(static_prefix("~/*"), Some("~"));
        assert_eq!(static_prefix("/usr/lib*/x"), Some("/usr"));
        assert_eq!(static_prefix("*.log"), None);
        assert_eq!(static_prefix("/etc/passwd"), None);
    }

    #[test]
    fn bad_path_globs_are_refused() {
        assert!(PathGlob::compile("/etc/[").is_err());
        assert!(PathGlob::compile("!").is_err());
        assert!(PathMatcher::new(vec![]).is_err());
        let only_negative = vec![PathGlob::compile("!*.pub").unwrap_or_else(|e| panic!("{e}"))];
        assert!(PathMatcher::new(only_negative).is_err());
    }
}
