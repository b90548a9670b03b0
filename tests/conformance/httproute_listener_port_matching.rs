//! httproute-listener-port-matching.go (Extended: HTTPRouteParentRefPort): a Gateway with
//! listeners on ports 80, 8080 and 8090, three routes each attached by `port` (the third also
//! by `sectionName`): a request is served by the routes of the listeners on its port, the
//! Host's port naming it as the suite's client does (weir's one socket stands for the
//! Gateway's three addresses, as in every test here).

use crate::harness::roundtrip::request;
use crate::harness::status;
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2, INFRA_V3};

const GW: &str = "httproute-listener-port-matching";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_listener_port_matching() {
    let suite = Suite::start(79, "httproute-listener-port-matching.yaml", &[GW]).await;
    suite.namespaces_must_be_ready().await;
    let gw = (INFRA_NS, GW);
    let mut to = None;
    for (section, route) in [
        ("listener-1", "backend-v1"),
        ("listener-2", "backend-v2"),
        ("listener-4", "backend-v3"),
    ] {
        to = Some(
            suite
                .gateway_and_routes_must_be_accepted(GW, &[section], &[(INFRA_NS, route)])
                .await,
        );
        status::route_must_have_resolved_refs(&suite.cluster, (INFRA_NS, route), gw).await;
    }
    let Some(to) = to else {
        unreachable!("three listeners checked")
    };
    let cases = vec![
        request("/").host("foo.com").backend(INFRA_V1, INFRA_NS),
        request("/")
            .host("foo.com:8080")
            .backend(INFRA_V2, INFRA_NS),
        request("/")
            .host("bar.com:8080")
            .backend(INFRA_V2, INFRA_NS),
        request("/")
            .host("foo.com:8090")
            .backend(INFRA_V3, INFRA_NS),
        request("/").host("bar.com:8090").status(404),
    ];
    suite.expect_all(&to, cases).await;
}
