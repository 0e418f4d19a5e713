//! Wrappers: commands that run another command. Each is judged itself, and so is what it runs.

use crate::word::Field;
use nightwatch_core::flags::takes_value;
use nightwatch_core::{Remote, RemoteKind};

/// What a wrapper runs.
#[derive(Debug)]
pub enum Inner {
    /// Another command, given as words (`sudo rm x`, `xargs rm`, `find -exec rm {} ;`).
    Argv {
        fields: Vec<Field>,
        label: String,
        remote: Option<Remote>,
        /// More arguments arrive on standard input (`xargs`).
        args_from_stdin: bool,
    },
    /// A shell script given as text (`bash -c`, `eval`, `ssh host CMD`, `watch`, `su -c`).
    Script {
        text: Field,
        label: String,
        remote: Option<Remote>,
    },
    /// A shell that reads its script from standard input.
    ScriptFromStdin { label: String },
    /// A shell running a script file (`bash deploy.sh`, `bash <(curl ...)`).
    ScriptFile { path: Field },
}

pub const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "ash",
    "yash",
    "fish",
    "rbash",
    "busybox-sh",
];

/// The commands that `argv` (already normalised: `argv[0]` is a bare name) runs inside itself.
pub fn unwrap(name: &str, argv: &[Field]) -> Vec<Inner> {
    let label = name.to_owned();
    let argv_inner = |start: usize, label: String| -> Vec<Inner> {
        match argv.get(start..) {
            Some(rest) if !rest.is_empty() => vec![Inner::Argv {
                fields: rest.to_vec(),
                label,
                remote: None,
                args_from_stdin: false,
            }],
            _ => Vec::new(),
        }
    };
    match name {
        "sudo" => {
            let start = command_start(name, argv);
            let shell_flag = argv[1..start]
                .iter()
                .any(|f| matches!(f.text.as_str(), "-s" | "-i" | "--shell" | "--login"));
            if shell_flag && argv.len() > start {
                // `sudo -s CMD` runs CMD through the shell: `-c` with the rest joined.
                return vec![Inner::Script {
                    text: join(&argv[start..]),
                    label,
                    remote: None,
                }];
            }
            argv_inner(start, label)
        }
        "doas" => argv_inner(skip_options(argv, 1, name), label),
        "pkexec" => argv_inner(skip_options(argv, 1, name), label),
        "runuser" | "su" => {
            if let Some(script) =
                option_value(argv, &["-c", "--command", "-C", "--session-command"])
            {
                return vec![Inner::Script {
                    text: script,
                    label: format!("{name} -c"),
                    remote: None,
                }];
            }
            if name == "runuser" {
                let start = skip_options(argv, 1, name);
                return argv_inner(start, label);
            }
            Vec::new()
        }
        "env" => {
            if let Some(split) = option_value(argv, &["-S", "--split-string"]) {
                return vec![Inner::Script {
                    text: split,
                    label: "env -S".into(),
                    remote: None,
                }];
            }
            argv_inner(command_start(name, argv), label)
        }
        "nice" => {
            let start = skip_options(argv, 1, name);
            argv_inner(start, label)
        }
        "ionice" => {
            let start = skip_options(argv, 1, name);
            argv_inner(start, label)
        }
        "nohup" | "setsid" | "builtin" | "unbuffer" | "catchsegv" | "strace" | "ltrace"
        | "torsocks" | "proxychains" | "proxychains4" | "faketime" => {
            let mut start = skip_options(argv, 1, name);
            if name == "faketime" {
                start += 1;
            }
            argv_inner(start, label)
        }
        "stdbuf" => argv_inner(skip_options(argv, 1, name), label),
        "timeout" => {
            let start = skip_options(argv, 1, name);
            argv_inner(start + 1, label)
        }
        "chroot" => {
            let start = skip_options(argv, 1, name);
            argv_inner(start + 1, label)
        }
        "flock" => {
            if let Some(script) = option_value(argv, &["-c", "--command"]) {
                return vec![Inner::Script {
                    text: script,
                    label: "flock -c".into(),
                    remote: None,
                }];
            }
            let start = skip_options(argv, 1, name);
            argv_inner(start + 1, label)
        }
        "watch" => {
            let start = skip_options(argv, 1, name);
            let exec_mode = argv[1..start]
                .iter()
                .any(|f| f.text == "-x" || f.text == "--exec");
            if exec_mode {
                return argv_inner(start, label);
            }
            match argv.get(start..) {
                Some(rest) if !rest.is_empty() => vec![Inner::Script {
                    text: join(rest),
                    label,
                    remote: None,
                }],
                _ => Vec::new(),
            }
        }
        "time" => argv_inner(skip_options(argv, 1, name), label),
        "command" => {
            let lookup_only = argv[1..]
                .iter()
                .take_while(|f| f.text.starts_with('-'))
                .any(|f| f.text.contains('v') || f.text.contains('V'));
            if lookup_only {
                return Vec::new();
            }
            argv_inner(skip_options(argv, 1, name), label)
        }
        "exec" => argv_inner(skip_options(argv, 1, name), label),
        "xargs" => {
            let start = skip_options(argv, 1, name);
            let fields = match argv.get(start..) {
                Some(rest) if !rest.is_empty() => rest.to_vec(),
                // xargs with no command runs echo.
                _ => vec![Field::literal("echo")],
            };
            vec![Inner::Argv {
                fields,
                label,
                remote: None,
                args_from_stdin: true,
            }]
        }
        "find" => find_actions(argv),
        "eval" => match argv.get(1..) {
            Some(rest) if !rest.is_empty() => vec![Inner::Script {
                text: join(rest),
                label,
                remote: None,
            }],
            _ => Vec::new(),
        },
        "ssh" => ssh(argv),
        "docker" | "podman" => docker_exec(name, argv),
        "kubectl" | "oc" => kubectl_exec(name, argv),
        "script" => match option_value(argv, &["-c", "--command"]) {
            Some(text) => vec![Inner::Script {
                text,
                label: "script -c".into(),
                remote: None,
            }],
            None => Vec::new(),
        },
        "busybox" => argv_inner(1, label),
        "vi" | "vim" | "nvim" | "view" | "gvim" | "ex" => editor_commands(name, argv),
        _ if SHELLS.contains(&name) => shell(name, argv),
        _ => Vec::new(),
    }
}

