//! The watched objects as last seen: what every pure decision of the kube source reads.

use std::collections::BTreeMap;

use super::httproute::HttpRouteView;
use super::objects::{RolloutView, SliceView, SplitView};

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
    /// EndpointSlices by slice name.
    pub slices: BTreeMap<String, SliceView>,
    /// HTTPRoutes by name.
    pub http_routes: BTreeMap<String, HttpRouteView>,
}
