//! Containers as janitor items: listed with their inspect data, and removed stop-then-remove.

use crate::engine::{DockerInventory, status_of};
use bollard::Docker;
use bollard::models::ContainerInspectResponse;
use bollard::query_parameters::{
    ListContainersOptionsBuilder, ListNetworksOptionsBuilder, RemoveContainerOptionsBuilder,
    RemoveImageOptionsBuilder, RemoveVolumeOptionsBuilder, StopContainerOptionsBuilder,
};
use futures_util::StreamExt;
use nightwatch_janitor::{COMPOSE_PROJECT_LABEL, OWNER_LABEL};
use nightwatch_janitor::{
    ContainerFacts, ContainerRules, Facts, Inventory, InventoryError, Item, JanitorState, Kind,
    Removal, Span, SweepRules, docker_time_ms, plan,
};
use std::collections::HashMap;

/// Inspects in flight at once while listing: enough to hide the socket's round trips
/// without crowding an Engine that other people are using.
const INSPECTS_IN_FLIGHT: usize = 16;

/// Removals in flight at once: each stop may wait out its timeout for a process that ignores
/// SIGTERM, and eight overlapping waits cut a sweep of many running containers eightfold
/// without a burst the Engine notices.
const REMOVALS_IN_FLIGHT: usize = 8;

impl Inventory for DockerInventory {
    fn kind(&self) -> Kind {
        Kind::Container
    }

    /// Every container, running or not, with its inspect data. The list endpoint lacks the
    /// start, finish and restart facts, so each container is inspected; one that disappears
    /// in between is left out, and any other failure fails the whole list (a partial list
    /// would let the janitor forget first sightings of containers it merely could not read).
    fn list(&self) -> Result<Vec<Item>, InventoryError> {
        let client = self.client()?;
        let options = ListContainersOptionsBuilder::new().all(true).build();
        let summaries = self
            .block_on(client.list_containers(Some(options)))
            .map_err(|e| self.error("list containers", e))?;
        let ids: Vec<String> = summaries.into_iter().filter_map(|s| s.id).collect();
        let inspected: Vec<_> = self.block_on(
            futures_util::stream::iter(ids)
                .map(|id| async move { (inspect(client, &id).await, id) })
                .buffered(INSPECTS_IN_FLIGHT)
                .collect(),
        );
        let mut items = Vec::with_capacity(inspected.len());
        for (result, id) in inspected {
            match result {
                Ok(Some(response)) => items.push(item_of(response, &id)),
                Ok(None) => {}
                Err(e) => return Err(self.error(&format!("inspect container {id}"), e)),
            }
        }
        Ok(items)
    }

    fn inspect(&self, id: &str) -> Result<Option<Item>, InventoryError> {
        check_id(id)?;
        let client = self.client()?;
        match self.block_on(inspect(client, id)) {
            Ok(found) => Ok(found.map(|response| item_of(response, id))),
            Err(e) => Err(self.error(&format!("inspect container {id}"), e)),
        }
    }

    /// Inspects again, refuses a container labelled to stay, stops it if it runs (waiting
    /// the stop timeout before the Engine kills it), then removes it without `force` and
    /// without its volumes. Each step taken is reported.
    fn remove(&self, item: &Item, now_ms: i64) -> Removal {
        match self.client() {
            Ok(client) => self.block_on(self.removal(client, item, now_ms)),
            Err(e) => Removal::new().failed("connect", e.to_string()),
        }
    }

    fn removals_at_once(&self) -> usize {
        REMOVALS_IN_FLIGHT
    }

