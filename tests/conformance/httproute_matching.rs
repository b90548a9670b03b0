//! httproute-matching.go (Core): path prefixes on segment boundaries and header matches.

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_matching() {
    let (suite, gw) = Suite::same_namespace(5, "httproute-matching.yaml", "matching", true).await;
    let cases = vec![
        request("/").backend(INFRA_V1, INFRA_NS),
        request("/example").backend(INFRA_V1, INFRA_NS),
        request("/")
            .header("Version", "one")
            .backend(INFRA_V1, INFRA_NS),
        request("/v2").backend(INFRA_V2, INFRA_NS),
        request("/v2/example").backend(INFRA_V2, INFRA_NS),
        request("/")
            .header("Version", "two")
            .backend(INFRA_V2, INFRA_NS),
        request("/v2/").backend(INFRA_V2, INFRA_NS),
        // Not a path segment prefix, so not /v2.
        request("/v2example").backend(INFRA_V1, INFRA_NS),
        request("/foo/v2/example").backend(INFRA_V1, INFRA_NS),
    ];
    suite.expect_all(&gw, cases).await;
}
