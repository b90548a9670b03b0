//! The demo's Rollout (ordinary Argo YAML) and the AnalysisTemplates it uses: the shipped ones,
//! judged by weir's built-in comparison of canary against stable.

pub const ROLLOUT: &str = r#"apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: demo
spec:
  replicas: 2
  strategy:
    canary:
      stableService: demo-stable
      canaryService: demo-canary
      analysis:
        templates:
        - templateName: weir-compare
        args:
        - name: route
          value: demo
      steps:
      - setWeight: 20
      - pause: {duration: 8s}
      - setWeight: 50
      - pause: {duration: 8s}
      - setWeight: 80
      - pause: {duration: 8s}
"#;

/// `--dark`: the canary judged on mirrored copies at weight 0 (the shipped weir-shadow
/// template) before it takes any user's request, then the steps as above.
pub const DARK_ROLLOUT: &str = r#"apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: demo
spec:
  replicas: 2
  strategy:
    canary:
      stableService: demo-stable
      canaryService: demo-canary
      trafficRouting:
        managedRoutes:
        - name: dark
      steps:
      - setMirrorRoute:
          name: dark
          percentage: 100
          match:
          - path: {prefix: /}
      - analysis:
          templates:
          - templateName: weir-shadow
          args:
          - name: route
            value: demo
      - setMirrorRoute:
          name: dark
      - setWeight: 20
      - pause: {duration: 8s}
      - setWeight: 50
      - pause: {duration: 8s}
      - setWeight: 80
      - pause: {duration: 8s}
"#;

/// The shipped templates, weir-compare among them: the demo runs what users are told to use.
pub const TEMPLATES: &str = include_str!("../../deploy/analysis/weir-analysis-templates.yaml");
