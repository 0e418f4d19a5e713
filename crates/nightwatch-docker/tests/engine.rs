//! The Docker inventory against the real Engine on this machine. Each test labels what it
//! creates `nightwatch.test=<run>` and removes it when done, failed or not.

mod common;

use common::{Scratch, docker, now_ms};
use nightwatch_docker::DockerInventory;
use nightwatch_janitor::{
    ContainerFacts, ContainerRules, Decision, Facts, Inventory, InventoryError, Item, JanitorState,
    Kind, SweepRules, plan,
};
use nightwatch_sqlite::SqliteJanitorStore;
use nightwatch_store::JanitorStore;
use std::time::{Duration, Instant};

const DAY_MS: i64 = 86_400_000;
/// Docker's clock and ours are the same clock, but its times are taken a little before or
/// after the CLI returns.
const SLACK_MS: i64 = 2_000;

fn inventory() -> DockerInventory {
    DockerInventory::from_docker_host(
        std::env::var("DOCKER_HOST").ok().as_deref(),
        &ContainerRules::default(),
    )
    .expect("inventory")
    .with_stop_timeout(Duration::from_secs(2))
}

/// The items of this run only: the host may have other containers.
fn listed(inventory: &DockerInventory, scratch: &Scratch) -> Vec<Item> {
    inventory
        .list()
        .expect("list")
        .into_iter()
        .filter(|item| {
            facts(item)
                .labels
                .get(common::TEST_LABEL)
                .map(String::as_str)
                == Some(&scratch.run)
        })
        .collect()
}

fn facts(item: &Item) -> &ContainerFacts {
    match &item.facts {
        Facts::Container(c) => c,
        other => panic!("not a container: {other:?}"),
    }
}

fn find<'a>(items: &'a [Item], id: &str) -> &'a Item {
    items
        .iter()
        .find(|i| i.id == id)
        .unwrap_or_else(|| panic!("{id} not listed among {items:?}"))
}

fn within(at: Option<i64>, from: i64, to: i64, what: &str) -> i64 {
    let at = at.unwrap_or_else(|| panic!("{what} is missing"));
    assert!(
        from - SLACK_MS <= at && at <= to + SLACK_MS,
        "{what} {at} not within {from}..{to}"
    );
    at
}

#[test]
fn lists_running_and_exited_containers_with_their_times_and_labels() {
    let scratch = Scratch::new("list");
    let before = now_ms();
    let running = scratch.container(
        "run",
        &["--name", &scratch.name("running"), "--label", "team=qa"],
        &["sleep", "3600"],
    );
    let exited = scratch.container(
        "run",
        &["--name", &scratch.name("exited")],
        &["sh", "-c", "exit 3"],
    );
    docker(&["wait", &exited]);
    let after = now_ms();

    let items = listed(&inventory(), &scratch);
    assert_eq!(items.len(), 2, "{items:?}");

    let item = find(&items, &running);
    assert_eq!(item.kind(), Kind::Container);
    assert_eq!(item.name, scratch.name("running"));
    let c = facts(item);
    assert_eq!(c.status, "running");
    assert_eq!(c.image, common::IMAGE);
    assert_eq!(c.labels.get("team").map(String::as_str), Some("qa"));
    assert_eq!(c.restart_count, 0);
    let created = within(c.created_ms, before, after, "created");
    let started = within(c.started_ms, before, after, "started");
    assert!(created <= started);

    let c = facts(find(&items, &exited));
    assert_eq!(c.status, "exited");
    // Not `started <= finished`: for a container that exits at once the Engine can record
    // FinishedAt a little before StartedAt. The planner takes the latest of them anyway.
    within(c.started_ms, before, after, "started");
    within(c.finished_ms, before, after, "finished");
    assert!(!c.labels.contains_key("team"));
}

