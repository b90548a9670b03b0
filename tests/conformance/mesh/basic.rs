//! MeshBasic: with no route, a request for the Service reaches the Service's own endpoints
//! (upstream: status 200 from any echo pod; here also the pod's namespace and name prefix,
//! which every echo pod has).

use super::{serving, ECHO, MESH_NS};
use crate::harness::roundtrip::request;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_basic() {
    let (suite, to) = super::start(60, &[], serving(&[ECHO])).await;
    let cases = vec![request("/").host(ECHO).status(200).backend(ECHO, MESH_NS)];
    suite.expect_all(&to, cases).await;
}