    /// As [`Inventory::remove`] for each, [`REMOVALS_IN_FLIGHT`] at a time: a stop waits for
    /// the container's process to exit (up to the stop timeout), and those waits overlap.
    fn remove_all(
        &self,
        items: &[&Item],
        now_ms: i64,
        done: &mut dyn FnMut(usize, Removal) -> Result<(), String>,
    ) -> Result<(), String> {
        let client = match self.client() {
            Ok(client) => client,
            Err(e) => {
                for index in 0..items.len() {
                    done(index, Removal::new().failed("connect", e.to_string()))?;
                }
                return Ok(());
            }
        };
        self.block_on(async {
            let mut finished =
                futures_util::stream::iter(items.iter().enumerate())
                    .map(|(index, item)| async move {
                        (index, self.removal(client, item, now_ms).await)
                    })
                    .buffer_unordered(REMOVALS_IN_FLIGHT);
            while let Some((index, removal)) = finished.next().await {
                done(index, removal)?;
            }
            Ok(())
        })
    }
}

impl DockerInventory {
    /// One container's removal, step by step (see [`Inventory::remove`]).
    async fn removal(&self, client: &Docker, item: &Item, now_ms: i64) -> Removal {
        let removal = Removal::new();
        if let Err(e) = check_id(&item.id) {
            return removal.failed("inspect", e.to_string());
        }
        let (current, left_behind) = match inspect(client, &item.id).await {
            Ok(Some(response)) => {
                let left_behind = LeftBehind::of(&response);
                (item_of(response, &item.id), left_behind)
            }
            Ok(None) => return removal.failed("inspect", gone(item)),
            Err(e) => {
                let e = self.error(&format!("inspect container {}", item.id), e);
                return removal.failed("inspect", e.to_string());
            }
        };
        let Facts::Container(facts) = &current.facts else {
            return removal.failed("inspect", "not a container");
        };
        if let Some(why) = held_by_label(&current, &self.rules, now_ms) {
            return removal.failed(
                "check labels",
                format!("refused to remove {}: {why}", current.name),
            );
        }
        // Someone opened a shell in it since the plan was checked: it is in use.
        if !facts.exec_ids.is_empty() {
            return removal.failed(
                "check use",
                format!(
                    "refused to remove {}: {} exec session(s) open in it",
                    current.name,
                    facts.exec_ids.len()
                ),
            );
        }
        let mut removal = removal;
        if matches!(facts.status.as_str(), "running" | "restarting" | "paused") {
            let seconds = i32::try_from(self.stop_timeout.as_secs()).unwrap_or(i32::MAX);
            let options = StopContainerOptionsBuilder::new().t(seconds).build();
            match client.stop_container(&item.id, Some(options)).await {
                Ok(()) => {
                    removal = removal.done(
                        "stop",
                        format!("stopped {} (was {})", current.name, facts.status),
                    );
                }
                // 304: it stopped by itself since the inspect.
                Err(e) if status_of(&e) == Some(304) => {
                    removal = removal.done("stop", format!("{} had already stopped", current.name));
                }
                Err(e) if status_of(&e) == Some(404) => return removal.failed("stop", gone(item)),
                Err(e) => {
                    let e = self.error(&format!("stop container {}", current.name), e);
                    return removal.failed("stop", e.to_string());
                }
            }
        }
        // Never `v`: volumes may hold someone's data and outlive the container on purpose.
        // Never `force`: a container that started again since the stop is left for next time.
        let options = RemoveContainerOptionsBuilder::new()
            .v(false)
            .force(false)
            .build();
        match client.remove_container(&item.id, Some(options)).await {
            Ok(()) => {
                let removal = removal.done(
                    "remove",
                    format!("removed {} ({})", current.name, facts.image),
                );
                let removal = match facts.labels.get(COMPOSE_PROJECT_LABEL) {
                    Some(project) => self.remove_stack_networks(client, project, removal).await,
                    None => removal,
                };
                let removal = self.remove_volumes(client, &left_behind, removal).await;
                self.remove_dangling_image(client, &left_behind, removal)
                    .await
            }
            Err(e) if status_of(&e) == Some(404) => removal.failed("remove", gone(item)),
            Err(e) => {
                let e = self.error(&format!("remove container {}", current.name), e);
                removal.failed("remove", e.to_string())
            }
        }
    }

