//! httproute-exact-path-matching.go (Core): Exact path matches, nothing else.

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_exact_path_matching() {
    let (suite, gw) = Suite::same_namespace(
        3,
        "httproute-exact-path-matching.yaml",
        "exact-matching",
        true,
    )
    .await;
    let cases = vec![
        request("/one").backend(INFRA_V1, INFRA_NS),
        request("/two").backend(INFRA_V2, INFRA_NS),
        request("/").status(404),
        request("/one/example").status(404),
        request("/two/").status(404),
        request("/Two").status(404),
    ];
    suite.expect_all(&gw, cases).await;
}
