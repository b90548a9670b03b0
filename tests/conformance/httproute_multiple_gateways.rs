//! httproute-multiple-gateways.go (Core): one route attached to two Gateways (two weirs), each
//! Gateway with a route of its own.

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2, INFRA_V3};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_multiple_gateways() {
    let suite = Suite::start(
        16,
        "httproute-multiple-gateways.yaml",
        &["same-namespace", "all-namespaces"],
    )
    .await;
    let shared = (INFRA_NS, "multiple-gateways-shared-route");
    for (gateway, dedicated, backend) in [
        ("same-namespace", "same-namespace-dedicated-route", INFRA_V2),
        ("all-namespaces", "all-namespaces-dedicated-route", INFRA_V3),
    ] {
        let gw = suite
            .gateway_and_routes_must_be_accepted(gateway, &[], &[shared, (INFRA_NS, dedicated)])
            .await;
        let cases = vec![
            request("/shared").status(200).backend(INFRA_V1, INFRA_NS),
            request("/").status(200).backend(backend, INFRA_NS),
        ];
        suite.expect_all(&gw, cases).await;
    }
}
