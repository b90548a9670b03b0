//! Malformed manifests: each mistake gives one message naming the file, object and field path.

use std::path::Path;

use weir_control::argo::model::{Provider, Step, Strategy};
use weir_control::argo::{load_str, ManifestError, Manifests};

fn rollout_with_steps(steps: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {{name: r}}\nspec:\n  strategy:\n    canary:\n      steps:\n{steps}"
    )
}

fn template_with(body: &str) -> String {
    format!("apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {{name: t}}\nspec:\n{body}")
}

const PROM: &str =
    "    provider:\n      prometheus:\n        address: http://prom:9090\n        query: up\n";

fn load(text: &str) -> Result<Manifests, Vec<ManifestError>> {
    load_str(text, Path::new("t.yaml")).map_err(|e| e.0)
}

/// Exactly one problem, at `path`, whose message contains `words`.
#[track_caller]
fn one(text: &str, object: &str, path: &str, words: &str) -> ManifestError {
    let errors = load(text).expect_err("should be refused");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = errors.into_iter().next().unwrap();
    assert_eq!(e.file, Path::new("t.yaml"));
    assert_eq!(e.object, object, "{e}");
    assert_eq!(e.path, path, "{e}");
    assert!(e.message.contains(words), "{e}");
    // FILE:LINE: OBJECT: PATH: MESSAGE, the line that of the field (or of its nearest ancestor
    // that is there, for a missing one).
    let line = e.line.unwrap_or_else(|| panic!("no line: {e}"));
    assert_eq!(
        e.to_string(),
        format!("t.yaml:{line}: {object}: {path}: {}", e.message)
    );
    let key = path.rsplit('.').next().unwrap_or("");
    if !key.contains('[') && text.contains(&format!("{key}:")) {
        let at = text.lines().nth(line - 1).unwrap_or("");
        assert!(
            at.contains(&format!("{key}:")),
            "line {line} is {at:?}, not {key}: {e}"
        );
    }
    e
}

#[test]
fn argo_set_weight_wrong_type() {
    let text = rollout_with_steps("      - setWeight: \"x\"\n");
    one(
        &text,
        "Rollout/r",
        "spec.strategy.canary.steps[0].setWeight",
        "expected an integer",
    );
    let text = rollout_with_steps("      - setWeight: 150\n");
    one(
        &text,
        "Rollout/r",
        "spec.strategy.canary.steps[0].setWeight",
        "0..=100",
    );
}

#[test]
fn argo_unknown_step_kind() {
    let text = rollout_with_steps("      - setWeight: 10\n      - jump: 3\n");
    let e = one(
        &text,
        "Rollout/r",
        "spec.strategy.canary.steps[1].jump",
        "unknown step kind",
    );
    assert!(e.message.contains("setWeight, pause, analysis"), "{e}");
}

#[test]
fn argo_missing_template_name() {
    let text = rollout_with_steps(
        "      - analysis:\n          templates:\n          - clusterScope: true\n",
    );
    one(
        &text,
        "Rollout/r",
        "spec.strategy.canary.steps[0].analysis.templates[0].templateName",
        "missing",
    );
}

#[test]
fn argo_bad_duration() {
    let text = rollout_with_steps("      - pause: {duration: 5x}\n");
    one(
        &text,
        "Rollout/r",
        "spec.strategy.canary.steps[0].pause.duration",
        "30s, 5m",
    );
    let text = template_with(&format!(
        "  metrics:\n  - name: m\n    interval: soon\n{PROM}"
    ));
    one(
        &text,
        "AnalysisTemplate/t",
        "spec.metrics[0].interval",
        "not a duration",
    );
}

#[test]
fn argo_pause_durations() {
    let text = rollout_with_steps(
        "      - pause: {duration: 1h30m}\n      - pause: {duration: \"45\"}\n      - pause: {}\n",
    );
    let m = load(&text).unwrap();
    let Strategy::Canary(c) = &m.rollouts[0].strategy else {
        panic!()
    };
    let secs = |s| Step::Pause {
        duration: Some(std::time::Duration::from_secs(s)),
    };
    assert_eq!(
        c.steps,
        vec![secs(5400), secs(45), Step::Pause { duration: None }]
    );
}

