//! weir's config file: the YAML model, its validation, and its compiled form.
//!
//! The compiled [`Config`] is made only of the data plane's plain specs, so the data plane never
//! sees YAML. Loading reports every problem at once, each with file, line and YAML path.

mod check;
mod compile;
mod duration;
mod error;
mod kube;
mod load;
mod model;
mod percent;

use std::path::PathBuf;

use weir_proxy::listen::spec::{AdminSpec, LimitsSpec, ListenerSpec};
use weir_proxy::table::spec::TableSpec;

pub use duration::parse_duration;
pub use error::{ConfigError, ConfigErrors};
pub use kube::{
    GatewayVersion, HttpRouteParents, HttpRoutesSource, KubeSourceConfig, PortRef, SmiVersion,
    WatchedNamespaces, WeightSource,
};
pub use load::{from_str, load};

/// A validated config, ready to hand to the data plane.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub listeners: Vec<ListenerSpec>,
    pub admin: AdminSpec,
    pub limits: LimitsSpec,
    pub table: TableSpec,
    /// The file it was loaded from; relative paths inside were resolved against its directory.
    pub source_file: PathBuf,
    /// Standalone rollouts (`rollouts:`, or `rollout:` for one), in the config's order.
    pub rollouts: Vec<RolloutConfig>,
    /// `state_dir`: a rollout without a `state_file` keeps its state in `DIR/NAME.json`.
    pub state_dir: Option<PathBuf>,
    /// The Kubernetes source, its `base` being this config's table.
    pub kube: Option<KubeSourceConfig>,
    /// Webhooks told of the rollout's events.
    pub notifications: Vec<crate::notify::WebhookConfig>,
    /// One line per request (`access_log:`); None: no access log.
    pub access_log: Option<weir_proxy::access_log::AccessLogSpec>,
}

/// The `rollout:` section, paths resolved. The manifests themselves are read by `argo`.
#[derive(Clone, Debug, PartialEq)]
pub struct RolloutConfig {
    pub manifests: Vec<PathBuf>,
    pub name: Option<String>,
    pub route: Option<String>,
    pub services: std::collections::BTreeMap<String, String>,
    pub state_file: Option<PathBuf>,
    /// (step in basis points, interval)
    pub abort_ramp: Option<(u16, std::time::Duration)>,
    pub token_file: Option<PathBuf>,
    /// Where `valueFrom.secretKeyRef` arguments are read: `DIR/SECRET/KEY`, as a Kubernetes
    /// Secret volume mounts them.
    pub secrets_dir: Option<PathBuf>,
}
