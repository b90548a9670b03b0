//! httproute-invalid-backendref-unknown-kind.go (Core): ResolvedRefs False InvalidKind, 500.

use crate::harness::roundtrip::request;
use crate::harness::{status, Suite, INFRA_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_invalid_backendref_unknown_kind() {
    let route = "invalid-backend-ref-unknown-kind";
    let (suite, gw) = Suite::same_namespace(
        10,
        "httproute-invalid-backendref-unknown-kind.yaml",
        route,
        false,
    )
    .await;
    status::route_must_have_condition(
        &suite.cluster,
        (INFRA_NS, route),
        (INFRA_NS, "same-namespace"),
        ("ResolvedRefs", "False", "InvalidKind"),
    )
    .await;
    let cases = vec![request("/v2").method("GET").status(500)];
    suite.expect_all(&gw, cases).await;
}
