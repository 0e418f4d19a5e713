//! The typed shapes of what records carry beside their fixed fields: the `safeguards` of a
//! decision or result, and the `inputs` of the events people and nightwatch write about other
//! records (approvals, rejections, trust placements, undos, notifications, dispatches, the
//! janitor's keeps).
//!
//! The stored form stays JSON (the hash chain is computed over it), and these types write it in
//! exactly the shape older records have: a record written before a field existed reads back
//! with that field empty, and a field a later version adds is kept in `other`, so no record
//! ever fails to load because of its shape. These are the storage types; the API and the CLI
//! build their own views from them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What guarded an action beside policy (a record's `safeguards`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Safeguards {
    /// The action's identity: a digest of its tool and its inputs as the actor gave them
    /// (before redaction), so approvals and the circuit breaker match calls that carry a
    /// secret. Absent on records written before it was stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// A person's approval that let an ask through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalUsed>,
    /// Every pre-flight check's finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<Readable<Vec<CheckFinding>>>,
    /// The backup taken before a write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<Backup>,
    /// Notifiers told about a halt or an ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<Vec<String>>,
    /// On a result: the state the action left its backed-up paths in, for undo, in the backup
    /// store's observation format (which that store versions, as it does its manifests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
    /// On an undo: the steps that restored the paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<Vec<String>>,
    /// On a notification: every delivery attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Readable<Delivery>>,
    /// Keys this version does not know, kept as they were.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Safeguards {
    /// The typed view of a record's `safeguards`; a shape that does not read (a hand-edited or
    /// future record) gives an empty view with the whole value kept in `other`.
    pub fn of(value: Option<&Value>) -> Safeguards {
        match value {
            None => Safeguards::default(),
            Some(value) => serde_json::from_value(value.clone()).unwrap_or_else(|_| {
                let mut other = Map::new();
                other.insert("unread".into(), value.clone());
                Safeguards {
                    other,
                    ..Safeguards::default()
                }
            }),
        }
    }

    /// Whether stored safeguards name notifiers to tell, read without building the typed view
    /// (a result's `after` can be large, and every record is asked).
    pub fn names_notifiers(value: Option<&Value>) -> bool {
        value
            .and_then(|v| v.get("notify"))
            .and_then(Value::as_array)
            .is_some_and(|n| !n.is_empty())
    }

    pub fn is_empty(&self) -> bool {
        *self == Safeguards::default()
    }

    /// The stored form: `None` when there is nothing, so records without safeguards keep
    /// the encoding they always had.
    pub fn into_value(self) -> Option<Value> {
        if self.is_empty() {
            return None;
        }
        serde_json::to_value(self).ok()
    }
}

/// A field whose stored shape is read into its type when it can be, and kept as it was when it
/// cannot (a hand-edited or future record): one odd field never hides the rest of a record's
/// safeguards, and writing the view back gives the stored value unchanged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Readable<T> {
    Read(T),
    Unread(Value),
}

impl<T> Readable<T> {
    /// The typed value, when the stored one read.
    pub fn read(&self) -> Option<&T> {
        match self {
            Readable::Read(value) => Some(value),
            Readable::Unread(_) => None,
        }
    }
}

/// One pre-flight check's finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckFinding {
    /// The check's id in policy.
    pub check: String,
    /// Its kind: `process`, `lock_file`, ...
    pub kind: String,
    #[serde(flatten)]
    pub outcome: CheckOutcome,
    /// What the finding did to the action: the check's `on_match` when it matched or could
    /// not tell, nothing when clear.
    pub effect: Option<nightwatch_core::Verdict>,
    /// What the operator reads.
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub elapsed_ms: u64,
}

/// What a check's probe saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum CheckOutcome {
    /// The thing the check guards against is there.
    Matched {
        detail: String,
    },
    Clear {
        detail: String,
    },
    /// The probe could not tell, and why.
    Unknown {
        reason: String,
    },
}

