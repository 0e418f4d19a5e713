//! Ownership labels (seed 001: "name what you start after your project, touch only what you
//! started"). A container an agent starts through its shell tool gets labels that say which
//! agent, session and project started it, so the janitor knows what is an agent's to sweep.
//!
//! Only Claude Code lets a hook rewrite a call's input (`updatedInput`); for it, a line that
//! begins with `docker run` or `docker create` (or their `docker container` forms), `docker
//! volume create` or `docker network create` gets `--label` options inserted right after the
//! subcommand, where Docker reads options for the new object. Anything else is left as
//! written: a line that starts another way, a `docker` behind a variable or a wrapper, `docker
//! compose` (whose CLI takes no labels). What is not labelled is still recorded with its
//! session in the ledger, and the janitor joins the Engine's creation times to it (see
//! `nightwatch_janitor::started_during`).

/// The label names, as the janitor's scope reads them.
pub use nightwatch_spec::sweep::{OWNER_LABEL, PROJECT_LABEL, SESSION_LABEL};

/// Longest line rewritten; a longer one is left as written.
const MAX_LINE: usize = 64 * 1024;

/// Who started it: the agent, its session and its project (working directory), each optional
/// but the agent.
pub struct Owner<'a> {
    pub agent: &'a str,
    pub session: Option<&'a str>,
    pub project: Option<&'a str>,
}

/// `command` with the ownership labels inserted after its leading `docker run` (or `create`,
/// `volume create`, `network create`), or `None` when the line does not begin with one or
/// already carries the owner label.
pub fn label_docker_run(command: &str, owner: &Owner<'_>) -> Option<String> {
    if command.len() > MAX_LINE || command.contains(OWNER_LABEL) {
        return None;
    }
    let start = command.len() - command.trim_start().len();
    let rest = &command[start..];
    let mut words = rest.split([' ', '\t']).filter(|w| !w.is_empty());
    let subcommand_words = match (words.next(), words.next(), words.next()) {
        (Some("docker"), Some("run" | "create"), _) => 2,
        (Some("docker"), Some("container" | "volume" | "network"), Some("create"))
        | (Some("docker"), Some("container"), Some("run")) => 3,
        _ => return None,
    };
    // The end of the subcommand word, counted in the original text.
    let mut end = start;
    for _ in 0..subcommand_words {
        let skipped = command[end..].len() - command[end..].trim_start_matches([' ', '\t']).len();
        end += skipped;
        end += command[end..]
            .find([' ', '\t', '\n', ';', '&', '|'])
            .unwrap_or(command.len() - end);
    }
    // `docker run;` or a line ending right after the word: nothing to label.
    if !command[end..].starts_with([' ', '\t']) {
        return None;
    }
    let mut labels = vec![(OWNER_LABEL, owner.agent)];
    labels.extend(owner.session.map(|s| (SESSION_LABEL, s)));
    labels.extend(owner.project.map(|p| (PROJECT_LABEL, p)));
    let mut inserted = String::new();
    for (name, value) in labels {
        inserted.push_str(" --label ");
        inserted.push_str(&quote(&format!("{name}={value}")));
    }
    Some(format!("{}{inserted}{}", &command[..end], &command[end..]))
}

/// A `docker compose ... up` (or `create`) line, read far enough to add compose files to it:
/// Compose's CLI takes no labels, but a last `-f` file can give every service some.
#[derive(Debug, PartialEq, Eq)]
pub struct ComposeUp<'a> {
    /// The `-f` / `--file` files the line names, in order (none: Compose's default files).
    pub files: Vec<&'a str>,
    /// `--project-directory`, where the default files are looked for instead of the cwd.
    pub project_directory: Option<&'a str>,
    /// Byte offset of the `up` word: files are added right before it.
    insert_at: usize,
}

/// Compose's global options that take a value.
const COMPOSE_VALUE_OPTIONS: &[&str] = &[
    "-f",
    "--file",
    "-p",
    "--project-name",
    "--project-directory",
    "--profile",
    "--env-file",
    "--ansi",
    "--progress",
    "--parallel",
];
/// Compose's global options that stand alone.
const COMPOSE_FLAGS: &[&str] = &["--compatibility", "--dry-run", "--verbose", "--no-ansi"];

