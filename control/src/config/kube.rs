//! What the Kubernetes source needs to know (`source::kube` follows it). A plain struct: the YAML
//! config and the binary fill it in; nothing here reads files.

use std::collections::BTreeMap;
use std::time::Duration;

use weir_proxy::table::spec::TableSpec;

/// Configuration of the Kubernetes source.
#[derive(Clone, Debug, PartialEq)]
pub struct KubeSourceConfig {
    /// The one namespace watched (Rollouts or TrafficSplits, and EndpointSlices). weir needs
    /// get/list/watch on these resources there, nothing more.
    pub namespace: String,
    /// Where the weights come from.
    pub weights: WeightSource,
    /// The weir route Argo's weights drive (a route of `base`).
    pub route: String,
    /// The table from the file config (routes, backend settings, timeouts, header routes, ...).
    /// Every other route is applied unchanged; the driven route keeps its match rules and backend
    /// settings, and gets its stable/canary addresses from EndpointSlices and its canary weight
    /// from the Rollout or TrafficSplit. A backend whose Service is unknown keeps its addresses
    /// from here.
    pub base: TableSpec,
    /// The stable Service when the Rollout does not name one (e.g. a basic canary without
    /// `stableService`); required for a TrafficSplit source. A Rollout's own
    /// `stableService`/`activeService` wins.
    pub stable_service: Option<String>,
    /// The canary Service when the Rollout does not name one; for a TrafficSplit, default: the
    /// one backend that is not the stable Service.
    pub canary_service: Option<String>,
    /// Which port of a Service's EndpointSlices to use, per Service name.
    pub ports: BTreeMap<String, PortRef>,
    /// The port for Services not in `ports`. None: a slice with exactly one TCP port uses it.
    pub default_port: Option<PortRef>,
    /// Changes arriving within this window are applied together (default 50 ms).
    pub debounce: Duration,
    /// First delay before re-listing after a watch error; doubled up to `retry_max` (defaults
    /// 500 ms and 30 s), reset after a successful list.
    pub retry_initial: Duration,
    pub retry_max: Duration,
}

impl KubeSourceConfig {
    /// A config with the defaults above, no Service overrides and no port choice.
    pub fn new(
        namespace: impl Into<String>,
        weights: WeightSource,
        route: impl Into<String>,
        base: TableSpec,
    ) -> Self {
        KubeSourceConfig {
            namespace: namespace.into(),
            weights,
            route: route.into(),
            base,
            stable_service: None,
            canary_service: None,
            ports: BTreeMap::new(),
            default_port: None,
            debounce: Duration::from_millis(50),
            retry_initial: Duration::from_millis(500),
            retry_max: Duration::from_secs(30),
        }
    }