#[test]
fn argo_bad_condition_has_column() {
    let text = template_with(&format!(
        "  metrics:\n  - name: m\n    successCondition: result[0] >= >= 1\n{PROM}"
    ));
    let e = one(
        &text,
        "AnalysisTemplate/t",
        "spec.metrics[0].successCondition",
        "column ",
    );
    assert!(e.message.contains("result[0] >= >= 1"), "{e}");
}

#[test]
fn argo_condition_with_placeholder_parses() {
    let text = template_with(&format!(
        "  args:\n  - name: min\n    value: \"0.9\"\n  metrics:\n  - name: m\n    successCondition: result[0] >= {{{{args.min}}}}\n{PROM}"
    ));
    load(&text).unwrap();
}

/// A Secret's key is read (from `rollout.secrets_dir` when a run starts); one that could name a
/// file outside that directory, or an `optional` one, is refused at load.
#[test]
fn argo_secret_key_ref() {
    let text = template_with(&format!(
        "  args:\n  - name: url\n    valueFrom:\n      secretKeyRef: {{name: s, key: k}}\n  metrics:\n  - name: m\n{PROM}"
    ));
    let manifests = load(&text).unwrap();
    let arg = &manifests.templates[0].args[0];
    assert_eq!(
        arg.secret,
        Some(weir_control::argo::model::SecretRef {
            name: "s".into(),
            key: "k".into()
        })
    );
    let escape = template_with(&format!(
        "  args:\n  - name: url\n    valueFrom:\n      secretKeyRef: {{name: .., key: k}}\n  metrics:\n  - name: m\n{PROM}"
    ));
    one(
        &escape,
        "AnalysisTemplate/t",
        "spec.args[0].valueFrom.secretKeyRef.name",
        "is not a Secret name",
    );
    let optional = template_with(&format!(
        "  args:\n  - name: url\n    valueFrom:\n      secretKeyRef: {{name: s, key: k, optional: true}}\n  metrics:\n  - name: m\n{PROM}"
    ));
    one(
        &optional,
        "AnalysisTemplate/t",
        "spec.args[0].valueFrom.secretKeyRef.optional",
        "not supported",
    );
}

#[test]
fn argo_undeclared_arg() {
    let text = template_with(
        "  args:\n  - name: x\n  metrics:\n  - name: m\n    provider:\n      prometheus:\n        address: http://prom:9090\n        query: up{job=\"{{args.y}}\"}\n",
    );
    let e = one(
        &text,
        "AnalysisTemplate/t",
        "spec.metrics[0].provider.prometheus.query",
        "{{args.y}}",
    );
    assert!(e.message.contains("declared: x"), "{e}");
}

#[test]
fn argo_unknown_and_lacking_providers() {
    let text = template_with("  metrics:\n  - name: m\n    provider:\n      carrierPigeon: {}\n");
    one(
        &text,
        "AnalysisTemplate/t",
        "spec.metrics[0].provider.carrierPigeon",
        "unknown provider",
    );
    let text = template_with("  metrics:\n  - name: m\n    provider:\n      datadog: {query: x}\n");
    one(
        &text,
        "AnalysisTemplate/t",
        "spec.metrics[0].provider.datadog",
        "prometheus, web",
    );
    let text = template_with(
        "  metrics:\n  - name: m\n    provider:\n      plugin:\n        acme/metrics: {}\n",
    );
    one(
        &text,
        "AnalysisTemplate/t",
        "spec.metrics[0].provider.plugin.acme/metrics",
        "weir/live",
    );
}

#[test]
fn argo_builtin_provider() {
    let text = template_with(
        "  dryRun:\n  - metricName: .*\n  metrics:\n  - name: m\n    interval: 5s\n    count: \"{{args.n}}\"\n    successCondition: result >= 0.99\n    provider:\n      plugin:\n        weir/live: {route: web, metric: burn-rate, slo: 99.9, window: 20s}\n  args:\n  - name: n\n",
    );
    let m = load(&text).unwrap();
    let metric = &m.templates[0].metrics[0];
    assert!(metric.dry_run);
    assert_eq!(metric.count.as_ref().unwrap().0, "{{args.n}}");
    let Provider::Builtin(b) = &metric.provider else {
        panic!()
    };
    assert_eq!(b.window, std::time::Duration::from_secs(20));
    assert_eq!(b.min_requests, 20);
    assert!(
        matches!(b.metric, weir_control::argo::model::BuiltinMetric::BurnRate { slo } if (slo - 0.999).abs() < 1e-9)
    );

    let text = template_with(
        "  metrics:\n  - name: m\n    provider:\n      plugin:\n        weir/live: {route: web, metric: latency, window: 2m, colour: red}\n",
    );
    let errors = load(&text).unwrap_err();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "spec.metrics[0].provider.plugin.weir/live.colour",
            "spec.metrics[0].provider.plugin.weir/live.window",
        ]
    );
}

