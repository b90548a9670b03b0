//! Durations in the config: `500ms`, `30s`, `5m`, `1h`, or a bare integer meaning seconds.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserialize, Deserializer, Visitor};

const EXPECTED: &str = "a duration like 500ms, 30s, 5m, 1h, or a number of seconds";

/// Parses `<digits><unit>` with unit ms|s|m|h, or bare digits (seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() {
        return Err(format!("invalid duration {text:?}: expected {EXPECTED}"));
    }
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("invalid duration {text:?}: number too large"))?;
    let millis_per_unit: u64 = match unit.trim_start() {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        other => {
            return Err(format!(
                "invalid duration {text:?}: unknown unit {other:?} (use ms, s, m or h)"
            ))
        }
    };
    value
        .checked_mul(millis_per_unit)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("invalid duration {text:?}: too large"))
}

/// A duration field as written in YAML; positivity is checked later so that every bad field
/// is reported, not just the first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigDuration(pub Duration);

impl<'de> Deserialize<'de> for ConfigDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DurationVisitor)
    }
}

struct DurationVisitor;

impl Visitor<'_> for DurationVisitor {
    type Value = ConfigDuration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(EXPECTED)
    }

    fn visit_u64<E: de::Error>(self, secs: u64) -> Result<Self::Value, E> {
        Ok(ConfigDuration(Duration::from_secs(secs)))
    }

    fn visit_i64<E: de::Error>(self, secs: i64) -> Result<Self::Value, E> {
        u64::try_from(secs)
            .map(|secs| ConfigDuration(Duration::from_secs(secs)))
            .map_err(|_| E::custom(format!("invalid duration {secs}: must not be negative")))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        parse_duration(text).map(ConfigDuration).map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_bare_seconds() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "s",
            "10x",
            "1.5s",
            "-3s",
            "99999999999999999999s",
            "ten",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should not parse");
        }
    }
}
