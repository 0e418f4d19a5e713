//! Who may have started a container that carries no owner label: the agent session whose shell
//! call ran, naming a container tool, when the Engine created it.
//!
//! The hook labels what an agent starts when the agent lets it rewrite the call (Claude Code,
//! and Codex on allow). What else an agent starts (a script that runs `docker run`, Gemini CLI,
//! whose hooks cannot rewrite a call) carries no label. The ledger holds every call with its
//! session and when it was decided and finished, and the Engine knows when each container was
//! created, so joining the two by time points at a session.
//!
//! That join is a clue, never proof: the Engine does not say which client created a container,
//! and an operator's service of the same image may be created in the same minute. So the
//! janitor never removes on it; it only tells a person whose container it may be (see
//! [`crate::plan()`]). The join is also strict: a call counts only when the ledger holds its
//! result (it provably ran; an ask nobody approved never did), only while it ran, only when its
//! command names a container tool, and only when it points at this container: the line names
//! the container's image or name (`docker run -d postgres:16`), or Compose created it for a
//! project in the call's working directory (`docker compose up` in `/srv/app` makes containers
//! labelled with that directory).

use crate::item::{Facts, Item};
use serde::{Deserialize, Serialize};

/// The label Compose puts on a container: the directory the project was brought up from.
const COMPOSE_WORKING_DIR_LABEL: &str = "com.docker.compose.project.working_dir";

/// The programs through which a shell line can create containers.
const CONTAINER_TOOLS: &[&str] = &["docker", "podman", "nerdctl", "compose"];

/// How far apart two clocks on one host may read: the Engine's creation time and the hook's
/// decision time come from the same clock, but are taken a few milliseconds apart.
const SLACK_MS: i64 = 2_000;

/// One agent shell call, as the ledger tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentCall {
    /// The agent (actor id): `claude-code`, `codex`, ...
    pub agent: String,
    pub session: Option<String>,
    /// The decision's record id (`r42`), the evidence a reason names.
    pub record: String,
    /// The shell line as recorded.
    pub command: String,
    /// The directory the call ran in, when the agent said.
    pub cwd: Option<String>,
    /// When it was decided.
    pub from_ms: i64,
    /// When its result was recorded: a call with no result is no evidence at all.
    pub until_ms: i64,
}

impl AgentCall {
    /// Whether the line names a container tool as a word (`docker`, `docker-compose`,
    /// `/usr/bin/podman`), so it could have created a container.
    pub fn names_container_tool(&self) -> bool {
        self.command
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|word| CONTAINER_TOOLS.contains(&word))
    }

    /// Whether the line points at this container: it names its image or its name as a word,
    /// or Compose brought the container up from the call's working directory.
    fn points_at(&self, item: &Item, facts: &crate::item::ContainerFacts) -> bool {
        let compose_here = facts
            .labels
            .get(COMPOSE_WORKING_DIR_LABEL)
            .zip(self.cwd.as_deref())
            .is_some_and(|(dir, cwd)| same_dir(dir, cwd));
        let image = facts.image.strip_suffix(":latest").unwrap_or(&facts.image);
        compose_here
            || names_word(&self.command, image)
            || names_word(&self.command, &format!("{image}:latest"))
            || names_word(&self.command, &item.name)
    }

    fn running_at(&self, at_ms: i64) -> bool {
        self.from_ms.saturating_sub(SLACK_MS) <= at_ms
            && at_ms <= self.until_ms.saturating_add(SLACK_MS)
    }
}

/// An agent session's ownership of a container, learned from the ledger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartedBy {
    pub agent: String,
    /// `None` when calls of several sessions were running at once: an agent's, not one session's.
    pub session: Option<String>,
    /// Why: the call or calls that were running.
    pub evidence: String,
}

impl StartedBy {
    /// The clue a plan shows, never a reason to remove.
    pub fn describe(&self) -> String {
        match &self.session {
            Some(session) => format!(
                "the ledger suggests agent {} in session {session} started it ({})",
                self.agent, self.evidence
            ),
            None => format!(
                "the ledger suggests an agent started it ({}), session not certain",
                self.evidence
            ),
        }
    }
}