    /// Every problem, one line each, naming the field.
    pub fn validate(&self) -> Result<(), String> {
        let mut errors = Vec::new();
        if self.namespace.is_empty() {
            errors.push("kube.namespace: must not be empty".to_string());
        }
        let http_routes = matches!(self.weights, WeightSource::HttpRoutes(_));
        if !http_routes && !self.base.routes.iter().any(|r| r.name == self.route) {
            errors.push(format!(
                "kube.route: no route named {:?} in the config",
                self.route
            ));
        }
        match &self.weights {
            WeightSource::Rollout { name } if name.is_empty() => {
                errors.push("kube.rollout: must not be empty".to_string())
            }
            WeightSource::RolloutSelector { labels } if labels.trim().is_empty() => {
                errors.push("kube.selector: must not be empty".to_string())
            }
            WeightSource::TrafficSplit { name, .. } => {
                if name.is_empty() {
                    errors.push("kube.traffic_split: must not be empty".to_string());
                }
                if self.stable_service.is_none() {
                    errors.push(
                        "kube.stable_service: required with a TrafficSplit source".to_string(),
                    );
                }
            }
            WeightSource::HttpRoutes(source) => {
                if source.controller_name.is_empty() || !source.controller_name.contains('/') {
                    errors.push(format!(
                        "kube.http_routes.controller_name: {:?} must be a domain-prefixed path \
                         (like example.com/weir), as in the GatewayClass",
                        source.controller_name
                    ));
                }
                match &source.parents {
                    HttpRouteParents::Gateway { name, .. } if name.is_empty() => {
                        errors.push("kube.http_routes.gateway.name: must not be empty".to_string())
                    }
                    HttpRouteParents::Services(s)
                        if s.is_empty() || s.iter().any(String::is_empty) =>
                    {
                        errors.push(
                            "kube.http_routes.services: name at least one Service".to_string(),
                        )
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        if self.retry_initial.is_zero() || self.retry_max < self.retry_initial {
            errors.push("kube.retry: need 0 < retry_initial <= retry_max".to_string());
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    }
}

/// Where Argo's decision is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightSource {
    /// One Rollout by name (`fieldSelector=metadata.name=NAME`).
    Rollout { name: String },
    /// The Rollouts matching a label selector (`app=shop,tier!=batch`); exactly one may match at
    /// a time: several matching is refused (the last table stays).
    RolloutSelector { labels: String },
    /// An SMI TrafficSplit by name, as Argo writes it for `trafficRouting.smi`.
    TrafficSplit { name: String, version: SmiVersion },
    /// Gateway API HTTPRoutes attached to what this weir serves, as the Argo Rollouts Gateway
    /// API plugin and Flagger write them: they make the table (ahead of the config's routes);
    /// `route` is not used.
    HttpRoutes(HttpRoutesSource),
}

/// Which HTTPRoutes weir follows, and who it says it is in their status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpRoutesSource {
    pub parents: HttpRouteParents,
    /// The GatewayClass `controllerName` weir implements; written in `status.parents[]`.
    pub controller_name: String,
    pub version: GatewayVersion,
    /// The `coordination.k8s.io` Lease, in the namespace, that elects the one replica writing
    /// status (default `weir-gateway-NAME` for a Gateway, `weir-httproute-status` for Services).
    pub lease_name: String,
    /// How long a Lease holder that stopped renewing keeps it (default 15 s; renewed every
    /// third of it).
    pub lease_duration: Duration,
    /// Where HTTPRoutes, and the Services, EndpointSlices and ReferenceGrants they name, are
    /// watched. Default: every namespace for a Gateway (its listeners decide which routes
    /// attach), the source's namespace for Services.
    pub namespaces: WatchedNamespaces,
    /// An edge weir's addresses, for the Gateway's `status.addresses` (empty: the Gateway's
    /// `spec.addresses`, else `POD_IP`).
    pub addresses: Vec<String>,
}

impl HttpRoutesSource {
    /// The namespace of the Gateway served (its `namespace`, else the source's).
    pub fn gateway_namespace<'a>(&'a self, source_namespace: &'a str) -> &'a str {
        match &self.parents {
            HttpRouteParents::Gateway {
                namespace: Some(ns),
                ..
            } => ns,
            _ => source_namespace,
        }
    }
}

/// Namespaces a watch covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchedNamespaces {
    /// Every namespace (a cluster-wide watch: `list`/`watch` granted by a ClusterRole).
    All,
    /// These (one watch each; a Role in each suffices).
    Only(Vec<String>),
}

/// What this weir serves, as HTTPRoutes' `parentRefs` name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpRouteParents {
    /// An edge weir: routes whose parentRef is this Gateway (namespace default: the route's;
    /// with a section name, refs to another section of the Gateway are not ours).
    Gateway {
        name: String,
        namespace: Option<String>,
        section_name: Option<String>,
    },
    /// A sidecar (GAMMA): routes whose parentRef is one of these Services, in the namespace.
    Services(Vec<String>),
}

/// The HTTPRoute API version served (Flagger's `gatewayapi:v1beta1` writes v1beta1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GatewayVersion {
    #[default]
    V1,
    V1beta1,
}

impl GatewayVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            GatewayVersion::V1 => "v1",
            GatewayVersion::V1beta1 => "v1beta1",
        }
    }
}

/// The TrafficSplit API version served by the cluster's SMI CRD.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SmiVersion {
    /// Weights are quantities (`500m`); Argo's default.
    #[default]
    V1alpha1,
    V1alpha2,
    V1alpha3,
}

impl SmiVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            SmiVersion::V1alpha1 => "v1alpha1",
            SmiVersion::V1alpha2 => "v1alpha2",
            SmiVersion::V1alpha3 => "v1alpha3",
        }
    }
}

/// Which port of a Service's endpoints to send to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortRef {
    /// The EndpointSlice port with this name (the Service port's name; its number there is the
    /// target port).
    Name(String),
    /// This port number on every endpoint (the pods' target port), whatever the slice lists.
    Number(u16),
}
