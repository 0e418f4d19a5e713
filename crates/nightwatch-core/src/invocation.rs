use serde::{Deserialize, Serialize};

/// One command that a shell line would run.
///
/// A line has many: every stage of a pipeline, every command of a list, every command substitution,
/// and both a wrapper (`sudo`, `xargs`, `bash -c`) and what it runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invocation {
    /// The words as the command would receive them, quotes removed. `argv[0]` is the command's
    /// name without its directory (`/usr/bin/rm`, `\rm` and `"rm"` are all `rm`). Words that need
    /// runtime expansion keep their source text (`$HOME`, `*.log`).
    pub argv: Vec<String>,
    /// The path the command was named by, when it was named by one (`/usr/bin/rm`).
    pub path: Option<String>,
    /// `argv[1..]` split into flags and positionals, with flags normalised (`-rf` is `-r -f`,
    /// known long forms are folded to their short form).
    pub args: Vec<Arg>,
    /// The wrappers this command ran through, outermost first (`sudo`, `bash -c`, `xargs`).
    pub via: Vec<String>,
    /// Where it runs when that is not here (`ssh HOST`, `docker exec`, `kubectl exec`).
    pub remote: Option<Remote>,
    /// Why this command cannot be judged from the text, when it cannot. An opaque invocation is
    /// never allowed.
    pub opaque: Option<String>,
    pub effects: Effects,
}

impl Invocation {
    /// The command's name (`argv[0]`), or the empty string for an empty invocation.
    pub fn name(&self) -> &str {
        self.argv.first().map(String::as_str).unwrap_or("")
    }

    pub fn is_opaque(&self) -> bool {
        self.opaque.is_some()
    }

    pub fn positionals(&self) -> impl Iterator<Item = &str> {
        self.args.iter().filter_map(|arg| match arg {
            Arg::Positional(text) => Some(text.as_str()),
            Arg::Flag { .. } => None,
        })
    }

    pub fn has_flag(&self, flag: &str) -> bool {
        self.args
            .iter()
            .any(|arg| matches!(arg, Arg::Flag { name, .. } if name == flag))
    }
}

/// One argument after normalisation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Arg {
    /// `-r`, `--force`, `--output=x` (name `--output`, value `x`), or `-n 5` for a flag known to
    /// take a value.
    Flag { name: String, value: Option<String> },
    /// Anything else, including every word after `--`.
    Positional(String),
}

/// Where a remote invocation runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remote {
    pub kind: RemoteKind,
    /// The host, container or pod, as written.
    pub target: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RemoteKind {
    Ssh,
    DockerExec,
    KubectlExec,
}

/// What an invocation does to the world, where that can be known from its text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effects {
    /// Paths read (files named as input, `<` redirections).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<String>,
    /// Paths created, written, truncated, appended to, or whose mode or owner changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<String>,
    /// Paths removed (or moved away).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deletes: Vec<String>,
    /// Directories whose whole tree is read (`grep -r PAT DIR`, `rg`, `tar -c DIR`, `cp -r`,
    /// `rsync -a`, `find DIR -exec ...`): whatever lies below them is read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searches: Vec<String>,
    /// Environment variables this command sets for itself or for what runs after it
    /// (`VAR=x cmd`, `env VAR=x cmd`, `export VAR=x`, `declare -x VAR`, `sudo VAR=x cmd`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sets_env: Vec<String>,
    /// Environment variables whose values this command prints, writes or sends (`echo $TOKEN`,
    /// `curl -d "$SECRET"`); `*` when it dumps the whole environment (`env`, `printenv`, `set`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reveals_env: Vec<String>,
    /// Network destinations named in the text (host names or addresses, no port or user).
    /// Empty with `network` set means the destination is not known from the text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Talks to the network.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub network: bool,
    /// Changes user or privilege (`sudo`, `su`, `doas`, `chroot`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub privilege: bool,
    /// Signals or stops processes (`kill`, `pkill`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub process_control: bool,
    /// Starts, stops or reconfigures services or machines (`systemctl restart`, `shutdown`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub service_control: bool,
    /// Runs code it was handed as data (`python -c`, `awk` with `system()`, `sed` with `e`, a
    /// shell reading a script from a pipe).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub runs_code: bool,
}

impl Effects {
    /// True when nothing is written, deleted, controlled or run as code. Reads and network use
    /// are not counted: reading is what inspection does, and fetches are judged by rules.
    pub fn is_read_only(&self) -> bool {
        self.writes.is_empty()
            && self.deletes.is_empty()
            && !self.privilege
            && !self.process_control
            && !self.service_control
            && !self.runs_code
    }

    /// Adds, beside each path of every kind, the other names `names` gives it (a symlink's
    /// target, an absolute form), each once; the paths as written stay first.
    pub fn add_other_names(&mut self, mut names: impl FnMut(&str) -> Vec<String>) {
        for list in [
            &mut self.reads,
            &mut self.writes,
            &mut self.deletes,
            &mut self.searches,
        ] {
            let mut more: Vec<String> = Vec::new();
            for path in list.iter() {
                for name in names(path) {
                    if !list.contains(&name) && !more.contains(&name) {
                        more.push(name);
                    }
                }
            }
            list.extend(more);
        }
    }

    /// Every path this invocation touches, with the kind of touch. A searched directory is
    /// read.
    pub fn paths(&self) -> impl Iterator<Item = (PathUse, &str)> {
        let reads = self
            .reads
            .iter()
            .chain(&self.searches)
            .map(|p| (PathUse::Read, p.as_str()));
        let writes = self.writes.iter().map(|p| (PathUse::Write, p.as_str()));
        let deletes = self.deletes.iter().map(|p| (PathUse::Delete, p.as_str()));
        reads.chain(writes).chain(deletes)
    }
}

/// How a path is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PathUse {
    Read,
    Write,
    Delete,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_write_is_not_read_only() {
        let effects = Effects {
            writes: vec!["out.txt".into()],
            ..Effects::default()
        };
        assert!(!effects.is_read_only());
        assert!(Effects::default().is_read_only());
    }

    #[test]
    fn flags_are_found_by_name() {
        let inv = Invocation {
            argv: vec!["rm".into(), "-rf".into(), "/".into()],
            args: vec![
                Arg::Flag {
                    name: "-r".into(),
                    value: None,
                },
                Arg::Flag {
                    name: "-f".into(),
                    value: None,
                },
                Arg::Positional("/".into()),
            ],
            ..Invocation::default()
        };
        assert!(inv.has_flag("-r"));
        assert!(!inv.has_flag("-i"));
        assert_eq!(inv.positionals().collect::<Vec<_>>(), vec!["/"]);
    }
}
