//! MeshHTTPRouteMatching: path prefixes on segment boundaries and header matches, the Gateway
//! test's cases over echo-v1 and echo-v2.

use super::{serving, status, ECHO, ECHO_V1, ECHO_V2, MESH_NS};
use crate::httproute_matching::cases;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_httproute_matching() {
    let (suite, to) = super::start(62, &["httproute-matching.yaml"], serving(&[ECHO])).await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "matching"), 0).await;
    suite
        .expect_all(&to, cases(ECHO_V1, ECHO_V2, MESH_NS))
        .await;
}