/// The earliest time a call that could have created a container created at `created_ms` was
/// decided: callers read the ledger from here.
pub fn calls_since(created_ms: i64, longest_call_ms: i64) -> i64 {
    created_ms
        .saturating_sub(longest_call_ms)
        .saturating_sub(SLACK_MS)
}

/// The container items with no owner label that a running agent call naming a container tool
/// explains, each with who started it. `calls` may come in any order.
pub fn started_during(items: &[Item], calls: &[AgentCall]) -> Vec<(String, StartedBy)> {
    let mut calls: Vec<&AgentCall> = calls.iter().filter(|c| c.names_container_tool()).collect();
    calls.sort_by_key(|c| c.from_ms);
    let mut found = Vec::new();
    for item in items {
        let Facts::Container(c) = &item.facts else {
            continue;
        };
        if c.labels.contains_key(crate::rules::OWNER_LABEL) {
            continue;
        }
        let Some(created) = c.created_ms else {
            continue;
        };
        let running: Vec<&AgentCall> = calls
            .iter()
            .copied()
            .take_while(|call| call.from_ms.saturating_sub(SLACK_MS) <= created)
            .filter(|call| call.running_at(created) && call.points_at(item, c))
            .collect();
        let Some(first) = running.first() else {
            continue;
        };
        let mut sessions: Vec<&str> = running
            .iter()
            .filter_map(|c| c.session.as_deref())
            .collect();
        sessions.sort_unstable();
        sessions.dedup();
        let records: Vec<&str> = running.iter().map(|c| c.record.as_str()).collect();
        let evidence = format!(
            "the Engine created it while its call {} ({}) was running",
            records.join(", "),
            clip(&first.command)
        );
        let session = match (
            sessions.as_slice(),
            running.iter().all(|c| c.session.is_some()),
        ) {
            ([one], true) => Some((*one).to_owned()),
            _ => None,
        };
        found.push((
            item.id.clone(),
            StartedBy {
                agent: first.agent.clone(),
                session,
                evidence,
            },
        ));
    }
    found
}

/// Whether `text` holds `word` with no word character (nor `.`, `/`, `:`, `-`) on either
/// side: `postgres:16` in `docker run -d postgres:16`, not `pg` in `pgadmin`.
fn names_word(text: &str, word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    let part_of_word = |c: char| c.is_ascii_alphanumeric() || "_.-/:@".contains(c);
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(part_of_word) && !after.is_some_and(part_of_word)
    })
}

/// Two directory paths that name the same place, give or take a trailing slash.
fn same_dir(a: &str, b: &str) -> bool {
    let trim = |p: &str| {
        let t = p.trim_end_matches('/');
        if t.is_empty() { "/" } else { t }.to_owned()
    };
    trim(a) == trim(b)
}

