//! httproute-request-mirror.go (Extended: RequestMirror): the answer is infra-backend-v1's,
//! and a copy reaches infra-backend-v2 (found in its pods' logs by a unique request id).

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_request_mirror() {
    let (suite, gw) =
        Suite::same_namespace(32, "httproute-request-mirror.yaml", "request-mirror", false).await;
    let cases = vec![
        request("/mirror")
            .expect_path("/mirror")
            .backend(INFRA_V1, INFRA_NS)
            .mirrored_to(INFRA_V2, INFRA_NS, None),
        request("/mirror-and-modify-headers")
            .header("X-Header-Remove", "remove-val")
            .header("X-Header-Add-Append", "append-val-1")
            .expect_path("/mirror-and-modify-headers")
            .expect_header("X-Header-Add", "header-val-1")
            .expect_header("X-Header-Add-Append", "append-val-1,header-val-2")
            .expect_header("X-Header-Set", "set-overwrites-values")
            .expect_absent("X-Header-Remove")
            .backend(INFRA_V1, INFRA_NS)
            .mirrored_to(INFRA_V2, INFRA_NS, None),
    ];
    suite.expect_all(&gw, cases).await;
}
