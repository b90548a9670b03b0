//! ResponseHeaderModification on a route whose parent is a Service (upstream, MeshFrontend,
//! MeshPorts and MeshConsumerRoute use this filter; no mesh test has the Gateway test's full
//! cases): the Gateway test's cases, answered by echo-v1.

use super::{serving, status, ECHO, ECHO_V1, MESH_NS};
use crate::httproute_response_header_modifier::cases;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_httproute_response_header_modifier() {
    let (suite, to) = super::start(
        69,
        &["httproute-response-header-modifier.yaml"],
        serving(&[ECHO]),
    )
    .await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "response-header-modifier"), 0).await;
    suite.expect_all(&to, cases(ECHO_V1, MESH_NS)).await;
}
