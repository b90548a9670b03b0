//! Providers take one measurement: Prometheus, a web endpoint, or weir's own live windows.

mod builtin;
mod compare;
pub(crate) mod http;
mod jsonpath;
mod prometheus;
mod shadow;
#[cfg(test)]
mod test_server;
mod web;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use weir_proxy::stats::{LiveStats, Role};

use super::args::resolve;
use crate::analysis::judge::{Comparison, Evidence, ShadowRun};
use crate::argo::model::{BuiltinMetric, Compare, Provider, RangeQuery};
use crate::expr::Value;

pub use jsonpath::JsonPath;

/// Argo's defaults: `timeout` of the Prometheus provider, `timeoutSeconds` of the web provider.
const PROMETHEUS_TIMEOUT: Duration = Duration::from_secs(30);
const WEB_TIMEOUT: Duration = Duration::from_secs(10);

/// What a provider saw, before any condition judges it.
#[derive(Clone, Debug, PartialEq)]
pub enum Reading {
    Value(Value),
    /// Too little data to judge (the built-in provider's minRequests guard).
    Inconclusive(String),
    /// A value with the figures behind it, for the measurement's message (comparisons).
    Judged {
        value: Value,
        detail: String,
    },
}

/// A comparison's evidence in plain words, as its measurement's message says it: what the
/// canary does now beside what the test has gathered, and how far the test has come.
pub fn in_words(evidence: &Evidence) -> String {
    match evidence.pairs {
        Some(_) => shadow::describe(evidence),
        None => compare::describe(evidence),
    }
}

/// What a metric keeps from one measurement to the next: a comparison's evidence, so that a
/// run judges once over its whole life (one alpha), not afresh at every measurement.
#[derive(Default)]
pub struct Memory {
    comparison: Option<Comparison>,
    shadow: Option<ShadowRun>,
}

/// What providers need from the running process.
#[derive(Clone, Debug)]
pub struct ProviderContext {
    pub live: Arc<LiveStats>,
}

impl ProviderContext {
    pub fn new(live: Arc<LiveStats>) -> Self {
        ProviderContext { live }
    }
}

/// A `model::Provider` with every `{{args.*}}` substituted and every default applied.
#[derive(Clone, Debug, PartialEq)]
pub enum ResolvedProvider {
    Prometheus {
        address: String,
        query: String,
        timeout: Duration,
        headers: Vec<(String, String)>,
        range: Option<RangeQuery>,
    },
    Web {
        url: String,
        method: String,
        headers: Vec<(String, String)>,
        body: Option<String>,
        json_path: Option<JsonPath>,
        timeout: Duration,
    },
    Builtin {
        route: String,
        backend: Role,
        metric: BuiltinMetric,
        window: Duration,
        min_requests: u64,
    },
}

impl ResolvedProvider {
    /// Substitutes the run's arguments; an unknown argument or a bad jsonPath is an error.
    pub fn resolve(provider: &Provider, args: &HashMap<String, String>) -> Result<Self, String> {
        let headers = |list: &[(String, crate::argo::model::Templated)]| {
            list.iter()
                .map(|(name, value)| Ok((name.clone(), resolve(&value.0, args)?)))
                .collect::<Result<Vec<_>, String>>()
        };
        Ok(match provider {
            Provider::Prometheus {
                address,
                query,
                timeout,
                headers: list,
                range,
            } => ResolvedProvider::Prometheus {
                address: resolve(&address.0, args)?,
                query: resolve(&query.0, args)?,
                timeout: timeout.unwrap_or(PROMETHEUS_TIMEOUT),
                headers: headers(list)?,
                // Argo's examples put args in range bounds too: now() - duration("{{args.lookback}}").
                range: match range {
                    Some(r) => Some(RangeQuery {
                        start: resolve(&r.start, args)?,
                        end: resolve(&r.end, args)?,
                        step: resolve(&r.step, args)?,
                    }),
                    None => None,
                },
            },
            Provider::Web {
                url,
                method,
                headers: list,
                body,
                json_path,
                timeout,
            } => ResolvedProvider::Web {
                url: resolve(&url.0, args)?,
                method: if method.is_empty() {
                    "GET".into()
                } else {
                    method.to_ascii_uppercase()
                },
                headers: headers(list)?,
                body: body.as_ref().map(|b| resolve(&b.0, args)).transpose()?,
                json_path: json_path
                    .as_ref()
                    .map(|p| JsonPath::parse(&resolve(p, args)?))
                    .transpose()?,
                timeout: timeout.unwrap_or(WEB_TIMEOUT),
            },
            Provider::Builtin(b) => ResolvedProvider::Builtin {
                route: resolve(&b.route.0, args)?,
                backend: b.backend,
                metric: b.metric,
                window: b.window,
                min_requests: b.min_requests,
            },
        })
    }

