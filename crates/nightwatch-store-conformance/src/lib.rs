//! What every backend of the store traits must do: one suite, run by each backend's tests
//! against its own stores (`nightwatch-sqlite`'s and `nightwatch-postgres`'s
//! `tests/conformance.rs`), so the embedded and the fleet stores cannot drift apart.
//!
//! A backend says how to make a fresh [`Place`] (a data directory, a database) and how to
//! open a new handle on each store there, as another process would; every case takes the
//! [`Backend`] and asserts one behaviour through the traits only. [`conformance_tests!`]
//! turns the whole list into one `#[test]` per case, so a failure is named:
//!
//! ```ignore
//! fn backend() -> MyBackend { MyBackend }
//! nightwatch_store_conformance::conformance_tests!(backend);
//! ```
//!
//! What only one backend has (SQLite's WAL and file upgrades, PostgreSQL's hosts, shipping
//! and notifications) is tested in that backend's crate. The fleet's records read across
//! hosts ([`fleet`]) are one case for both fleet stores, the in-memory one (tested here) and
//! PostgreSQL's.

pub mod fixtures;
pub mod fleet;
pub mod inbox;
mod interleavings;
pub mod janitor;
pub mod leases;
pub mod ledger;
pub mod tasks;

use nightwatch_store::{AlertInbox, JanitorStore, Leases, Ledger, TaskQueue};
use nightwatch_tasks::Policy;
use std::sync::Arc;

/// A store backend under test.
pub trait Backend: Sync {
    /// A new, empty place to keep stores in.
    fn place(&self) -> Box<dyn Place>;

    /// Random interleavings the queue's invariants are checked over, each in a fresh place.
    fn interleavings(&self) -> u32 {
        48
    }
}

/// One place's stores. Every call opens a new handle on the same data, as a new process
/// would: what one handle wrote, the next one reads.
pub trait Place: Send + Sync {
    /// The ledger, keeping at most `output_cap` bytes of each record's stdout and stderr.
    fn ledger(&self, output_cap: usize) -> Arc<dyn Ledger>;
    fn queue(&self, policy: Policy) -> Arc<dyn TaskQueue>;
    fn inbox(&self) -> Arc<dyn AlertInbox>;
    fn janitor(&self) -> Arc<dyn JanitorStore>;
    /// The leases every holder of this place competes for.
    fn leases(&self) -> Arc<dyn Leases>;
}

/// One `#[test]` per conformance case, in a module per store, each calling `$backend()` for
/// the backend to run against.
#[macro_export]
macro_rules! conformance_tests {
    ($backend:ident) => {
        $crate::__conformance_cases!($backend;
            ledger {
                the_same_entries_make_the_same_records_as_the_memory_ledger,
                records_are_numbered_and_chained_from_genesis,
                secrets_are_redacted_and_outputs_capped_before_storage,
                long_output_is_capped_at_a_char_boundary_with_a_marker,
                records_read_back_by_id_seq_call_and_filter,
                filters_select_by_time_session_actor_verdict_tool_alert_event,
                scan_visits_every_record_in_order_and_a_visitor_can_stop_it,
                an_empty_ledger_verifies,
                hostile_text_is_kept_exactly_found_by_it_and_verifies,
                a_thousand_appends_verify_clean_up_to_the_head_checkpoint,
                unguarded_results_are_reported_by_verify,
                safeguards_are_stored_chained_and_redacted,
                a_new_handle_reads_what_another_appended,
                append_all_chains_entries_in_order,
                writers_with_their_own_handles_keep_one_chain,
            }
            tasks {
                repeats_of_a_live_alert_attach_and_are_counted,
                a_claim_for_some_routes_takes_only_their_tasks,
                cooldown_after_a_run_suppresses_with_the_reason,
                resolve_before_start_cancels,
                resolve_while_running_lets_it_finish,
                flap_that_resolves_within_the_delay_never_runs,
                failures_back_off_exponentially_with_cap_and_jitter,
                gives_up_after_max_attempts_and_escalates_exactly_once,
                worker_that_vanishes_loses_its_lease_and_the_task_is_reclaimed,
                heartbeat_keeps_the_lease,
                stale_completion_is_rejected_and_never_applied,
                last_attempt_lease_expiry_gives_up_instead_of_running_again,
                reopening_the_store_keeps_tasks_leases_and_events,
                every_transition_has_an_event,
                a_runbooks_process_is_noted_for_its_attempt_only,
                a_batch_of_ops_sees_its_own_earlier_ops_and_the_hourly_limit_counts_them,
                offering_the_same_arrival_again_answers_as_the_first_time_and_changes_nothing,
                an_identitys_tasks_are_found_live_or_finished,
                hostile_text_in_identities_and_errors_is_kept_exactly,
                the_kept_counts_equal_a_count_of_the_tasks_after_any_run,
                a_windows_tasks_are_the_ones_active_in_it_newest_kept_under_the_limit,
                tasks_page_by_cursor_and_filter,
                a_hosts_tasks_page_oldest_first_across_its_workers,
                a_reader_following_new_tasks_by_cursor_misses_none,
                workers_with_their_own_handles_claim_each_task_exactly_once,
                offers_of_one_identity_at_once_make_exactly_one_task,
                offers_at_once_never_pass_a_routes_hourly_limit,
                queue_invariants_hold_under_any_interleaving,
                a_batch_answers_as_its_ops_one_at_a_time,
            }
            inbox {
                arrivals_are_stored_unsettled_then_settled_with_their_record,
                unsettled_arrivals_are_found_among_settled_ones_until_settled,
                hostile_text_in_an_arrival_is_kept_exactly,
                arrivals_survive_reopening_and_are_found_by_alert_and_time,
                the_after_cursor_reads_every_arrival_once_even_from_concurrent_receivers,
                unrecorded_arrivals_come_oldest_first_up_to_the_limit,
            }
            janitor {
                state_survives_a_restart,
                hostile_text_in_ids_and_errors_survives_a_restart,
                a_watcher_and_a_sweep_do_not_overwrite_each_other,
                removed_and_released_items_are_forgotten,
            }
            leases {
                one_holder_at_a_time_and_the_others_are_told_who_and_until_when,
                an_expired_lease_is_taken_over_with_a_higher_token,
                a_stale_holder_cannot_renew_or_release,
                renew_extends_and_release_frees_the_lease_at_once,
                tokens_only_grow_across_holders_releases_and_reopening,
                hosts_acquiring_at_once_get_exactly_one_holder,
            }
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_cases {
    ($backend:ident; $($module:ident { $($case:ident),* $(,)? })*) => {
        $(
            mod $module {
                $(
                    #[test]
                    fn $case() {
                        $crate::$module::$case(&super::$backend());
                    }
                )*
            }
        )*
    };
}
