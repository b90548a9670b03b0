//! What weir understands of Argo Rollouts' manifests, after parsing and checking.
//!
//! This is the contract between the manifest reader (`argo::load`), the analysis runner and the
//! rollout engine. Strings that Argo lets carry `{{args.NAME}}` placeholders stay strings here
//! (`Templated`); they are resolved when an analysis run starts, with the run's arguments.

use std::path::PathBuf;
use std::time::Duration;

use weir_proxy::stats::Role;

/// Where a manifest object came from, for error messages: `file`, `kind/name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub file: PathBuf,
    pub kind: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rollout {
    pub origin: Origin,
    pub name: String,
    pub strategy: Strategy,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Strategy {
    Canary(CanaryStrategy),
    BlueGreen(BlueGreenStrategy),
}

#[derive(Clone, Debug, PartialEq)]
pub struct CanaryStrategy {
    pub stable_service: Option<String>,
    pub canary_service: Option<String>,
    pub steps: Vec<Step>,
    /// Background analysis: runs from `starting_step` (default 0) until the rollout ends.
    pub analysis: Option<BackgroundAnalysis>,
    /// `trafficRouting.managedRoutes[].name`, in order: the header and mirror routes weir may set.
    pub managed_routes: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Percent 0..=100 (Argo's setWeight is an integer percent), stored in basis points.
    SetWeight { weight_bp: u16 },
    /// None = until promoted.
    Pause { duration: Option<Duration> },
    /// An inline analysis: the step blocks until the run ends.
    Analysis(AnalysisRef),
    /// Empty `matches` removes the header route.
    SetHeaderRoute {
        name: String,
        matches: Vec<HeaderRouteMatch>,
    },
    /// `percentage` in percent 0..=100 (Argo's default: 100). Empty `matches` removes the
    /// mirror route, as in Argo.
    SetMirrorRoute {
        name: String,
        percentage: Option<u16>,
        matches: Vec<MirrorMatch>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StringMatch {
    Exact(String),
    Prefix(String),
    Regex(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderRouteMatch {
    pub header_name: String,
    pub header_value: StringMatch,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorMatch {
    pub method: Option<StringMatch>,
    pub path: Option<StringMatch>,
    pub headers: Vec<(String, StringMatch)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AnalysisRef {
    pub templates: Vec<TemplateRef>,
    pub args: Vec<ArgValue>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateRef {
    pub name: String,
    /// `clusterScope: true` → a ClusterAnalysisTemplate.
    pub cluster_scope: bool,
}

/// An argument passed by a Rollout to its analysis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgValue {
    pub name: String,
    pub value: ArgSource,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgSource {
    Value(String),
    /// `valueFrom.podTemplateHashValue: Stable | Latest`: weir answers with the backend role.
    PodTemplateHash(Role),
    /// `valueFrom.fieldRef.fieldPath` (e.g. metadata.name): resolved from the Rollout object.
    FieldRef(String),
    /// `valueFrom.secretKeyRef`: read when a run starts (`rollout::secrets`).
    Secret(SecretRef),
}

/// A key of a Kubernetes Secret (`valueFrom.secretKeyRef`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretRef {
    pub name: String,
    pub key: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BackgroundAnalysis {
    pub analysis: AnalysisRef,
    /// Index into `steps`; None = from the start.
    pub starting_step: Option<usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BlueGreenStrategy {
    pub active_service: String,
    pub preview_service: Option<String>,
    /// Argo's default is true.
    pub auto_promotion_enabled: bool,
    pub auto_promotion_seconds: Option<Duration>,
    pub pre_promotion_analysis: Option<AnalysisRef>,
    pub post_promotion_analysis: Option<AnalysisRef>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AnalysisTemplate {
    pub origin: Origin,
    pub name: String,
    /// A ClusterAnalysisTemplate.
    pub cluster_scope: bool,
    pub args: Vec<TemplateArg>,
    pub metrics: Vec<Metric>,
}

/// A template's declared argument: a default value, a Secret's key, or required when neither.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateArg {
    pub name: String,
    pub value: Option<String>,
    /// `valueFrom.secretKeyRef`: read when a run starts, unless the Rollout passes the value.
    pub secret: Option<SecretRef>,
}

/// A string that may hold `{{args.NAME}}` placeholders, resolved when a run starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Templated(pub String);

#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    pub name: String,
    /// Time between measurements; None = measure once.
    pub interval: Option<Templated>,
    /// Measurements to take; None = 1 without interval, unbounded with one (until the rollout ends).
    pub count: Option<Templated>,
    pub initial_delay: Option<Templated>,
    /// Expression source, checked to parse at load time.
    pub success_condition: Option<String>,
    pub failure_condition: Option<String>,
    /// The run fails when failed measurements > this. Default 0.
    pub failure_limit: Templated,
    /// Inconclusive when inconclusive measurements > this. Default 0.
    pub inconclusive_limit: Templated,
    /// Error when consecutive errors > this. Default 4.
    pub consecutive_error_limit: Templated,
    /// Successful once this many consecutive successes were seen (0 = not used).
    pub consecutive_success_limit: Templated,
    /// A dry-run metric is measured and reported but never fails the run.
    pub dry_run: bool,
    pub provider: Provider,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Provider {
    Prometheus {
        address: Templated,
        query: Templated,
        timeout: Option<Duration>,
        headers: Vec<(String, Templated)>,
        /// `rangeQuery: {start, end, step}` as Argo spells them (expressions like `now() - 5m`).
        range: Option<RangeQuery>,
    },
    Web {
        url: Templated,
        method: String,
        headers: Vec<(String, Templated)>,
        body: Option<Templated>,
        json_path: Option<String>,
        timeout: Option<Duration>,
    },
    /// weir's own live windows (see `Builtin`).
    Builtin(Builtin),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeQuery {
    pub start: String,
    pub end: String,
    pub step: String,
}

/// The built-in provider, spelled in a template as Argo's plugin provider so that the manifest
/// stays valid against Argo's CRD:
///
/// ```yaml
/// provider:
///   plugin:
///     weir/live:
///       route: web                # weir route name ({{args.*}} allowed)
///       backend: canary           # canary (default) | stable
///       metric: success-rate      # success-rate | error-rate | latency | requests | burn-rate
///                                 # | compare-errors | compare-latency (canary vs stable)
///                                 # | shadow-errors | shadow-latency (mirrored pairs)
///       quantile: 0.99            # for latency (default 0.99); result in seconds
///       slo: 99.9                 # for burn-rate, percent
///       window: 30s               # default 30s, at most 60s
///       minRequests: 50           # fewer requests in the window → inconclusive (default 20)
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Builtin {
    pub route: Templated,
    pub backend: Role,
    pub metric: BuiltinMetric,
    pub window: Duration,
    pub min_requests: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BuiltinMetric {
    /// Non-failures / requests, 0..1 (5xx and upstream errors are failures; 4xx are not).
    SuccessRate,
    /// Failures / requests, 0..1.
    ErrorRate,
    /// The quantile of latency, in seconds.
    Latency { quantile: f64 },
    /// Requests in the window.
    Requests,
    /// error ratio / (1 − SLO); SLO as a fraction (0.999).
    BurnRate { slo: f64 },
    /// The canary judged against the stable of the same route by sequential tests, from the
    /// start of the measurement until a verdict (`analysis::judge`).
    Compare(Compare),
}

/// `compare-errors` and `compare-latency`: the tolerance and how sure to be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compare {
    /// `None` judges errors; `Some(q)` requests slower than the stable's q-quantile.
    pub latency_quantile: Option<f64>,
    /// The canary may have this many times the stable's events and still be the same.
    pub max_ratio: f64,
    /// Or this much more, as a fraction of requests (0.001 = 0.1 %).
    pub margin: f64,
    /// The chance of failing a canary that is the same.
    pub alpha: f64,
    /// Undecided after this long: the measurement ends Inconclusive. None: no limit.
    pub max_duration: Option<Duration>,
    /// `shadow-errors` / `shadow-latency`: judged on mirrored pairs (the same request answered
    /// by both versions, `weir_proxy::stats::pairs`), not on each backend's own traffic.
    pub pairs: Option<PairSignal>,
}

/// What a paired comparison counts as the canary doing worse on one pair.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PairSignal {
    /// An error (5xx, gRPC server fault, no answer) where the stable had none.
    Errors,
    /// Slower than `max(max_ratio × stable's, stable's + margin)`; the stable is slower by
    /// as much the other way round.
    Latency { max_ratio: f64, margin: Duration },
}

impl PairSignal {
    pub const DEFAULT_LATENCY_RATIO: f64 = 1.2;
    pub const DEFAULT_LATENCY_MARGIN: Duration = Duration::from_millis(5);
}

impl Compare {
    pub const DEFAULT_MAX_RATIO: f64 = 1.5;
    pub const DEFAULT_MARGIN: f64 = 0.001;
    pub const DEFAULT_ALPHA: f64 = 0.01;
    pub const DEFAULT_QUANTILE: f64 = 0.99;
}
