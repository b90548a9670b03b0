//! weir's built-in provider: reads the proxy's live windows, so a verdict needs no scrape.

use std::time::Duration;

use weir_proxy::stats::{LiveStats, Role};

use super::super::args::show_duration;
use super::Reading;
use crate::argo::model::BuiltinMetric;
use crate::expr::Value;

pub fn measure(
    live: &LiveStats,
    route: &str,
    backend: Role,
    metric: BuiltinMetric,
    window: Duration,
    min_requests: u64,
) -> Result<Reading, String> {
    let snapshot = live.snapshot(route, backend, window).ok_or_else(|| {
        format!(
            "weir/live: no {} window for route {route:?} (no such route, or it has no {} backend)",
            backend.as_str(),
            backend.as_str()
        )
    })?;
    let span = show_duration(window);
    // `requests` is the one metric that is meaningful, and wanted, on thin traffic.
    if metric != BuiltinMetric::Requests && snapshot.requests < min_requests.max(1) {
        return Ok(Reading::Inconclusive(format!(
            "{} requests in the last {span}, fewer than minRequests {min_requests}",
            snapshot.requests
        )));
    }
    let value = match metric {
        BuiltinMetric::Requests => Some(snapshot.requests as f64),
        BuiltinMetric::SuccessRate => snapshot.success_rate(),
        BuiltinMetric::ErrorRate => snapshot.error_ratio(),
        BuiltinMetric::Latency { quantile } => {
            if !(0.0..=1.0).contains(&quantile) {
                return Err(format!("weir/live: quantile {quantile} is not within 0..1"));
            }
            snapshot.quantile(quantile).map(|d| d.as_secs_f64())
        }
        BuiltinMetric::Compare(_) => {
            return Err("weir/live: a comparison is measured over time, not from a window".into())
        }
        BuiltinMetric::BurnRate { slo } => {
            if !(slo > 0.0 && slo < 1.0) {
                return Err(format!(
                    "weir/live: SLO {slo} leaves no error budget (want 0 < slo < 1)"
                ));
            }
            snapshot.burn_rate(slo)
        }
    };
    // Only reachable without traffic, which the guard above already turned into Inconclusive.
    value
        .map(|v| Reading::Value(Value::Number(v)))
        .ok_or_else(|| format!("weir/live: no requests in the last {span}"))
}

#[cfg(test)]
mod tests {
    use weir_proxy::stats::{Outcome, UpstreamError};

    use super::*;

    const WINDOW: Duration = Duration::from_secs(30);

    fn live() -> LiveStats {
        let live = LiveStats::new();
        let canary = live.window("web", Role::Canary);
        // 100 requests: 2 × 503, 1 connect error, 5 × 404 (not failures); latencies 1..=100 ms.
        for i in 1..=100u64 {
            let latency = Duration::from_millis(i);
            let outcome = match i {
                1 | 2 => Outcome::response(503, latency),
                3 => Outcome::error(UpstreamError::Connect, latency),
                10..=14 => Outcome::response(404, latency),
                _ => Outcome::response(200, latency),
            };
            canary.record(&outcome);
        }
        live.window("web", Role::Stable);
        live
    }

    fn number(reading: Result<Reading, String>) -> f64 {
        match reading {
            Ok(Reading::Value(Value::Number(n))) => n,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn success_rate_counts_5xx_and_upstream_errors_not_4xx() {
        let live = live();
        let m = |metric| measure(&live, "web", Role::Canary, metric, WINDOW, 20);
        assert!((number(m(BuiltinMetric::SuccessRate)) - 0.97).abs() < 1e-9);
        assert!((number(m(BuiltinMetric::ErrorRate)) - 0.03).abs() < 1e-9);
        assert_eq!(number(m(BuiltinMetric::Requests)), 100.0);
    }

    #[test]
    fn latency_quantile_in_seconds() {
        let live = live();
        let p99 = number(measure(
            &live,
            "web",
            Role::Canary,
            BuiltinMetric::Latency { quantile: 0.99 },
            WINDOW,
            20,
        ));
        assert!((p99 - 0.099).abs() / 0.099 < 0.01, "{p99}");
        let p50 = number(measure(
            &live,
            "web",
            Role::Canary,
            BuiltinMetric::Latency { quantile: 0.5 },
            WINDOW,
            20,
        ));
        assert!((p50 - 0.050).abs() / 0.050 < 0.01, "{p50}");
    }

    #[test]
    fn burn_rate_against_slo() {
        let live = live();
        let burn = number(measure(
            &live,
            "web",
            Role::Canary,
            BuiltinMetric::BurnRate { slo: 0.999 },
            WINDOW,
            20,
        ));
        // 3 % errors against a 0.1 % budget.
        assert!((burn - 30.0).abs() < 1e-6, "{burn}");
        let err = measure(
            &live,
            "web",
            Role::Canary,
            BuiltinMetric::BurnRate { slo: 1.0 },
            WINDOW,
            20,
        );
        assert!(err.is_err());
    }

    #[test]
    fn min_requests_guard_is_inconclusive() {
        let live = live();
        let reading = measure(
            &live,
            "web",
            Role::Canary,
            BuiltinMetric::SuccessRate,
            WINDOW,
            150,
        );
        assert_eq!(
            reading,
            Ok(Reading::Inconclusive(
                "100 requests in the last 30s, fewer than minRequests 150".into()
            ))
        );
        // A backend with no traffic at all, even with minRequests 0.
        let reading = measure(
            &live,
            "web",
            Role::Stable,
            BuiltinMetric::SuccessRate,
            WINDOW,
            0,
        );
        assert!(matches!(reading, Ok(Reading::Inconclusive(m)) if m.starts_with("0 requests")));
        // `requests` itself is never guarded.
        let reading = measure(
            &live,
            "web",
            Role::Stable,
            BuiltinMetric::Requests,
            WINDOW,
            50,
        );
        assert_eq!(number(reading), 0.0);
    }

    #[test]
    fn unknown_route_is_an_error() {
        let live = live();
        let err = measure(
            &live,
            "api",
            Role::Canary,
            BuiltinMetric::SuccessRate,
            WINDOW,
            20,
        )
        .unwrap_err();
        assert!(err.contains("\"api\""), "{err}");
    }
}
