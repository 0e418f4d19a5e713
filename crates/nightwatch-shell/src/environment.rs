//! Environment variables: which ones a command sets, and which ones' values it prints, writes
//! or sends.
//!
//! Setting is read from every spelling that puts a variable in a command's environment or the
//! shell's (`VAR=x cmd`, `env VAR=x cmd`, `sudo VAR=x cmd`, `export`, `declare -x`, ...).
//! Revealing is read from the variables a word expands ([`Field::names`]) when the command that
//! receives the word prints, writes or sends its arguments, from a here-string or here-document
//! that expands them into a command that prints its input, from the commands that dump the
//! whole environment, and from inline programs that read it (`os.environ["X"]`).

use crate::effects::CODE_VARIABLES;
use crate::effects::{has_flag, positionals_of};
use crate::word::Field;
use crate::wrappers::wrapper_assignments;
use nightwatch_core::{Arg, Effects};

/// The whole environment, in `reveals_env` and `sets_env`.
pub const ALL: &str = "*";

/// Commands that print, write or send their arguments.
fn reveals_arguments(name: &str) -> bool {
    matches!(
        name,
        "echo"
            | "printf"
            | "print"
            | "logger"
            | "wall"
            | "write"
            | "notify-send"
            | "mail"
            | "mailx"
            | "sendmail"
            | "ssmtp"
            | "msmtp"
            | "curl"
            | "wget"
            | "http"
            | "https"
            | "xh"
            | "xhs"
            | "nc"
            | "ncat"
            | "netcat"
            | "socat"
            | "telnet"
            | "ssh"
            | "scp"
            | "sftp"
            | "rsync"
    )
}

/// Commands that print, write or send what arrives on their standard input (so a here-string
/// or here-document that expands a variable into them reveals it). Commands that only consume
/// it (`gh auth login --with-token`, `docker login --password-stdin`) are not here.
fn reveals_input(name: &str) -> bool {
    matches!(
        name,
        "cat"
            | "tac"
            | "tee"
            | "head"
            | "tail"
            | "less"
            | "more"
            | "most"
            | "grep"
            | "egrep"
            | "fgrep"
            | "rg"
            | "sed"
            | "gsed"
            | "awk"
            | "gawk"
            | "mawk"
            | "nawk"
            | "tr"
            | "cut"
            | "sort"
            | "uniq"
            | "rev"
            | "base64"
            | "base32"
            | "basenc"
            | "xxd"
            | "od"
            | "hexdump"
            | "strings"
            | "jq"
            | "yq"
            | "fold"
            | "nl"
            | "column"
            | "paste"
            | "fmt"
            | "iconv"
            | "dd"
            | "openssl"
            | "xclip"
            | "xsel"
            | "pbcopy"
            | "wl-copy"
    ) || reveals_arguments(name) && !matches!(name, "echo" | "printf" | "print")
}

/// Commands that set or list variables through their arguments.
fn handles_variables(name: &str) -> bool {
    matches!(
        name,
        "env"
            | "sudo"
            | "export"
            | "declare"
            | "typeset"
            | "local"
            | "readonly"
            | "set"
            | "printenv"
            | "launchctl"
            | "systemctl"
            | "ps"
    )
}

