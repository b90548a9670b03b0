//! `{{args.NAME}}` placeholders, and the numbers and durations that Argo lets them fill.

use std::collections::HashMap;
use std::time::Duration;

/// Replaces every `{{args.NAME}}` (spaces inside the braces allowed) with the argument's value.
/// An unknown argument is an error; other `{{...}}` text is left as written.
pub fn resolve(template: &str, args: &HashMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open + 2..].find("}}") else {
            break;
        };
        let inner = &rest[open + 2..open + 2 + close];
        out.push_str(&rest[..open]);
        match inner.trim().strip_prefix("args.") {
            Some(name) => {
                let name = name.trim();
                let value = args
                    .get(name)
                    .ok_or_else(|| format!("unknown argument {name:?} in {{{{{inner}}}}}"))?;
                out.push_str(value);
            }
            None => out.push_str(&rest[open..open + 4 + close]),
        }
        rest = &rest[open + 4 + close..];
    }
    out.push_str(rest);
    Ok(out)
}

/// An integer field such as `count` or `failureLimit`, after substitution.
pub fn integer(field: &str, text: &str) -> Result<i64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("{field}: {text:?} is not an integer"))
}

/// A field that must not be negative.
pub fn count(field: &str, text: &str) -> Result<u64, String> {
    let value = integer(field, text)?;
    u64::try_from(value).map_err(|_| format!("{field}: {value} must not be negative"))
}

/// Argo's duration strings: Go's `time.ParseDuration` forms (`30s`, `5m`, `1h30m`, `1.5h`,
/// `500ms`), or a bare integer meaning seconds.
pub fn duration(field: &str, text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let bad = |why: &str| format!("{field}: invalid duration {text:?}: {why}");
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    if text.is_empty() {
        return Err(bad("empty"));
    }
    let mut total = 0.0_f64;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| bad("missing unit (use ms, s, m or h)"))?;
        if digits == 0 {
            return Err(bad("expected a number"));
        }
        let number: f64 = rest[..digits].parse().map_err(|_| bad("bad number"))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            other => return Err(bad(&format!("unknown unit {other:?}"))),
        };
        total += number * seconds_per_unit;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad("out of range"))
}

/// `30s`, `1m30s`, `250ms`: how durations appear in messages.
pub fn show_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if d.subsec_nanos() != 0 {
        return format!("{}ms", d.as_millis());
    }
    match (secs / 60, secs % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> HashMap<String, String> {
        HashMap::from([
            ("service".to_string(), "web".to_string()),
            ("slo".to_string(), "99.9".to_string()),
        ])
    }

    #[test]
    fn resolves_placeholders_with_and_without_spaces() {
        let got = resolve("rate{svc=\"{{args.service}}\"} > {{ args.slo }}", &args());
        assert_eq!(got, Ok("rate{svc=\"web\"} > 99.9".to_string()));
        assert_eq!(resolve("plain", &args()), Ok("plain".to_string()));
        // Not ours, and unterminated: left as written.
        assert_eq!(
            resolve("{{workflow.x}} {{args.service", &args()),
            Ok("{{workflow.x}} {{args.service".to_string())
        );
    }

    #[test]
    fn unknown_argument_is_an_error() {
        let err = resolve("x{{args.nope}}", &args()).unwrap_err();
        assert!(err.contains("\"nope\""), "{err}");
    }

    #[test]
    fn durations_in_go_forms() {
        let d = |t| duration("interval", t);
        assert_eq!(d("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(d("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(d("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(d("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(d("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(d("45"), Ok(Duration::from_secs(45)));
        for bad in ["", "5x", "m", "5 m", "-5s", "1.5"] {
            assert!(d(bad).is_err(), "{bad:?} should fail");
        }
        assert_eq!(show_duration(Duration::from_secs(30)), "30s");
        assert_eq!(show_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(show_duration(Duration::from_secs(300)), "5m");
    }

    #[test]
    fn counts_reject_negatives_and_words() {
        assert_eq!(count("count", " 5 "), Ok(5));
        assert!(count("count", "-1").is_err());
        assert!(count("count", "five").is_err());
        assert_eq!(integer("failureLimit", "-1"), Ok(-1));
    }
}
