//! What a path is called on this machine: the other names policy judges beside the one an
//! action wrote ([`nightwatch_policy::PathFacts`]).
//!
//! A path is made absolute (the call's directory, `~`, `~user`, `$HOME` and the few variables
//! the edge knows), its symlinks are followed through the longest prefix that exists (so
//! `s/id_rsa` with `s -> ~/.ssh` is found before `id_rsa` exists, and a dangling final link
//! names what a write would create), and each form is also written the way policy writes it:
//! `~/...` under home, and the symbolic name of a protected location (`$NIGHTWATCH_HOME/...`,
//! `~/.claude/...` wherever `CLAUDE_CONFIG_DIR` moved it, `$NIGHTWATCH_BIN`). The work is
//! bounded: a few syscalls per path, cached per directory, and a budget per call after which
//! paths get only the names that need no filesystem. An error is no alias, never a failure.

use nightwatch_policy::PathFacts;
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Paths resolved against the filesystem per call; past it, only names known without it. A
/// 64 KiB shell line cannot name more.
const MAX_RESOLVED: usize = 32 * 1024;
/// Symlinks followed by hand while resolving one path, past what exists (the filesystem
/// follows the rest itself).
const MAX_HOPS: u32 = 8;
/// Longer paths and deeper ones get no alias: no real path is that long.
const MAX_PATH_BYTES: usize = 4096;
const MAX_COMPONENTS: usize = 128;
/// The password database is read up to this size, once per call that names `~user`.
const MAX_PASSWD_BYTES: u64 = 4 * 1024 * 1024;

/// A protected location and the name policy's rules know it by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    pub path: PathBuf,
    /// `$NIGHTWATCH_HOME`, `~/.claude`, `$NIGHTWATCH_BIN`.
    pub name: String,
    /// Whether what lies below it is named through it too (`$NIGHTWATCH_HOME/ledger.db`), or
    /// only the path itself (the binary).
    pub tree: bool,
}

/// Where things are for one caller, from its environment; the edge builds it.
#[derive(Clone, Debug, Default)]
pub struct Places {
    /// `~`, and what `~/...` aliases are written against.
    pub home: Option<PathBuf>,
    /// The caller's working directory, for a call that names none.
    pub cwd: Option<PathBuf>,
    /// Protected locations with their symbolic names.
    pub named: Vec<Named>,
    /// Variables a path may start with (`$CODEX_HOME/hooks.json`) and their values here.
    pub variables: Vec<(String, PathBuf)>,
    /// The password database for `~user`; None: `/etc/passwd`.
    pub passwd: Option<PathBuf>,
}

/// The facts for one call: lazily prepared, cached per path and per directory.
pub struct LiveFacts<'a> {
    places: &'a Places,
    cwd: Option<PathBuf>,
    prepared: OnceCell<Prepared>,
    passwd: OnceCell<String>,
    /// Canonical forms of directories met so far (None: could not be resolved).
    dirs: RefCell<HashMap<PathBuf, Option<PathBuf>>>,
    answers: RefCell<HashMap<String, Vec<String>>>,
    resolved: Cell<usize>,
}

/// Home and the protected locations, each as written and as the filesystem has it.
struct Prepared {
    homes: Vec<PathBuf>,
    named: Vec<(Vec<PathBuf>, String, bool)>,
}

