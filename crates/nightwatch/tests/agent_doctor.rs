//! `nightwatch doctor --live` asks the real agent, not itself: each pinned agent on the
//! user's PATH is run once against the canary model, and the check passes only when
//! nightwatch refused the canary call and recorded it. A hook the agent does not run (Codex
//! untrusted) or one that cannot answer (its program gone) is a failure with the fix.

mod common;

use common::agents::{Agent, World, text};

fn doctor_live(world: &World, agent: Agent) -> (Option<i32>, String) {
    let output = world.nightwatch(&["doctor", agent.name(), "--live"]);
    (output.status.code(), text(&output))
}

#[test]
fn claude_live_canary_is_refused_and_recorded_and_a_hook_gone_is_a_failure() {
    let world = World::new(Agent::Claude, "doctor-live-claude");
    // The hook runs a copy of nightwatch of this test's own, so the test can take it away.
    let copy = world.root.join("installed/nightwatch");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_nightwatch"), &copy).unwrap();
    world.install(&["--binary", copy.to_str().unwrap()]);
    let (code, said) = doctor_live(&world, Agent::Claude);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("live run of") && said.contains("was refused by nightwatch and recorded"),
        "{said}"
    );

    // The program the hook runs is gone: Claude lets the call through (a hook that cannot
    // start is not a refusal to it), and the live run shows it.
    std::fs::remove_file(&copy).unwrap();
    let (code, said) = doctor_live(&world, Agent::Claude);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("NOT refused by nightwatch"), "{said}");
}

#[test]
fn codex_live_canary_needs_the_hooks_trusted() {
    let world = World::new(Agent::Codex, "doctor-live-codex");
    let output = world.nightwatch(&["install", "codex", "--user"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let (code, said) = doctor_live(&world, Agent::Codex);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("will NOT run"), "{said}");
    assert!(said.contains("NOT refused by nightwatch"), "{said}");
    assert!(!said.contains("nothing to fix"), "{said}");

    world.install(&["--user", "--trust"]);
    let (code, said) = doctor_live(&world, Agent::Codex);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("says it runs all"), "{said}");
    assert!(
        said.contains("was refused by nightwatch and recorded"),
        "{said}"
    );
}
