use serde::{Deserialize, Serialize};
use std::fmt;

/// What policy says about an action.
///
/// Ordered from most to least permissive so that `max` picks the strictest: across rules that
/// match and across the invocations of one line, the strictest verdict wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Go ahead.
    Allow,
    /// A human must approve first.
    Ask,
    /// Stop and notify the operator.
    Halt,
    /// Refused, usually with somewhere else to go instead.
    Deny,
}

impl Verdict {
    pub const ALL: [Verdict; 4] = [Verdict::Allow, Verdict::Ask, Verdict::Halt, Verdict::Deny];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Halt => "halt",
            Verdict::Deny => "deny",
        }
    }

    pub fn parse(text: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// The stricter of two verdicts.
    pub fn strictest(self, other: Verdict) -> Verdict {
        self.max(other)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_is_strictest_then_halt_then_ask() {
        assert_eq!(Verdict::Allow.strictest(Verdict::Ask), Verdict::Ask);
        assert_eq!(Verdict::Ask.strictest(Verdict::Halt), Verdict::Halt);
        assert_eq!(Verdict::Deny.strictest(Verdict::Halt), Verdict::Deny);
        assert_eq!(Verdict::ALL.into_iter().max(), Some(Verdict::Deny));
    }

    #[test]
    fn names_round_trip() {
        for v in Verdict::ALL {
            assert_eq!(Verdict::parse(v.as_str()), Some(v));
        }
        assert_eq!(Verdict::parse("maybe"), None);
    }
}