/// `bash -c STRING`, `bash -lc STRING`, `bash script.sh`, or `bash` reading stdin.
fn shell(name: &str, argv: &[Field]) -> Vec<Inner> {
    let mut index = 1;
    let mut command_mode = false;
    let mut stdin_mode = false;
    while index < argv.len() {
        let word = argv[index].text.as_str();
        if word == "--" || word == "-" {
            index += 1;
            break;
        }
        if !(word.starts_with('-') || word.starts_with('+')) || word.len() < 2 {
            break;
        }
        index += 1;
        if word.starts_with("--") {
            if matches!(word, "--rcfile" | "--init-file") {
                index += 1;
            }
            continue;
        }
        let body = &word[1..];
        if body.contains('c') {
            command_mode = true;
        }
        if body.contains('s') {
            stdin_mode = true;
        }
        // -o OPTION and -O OPTION take the next word.
        if body.ends_with('o') || body.ends_with('O') {
            index += 1;
        }
    }
    let label = if command_mode {
        format!("{name} -c")
    } else {
        name.to_owned()
    };
    if command_mode {
        return match argv.get(index) {
            Some(script) => vec![Inner::Script {
                text: script.clone(),
                label,
                remote: None,
            }],
            None => Vec::new(),
        };
    }
    match argv.get(index) {
        Some(path) if !stdin_mode => vec![Inner::ScriptFile { path: path.clone() }],
        _ => vec![Inner::ScriptFromStdin { label }],
    }
}

/// `find ... -exec CMD {} ;` and friends.
fn find_actions(argv: &[Field]) -> Vec<Inner> {
    let mut inners = Vec::new();
    let mut index = 1;
    while index < argv.len() {
        let word = argv[index].text.as_str();
        index += 1;
        if matches!(word, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = index;
            while index < argv.len() && !matches!(argv[index].text.as_str(), ";" | "+") {
                index += 1;
            }
            if index > start {
                inners.push(Inner::Argv {
                    fields: argv[start..index].to_vec(),
                    label: format!("find {word}"),
                    remote: None,
                    args_from_stdin: false,
                });
            }
            index += 1;
        }
    }
    inners
}

