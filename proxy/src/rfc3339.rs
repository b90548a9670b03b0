//! RFC 3339 times in UTC, written once for the access log and the control plane's events:
//! the civil date of a count of days since the epoch (the proleptic Gregorian calendar, by the
//! days-from-civil arithmetic of eras of 400 years).

use std::io::Write;

/// `YYYY-MM-DDTHH:MM:SS` of `secs` since the epoch, appended to `out`.
pub fn date_time(out: &mut Vec<u8>, secs: u64) {
    let days = (secs / 86_400) as i64;
    let of_day = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let _ = write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    );
}

/// `2026-12-07T03:00:00.123Z` from Unix milliseconds.
pub fn with_millis(ms: u64) -> String {
    let mut out = Vec::with_capacity(24);
    date_time(&mut out, ms / 1000);
    let _ = write!(out, ".{:03}Z", ms % 1000);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_follow_the_calendar() {
        let date = |secs| {
            let mut out = Vec::new();
            date_time(&mut out, secs);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(date(0), "1970-01-01T00:00:00");
        assert_eq!(date(951_782_400), "2000-02-29T00:00:00");
        assert_eq!(date(1_709_251_199), "2024-02-29T23:59:59");
        assert_eq!(date(4_107_542_400), "2100-03-01T00:00:00");
    }
}