/// The line as a `docker compose [OPTIONS] up|create ...` (or `docker-compose`), or `None` for
/// anything else, including a line whose options before the subcommand are quoted, expanded
/// or unknown: those are left as written.
pub fn compose_up(command: &str) -> Option<ComposeUp<'_>> {
    if command.len() > MAX_LINE || command.contains(OWNER_LABEL) {
        return None;
    }
    let mut head = words_with_offsets(command);
    let from = match (head.next(), head.next()) {
        (Some((_, "docker")), Some((at, "compose"))) => at + "compose".len(),
        (Some((at, "docker-compose")), _) => at + "docker-compose".len(),
        _ => return None,
    };
    let mut words = words_with_offsets_from(command, from);
    let mut files = Vec::new();
    let mut project_directory = None;
    while let Some((at, word)) = words.next() {
        if word.contains(['\'', '"', '$', '`', ';', '&', '|', '<', '>', '(', ')', '\\']) {
            return None;
        }
        if word == "up" || word == "create" {
            return Some(ComposeUp {
                files,
                project_directory,
                insert_at: at,
            });
        }
        let (option, inline) = match word.split_once('=') {
            Some((option, value)) if option.starts_with("--") => (option, Some(value)),
            _ => (word, None),
        };
        if COMPOSE_FLAGS.contains(&option) {
            continue;
        }
        if !COMPOSE_VALUE_OPTIONS.contains(&option) {
            return None;
        }
        let value = match inline {
            Some(value) => value,
            None => words.next()?.1,
        };
        if value.contains(['\'', '"', '$', '`', ';', '&', '|', '<', '>', '(', ')', '\\']) {
            return None;
        }
        match option {
            "-f" | "--file" => files.push(value),
            "--project-directory" => project_directory = Some(value),
            _ => {}
        }
    }
    None
}

/// `command` with `-f FILE` for each of `files` added right before its `up` word.
pub fn with_compose_files(command: &str, up: &ComposeUp<'_>, files: &[String]) -> String {
    let mut added = String::new();
    for file in files {
        added.push_str("-f ");
        added.push_str(&quote(file));
        added.push(' ');
    }
    format!(
        "{}{added}{}",
        &command[..up.insert_at],
        &command[up.insert_at..]
    )
}

/// The compose file that gives every one of `services` the owner's labels.
pub fn compose_labels_file(services: &[String], owner: &Owner<'_>) -> String {
    let mut labels = vec![(OWNER_LABEL, owner.agent)];
    labels.extend(owner.session.map(|s| (SESSION_LABEL, s)));
    labels.extend(owner.project.map(|p| (PROJECT_LABEL, p)));
    let mut text =
        String::from("# Written by nightwatch's hook: who started these services.\nservices:\n");
    for service in services {
        text.push_str(&format!("  {}:\n    labels:\n", json_string(service)));
        for (name, value) in &labels {
            text.push_str(&format!(
                "      {}: {}\n",
                json_string(name),
                json_string(value)
            ));
        }
    }
    text
}

/// A YAML scalar that is exactly `text` (JSON strings are YAML).
fn json_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// The line's words split on blanks and newlines, each with its byte offset.
fn words_with_offsets(command: &str) -> impl Iterator<Item = (usize, &str)> {
    words_with_offsets_from(command, 0)
}

fn words_with_offsets_from(command: &str, from: usize) -> impl Iterator<Item = (usize, &str)> {
    let text = &command[from..];
    text.split([' ', '\t', '\n'])
        .scan(from, |at, word| {
            let start = *at;
            *at += word.len() + 1;
            Some((start, word))
        })
        .filter(|(_, word)| !word.is_empty())
}