    /// The named volumes the removed container mounted: each goes only when the policy names
    /// it (`sweep.containers.remove_volumes`), an agent created it (its owner label), and no
    /// container uses it any more. Every volume gets a step saying which.
    async fn remove_volumes(
        &self,
        client: &Docker,
        left: &LeftBehind,
        mut removal: Removal,
    ) -> Removal {
        for volume in &left.volumes {
            let named = self.rules.remove_volumes.iter().find(|g| g.matches(volume));
            let Some(glob) = named else {
                removal = removal.done(
                    "keep volume",
                    format!(
                        "volume {volume} kept: sweep.containers.remove_volumes does not name it"
                    ),
                );
                continue;
            };
            let why_kept = match client.inspect_volume(volume).await {
                Err(e) if status_of(&e) == Some(404) => {
                    removal = removal.done(
                        "remove volume",
                        format!("volume {volume} was already removed"),
                    );
                    continue;
                }
                Err(e) => Some(format!(
                    "it could not be inspected: {}",
                    self.error("inspect volume", e)
                )),
                Ok(v) if !v.labels.contains_key(OWNER_LABEL) => {
                    Some(format!("no agent created it (no {OWNER_LABEL} label)"))
                }
                Ok(_) => match self.users(client, "volume", volume).await {
                    Ok(0) => None,
                    Ok(n) => Some(format!("{n} container(s) still use it")),
                    Err(e) => Some(format!("its users could not be listed: {e}")),
                },
            };
            if let Some(why) = why_kept {
                removal = removal.done("keep volume", format!("volume {volume} kept: {why}"));
                continue;
            }
            let options = RemoveVolumeOptionsBuilder::new().force(false).build();
            removal = match client.remove_volume(volume, Some(options)).await {
                Ok(()) => removal.done(
                    "remove volume",
                    format!(
                        "removed volume {volume}: an agent's, named by {}, and no container uses it",
                        glob.text()
                    ),
                ),
                Err(e) if status_of(&e) == Some(404) => {
                    removal.done("remove volume", format!("volume {volume} was already removed"))
                }
                Err(e) => removal.done(
                    "remove volume",
                    format!("volume {volume} was left: {}", self.error("remove volume", e)),
                ),
            };
        }
        removal
    }

