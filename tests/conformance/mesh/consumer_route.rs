//! MeshConsumerRoute: a route in the consumer namespace whose parentRef is the producer's
//! Service (`parentRef.namespace`), its backendRef that Service. Upstream: a request from the
//! consumer namespace's client gets the route's response header; one from the producer
//! namespace's client does not. Here: the route attaches (weir's status entry, the request
//! modified) when the sidecar watches the consumer namespace, and not at all when it does not.
//!
//! The upstream manifest as it is (no ReferenceGrant: a consumer route may send to its parent
//! Service's namespace without one) and with a grant added both pass. What weir does not do,
//! apart and ignored: it cannot tell a client's namespace (the producer client's case).

use std::time::Duration;

use super::{serving, status, Sidecar, CONSUMER_NS, ECHO_V1, MESH_NS};
use crate::harness::roundtrip::{request, Expected};

const ROUTE_MANIFEST: &str = "mesh-consumer-route.yaml";
const WITH_GRANT: &[&str] = &[ROUTE_MANIFEST, "mesh-consumer-reference-grant.yaml"];
const ROUTE: (&str, &str) = (CONSUMER_NS, "mesh-consumer-route");
const WATCHING_BOTH: Sidecar = Sidecar {
    services: &[ECHO_V1],
    namespaces: &[MESH_NS, CONSUMER_NS],
};

/// The request both upstream clients make.
fn to_echo_v1() -> Expected {
    request("/")
        .host(&format!("{ECHO_V1}.{MESH_NS}"))
        .backend(ECHO_V1, MESH_NS)
}

/// The consumer client's case.
fn consumer_case() -> Expected {
    to_echo_v1().response_header("X-Header-Set", "set")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_consumer_route() {
    let (suite, to) = super::start(73, WITH_GRANT, WATCHING_BOTH).await;
    status::route_must_be_accepted(&suite.cluster, ROUTE, 0).await;
    suite.expect_all(&to, vec![consumer_case()]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_consumer_route_without_reference_grant() {
    let (suite, to) = super::start(78, &[ROUTE_MANIFEST], WATCHING_BOTH).await;
    status::route_must_be_accepted(&suite.cluster, ROUTE, 0).await;
    suite.expect_all(&to, vec![consumer_case()]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs: a consumer route applied to its own namespace's clients only (weir does not know a client's namespace) (issue 47)"]
async fn mesh_consumer_route_producer_client() {
    let (suite, to) = super::start(74, WITH_GRANT, WATCHING_BOTH).await;
    status::route_must_be_accepted(&suite.cluster, ROUTE, 0).await;
    let producer = to_echo_v1().response_absent("X-Header-Set");
    suite.expect_all(&to, vec![producer]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_consumer_route_not_watched() {
    let (suite, to) = super::start(75, WITH_GRANT, serving(&[ECHO_V1])).await;
    // Served, but by the Service's own endpoints: the route is not attached...
    let unmodified = to_echo_v1().response_absent("X-Header-Set");
    suite.expect_all(&to, vec![unmodified]).await;
    // ...and weir, which answers for the Service, says nothing of it.
    status::route_must_have_no_entry(&suite.cluster, ROUTE, Duration::from_secs(2)).await;
}
