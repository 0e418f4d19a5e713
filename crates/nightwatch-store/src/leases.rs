//! Named leases with fencing: how a job that must run in exactly one place (a fleet-wide
//! sweep, a report) picks the one host that runs it.
//!
//! A lease is held by one holder until a time; another holder can take it only once that time
//! has passed (or the holder let it go). Every acquisition gives the lease a new, strictly
//! greater `token` (a fencing number, kept across releases), and renewing or releasing names the
//! token it holds, so a holder that stalled past its expiry while another took over is refused
//! instead of acting on a lease it lost.
//!
//! Times are the caller's (`now_ms` from the engine's clock): hosts sharing leases must agree
//! on the time to well within the shortest TTL they use.

use crate::StoreError;

/// A lease as the store holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// What it is a lease on (`janitor-sweep`).
    pub name: String,
    /// Who holds it (a host's name).
    pub holder: String,
    /// The fencing number of this acquisition: greater than every earlier one of this name.
    pub token: u64,
    /// Held until then (milliseconds since the epoch); free from then on.
    pub until_ms: i64,
}

impl Lease {
    /// Whether the lease is still held at `now_ms`.
    pub fn held_at(&self, now_ms: i64) -> bool {
        now_ms < self.until_ms
    }
}

/// What an acquisition got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// The caller holds the lease now, with a new token: it was free, expired, released, or
    /// already the caller's.
    Got(Lease),
    /// Another holder has it until `until_ms`: the caller stands down and can say why.
    HeldBy(Lease),
}

impl Acquired {
    /// The caller's lease, when it got one.
    pub fn got(self) -> Option<Lease> {
        match self {
            Acquired::Got(lease) => Some(lease),
            Acquired::HeldBy(_) => None,
        }
    }
}

/// Where named leases are kept: one place for every holder that competes for them (a data
/// directory for the daemons of one host, the fleet's database for a fleet).
pub trait Leases: Send + Sync {
    /// Takes lease `name` for `holder` until `now_ms + ttl_ms` when it is free at `now_ms`
    /// (never held, expired, released) or already `holder`'s; otherwise says who holds it.
    /// Atomic: of holders acquiring at once, exactly one gets it. Each acquisition gets a
    /// token greater than any this name had.
    fn acquire(
        &self,
        name: &str,
        holder: &str,
        ttl_ms: i64,
        now_ms: i64,
    ) -> Result<Acquired, StoreError>;

    /// Extends `lease` to `now_ms + ttl_ms`, keeping its token, while it is still the
    /// caller's and unexpired at `now_ms`; `None` when it was lost (expired, or taken by
    /// another with a newer token).
    fn renew(&self, lease: &Lease, ttl_ms: i64, now_ms: i64) -> Result<Option<Lease>, StoreError>;

    /// Lets `lease` go at `now_ms`, so another can take it at once; `false` (and nothing
    /// changed) when its token is no longer the lease's.
    fn release(&self, lease: &Lease, now_ms: i64) -> Result<bool, StoreError>;

    /// Every lease with its last holder and token, by name; expired ones too (see
    /// [`Lease::held_at`]).
    fn list(&self) -> Result<Vec<Lease>, StoreError>;
}
