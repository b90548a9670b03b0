//! MeshPorts (Extended: HTTPRouteParentRefPort): a parentRef with a `port` applies to that
//! Service port only; without one, to every port. The route for echo-v1 names port 80, the
//! one for echo-v2 none; a client names port 8080 in its URL (`Host: echo-v1:8080`).

use super::{status, Sidecar, ECHO_V1, ECHO_V2, MESH_NS};
use crate::harness::roundtrip::request;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_ports() {
    let sidecar = Sidecar {
        services: &[ECHO_V1, ECHO_V2],
        namespaces: &[MESH_NS],
    };
    let (suite, to) = super::start(72, &["mesh-ports.yaml"], sidecar).await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "mesh-ports-v1"), 0).await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "mesh-ports-v2"), 0).await;
    let cases = vec![
        // The port named in the parentRef.
        request("/")
            .host(ECHO_V1)
            .response_header("X-Header-Set", "v1")
            .backend(ECHO_V1, MESH_NS),
        // Another port of the same Service: the route does not apply.
        request("/")
            .host(&format!("{ECHO_V1}:8080"))
            .response_absent("X-Header-Set")
            .backend(ECHO_V1, MESH_NS),
        // No port in the parentRef: every port.
        request("/")
            .host(ECHO_V2)
            .response_header("X-Header-Set", "v2")
            .backend(ECHO_V2, MESH_NS),
        request("/")
            .host(&format!("{ECHO_V2}:8080"))
            .response_header("X-Header-Set", "v2")
            .backend(ECHO_V2, MESH_NS),
    ];
    suite.expect_all(&to, cases).await;
}
