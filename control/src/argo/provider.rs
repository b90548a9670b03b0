//! A metric's `provider`: prometheus, web, or weir's built-in `plugin: {weir/live: …}`.

use std::time::Duration;

use serde_yaml_ng::{Mapping, Value};
use weir_proxy::stats::Role;

use super::duration::parse_go_duration;
use super::model::{Builtin, BuiltinMetric, Compare, PairSignal, Provider, RangeQuery, Templated};
use super::node::{
    boolean, field, index, int_in, join, mapping, number, object, opt_string, req_string, seq, Ctx,
    Fields,
};
use super::templated::check_placeholders;

const SUPPORTED: &str = "weir measures with prometheus, web, or its built-in plugin weir/live";
const LACKING: [&str; 9] = [
    "job",
    "kayenta",
    "datadog",
    "newRelic",
    "wavefront",
    "cloudWatch",
    "graphite",
    "influxdb",
    "skywalking",
];
const AUTH: (&str, &str) = (
    "authentication",
    "is not supported; pass credentials in headers (e.g. Authorization)",
);

pub(crate) fn provider(
    cx: &mut Ctx,
    v: &Value,
    path: &str,
    declared: &[String],
) -> Option<Provider> {
    let m = mapping(cx, v, path)?;
    let kinds: Vec<&str> = m.keys().filter_map(Value::as_str).collect();
    if kinds.len() != 1 || m.len() != 1 {
        cx.problem(path, format!("set exactly one provider; {SUPPORTED}"));
        return None;
    }
    let kind = kinds[0];
    let at = join(path, kind);
    let body = m.get(kind).unwrap_or(&Value::Null);
    match kind {
        "prometheus" | "web" | "plugin" => check_placeholders(cx, body, &at, declared),
        _ => {}
    }
    match kind {
        "prometheus" => prometheus(cx, body, &at),
        "web" => web(cx, body, &at),
        "plugin" => plugin(cx, body, &at),
        k if LACKING.contains(&k) => {
            cx.problem(
                &at,
                format!("the {k} provider is not supported; {SUPPORTED}"),
            );
            None
        }
        k => {
            cx.problem(&at, format!("unknown provider `{k}`; {SUPPORTED}"));
            None
        }
    }
}

fn prometheus(cx: &mut Ctx, v: &Value, path: &str) -> Option<Provider> {
    let fields = Fields {
        used: &[
            "address",
            "query",
            "timeout",
            "headers",
            "rangeQuery",
            "insecure",
        ],
        ignored: &[],
        refused: &[AUTH],
    };
    let before = cx.count();
    let m = object(cx, v, path, &fields)?;
    let address = req_string(cx, m, "address", path);
    let query = req_string(cx, m, "query", path);
    let timeout = seconds(cx, m, "timeout", path);
    let headers = headers(cx, m, path);
    secure(cx, m, path);
    let range = field(m, "rangeQuery").and_then(|r| {
        let at = join(path, "rangeQuery");
        let rf = Fields {
            used: &["start", "end", "step"],
            ignored: &[],
            refused: &[],
        };
        let r = object(cx, r, &at, &rf)?;
        let (start, end, step) = (
            req_string(cx, r, "start", &at),
            req_string(cx, r, "end", &at),
            req_string(cx, r, "step", &at),
        );
        Some(RangeQuery {
            start: start?,
            end: end?,
            step: step?,
        })
    });
    if cx.count() != before {
        return None;
    }
    Some(Provider::Prometheus {
        address: Templated(address?),
        query: Templated(query?),
        timeout,
        headers,
        range,
    })
}

fn web(cx: &mut Ctx, v: &Value, path: &str) -> Option<Provider> {
    let fields = Fields {
        used: &[
            "url",
            "method",
            "headers",
            "body",
            "jsonPath",
            "timeoutSeconds",
            "insecure",
        ],
        ignored: &[],
        refused: &[
            AUTH,
            (
                "jsonBody",
                "is not supported; pass the JSON as a string in `body`",
            ),
        ],
    };
    let before = cx.count();
    let m = object(cx, v, path, &fields)?;
    let url = req_string(cx, m, "url", path);
    let method = opt_string(cx, m, "method", path).unwrap_or_else(|| "GET".into());
    if !matches!(method.as_str(), "GET" | "POST" | "PUT") {
        cx.problem(
            &join(path, "method"),
            format!("`{method}` is not GET, POST or PUT"),
        );
    }
    let body = opt_string(cx, m, "body", path);
    if body.is_some() && method == "GET" {
        cx.problem(&join(path, "body"), "a body needs method POST or PUT");
    }
    let json_path = opt_string(cx, m, "jsonPath", path);
    let timeout = seconds(cx, m, "timeoutSeconds", path);
    let headers = headers(cx, m, path);
    secure(cx, m, path);
    if cx.count() != before {
        return None;
    }
    Some(Provider::Web {
        url: Templated(url?),
        method,
        headers,
        body: body.map(Templated),
        json_path,
        timeout,
    })
}