/// Fills `sets_env` and `reveals_env` for one command. `stdin_names` are the variables a
/// here-string or here-document expands into its standard input.
pub fn environment_effects(
    name: &str,
    args: &[Arg],
    fields: &[Field],
    stdin_names: &[String],
    effects: &mut Effects,
) {
    let reveals_input = !stdin_names.is_empty() && reveals_input(name);
    if !(handles_variables(name) || reveals_arguments(name) || reveals_input) {
        return;
    }
    let flag = |wanted: &str| has_flag(args, wanted);
    let positionals: Vec<&str> = positionals_of(args).collect();

    if let Some((assigned, runs_command)) = wrapper_assignments(name, fields) {
        for set in &assigned {
            // A name known only at runtime may be any variable.
            let set = if set.contains(['$', '`']) { ALL } else { set };
            add(&mut effects.sets_env, set);
        }
        if name == "sudo" {
            sudo_preserved(args, effects);
        }
        // `env` with no command prints the environment, unless `-i` emptied it first.
        let emptied = flag("-i") || fields.get(1).is_some_and(|f| f.text == "-");
        if name == "env" && !runs_command && !emptied && !flag("-S") {
            add(&mut effects.reveals_env, ALL);
        }
    }

    match name {
        "export" => {
            if flag("-p") || positionals.is_empty() && !flag("-n") && !flag("-f") {
                add(&mut effects.reveals_env, ALL);
            } else if flag("-f") && !flag("-n") {
                exported_functions(&positionals, effects);
            } else if !flag("-n") {
                add_all(
                    &mut effects.sets_env,
                    positionals.iter().filter_map(|p| variable_of(p)),
                );
            }
        }
        "declare" | "typeset" | "local" | "readonly" => {
            let functions = flag("-f") || flag("-F");
            if flag("-x") && flag("-f") {
                exported_functions(&positionals, effects);
            }
            if flag("-x") && !functions {
                add_all(
                    &mut effects.sets_env,
                    positionals.iter().filter_map(|p| variable_of(p)),
                );
            }
            // `declare`, `declare -p` and `declare -x` alone list variables with their values.
            let lists = name != "local" && name != "readonly" && !functions;
            if lists && positionals.is_empty() {
                add(&mut effects.reveals_env, ALL);
            } else if lists && flag("-p") {
                add_all(
                    &mut effects.reveals_env,
                    positionals.iter().filter_map(|p| variable_of(p)),
                );
            }
        }
        "set" if fields.len() == 1 => add(&mut effects.reveals_env, ALL),
        "printenv" => {
            if positionals.is_empty() {
                add(&mut effects.reveals_env, ALL);
            }
            for wanted in &positionals {
                match variable_of(wanted) {
                    Some(variable) if !wanted.contains('=') => {
                        add(&mut effects.reveals_env, variable)
                    }
                    _ => add(&mut effects.reveals_env, ALL),
                }
            }
        }
        "launchctl" => match positionals.as_slice() {
            ["setenv", pairs @ ..] => add_all(
                &mut effects.sets_env,
                pairs.iter().step_by(2).filter_map(|p| variable_of(p)),
            ),
            ["getenv", wanted, ..] => {
                add(&mut effects.reveals_env, variable_of(wanted).unwrap_or(ALL))
            }
            _ => {}
        },
        "systemctl" => match positionals.as_slice() {
            ["set-environment", assignments @ ..] => add_all(
                &mut effects.sets_env,
                assignments.iter().filter_map(|p| variable_of(p)),
            ),
            ["import-environment"] => add(&mut effects.sets_env, ALL),
            ["import-environment", wanted @ ..] => add_all(
                &mut effects.sets_env,
                wanted.iter().filter_map(|p| variable_of(p)),
            ),
            ["show-environment", ..] => add(&mut effects.reveals_env, ALL),
            _ => {}
        },
        // `ps e`, `ps auxe`: BSD-style options with `e` print every process's environment.
        "ps" if positionals
            .iter()
            .any(|p| p.bytes().all(|b| b.is_ascii_alphabetic()) && p.contains('e')) =>
        {
            add(&mut effects.reveals_env, ALL)
        }
        _ => {}
    }

    if reveals_arguments(name) && !(name == "printf" && flag("-v")) {
        for field in revealed_arguments(name, fields) {
            add_all(
                &mut effects.reveals_env,
                field.names.iter().map(String::as_str),
            );
        }
    }
    if reveals_input {
        add_all(
            &mut effects.reveals_env,
            stdin_names.iter().map(String::as_str),
        );
    }

    if effects
        .sets_env
        .iter()
        .any(|set| CODE_VARIABLES.contains(&set.as_str()))
    {
        effects.runs_code = true;
    }
}

/// `export -f NAME` puts the function in the environment as `BASH_FUNC_NAME%%`, which every
/// bash started below defines.
fn exported_functions(names: &[&str], effects: &mut Effects) {
    for name in names {
        let set = if name.contains(['$', '`']) {
            ALL.to_owned()
        } else {
            format!("BASH_FUNC_{name}%%")
        };
        add(&mut effects.sets_env, &set);
    }
}

/// `sudo --preserve-env=A,B` keeps A and B; `sudo -E` keeps everything.
fn sudo_preserved(args: &[Arg], effects: &mut Effects) {
    for arg in args {
        if let Arg::Flag { name, value } = arg
            && matches!(name.as_str(), "-E" | "--preserve-env")
        {
            match value {
                Some(list) => add_all(
                    &mut effects.sets_env,
                    list.split(',').filter(|n| is_variable(n)),
                ),
                None => add(&mut effects.sets_env, ALL),
            }
        }
    }
}

