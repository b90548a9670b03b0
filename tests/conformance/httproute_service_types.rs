//! httproute-service-types.go (Core): backends behind a Service with hand-managed
//! EndpointSlices, a headless Service, and a headless one with hand-managed slices — the
//! slices filled with infra-backend-v1's pods as the Go test patches them.

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_service_types() {
    let (suite, gw) =
        Suite::same_namespace(18, "httproute-service-types.yaml", "service-types", true).await;
    let manual = ["manual-endpointslices", "headless-manual-endpointslices"];
    // setupEndpointSlices: every pod's IPs of the slice's family (all IPv4 here; the ip6
    // slices stay as they are, with no endpoints, as the Go test leaves them).
    for prefix in manual {
        let name = format!("{prefix}-ip4");
        let mut slice = suite
            .cluster
            .get("discovery.k8s.io/v1", "EndpointSlice", INFRA_NS, &name)
            .unwrap_or_else(|| panic!("EndpointSlice {name}"));
        slice["endpoints"] = suite.pods_of(INFRA_V1).map(|p| p.endpoint()).collect();
        suite.cluster.apply(slice);
    }
    let cases = [
        "manual-endpointslices",
        "headless-manual-endpointslices",
        "headless",
    ]
    .iter()
    .map(|path| {
        request(&format!("/{path}"))
            .status(200)
            .backend(INFRA_V1, INFRA_NS)
    })
    .collect();
    suite.expect_all(&gw, cases).await;
}
