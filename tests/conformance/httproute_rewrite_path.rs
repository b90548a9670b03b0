//! httproute-rewrite-path.go (Extended: PathRewrite): URLRewrite of a prefix or the full path.

use crate::harness::roundtrip::{request, Expected};
use crate::harness::{Suite, INFRA_NS, INFRA_V1};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_rewrite_path() {
    let (suite, gw) =
        Suite::same_namespace(34, "httproute-rewrite-path.yaml", "rewrite-path", true).await;
    let modified = |e: Expected| {
        e.header("X-Header-Remove", "remove-val")
            .header("X-Header-Add-Append", "append-val-1")
            .header("X-Header-Set", "set-val")
            .expect_header("X-Header-Add", "header-val-1")
            .expect_header("X-Header-Add-Append", "append-val-1,header-val-2")
            .expect_header("X-Header-Set", "set-overwrites-values")
            .expect_absent("X-Header-Remove")
            .backend(INFRA_V1, INFRA_NS)
    };
    let cases = vec![
        request("/prefix/one/two")
            .expect_path("/one/two")
            .backend(INFRA_V1, INFRA_NS),
        request("/strip-prefix/three")
            .expect_path("/three")
            .backend(INFRA_V1, INFRA_NS),
        request("/strip-prefix")
            .expect_path("/")
            .backend(INFRA_V1, INFRA_NS),
        request("/full/one/two")
            .expect_path("/one")
            .backend(INFRA_V1, INFRA_NS),
        modified(request("/full/rewrite-path-and-modify-headers/test").expect_path("/test")),
        modified(request("/prefix/rewrite-path-and-modify-headers/one").expect_path("/prefix/one")),
    ];
    suite.expect_all(&gw, cases).await;
}
