//! `ContainerReader` (the drift and state watchers' view of containers) against the real
//! Engine on this machine.

mod common;

use common::{Scratch, docker};
use nightwatch_docker::ContainerReader;
use nightwatch_watch::Containers;

fn reader() -> ContainerReader {
    ContainerReader::from_docker_host(std::env::var("DOCKER_HOST").ok().as_deref())
}

#[test]
fn a_containers_state_environment_and_labels_are_read_as_the_engine_has_them() {
    let scratch = Scratch::new("facts");
    let name = scratch.name("app");
    scratch.container(
        "run",
        &[
            "--init",
            "--name",
            name.as_str(),
            "-e",
            "MAX_CONNECTIONS=512",
            "-e",
            "EMPTY=",
            "--label",
            "tier=web",
        ],
        &["sleep", "3600"],
    );
    let reader = reader();
    let facts = reader
        .inspect(&name)
        .unwrap()
        .expect("the container is found");
    assert_eq!(facts.state, "running");
    assert_eq!(
        facts.env.get("MAX_CONNECTIONS").map(String::as_str),
        Some("512")
    );
    assert_eq!(facts.env.get("EMPTY").map(String::as_str), Some(""));
    assert_eq!(facts.labels.get("tier").map(String::as_str), Some("web"));

    docker(&["pause", &name]);
    assert_eq!(reader.inspect(&name).unwrap().unwrap().state, "paused");
    docker(&["unpause", &name]);
    docker(&["stop", "-t", "1", &name]);
    assert_eq!(reader.inspect(&name).unwrap().unwrap().state, "exited");
}

#[test]
fn a_missing_container_is_none_and_a_bad_name_or_engine_an_error() {
    let reader = reader();
    assert_eq!(
        reader.inspect("nightwatch-no-such-container-here").unwrap(),
        None
    );
    assert!(reader.inspect("../etc").is_err());
    let nowhere = ContainerReader::from_docker_host(Some("unix:///nonexistent/docker.sock"));
    let err = nowhere.inspect("app").unwrap_err();
    assert!(err.contains("/nonexistent/docker.sock"), "{err}");
}
