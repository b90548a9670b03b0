//! The Argo Rollouts project's own manifests, read unchanged: what weir takes and what it refuses.

use std::path::{Path, PathBuf};
use std::time::Duration;

use weir_control::argo::model::{AnalysisRef, Provider, Step, Strategy, StringMatch, TemplateRef};
use weir_control::argo::{lint, load_files, load_str, ManifestErrors};

const EXAMPLES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../fixtures/argo-rollouts/examples"
);
const LIVE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../fixtures/argo-rollouts/live"
);

enum Expect {
    Loads,
    /// Each fragment must appear in some problem (they name the field path).
    Refused(&'static [&'static str]),
}
use Expect::*;

/// Every file in examples/, and what weir must do with it.
const TABLE: &[(&str, Expect)] = &[
    ("ambassador_echo-mapping.yaml", Loads),
    ("ambassador_echo-service.yaml", Loads),
    ("ambassador_resolver.yaml", Loads),
    ("ambassador_rollout.yaml", Loads),
    (
        "analysis-templates.yaml",
        Refused(&[
            "AnalysisTemplate/pass: spec.metrics[0].provider.job: the job provider is not supported",
            "AnalysisTemplate/random-fail: spec.metrics[0].provider.job",
        ]),
    ),
    // A step setting both setCanaryScale and setHeaderRoute: Argo's validation refuses it too.
    ("apisix_rollout.yaml", Refused(&["spec.strategy.canary.steps[0]: a step sets exactly one of"])),
    ("apisix_route.yaml", Loads),
    ("apisix_services.yaml", Loads),
    ("appmesh_canary-rollout.yaml", Loads),
    ("appmesh_canary-service.yaml", Loads),
    (
        "cluster-analysis-templates.yaml",
        Refused(&["ClusterAnalysisTemplate/always-pass: spec.metrics[0].provider.job"]),
    ),
    ("experiment-with-analysis.yaml", Loads),
    ("helm-blue-green_Chart.yaml", Refused(&["document 1: kind: missing"])),
    // Helm templates are not YAML until rendered.
    ("helm-blue-green_templates_rollout.yaml", Refused(&["not valid YAML"])),
    ("helm-blue-green_templates_services.yaml", Refused(&["not valid YAML"])),
    ("helm-blue-green_values.yaml", Refused(&["document 1: apiVersion: missing"])),
    ("istio_istio-mirror.yaml", Loads),
    ("istio_istio-subset-split.yaml", Loads),
    ("notifications_configmap.yaml", Loads),
    ("notifications_kustomization.yaml", Loads),
    ("notifications_rollout-canary.yaml", Loads),
    ("rollout-analysis-step.yaml", Loads),
    ("rollout-background-analysis.yaml", Loads),
    ("rollout-baseline-vs-canary.yaml", Refused(&["spec.strategy.canary.steps[0].experiment"])),
    ("rollout-bluegreen.yaml", Loads),
    ("rollout-canary-preview.yaml", Refused(&["spec.strategy.canary.steps[0].experiment"])),
    ("rollout-canary.yaml", Loads),
    (
        "rollout-experiment-step.yaml",
        Refused(&["Rollout/rollout-experiment-step: spec.strategy.canary.steps[1].experiment: experiment steps are not supported"]),
    ),
    ("rollout-rolling-update.yaml", Loads),
    // Its Secret is read from rollout.secrets_dir when the analysis starts (tests/rollout.rs).
    ("rollout-secret.yaml", Loads),
    ("rollout-template-ref.yaml", Loads),
    ("traffic-management_job.yaml", Refused(&["AnalysisTemplate/load-test: spec.metrics[0].provider.job"])),
    ("traffic-management_rollout-linkerd.yaml", Refused(&["spec.metrics[0].provider.job"])),
    (
        "traffic-routing-experiment-step_istio-host-split-experiment-step.yaml",
        Refused(&["Rollout/istio-host-split: spec.strategy.canary.steps[1].experiment"]),
    ),
    (
        "traffic-routing-experiment-step_rollout-alb-experiment-step.yaml",
        Refused(&["Rollout/alb-rollout: spec.strategy.canary.steps[1].experiment"]),
    ),
    (
        "traffic-routing-experiment-step_rollout-smi-experiment-step.yaml",
        Refused(&["Rollout/rollout-smi-experiment: spec.strategy.canary.steps[1].experiment"]),
    ),
    ("workload-ref_workload-ref.yaml", Loads),
];

fn yaml_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    files
}