/// One notifier's delivery of one escalation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// The notifier's id in the policy.
    pub notifier: String,
    pub delivered: bool,
    /// In order.
    pub attempts: Vec<DeliveryAttempt>,
}

/// One try at a delivery.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryAttempt {
    /// From 1.
    pub number: u32,
    /// Wall time of the try itself, not counting the wait before it.
    pub elapsed_ms: u64,
    pub outcome: AttemptOutcome,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// `status` is the HTTP status, or 0 for a command that exited 0.
    Delivered { status: u16 },
    /// `retryable` says whether another try was allowed to follow.
    Failed { reason: String, retryable: bool },
}

/// The size limits a backup was taken with, in bytes and entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupLimits {
    pub max_file_bytes: u64,
    pub max_dir_bytes: u64,
    pub max_dir_entries: u64,
}

/// The approval an ask went through on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApprovalUsed {
    /// The approval record's id.
    pub record: String,
    /// Who approved.
    pub by: String,
    /// The decision that asked.
    #[serde(default)]
    pub asked: Option<String>,
}

/// The backup taken before a write.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Backup {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// The size limits it was taken with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Readable<BackupLimits>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// Paths saved only as "skipped", with why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Vec<String>>,
    /// Why the backup failed (the write was then denied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Written paths that could not be located, so were not saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unlocated: Option<Vec<String>>,
}

/// `inputs` of an [`crate::event::APPROVAL`] or [`crate::event::REJECTION`]: a person's
/// answer to the decision `record` that asked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The decision that asked.
    pub record: String,
    /// The asked call's identity (see [`Safeguards::fingerprint`]).
    pub fingerprint: String,
    /// The actor whose call it was.
    pub actor_id: String,
    /// Approvals only: until when it may be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<i64>,
    /// Absent on an approval or rejection recorded without a why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// `inputs` of a [`crate::event::TRUST`] record: a person placed an agent in a tier.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub agent: String,
    pub tier: String,
    #[serde(default)]
    pub why: String,
}

/// `inputs` of an [`crate::event::UNDO`] record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Undone {
    /// The decision whose changes were restored.
    pub record: String,
    pub snapshot: String,
    #[serde(default)]
    pub force: bool,
}

/// `inputs` of a [`crate::event::NOTIFICATION`] record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Notified {
    /// The record the escalation was about.
    pub record: String,
    pub notifier: String,
}

