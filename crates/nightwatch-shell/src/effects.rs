//! What a command does to the world, as far as its text shows.

use nightwatch_core::flags::{normalise_flag, takes_value};
use nightwatch_core::paths::{is_relative, normalise_path};
use nightwatch_core::{Arg, Effects};

/// Commands whose positionals are names, not contents: listing or naming a file is not reading it.
const NAMES_ONLY: &[&str] = &[
    "ls",
    "stat",
    "du",
    "df",
    "realpath",
    "readlink",
    "basename",
    "dirname",
    "test",
    "[",
    "echo",
    "printf",
    "mkdir",
    "touch",
    "cd",
    "pushd",
    "which",
    "type",
    "command",
    "whereis",
    "tree",
    "lsof",
    "namei",
    "getfacl",
    "sleep",
    "seq",
    "kill",
    "pkill",
    "pgrep",
    "killall",
    "ps",
    "systemctl",
    "service",
    "journalctl",
    "docker",
    "podman",
    "kubectl",
    "ping",
    "dig",
    "host",
    "nslookup",
    "id",
    "getent",
    "date",
    "true",
    "false",
    ":",
    "export",
    "declare",
    "typeset",
    "local",
    "readonly",
    "printenv",
    "unset",
    "alias",
    "set",
];
/// Commands whose first positional is a pattern or program, not a file.
const PATTERN_FIRST: &[&str] = &[
    "grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "pt", "sed", "gsed", "awk", "gawk",
    "mawk", "nawk", "jq", "yq", "xmllint",
];
/// Searchers that always walk the directories they are given (the working directory when none).
const TREE_SEARCHERS: &[&str] = &["rg", "ag", "ack", "pt"];
/// Options of `zip` that take the next word, and those that take every word up to the next
/// option (`-x '*.o' '*.a'`).
const ZIP_VALUED: &[&str] = &[
    "-b", "-n", "-t", "-tt", "-P", "-Z", "-s", "-O", "-TT", "-ll",
];
const ZIP_LISTS: &[&str] = &["-x", "-i", "--exclude", "--include"];
const NETWORK: &[&str] = &[
    "curl",
    "wget",
    "ssh",
    "scp",
    "sftp",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "telnet",
    "ftp",
    "ping",
    "ping6",
    "dig",
    "nslookup",
    "host",
    "traceroute",
    "mtr",
    "nmap",
    "aria2c",
    "http",
    "https",
    "xh",
    "fetch",
    "lynx",
    "links",
    "w3m",
    "rclone",
    "aws",
    "gcloud",
    "az",
    "gsutil",
    "s3cmd",
    "mosh",
    "openssl",
    "gh",
];
const PRIVILEGE: &[&str] = &[
    "sudo", "doas", "su", "pkexec", "runuser", "chroot", "setpriv", "sudoedit", "capsh", "nsenter",
    "unshare", "newgrp", "sg",
];
const PROCESS_CONTROL: &[&str] = &["kill", "pkill", "killall", "skill", "xkill", "renice"];
const MACHINE_CONTROL: &[&str] = &[
    "shutdown", "reboot", "poweroff", "halt", "init", "telinit", "kexec", "rtcwake",
];
/// `systemctl` verbs that only look.
const SYSTEMCTL_READ: &[&str] = &[
    "status",
    "show",
    "cat",
    "list-units",
    "list-unit-files",
    "list-timers",
    "list-sockets",
    "list-dependencies",
    "list-jobs",
    "list-machines",
    "is-active",
    "is-enabled",
    "is-failed",
    "is-system-running",
    "help",
    "get-default",
    "show-environment",
];
const INTERPRETERS: &[(&str, &[&str])] = &[
    ("python", &["-c"]),
    ("python2", &["-c"]),
    ("python3", &["-c"]),
    ("pypy", &["-c"]),
    ("pypy3", &["-c"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("node", &["-e", "-p"]),
    ("nodejs", &["-e", "-p"]),
    ("deno", &["-e", "eval"]),
    ("bun", &["-e"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("luajit", &["-e"]),
    ("Rscript", &["-e"]),
    ("tclsh", &[]),
    ("osascript", &["-e"]),
    ("pwsh", &["-c", "-Command"]),
    ("powershell", &["-c", "-Command"]),
    ("julia", &["-e"]),
    ("groovy", &["-e"]),
    ("scala", &["-e"]),
    ("guile", &["-c"]),
    ("gdb", &["-ex", "--eval-command"]),
];
/// Environment variables whose value is run as code by the command that inherits them.
pub const CODE_VARIABLES: &[&str] = &[
    "PAGER",
    "GIT_PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "GIT_EDITOR",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PS4",
    "SHELLOPTS",
    "PERL5OPT",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "NODE_OPTIONS",
    "RUBYOPT",
    "GIT_EXTERNAL_DIFF",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "LESSOPEN",
    "LESSCLOSE",
    "BROWSER",
    "DYLD_INSERT_LIBRARIES",
    "IFS",
];

/// The positional arguments of normalised `args`, in order.
pub(crate) fn positionals_of(args: &[Arg]) -> impl Iterator<Item = &str> {
    args.iter().filter_map(|arg| match arg {
        Arg::Positional(p) => Some(p.as_str()),
        Arg::Flag { .. } => None,
    })
}

/// Whether normalised `args` carry the flag `wanted`.
pub(crate) fn has_flag(args: &[Arg], wanted: &str) -> bool {
    args.iter()
        .any(|a| matches!(a, Arg::Flag { name, .. } if name == wanted))
}

/// The value of the flag `wanted` in normalised `args`, when it has one.
pub(crate) fn flag_value<'a>(args: &'a [Arg], wanted: &str) -> Option<&'a str> {
    args.iter().find_map(|a| match a {
        Arg::Flag { name, value } if name == wanted => value.as_deref(),
        _ => None,
    })
}

/// True for an interpreter given neither inline code nor a program file: it runs what arrives
/// on standard input (`curl ... | python3`).
pub fn reads_program_from_stdin(name: &str, args: &[Arg]) -> bool {
    let Some((_, inline_flags)) = INTERPRETERS.iter().find(|(n, _)| *n == name) else {
        return false;
    };
    let inline = args
        .iter()
        .any(|a| matches!(a, Arg::Flag { name, .. } if inline_flags.contains(&name.as_str())));
    let program_file = args
        .iter()
        .any(|a| matches!(a, Arg::Positional(p) if p != "-"));
    !inline && !program_file
}

/// True for a program that runs code in another language (`python3`, `node`, `perl`...).
pub fn is_interpreter(name: &str) -> bool {
    INTERPRETERS.iter().any(|(n, _)| *n == name)
}

/// The program of an `awk` given inline (not with `-f`).
pub fn awk_program<'a>(name: &str, args: &'a [Arg]) -> Option<&'a str> {
    if !matches!(name, "awk" | "gawk" | "mawk" | "nawk") {
        return None;
    }
    let mut positionals = args.iter().filter_map(|a| match a {
        Arg::Positional(p) => Some(p.as_str()),
        Arg::Flag { .. } => None,
    });
    let from_file = args
        .iter()
        .any(|a| matches!(a, Arg::Flag { name, .. } if name == "-f"));
    if from_file { None } else { positionals.next() }
}