/// `insecure: true` would skip TLS verification, which weir does not offer.
fn secure(cx: &mut Ctx, m: &Mapping, path: &str) {
    let at = join(path, "insecure");
    if field(m, "insecure").and_then(|b| boolean(cx, b, &at)) == Some(true) {
        cx.problem(
            &at,
            "skipping TLS verification is not supported; remove it or set false",
        );
    }
}

/// Whole seconds, at least 1 (Argo's int64 timeout fields).
fn seconds(cx: &mut Ctx, m: &Mapping, key: &str, path: &str) -> Option<Duration> {
    let n = int_in(cx, field(m, key)?, &join(path, key), 1, i64::from(u32::MAX))?;
    Some(Duration::from_secs(n as u64))
}

fn headers(cx: &mut Ctx, m: &Mapping, path: &str) -> Vec<(String, Templated)> {
    let at = join(path, "headers");
    let mut out = Vec::new();
    let fields = Fields {
        used: &["key", "value"],
        ignored: &[],
        refused: &[],
    };
    for (i, h) in field(m, "headers")
        .and_then(|l| seq(cx, l, &at))
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        let at = index(&at, i);
        let Some(h) = object(cx, h, &at, &fields) else {
            continue;
        };
        if let (Some(k), Some(v)) = (
            req_string(cx, h, "key", &at),
            req_string(cx, h, "value", &at),
        ) {
            out.push((k, Templated(v)));
        }
    }
    out
}

/// Argo's plugin provider; weir knows one plugin, its own live windows.
fn plugin(cx: &mut Ctx, v: &Value, path: &str) -> Option<Provider> {
    let m = mapping(cx, v, path)?;
    let names: Vec<&str> = m.keys().filter_map(Value::as_str).collect();
    if names.len() != 1 || m.len() != 1 {
        cx.problem(
            path,
            "name exactly one plugin; weir's built-in plugin is weir/live",
        );
        return None;
    }
    if names[0] != "weir/live" {
        cx.problem(
            &join(path, names[0]),
            format!(
                "the plugin `{}` is not available; weir's built-in plugin is weir/live",
                names[0]
            ),
        );
        return None;
    }
    let body = m.get("weir/live").unwrap_or(&Value::Null);
    builtin(cx, body, &join(path, "weir/live")).map(Provider::Builtin)
}

fn builtin(cx: &mut Ctx, v: &Value, path: &str) -> Option<Builtin> {
    let fields = Fields {
        used: &[
            "route",
            "backend",
            "metric",
            "quantile",
            "slo",
            "window",
            "minRequests",
            "maxRatio",
            "margin",
            "alpha",
            "maxDuration",
        ],
        ignored: &[],
        refused: &[],
    };
    let before = cx.count();
    let m = object(cx, v, path, &fields)?;
    let route = req_string(cx, m, "route", path).map(Templated);
    let backend = match opt_string(cx, m, "backend", path).as_deref() {
        None | Some("canary") => Role::Canary,
        Some("stable") => Role::Stable,
        Some(other) => {
            cx.problem(
                &join(path, "backend"),
                format!("`{other}` is neither canary nor stable"),
            );
            Role::Canary
        }
    };
    let quantile = fraction(cx, m, "quantile", path, 1.0);
    let slo = fraction(cx, m, "slo", path, 100.0);
    let metric = req_string(cx, m, "metric", path).and_then(|name| {
        if name.starts_with("compare-") || name.starts_with("shadow-") {
            compare(cx, m, &name, quantile, path).map(BuiltinMetric::Compare)
        } else {
            for key in ["maxRatio", "margin", "alpha", "maxDuration"] {
                if field(m, key).is_some() {
                    cx.problem(
                        &join(path, key),
                        "applies to the comparisons (compare-errors, compare-latency, shadow-errors, shadow-latency) only",
                    );
                }
            }
            builtin_metric(cx, &name, quantile, slo, path)
        }
    });
    let window = match opt_string(cx, m, "window", path) {
        None => Some(Duration::from_secs(30)),
        Some(s) => match parse_go_duration(&s) {
            Ok(d) if !d.is_zero() && d <= Duration::from_secs(60) => Some(d),
            Ok(_) => {
                cx.problem(
                    &join(path, "window"),
                    "must be more than 0s and at most 60s",
                );
                None
            }
            Err(msg) => {
                cx.problem(&join(path, "window"), msg);
                None
            }
        },
    };
    let min_requests = match field(m, "minRequests") {
        Some(n) => int_in(cx, n, &join(path, "minRequests"), 0, i64::MAX).map(|n| n as u64),
        None => Some(20),
    };
    if cx.count() != before {
        return None;
    }
    Some(Builtin {
        route: route?,
        backend,
        metric: metric?,
        window: window?,
        min_requests: min_requests?,
    })
}