/// The words whose expansions a command reveals: every argument, except what only
/// authenticates the request to its host (`curl -H "Authorization: Bearer $T"`, an httpie
/// `Header:value` item).
fn revealed_arguments<'a>(name: &str, fields: &'a [Field]) -> Vec<&'a Field> {
    // wget's `-H` spans hosts; only its `--header` is a header.
    let short_header = name == "curl";
    let headers_by_flag = short_header || name == "wget";
    let headers_as_items = matches!(name, "http" | "https" | "xh" | "xhs");
    let mut revealed = Vec::new();
    let mut header_next = false;
    for field in fields.iter().skip(1) {
        if header_next {
            header_next = false;
            continue;
        }
        let text = field.text.as_str();
        if headers_by_flag {
            let short = short_header && (text == "-H" || is_short_bundle_ending_in(text, 'H'));
            if short || text == "--header" {
                header_next = true;
                continue;
            }
            if text.starts_with("--header=") || short_header && text.starts_with("-H") {
                continue;
            }
        }
        if headers_as_items && is_header_item(text) {
            continue;
        }
        revealed.push(field);
    }
    revealed
}

/// `-sH`: short options bundled, the last taking the next word.
fn is_short_bundle_ending_in(text: &str, letter: char) -> bool {
    text.len() > 2
        && text.starts_with('-')
        && !text.starts_with("--")
        && text.ends_with(letter)
        && text[1..].bytes().all(|b| b.is_ascii_alphabetic())
}

/// httpie's `Name:value` (a header), not `name:=json`, `name=value` or a URL.
fn is_header_item(text: &str) -> bool {
    match text.split_once(':') {
        Some((header, value)) => {
            !header.is_empty()
                && header
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                && !value.starts_with('=')
                && !value.starts_with("//")
                && !value.starts_with(|c: char| c.is_ascii_digit())
                && !header.contains('=')
        }
        None => false,
    }
}

/// The variable `NAME`, `NAME=value` or `NAME+=value` names, when it is a variable name; `*`
/// when the name is only known at runtime (`export "$NAME=1"`).
fn variable_of(word: &str) -> Option<&str> {
    let name = word.split_once('=').map_or(word, |(name, _)| name);
    let name = name.strip_suffix('+').unwrap_or(name);
    if name.contains(['$', '`']) {
        return Some(ALL);
    }
    is_variable(name).then_some(name)
}

fn is_variable(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn add(list: &mut Vec<String>, name: &str) {
    if !list.iter().any(|n| n == name) {
        list.push(name.to_owned());
    }
}

fn add_all<'a>(list: &mut Vec<String>, names: impl IntoIterator<Item = &'a str>) {
    for name in names {
        add(list, name);
    }
}

/// Environment variables an inline program reads by name (`os.environ["X"]`,
/// `os.getenv("X")`, `process.env.X`, `$ENV{X}`, `ENV["X"]`, `getenv("X")`), and `*` when it
/// takes the environment whole (`print(os.environ)`, `console.log(process.env)`, `%ENV`).
/// An interpreter that reads a variable is assumed to print or send it.
pub fn code_reads_env(code: &str, found: &mut Vec<String>) {
    for (at, _) in code.match_indices("environ") {
        if !starts_word(code, at) || !ends_word(code, at + "environ".len()) {
            continue;
        }
        let rest = &code[at + "environ".len()..];
        let key = rest
            .strip_prefix('[')
            .or_else(|| rest.strip_prefix(".get("))
            .and_then(quoted_name);
        add(found, key.unwrap_or(ALL));
    }
    // awk: `ENVIRON["X"]`; `for (k in ENVIRON)` is all of it.
    for (at, _) in code.match_indices("ENVIRON") {
        if !starts_word(code, at) || !ends_word(code, at + "ENVIRON".len()) {
            continue;
        }
        let rest = &code[at + "ENVIRON".len()..];
        add(
            found,
            rest.strip_prefix('[').and_then(quoted_name).unwrap_or(ALL),
        );
    }
    for (at, _) in code.match_indices("getenv") {
        if !starts_word(code, at) {
            continue;
        }
        let rest = code[at + "getenv".len()..].trim_start();
        let Some(inside) = rest.strip_prefix('(') else {
            continue;
        };
        add(found, quoted_name(inside).unwrap_or(ALL));
    }
    for (at, _) in code.match_indices("process.env") {
        if !ends_word(code, at + "process.env".len()) {
            continue;
        }
        let rest = &code[at + "process.env".len()..];
        let key = match rest.strip_prefix('.') {
            Some(member) => Some(identifier(member)).filter(|m| !m.is_empty()),
            None => rest.strip_prefix('[').and_then(quoted_name),
        };
        add(found, key.unwrap_or(ALL));
    }
    for (at, _) in code.match_indices("ENV") {
        if !ends_word(code, at + 3) {
            continue;
        }
        let before = code[..at].chars().next_back();
        let rest = &code[at + 3..];
        let key = match before {
            // Perl: `$ENV{X}`, `$ENV{'X'}`; `%ENV` is all of it.
            Some('$') => rest
                .strip_prefix('{')
                .and_then(|r| quoted_name(r).or_else(|| Some(identifier(r))))
                .filter(|k| !k.is_empty()),
            Some('%') => None,
            // PHP: `$_ENV['X']`.
            Some('_') if code[..at].ends_with("$_") => rest.strip_prefix('[').and_then(quoted_name),
            Some(c) if c.is_ascii_alphanumeric() || c == '_' => continue,
            // Ruby: `ENV["X"]`, `ENV.fetch("X")`; `ENV` alone (`p ENV`, `ENV.to_h`) is all.
            _ => rest
                .strip_prefix('[')
                .or_else(|| rest.strip_prefix(".fetch("))
                .and_then(quoted_name),
        };
        add(found, key.unwrap_or(ALL));
    }
    // Deno and Bun: `Deno.env.get("X")`, `Bun.env.X`; `Deno.env.toObject()` is all.
    for (at, _) in code.match_indices(".env.") {
        let rest = &code[at + ".env.".len()..];
        if !(code[..at].ends_with("Deno") || code[..at].ends_with("Bun")) {
            continue;
        }
        let key = match rest.strip_prefix("get(") {
            Some(inside) => quoted_name(inside),
            None if rest.starts_with("toObject") => None,
            None => Some(identifier(rest)).filter(|m| !m.is_empty()),
        };
        add(found, key.unwrap_or(ALL));
    }
}