/// Paths an inline program names in its string literals (`open("/home/a/.ssh/id_rsa")`,
/// `File.read('.env')`): whatever it does with them, a careful guard assumes it reads them.
pub fn code_paths(code: &str, reads: &mut Vec<String>) {
    let mut rest = code;
    while let Some(open) = rest.find(['"', '\'']) {
        let quote = rest.as_bytes()[open] as char;
        let inside = &rest[open + 1..];
        let Some(close) = inside.find(quote) else {
            break;
        };
        let literal = &inside[..close];
        rest = &inside[close + 1..];
        let path_like = !literal.is_empty()
            && !literal.contains(char::is_whitespace)
            && !literal.contains("://")
            && (literal.starts_with(['/', '~'])
                || literal.contains('/')
                || literal.starts_with('.')
                    && literal[1..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '.'));
        if path_like {
            let path = normalise_path(literal);
            if !reads.contains(&path) {
                reads.push(path);
            }
        }
    }
}

/// The inline programs an interpreter is handed (`python3 -c CODE`, `perl -e A -e B`,
/// `node -p CODE`), empty when it runs none.
pub fn inline_code<'a>(name: &str, args: &'a [Arg]) -> Vec<&'a str> {
    let Some((_, inline_flags)) = INTERPRETERS.iter().find(|(n, _)| *n == name) else {
        return Vec::new();
    };
    let mut code: Vec<&str> = args
        .iter()
        .filter_map(|a| match a {
            Arg::Flag {
                name,
                value: Some(v),
            } if inline_flags.contains(&name.as_str()) => Some(v.as_str()),
            _ => None,
        })
        .collect();
    // `deno eval CODE`.
    if inline_flags.contains(&"eval")
        && let [Arg::Positional(verb), Arg::Positional(program), ..] = args
        && verb == "eval"
    {
        code.push(program);
    }
    code
}

