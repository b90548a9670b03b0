//! Argo's durations: Go's `time.ParseDuration` strings (`30s`, `5m`, `1h30m`, `1.5h`, `300ms`)
//! for metric intervals, plus integer seconds where Argo's field is an IntOrString (`pause`).

use std::time::Duration;

use serde_yaml_ng::Value;

use super::node::{type_name, Ctx};

/// Go's `time.ParseDuration`, without negative values (no Argo field means "in the past").
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("`{s}` is not a duration; write e.g. 30s, 5m, 1h or 1h30m");
    let rest = s.strip_prefix('+').unwrap_or(s);
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() || rest.starts_with('-') {
        return Err(bad());
    }
    let mut total: u128 = 0;
    let mut rest = rest;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, tail) = rest.split_at(digits);
        let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
        if (whole.is_empty() && frac.is_empty()) || frac.contains('.') {
            return Err(bad());
        }
        let (unit_ns, unit_len) = unit(tail).ok_or_else(bad)?;
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| bad())?
        };
        // Fractions beyond nanoseconds are dropped, as Go does.
        let frac = &frac[..frac.len().min(18)];
        let frac_ns = if frac.is_empty() {
            0
        } else {
            let f: u128 = frac.parse().map_err(|_| bad())?;
            f * unit_ns / 10u128.pow(frac.len() as u32)
        };
        total = whole
            .checked_mul(unit_ns)
            .and_then(|n| n.checked_add(frac_ns))
            .and_then(|n| n.checked_add(total))
            .ok_or_else(bad)?;
        rest = &tail[unit_len..];
    }
    let secs = u64::try_from(total / 1_000_000_000).map_err(|_| bad())?;
    Ok(Duration::new(secs, (total % 1_000_000_000) as u32))
}

/// The unit at the start of `s`: (nanoseconds per unit, bytes it takes).
fn unit(s: &str) -> Option<(u128, usize)> {
    const UNITS: [(&str, u128); 8] = [
        ("ns", 1),
        ("us", 1_000),
        ("µs", 1_000),
        ("μs", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
    ];
    // "ms" must win over "m": the table lists it first.
    UNITS
        .iter()
        .find(|(u, _)| s.starts_with(u))
        .map(|(u, ns)| (*ns, u.len()))
}

/// A `pause.duration` (IntOrString): integer seconds, a string of digits, or a Go duration.
pub(crate) fn pause_duration(cx: &mut Ctx, v: &Value, path: &str) -> Option<Duration> {
    let parsed = match v {
        Value::Number(n) => match n.as_u64() {
            Some(secs) => Ok(Duration::from_secs(secs)),
            None => Err(format!("{n} is not a whole number of seconds")),
        },
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s
            .parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| format!("`{s}` is too many seconds")),
        Value::String(s) => parse_go_duration(s),
        other => Err(format!(
            "expected a duration (30s, 5m, 1h30m or integer seconds), found {}",
            type_name(other)
        )),
    };
    match parsed {
        Ok(d) => Some(d),
        Err(msg) => {
            cx.problem(path, msg);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let ok = |s: &str| parse_go_duration(s).ok();
        assert_eq!(ok("30s"), Some(Duration::from_secs(30)));
        assert_eq!(ok("5m"), Some(Duration::from_secs(300)));
        assert_eq!(ok("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(ok("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(ok("300ms"), Some(Duration::from_millis(300)));
        assert_eq!(ok("0"), Some(Duration::ZERO));
        for bad in ["", "10", "s", "5x", "-5s", "1..5s", "5m3", "."] {
            assert_eq!(ok(bad), None, "{bad}");
        }
    }
}
