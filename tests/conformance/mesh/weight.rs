//! MeshHTTPRouteWeight: echo-v1 70, echo-v2 30, every answer from one of them, each share
//! within 5 points over 500 requests (the harness's `expect_weighted`: 3 rounds where upstream
//! allows 10).

use super::{serving, status, ECHO, ECHO_V1, ECHO_V2, MESH_NS};
use crate::harness::distribution::expect_weighted;
use crate::harness::roundtrip::{self, request};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_httproute_weight() {
    let (suite, to) = super::start(67, &["httproute-weight.yaml"], serving(&[ECHO])).await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "mesh-weighted-backends"), 0).await;
    let expected = request("/").host(ECHO).status(200).namespace(MESH_NS);
    roundtrip::eventually(&to, &expected, roundtrip::CONSECUTIVE_SUCCESSES).await;
    expect_weighted(&to, &expected, &[(ECHO_V1, 0.7), (ECHO_V2, 0.3)]).await;
}
