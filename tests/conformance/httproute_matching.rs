//! httproute-matching.go (Core): path prefixes on segment boundaries and header matches.

use crate::harness::roundtrip::{request, Expected};
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2};

/// The cases, over the test's two backends in `namespace` (the mesh profile's
/// MeshHTTPRouteMatching has the same ones over echo-v1 and echo-v2).
pub fn cases(v1: &str, v2: &str, namespace: &str) -> Vec<Expected> {
    vec![
        request("/").backend(v1, namespace),
        request("/example").backend(v1, namespace),
        request("/").header("Version", "one").backend(v1, namespace),
        request("/v2").backend(v2, namespace),
        request("/v2/example").backend(v2, namespace),
        request("/").header("Version", "two").backend(v2, namespace),
        request("/v2/").backend(v2, namespace),
        // Not a path segment prefix, so not /v2.
        request("/v2example").backend(v1, namespace),
        request("/foo/v2/example").backend(v1, namespace),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_matching() {
    let (suite, gw) = Suite::same_namespace(5, "httproute-matching.yaml", "matching", true).await;
    suite
        .expect_all(&gw, cases(INFRA_V1, INFRA_V2, INFRA_NS))
        .await;
}