impl<'a> LiveFacts<'a> {
    /// The facts for a call made in `cwd` (the call's own directory, else the caller's).
    pub fn new(places: &'a Places, cwd: Option<&str>) -> LiveFacts<'a> {
        let cwd = cwd
            .map(PathBuf::from)
            .filter(|cwd| cwd.is_absolute())
            .or_else(|| places.cwd.clone().filter(|cwd| cwd.is_absolute()));
        LiveFacts {
            places,
            cwd,
            prepared: OnceCell::new(),
            passwd: OnceCell::new(),
            dirs: RefCell::new(HashMap::new()),
            answers: RefCell::new(HashMap::new()),
            resolved: Cell::new(0),
        }
    }

    fn prepared(&self) -> &Prepared {
        self.prepared.get_or_init(|| {
            let both = |path: &Path| {
                let mut forms = vec![crate::written::normalise(path)];
                if let Ok(real) = std::fs::canonicalize(path)
                    && !forms.contains(&real)
                {
                    forms.push(real);
                }
                forms
            };
            Prepared {
                homes: self
                    .places
                    .home
                    .as_deref()
                    .filter(|home| home.is_absolute())
                    .map(both)
                    .unwrap_or_default(),
                named: self
                    .places
                    .named
                    .iter()
                    .filter(|named| named.path.is_absolute())
                    .map(|named| (both(&named.path), named.name.clone(), named.tree))
                    .collect(),
            }
        })
    }

    fn answer(&self, path: &str) -> Vec<String> {
        let Some(absolute) = self.absolute(path) else {
            return Vec::new();
        };
        if absolute.components().count() > MAX_COMPONENTS {
            return Vec::new();
        }
        let mut forms = vec![crate::written::normalise(&absolute)];
        if self.resolved.get() < MAX_RESOLVED {
            self.resolved.set(self.resolved.get() + 1);
            if let Some(real) = self.resolve_pattern(&absolute)
                && !forms.contains(&real)
            {
                forms.push(real);
            }
        }
        let prepared = self.prepared();
        let mut aliases: Vec<String> = Vec::new();
        let mut add = |alias: String| {
            if alias != path && !aliases.contains(&alias) {
                aliases.push(alias);
            }
        };
        for form in &forms {
            let Some(text) = form.to_str() else { continue };
            add(text.to_owned());
            for home in &prepared.homes {
                if let Some(rest) = below(form, home) {
                    add(join_name("~", rest));
                }
            }
            for (locations, name, tree) in &prepared.named {
                for location in locations {
                    match below(form, location) {
                        Some("") => add(name.clone()),
                        Some(rest) if *tree => add(join_name(name, rest)),
                        _ => {}
                    }
                }
            }
        }
        aliases
    }

    /// The path as an absolute path, `..` kept (a symlink decides what it means). None when
    /// its start is not known here (a relative path without a directory, an unknown user or
    /// variable, `~-`).
    fn absolute(&self, path: &str) -> Option<PathBuf> {
        let (base, rest): (PathBuf, &str) = if let Some(rest) = path.strip_prefix('~') {
            let (head, rest) = rest.split_once('/').unwrap_or((rest, ""));
            let base = match head {
                "" => self.places.home.clone()?,
                "+" => self.cwd.clone()?,
                user => self.user_home(user)?,
            };
            (base, rest)
        } else if let Some(rest) = path.strip_prefix('$') {
            let (name, rest) = match rest.strip_prefix('{') {
                Some(braced) => braced.split_once('}')?,
                None => {
                    let end = rest
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    rest.split_at(end)
                }
            };
            if !(rest.is_empty() || rest.starts_with('/')) {
                return None;
            }
            (self.variable(name)?, rest)
        } else if path.starts_with('/') {
            (PathBuf::from("/"), path)
        } else {
            (self.cwd.clone()?, path)
        };
        if !base.is_absolute() {
            return None;
        }
        let mut absolute = base;
        for part in rest.split('/').filter(|part| !part.is_empty()) {
            absolute.push(part);
        }
        Some(absolute)
    }

    fn variable(&self, name: &str) -> Option<PathBuf> {
        match name {
            "HOME" => self.places.home.clone(),
            "PWD" => self.cwd.clone(),
            _ => self
                .places
                .variables
                .iter()
                .find(|(known, _)| known == name)
                .map(|(_, value)| value.clone()),
        }
    }

    /// `~user`'s home from the password database (parsed here: no libc lookups).
    fn user_home(&self, user: &str) -> Option<PathBuf> {
        let valid = !user.is_empty()
            && user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '$'));
        if !valid {
            return None;
        }
        let passwd = self.passwd.get_or_init(|| {
            let file = self
                .places
                .passwd
                .clone()
                .unwrap_or_else(|| PathBuf::from("/etc/passwd"));
            let mut text = String::new();
            let _ = std::fs::File::open(file).and_then(|f| {
                std::io::Read::read_to_string(
                    &mut std::io::Read::take(f, MAX_PASSWD_BYTES),
                    &mut text,
                )
            });
            text
        });
        passwd_home(passwd, user)
    }

    /// A path that may hold glob characters: its static directory resolved, the rest kept.
    fn resolve_pattern(&self, absolute: &Path) -> Option<PathBuf> {
        let parts: Vec<Component<'_>> = absolute.components().collect();
        let globbed = parts.iter().position(|part| match part {
            Component::Normal(name) => name.to_str().is_none_or(has_glob),
            _ => false,
        });
        let mut hops = 0;
        match globbed {
            None => self.resolve(absolute, &mut hops),
            Some(first) => {
                let fixed: PathBuf = parts[..first].iter().collect();
                let mut real = self.resolve_dir(&fixed, &mut hops)?;
                for part in &parts[first..] {
                    real.push(part);
                }
                Some(crate::written::normalise(&real))
            }
        }
    }

    /// Where an absolute path leads: its directory resolved (cached), then its last
    /// component, followed when it is a symlink, kept when it does not exist.
    fn resolve(&self, path: &Path, hops: &mut u32) -> Option<PathBuf> {
        let mut parts: Vec<Component<'_>> = path.components().collect();
        // Each step drops a component or follows a link: bounded depth.
        if parts.len() > MAX_COMPONENTS {
            return None;
        }
        let last = parts.pop()?;
        let parent: PathBuf = parts.iter().collect();
        match last {
            Component::RootDir | Component::Prefix(_) => Some(PathBuf::from("/")),
            Component::CurDir => self.resolve_dir(&parent, hops),
            Component::ParentDir => {
                let dir = self.resolve_dir(&parent, hops)?;
                Some(dir.parent().map_or_else(|| dir.clone(), Path::to_path_buf))
            }
            Component::Normal(name) => {
                let dir = self.resolve_dir(&parent, hops)?;
                let joined = dir.join(name);
                match std::fs::symlink_metadata(&joined) {
                    Ok(meta) if meta.file_type().is_symlink() && *hops < MAX_HOPS => {
                        *hops += 1;
                        let target = std::fs::read_link(&joined).ok()?;
                        self.resolve(&dir.join(target), hops)
                    }
                    _ => Some(joined),
                }
            }
        }
    }

    /// A directory's canonical form: the filesystem's when it exists, else its own parent's
    /// with the rest appended.
    fn resolve_dir(&self, dir: &Path, hops: &mut u32) -> Option<PathBuf> {
        if dir.as_os_str().is_empty() || dir == Path::new("/") {
            return Some(PathBuf::from("/"));
        }
        if let Some(known) = self.dirs.borrow().get(dir) {
            return known.clone();
        }
        let real = match std::fs::canonicalize(dir) {
            Ok(real) => Some(real),
            Err(_) => self
                .resolve(dir, hops)
                .map(|path| crate::written::normalise(&path)),
        };
        self.dirs
            .borrow_mut()
            .insert(dir.to_path_buf(), real.clone());
        real
    }
}

