//! MeshFrontend: a route applies to its Service's frontend (its name) only. Upstream has two
//! cases: a request for the Service `echo-v2` gets the route's response header; one addressed
//! to an echo-v2 pod's own IP and port does not (and still reaches that pod). Here the sidecar
//! serves echo-v1 and echo-v2.

use super::{status, Sidecar, ECHO_V1, ECHO_V2, MESH_NS};
use crate::harness::roundtrip::request;

const MANIFEST: &str = "mesh-frontend.yaml";
const SIDECAR: Sidecar = Sidecar {
    services: &[ECHO_V1, ECHO_V2],
    namespaces: &[MESH_NS],
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_frontend() {
    let (suite, to) = super::start(70, &[MANIFEST], SIDECAR).await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "mesh-frontend"), 0).await;
    let cases = vec![request("/")
        .host(ECHO_V2)
        .response_header("X-Header-Set", "set")
        .backend(ECHO_V2, MESH_NS)];
    suite.expect_all(&to, cases).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_frontend_pod_ip() {
    let (suite, to) = super::start(71, &[MANIFEST], SIDECAR).await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "mesh-frontend"), 0).await;
    let pod = suite
        .pods_of(ECHO_V2)
        .find(|p| p.echo.identity.namespace == MESH_NS)
        .expect("an echo-v2 pod");
    let cases = vec![request("/")
        .host(&format!("{}:8080", pod.echo.ip))
        .response_absent("X-Header-Set")
        .backend(ECHO_V2, MESH_NS)];
    suite.expect_all(&to, cases).await;
}
