//! MeshHTTPRouteSimpleSameNamespace: a producer route (the Service's namespace) whose
//! parentRef is the Service sends its requests to echo-v1. Upstream judges the request only;
//! the status weir writes for the parentRef is checked too.

use super::{serving, status, ECHO, ECHO_V1, MESH_NS};
use crate::harness::roundtrip::request;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_httproute_simple_same_namespace() {
    let (suite, to) = super::start(
        61,
        &["httproute-simple-same-namespace.yaml"],
        serving(&[ECHO]),
    )
    .await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "mesh-simple"), 0).await;
    let cases = vec![request("/")
        .host(ECHO)
        .status(200)
        .backend(ECHO_V1, MESH_NS)];
    suite.expect_all(&to, cases).await;
}