fn load(path: &Path) -> Result<weir_control::argo::Manifests, ManifestErrors> {
    load_files(&[path.to_path_buf()])
}

#[test]
fn argo_examples_table_covers_every_file() {
    let files = yaml_files(EXAMPLES);
    assert!(files.len() >= 30, "fixtures not found at {EXAMPLES}");
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(
            TABLE.iter().any(|(n, _)| *n == name),
            "{name} is not in the table"
        );
    }
    assert_eq!(
        files.len(),
        TABLE.len(),
        "the table lists files that do not exist"
    );
}

#[test]
fn argo_examples_load_or_are_refused_by_field() {
    let mut failures = Vec::new();
    for (name, expect) in TABLE {
        let path = Path::new(EXAMPLES).join(name);
        match (expect, load(&path)) {
            (Loads, Ok(_)) => {}
            (Loads, Err(e)) => failures.push(format!("{name} should load:\n{e}")),
            (Refused(_), Ok(_)) => failures.push(format!("{name} should be refused")),
            (Refused(wanted), Err(errors)) => {
                let text = errors.to_string();
                for w in *wanted {
                    if !text.contains(w) {
                        failures.push(format!("{name}: no problem mentions `{w}`; got:\n{text}"));
                    }
                }
                for e in &errors {
                    assert!(e.file.ends_with(name), "{e}");
                    assert!(
                        e.to_string().starts_with(&path.display().to_string()),
                        "{e}"
                    );
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn argo_live_rollouts_load_their_spec() {
    let files = yaml_files(LIVE);
    assert_eq!(files.len(), 4);
    for f in &files {
        let m = load(f).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.rollouts.len(), 1, "{}", f.display());
    }
    let m = load(&Path::new(LIVE).join("blue-green_bluegreen-rollout.yaml")).unwrap();
    let Strategy::BlueGreen(bg) = &m.rollouts[0].strategy else {
        panic!("not blue-green")
    };
    assert_eq!(bg.active_service, "bluegreen-demo");
    assert_eq!(
        bg.preview_service.as_deref(),
        Some("bluegreen-demo-preview")
    );
    assert!(!bg.auto_promotion_enabled);
}

#[test]
fn argo_rollout_canary_yields_the_exact_steps() {
    let m = load(&Path::new(EXAMPLES).join("rollout-canary.yaml")).unwrap();
    assert_eq!(m.rollouts.len(), 1);
    let r = &m.rollouts[0];
    assert_eq!(r.name, "rollout-canary");
    assert_eq!(r.origin.kind, "Rollout");
    let Strategy::Canary(c) = &r.strategy else {
        panic!("not canary")
    };
    let w = |pct: u16| Step::SetWeight {
        weight_bp: pct * 100,
    };
    let p = |secs: Option<u64>| Step::Pause {
        duration: secs.map(Duration::from_secs),
    };
    assert_eq!(
        c.steps,
        vec![
            w(20),
            p(None),
            w(40),
            p(Some(40)),
            w(60),
            p(Some(20)),
            w(80),
            p(Some(20))
        ]
    );
    assert_eq!(c.stable_service, None);
    assert!(c.analysis.is_none());
    // replicas, selector, template… are ignored with a notice, not an error.
    assert!(m
        .notices
        .iter()
        .any(|n| n.contains("Rollout/rollout-canary: spec.replicas")));
}

#[test]
fn argo_integer_pause_and_ignored_routers() {
    let m = load(&Path::new(EXAMPLES).join("ambassador_rollout.yaml")).unwrap();
    let Strategy::Canary(c) = &m.rollouts[0].strategy else {
        panic!()
    };
    assert_eq!(
        c.steps.last(),
        Some(&Step::Pause {
            duration: Some(Duration::from_secs(10))
        })
    );
    assert_eq!(c.stable_service.as_deref(), Some("echo-stable"));
    assert!(
        m.notices
            .iter()
            .any(|n| n.contains("trafficRouting.ambassador")),
        "{:?}",
        m.notices
    );
}

#[test]
fn argo_mirror_route_and_dropped_set_canary_scale() {
    let m = load(&Path::new(EXAMPLES).join("istio_istio-mirror.yaml")).unwrap();
    assert_eq!(m.skipped.len(), 4); // 2 Services, VirtualService, Gateway
    let Strategy::Canary(c) = &m.rollouts[0].strategy else {
        panic!()
    };
    assert_eq!(c.managed_routes, vec!["mirror-route".to_string()]);
    let Step::SetMirrorRoute {
        name,
        percentage,
        matches,
    } = &c.steps[0]
    else {
        panic!("{:?}", c.steps)
    };
    assert_eq!((name.as_str(), *percentage), ("mirror-route", Some(50)));
    assert_eq!(matches[0].method, Some(StringMatch::Exact("POST".into())));
    assert_eq!(matches[0].path, Some(StringMatch::Prefix("/color".into())));
    assert_eq!(c.steps.len(), 2);
    assert!(m
        .notices
        .iter()
        .any(|n| n.contains("steps[..].setCanaryScale")));
}

#[test]
fn argo_analysis_step_and_prometheus_template() {
    let m = load(&Path::new(EXAMPLES).join("rollout-analysis-step.yaml")).unwrap();
    let Strategy::Canary(c) = &m.rollouts[0].strategy else {
        panic!()
    };
    let expected = AnalysisRef {
        templates: vec![
            TemplateRef {
                name: "random-fail".into(),
                cluster_scope: false,
            },
            TemplateRef {
                name: "always-pass".into(),
                cluster_scope: true,
            },
        ],
        args: vec![],
    };
    assert_eq!(c.steps[1], Step::Analysis(expected));

    let m = load(&Path::new(EXAMPLES).join("appmesh_canary-rollout.yaml")).unwrap();
    let t = &m.templates[0];
    assert_eq!((t.name.as_str(), t.cluster_scope), ("success-rate", false));
    assert_eq!(t.args[0].name, "envoy_cluster_name");
    assert_eq!(t.args[0].value, None);
    let metric = &t.metrics[0];
    assert_eq!(metric.interval.as_ref().map(|i| i.0.as_str()), Some("5m"));
    assert_eq!(metric.failure_limit.0, "3");
    assert_eq!(metric.consecutive_error_limit.0, "4");
    assert_eq!(
        metric.success_condition.as_deref(),
        Some("result[0] >= 0.99")
    );
    let Provider::Prometheus { address, query, .. } = &metric.provider else {
        panic!()
    };
    assert_eq!(address.0, "http://appmesh-prometheus.appmesh-system:9090");
    assert_eq!(
        query.arg_names(),
        vec!["envoy_cluster_name", "envoy_cluster_name"]
    );
}

#[test]
fn argo_lint_cross_checks_templates() {
    let ex = |n: &str| Path::new(EXAMPLES).join(n);
    // Alone, the Rollout names templates that are not there.
    let report = lint(&[ex("rollout-analysis-step.yaml")]);
    assert!(!report.is_ok());
    let text: Vec<String> = report.problems.iter().map(|p| p.to_string()).collect();
    assert!(
        text.iter().any(|t| t.contains(
            "spec.strategy.canary.steps[1].analysis.templates[0].templateName: AnalysisTemplate `random-fail` is not in the given files"
        )),
        "{text:#?}"
    );
    assert!(text
        .iter()
        .any(|t| t.contains("ClusterAnalysisTemplate `always-pass`")));

    // With the template files, only their job providers are wrong (no "missing" cascade).
    let report = lint(&[
        ex("rollout-analysis-step.yaml"),
        ex("analysis-templates.yaml"),
        ex("cluster-analysis-templates.yaml"),
    ]);
    assert_eq!(report.problems.len(), 3, "{:#?}", report.problems);
    assert!(report
        .problems
        .iter()
        .all(|p| p.path.ends_with("provider.job")));

    // Skipped kinds are notes, not problems.
    let report = lint(&[
        ex("rollout-bluegreen.yaml"),
        ex("appmesh_canary-service.yaml"),
    ]);
    assert!(report.is_ok(), "{:#?}", report.problems);
    assert!(report
        .notes
        .iter()
        .any(|n| n.contains("Service/rollout-bluegreen-active")));
}

#[test]
fn argo_load_str_names_the_file() {
    let text =
        std::fs::read_to_string(Path::new(EXAMPLES).join("rollout-experiment-step.yaml")).unwrap();
    let errors = load_str(&text, Path::new("x/y.yaml")).unwrap_err();
    assert_eq!(errors.len(), 1);
    // FILE:LINE, the line of the refused step in Argo's own file.
    let e = errors.iter().next().unwrap();
    let line = e.line.unwrap_or_else(|| panic!("no line: {e}"));
    assert!(
        errors.to_string().starts_with(&format!(
            "x/y.yaml:{line}: Rollout/rollout-experiment-step: "
        )),
        "{errors}"
    );
    let at = text.lines().nth(line - 1).unwrap_or("");
    assert!(at.contains("experiment"), "line {line} is {at:?}: {e}");
}