#[test]
fn argo_builtin_comparisons() {
    use weir_control::argo::model::{BuiltinMetric, Compare, PairSignal};
    let compare = |fields: &str| {
        template_with(&format!(
            "  metrics:\n  - name: m\n    provider:\n      plugin:\n        weir/live: {{route: web, {fields}}}\n"
        ))
    };
    let spec = |text: &str| {
        let m = load(text).unwrap_or_else(|e| panic!("{e:#?}"));
        match &m.templates[0].metrics[0].provider {
            Provider::Builtin(b) => match b.metric {
                BuiltinMetric::Compare(c) => c,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    };
    // Defaults: errors, 1.5 ×, 0.1 %, alpha 1 %, no time limit.
    let c = spec(&compare("metric: compare-errors"));
    assert_eq!(
        c,
        Compare {
            latency_quantile: None,
            max_ratio: 1.5,
            margin: 0.001,
            alpha: 0.01,
            max_duration: None,
            pairs: None,
        }
    );
    // Paired: errors with the comparisons' tolerance; latency's per pair, as a duration.
    let c = spec(&compare("metric: shadow-errors, maxRatio: 2"));
    assert_eq!(c.pairs, Some(PairSignal::Errors));
    assert_eq!((c.max_ratio, c.margin, c.alpha), (2.0, 0.001, 0.01));
    let c = spec(&compare(
        "metric: shadow-latency, maxRatio: 1.3, margin: 8ms, maxDuration: 2m",
    ));
    assert_eq!(
        c.pairs,
        Some(PairSignal::Latency {
            max_ratio: 1.3,
            margin: std::time::Duration::from_millis(8)
        })
    );
    assert_eq!(c.max_duration, Some(std::time::Duration::from_secs(120)));
    let c = spec(&compare("metric: shadow-latency"));
    assert_eq!(
        c.pairs,
        Some(PairSignal::Latency {
            max_ratio: 1.2,
            margin: std::time::Duration::from_millis(5)
        })
    );
    let c = spec(&compare(
        "metric: compare-latency, quantile: 0.95, maxRatio: 2, margin: 0.5%, alpha: 0.005, maxDuration: 10m",
    ));
    assert_eq!(c.latency_quantile, Some(0.95));
    assert_eq!((c.max_ratio, c.margin, c.alpha), (2.0, 0.005, 0.005));
    assert_eq!(c.max_duration, Some(std::time::Duration::from_secs(600)));
    assert_eq!(
        spec(&compare("metric: compare-errors, margin: 0.002")).margin,
        0.002
    );
    assert_eq!(
        spec(&compare("metric: compare-latency")).latency_quantile,
        Some(0.99)
    );

    let at = "spec.metrics[0].provider.plugin.weir/live";
    for (fields, field, words) in [
        (
            "metric: compare-errors, window: 30s",
            "window",
            "does not apply to compare-errors",
        ),
        (
            "metric: compare-errors, backend: stable",
            "backend",
            "canary against stable",
        ),
        (
            "metric: compare-errors, quantile: 0.9",
            "quantile",
            "compare-latency, not compare-errors",
        ),
        (
            "metric: compare-errors, maxRatio: 0.5",
            "maxRatio",
            "expected 1 to 1000",
        ),
        (
            "metric: compare-errors, margin: lots",
            "margin",
            "a percentage with its sign",
        ),
        (
            "metric: compare-errors, margin: 120%",
            "margin",
            "out of range",
        ),
        ("metric: compare-errors, alpha: 0.5", "alpha", "at most 0.2"),
        (
            "metric: compare-errors, maxDuration: 0s",
            "maxDuration",
            "more than 0s",
        ),
        (
            "metric: compare-speed",
            "metric",
            "shadow-errors and shadow-latency",
        ),
        (
            "metric: shadow-speed",
            "metric",
            "shadow-errors and shadow-latency",
        ),
        ("metric: shadow-latency, margin: soon", "margin", ""),
        (
            "metric: shadow-errors, window: 30s",
            "window",
            "pairs of the route's mirror",
        ),
        (
            "metric: error-rate, maxRatio: 2",
            "maxRatio",
            "comparisons (compare-errors",
        ),
    ] {
        one(
            &compare(fields),
            "AnalysisTemplate/t",
            &format!("{at}.{field}"),
            words,
        );
    }
}

#[test]
fn argo_all_problems_are_collected() {
    let text = rollout_with_steps(
        "      - setWeight: x\n      - experiment: {}\n      - pause: {duration: never}\n      - setHeaderRoute: {name: h}\n",
    );
    let errors = load(&text).unwrap_err();
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(errors[3].message.contains("managedRoutes"), "{}", errors[3]);
}

#[test]
fn argo_background_starting_step_is_remapped_and_checked() {
    let text = rollout_with_steps(
        "      - setCanaryScale: {replicas: 1}\n      - setWeight: 10\n      analysis:\n        startingStep: 1\n        templates: [{templateName: a}]\n",
    );
    let m = load(&text).unwrap();
    let Strategy::Canary(c) = &m.rollouts[0].strategy else {
        panic!()
    };
    assert_eq!(c.analysis.as_ref().unwrap().starting_step, Some(0));

    let text = text.replace("startingStep: 1", "startingStep: 5");
    one(
        &text,
        "Rollout/r",
        "spec.strategy.canary.analysis.startingStep",
        "out of range",
    );
}

#[test]
fn argo_refused_rollout_fields() {
    let text = rollout_with_steps(
        "      - setWeight: 10\n      pingPong: {pingService: a, pongService: b}\n",
    );
    one(
        &text,
        "Rollout/r",
        "spec.strategy.canary.pingPong",
        "stableService and canaryService",
    );
    let text = rollout_with_steps("      - plugin: {name: x}\n");
    one(
        &text,
        "Rollout/r",
        "spec.strategy.canary.steps[0].plugin",
        "not supported",
    );
    let text = rollout_with_steps("      - setWeight: 10\n      bogus: 1\n");
    one(
        &text,
        "Rollout/r",
        "spec.strategy.canary.bogus",
        "unknown field",
    );
}

#[test]
fn argo_blue_green_needs_active_service() {
    let text = "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: b}\nspec:\n  strategy:\n    blueGreen: {previewService: p, autoPromotionEnabled: \"no\"}\n";
    let errors = load(text).unwrap_err();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "spec.strategy.blueGreen.activeService",
            "spec.strategy.blueGreen.autoPromotionEnabled"
        ]
    );
}

