//! httproute-invalid-cross-namespace-parent-ref.go (Core): a route from another namespace is
//! not allowed by the Gateway's Same-namespace listener.

use crate::harness::{status, Suite, INFRA_NS, WEB_BACKEND_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_invalid_cross_namespace_parent_ref() {
    let suite = Suite::start(
        12,
        "httproute-invalid-cross-namespace-parent-ref.yaml",
        &["same-namespace"],
    )
    .await;
    let (route, gw) = (
        (WEB_BACKEND_NS, "invalid-cross-namespace-parent-ref"),
        (INFRA_NS, "same-namespace"),
    );
    status::route_must_have_resolved_refs(&suite.cluster, route, gw).await;
    status::route_must_have_condition(
        &suite.cluster,
        route,
        gw,
        ("Accepted", "False", "NotAllowedByListeners"),
    )
    .await;
    status::route_must_have_no_accepted_parents(&suite.cluster, route).await;
    status::gateway_must_have_zero_routes(&suite.cluster, gw).await;
}