    /// The removed container's image, when `sweep.containers.remove_dangling_images` is set,
    /// it carries no tag, and no container (in any state) uses it any more.
    async fn remove_dangling_image(
        &self,
        client: &Docker,
        left: &LeftBehind,
        removal: Removal,
    ) -> Removal {
        let Some(image) = left.image.as_deref() else {
            return removal;
        };
        if !self.rules.remove_dangling_images {
            return removal;
        }
        let why_kept = match client.inspect_image(image).await {
            Err(e) if status_of(&e) == Some(404) => return removal,
            Err(e) => Some(format!(
                "it could not be inspected: {}",
                self.error("inspect image", e)
            )),
            Ok(inspected) => {
                let tags: Vec<String> = inspected
                    .repo_tags
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| t != "<none>:<none>")
                    .collect();
                if tags.is_empty() {
                    match self.users(client, "ancestor", image).await {
                        Ok(0) => None,
                        Ok(n) => Some(format!("{n} container(s) still use it")),
                        Err(e) => Some(format!("its users could not be listed: {e}")),
                    }
                } else {
                    // Tagged images are someone's build or pull: never the janitor's.
                    return removal;
                }
            }
        };
        let short = image
            .trim_start_matches("sha256:")
            .get(..12)
            .unwrap_or(image);
        if let Some(why) = why_kept {
            return removal.done("keep image", format!("dangling image {short} kept: {why}"));
        }
        let options = RemoveImageOptionsBuilder::new()
            .force(false)
            .noprune(false)
            .build();
        match client.remove_image(image, Some(options), None).await {
            Ok(_) => removal.done(
                "remove image",
                format!("removed dangling image {short}: no tag, and no container uses it"),
            ),
            Err(e) if status_of(&e) == Some(404) => removal,
            Err(e) => removal.done(
                "remove image",
                format!(
                    "dangling image {short} was left: {}",
                    self.error("remove image", e)
                ),
            ),
        }
    }

    /// How many containers, in any state, match `filter=value` (`volume=pgdata`,
    /// `ancestor=sha256:...`).
    async fn users(&self, client: &Docker, filter: &str, value: &str) -> Result<usize, String> {
        let filters = HashMap::from([(filter, vec![value])]);
        let options = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        client
            .list_containers(Some(options))
            .await
            .map(|c| c.len())
            .map_err(|e| self.error("list containers", e).to_string())
    }

    /// Once the last container of compose stack `project` is gone, the networks Compose made
    /// for it go too. Any container of the stack left, in any state, keeps them; a network
    /// that cannot be listed or removed stays, and the step says so.
    async fn remove_stack_networks(
        &self,
        client: &Docker,
        project: &str,
        removal: Removal,
    ) -> Removal {
        let label = format!("{COMPOSE_PROJECT_LABEL}={project}");
        let filters = HashMap::from([("label", vec![label.as_str()])]);
        let left = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        match client.list_containers(Some(left)).await {
            Ok(others) if !others.is_empty() => return removal,
            Ok(_) => {}
            Err(e) => {
                let e = self.error("list the stack's containers", e);
                return removal.done(
                    "remove networks",
                    format!("the networks of compose stack {project} were left: {e}"),
                );
            }
        }
        let options = ListNetworksOptionsBuilder::new().filters(&filters).build();
        let networks = match client.list_networks(Some(options)).await {
            Ok(networks) => networks,
            Err(e) => {
                let e = self.error("list the stack's networks", e);
                return removal.done(
                    "remove networks",
                    format!("the networks of compose stack {project} were left: {e}"),
                );
            }
        };
        let mut removal = removal;
        for network in networks {
            let Some(id) = network.id else { continue };
            let name = network.name.unwrap_or_else(|| id.clone());
            removal = match client.remove_network(&id).await {
                Ok(()) => removal.done(
                    "remove network",
                    format!("removed network {name} of compose stack {project}"),
                ),
                // Another member's removal, finishing at the same time, took it.
                Err(e) if status_of(&e) == Some(404) => removal.done(
                    "remove network",
                    format!("network {name} of compose stack {project} was already removed"),
                ),
                Err(e) => removal.done(
                    "remove network",
                    format!(
                        "network {name} of compose stack {project} was left: {}",
                        self.error("remove network", e)
                    ),
                ),
            };
        }
        removal
    }
}

/// Inspects one container; `Ok(None)` when the Engine says there is no such container.
/// The container's inspect data; `None` when the Engine has no such container.
pub(crate) async fn inspect(
    client: &Docker,
    id: &str,
) -> Result<Option<ContainerInspectResponse>, bollard::errors::Error> {
    match client.inspect_container(id, None).await {
        Ok(response) => Ok(Some(response)),
        Err(e) if status_of(&e) == Some(404) => Ok(None),
        Err(e) => Err(e),
    }
}

fn gone(item: &Item) -> String {
    format!(
        "no such container {} ({}): it is already gone",
        item.name, item.id
    )
}

/// Ids and names are letters, digits, `_`, `.` and `-`. Anything else (a `/` in an edited
/// plan file, say) would change which Engine endpoint the request reaches.
fn check_id(id: &str) -> Result<(), InventoryError> {
    if plain_name(id) {
        Ok(())
    } else {
        Err(InventoryError::Refused {
            id: id.to_owned(),
            reason: "not a container id or name".to_owned(),
        })
    }
}