fn ssh(argv: &[Field]) -> Vec<Inner> {
    let host_index = skip_options(argv, 1, "ssh");
    let Some(host) = argv.get(host_index) else {
        return Vec::new();
    };
    match argv.get(host_index + 1..) {
        Some(rest) if !rest.is_empty() => vec![Inner::Script {
            // The remote shell joins the words with spaces and parses the result again.
            text: join(rest),
            label: format!("ssh {}", host.text),
            remote: Some(Remote {
                kind: RemoteKind::Ssh,
                target: host.text.clone(),
            }),
        }],
        _ => Vec::new(),
    }
}

fn docker_exec(name: &str, argv: &[Field]) -> Vec<Inner> {
    let global = skip_options(argv, 1, name);
    let mut index = global;
    let sub = argv.get(index).map(|f| f.text.as_str());
    let compose = matches!(sub, Some("compose"));
    if compose {
        index = skip_options(argv, index + 1, "docker-compose");
    }
    if argv.get(index).map(|f| f.text.as_str()) != Some("exec") {
        return Vec::new();
    }
    let target_index = skip_options(argv, index + 1, name);
    let Some(target) = argv.get(target_index) else {
        return Vec::new();
    };
    match argv.get(target_index + 1..) {
        Some(rest) if !rest.is_empty() => vec![Inner::Argv {
            fields: rest.to_vec(),
            label: format!("{name} exec {}", target.text),
            remote: Some(Remote {
                kind: RemoteKind::DockerExec,
                target: target.text.clone(),
            }),
            args_from_stdin: false,
        }],
        _ => Vec::new(),
    }
}

fn kubectl_exec(name: &str, argv: &[Field]) -> Vec<Inner> {
    let Some(exec_at) = argv.iter().position(|f| f.text == "exec") else {
        return Vec::new();
    };
    let Some(dashes) = argv.iter().position(|f| f.text == "--") else {
        return Vec::new();
    };
    if dashes < exec_at {
        return Vec::new();
    }
    let mut target = String::from("?");
    let mut index = exec_at + 1;
    while index < dashes {
        let word = argv[index].text.as_str();
        if word.starts_with('-') && !word.contains('=') && takes_value(name, word) {
            index += 2;
            continue;
        }
        if !word.starts_with('-') {
            target = word.to_owned();
        }
        index += 1;
    }
    match argv.get(dashes + 1..) {
        Some(rest) if !rest.is_empty() => vec![Inner::Argv {
            fields: rest.to_vec(),
            label: format!("{name} exec {target}"),
            remote: Some(Remote {
                kind: RemoteKind::KubectlExec,
                target,
            }),
            args_from_stdin: false,
        }],
        _ => Vec::new(),
    }
}

/// `vim -c ':!rm -rf /'` runs a shell command; other editor commands are code too (marked by
/// effects), but only `!` commands are shell lines we can judge.
fn editor_commands(name: &str, argv: &[Field]) -> Vec<Inner> {
    let mut inners = Vec::new();
    let mut index = 1;
    while index < argv.len() {
        let word = argv[index].text.as_str();
        let command = if matches!(word, "-c" | "--cmd") {
            index += 1;
            argv.get(index).map(|f| f.text.as_str())
        } else {
            word.strip_prefix('+')
        };
        index += 1;
        if let Some(command) = command {
            let command = command.trim_start_matches(':').trim_start();
            if let Some(shell) = command.strip_prefix('!') {
                inners.push(Inner::Script {
                    text: Field {
                        text: shell.to_owned(),
                        literal: argv.iter().all(|f| f.literal),
                        names: Vec::new(),
                        quoted_tilde: false,
                    },
                    label: format!("{name} -c !"),
                    remote: None,
                });
            }
        }
    }
    inners
}