/// The effects of one command, from its name and normalised arguments.
pub fn effects_of(name: &str, args: &[Arg]) -> Effects {
    let mut effects = Effects::default();
    let positionals: Vec<&str> = positionals_of(args).collect();
    let flag = |wanted: &str| has_flag(args, wanted);
    let value = |wanted: &str| flag_value(args, wanted);
    let all = |list: &[&str]| list.iter().map(|p| normalise_path(p)).collect::<Vec<_>>();

    let base = name.split('.').next().unwrap_or(name);
    match name {
        "rm" | "unlink" | "rmdir" => effects.deletes = all(&positionals),
        "shred" => {
            effects.writes = all(&positionals);
            if flag("-u") {
                effects.deletes = all(&positionals);
            }
        }
        "truncate" | "touch" | "mkdir" | "mkfifo" | "mknod" | "tee" | "sponge" => {
            effects.writes = all(&positionals)
        }
        "cp" | "install" | "ln" | "rsync" | "scp" => {
            let (sources, destination) = sources_and_destination(&positionals, value("-t"));
            effects.reads = all(&sources);
            effects.writes = all(&destination);
            if name == "rsync" && (flag("--delete") || flag("--remove-source-files")) {
                effects.deletes = all(&destination);
            }
            let recursive = match name {
                "cp" => flag("-r") || flag("-R") || flag("-a") || flag("--recursive"),
                "rsync" => flag("-r") || flag("-a") || flag("--recursive") || flag("--archive"),
                "scp" => flag("-r"),
                _ => false,
            };
            if recursive {
                effects.searches = all(&sources
                    .iter()
                    .copied()
                    .filter(|p| !is_remote_path(p))
                    .collect::<Vec<_>>());
            }
        }
        "mv" => {
            let (sources, destination) = sources_and_destination(&positionals, value("-t"));
            effects.deletes = all(&sources);
            effects.writes = all(&destination);
        }
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" | "chcon" => {
            // `chmod -x FILE`: a mode that removes permissions reads as flags.
            let mode_as_flags = name == "chmod"
                && ["-r", "-w", "-x", "-X", "-s", "-t"]
                    .iter()
                    .any(|mode| flag(mode));
            let targets = if mode_as_flags || flag("--reference") || value("--reference").is_some()
            {
                &positionals[..]
            } else {
                positionals.get(1..).unwrap_or(&[])
            };
            effects.writes = all(targets);
        }
        "dd" => {
            for operand in &positionals {
                if let Some(target) = operand.strip_prefix("of=") {
                    effects.writes.push(normalise_path(target));
                } else if let Some(source) = operand.strip_prefix("if=") {
                    effects.reads.push(normalise_path(source));
                }
            }
        }
        "sed" | "gsed" => {
            let script_given = flag("-e") || flag("-f");
            let files = if script_given {
                &positionals[..]
            } else {
                positionals.get(1..).unwrap_or(&[])
            };
            if flag("-i") {
                effects.writes = all(files);
            } else {
                effects.reads = all(files);
            }
            let scripts = args.iter().filter_map(|a| match a {
                Arg::Flag {
                    name,
                    value: Some(v),
                } if name == "-e" => Some(v.as_str()),
                _ => None,
            });
            let inline = (!script_given)
                .then(|| positionals.first().copied())
                .flatten();
            for script in scripts.chain(inline) {
                let found = sed_script_effects(script);
                effects.runs_code |= found.runs_code;
                effects.writes.extend(found.writes);
                effects.reads.extend(found.reads);
            }
            if flag("-f") {
                effects.runs_code = true;
            }
        }
        "awk" | "gawk" | "mawk" | "nawk" => {
            let program_given = flag("-f");
            let program = (!program_given)
                .then(|| positionals.first().copied())
                .flatten();
            let files = if program_given {
                &positionals[..]
            } else {
                positionals.get(1..).unwrap_or(&[])
            };
            effects.reads = all(files);
            effects.runs_code = program_given || program.is_some_and(awk_program_acts);
            // gawk's `/inet/tcp/0/HOST/PORT` special files are sockets.
            effects.network |= program.is_some_and(|p| {
                p.contains("/inet/") || p.contains("/inet4/") || p.contains("/inet6/")
            });
        }
        "sort" => {
            effects.reads = all(&positionals);
            if let Some(output) = value("-o") {
                effects.writes.push(normalise_path(output));
            }
        }
        "uniq" => {
            effects.reads = all(positionals.get(..1).unwrap_or(&[]));
            effects.writes = all(positionals.get(1..2).unwrap_or(&[]));
        }
        "find" => find_effects(args, &positionals, &mut effects),
        "tar" => {
            let old_style = tar_old_style(args);
            let args = old_style.as_deref().unwrap_or(args);
            let flag = |wanted: &str| has_flag(args, wanted);
            let value = |wanted: &str| flag_value(args, wanted);
            let archive = value("-f").map(normalise_path);
            if flag("-c") || flag("-r") || flag("-u") {
                effects.writes.extend(archive);
                // Sources are relative to `-C DIR` when it is given.
                let sources: Vec<String> = args
                    .iter()
                    .filter_map(|a| match a {
                        Arg::Positional(p) => Some(match value("-C") {
                            Some(dir) if is_relative(p) => normalise_path(&format!("{dir}/{p}")),
                            _ => normalise_path(p),
                        }),
                        Arg::Flag { .. } => None,
                    })
                    .collect();
                effects.reads = sources.clone();
                effects.searches = sources;
            } else if flag("-x") {
                effects.reads.extend(archive);
                effects.writes.push(
                    value("-C")
                        .map(normalise_path)
                        .unwrap_or_else(|| ".".into()),
                );
            } else {
                effects.reads.extend(archive);
            }
        }
        "curl" | "wget" => {
            effects.network = true;
            for output in [value("-o"), value("-O").filter(|_| name == "wget")]
                .into_iter()
                .flatten()
            {
                if output != "-" {
                    effects.writes.push(normalise_path(output));
                }
            }
            for arg in args {
                let Arg::Flag {
                    name: flag_name,
                    value: Some(v),
                } = arg
                else {
                    continue;
                };
                let file = match flag_name.as_str() {
                    // `-F name=@file;type=x`, `-F name=<file`.
                    "-F" | "--form" => v
                        .split_once('=')
                        .and_then(|(_, content)| {
                            content
                                .strip_prefix('@')
                                .or_else(|| content.strip_prefix('<'))
                        })
                        .map(|file| file.split(';').next().unwrap_or(file)),
                    // `--data-urlencode name@file`.
                    "--data-urlencode" => v
                        .split_once('@')
                        .filter(|(name, _)| !name.contains('='))
                        .map(|(_, file)| file),
                    _ => v.strip_prefix('@').or_else(|| v.strip_prefix('<')),
                };
                if let Some(file) = file.filter(|f| !f.is_empty() && *f != "-") {
                    effects.reads.push(normalise_path(file));
                }
            }
            if let Some(file) = value("-T")
                .or(value("--post-file"))
                .or(value("--body-file"))
            {
                effects.reads.push(normalise_path(file));
            }
        }
        "git" => git_effects(args, &positionals, &mut effects),
        "http" | "https" | "xh" | "xhs" => {
            // Every word may be a file, as for unknown commands; the uploads are the paths
            // after `@` in `field@file`, `field=@file` and `field:=@file`.
            effects.reads = all(&positionals);
            for item in &positionals {
                // Not a URL's `user@`: its key has a scheme or a slash.
                if let Some((key, file)) = item.split_once('@')
                    && !key.is_empty()
                    && (key.ends_with(":=") || !key.contains(['/', ':']))
                    && !file.is_empty()
                {
                    effects.reads.push(normalise_path(file));
                }
            }
        }
        "zip" => zip_effects(args, &mut effects),
        "7z" | "7za" | "7zr" => {
            let operands: Vec<&str> = positionals
                .iter()
                .copied()
                .filter(|p| !p.starts_with('@'))
                .collect();
            match operands.as_slice() {
                ["a" | "u", archive, sources @ ..] => {
                    effects.writes.push(normalise_path(archive));
                    // With no sources, 7z adds the working directory.
                    let sources = if sources.is_empty() {
                        &["."][..]
                    } else {
                        sources
                    };
                    effects.reads = all(sources);
                    effects.searches = all(sources);
                }
                ["x" | "e", archive, ..] => {
                    effects.reads.push(normalise_path(archive));
                    effects.writes.push(
                        value("-o")
                            .map(normalise_path)
                            .unwrap_or_else(|| ".".into()),
                    );
                }
                [_, archive, ..] => effects.reads.push(normalise_path(archive)),
                _ => {}
            }
        }
        "systemctl" => {
            let verb = positionals.first().copied().unwrap_or("status");
            if !SYSTEMCTL_READ.contains(&verb) {
                effects.service_control = true;
            }
        }
        "service" => effects.service_control = positionals.len() >= 2 && positionals[1] != "status",
        "journalctl" => {
            let maintains = args.iter().any(|a| match a {
                Arg::Flag { name, .. } => {
                    name.starts_with("--vacuum")
                        || matches!(
                            name.as_str(),
                            "--rotate"
                                | "--flush"
                                | "--sync"
                                | "--relinquish-var"
                                | "--smart-relinquish-var"
                                | "--setup-keys"
                                | "--update-catalog"
                        )
                }
                Arg::Positional(_) => false,
            });
            if maintains {
                effects.writes.push("/var/log/journal".into());
                effects.deletes.extend(
                    args.iter()
                        .any(
                            |a| matches!(a, Arg::Flag { name, .. } if name.starts_with("--vacuum")),
                        )
                        .then(|| "/var/log/journal".to_owned()),
                );
            }
        }
        "crontab" => {
            if flag("-r") {
                effects.deletes.push("crontab".into());
            } else if flag("-e") || !positionals.is_empty() {
                effects.writes.push("crontab".into());
            }
        }
        "source" | "." => {
            effects.runs_code = true;
            effects.reads = all(&positionals[..positionals.len().min(1)]);
        }
        "vi" | "vim" | "nvim" | "view" | "gvim" | "ex" | "emacs" | "emacsclient" | "nano"
        | "pico" | "ed" | "joe" | "micro" | "mcedit" => {
            effects.writes = all(&positionals
                .iter()
                .copied()
                .filter(|p| !p.starts_with('+'))
                .collect::<Vec<_>>());
            let scripted = args.iter().any(|a| matches!(a, Arg::Flag { name, .. } if matches!(name.as_str(), "-c" | "--cmd" | "-S" | "--eval" | "-l" | "-f" | "--load" | "--funcall" | "--execute" | "-s")))
                || positionals.iter().any(|p| p.starts_with('+'));
            effects.runs_code = scripted;
        }
        "xargs" | "parallel" => {}
        _ if base == "mkfs"
            || base == "mke2fs"
            || base == "mkswap"
            || base == "wipefs"
            || base == "fdisk"
            || base == "sfdisk"
            || base == "parted"
            || base == "sgdisk"
            || base == "blkdiscard" =>
        {
            effects.writes = all(positionals.last().map(std::slice::from_ref).unwrap_or(&[]));
        }
        // `tree -o FILE` writes its listing to FILE.
        "tree" => effects.writes.extend(value("-o").map(normalise_path)),
        _ if NAMES_ONLY.contains(&name) => {}
        _ if PATTERN_FIRST.contains(&name) => {
            // `rg --files DIR` and `ack -f DIR` list files: there is no pattern.
            let lists_files =
                TREE_SEARCHERS.contains(&name) && (flag("--files") || name == "ack" && flag("-f"));
            let pattern_given = flag("-e") || flag("-f") || flag("--regexp") || lists_files;
            let files = if pattern_given {
                &positionals[..]
            } else {
                positionals.get(1..).unwrap_or(&[])
            };
            effects.reads = all(files);
            if let Some(file) = value("-f").filter(|_| !(name == "ack" && lists_files)) {
                effects.reads.push(normalise_path(file));
            }
            let recursive = TREE_SEARCHERS.contains(&name)
                || matches!(name, "grep" | "egrep" | "fgrep" | "zgrep")
                    && (flag("-r")
                        || flag("-R")
                        || flag("--recursive")
                        || flag("--dereference-recursive")
                        || value("-d") == Some("recurse")
                        || value("--directories") == Some("recurse"));
            if recursive {
                effects.searches = if files.is_empty() {
                    vec![".".to_owned()]
                } else {
                    all(files)
                };
            }
        }
        _ => {
            // Unknown commands: every positional may be a file they read. Over-counting reads
            // can only make a credential rule match more often, never less.
            effects.reads = all(&positionals);
        }
    }

    if let Some((_, inline_flags)) = INTERPRETERS.iter().find(|(n, _)| *n == name)
        && inline_flags.iter().any(|f| flag(f))
    {
        effects.runs_code = true;
    }
    effects.network |= NETWORK.contains(&name)
        || (name == "rsync" || name == "scp") && positionals.iter().any(|p| is_remote_path(p));
    effects.privilege |= PRIVILEGE.contains(&name);
    effects.process_control |= PROCESS_CONTROL.contains(&name);
    effects.service_control |= MACHINE_CONTROL.contains(&name);
    effects
}

