//! httproute-invalid-parentref-not-matching-listener-port.go (Extended:
//! HTTPRouteDestinationPortMatching): a parentRef `port` no listener has: ResolvedRefs True,
//! Accepted False NoMatchingParent, nothing attached.

use crate::harness::{status, Suite, INFRA_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_invalid_parentref_not_matching_listener_port() {
    let suite = Suite::start(
        80,
        "httproute-invalid-parentref-not-matching-listener-port.yaml",
        &["same-namespace"],
    )
    .await;
    let (route, gw) = (
        (INFRA_NS, "httproute-listener-not-matching-route-port"),
        (INFRA_NS, "same-namespace"),
    );
    status::route_must_have_resolved_refs(&suite.cluster, route, gw).await;
    status::route_must_be_refused(&suite.cluster, route, gw, "NoMatchingParent").await;
}
