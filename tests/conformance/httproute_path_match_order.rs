//! httproute-path-match-order.go (Core): exact before prefix, longer prefix first.

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2, INFRA_V3};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_path_match_order() {
    let (suite, gw) = Suite::same_namespace(
        7,
        "httproute-path-match-order.yaml",
        "path-matching-order",
        true,
    )
    .await;
    let cases = vec![
        request("/match/exact/one").backend(INFRA_V3, INFRA_NS),
        request("/match/exact").backend(INFRA_V2, INFRA_NS),
        request("/match").backend(INFRA_V1, INFRA_NS),
        request("/match/prefix/one/any").backend(INFRA_V2, INFRA_NS),
        request("/match/prefix/any").backend(INFRA_V1, INFRA_NS),
        request("/match/any").backend(INFRA_V3, INFRA_NS),
    ];
    suite.expect_all(&gw, cases).await;
}
