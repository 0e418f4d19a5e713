//! A person places an agent in a trust tier, through the engine; the agent's count starts
//! again from that record. The judgement is nightwatch-trust's.

use nightwatch_core::Actor;
use nightwatch_gate::{Engine, Event};
use nightwatch_ledger::schema::Placement;
use nightwatch_ledger::{Filter, Record, event};
use nightwatch_policy::TrustSettings;
use nightwatch_store::LedgerReader;

/// A placement made: its record, and the tier the agent was in before it.
pub struct Placed {
    pub record: Record,
    pub before: String,
}

/// Places `placement.agent` in `placement.tier` (which the caller has checked `settings`
/// names), as `by`.
pub fn place(
    engine: &Engine<'_>,
    ledger: &dyn LedgerReader,
    settings: &TrustSettings,
    by: Actor,
    placement: Placement,
) -> anyhow::Result<Placed> {
    let placements = ledger.query(&Filter {
        event: Some(event::TRUST.to_owned()),
        ..Filter::default()
    })?;
    let before = nightwatch_trust::current_tier(&placements, &placement.agent, settings).tier;
    let record = engine.record(Event::Trust {
        by,
        placement,
        host: None,
    })?;
    Ok(Placed { record, before })
}
