//! httproute-request-header-modifier.go: HTTPRouteRequestHeaderModifier (Core, filters on
//! rules) and HTTPRouteBackendRequestHeaderModifier (Extended, the same filters on
//! backendRefs), one Go test function run on each manifest.

use crate::harness::roundtrip::{request, Expected};
use crate::harness::{Suite, INFRA_NS, INFRA_V1};

/// The cases, all answered by `backend` in `namespace` (the mesh profile's
/// MeshHTTPRouteRequestHeaderModifier has the same ones, answered by echo-v1).
pub fn cases(backend: &str, namespace: &str) -> Vec<Expected> {
    let v1 = |e: Expected| e.backend(backend, namespace);
    vec![
        v1(request("/set")
            .header("Some-Other-Header", "val")
            .expect_path("/set")
            .expect_header("Some-Other-Header", "val")
            .expect_header("X-Header-Set", "set-overwrites-values")),
        v1(request("/set")
            .header("Some-Other-Header", "val")
            .header("X-Header-Set", "some-other-value")
            .expect_path("/set")
            .expect_header("Some-Other-Header", "val")
            .expect_header("X-Header-Set", "set-overwrites-values")),
        v1(request("/add")
            .header("Some-Other-Header", "val")
            .expect_path("/add")
            .expect_header("Some-Other-Header", "val")
            .expect_header("X-Header-Add", "add-appends-values")),
        v1(request("/add")
            .header("Some-Other-Header", "val")
            .header("X-Header-Add", "some-other-value")
            .expect_path("/add")
            .expect_header("Some-Other-Header", "val")
            .expect_header("X-Header-Add", "some-other-value,add-appends-values")),
        v1(request("/remove")
            .header("X-Header-Remove", "val")
            .expect_path("/remove")
            .expect_absent("X-Header-Remove")),
        v1(request("/multiple")
            .header("X-Header-Set-2", "set-val-2")
            .header("X-Header-Add-2", "add-val-2")
            .header("X-Header-Remove-2", "remove-val-2")
            .header("Another-Header", "another-header-val")
            .expect_path("/multiple")
            .expect_header("X-Header-Set-1", "header-set-1")
            .expect_header("X-Header-Set-2", "header-set-2")
            .expect_header("X-Header-Add-1", "header-add-1")
            .expect_header("X-Header-Add-2", "add-val-2,header-add-2")
            .expect_header("X-Header-Add-3", "header-add-3")
            .expect_header("Another-Header", "another-header-val")
            .expect_absent("X-Header-Remove-1")
            .expect_absent("X-Header-Remove-2")),
        v1(request("/case-insensitivity")
            .header("x-header-set", "original-val-set")
            .header("x-header-add", "original-val-add")
            .header("x-header-remove", "original-val-remove")
            .header("Another-Header", "another-header-val")
            .expect_path("/case-insensitivity")
            .expect_header("X-Header-Set", "header-set")
            .expect_header("X-Header-Add", "original-val-add,header-add")
            .expect_header("Another-Header", "another-header-val")
            .expect_absent("x-header-remove")
            .expect_absent("X-Header-Remove")),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_request_header_modifier() {
    let (suite, gw) = Suite::same_namespace(
        19,
        "httproute-request-header-modifier.yaml",
        "request-header-modifier",
        true,
    )
    .await;
    suite.expect_all(&gw, cases(INFRA_V1, INFRA_NS)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_backend_request_header_modifier() {
    let (suite, gw) = Suite::same_namespace(
        20,
        "httproute-request-header-modifier-backend.yaml",
        "request-header-modifier",
        true,
    )
    .await;
    suite.expect_all(&gw, cases(INFRA_V1, INFRA_NS)).await;
}