/// `compare-errors` / `compare-latency`: the canary against the stable, so `backend`, `window`
/// and `minRequests` (which shape a one-backend reading) do not apply.
fn compare(
    cx: &mut Ctx,
    m: &Mapping,
    name: &str,
    quantile: Option<f64>,
    path: &str,
) -> Option<Compare> {
    if let Some(shadow) = name.strip_prefix("shadow-") {
        return shadow_compare(cx, m, name, shadow, path);
    }
    let latency_quantile = match name {
        "compare-errors" => {
            if quantile.is_some() {
                cx.problem(
                    &join(path, "quantile"),
                    "quantile applies to compare-latency, not compare-errors",
                );
            }
            None
        }
        "compare-latency" => Some(quantile.unwrap_or(Compare::DEFAULT_QUANTILE)),
        other => {
            cx.problem(
                &join(path, "metric"),
                format!("unknown metric `{other}`; the comparisons are compare-errors, compare-latency, shadow-errors and shadow-latency"),
            );
            return None;
        }
    };
    for key in ["backend", "window", "minRequests"] {
        if field(m, key).is_some() {
            cx.problem(
                &join(path, key),
                format!("does not apply to {name}: it judges canary against stable from the start of the measurement"),
            );
        }
    }
    let max_ratio = max_ratio(cx, m, path, Compare::DEFAULT_MAX_RATIO);
    let margin = match field(m, "margin") {
        None => Some(Compare::DEFAULT_MARGIN),
        Some(v) => share(cx, v, &join(path, "margin")),
    };
    let alpha = alpha(cx, m, path);
    let max_duration = max_duration(cx, m, path);
    Some(Compare {
        latency_quantile,
        max_ratio: max_ratio?,
        margin: margin?,
        alpha: alpha?,
        max_duration: max_duration?,
        pairs: None,
    })
}

/// `shadow-errors` / `shadow-latency`: the canary judged on mirrored pairs. Errors take the
/// comparisons' tolerance (`maxRatio`, `margin` as a share); latency's `maxRatio` and
/// `margin` (a duration) say when one answer of a pair is slower than the other.
fn shadow_compare(
    cx: &mut Ctx,
    m: &Mapping,
    name: &str,
    signal: &str,
    path: &str,
) -> Option<Compare> {
    let before = cx.count();
    for key in ["backend", "window", "minRequests", "quantile"] {
        if field(m, key).is_some() {
            cx.problem(
                &join(path, key),
                format!("does not apply to {name}: it judges the pairs of the route's mirror from the start of the measurement"),
            );
        }
    }
    let (pairs, max_ratio, margin) = match signal {
        "errors" => {
            let max_ratio = max_ratio(cx, m, path, Compare::DEFAULT_MAX_RATIO);
            let margin = match field(m, "margin") {
                None => Some(Compare::DEFAULT_MARGIN),
                Some(v) => share(cx, v, &join(path, "margin")),
            };
            (PairSignal::Errors, max_ratio, margin)
        }
        "latency" => {
            let max_ratio = max_ratio(cx, m, path, PairSignal::DEFAULT_LATENCY_RATIO);
            let margin = match opt_string(cx, m, "margin", path) {
                None => Some(PairSignal::DEFAULT_LATENCY_MARGIN),
                Some(s) => match parse_go_duration(&s) {
                    Ok(d) => Some(d),
                    Err(msg) => {
                        cx.problem(&join(path, "margin"), msg);
                        None
                    }
                },
            };
            let signal = PairSignal::Latency {
                max_ratio: max_ratio.unwrap_or(PairSignal::DEFAULT_LATENCY_RATIO),
                margin: margin.unwrap_or(PairSignal::DEFAULT_LATENCY_MARGIN),
            };
            // Pairs count as slower or faster; the count may lean one way by this much
            // before the canary is worse (a healthy canary's pairs lean neither way).
            (
                signal,
                Some(Compare::DEFAULT_MAX_RATIO),
                Some(SHADOW_LATENCY_MARGIN),
            )
        }
        other => {
            cx.problem(
                &join(path, "metric"),
                format!("unknown metric `shadow-{other}`; the paired comparisons are shadow-errors and shadow-latency"),
            );
            return None;
        }
    };
    let alpha = alpha(cx, m, path);
    let max_duration = max_duration(cx, m, path);
    if cx.count() != before {
        return None;
    }
    Some(Compare {
        latency_quantile: None,
        max_ratio: max_ratio?,
        margin: margin?,
        alpha: alpha?,
        max_duration: max_duration?,
        pairs: Some(pairs),
    })
}

