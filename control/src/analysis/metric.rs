//! A metric ready to run: arguments substituted, numbers and durations parsed, conditions
//! compiled. Everything that can be wrong with a metric is found here, before any measurement.

use std::collections::HashMap;
use std::time::Duration;

use super::args::{count, duration, integer, resolve};
use super::provider::ResolvedProvider;
use super::verdict::{Conditions, Limits};
use crate::argo::model::{Builtin, BuiltinMetric, Metric, Provider, Templated};
use crate::expr::Condition;

#[derive(Clone, Debug)]
pub struct ResolvedMetric {
    pub name: String,
    pub interval: Option<Duration>,
    pub initial_delay: Option<Duration>,
    pub limits: Limits,
    pub conditions: Conditions,
    pub provider: ResolvedProvider,
}

impl ResolvedMetric {
    /// The error names the metric and the field.
    pub fn resolve(metric: &Metric, args: &HashMap<String, String>) -> Result<Self, String> {
        resolve_metric(metric, args).map_err(|e| format!("metric {:?}: {e}", metric.name))
    }
}

fn resolve_metric(
    metric: &Metric,
    args: &HashMap<String, String>,
) -> Result<ResolvedMetric, String> {
    let text =
        |field: &str, t: &Templated| resolve(&t.0, args).map_err(|e| format!("{field}: {e}"));
    let optional_duration = |field: &str, t: &Option<Templated>| match t {
        Some(t) => duration(field, &text(field, t)?).map(Some),
        None => Ok(None),
    };
    let interval = optional_duration("interval", &metric.interval)?;
    if interval.is_some_and(|i| i.is_zero()) {
        return Err("interval must be positive".into());
    }
    let initial_delay = optional_duration("initialDelay", &metric.initial_delay)?;

    // Argo's EffectiveCount: an unset (or 0) count is 1 without an interval, unbounded with one.
    let explicit = match &metric.count {
        Some(t) => count("count", &text("count", t)?)?,
        None => 0,
    };
    let effective_count = match (explicit, interval) {
        (0, None) => Some(1),
        (0, Some(_)) => None,
        (n, None) if n > 1 => {
            return Err(format!("count {n} needs an interval between measurements"))
        }
        (n, _) => Some(n),
    };
    let failure_limit = integer(
        "failureLimit",
        &text("failureLimit", &metric.failure_limit)?,
    )?;
    let consecutive_success_limit = count(
        "consecutiveSuccessLimit",
        &text("consecutiveSuccessLimit", &metric.consecutive_success_limit)?,
    )?;
    if failure_limit < -1 {
        return Err(format!(
            "failureLimit {failure_limit}: use -1 to disable it"
        ));
    }
    if failure_limit == -1 && consecutive_success_limit == 0 {
        return Err(
            "failureLimit -1 needs a consecutiveSuccessLimit > 0: nothing could decide the metric"
                .into(),
        );
    }
    let limits = Limits {
        count: effective_count,
        failure_limit,
        inconclusive_limit: count(
            "inconclusiveLimit",
            &text("inconclusiveLimit", &metric.inconclusive_limit)?,
        )?,
        consecutive_error_limit: count(
            "consecutiveErrorLimit",
            &text("consecutiveErrorLimit", &metric.consecutive_error_limit)?,
        )?,
        consecutive_success_limit,
    };

    let condition = |field: &str, source: &Option<String>| match source {
        Some(source) => Condition::parse(source)
            .map(Some)
            .map_err(|e| format!("{field} {source:?}: {e}")),
        None => Ok(None),
    };
    let mut conditions = Conditions {
        success: condition("successCondition", &metric.success_condition)?,
        failure: condition("failureCondition", &metric.failure_condition)?,
    };
    // A comparison's result is its verdict; without conditions Argo would pass any result,
    // so it is judged by the verdict itself.
    let compares = matches!(
        &metric.provider,
        Provider::Builtin(Builtin {
            metric: BuiltinMetric::Compare(_),
            ..
        })
    );
    if compares && conditions.success.is_none() && conditions.failure.is_none() {
        conditions = Conditions {
            success: Some(
                Condition::parse(r#"result == "Successful""#).map_err(|e| e.to_string())?,
            ),
            failure: Some(Condition::parse(r#"result == "Failed""#).map_err(|e| e.to_string())?),
        };
    }
    let provider =
        ResolvedProvider::resolve(&metric.provider, args).map_err(|e| format!("provider: {e}"))?;
    Ok(ResolvedMetric {
        name: metric.name.clone(),
        interval,
        initial_delay,
        limits,
        conditions,
        provider,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::argo::model::Compare;
    use weir_proxy::stats::Role;

    fn t(s: &str) -> Templated {
        Templated(s.to_string())
    }

    /// A builtin success-rate metric on route `web`, measured once.
    pub(crate) fn metric(name: &str) -> Metric {
        Metric {
            name: name.to_string(),
            interval: None,
            count: None,
            initial_delay: None,
            success_condition: None,
            failure_condition: None,
            failure_limit: t("0"),
            inconclusive_limit: t("0"),
            consecutive_error_limit: t("4"),
            consecutive_success_limit: t("0"),
            dry_run: false,
            provider: Provider::Builtin(Builtin {
                route: t("web"),
                backend: Role::Canary,
                metric: BuiltinMetric::SuccessRate,
                window: Duration::from_secs(30),
                min_requests: 10,
            }),
        }
    }

    fn args() -> HashMap<String, String> {
        HashMap::from([
            ("n".to_string(), "5".to_string()),
            ("every".to_string(), "30s".to_string()),
        ])
    }

    #[test]
    fn templated_numbers_and_durations_resolve() {
        let mut m = metric("rate");
        m.count = Some(t("{{args.n}}"));
        m.interval = Some(t("{{ args.every }}"));
        m.initial_delay = Some(t("1m"));
        m.failure_limit = t("{{args.n}}");
        let r = ResolvedMetric::resolve(&m, &args()).unwrap();
        assert_eq!(r.interval, Some(Duration::from_secs(30)));
        assert_eq!(r.initial_delay, Some(Duration::from_secs(60)));
        assert_eq!(r.limits.count, Some(5));
        assert_eq!(r.limits.failure_limit, 5);
        assert_eq!(r.limits.consecutive_error_limit, 4);
    }

    #[test]
    fn effective_count() {
        let mut m = metric("rate");
        assert_eq!(
            ResolvedMetric::resolve(&m, &args()).unwrap().limits.count,
            Some(1)
        );
        m.interval = Some(t("10s"));
        assert_eq!(
            ResolvedMetric::resolve(&m, &args()).unwrap().limits.count,
            None
        );
        m.count = Some(t("0"));
        assert_eq!(
            ResolvedMetric::resolve(&m, &args()).unwrap().limits.count,
            None
        );
    }

    /// A comparison on route `web` with the default tolerance, of errors or of latency (p99).
    pub(crate) fn comparison(name: &str, latency: bool) -> Metric {
        let mut m = metric(name);
        m.provider = Provider::Builtin(Builtin {
            route: t("web"),
            backend: Role::Canary,
            metric: BuiltinMetric::Compare(Compare {
                latency_quantile: latency.then_some(Compare::DEFAULT_QUANTILE),
                max_ratio: Compare::DEFAULT_MAX_RATIO,
                margin: Compare::DEFAULT_MARGIN,
                alpha: Compare::DEFAULT_ALPHA,
                max_duration: None,
                pairs: None,
            }),
            window: Duration::from_secs(30),
            min_requests: 0,
        });
        m
    }

    #[test]
    fn a_comparison_without_conditions_is_judged_by_its_verdict() {
        let m = comparison("errors", false);
        let r = ResolvedMetric::resolve(&m, &args()).unwrap();
        let judge = |verdict: &str| {
            r.conditions
                .judge(Ok(crate::analysis::Reading::Value(
                    crate::expr::Value::String(verdict.into()),
                )))
                .phase
        };
        use crate::analysis::Phase;
        assert_eq!(judge("Failed"), Phase::Failed);
        assert_eq!(judge("Successful"), Phase::Successful);
        assert_eq!(judge("Inconclusive"), Phase::Inconclusive);
        // A plain metric keeps Argo's rule: no conditions pass any value.
        let plain = ResolvedMetric::resolve(&metric("rate"), &args()).unwrap();
        assert!(plain.conditions.success.is_none());
    }

    #[test]
    fn bad_values_name_metric_and_field() {
        type Edit = fn(&mut Metric);
        let cases: Vec<(Edit, &str)> = vec![
            (
                |m| m.count = Some(t("lots")),
                "metric \"rate\": count: \"lots\" is not an integer",
            ),
            (
                |m| m.interval = Some(t("5 minutes")),
                "metric \"rate\": interval: invalid duration",
            ),
            (|m| m.count = Some(t("3")), "count 3 needs an interval"),
            (
                |m| m.failure_limit = t("{{args.nope}}"),
                "failureLimit: unknown argument \"nope\"",
            ),
            (
                |m| m.failure_limit = t("-1"),
                "failureLimit -1 needs a consecutiveSuccessLimit",
            ),
            (|m| m.failure_limit = t("-2"), "failureLimit -2"),
            (
                |m| m.inconclusive_limit = t("-1"),
                "inconclusiveLimit: -1 must not be negative",
            ),
        ];
        for (edit, want) in cases {
            let mut m = metric("rate");
            edit(&mut m);
            let err = ResolvedMetric::resolve(&m, &args()).unwrap_err();
            assert!(err.contains(want), "{err:?} should contain {want:?}");
        }
    }
}
