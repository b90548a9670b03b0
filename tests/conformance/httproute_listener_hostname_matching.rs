//! httproute-listener-hostname-matching.go (Core): listeners on one port told apart by
//! hostname, each route attached by sectionName.

use crate::harness::roundtrip::request;
use crate::harness::{status, Suite, INFRA_NS, INFRA_V1, INFRA_V2, INFRA_V3};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_listener_hostname_matching() {
    let name = "httproute-listener-hostname-matching";
    let suite = Suite::start(14, "httproute-listener-hostname-matching.yaml", &[name]).await;
    suite.namespaces_must_be_ready().await;
    let mut gw = None;
    for (route, sections) in [
        ("backend-v1", &["listener-1"][..]),
        ("backend-v2", &["listener-2"]),
        ("backend-v3", &["listener-3", "listener-4"]),
    ] {
        gw = Some(
            suite
                .gateway_and_routes_must_be_accepted(name, sections, &[(INFRA_NS, route)])
                .await,
        );
        status::route_must_have_resolved_refs(&suite.cluster, (INFRA_NS, route), (INFRA_NS, name))
            .await;
    }
    let cases = vec![
        request("/").host("bar.com").backend(INFRA_V1, INFRA_NS),
        request("/").host("foo.bar.com").backend(INFRA_V2, INFRA_NS),
        request("/").host("baz.bar.com").backend(INFRA_V3, INFRA_NS),
        request("/").host("boo.bar.com").backend(INFRA_V3, INFRA_NS),
        request("/")
            .host("multiple.prefixes.bar.com")
            .backend(INFRA_V3, INFRA_NS),
        request("/")
            .host("multiple.prefixes.foo.com")
            .backend(INFRA_V3, INFRA_NS),
        request("/").host("foo.com").status(404),
        request("/").host("no.matching.host").status(404),
    ];
    suite.expect_all(&gw.unwrap(), cases).await;
}