/// A comparison's `maxRatio`: 1 to 1000 (`default` when absent).
fn max_ratio(cx: &mut Ctx, m: &Mapping, path: &str, default: f64) -> Option<f64> {
    let Some(v) = field(m, "maxRatio") else {
        return Some(default);
    };
    let at = join(path, "maxRatio");
    number(cx, v, &at).and_then(|x| {
        if (1.0..=1000.0).contains(&x) {
            Some(x)
        } else {
            cx.problem(&at, format!("{x} is out of range; expected 1 to 1000"));
            None
        }
    })
}

/// A comparison's `alpha`: more than 0, at most 0.2 (default `Compare::DEFAULT_ALPHA`).
fn alpha(cx: &mut Ctx, m: &Mapping, path: &str) -> Option<f64> {
    let Some(v) = field(m, "alpha") else {
        return Some(Compare::DEFAULT_ALPHA);
    };
    let at = join(path, "alpha");
    number(cx, v, &at).and_then(|x| {
        if x > 0.0 && x <= 0.2 {
            Some(x)
        } else {
            cx.problem(
                &at,
                format!("{x} is out of range; expected more than 0 and at most 0.2"),
            );
            None
        }
    })
}

/// A comparison's `maxDuration`: a duration above 0s, or none (no limit); the outer None is
/// a problem reported.
fn max_duration(cx: &mut Ctx, m: &Mapping, path: &str) -> Option<Option<Duration>> {
    let Some(s) = opt_string(cx, m, "maxDuration", path) else {
        return Some(None);
    };
    match parse_go_duration(&s) {
        Ok(d) if !d.is_zero() => Some(Some(d)),
        Ok(_) => {
            cx.problem(&join(path, "maxDuration"), "must be more than 0s");
            None
        }
        Err(msg) => {
            cx.problem(&join(path, "maxDuration"), msg);
            None
        }
    }
}

/// shadow-latency: slower pairs may outnumber faster ones by this share of all pairs (and by
/// `Compare::DEFAULT_MAX_RATIO` times) before the canary counts as slower.
const SHADOW_LATENCY_MARGIN: f64 = 0.01;

/// A share of requests: `0.1%` (a string with a percent sign) or a fraction (`0.001`), 0 to 1.
fn share(cx: &mut Ctx, v: &Value, path: &str) -> Option<f64> {
    let x = match v {
        Value::String(s) => match s.trim().strip_suffix('%') {
            Some(p) => match p.trim().parse::<f64>() {
                Ok(p) => p / 100.0,
                Err(_) => {
                    cx.problem(path, format!("{s:?} is not a percentage like 0.1%"));
                    return None;
                }
            },
            None => {
                cx.problem(
                    path,
                    format!("{s:?}: write a percentage with its sign (0.1%) or a fraction (0.001)"),
                );
                return None;
            }
        },
        other => number(cx, other, path)?,
    };
    if !(0.0..=1.0).contains(&x) {
        cx.problem(path, format!("{x} is out of range; expected 0% to 100%"));
        return None;
    }
    Some(x)
}

/// `quantile` (a fraction, below 1) or `slo` (a percent, below 100), as a fraction.
fn fraction(cx: &mut Ctx, m: &Mapping, key: &str, path: &str, scale: f64) -> Option<f64> {
    let at = join(path, key);
    let x = number(cx, field(m, key)?, &at)?;
    if !(x > 0.0 && x < scale) {
        cx.problem(
            &at,
            format!("{x} is out of range; expected more than 0 and less than {scale}"),
        );
        return None;
    }
    Some(x / scale)
}

fn builtin_metric(
    cx: &mut Ctx,
    name: &str,
    quantile: Option<f64>,
    slo: Option<f64>,
    path: &str,
) -> Option<BuiltinMetric> {
    let at = join(path, "metric");
    let metric = match name {
        "success-rate" => BuiltinMetric::SuccessRate,
        "error-rate" => BuiltinMetric::ErrorRate,
        "requests" => BuiltinMetric::Requests,
        "latency" => BuiltinMetric::Latency {
            quantile: quantile.unwrap_or(0.99),
        },
        "burn-rate" => match slo {
            Some(slo) => BuiltinMetric::BurnRate { slo },
            None => {
                cx.problem(
                    &join(path, "slo"),
                    "burn-rate needs an slo, in percent (e.g. 99.9)",
                );
                return None;
            }
        },
        other => {
            cx.problem(
                &at,
                format!("unknown metric `{other}`; use success-rate, error-rate, latency, requests or burn-rate"),
            );
            return None;
        }
    };
    if quantile.is_some() && name != "latency" {
        cx.problem(
            &join(path, "quantile"),
            "quantile applies to metric latency only",
        );
    }
    if slo.is_some() && name != "burn-rate" {
        cx.problem(&join(path, "slo"), "slo applies to metric burn-rate only");
    }
    Some(metric)
}
