//! How much a backup may hold and how long it is kept: the two settings an operator writes in
//! the config file, so sizes read the way people write them (`64MiB`).

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// A number of bytes, written in config either as an integer or as text with a unit: `512`,
/// `64MiB`, `1.5 GiB`, `10MB`. `K`, `M`, `G`, `T` (and `KiB`…) are powers of 1024; `KB`, `MB`,
/// `GB`, `TB` are powers of 1000, as `df -H` and `df -h` disagree and both are in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// Reads `64MiB`, `1.5 GiB`, `10MB`, `512`. `None` for anything else, or past `u64`.
    pub fn parse(text: &str) -> Option<ByteSize> {
        let text = text.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kib" => 1 << 10,
            "m" | "mib" => 1 << 20,
            "g" | "gib" => 1 << 30,
            "t" | "tib" => 1 << 40,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            "tb" => 1_000_000_000_000,
            _ => return None,
        };
        let (whole, fraction) = match number.split_once('.') {
            Some((w, f)) => (w, f),
            None => (number, ""),
        };
        if whole.is_empty() || fraction.contains('.') {
            return None;
        }
        let whole: u64 = whole.parse().ok()?;
        let mut bytes = whole.checked_mul(multiplier)?;
        if !fraction.is_empty() {
            // Exact decimal arithmetic: at most 12 fractional digits is plenty for sizes.
            if fraction.len() > 12 {
                return None;
            }
            let digits: u128 = fraction.parse().ok()?;
            let scale = 10u128.pow(fraction.len() as u32);
            let extra = digits * u128::from(multiplier) / scale;
            bytes = bytes.checked_add(u64::try_from(extra).ok()?)?;
        }
        Some(ByteSize(bytes))
    }
}

impl fmt::Display for ByteSize {
    /// The largest binary unit that keeps the number at least 1: `64 MiB`, `1.5 GiB`, `120 B`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u64); 4] = [
            ("TiB", 1 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ];
        for (name, size) in UNITS {
            if self.0 >= size {
                let tenths = (u128::from(self.0) * 10 / u128::from(size)) as u64;
                return if tenths.is_multiple_of(10) {
                    write!(f, "{} {name}", tenths / 10)
                } else {
                    write!(f, "{}.{} {name}", tenths / 10, tenths % 10)
                };
            }
        }
        write!(f, "{} B", self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ByteSize, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(u64),
            Text(String),
        }
        match Written::deserialize(deserializer)? {
            Written::Number(n) => Ok(ByteSize(n)),
            Written::Text(t) => ByteSize::parse(&t).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "`{t}` is not a size; write a number of bytes or a number with a unit, \
                     like 64MiB or 10MB"
                ))
            }),
        }
    }
}

/// What one snapshot may store. Over a limit a path is recorded as skipped with the reason, so
/// a restore can say exactly what it cannot bring back; it is never silently left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest single file backed up.
    pub max_file_bytes: ByteSize,
    /// Largest total of file contents under one directory backed up.
    pub max_dir_bytes: ByteSize,
    /// Most entries (files, directories, links, at any depth) under one directory backed up.
    pub max_dir_entries: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_file_bytes: ByteSize(64 << 20),
            max_dir_bytes: ByteSize(16 << 20),
            max_dir_entries: 1000,
        }
    }
}

/// How long snapshots are kept. Age comes first; the size cap then removes the oldest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Retention {
    /// Snapshots older than this many days are removed unless still needed.
    pub keep_days: u32,
    /// Above this total (manifests plus the objects they use) the oldest snapshots go first.
    pub max_total_bytes: Option<ByteSize>,
}

impl Default for Retention {
    fn default() -> Retention {
        Retention {
            keep_days: 30,
            max_total_bytes: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_the_way_people_write_them() {
        for (text, bytes) in [
            ("512", 512),
            ("64MiB", 64 << 20),
            ("64 MiB", 64 << 20),
            ("16m", 16 << 20),
            ("1.5GiB", 3 << 29),
            ("10MB", 10_000_000),
            ("0", 0),
        ] {
            assert_eq!(ByteSize::parse(text), Some(ByteSize(bytes)), "{text}");
        }
        for bad in [
            "",
            "MiB",
            "1..5M",
            "12 parsecs",
            "-1",
            "99999999999999999999",
            "1e6",
        ] {
            assert_eq!(ByteSize::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn sizes_display_in_binary_units() {
        assert_eq!(ByteSize(64 << 20).to_string(), "64 MiB");
        assert_eq!(ByteSize(3 << 29).to_string(), "1.5 GiB");
        assert_eq!(ByteSize(120).to_string(), "120 B");
    }

    #[test]
    fn limits_accept_human_sizes_and_refuse_unknown_fields() {
        let limits: Limits =
            serde_json::from_str(r#"{"max_file_bytes":"1MiB","max_dir_entries":10}"#).unwrap();
        assert_eq!(limits.max_file_bytes, ByteSize(1 << 20));
        assert_eq!(limits.max_dir_bytes, Limits::default().max_dir_bytes);
        assert_eq!(limits.max_dir_entries, 10);
        let err = serde_json::from_str::<Limits>(r#"{"max_file_size":"1MiB"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
        let err = serde_json::from_str::<Limits>(r#"{"max_file_bytes":"lots"}"#).unwrap_err();
        assert!(err.to_string().contains("not a size"), "{err}");
        let retention: Retention =
            serde_json::from_str(r#"{"keep_days":7,"max_total_bytes":"2GB"}"#).unwrap();
        assert_eq!(retention.max_total_bytes, Some(ByteSize(2_000_000_000)));
    }
}
