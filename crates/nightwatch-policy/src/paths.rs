//! Path globs: `paths:`, `reads:`, `writes:` and `deletes:` matchers.

use crate::lazy::{LazyGlob, LazyGlobSet, Separator};
use globset::GlobBuilder;

/// One path glob as written, checked when the policy is read.
#[derive(Clone, Debug)]
pub(crate) struct PathGlob {
    /// Written with a leading `!`: an exception within its list.
    negated: bool,
    glob: LazyGlob,
}

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
        // A pattern without `/` names a file anywhere (`.env`, `*.pem`).
        let anchored = if pattern.contains('/') {
            pattern.to_owned()
        } else {
            format!("**/{pattern}")
        };
        let glob = LazyGlob::new(&anchored, Separator::Respected)
            .map_err(|kind| format!("bad glob {text:?}: {kind}"))?;
        Ok(PathGlob { negated, glob })
    }
}

/// A compiled list of path globs: a path matches when some positive glob matches it and no
/// `!` glob does.
#[derive(Clone, Debug)]
pub(crate) struct PathMatcher {
    include: LazyGlobSet,
    exclude: Option<LazyGlobSet>,
    /// The positive globs as text, for [`PathMatcher::may_overlap`].
    include_texts: Vec<String>,
    /// Whether a globbed path that may name a matching file counts as a match.
    overlapping: bool,
}

impl PathMatcher {
    pub(crate) fn new(globs: Vec<PathGlob>) -> Result<PathMatcher, String> {
        let mut include = Vec::new();
        let mut exclude = Vec::new();
        let mut include_texts = Vec::new();
        for glob in globs {
            if glob.negated {
                exclude.push(glob.glob);
            } else {
                include_texts.push(glob.glob.text().to_owned());
                include.push(glob.glob);
            }
        }
        if include.is_empty() {
            return Err("a path list needs at least one glob without `!`".to_owned());
        }
        Ok(PathMatcher {
            include: LazyGlobSet::new(include),
            exclude: (!exclude.is_empty()).then(|| LazyGlobSet::new(exclude)),
            include_texts,
            overlapping: false,
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

    /// Whether a globbed path could expand to a path some positive glob names: the path, read
    /// as a glob, is tried against each glob's own text, with a leading `**/` stood in for by
    /// each directory above the path. Exceptions are not consulted: this errs towards a match.
    fn may_overlap(&self, path: &str) -> bool {
        // Any candidate must keep the literal text before the first and after the last glob
        // character; checking that first keeps glob compilation off the common path.
        let first = path.find(['*', '?', '[', '{']).unwrap_or(path.len());
        let last = path
            .rfind(['*', '?', ']', '}'])
            .map_or(path.len(), |i| i + 1);
        let (head, tail) = (&path[..first], &path[last.max(first)..]);
        let framed = |candidate: &str| {
            let c_first = candidate
                .find(['*', '?', '[', '{'])
                .unwrap_or(candidate.len());
            let c_last = candidate.rfind(['*', '?', ']', '}']).map_or(0, |i| i + 1);
            let (c_head, c_tail) = (
                &candidate[..c_first],
                &candidate[c_last.max(c_first).min(candidate.len())..],
            );
            let c_tail = if c_first == candidate.len() {
                candidate
            } else {
                c_tail
            };
            (head.starts_with(c_head) || c_head.starts_with(head))
                && (tail.ends_with(c_tail) || c_tail.ends_with(tail))
        };
        let mut directories = vec![String::new()];
        let mut prefix = String::new();
        for component in path.split('/') {
            if has_glob(component) {
                break;
            }
            prefix.push_str(component);
            prefix.push('/');
            directories.push(prefix.clone());
        }
        let candidates: Vec<String> = self
            .include_texts
            .iter()
            .flat_map(|text| match text.strip_prefix("**/") {
                Some(rest) => directories
                    .iter()
                    .map(|dir| format!("{dir}{rest}"))
                    .collect(),
                None => vec![text.clone()],
            })
            .filter(|candidate| framed(candidate))
            .collect();
        if candidates.is_empty() {
            return false;
        }
        let Ok(path_glob) = GlobBuilder::new(path).backslash_escape(true).build() else {
            return true;
        };
        let path_glob = path_glob.compile_matcher();
        candidates
            .iter()
            .any(|candidate| path_glob.is_match(candidate))
    }

    fn matches_exactly(&self, path: &str) -> bool {
        !path.is_empty()
            && self.include.is_match(path)
            && !self.exclude.as_ref().is_some_and(|e| e.is_match(path))
    }
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