#[test]
fn argo_garbage_never_panics() {
    let inputs = [
        "",
        "---\n---\n",
        ":\n  - [",
        "{{ nope }}",
        "- a\n- b\n",
        "42",
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\n",
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: 7\nspec: []\n",
        "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: t}\nspec: {metrics: [{name: 1, provider: {web: {url: [], headers: {a: b}}}}]}\n",
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r}\nspec: {strategy: {canary: {steps: [{}, [], ~, {pause: ~}, {setWeight: 1e99}]}}}\n",
        "apiVersion: argoproj.io/v1beta9\nkind: Rollout\nmetadata: {name: r}\nspec: {strategy: {canary: {}}}\n",
        "a: &x [*x]\n",
        "apiVersion: v1\nkind: [Service]\n",
        "? [a]\n: b\n",
        "x: {{args.y}}\n",
        "!!binary aGVsbG8=\n",
        "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: t}\nspec: {dryRun: [{metricName: '*'}], metrics: [{name: m, count: -3, failureLimit: x, provider: {prometheus: {}}}]}\n",
    ];
    for text in inputs {
        match load(text) {
            Ok(_) => {}
            Err(errors) => {
                assert!(!errors.is_empty());
                for e in errors {
                    assert!(!e.message.is_empty(), "{text}");
                }
            }
        }
    }
    assert!(load("").unwrap().rollouts.is_empty());
    assert!(load("a: [").unwrap_err()[0].line.is_some());
}

#[test]
fn argo_skipped_kinds_are_listed() {
    let text = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\napiVersion: argoproj.io/v1alpha1\nkind: Experiment\nmetadata: {name: e}\n";
    let m = load(text).unwrap();
    let kinds: Vec<&str> = m.skipped.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(kinds, vec!["Service", "Experiment"]);
}
