//! httproute-response-header-modifier.go (Extended: ResponseHeaderModification); the echo
//! server sets the response fields each case asks for.

use crate::harness::roundtrip::{request, Expected};
use crate::harness::{Suite, INFRA_NS, INFRA_V1};

/// The cases, all answered by `backend` in `namespace` (the mesh tests run them over
/// echo-v1).
pub fn cases(backend: &str, namespace: &str) -> Vec<Expected> {
    let v1 = |e: Expected| e.backend(backend, namespace);
    vec![
        v1(request("/set")
            .backend_sets("Some-Other-Header", "val")
            .response_header("Some-Other-Header", "val")
            .response_header("X-Header-Set", "set-overwrites-values")),
        v1(request("/set")
            .backend_sets("Some-Other-Header", "val")
            .backend_sets("X-Header-Set", "some-other-value")
            .response_header("Some-Other-Header", "val")
            .response_header("X-Header-Set", "set-overwrites-values")),
        v1(request("/add")
            .backend_sets("Some-Other-Header", "val")
            .response_header("Some-Other-Header", "val")
            .response_header("X-Header-Add", "add-appends-values")),
        v1(request("/add")
            .backend_sets("Some-Other-Header", "val")
            .backend_sets("X-Header-Add", "some-other-value")
            .response_header("Some-Other-Header", "val")
            .response_header("X-Header-Add", "some-other-value,add-appends-values")),
        v1(request("/remove")
            .backend_sets("X-Header-Remove", "val")
            .response_absent("X-Header-Remove")),
        v1(request("/multiple")
            .backend_sets("X-Header-Set-2", "set-val-2")
            .backend_sets("X-Header-Add-2", "add-val-2")
            .backend_sets("X-Header-Remove-2", "remove-val-2")
            .backend_sets("Another-Header", "another-header-val")
            .backend_sets("X-Header-Remove-1", "val")
            .response_header("X-Header-Set-1", "header-set-1")
            .response_header("X-Header-Set-2", "header-set-2")
            .response_header("X-Header-Add-1", "header-add-1")
            .response_header("X-Header-Add-2", "add-val-2,header-add-2")
            .response_header("X-Header-Add-3", "header-add-3")
            .response_header("Another-Header", "another-header-val")
            .response_absent("X-Header-Remove-1")
            .response_absent("X-Header-Remove-2")),
        v1(request("/case-insensitivity")
            .backend_sets("x-header-set", "original-val-set")
            .backend_sets("x-header-add", "original-val-add")
            .backend_sets("x-header-remove", "original-val-remove")
            .backend_sets("Another-Header", "another-header-val")
            .response_header("X-Header-Set", "header-set")
            .response_header("X-Header-Add", "original-val-add,header-add")
            .response_header("X-Lowercase-Add", "lowercase-add")
            .response_header("X-Mixedcase-Add-1", "mixedcase-add-1")
            .response_header("X-Mixedcase-Add-2", "mixedcase-add-2")
            .response_header("X-Uppercase-Add", "uppercase-add")
            .response_header("Another-Header", "another-header-val")
            .response_absent("x-header-remove")
            .response_absent("X-Header-Remove")),
        v1(request("/response-and-request-header-modifiers")
            .header("X-Header-Remove", "remove-val")
            .header("X-Header-Add-Append", "append-val-1")
            .header("X-Header-Echo", "echo")
            .backend_sets("X-Header-Set-2", "set-val-2")
            .backend_sets("X-Header-Add-2", "add-val-2")
            .backend_sets("X-Header-Remove-2", "remove-val-2")
            .backend_sets("Another-Header", "another-header-val")
            .backend_sets("X-Header-Remove-1", "remove-val-1")
            .backend_sets("X-Header-Echo", "echo")
            .expect_path("/response-and-request-header-modifiers")
            .expect_header("X-Header-Add", "header-val-1")
            .expect_header("X-Header-Set", "set-overwrites-values")
            .expect_header("X-Header-Add-Append", "append-val-1,header-val-2")
            .expect_header("X-Header-Echo", "echo")
            .expect_absent("X-Header-Remove")
            .response_header("X-Header-Set-1", "header-set-1")
            .response_header("X-Header-Set-2", "header-set-2")
            .response_header("X-Header-Add-1", "header-add-1")
            .response_header("X-Header-Add-2", "add-val-2,header-add-2")
            .response_header("Another-Header", "another-header-val")
            .response_header("X-Header-Echo", "echo")
            .response_absent("X-Header-Remove-1")
            .response_absent("X-Header-Remove-2")),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_response_header_modifier() {
    let (suite, gw) = Suite::same_namespace(
        31,
        "httproute-response-header-modifier.yaml",
        "response-header-modifier",
        true,
    )
    .await;
    suite.expect_all(&gw, cases(INFRA_V1, INFRA_NS)).await;
}
