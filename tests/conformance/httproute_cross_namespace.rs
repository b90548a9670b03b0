//! httproute-cross-namespace.go (Core): a route in the web-backend namespace attaches to the
//! backend-namespaces Gateway, whose listener admits namespaces labelled as backends.

use crate::harness::roundtrip::request;
use crate::harness::{status, Suite, INFRA_NS, WEB_BACKEND_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_cross_namespace() {
    let suite = Suite::start(2, "httproute-cross-namespace.yaml", &["backend-namespaces"]).await;
    let route = (WEB_BACKEND_NS, "cross-namespace");
    let gw = suite
        .gateway_and_routes_must_be_accepted("backend-namespaces", &[], &[route])
        .await;
    status::route_must_have_resolved_refs(&suite.cluster, route, (INFRA_NS, "backend-namespaces"))
        .await;
    let cases = vec![request("/")
        .status(200)
        .backend("web-backend", WEB_BACKEND_NS)];
    suite.expect_all(&gw, cases).await;
}
