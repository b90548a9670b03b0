//! Kubernetes resource quantities (`500m`, `1`, `0.5`, `2Ki`, `1e3`), as SMI v1alpha1 writes
//! TrafficSplit weights. Only the value matters here (weights are relative to their sum), so the
//! result is an `f64`.

/// Parses a quantity: `[+-]digits[.digits]` followed by an optional suffix — binary SI
/// (`Ki Mi Gi Ti Pi Ei`), decimal SI (`n u m k M G T P E`) or a decimal exponent (`e3`, `E-2`).
pub fn parse_quantity(text: &str) -> Result<f64, String> {
    let s = text.trim();
    let bad = |why: &str| format!("invalid quantity {text:?}: {why}");
    if s.is_empty() {
        return Err(bad("empty"));
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    if matches!(bytes[0], b'+' | b'-') {
        i = 1;
    }
    let mut seen_digit = false;
    let mut seen_dot = false;
    while i < bytes.len() {
        match bytes[i] {
            b'0'..=b'9' => seen_digit = true,
            b'.' if !seen_dot => seen_dot = true,
            _ => break,
        }
        i += 1;
    }
    if !seen_digit {
        return Err(bad("no digits"));
    }
    let number: f64 = s[..i].parse().map_err(|_| bad("malformed number"))?;
    let suffix = &s[i..];
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exp if exp.starts_with(['e', 'E']) => {
            let rest = &exp[1..];
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("malformed exponent"));
            }
            let e: i32 = rest.parse().map_err(|_| bad("exponent out of range"))?;
            10f64.powi(e)
        }
        _ => return Err(bad(&format!("unknown suffix {suffix:?}"))),
    };
    let value = number * factor;
    if !value.is_finite() {
        return Err(bad("out of range"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::parse_quantity;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn smi_v1alpha1_weights() {
        for (text, want) in [
            ("500m", 0.5),
            ("1", 1.0),
            ("0.5", 0.5),
            ("100", 100.0),
            ("100m", 0.1),
            ("900m", 0.9),
            ("1000m", 1.0),
            ("0", 0.0),
            (".5", 0.5),
            ("+2", 2.0),
            ("2k", 2000.0),
            ("1Ki", 1024.0),
            ("1e3", 1000.0),
            ("5E-1", 0.5),
            ("250u", 0.00025),
            (" 7 ", 7.0),
        ] {
            let got = parse_quantity(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(close(got, want), "{text}: {got} != {want}");
        }
    }

    #[test]
    fn malformed_quantities_are_refused() {
        for text in [
            "", "m", "abc", "1x", "1.2.3", "1e", "1e+", "--1", "1 m", "1mi",
        ] {
            assert!(parse_quantity(text).is_err(), "{text:?} was accepted");
        }
    }
}
