//! httproute-matching-across-routes.go (Core): two routes' matches, each within its hostnames.

use crate::harness::roundtrip::request;
use crate::harness::{status, Suite, INFRA_NS, INFRA_V1, INFRA_V2};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_matching_across_routes() {
    let suite = Suite::start(
        6,
        "httproute-matching-across-routes.yaml",
        &["same-namespace"],
    )
    .await;
    let routes = [(INFRA_NS, "matching-part1"), (INFRA_NS, "matching-part2")];
    let gw = suite
        .gateway_and_routes_must_be_accepted("same-namespace", &[], &routes)
        .await;
    for route in routes {
        status::route_must_have_resolved_refs(&suite.cluster, route, (INFRA_NS, "same-namespace"))
            .await;
    }
    let (com, net) = ("example.com", "example.net");
    let cases = vec![
        request("/").host(com).backend(INFRA_V1, INFRA_NS),
        request("/example").host(com).backend(INFRA_V1, INFRA_NS),
        request("/example").host(net).backend(INFRA_V1, INFRA_NS),
        request("/example")
            .host(com)
            .header("Version", "one")
            .backend(INFRA_V1, INFRA_NS),
        request("/v2").host(com).backend(INFRA_V2, INFRA_NS),
        // v2 matches are limited to example.com.
        request("/v2").host(net).backend(INFRA_V1, INFRA_NS),
        request("/v2/example").host(com).backend(INFRA_V2, INFRA_NS),
        request("/")
            .host(com)
            .header("Version", "two")
            .backend(INFRA_V2, INFRA_NS),
    ];
    suite.expect_all(&gw, cases).await;
}
