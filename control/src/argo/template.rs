//! `AnalysisTemplate` / `ClusterAnalysisTemplate` spec → `model::AnalysisTemplate`.

use serde_yaml_ng::{Mapping, Value};

use super::duration::parse_go_duration;
use super::model::{AnalysisTemplate, Metric, Origin, SecretRef, TemplateArg, Templated};
use super::node::{
    field, index, int_in, join, object, opt_string, req_string, required, seq, Ctx, Fields,
};
use super::provider::provider;
use super::templated::{blank_placeholders, check_placeholders, has_placeholders};
use crate::expr::Condition;

const SPEC: Fields = Fields {
    used: &["args", "metrics", "dryRun"],
    ignored: &[("measurementRetention", "is about AnalysisRun objects, which weir does not create")],
    refused: &[(
        "templates",
        "templates built from other templates are not supported; list each template in the Rollout's analysis.templates",
    )],
};

const METRIC: Fields = Fields {
    used: &[
        "name",
        "interval",
        "count",
        "initialDelay",
        "successCondition",
        "failureCondition",
        "failureLimit",
        "inconclusiveLimit",
        "consecutiveErrorLimit",
        "consecutiveSuccessLimit",
        "provider",
    ],
    ignored: &[],
    refused: &[],
};

/// Converts a template's `spec`; None if any problem was found (they are in `cx`).
pub(crate) fn template(cx: &mut Ctx, spec: &Value, origin: Origin) -> Option<AnalysisTemplate> {
    let before = cx.count();
    let spec = object(cx, spec, "spec", &SPEC)?;
    let args = args(cx, spec);
    let declared: Vec<String> = args.iter().map(|a| a.name.clone()).collect();

    let mut metrics = Vec::new();
    if let Some(list) =
        required(cx, spec, "metrics", "spec").and_then(|l| seq(cx, l, "spec.metrics"))
    {
        if list.is_empty() {
            cx.problem("spec.metrics", "declare at least one metric");
        }
        for (i, item) in list.iter().enumerate() {
            let at = index("spec.metrics", i);
            if let Some(m) = metric(cx, item, &at, &declared) {
                if metrics.iter().any(|x: &Metric| x.name == m.name) {
                    cx.problem(
                        &join(&at, "name"),
                        format!("metric `{}` is declared twice", m.name),
                    );
                }
                metrics.push(m);
            }
        }
    }
    if let Some(rules) = field(spec, "dryRun") {
        // A rule may only seem to match nothing because a metric failed to load.
        let all_loaded = cx.count() == before;
        dry_run(cx, rules, &mut metrics, all_loaded);
    }
    if cx.count() != before {
        return None;
    }
    let name = origin.name.clone();
    let cluster_scope = origin.kind == "ClusterAnalysisTemplate";
    Some(AnalysisTemplate {
        origin,
        name,
        cluster_scope,
        args,
        metrics,
    })
}

fn args(cx: &mut Ctx, spec: &Mapping) -> Vec<TemplateArg> {
    let mut out: Vec<TemplateArg> = Vec::new();
    let Some(list) = field(spec, "args").and_then(|l| seq(cx, l, "spec.args")) else {
        return out;
    };
    let fields = Fields {
        used: &["name", "value", "valueFrom"],
        ignored: &[],
        refused: &[],
    };
    for (i, item) in list.iter().enumerate() {
        let at = index("spec.args", i);
        let Some(m) = object(cx, item, &at, &fields) else {
            continue;
        };
        let secret =
            field(m, "valueFrom").and_then(|from| value_from(cx, from, &join(&at, "valueFrom")));
        let Some(name) = req_string(cx, m, "name", &at) else {
            continue;
        };
        let value = opt_string(cx, m, "value", &at);
        if value.is_some() && secret.is_some() {
            cx.problem(&at, "set at most one of value or valueFrom");
        }
        if out.iter().any(|a| a.name == name) {
            cx.problem(
                &join(&at, "name"),
                format!("argument `{name}` is declared twice"),
            );
        }
        out.push(TemplateArg {
            name,
            value,
            secret,
        });
    }
    out
}

/// A template's `valueFrom`: a Secret's key (read when a run starts, from the secrets directory
/// the config names); `fieldRef` is refused (a template has no object to read it from).
fn value_from(cx: &mut Ctx, v: &Value, path: &str) -> Option<SecretRef> {
    let fields = Fields {
        used: &["secretKeyRef"],
        ignored: &[],
        refused: &[(
            "fieldRef",
            "valueFrom.fieldRef is not supported in a template; pass the value from the Rollout's analysis args",
        )],
    };
    let m = object(cx, v, path, &fields)?;
    let s = field(m, "secretKeyRef")?;
    secret_ref(cx, s, &join(path, "secretKeyRef"))
}

/// `secretKeyRef: {name, key}`. Both are names of files under the secrets directory, so
/// neither may hold a path separator or be `..`.
pub(super) fn secret_ref(cx: &mut Ctx, v: &Value, path: &str) -> Option<SecretRef> {
    let m = object(
        cx,
        v,
        path,
        &Fields {
            used: &["name", "key"],
            ignored: &[],
            refused: &[(
                "optional",
                "an optional Secret key is not supported: a missing one would run the analysis without its argument",
            )],
        },
    )?;
    let name = req_string(cx, m, "name", path);
    let key = req_string(cx, m, "key", path);
    let (name, key) = (name?, key?);
    for (field_name, value) in [("name", &name), ("key", &key)] {
        if value.is_empty() || value.contains(['/', '\\', '\0']) || value == "." || value == ".." {
            cx.problem(
                &join(path, field_name),
                format!("`{value}` is not a Secret {field_name}"),
            );
            return None;
        }
    }
    Some(SecretRef { name, key })
}