/// `"X"]`, `'X')`: the name in quotes at the start of `text`.
fn quoted_name(text: &str) -> Option<&str> {
    let text = text.trim_start();
    let quote = text.chars().next().filter(|c| matches!(c, '"' | '\''))?;
    let inside = &text[1..];
    let end = inside.find(quote)?;
    let name = &inside[..end];
    is_variable(name).then_some(name)
}

fn identifier(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

fn starts_word(code: &str, at: usize) -> bool {
    !code[..at]
        .chars()
        .next_back()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn ends_word(code: &str, end: usize) -> bool {
    !code[end..]
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::code_reads_env;

    #[test]
    fn inline_programs_reading_the_environment() {
        let cases: &[(&str, &[&str])] = &[
            ("import os; print(os.environ['GH_TOKEN'])", &["GH_TOKEN"]),
            (
                "import os; print(os.environ.get(\"AWS_KEY\"))",
                &["AWS_KEY"],
            ),
            ("import os; print(os.getenv('X'))", &["X"]),
            ("import os; print(os.environ)", &["*"]),
            ("import os; print(dict(os.environ))", &["*"]),
            ("from os import environ as e; print(e)", &["*"]),
            ("console.log(process.env.NPM_TOKEN)", &["NPM_TOKEN"]),
            ("console.log(process.env['A'])", &["A"]),
            ("console.log(JSON.stringify(process.env))", &["*"]),
            ("print $ENV{SECRET}", &["SECRET"]),
            ("print $ENV{'SECRET'}", &["SECRET"]),
            ("print %ENV", &["*"]),
            ("puts ENV['K']", &["K"]),
            ("puts ENV.fetch(\"K\")", &["K"]),
            ("p ENV.to_h", &["*"]),
            ("echo getenv('DB_PASS');", &["DB_PASS"]),
            ("print_r(getenv());", &["*"]),
            ("echo $_ENV['Z'];", &["Z"]),
            ("console.log(Deno.env.get('T'))", &["T"]),
            ("console.log(Deno.env.toObject())", &["*"]),
            ("print(1 + 2)", &[]),
            ("ENVIRONMENT = 3; environment = 4", &[]),
            ("x = myenviron[0]", &[]),
            (
                "BEGIN { print ENVIRON[\"GITHUB_TOKEN\"] }",
                &["GITHUB_TOKEN"],
            ),
            ("BEGIN { for (k in ENVIRON) print k, ENVIRON[k] }", &["*"]),
        ];
        for (code, expected) in cases {
            let mut found = Vec::new();
            code_reads_env(code, &mut found);
            assert_eq!(found, *expected, "{code}");
        }
    }
}
