//! Percentages in the config (0..100, up to two decimals), converted to basis points.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// A percentage as written; range and precision are checked by [`to_basis_points`] during
/// validation so that every bad field is reported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Percent(pub f64);

/// 12.5 -> 1250. Refuses values outside 0..=100 and more than two decimals, which basis points
/// cannot represent.
pub fn to_basis_points(percent: Percent) -> Result<u16, String> {
    let value = percent.0;
    if !value.is_finite() || !(0.0..=100.0).contains(&value) {
        return Err(format!(
            "{value} is out of range: must be between 0 and 100"
        ));
    }
    let bp = value * 100.0;
    let rounded = bp.round();
    // Float noise (e.g. 0.29 * 100 = 28.999999999999996) is tolerated; a third decimal is not.
    if (bp - rounded).abs() > 1e-6 {
        return Err(format!("{value} has more than two decimals"));
    }
    // In range 0..=10000 by the checks above, so the cast cannot truncate.
    Ok(rounded as u16)
}

impl<'de> Deserialize<'de> for Percent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PercentVisitor)
    }
}

struct PercentVisitor;

impl Visitor<'_> for PercentVisitor {
    type Value = Percent;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a percentage between 0 and 100")
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Percent, E> {
        Ok(Percent(value as f64))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Percent, E> {
        Ok(Percent(value as f64))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Percent, E> {
        Ok(Percent(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_to_basis_points() {
        assert_eq!(to_basis_points(Percent(0.0)), Ok(0));
        assert_eq!(to_basis_points(Percent(20.0)), Ok(2000));
        assert_eq!(to_basis_points(Percent(12.5)), Ok(1250));
        assert_eq!(to_basis_points(Percent(0.29)), Ok(29));
        assert_eq!(to_basis_points(Percent(100.0)), Ok(10_000));
    }

    #[test]
    fn refuses_out_of_range_and_too_precise() {
        assert!(to_basis_points(Percent(101.0)).is_err());
        assert!(to_basis_points(Percent(-1.0)).is_err());
        assert!(to_basis_points(Percent(12.345)).is_err());
        assert!(to_basis_points(Percent(f64::NAN)).is_err());
    }
}