/// Index of the first word at or after `start` that is not an option or an option's value,
/// reading options the way getopt does with `program`'s flag table (the same one `split_args`
/// uses): `-p 22`, `-p22`, `-vp 22`, `--port 22`, `--port=22`, and `--` ending them.
fn skip_options(argv: &[Field], start: usize, program: &str) -> usize {
    let mut index = start;
    while index < argv.len() {
        let word = argv[index].text.as_str();
        if word == "--" {
            return index + 1;
        }
        if !word.starts_with('-') || word.len() < 2 {
            return index;
        }
        index += 1;
        if word.starts_with("--") {
            if !word.contains('=') && takes_value(program, word) {
                index += 1;
            }
            continue;
        }
        let body = &word[1..];
        for (offset, c) in body.char_indices() {
            if takes_value(program, &format!("-{c}")) {
                // The value is the rest of the word, or the next word when nothing is left.
                if offset + c.len_utf8() == body.len() {
                    index += 1;
                }
                break;
            }
        }
    }
    index.min(argv.len())
}

/// Where the command `env` or `sudo` runs begins: after their options, `env`'s lone `-`
/// (`-i`), and every `NAME=VALUE`. Both take any word with a `=` past its first character as an
/// assignment (`env A-B=1 rm x` runs `rm`), so the same test is used here.
fn command_start(name: &str, argv: &[Field]) -> usize {
    assignments(name, argv).end
}

/// The indices of the `NAME=VALUE` words of `env` or `sudo`.
fn assignments(name: &str, argv: &[Field]) -> std::ops::Range<usize> {
    let mut start = skip_options(argv, 1, name);
    if name == "env" && argv.get(start).is_some_and(|f| f.text == "-") {
        start += 1;
    }
    let mut end = start;
    while argv
        .get(end)
        .is_some_and(|f| assigned_name(&f.text).is_some())
    {
        end += 1;
    }
    start.min(end)..end
}

/// The variable `NAME=VALUE` sets for the command after `env` or `sudo`.
fn assigned_name(word: &str) -> Option<&str> {
    match word.split_once('=') {
        Some((name, _)) if !name.is_empty() => Some(name),
        _ => None,
    }
}

/// What `env` or `sudo` sets in the environment of the command it runs (`env A=1 cmd`,
/// `sudo A=1 cmd`): the names, and whether a command follows at all (`env` alone prints the
/// environment). `None` for other commands.
pub fn wrapper_assignments(name: &str, argv: &[Field]) -> Option<(Vec<String>, bool)> {
    if name != "env" && name != "sudo" {
        return None;
    }
    let words = assignments(name, argv);
    let names = argv
        .get(words.clone())
        .unwrap_or(&[])
        .iter()
        .filter_map(|f| assigned_name(&f.text))
        .map(str::to_owned)
        .collect();
    Some((names, words.end < argv.len()))
}

/// The value of the first of `names` in `argv`: `-c VALUE`, `--command=VALUE`, or a short bundle
/// ending in the flag (`-lc VALUE`).
fn option_value(argv: &[Field], names: &[&str]) -> Option<Field> {
    let mut index = 1;
    while index < argv.len() {
        let word = argv[index].text.as_str();
        if word == "--" {
            return None;
        }
        for name in names {
            if word == *name {
                return argv.get(index + 1).cloned();
            }
            if let Some(value) = word
                .strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('='))
            {
                return Some(Field {
                    text: value.to_owned(),
                    literal: argv[index].literal,
                    names: argv[index].names.clone(),
                    quoted_tilde: false,
                });
            }
            if let Some(short) = name.strip_prefix('-')
                && short.len() == 1
                && word.starts_with('-')
                && !word.starts_with("--")
                && word.len() > 2
                && word.ends_with(short)
            {
                return argv.get(index + 1).cloned();
            }
        }
        index += 1;
    }
    None
}

/// Words joined with spaces, as `eval`, `ssh` and `watch` do before parsing them again.
fn join(fields: &[Field]) -> Field {
    let mut names: Vec<String> = Vec::new();
    for name in fields.iter().flat_map(|f| &f.names) {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    Field {
        text: fields
            .iter()
            .map(|f| f.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        literal: fields.iter().all(|f| f.literal),
        names,
        quoted_tilde: false,
    }
}