fn sources_and_destination<'a>(
    positionals: &[&'a str],
    target: Option<&'a str>,
) -> (Vec<&'a str>, Vec<&'a str>) {
    match target {
        Some(directory) => (positionals.to_vec(), vec![directory]),
        None => match positionals.split_last() {
            Some((destination, sources)) if !sources.is_empty() => {
                (sources.to_vec(), vec![*destination])
            }
            Some((only, _)) => (vec![], vec![*only]),
            None => (vec![], vec![]),
        },
    }
}

/// `tar czf out.tgz dir`: a first word without a dash is a bundle of option letters whose
/// values follow in order. The arguments as if written `tar -c -z -f out.tgz dir`.
fn tar_old_style(args: &[Arg]) -> Option<Vec<Arg>> {
    let Some(Arg::Positional(bundle)) = args.first() else {
        return None;
    };
    if bundle.is_empty()
        || !bundle.bytes().all(|b| b.is_ascii_alphabetic())
        || !bundle.contains(['c', 'x', 't', 'r', 'u', 'A', 'd'])
    {
        return None;
    }
    let mut rest: Vec<Arg> = args[1..].to_vec();
    let mut flags = Vec::new();
    for letter in bundle.chars() {
        let name = normalise_flag("tar", &format!("-{letter}")).into_owned();
        let value = if takes_value("tar", &name) {
            rest.iter()
                .position(|a| matches!(a, Arg::Positional(_)))
                .and_then(|at| match rest.remove(at) {
                    Arg::Positional(value) => Some(value),
                    Arg::Flag { .. } => None,
                })
        } else {
            None
        };
        flags.push(Arg::Flag { name, value });
    }
    flags.extend(rest);
    Some(flags)
}