#[test]
fn never_stopped_container_has_no_finish_time() {
    let scratch = Scratch::new("never-stopped");
    let running = scratch.container("run", &[], &["sleep", "3600"]);
    let created = scratch.container("create", &[], &["sleep", "3600"]);

    let inventory = inventory();
    let c = facts_of(&inventory, &running);
    assert_eq!(c.status, "running");
    assert!(c.started_ms.is_some());
    assert_eq!(
        c.finished_ms, None,
        "0001-01-01T00:00:00Z must read as never"
    );

    let c = facts_of(&inventory, &created);
    assert_eq!(c.status, "created");
    assert_eq!((c.started_ms, c.finished_ms), (None, None));
    assert!(c.created_ms.is_some());
}

fn facts_of(inventory: &DockerInventory, id: &str) -> ContainerFacts {
    let item = inventory.inspect(id).expect("inspect").expect("present");
    assert_eq!(item.id, id);
    facts(&item).clone()
}

#[test]
fn crash_loop_shows_its_restarts() {
    let scratch = Scratch::new("crash-loop");
    let looping = scratch.container(
        "run",
        &["--restart", "always", "--name", &scratch.name("looping")],
        &["sh", "-c", "exit 1"],
    );
    let inventory = inventory();
    // The Engine backs off 100 ms, 200 ms, 400 ms...: three restarts take about a second.
    let deadline = Instant::now() + Duration::from_secs(30);
    let c = loop {
        let c = facts_of(&inventory, &looping);
        if c.restart_count >= 3 || Instant::now() > deadline {
            break c;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    assert!(c.restart_count >= 3, "only {} restarts", c.restart_count);
    assert!(
        matches!(c.status.as_str(), "restarting" | "running" | "exited"),
        "status {}",
        c.status
    );
    // Its clock keeps resetting, which is why the planner ages it from creation.
    let created = c.created_ms.expect("created");
    assert!(c.started_ms.expect("started") > created);

    let decided = plan(
        &[inventory
            .inspect(&looping)
            .expect("inspect")
            .expect("present")],
        &SweepRules::default(),
        now_ms() + 6 * DAY_MS,
        &JanitorState::new(),
    );
    let entry = &decided.entries[0];
    assert_eq!(entry.decision, Decision::Remove, "{:?}", entry.reasons);
    assert!(
        entry.reasons[0].starts_with("restart loop"),
        "{:?}",
        entry.reasons
    );
}

#[test]
fn remove_stops_then_removes_in_two_steps() {
    let scratch = Scratch::new("remove-running");
    let running = scratch.container("run", &[], &["sleep", "3600"]);
    let created = scratch.container("create", &[], &["sleep", "3600"]);
    let inventory = inventory();

    let item = inventory
        .inspect(&running)
        .expect("inspect")
        .expect("present");
    let removal = inventory.remove(&item, now_ms());
    let steps: Vec<(&str, bool)> = removal
        .steps
        .iter()
        .map(|s| (s.what.as_str(), s.ok))
        .collect();
    assert_eq!(steps, [("stop", true), ("remove", true)], "{removal:?}");
    assert!(removal.succeeded());
    assert!(inventory.inspect(&running).expect("inspect").is_none());

    // A container that never ran needs no stop.
    let item = inventory
        .inspect(&created)
        .expect("inspect")
        .expect("present");
    let removal = inventory.remove(&item, now_ms());
    assert_eq!(removal.steps.len(), 1, "{removal:?}");
    assert_eq!(removal.steps[0].what, "remove");
    assert!(removal.succeeded());
    assert!(scratch.ids().is_empty());
}

/// `sleep` as a container's first process ignores SIGTERM, so each stop waits out the whole
/// stop timeout (2 s here) before the Engine kills it. Six one after another take 12 s at
/// least; stopped together they take one timeout and change. Each result comes back once.
#[test]
fn running_containers_are_stopped_together_not_one_after_another() {
    let scratch = Scratch::new("remove-together");
    let ids: Vec<String> = (0..6)
        .map(|_| scratch.container("run", &[], &["sleep", "3600"]))
        .collect();
    let inventory = inventory();
    assert!(
        inventory.removals_at_once() >= 6,
        "the bound allows six at once"
    );
    let items: Vec<Item> = ids
        .iter()
        .map(|id| inventory.inspect(id).expect("inspect").expect("present"))
        .collect();
    let refs: Vec<&Item> = items.iter().collect();
    let mut seen = vec![0; items.len()];
    let started = Instant::now();
    inventory
        .remove_all(&refs, now_ms(), &mut |index, removal| {
            assert!(removal.succeeded(), "{removal:?}");
            assert_eq!(removal.steps[0].what, "stop");
            seen[index] += 1;
            Ok(())
        })
        .expect("every result handed on");
    let took = started.elapsed();
    assert_eq!(seen, vec![1; 6], "each removal reported exactly once");
    assert!(
        took < Duration::from_secs(8),
        "six stops of 2 s took {took:?}: they ran one after another"
    );
    assert!(scratch.ids().is_empty());
}

/// A caller that cannot record a result stops the batch: nothing more is handed on.
#[test]
fn a_result_that_cannot_be_recorded_stops_the_batch() {
    let scratch = Scratch::new("remove-stop");
    let ids: Vec<String> = (0..3)
        .map(|_| scratch.container("create", &[], &["sleep", "3600"]))
        .collect();
    let inventory = inventory();
    let items: Vec<Item> = ids
        .iter()
        .map(|id| inventory.inspect(id).expect("inspect").expect("present"))
        .collect();
    let refs: Vec<&Item> = items.iter().collect();
    let mut calls = 0;
    let stopped = inventory.remove_all(&refs, now_ms(), &mut |_, _| {
        calls += 1;
        Err("the ledger is full".to_owned())
    });
    assert_eq!(stopped, Err("the ledger is full".to_owned()));
    assert_eq!(calls, 1);
}

#[test]
fn container_removed_between_list_and_remove_fails_cleanly() {
    let scratch = Scratch::new("gone");
    let id = scratch.container("create", &[], &["sleep", "3600"]);
    let inventory = inventory();
    let item = find(&listed(&inventory, &scratch), &id).clone();
    docker(&["rm", &id]);

    assert!(inventory.inspect(&id).expect("inspect").is_none());
    let removal = inventory.remove(&item, now_ms());
    assert!(!removal.succeeded());
    assert_eq!(removal.steps.len(), 1, "{removal:?}");
    let error = removal.error().expect("an error");
    assert!(error.contains("already gone"), "{error}");
}

#[test]
fn keep_label_is_refused_at_remove_time() {
    let scratch = Scratch::new("keep");
    let id = scratch.container(
        "create",
        &["--label", "nightwatch.keep=true"],
        &["sleep", "1"],
    );
    let inventory = inventory();
    let item = inventory.inspect(&id).expect("inspect").expect("present");

    let removal = inventory.remove(&item, now_ms());
    assert!(!removal.succeeded());
    assert_eq!(removal.steps.len(), 1, "{removal:?}");
    assert_eq!(removal.steps[0].what, "check labels");
    assert!(
        removal.steps[0].detail.contains("nightwatch.keep=true"),
        "{removal:?}"
    );
    assert!(
        inventory.inspect(&id).expect("inspect").is_some(),
        "it was removed"
    );
}

#[test]
fn remove_keeps_the_containers_volumes() {
    let mut scratch = Scratch::new("volumes");
    let volume = scratch.volume("data");
    let mount = format!("{volume}:/data");
    let id = scratch.container("run", &["-v", &mount], &["sh", "-c", "exit 0"]);
    docker(&["wait", &id]);
    let inventory = inventory();
    let item = inventory.inspect(&id).expect("inspect").expect("present");

    assert!(inventory.remove(&item, now_ms()).succeeded());
    assert!(inventory.inspect(&id).expect("inspect").is_none());
    assert_eq!(
        docker(&["volume", "inspect", "-f", "{{.Name}}", &volume]),
        volume
    );
}

fn inventory_with(rules: &ContainerRules) -> DockerInventory {
    DockerInventory::from_docker_host(std::env::var("DOCKER_HOST").ok().as_deref(), rules)
        .expect("inventory")
        .with_stop_timeout(Duration::from_secs(2))
}

fn step_about<'a>(removal: &'a nightwatch_janitor::Removal, what: &str) -> &'a str {
    removal
        .steps
        .iter()
        .find(|s| s.detail.contains(what))
        .map(|s| s.detail.as_str())
        .unwrap_or_else(|| panic!("no step about {what}: {removal:?}"))
}

