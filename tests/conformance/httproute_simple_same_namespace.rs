//! httproute-simple-same-namespace.go (Core): a route in the infra namespace attaches to the
//! Gateway there and reaches infra-backend-v1.

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_simple_same_namespace() {
    let (suite, gw) = Suite::same_namespace(
        1,
        "httproute-simple-same-namespace.yaml",
        "gateway-conformance-infra-test",
        true,
    )
    .await;
    let cases = vec![request("/").status(200).backend(INFRA_V1, INFRA_NS)];
    suite.expect_all(&gw, cases).await;
}
