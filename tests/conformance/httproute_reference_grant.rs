//! httproute-reference-grant.go (Extended: ReferenceGrant): a backendRef in another namespace
//! resolves while a ReferenceGrant allows it, and answers 500 once it is deleted.

use crate::harness::roundtrip::request;
use crate::harness::{Suite, WEB_BACKEND_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_reference_grant() {
    let (suite, gw) = Suite::same_namespace(
        36,
        "httproute-reference-grant.yaml",
        "reference-grant",
        true,
    )
    .await;
    let cases = vec![request("/")
        .method("GET")
        .status(200)
        .backend("web-backend", WEB_BACKEND_NS)];
    suite.expect_all(&gw, cases).await;
    assert!(suite.cluster.delete(
        "gateway.networking.k8s.io/v1",
        "ReferenceGrant",
        WEB_BACKEND_NS,
        "reference-grant"
    ));
    suite
        .expect_all(&gw, vec![request("/").method("GET").status(500)])
        .await;
}
