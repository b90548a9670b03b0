//! weir's own (no upstream test serves two Services from one proxy): a sidecar serving echo-v1
//! and echo-v2 tells their requests apart by the names clients use — `svc`, `svc.ns`,
//! `svc.ns.svc`, `svc.ns.svc.cluster.local`. The route attached to echo-v1 (`/swap` to
//! echo-v2) applies to echo-v1's names only; echo-v2, which no route names, is served by its
//! own endpoints whatever the path.

use super::{status, Sidecar, ECHO_V1, ECHO_V2, MESH_NS};
use crate::harness::roundtrip::{request, Expected};

/// The names a client in the cluster reaches `service` by.
fn names(service: &str) -> [String; 4] {
    [
        service.to_string(),
        format!("{service}.{MESH_NS}"),
        format!("{service}.{MESH_NS}.svc"),
        format!("{service}.{MESH_NS}.svc.cluster.local"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_services_told_apart_by_host() {
    let sidecar = Sidecar {
        services: &[ECHO_V1, ECHO_V2],
        namespaces: &[MESH_NS],
    };
    let (suite, to) = super::start(76, &["services-by-host.yaml"], sidecar).await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "swap-from-v1"), 0).await;
    let mut cases: Vec<Expected> = Vec::new();
    for host in names(ECHO_V1) {
        cases.push(request("/swap").host(&host).backend(ECHO_V2, MESH_NS));
    }
    for host in names(ECHO_V2) {
        cases.push(request("/swap").host(&host).backend(ECHO_V2, MESH_NS));
        cases.push(request("/").host(&host).backend(ECHO_V2, MESH_NS));
    }
    suite.expect_all(&to, cases).await;
}