    /// "prometheus", "web", "weir/live": for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            ResolvedProvider::Prometheus { .. } => "prometheus",
            ResolvedProvider::Web { .. } => "web",
            ResolvedProvider::Builtin { .. } => "weir/live",
        }
    }
}

/// Takes one measurement. `Err` is a measurement error, with a message naming what failed.
/// A comparison runs until it decides and reports its evidence through `progress` meanwhile.
pub async fn measure(
    provider: &ResolvedProvider,
    ctx: &ProviderContext,
    memory: &mut Memory,
    progress: &(dyn Fn(Evidence) + Send + Sync),
) -> Result<Reading, String> {
    match provider {
        ResolvedProvider::Prometheus {
            address,
            query,
            timeout,
            headers,
            range,
        } => prometheus::measure(address, query, range.as_ref(), headers, *timeout).await,
        ResolvedProvider::Web {
            url,
            method,
            headers,
            body,
            json_path,
            timeout,
        } => {
            let call = http::Call {
                method,
                url,
                headers,
                body: body.as_deref(),
                timeout: *timeout,
            };
            web::measure(&call, json_path.as_ref()).await
        }
        ResolvedProvider::Builtin {
            route,
            metric:
                BuiltinMetric::Compare(
                    spec @ Compare {
                        pairs: Some(signal),
                        ..
                    },
                ),
            ..
        } => {
            shadow::measure(
                &ctx.live,
                route,
                spec,
                *signal,
                &mut memory.shadow,
                progress,
            )
            .await
        }
        ResolvedProvider::Builtin {
            route,
            metric: BuiltinMetric::Compare(spec),
            ..
        } => compare::measure(&ctx.live, route, spec, &mut memory.comparison, progress).await,
        ResolvedProvider::Builtin {
            route,
            backend,
            metric,
            window,
            min_requests,
        } => builtin::measure(&ctx.live, route, *backend, *metric, *window, *min_requests),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argo::model::{Builtin, Templated};

    fn t(s: &str) -> Templated {
        Templated(s.to_string())
    }

    #[test]
    fn resolve_substitutes_every_templated_field() {
        let args = HashMap::from([
            ("svc".to_string(), "web".to_string()),
            ("token".to_string(), "s3cret".to_string()),
        ]);
        let prometheus = Provider::Prometheus {
            address: t("http://prom:9090"),
            query: t("up{job=\"{{args.svc}}\"}"),
            timeout: None,
            headers: vec![("Authorization".into(), t("Bearer {{ args.token }}"))],
            range: None,
        };
        assert_eq!(
            ResolvedProvider::resolve(&prometheus, &args),
            Ok(ResolvedProvider::Prometheus {
                address: "http://prom:9090".into(),
                query: "up{job=\"web\"}".into(),
                timeout: PROMETHEUS_TIMEOUT,
                headers: vec![("Authorization".into(), "Bearer s3cret".into())],
                range: None,
            })
        );
        let builtin = Provider::Builtin(Builtin {
            route: t("{{args.svc}}"),
            backend: Role::Canary,
            metric: BuiltinMetric::SuccessRate,
            window: Duration::from_secs(30),
            min_requests: 20,
        });
        match ResolvedProvider::resolve(&builtin, &args) {
            Ok(ResolvedProvider::Builtin { route, .. }) => assert_eq!(route, "web"),
            other => panic!("{other:?}"),
        }
        let web = Provider::Web {
            url: t("http://x/{{args.missing}}"),
            method: String::new(),
            headers: vec![],
            body: None,
            json_path: None,
            timeout: None,
        };
        let err = ResolvedProvider::resolve(&web, &args).unwrap_err();
        assert!(err.contains("missing"), "{err}");
    }
}
