//! The janitor's core: it decides which leftovers (containers, git worktrees, local branches,
//! temporary paths) to remove, and why each of the others stays.
//!
//! The seed is a shared dev host with 64 containers running, 39 of them weeks old, none
//! matching a name-based sweeper because agents name things however they like. What worked
//! was a rule about *time*, not names: anything not created, started or stopped in five days
//! goes unless it is labelled to stay, a crash loop is aged from creation, and a worktree goes
//! only when provably finished. A local branch goes only when a PR was merged from exactly its
//! tip: a branch an agent made seconds ago at `main`'s tip is "merged" by ancestry, and must
//! not be deleted under it. The second seed is what a sweeper must never do: retry a
//! wedged target all night, or decline without saying why.
//!
//! The crate has a pure middle and thin edges:
//!
//! - [`Item`] and its [`Facts`] describe one thing; [`Item::fingerprint`] names its state.
//! - [`Inventory`] is the seam to the world (list, inspect, remove step by step). Docker and
//!   git inventories live elsewhere; [`PathInventory`] is the filesystem one.
//! - [`plan()`] is a pure function of items, [`SweepRules`], the time and [`JanitorState`]: a
//!   [`Plan`] with keep or remove and every reason for every item.
//! - [`apply()`] re-inspects each planned removal and acts only on items still in the planned
//!   state that the rules (re-run now) and the [`Gate`] still allow; failures back off and then
//!   quarantine, reported once.
//! - [`JanitorState`] is the memory between runs (first sightings, seen activity, failures);
//!   the `JanitorStore` trait of `nightwatch-store` keeps it.
//!
//! Invariants: the planner never fails and never reads a clock; an item labelled to stay is
//! never removed; nothing that changed since the plan is removed; "cannot inspect" is never
//! taken for "gone"; every keep has a reason.
//!
//! # The policy form
//!
//! ```yaml
//! sweep:
//!   containers:
//!     max_idle: 5d                 # since the latest of created, started, finished, activity
//!     restart_loop_max_age: 5d     # restarting, or restart count ≥ restart_loop_restarts
//!     restart_loop_restarts: 3
//!     keep_label: nightwatch.keep             # nightwatch.keep=true
//!     keep_until_label: nightwatch.keep-until # nightwatch.keep-until=2026-06-30
//!     max_age:                     # by name, however busy
//!       - { name: "qa-*", max_age: 6h }
//!   worktrees:
//!     base: main
//!     min_age: 1d
//!     pr: none                     # none | github | { command: [PROGRAM, ARGS...] } |
//!                                  # { github: { repo: octo-org/app,   # else from origin
//!                                  #             base_url: "https://api.github.com",
//!                                  #             token_env: GITHUB_TOKEN } }
//!   branches:
//!     base: main
//!     min_age: 1d                  # both the tip commit and the first sighting this old
//!     ancestry: false              # true: a tip the base holds goes without a merged PR
//!   paths:
//!     - { glob: "/tmp/pytest-of-*/pytest-*", max_age: 2d, keep_file: .nightwatch-keep }
//!   failures: { backoff_initial: 5m, backoff_max: 6h, quarantine_after: 5 }
//! ```

mod apply;
mod inventory;
mod item;
mod owners;
mod paths;
mod plan;
mod state;

// The `sweep:` section is a pure value in nightwatch-spec, so policy can read it without SQLite.
use nightwatch_spec::sweep as rules;

pub use apply::{AllowAll, Applied, Gate, Outcome, apply, apply_each};
pub use inventory::{Inventory, InventoryError, Listing, Removal, Step, list_all, removal_action};
pub use item::{
    BranchFacts, ContainerFacts, Facts, Item, Kind, MergeState, PathFacts, PrState, ProcessUse,
    WorktreeFacts, docker_time_ms,
};
pub use owners::{AgentCall, StartedBy, calls_since, started_during};
pub use paths::PathInventory;
pub use plan::{Decision, Plan, PlanEntry, plan, plan_session};
pub use rules::{
    BranchRules, COMPOSE_PROJECT_LABEL, ContainerRules, ContainerScope, FailureRules, GithubPr,
    GithubRepo, NameMaxAge, OWNER_LABEL, PathRule, PrProvider, RulesError, SESSION_LABEL, Span,
    SweepRules, WorktreeRules,
};
pub use state::{FailureOutcome, Failures, JanitorState};