/// `zip [-r] ARCHIVE SOURCE...`: the archive is written, the sources read, and with `-r` (or
/// `-R`) their whole trees. zip's options are read here, not by the flag tables, because `-x`
/// and `-i` take lists.
fn zip_effects(args: &[Arg], effects: &mut Effects) {
    let mut operands: Vec<&str> = Vec::new();
    let mut recursive = false;
    let mut in_list = false;
    let mut skip_next = false;
    for arg in args {
        match arg {
            Arg::Flag { name, value } => {
                // A value the flag tables already attached is not the next word.
                in_list = ZIP_LISTS.contains(&name.as_str());
                skip_next = value.is_none() && ZIP_VALUED.contains(&name.as_str());
                recursive |= matches!(
                    name.as_str(),
                    "-r" | "-R" | "--recurse-paths" | "--recurse-patterns"
                );
            }
            Arg::Positional(_) if skip_next => skip_next = false,
            Arg::Positional(_) if in_list => {}
            Arg::Positional(p) => operands.push(p),
        }
    }
    let Some((archive, sources)) = operands.split_first() else {
        return;
    };
    effects.writes.push(normalise_path(archive));
    effects.reads = sources.iter().map(|p| normalise_path(p)).collect();
    if recursive {
        effects.searches = effects.reads.clone();
    }
}

