//! httproute-invalid-reference-grant.go (Extended: ReferenceGrant): no ReferenceGrant of the
//! manifest covers the Service (wrong namespace, group, kind or name): RefNotPermitted, 500.

use crate::harness::roundtrip::request;
use crate::harness::{status, Suite, INFRA_NS, WEB_BACKEND_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_invalid_reference_grant() {
    let (suite, gw) = Suite::same_namespace(
        37,
        "httproute-invalid-reference-grant.yaml",
        "reference-grant",
        false,
    )
    .await;
    status::route_must_have_condition(
        &suite.cluster,
        (INFRA_NS, "reference-grant"),
        (INFRA_NS, "same-namespace"),
        ("ResolvedRefs", "False", "RefNotPermitted"),
    )
    .await;
    let cases = vec![request("/")
        .method("GET")
        .status(500)
        .backend("web-backend", WEB_BACKEND_NS)];
    suite.expect_all(&gw, cases).await;
}