/// A volume goes with its last container only when the policy names it and an agent created
/// it; every other volume the container had stays, with a step that says why.
#[test]
fn a_volume_goes_only_when_named_an_agents_and_unused() {
    let mut scratch = Scratch::new("agent-volumes");
    let owned = ["nightwatch.agent=test-agent"];
    let gone = scratch.volume_with("pr-data-gone", &owned);
    let unowned = scratch.volume_with("pr-data-unowned", &[]);
    let shared = scratch.volume_with("pr-data-shared", &owned);
    let unnamed = scratch.volume_with("other-data", &owned);
    let mounts: Vec<String> = [&gone, &unowned, &shared, &unnamed]
        .iter()
        .enumerate()
        .flat_map(|(i, v)| ["-v".to_owned(), format!("{v}:/d{i}")])
        .collect();
    let mounts: Vec<&str> = mounts.iter().map(String::as_str).collect();
    let id = scratch.container("create", &mounts, &["sh", "-c", "exit 0"]);
    let _other = scratch.container(
        "create",
        &["-v", &format!("{shared}:/d")],
        &["sh", "-c", "exit 0"],
    );
    let rules: ContainerRules =
        yaml_serde::from_str("remove_volumes: [\"nwtest-pr-data-*\"]").expect("rules");
    let inventory = inventory_with(&rules);
    let item = inventory.inspect(&id).expect("inspect").expect("present");
    let removal = inventory.remove(&item, now_ms());
    assert!(removal.succeeded(), "{removal:?}");
    let exists = |v: &str| {
        std::process::Command::new("docker")
            .args(["volume", "inspect", v])
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(!exists(&gone), "{removal:?}");
    assert!(step_about(&removal, &format!("removed volume {gone}")).contains("nwtest-pr-data-*"));
    assert!(exists(&unowned));
    assert!(step_about(&removal, &unowned).contains("no agent created it"));
    assert!(exists(&shared));
    assert!(step_about(&removal, &shared).contains("1 container(s) still use it"));
    assert!(exists(&unnamed));
    assert!(step_about(&removal, &unnamed).contains("does not name it"));
}

/// With `remove_dangling_images`, an untagged image goes with the last container that used
/// it; one still in use stays, and a tagged image is never touched.
#[test]
fn a_dangling_image_goes_with_its_last_container_when_configured() {
    let scratch = Scratch::new("dangling");
    // `docker commit` without a tag makes an untagged image, as an agent's untagged build does.
    let base = scratch.container("create", &[], &["sh", "-c", "exit 0"]);
    let image = |from: &str| docker(&["commit", from]);
    let lone = image(&base);
    let shared = image(&base);
    // On the scratch's own image: tagged, never removed.
    let only_user = scratch.container("create", &[], &["sh", "-c", "exit 0"]);
    let run_on = |img: &str| {
        docker(&[
            "create",
            "--label",
            &scratch.label(),
            "--label",
            "nightwatch.agent=test-agent",
            img,
            "sh",
            "-c",
            "exit 0",
        ])
    };
    let lone_user = run_on(&lone);
    let shared_users = [run_on(&shared), run_on(&shared)];
    let image_exists = |img: &str| {
        std::process::Command::new("docker")
            .args(["image", "inspect", img])
            .output()
            .unwrap()
            .status
            .success()
    };
    let rules: ContainerRules =
        yaml_serde::from_str("remove_dangling_images: true").expect("rules");
    let inventory = inventory_with(&rules);
    let remove = |id: &str| {
        let item = inventory.inspect(id).expect("inspect").expect("present");
        let removal = inventory.remove(&item, now_ms());
        assert!(removal.succeeded(), "{removal:?}");
        removal
    };
    let removal = remove(&lone_user);
    assert!(!image_exists(&lone), "{removal:?}");
    step_about(&removal, "removed dangling image");
    let removal = remove(&shared_users[0]);
    assert!(image_exists(&shared));
    assert!(step_about(&removal, "dangling image").contains("1 container(s) still use it"));
    remove(&shared_users[1]);
    assert!(!image_exists(&shared));
    let removal = remove(&only_user);
    assert!(
        image_exists(common::image()),
        "a tagged image stays: {removal:?}"
    );
    assert!(
        !removal.steps.iter().any(|s| s.what.contains("image")),
        "{removal:?}"
    );
}

#[test]
fn exec_activity_is_recorded_and_survives_a_restart() {
    let scratch = Scratch::new("activity");
    let id = scratch.container("run", &[], &["sleep", "3600"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteJanitorStore::open(dir.path()).expect("state store");
    let inventory = inventory();

    let since = now_ms();
    docker(&["exec", &id, "sh", "-c", "true"]);
    let until = now_ms() + 500;
    let noted = inventory
        .record_activity(&store, since - SLACK_MS, until)
        .expect("record activity");
    // exec_create, exec_start and exec_die, at least (other tests may exec too).
    assert!(noted >= 3, "noted {noted} events");
    let at = store.activity(Kind::Container, &id).expect("read");
    within(at, since, until, "activity");
    drop(store);

    let reopened = SqliteJanitorStore::open(dir.path()).expect("reopen");
    let state = reopened.load().expect("load");
    assert_eq!(state.activity(Kind::Container, &id), at);
}

/// Idle control wakes an app by unpausing it: that is someone using it, and it counts.
#[test]
fn an_unpause_is_activity() {
    let scratch = Scratch::new("unpause");
    let id = scratch.container("run", &[], &["sleep", "3600"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteJanitorStore::open(dir.path()).expect("state store");
    docker(&["pause", &id]);
    // Only the unpause falls in the window read below: its start is well before.
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    let since = now_ms() - 200;
    docker(&["unpause", &id]);
    let until = now_ms() + 500;
    inventory()
        .record_activity(&store, since, until)
        .expect("record activity");
    let at = store.activity(Kind::Container, &id).expect("read");
    within(at, since, until, "unpause activity");
}

#[test]
fn plan_removes_an_idle_exited_container_and_keeps_a_labelled_one() {
    let scratch = Scratch::new("plan");
    let idle = scratch.container("run", &[], &["sh", "-c", "exit 0"]);
    let kept = scratch.container(
        "run",
        &["--label", "nightwatch.keep=true"],
        &["sh", "-c", "exit 0"],
    );
    docker(&["wait", &idle, &kept]);
    let items = listed(&inventory(), &scratch);

    let decided = plan(
        &items,
        &SweepRules::default(),
        now_ms() + 6 * DAY_MS,
        &JanitorState::new(),
    );
    let entry = |id: &str| {
        decided
            .entries
            .iter()
            .find(|e| e.id == id)
            .unwrap_or_else(|| panic!("{id} not planned"))
    };
    assert_eq!(
        entry(&idle).decision,
        Decision::Remove,
        "{:?}",
        entry(&idle).reasons
    );
    assert!(
        entry(&idle).reasons[0].starts_with("idle 6d"),
        "{:?}",
        entry(&idle).reasons
    );
    assert_eq!(entry(&kept).decision, Decision::Keep);
    assert_eq!(entry(&kept).reasons[0], "labelled nightwatch.keep=true");
}

#[test]
fn unreachable_engine_is_an_error_not_an_empty_list() {
    let dir = tempfile::tempdir().expect("temp dir");
    let host = format!("unix://{}/docker.sock", dir.path().display());
    let inventory = DockerInventory::at(&host, &ContainerRules::default()).expect("inventory");

    let error = inventory
        .list()
        .expect_err("listed an Engine that is not there");
    assert!(
        matches!(error, InventoryError::Unavailable { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains(&host), "{message}");
    assert!(inventory.inspect("abc").is_err());
    let removal = inventory.remove(
        &Item {
            id: "abc".into(),
            name: "abc".into(),
            facts: Facts::Container(ContainerFacts::default()),
        },
        now_ms(),
    );
    assert!(!removal.succeeded());

    let store = SqliteJanitorStore::open(dir.path()).expect("state store");
    assert!(inventory.record_activity(&store, 0, 1).is_err());
}