fn metric(cx: &mut Ctx, v: &Value, path: &str, declared: &[String]) -> Option<Metric> {
    let before = cx.count();
    let m = object(cx, v, path, &METRIC)?;
    // Argo substitutes args anywhere in a metric; check them all (except in a refused provider).
    for (k, item) in m {
        let key = k.as_str().unwrap_or("?");
        if key != "provider" {
            check_placeholders(cx, item, &join(path, key), declared);
        }
    }
    let name = req_string(cx, m, "name", path);
    let interval = duration_field(cx, m, "interval", path);
    let initial_delay = duration_field(cx, m, "initialDelay", path);
    let count = int_or_string(cx, m, "count", path, 0);
    let failure_limit = int_or_string(cx, m, "failureLimit", path, -1);
    let inconclusive_limit = int_or_string(cx, m, "inconclusiveLimit", path, 0);
    let consecutive_error_limit = int_or_string(cx, m, "consecutiveErrorLimit", path, 0);
    let consecutive_success_limit = int_or_string(cx, m, "consecutiveSuccessLimit", path, 0);
    let success_condition = condition(cx, m, "successCondition", path);
    let failure_condition = condition(cx, m, "failureCondition", path);
    let provider = required(cx, m, "provider", path)
        .and_then(|p| provider(cx, p, &join(path, "provider"), declared));

    // Argo's rule: more than one measurement needs an interval between them.
    if let Some(Templated(c)) = &count {
        if interval.is_none() && c.parse::<i64>().is_ok_and(|n| n > 1) {
            cx.problem(&join(path, "count"), "count > 1 needs an interval");
        }
    }
    if cx.count() != before {
        return None;
    }
    Some(Metric {
        name: name?,
        interval,
        count,
        initial_delay,
        success_condition,
        failure_condition,
        failure_limit: failure_limit.unwrap_or_else(|| Templated("0".into())),
        inconclusive_limit: inconclusive_limit.unwrap_or_else(|| Templated("0".into())),
        consecutive_error_limit: consecutive_error_limit.unwrap_or_else(|| Templated("4".into())),
        consecutive_success_limit: consecutive_success_limit
            .unwrap_or_else(|| Templated("0".into())),
        dry_run: false,
        provider: provider?,
    })
}

/// A Go duration string, or a placeholder resolved (and parsed again) when the run starts.
fn duration_field(cx: &mut Ctx, m: &Mapping, key: &str, path: &str) -> Option<Templated> {
    let s = opt_string(cx, m, key, path)?;
    if !has_placeholders(&s) {
        if let Err(msg) = parse_go_duration(&s) {
            cx.problem(&join(path, key), msg);
        }
    }
    Some(Templated(s))
}

/// Argo's IntOrString: an integer ≥ `min`, or a string holding one or a placeholder.
fn int_or_string(cx: &mut Ctx, m: &Mapping, key: &str, path: &str, min: i64) -> Option<Templated> {
    let v = field(m, key)?;
    let at = join(path, key);
    match v {
        Value::String(s) if has_placeholders(s) => Some(Templated(s.clone())),
        Value::String(s) => match s.trim().parse::<i64>() {
            Ok(n) if n >= min => Some(Templated(n.to_string())),
            _ => {
                cx.problem(
                    &at,
                    format!("`{s}` is not an integer ≥ {min} nor an {{{{args.NAME}}}}"),
                );
                None
            }
        },
        other => int_in(cx, other, &at, min, i64::MAX).map(|n| Templated(n.to_string())),
    }
}

/// A condition must parse; placeholders are blanked first (they are resolved at run start).
fn condition(cx: &mut Ctx, m: &Mapping, key: &str, path: &str) -> Option<String> {
    let src = opt_string(cx, m, key, path)?;
    if let Err(e) = Condition::parse(&blank_placeholders(&src)) {
        cx.problem(
            &join(path, key),
            format!("column {}: {} (in `{src}`)", e.column, e.message),
        );
    }
    Some(src)
}

/// `spec.dryRun[].metricName`: a regex, unanchored as in Argo (`.*` = every metric).
fn dry_run(cx: &mut Ctx, v: &Value, metrics: &mut [Metric], all_loaded: bool) {
    let Some(rules) = seq(cx, v, "spec.dryRun") else {
        return;
    };
    let fields = Fields {
        used: &["metricName"],
        ignored: &[],
        refused: &[],
    };
    for (i, rule) in rules.iter().enumerate() {
        let at = index("spec.dryRun", i);
        let Some(r) = object(cx, rule, &at, &fields) else {
            continue;
        };
        let Some(pattern) = req_string(cx, r, "metricName", &at) else {
            continue;
        };
        let re = match regex::Regex::new(&pattern) {
            Ok(re) => re,
            Err(e) => {
                cx.problem(&join(&at, "metricName"), format!("invalid regex: {e}"));
                continue;
            }
        };
        let mut matched = false;
        for m in metrics.iter_mut().filter(|m| re.is_match(&m.name)) {
            m.dry_run = true;
            matched = true;
        }
        if !matched && all_loaded {
            cx.problem(
                &join(&at, "metricName"),
                format!("`{pattern}` matches no metric name"),
            );
        }
    }
}
