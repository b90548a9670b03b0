//! The demo's Rollout and AnalysisTemplate: ordinary Argo YAML, using weir's built-in provider.

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
        - templateName: canary-health
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

pub const TEMPLATE: &str = r#"apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: canary-health
spec:
  args:
  - name: route
  metrics:
  # 5xx only count as failures; judged over the last 10 s of live traffic, every second.
  - name: success-rate
    initialDelay: 2s
    interval: 1s
    failureLimit: 1
    inconclusiveLimit: 2
    successCondition: result >= 0.99
    provider:
      plugin:
        weir/live:
          route: "{{args.route}}"
          backend: canary
          metric: success-rate
          window: 10s
          minRequests: 100
  - name: p99-latency
    initialDelay: 2s
    interval: 1s
    failureLimit: 1
    inconclusiveLimit: 2
    successCondition: result < 0.1
    provider:
      plugin:
        weir/live:
          route: "{{args.route}}"
          backend: canary
          metric: latency
          quantile: 0.99
          window: 10s
          minRequests: 100
  # At SLO 99.9 %, a burn rate over 10 eats a month's error budget in three days.
  - name: burn-rate
    initialDelay: 2s
    interval: 1s
    failureLimit: 1
    inconclusiveLimit: 2
    failureCondition: result > 10
    provider:
      plugin:
        weir/live:
          route: "{{args.route}}"
          backend: canary
          metric: burn-rate
          slo: 99.9
          window: 10s
          minRequests: 100
"#;