fn clip(command: &str) -> String {
    let line = command.lines().next().unwrap_or_default();
    if line.chars().count() > 60 || line.len() < command.len() {
        let mut cut: String = line.chars().take(57).collect();
        cut.push('…');
        cut
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::ContainerFacts;
    use std::collections::BTreeMap;

    /// A container of image `busybox`, or of a compose project brought up in `/srv/app`
    /// when labelled so.
    fn container(id: &str, created_ms: i64, labels: &[(&str, &str)]) -> Item {
        Item {
            id: id.to_owned(),
            name: id.to_owned(),
            facts: Facts::Container(ContainerFacts {
                labels: labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<BTreeMap<_, _>>(),
                image: "busybox".to_owned(),
                status: "running".to_owned(),
                restart_count: 0,
                created_ms: Some(created_ms),
                started_ms: Some(created_ms),
                finished_ms: None,
                exit_code: None,
                exec_ids: vec![],
            }),
        }
    }

    fn call(
        session: Option<&str>,
        record: &str,
        command: &str,
        from: i64,
        until: i64,
    ) -> AgentCall {
        AgentCall {
            agent: "codex".to_owned(),
            session: session.map(str::to_owned),
            record: record.to_owned(),
            command: command.to_owned(),
            cwd: Some("/srv/app".to_owned()),
            from_ms: from,
            until_ms: until,
        }
    }

    const COMPOSED: (&str, &str) = (COMPOSE_WORKING_DIR_LABEL, "/srv/app/");

    #[test]
    fn a_container_created_during_a_docker_call_is_that_sessions() {
        let items = [container("c1", 10_000, &[COMPOSED])];
        let calls = [
            call(Some("s1"), "r1", "cargo test", 9_000, 20_000),
            call(Some("s2"), "r2", "docker compose up -d", 9_500, 11_000),
        ];
        let found = started_during(&items, &calls);
        assert_eq!(found.len(), 1);
        let (id, by) = &found[0];
        assert_eq!(id, "c1");
        assert_eq!(by.session.as_deref(), Some("s2"));
        assert!(by.evidence.contains("r2"), "{}", by.evidence);
        assert!(by.describe().contains("session s2"));
    }

    #[test]
    fn no_call_running_or_no_container_tool_named_leaves_it_unowned() {
        let items = [container("c1", 100_000, &[COMPOSED])];
        for calls in [
            vec![call(Some("s1"), "r1", "docker run x", 10_000, 20_000)],
            vec![call(
                Some("s1"),
                "r1",
                "make dockerize busybox",
                90_000,
                200_000,
            )],
            vec![call(Some("s1"), "r1", "echo docker", 150_000, 200_000)],
        ] {
            assert!(started_during(&items, &calls).is_empty(), "{calls:?}");
        }
    }

    /// A call that does not point at the container (another image, another project's
    /// directory) does not own it, however close in time.
    #[test]
    fn only_a_call_that_points_at_the_container_owns_it() {
        let operators = [container("c1", 10_000, &[])];
        for line in [
            "docker run -d postgres:16",
            "docker pull busybox-extra",
            "docker compose up -d",
        ] {
            let calls = [call(Some("s1"), "r1", line, 9_000, 11_000)];
            assert!(started_during(&operators, &calls).is_empty(), "{line}");
        }
        for line in [
            "docker run -d busybox sleep 9",
            "docker run busybox:latest",
            "docker start c1",
        ] {
            let calls = [call(Some("s1"), "r1", line, 9_000, 11_000)];
            assert_eq!(started_during(&operators, &calls).len(), 1, "{line}");
        }
        let elsewhere = [container(
            "c2",
            10_000,
            &[(COMPOSE_WORKING_DIR_LABEL, "/srv/other")],
        )];
        let calls = [call(
            Some("s1"),
            "r1",
            "docker compose up -d",
            9_000,
            11_000,
        )];
        assert!(started_during(&elsewhere, &calls).is_empty());
    }

    #[test]
    fn labelled_containers_and_other_kinds_are_not_joined() {
        let items = [container(
            "c1",
            10_000,
            &[(crate::rules::OWNER_LABEL, "claude")],
        )];
        let calls = [call(Some("s1"), "r1", "docker run x", 9_000, 11_000)];
        assert!(started_during(&items, &calls).is_empty());
    }

    #[test]
    fn two_sessions_at_once_make_it_an_agents_but_no_ones_session() {
        let items = [container("c1", 10_000, &[])];
        let calls = [
            call(Some("s1"), "r1", "docker run busybox", 9_000, 11_000),
            call(
                Some("s2"),
                "r2",
                "/usr/bin/docker run busybox",
                9_500,
                12_000,
            ),
        ];
        let found = started_during(&items, &calls);
        assert_eq!(found[0].1.session, None);
        assert!(found[0].1.evidence.contains("r1, r2"));
    }

    #[test]
    fn the_clocks_may_differ_by_the_slack_only() {
        let calls = [call(Some("s1"), "r1", "docker run busybox", 10_000, 11_000)];
        assert_eq!(
            started_during(&[container("c", 8_000, &[])], &calls).len(),
            1
        );
        assert_eq!(
            started_during(&[container("c", 13_000, &[])], &calls).len(),
            1
        );
        assert!(started_during(&[container("c", 7_999, &[])], &calls).is_empty());
        assert!(started_during(&[container("c", 13_001, &[])], &calls).is_empty());
    }
}
