//! httproute-omitted-backendrefs.go (Core): a rule with no or empty backendRefs answers 500.

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_omitted_backendrefs() {
    let (suite, gw) = Suite::same_namespace(
        8,
        "httproute-omitted-backendrefs.yaml",
        "omitted-backendrefs",
        true,
    )
    .await;
    let cases = vec![
        request("/forward").backend(INFRA_V1, INFRA_NS),
        request("/omitted-no-forward").status(500),
        request("/empty-no-forward").status(500),
    ];
    suite.expect_all(&gw, cases).await;
}