/// Whether `id` is made of letters, digits, `_`, `.` and `-` only (see [`check_id`]).
pub(crate) fn plain_name(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// What a container may leave behind when it goes: its named volumes and its image's id.
struct LeftBehind {
    volumes: Vec<String>,
    image: Option<String>,
}

impl LeftBehind {
    fn of(response: &ContainerInspectResponse) -> LeftBehind {
        let volumes = response
            .mounts
            .iter()
            .flatten()
            .filter(|m| m.typ.as_deref() == Some("volume"))
            .filter_map(|m| m.name.clone())
            .collect();
        LeftBehind {
            volumes,
            image: response.image.clone().filter(|i| !i.is_empty()),
        }
    }
}

/// The janitor's item for one inspected container. Docker's zero time becomes `None`.
fn item_of(response: ContainerInspectResponse, asked: &str) -> Item {
    let id = response.id.unwrap_or_else(|| asked.to_owned());
    let name = response
        .name
        .map(|n| n.trim_start_matches('/').to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| id.clone());
    let config = response.config.unwrap_or_default();
    let state = response.state.unwrap_or_default();
    let facts = ContainerFacts {
        labels: config.labels.unwrap_or_default().into_iter().collect(),
        // The name it was created from (`postgres:16`), else the image id.
        image: config
            .image
            .filter(|i| !i.is_empty())
            .or(response.image)
            .unwrap_or_default(),
        status: state.status.map(|s| s.to_string()).unwrap_or_default(),
        restart_count: response
            .restart_count
            .map(|n| u32::try_from(n.max(0)).unwrap_or(u32::MAX))
            .unwrap_or(0),
        created_ms: response.created.as_deref().and_then(docker_time_ms),
        started_ms: state.started_at.as_deref().and_then(docker_time_ms),
        finished_ms: state.finished_at.as_deref().and_then(docker_time_ms),
        exit_code: state.exit_code.filter(|_| state.running != Some(true)),
        exec_ids: response.exec_ids.unwrap_or_default(),
    };
    Item {
        id,
        name,
        facts: Facts::Container(facts),
    }
}

/// Why the container's labels keep it, asked of the planner itself so the labels have one
/// reading (`nightwatch.keep=true`, a `nightwatch.keep-until` date not yet passed). The
/// question is put so that only a keep label can keep it: no age limits, no failures, a
/// container that has been idle since 1970, and the whole host in scope. Scope is the
/// planner's to judge, moments before, with what the ledger knows of who started what (a
/// container an agent started without a label is still the agent's).
fn held_by_label(item: &Item, rules: &ContainerRules, now_ms: i64) -> Option<String> {
    let Facts::Container(facts) = &item.facts else {
        return None;
    };
    let probe = Item {
        id: item.id.clone(),
        name: item.name.clone(),
        facts: Facts::Container(ContainerFacts {
            labels: facts.labels.clone(),
            created_ms: Some(0),
            ..ContainerFacts::default()
        }),
    };
    let rules = SweepRules {
        containers: ContainerRules {
            scope: nightwatch_janitor::ContainerScope {
                all: true,
                ..Default::default()
            },
            max_idle: Span::from_ms(0),
            restart_loop_max_age: Span::from_ms(0),
            max_age: Vec::new(),
            ..rules.clone()
        },
        ..SweepRules::default()
    };
    let decided = plan(&[probe], &rules, now_ms.max(1), &JanitorState::new());
    decided.keeps().next().map(|entry| {
        let labels: Vec<&str> = entry
            .reasons
            .iter()
            .filter(|r| r.starts_with("labelled"))
            .map(String::as_str)
            .collect();
        if labels.is_empty() {
            entry.reasons.join("; ")
        } else {
            labels.join("; ")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A container an agent started, with these labels besides.
    fn labelled(pairs: &[(&str, &str)]) -> Item {
        let labels: BTreeMap<String, String> = [("nightwatch.agent", "claude-code")]
            .iter()
            .chain(pairs)
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Item {
            id: "c0ffee".into(),
            name: "pg-bug-4411".into(),
            facts: Facts::Container(ContainerFacts {
                labels,
                status: "running".into(),
                created_ms: Some(1_772_359_200_000),
                ..ContainerFacts::default()
            }),
        }
    }

    const NOW: i64 = 1_780_000_000_000; // 2026-05-28

    #[test]
    fn keep_label_holds_at_remove_time() {
        let rules = ContainerRules::default();
        let why = held_by_label(&labelled(&[("nightwatch.keep", "true")]), &rules, NOW);
        assert_eq!(why.as_deref(), Some("labelled nightwatch.keep=true"));
        assert_eq!(
            held_by_label(&labelled(&[("nightwatch.keep", "false")]), &rules, NOW),
            None
        );
        assert_eq!(held_by_label(&labelled(&[]), &rules, NOW), None);
    }

    /// The last check before a stop reads keep labels, and only them: an unlabelled
    /// container the planner found an agent started (from the ledger) is not refused here,
    /// and an unlabelled container with a keep label still is.
    #[test]
    fn the_last_check_reads_keep_labels_not_scope() {
        let mut item = labelled(&[]);
        if let Facts::Container(c) = &mut item.facts {
            c.labels.clear();
        }
        assert_eq!(held_by_label(&item, &ContainerRules::default(), NOW), None);
        if let Facts::Container(c) = &mut item.facts {
            c.labels.insert("nightwatch.keep".into(), "yes".into());
        }
        let why = held_by_label(&item, &ContainerRules::default(), NOW).unwrap_or_default();
        assert_eq!(why, "labelled nightwatch.keep=yes");
    }

    #[test]
    fn open_exec_sessions_and_the_exit_code_are_read_from_inspect() {
        let response: ContainerInspectResponse = serde_json::from_str(
            r#"{"Id":"abc","Name":"/dev","ExecIDs":["e1","e2"],
                "State":{"Status":"running","Running":true,"ExitCode":0}}"#,
        )
        .expect("inspect JSON");
        let Facts::Container(c) = item_of(response, "abc").facts else {
            panic!("not a container");
        };
        assert_eq!(c.exec_ids, ["e1", "e2"]);
        assert_eq!(
            c.exit_code, None,
            "a running container has no exit code yet"
        );
        let response: ContainerInspectResponse = serde_json::from_str(
            r#"{"Id":"abc","State":{"Status":"exited","Running":false,"ExitCode":3}}"#,
        )
        .expect("inspect JSON");
        let Facts::Container(c) = item_of(response, "abc").facts else {
            panic!("not a container");
        };
        assert_eq!(c.exit_code, Some(3));
        assert!(c.exec_ids.is_empty());
    }

    #[test]
    fn keep_until_holds_only_until_its_date() {
        let rules = ContainerRules::default();
        let future = labelled(&[("nightwatch.keep-until", "2026-06-30")]);
        assert!(held_by_label(&future, &rules, NOW).is_some());
        let past = labelled(&[("nightwatch.keep-until", "2026-01-01")]);
        assert_eq!(held_by_label(&past, &rules, NOW), None);
        let garbage = labelled(&[("nightwatch.keep-until", "soon")]);
        assert!(held_by_label(&garbage, &rules, NOW).is_some());
    }

    #[test]
    fn odd_ids_are_refused_before_reaching_the_engine() {
        assert!(check_id("4f3c2a").is_ok());
        assert!(check_id("pg-bug_4411.1").is_ok());
        for bad in ["", "../images/x", "a/b", "a?force=true", "a b"] {
            assert!(check_id(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn zero_times_are_never() {
        let response: ContainerInspectResponse = serde_json::from_str(
            r#"{"Id":"abc","Name":"/pg-bug-4411","Created":"2026-03-01T10:00:00.5Z",
                "RestartCount":7,"Image":"sha256:1",
                "State":{"Status":"restarting","StartedAt":"0001-01-01T00:00:00Z",
                         "FinishedAt":"0001-01-01T00:00:00Z"},
                "Config":{"Image":"postgres:16","Labels":{"a":"b"}}}"#,
        )
        .expect("inspect JSON");
        let item = item_of(response, "abc");
        assert_eq!(item.name, "pg-bug-4411");
        let Facts::Container(c) = item.facts else {
            panic!("not a container");
        };
        assert_eq!(c.image, "postgres:16");
        assert_eq!(c.status, "restarting");
        assert_eq!(c.restart_count, 7);
        assert_eq!(c.created_ms, Some(1_772_359_200_500));
        assert_eq!((c.started_ms, c.finished_ms), (None, None));
        assert_eq!(c.labels.get("a").map(String::as_str), Some("b"));
    }
}