impl PathFacts for LiveFacts<'_> {
    fn aliases(&self, path: &str) -> Vec<String> {
        if path.is_empty() || path.len() > MAX_PATH_BYTES || path.contains('\0') {
            return Vec::new();
        }
        if let Some(known) = self.answers.borrow().get(path) {
            return known.clone();
        }
        let aliases = self.answer(path);
        let mut answers = self.answers.borrow_mut();
        if answers.len() < MAX_RESOLVED {
            answers.insert(path.to_owned(), aliases.clone());
        }
        aliases
    }
}

/// What follows `base` in `path` ("" for `base` itself), or None when it is not below it.
fn below<'p>(path: &'p Path, base: &Path) -> Option<&'p str> {
    path.strip_prefix(base).ok()?.to_str()
}

fn join_name(name: &str, rest: &str) -> String {
    if rest.is_empty() {
        name.to_owned()
    } else {
        format!("{name}/{rest}")
    }
}

fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '[', '{'])
}

/// The home directory of `user` in passwd(5) text: `name:password:uid:gid:gecos:home:shell`.
fn passwd_home(passwd: &str, user: &str) -> Option<PathBuf> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        (fields.next()? == user).then_some(())?;
        let home = fields.nth(4)?;
        Path::new(home).is_absolute().then(|| PathBuf::from(home))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temp tree: `home/.ssh/id_rsa`, `home/.aws/credentials`, a data directory, a moved
    /// Claude config directory, and a repo shipping `s -> home/.ssh`, `creds ->
    /// home/.aws/credentials`, `up -> ..`, `later -> home/.ssh/new_key` (dangling).
    fn tree(name: &str) -> (PathBuf, Places) {
        let root = std::env::temp_dir().join(format!(
            "nightwatch-gate-facts-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        let home = root.join("home");
        let repo = home.join("repo");
        for dir in [
            home.join(".ssh"),
            home.join(".aws"),
            repo.clone(),
            root.join("data"),
        ] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::fs::create_dir_all(root.join("claude")).expect("mkdir");
        std::fs::write(home.join(".ssh/id_rsa"), "key").expect("write");
        std::fs::write(home.join(".aws/credentials"), "creds").expect("write");
        std::fs::write(repo.join("README.md"), "hi").expect("write");
        let link = |target: &Path, at: &str| {
            std::os::unix::fs::symlink(target, repo.join(at)).expect("symlink");
        };
        link(&home.join(".ssh"), "s");
        link(&home.join(".aws/credentials"), "creds");
        link(Path::new(".."), "up");
        link(&home.join(".ssh/new_key"), "later");
        let passwd = root.join("passwd");
        std::fs::write(
            &passwd,
            format!(
                "root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::{}:/bin/sh\n",
                home.display()
            ),
        )
        .expect("write");
        let places = Places {
            home: Some(home.clone()),
            cwd: Some(repo.clone()),
            named: vec![
                Named {
                    path: root.join("data"),
                    name: "$NIGHTWATCH_HOME".into(),
                    tree: true,
                },
                Named {
                    path: root.join("claude"),
                    name: "~/.claude".into(),
                    tree: true,
                },
                Named {
                    path: root.join("bin/nightwatch"),
                    name: "$NIGHTWATCH_BIN".into(),
                    tree: false,
                },
            ],
            variables: vec![("CLAUDE_CONFIG_DIR".into(), root.join("claude"))],
            passwd: Some(passwd),
        };
        (root, places)
    }

    /// Each row: a path as written (`@` stands for the temp root) and aliases that must be
    /// among its answer (`@` again), or `[]` for none at all.
    #[test]
    fn paths_get_their_real_and_symbolic_names() {
        let (root, places) = tree("names");
        let real_root = std::fs::canonicalize(&root).expect("canonical root");
        let facts = LiveFacts::new(&places, None);
        let rows: &[(&str, &[&str])] = &[
            (
                "s/id_rsa",
                &["~/.ssh/id_rsa", "@/home/.ssh/id_rsa", "~/repo/s/id_rsa"],
            ),
            ("s/authorized_keys", &["~/.ssh/authorized_keys"]),
            // `..` after a link is the link target's parent, as the kernel reads it.
            (
                "./s/../repo/s/id_rsa",
                &["~/.ssh/id_rsa", "~/repo/repo/s/id_rsa"],
            ),
            ("s/../.aws/credentials", &["~/.aws/credentials"]),
            ("creds", &["~/.aws/credentials"]),
            ("up/.ssh/id_rsa", &["~/.ssh/id_rsa"]),
            ("later", &["~/.ssh/new_key"]),
            ("s/id_*", &["~/.ssh/id_*"]),
            ("s/*/x", &["~/.ssh/*/x"]),
            ("README.md", &["~/repo/README.md", "@/home/repo/README.md"]),
            ("~/.ssh/id_rsa", &["@/home/.ssh/id_rsa"]),
            ("$HOME/.aws/credentials", &["~/.aws/credentials"]),
            ("${HOME}/.aws/credentials", &["~/.aws/credentials"]),
            ("~alice/.ssh/id_rsa", &["~/.ssh/id_rsa"]),
            ("~root/.ssh/id_rsa", &["/root/.ssh/id_rsa"]),
            ("~+/s/id_rsa", &["~/.ssh/id_rsa"]),
            ("./~/x", &["~/repo/~/x"]),
            ("@/data/ledger.db", &["$NIGHTWATCH_HOME/ledger.db"]),
            ("@/data", &["$NIGHTWATCH_HOME"]),
            ("@/claude/settings.json", &["~/.claude/settings.json"]),
            (
                "$CLAUDE_CONFIG_DIR/settings.json",
                &["~/.claude/settings.json"],
            ),
            ("@/bin/nightwatch", &["$NIGHTWATCH_BIN"]),
            ("@/bin/nightwatch/x", &[]),
            ("~nobody-here/x", &[]),
            ("~-/x", &[]),
            ("$UNKNOWN/x", &[]),
            ("", &[]),
        ];
        for (written, expected) in rows {
            let written = written.replace('@', &root.display().to_string());
            let got = facts.aliases(&written);
            let expected: Vec<String> = expected
                .iter()
                .map(|alias| alias.replace('@', &real_root.display().to_string()))
                .collect();
            if expected.is_empty() && written.contains("nightwatch/x") {
                assert!(
                    !got.iter().any(|a| a.contains("$NIGHTWATCH_BIN")),
                    "{written}: {got:?}"
                );
                continue;
            }
            if expected.is_empty() {
                assert!(got.is_empty(), "{written}: {got:?}");
            }
            for alias in &expected {
                assert!(got.contains(alias), "{written}: {alias} not in {got:?}");
            }
        }
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn the_calls_directory_comes_first_and_no_directory_means_no_relative_alias() {
        let (root, places) = tree("cwd");
        let repo = root.join("home/repo");
        let facts = LiveFacts::new(&places, Some(&repo.join("s").display().to_string()));
        assert!(
            facts
                .aliases("id_rsa")
                .contains(&"~/.ssh/id_rsa".to_owned())
        );
        let nowhere = Places {
            cwd: None,
            ..places.clone()
        };
        let facts = LiveFacts::new(&nowhere, Some("relative/dir"));
        assert!(facts.aliases("id_rsa").is_empty());
        assert!(!facts.aliases("~/x").is_empty(), "home needs no directory");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn symlink_loops_and_hostile_paths_end_without_an_error() {
        let (root, places) = tree("loops");
        let repo = root.join("home/repo");
        std::os::unix::fs::symlink(repo.join("b"), repo.join("a")).expect("symlink");
        std::os::unix::fs::symlink(repo.join("a"), repo.join("b")).expect("symlink");
        let facts = LiveFacts::new(&places, None);
        let long = "x/".repeat(3000);
        let deep = "../".repeat(500);
        for path in [
            "a",
            "a/b/c",
            &long,
            &deep,
            "/",
            "//",
            "\0",
            "~",
            "$",
            "${",
            "~/../../..",
        ] {
            let _ = facts.aliases(path);
        }
        assert!(
            facts
                .aliases("~")
                .contains(&root.join("home").display().to_string())
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn passwd_lines_give_homes() {
        let text = "root:x:0:0:root:/root:/bin/bash\n#comment\nbad line\nbob:x:1:1:Bob:/home/bob:/bin/sh\nrel:x:2:2::home/rel:/bin/sh\n";
        assert_eq!(passwd_home(text, "root"), Some(PathBuf::from("/root")));
        assert_eq!(passwd_home(text, "bob"), Some(PathBuf::from("/home/bob")));
        assert_eq!(passwd_home(text, "rel"), None);
        assert_eq!(passwd_home(text, "eve"), None);
    }
}