pub(crate) fn is_remote_path(path: &str) -> bool {
    match path.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/'),
        None => false,
    }
}

fn find_effects(args: &[Arg], positionals: &[&str], effects: &mut Effects) {
    // Start points are the positionals before the first predicate.
    let mut starts = Vec::new();
    for arg in args {
        match arg {
            Arg::Positional(p) if !p.starts_with('(') && !p.starts_with('!') => {
                starts.push(p.as_str())
            }
            _ => break,
        }
    }
    let _ = positionals;
    let roots: Vec<String> = if starts.is_empty() {
        vec![".".to_owned()]
    } else {
        starts.iter().map(|p| normalise_path(p)).collect()
    };
    // An action run on every file found reads the whole tree.
    if args.iter().any(|a| {
        matches!(a, Arg::Flag { name, .. }
            if matches!(name.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"))
    }) {
        effects.searches.extend(roots.iter().cloned());
    }
    for arg in args {
        if let Arg::Flag { name, value } = arg {
            match name.as_str() {
                "-delete" => effects.deletes.extend(roots.iter().cloned()),
                "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                    effects.writes.extend(value.as_deref().map(normalise_path))
                }
                _ => {}
            }
        }
    }
    effects.reads.extend(roots);
}

fn git_effects(args: &[Arg], positionals: &[&str], effects: &mut Effects) {
    // `git -c key=value` can set a pager, an editor, an alias or an ssh command: code.
    if args.iter().any(|a| matches!(a, Arg::Flag { name, .. } if name == "-c" || name == "--exec-path" || name == "--upload-pack" || name == "--receive-pack" || name == "--exec")) {
        effects.runs_code = true;
    }
    let sub = positionals.first().copied().unwrap_or("");
    match sub {
        "clone" | "fetch" | "pull" | "push" | "ls-remote" | "submodule" | "remote"
            if sub != "remote"
                || positionals
                    .get(1)
                    .is_some_and(|v| *v == "update" || *v == "prune") =>
        {
            effects.network = true;
        }
        _ => {}
    }
    if sub == "config"
        && positionals.iter().any(|p| {
            p.starts_with("alias.")
                || p.contains("pager")
                || p.contains("editor")
                || p.contains("sshcommand")
                || p.contains("sshCommand")
                || p.contains("hooksPath")
                || p.contains("fsmonitor")
        })
    {
        effects.runs_code = true;
    }
    if matches!(sub, "clean" | "rm") {
        effects.deletes.extend(
            positionals
                .get(1..)
                .unwrap_or(&[])
                .iter()
                .map(|p| normalise_path(p)),
        );
        if positionals.len() == 1 {
            effects.deletes.push(".".into());
        }
    }
}

/// True when an awk program runs commands or writes files: `system()`, pipes, `>` redirection,
/// or `getline` from a command.
fn awk_program_acts(program: &str) -> bool {
    // Strings inside the program are skipped so that `print "a > b"` stays read-only.
    let mut outside = String::with_capacity(program.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in program.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        if c == '"' {
            in_string = true;
            outside.push(' ');
        } else {
            outside.push(c);
        }
    }
    outside.contains("system")
        || outside.contains('|')
        || outside.contains('>') && !comparison_only(&outside)
        || outside.contains("getline")
        || outside.contains("close(")
        || outside.contains("fflush")
}

/// `>` used only as a comparison (`$3 > 100`) inside a pattern, before any `{`.
fn comparison_only(program: &str) -> bool {
    let mut depth = 0usize;
    let mut in_action_write = false;
    let bytes = program.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b'>' if depth > 0 => {
                // Inside an action, `>` after print/printf is output redirection.
                let before = &program[..i];
                let statement = before.rsplit([';', '{', '\n']).next().unwrap_or("");
                if statement.contains("print") {
                    in_action_write = true;
                }
            }
            _ => {}
        }
    }
    !in_action_write
}