/// One shell word that is exactly `text`: single-quoted, each `'` closed, escaped, reopened.
fn quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-=/:@+,".contains(&b));
    if plain {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER: Owner<'static> = Owner {
        agent: "claude-code",
        session: Some("sess_2a9f3b"),
        project: Some("/srv/app's dir"),
    };

    #[test]
    fn the_labels_go_right_after_the_subcommand() {
        let labelled = label_docker_run("docker run -d --name pg postgres:16", &OWNER).unwrap();
        assert_eq!(
            labelled,
            "docker run --label nightwatch.agent=claude-code --label nightwatch.session=sess_2a9f3b \
             --label 'nightwatch.project=/srv/app'\\''s dir' -d --name pg postgres:16"
        );
        let labelled =
            label_docker_run("  docker container create busybox && echo ok", &OWNER).unwrap();
        assert!(labelled.starts_with("  docker container create --label nightwatch.agent="));
        assert!(labelled.ends_with(" busybox && echo ok"));
        for (line, head) in [
            (
                "docker volume create pgdata",
                "docker volume create --label ",
            ),
            (
                "docker network create -d bridge pr-7",
                "docker network create --label ",
            ),
        ] {
            let labelled = label_docker_run(line, &OWNER).unwrap();
            assert!(labelled.starts_with(head), "{labelled}");
            assert!(
                labelled.contains("nightwatch.session=sess_2a9f3b"),
                "{labelled}"
            );
        }
    }

    #[test]
    fn other_lines_are_left_as_written() {
        for line in [
            "docker ps",
            "docker compose up -d",
            "cd /srv && docker run x",
            "sudo docker run x",
            "$D run x",
            "docker run",
            "docker run;",
            "docker runner x",
            "docker volume rm pgdata",
            "docker network ls",
            "docker volume",
            "docker run --label nightwatch.agent=me x",
            "",
        ] {
            assert_eq!(label_docker_run(line, &OWNER), None, "{line:?}");
        }
    }

    #[test]
    fn compose_up_lines_get_files_before_up() {
        let up = compose_up("docker compose up -d").unwrap();
        assert_eq!(up.files, Vec::<&str>::new());
        let line = with_compose_files(
            "docker compose up -d",
            &up,
            &["a.yml".into(), "/d/n w.yaml".into()],
        );
        assert_eq!(line, "docker compose -f a.yml -f '/d/n w.yaml' up -d");
        let up = compose_up("docker-compose -f base.yml --project-directory=/srv/app -p shop up")
            .unwrap();
        assert_eq!(up.files, ["base.yml"]);
        assert_eq!(up.project_directory, Some("/srv/app"));
        let line = "docker-compose -f base.yml --project-directory=/srv/app -p shop up";
        assert_eq!(
            with_compose_files(line, &up, &["x.yml".into()]),
            "docker-compose -f base.yml --project-directory=/srv/app -p shop -f x.yml up"
        );
        for line in [
            "docker compose down",
            "docker compose -f \"$F\" up",
            "docker compose --weird up",
            "docker compose -f",
            "docker compose ps; docker compose up",
            "cd x && docker compose up",
            "docker compose up --label nightwatch.agent=me",
        ] {
            assert_eq!(compose_up(line), None, "{line}");
        }
    }

    #[test]
    fn the_labels_file_names_every_service() {
        let text = compose_labels_file(&["web".into(), "db: x".into()], &OWNER);
        let parsed: serde_json::Value = yaml_serde::from_str(&text).unwrap();
        for service in ["web", "db: x"] {
            let labels = &parsed["services"][service]["labels"];
            assert_eq!(labels["nightwatch.agent"], "claude-code", "{text}");
            assert_eq!(labels["nightwatch.project"], "/srv/app's dir", "{text}");
        }
    }

    /// What comes out is the line with words added after the subcommand, never anything cut,
    /// and no input panics.
    #[test]
    fn any_line_is_kept_whole_or_left_alone() {
        use proptest::prelude::*;
        proptest!(|(tail in "\\PC{0,80}", sep in "[ \t]{1,3}", sub in "(run|create|container run|volume create|network create)")| {
            let line = format!("docker{sep}{sub}{sep}{tail}");
            if let Some(out) = label_docker_run(&line, &OWNER) {
                let head = format!("docker{sep}{sub}");
                prop_assert!(out.starts_with(&head));
                let rest = format!("{sep}{tail}");
                prop_assert!(out.ends_with(&rest));
                prop_assert!(out.len() > line.len());
            }
        });
    }
}
