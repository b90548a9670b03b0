//! httproute-invalid-nonexistent-backendref.go (Core): ResolvedRefs False BackendNotFound, 500.

use crate::harness::roundtrip::request;
use crate::harness::{status, Suite, INFRA_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_invalid_nonexistent_backendref() {
    let route = "invalid-nonexistent-backend-ref";
    let (suite, gw) = Suite::same_namespace(
        11,
        "httproute-invalid-nonexistent-backendref.yaml",
        route,
        false,
    )
    .await;
    status::route_must_have_condition(
        &suite.cluster,
        (INFRA_NS, route),
        (INFRA_NS, "same-namespace"),
        ("ResolvedRefs", "False", "BackendNotFound"),
    )
    .await;
    let cases = vec![request("/").method("GET").status(500)];
    suite.expect_all(&gw, cases).await;
}