#[derive(Default)]
struct SedFound {
    runs_code: bool,
    writes: Vec<String>,
    reads: Vec<String>,
}

/// Scans a sed script for the commands that leave sed: `e` (run), `w`/`W` (write), `r`/`R` (read),
/// and the `e` and `w` flags of `s`. When the scan loses its way it assumes the worst.
fn sed_script_effects(script: &str) -> SedFound {
    let mut found = SedFound::default();
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let rest_of_line = |i: usize| -> (String, usize) {
        let mut end = i;
        while end < chars.len() && chars[end] != '\n' {
            end += 1;
        }
        (
            chars[i..end].iter().collect::<String>().trim().to_owned(),
            end,
        )
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' | ';' | '{' | '}' | '!' | ',' | '$' | '0'..='9' | '~' | '+' => i += 1,
            '/' | '\\' => {
                // An address regex: /re/ or \cREc.
                let delimiter = if c == '\\' {
                    i += 1;
                    match chars.get(i) {
                        Some(&d) => d,
                        None => break,
                    }
                } else {
                    '/'
                };
                i += 1;
                i = skip_delimited(&chars, i, delimiter);
                // Address flags I and M.
                while i < chars.len() && matches!(chars[i], 'I' | 'M') {
                    i += 1;
                }
            }
            's' | 'y' => {
                let Some(&delimiter) = chars.get(i + 1) else {
                    found.runs_code = true;
                    break;
                };
                i += 2;
                i = skip_delimited(&chars, i, delimiter);
                i = skip_delimited(&chars, i, delimiter);
                if c == 's' {
                    while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                        match chars[i] {
                            'e' => found.runs_code = true,
                            'w' => {
                                let (file, end) = rest_of_line(i + 1);
                                found.writes.push(normalise_path(&file));
                                i = end;
                                continue;
                            }
                            _ => {}
                        }
                        i += 1;
                    }
                }
            }
            'e' => {
                found.runs_code = true;
                let (_, end) = rest_of_line(i + 1);
                i = end;
            }
            'w' | 'W' | 'r' | 'R' => {
                let (file, end) = rest_of_line(i + 1);
                if matches!(c, 'w' | 'W') {
                    found.writes.push(normalise_path(&file));
                } else {
                    found.reads.push(normalise_path(&file));
                }
                i = end;
            }
            'a' | 'i' | 'c' => {
                // Text commands consume the rest of the line.
                let (_, end) = rest_of_line(i + 1);
                i = end;
            }
            ':' | 'b' | 't' | 'T' | 'l' | 'L' | 'q' | 'Q' => {
                // Labels and branch targets run to the end of the command.
                i += 1;
                while i < chars.len() && !matches!(chars[i], ';' | '\n') {
                    i += 1;
                }
            }
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'z' | 'F' => {
                i += 1
            }
            _ => {
                found.runs_code = true;
                break;
            }
        }
    }
    found
}

