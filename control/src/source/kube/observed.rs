//! The watched objects as last seen: what every pure decision of the kube source reads.

use std::collections::BTreeMap;

use super::certificates::SecretView;
use super::gateway_view::{GatewayView, GrantView, NamespaceView};
use super::httproute::HttpRouteView;
use super::objects::{RolloutView, SliceView, SplitView};
use super::service::ServiceView;

/// The state of the watched objects, as the watch task keeps it.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// Live Rollouts by name (those the watch selects).
    pub rollouts: BTreeMap<String, RolloutView>,
    /// The last Rollout that was deleted (or vanished in a re-list): its Services are where
    /// traffic falls back to when no Rollout is left.
    pub deleted_rollout: Option<RolloutView>,
    /// TrafficSplits by name.
    pub splits: BTreeMap<String, SplitView>,
    /// EndpointSlices by `namespace/name`.
    pub slices: BTreeMap<String, SliceView>,
    /// Services by `namespace/name`: how a reference's port becomes a slice port.
    pub services: BTreeMap<String, ServiceView>,
    /// HTTPRoutes by `namespace/name`.
    pub http_routes: BTreeMap<String, HttpRouteView>,
    /// The Gateway an edge weir serves, once seen.
    pub gateway: Option<GatewayView>,
    /// Namespaces by name, for listeners that select routes' namespaces by label.
    pub namespaces: BTreeMap<String, NamespaceView>,
    /// ReferenceGrants by `namespace/name`: which cross-namespace backendRefs are allowed.
    pub grants: BTreeMap<String, GrantView>,
    /// Secrets of the Gateway's namespace by `namespace/name`: its HTTPS listeners' certificates.
    pub secrets: BTreeMap<String, SecretView>,
}
