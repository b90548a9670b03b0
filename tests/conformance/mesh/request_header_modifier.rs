//! MeshHTTPRouteRequestHeaderModifier: the Gateway test's cases, answered by echo-v1.

use super::{serving, status, ECHO, ECHO_V1, MESH_NS};
use crate::httproute_request_header_modifier::cases;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_httproute_request_header_modifier() {
    let (suite, to) = super::start(
        68,
        &["httproute-request-header-modifier.yaml"],
        serving(&[ECHO]),
    )
    .await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "request-header-modifier"), 0).await;
    suite.expect_all(&to, cases(ECHO_V1, MESH_NS)).await;
}
