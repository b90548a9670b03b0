//! Argo Rollouts manifests: Rollout, AnalysisTemplate, ClusterAnalysisTemplate, read unchanged.
//!
//! What weir does with each field:
//! - used: canary steps (setWeight, pause, analysis, setHeaderRoute, setMirrorRoute),
//!   stableService/canaryService, background analysis, trafficRouting.managedRoutes; blueGreen
//!   services, auto-promotion and pre/post-promotion analysis; templates' args, metrics and
//!   dryRun with the prometheus, web and built-in `plugin: {weir/live: …}` providers.
//! - ignored with one notice each: fields about pods (replicas, selector, template, maxSurge,
//!   setCanaryScale steps, …) and cluster routers (`trafficRouting.istio`, `.smi`, …): in
//!   standalone mode weir *is* the router, so the Rollout's steps drive weir directly.
//! - refused with a message saying what to use instead: experiment and plugin steps, other
//!   metric providers, secretKeyRef, dry-run on the Rollout side, maxTrafficWeight, pingPong.
//!
//! setCanaryScale steps are dropped, so `CanaryStrategy::steps` indices can be lower than
//! Argo's step numbers; `startingStep` is remapped accordingly.

mod duration;
mod error;
mod lint;
mod load;
pub mod model;
mod node;
mod provider;
mod rollout;
mod template;
mod templated;

pub use duration::parse_go_duration;
pub use error::{ManifestError, ManifestErrors};
pub use lint::{lint, LintReport};
pub use load::{load_files, load_str, Manifests};
