//! Config fields that hold a duration, read through [`parse_duration`] inside their own
//! `Deserialize`, so the YAML reader puts the line and column of a bad value in the error.

use crate::duration::parse_duration;
use serde::Deserializer;
use serde::de::{self, Visitor};
use std::fmt::{self, Display};
use std::time::Duration;

/// What a duration field expects, for errors about a value of the wrong type (a list, `~`).
pub const EXPECTING: &str = "a duration with a unit, like 90s, 15m, 1h30m, 7d or 500ms";

/// `#[serde(deserialize_with = "nightwatch_time::serde::duration")]`: any duration the grammar
/// reads.
pub fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    duration_by(deserializer, parse_duration)
}

/// A duration field with the caller's own reading on top of the grammar (bounds, its own error
/// type): `parse` gets the text and normally calls [`parse_duration`]. A bare YAML number is
/// passed on as text too, so `timeout: 30` is refused for its missing unit, not its type.
pub fn duration_by<'de, D, T, E>(
    deserializer: D,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    E: Display,
{
    deserializer.deserialize_any(Text { parse })
}

struct Text<F> {
    parse: F,
}

impl<T, E, F> Visitor<'_> for Text<F>
where
    F: FnOnce(&str) -> Result<T, E>,
    E: Display,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(EXPECTING)
    }

    fn visit_str<V: de::Error>(self, text: &str) -> Result<T, V> {
        (self.parse)(text).map_err(V::custom)
    }

    fn visit_u64<V: de::Error>(self, value: u64) -> Result<T, V> {
        self.visit_str(&value.to_string())
    }

    fn visit_i64<V: de::Error>(self, value: i64) -> Result<T, V> {
        self.visit_str(&value.to_string())
    }

    fn visit_f64<V: de::Error>(self, value: f64) -> Result<T, V> {
        self.visit_str(&value.to_string())
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use std::time::Duration;

    #[derive(Debug, Deserialize)]
    struct Job {
        #[allow(dead_code)]
        name: String,
        #[serde(deserialize_with = "super::duration")]
        every: Duration,
    }

    #[test]
    fn a_field_reads_the_grammar() {
        let job: Job = yaml_serde::from_str("name: x\nevery: 1h30m\n").unwrap();
        assert_eq!(job.every, Duration::from_secs(5400));
    }

    #[test]
    fn a_bad_value_is_refused_at_its_line_and_column() {
        let err = yaml_serde::from_str::<Job>("name: x\nevery: 1.5h\n").unwrap_err();
        let at = err.location().expect("a location");
        assert_eq!((at.line(), at.column()), (2, 8), "{err}");
        assert!(err.to_string().contains("whole numbers"), "{err}");
        let err = yaml_serde::from_str::<Job>("name: x\nevery: 30\n").unwrap_err();
        assert!(err.to_string().contains("needs a unit"), "{err}");
        let err = yaml_serde::from_str::<Job>("name: x\nevery: [1h]\n").unwrap_err();
        assert!(err.to_string().contains(super::EXPECTING), "{err}");
    }
}