/// `inputs` of the janitor's records: the thing it judged.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Swept {
    pub kind: String,
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub reasons: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Shapes written before the types existed read back into them and write out unchanged,
    /// so a record's hash is the same whether it was built from JSON or from the types.
    #[test]
    fn stored_shapes_round_trip_unchanged() {
        let shapes = [
            json!({ "approval": { "record": "r4", "by": "alice", "asked": "r3" } }),
            json!({
                "checks": [
                    {
                        "check": "migrations", "kind": "process", "outcome": "matched",
                        "detail": "pid 4242 runs migrate", "effect": "halt",
                        "message": "a migration is running", "elapsed_ms": 3
                    },
                    {
                        "check": "lock", "kind": "lock_file", "outcome": "unknown",
                        "reason": "permission denied", "effect": null, "message": "", "elapsed_ms": 0
                    }
                ],
                "notify": ["pager"],
                "backup": {
                    "snapshot": "s1",
                    "limits": { "max_file_bytes": 1, "max_dir_bytes": 2, "max_dir_entries": 3 },
                    "paths": ["/etc/app.conf"],
                    "skipped": ["/big: too large"],
                    "unlocated": ["$X/y"]
                }
            }),
            json!({ "backup": { "error": "disk full" } }),
            json!({ "after": { "paths": [] } }),
            json!({ "restored": ["put back /etc/app.conf"] }),
            json!({ "delivery": {
                "notifier": "pager", "delivered": true,
                "attempts": [
                    { "number": 1, "elapsed_ms": 30, "outcome": { "result": "failed", "reason": "503", "retryable": true } },
                    { "number": 2, "elapsed_ms": 12, "outcome": { "result": "delivered", "status": 200 } }
                ]
            } }),
            // Shapes that do not read into the types are kept as they were.
            json!({ "checks": [{ "check": "migrations", "kind": "process", "effect": "halt" }] }),
            json!({ "delivery": { "notifier": "pager", "attempts": [] } }),
            json!({ "backup": { "snapshot": "s1", "limits": { "max_file_bytes": 1 } } }),
            json!({ "removed": [{ "snapshot": "s1" }], "kept": [] }),
            json!({ "fingerprint": "0123456789abcdef0123456789abcdef" }),
        ];
        for shape in shapes {
            let typed = Safeguards::of(Some(&shape));
            assert_eq!(typed.clone().into_value(), Some(shape.clone()), "{typed:?}");
        }
    }

    /// Today's shapes read into their types; an odd one is kept as it was and hides nothing
    /// else the record's safeguards hold.
    #[test]
    fn fields_read_into_their_types_and_an_odd_one_hides_nothing_else() {
        let stored = json!({
            "checks": [{
                "check": "migrations", "kind": "process", "outcome": "matched",
                "detail": "pid 4242", "effect": "halt", "message": "busy", "elapsed_ms": 3
            }],
            "delivery": { "notifier": "pager", "delivered": false, "attempts": [
                { "number": 1, "elapsed_ms": 5, "outcome": { "result": "failed", "reason": "timeout", "retryable": false } }
            ] },
            "backup": { "snapshot": "s1", "limits": { "max_file_bytes": 1, "max_dir_bytes": 2, "max_dir_entries": 3 } }
        });
        let typed = Safeguards::of(Some(&stored));
        let checks = typed
            .checks
            .as_ref()
            .and_then(Readable::read)
            .expect("checks read");
        assert_eq!(checks[0].effect, Some(nightwatch_core::Verdict::Halt));
        assert!(
            matches!(&checks[0].outcome, CheckOutcome::Matched { detail } if detail == "pid 4242")
        );
        let delivery = typed
            .delivery
            .as_ref()
            .and_then(Readable::read)
            .expect("delivery reads");
        assert!(matches!(
            delivery.attempts[0].outcome,
            AttemptOutcome::Failed {
                retryable: false,
                ..
            }
        ));
        let limits = typed
            .backup
            .as_ref()
            .and_then(|b| b.limits.as_ref()?.read().copied());
        assert_eq!(limits.map(|l| l.max_dir_entries), Some(3));

        let odd = json!({ "checks": [{ "check": "x" }], "backup": { "snapshot": "s1" } });
        let typed = Safeguards::of(Some(&odd));
        assert!(matches!(typed.checks, Some(Readable::Unread(_))));
        assert_eq!(typed.backup.and_then(|b| b.snapshot).as_deref(), Some("s1"));
    }

    /// A later version's key, or a shape that does not read at all, is kept, never dropped.
    #[test]
    fn unknown_shapes_still_load() {
        let later = json!({ "notify": ["pager"], "quorum": { "hosts": 3 } });
        let typed = Safeguards::of(Some(&later));
        assert_eq!(typed.notify.as_deref(), Some(&["pager".to_owned()][..]));
        assert!(Safeguards::names_notifiers(Some(&later)));
        assert_eq!(typed.into_value(), Some(later));

        let odd = json!({ "notify": "not a list" });
        let typed = Safeguards::of(Some(&odd));
        assert_eq!(typed.notify, None);
        assert_eq!(typed.other.get("unread"), Some(&odd));

        assert!(!Safeguards::names_notifiers(Some(&json!({ "notify": [] }))));
        assert!(!Safeguards::names_notifiers(None));
        assert!(Safeguards::of(None).is_empty());
        assert_eq!(Safeguards::default().into_value(), None);
    }
}
