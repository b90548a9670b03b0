//! httproute-invalid-cross-namespace-backend-ref.go (Extended: ReferenceGrant): a backendRef in
//! another namespace without a ReferenceGrant: RefNotPermitted, 500.

use crate::harness::roundtrip::request;
use crate::harness::{status, Suite, INFRA_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_invalid_cross_namespace_backend_ref() {
    let route = "invalid-cross-namespace-backend-ref";
    let (suite, gw) = Suite::same_namespace(
        38,
        "httproute-invalid-cross-namespace-backend-ref.yaml",
        route,
        false,
    )
    .await;
    status::route_must_have_condition(
        &suite.cluster,
        (INFRA_NS, route),
        (INFRA_NS, "same-namespace"),
        ("ResolvedRefs", "False", "RefNotPermitted"),
    )
    .await;
    suite
        .expect_all(&gw, vec![request("/").method("GET").status(500)])
        .await;
}
