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