fn skip_delimited(chars: &[char], mut i: usize, delimiter: char) -> usize {
    while i < chars.len() {
        if chars[i] == '\\' {
            i += 2;
            continue;
        }
        if chars[i] == delimiter {
            return i + 1;
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts_that_leave_sed_are_found() {
        assert!(sed_script_effects("1e rm -rf /").runs_code);
        assert!(sed_script_effects("s/a/b/e").runs_code);
        assert_eq!(
            sed_script_effects("s/a/b/w /etc/passwd").writes,
            vec!["/etc/passwd"]
        );
        assert_eq!(
            sed_script_effects("w /etc/passwd").writes,
            vec!["/etc/passwd"]
        );
        let plain = sed_script_effects("s/foo/bar/g; /^#/d; 1,5p");
        assert!(!plain.runs_code && plain.writes.is_empty());
        assert!(!sed_script_effects("s/e/w/g").runs_code);
    }

    #[test]
    fn awk_programs_that_act_are_found() {
        assert!(awk_program_acts("{ system(\"rm -rf /\") }"));
        assert!(awk_program_acts("{ print > \"/etc/passwd\" }"));
        assert!(awk_program_acts("{ print | \"sh\" }"));
        assert!(!awk_program_acts("{ print $1 }"));
        assert!(!awk_program_acts("$3 > 100 { print $1 }"));
        assert!(!awk_program_acts("{ print \"a > b | c\" }"));
    }
}
