//! httproute-hostname-intersection.go (Core): routes attach only to listeners whose hostnames
//! intersect theirs, serve only the intersection, and count in attachedRoutes only if
//! Accepted; a listener without a hostname takes every route hostname. Two Gateways, so two
//! weirs.

use crate::harness::roundtrip::request;
use crate::harness::status::{self, Listener, Parent};
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2, INFRA_V3};

const GW: &str = "httproute-hostname-intersection";
const GW_ALL: &str = "httproute-hostname-intersection-all";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_hostname_intersection() {
    let suite = Suite::start(15, "httproute-hostname-intersection.yaml", &[GW, GW_ALL]).await;
    suite.namespaces_must_be_ready().await;

    // HTTPRoutes that do intersect with listener hostnames.
    let routes = [
        "specific-host-matches-listener-specific-host",
        "specific-host-matches-listener-wildcard-host",
        "wildcard-host-matches-listener-specific-host",
        "wildcard-host-matches-listener-wildcard-host",
    ]
    .map(|r| (INFRA_NS, r));
    let gw = suite
        .gateway_and_routes_must_be_accepted(GW, &[], &routes)
        .await;
    for route in routes {
        status::route_must_have_resolved_refs(&suite.cluster, route, (INFRA_NS, GW)).await;
    }
    let ok =
        |host: &str, path: &str, backend: &str| request(path).host(host).backend(backend, INFRA_NS);
    let missing = |host: &str, path: &str| request(path).host(host).status(404);
    let cases = vec![
        ok("very.specific.com", "/s1", INFRA_V1),
        ok("very.specific.com:1234", "/s1", INFRA_V1),
        missing("non.matching.com", "/s1"),
        missing("foo.nonmatchingwildcard.io", "/s1"),
        missing("foo.wildcard.io", "/s1"),
        missing("very.specific.com", "/non-matching-prefix"),
        ok("foo.wildcard.io", "/s2", INFRA_V2),
        ok("bar.wildcard.io", "/s2", INFRA_V2),
        ok("foo.bar.wildcard.io", "/s2", INFRA_V2),
        missing("non.matching.com", "/s2"),
        missing("wildcard.io", "/s2"),
        missing("very.specific.com", "/s2"),
        missing("foo.wildcard.io", "/non-matching-prefix"),
        ok("very.specific.com", "/s3", INFRA_V3),
        missing("non.matching.com", "/s3"),
        missing("foo.specific.com", "/s3"),
        missing("foo.wildcard.io", "/s3"),
        missing("very.specific.com", "/non-matching-prefix"),
        ok("foo.anotherwildcard.io", "/s4", INFRA_V1),
        ok("bar.anotherwildcard.io", "/s4", INFRA_V1),
        ok("foo.bar.anotherwildcard.io", "/s4", INFRA_V1),
        missing("anotherwildcard.io", "/s4"),
        missing("foo.wildcard.io", "/s4"),
        missing("very.specific.com", "/s4"),
        missing("foo.anotherwildcard.io", "/non-matching-prefix"),
    ];
    suite.expect_all(&gw, cases).await;

    // HTTPRoutes that do not intersect with listener hostnames.
    let gw = suite
        .gateway_and_routes_must_be_accepted(GW, &[], &[])
        .await;
    let parents = [Parent {
        gateway: (INFRA_NS.into(), GW.into()),
        conditions: vec![("Accepted", "False", "NoMatchingListenerHostname")],
    }];
    status::route_must_have_parents(
        &suite.cluster,
        (INFRA_NS, "no-intersecting-hosts"),
        &parents,
        true,
    )
    .await;
    let cases = vec![
        missing("specific.but.wrong.com", "/s5"),
        missing("wildcard.io", "/s5"),
    ];
    suite.expect_all(&gw, cases).await;

    // HTTPRoutes have to be counted in AttachedRoutes only if they are Accepted.
    let listener = |name, attached_routes| Listener {
        name,
        supported_kinds: &["HTTPRoute"],
        conditions: vec![("Accepted", "True", ""), ("ResolvedRefs", "True", "")],
        attached_routes,
    };
    let listeners = [
        listener("listener-1", 2),
        listener("listener-2", 1),
        listener("listener-3", 1),
    ];
    status::gateway_status_must_have_listeners(&suite.cluster, (INFRA_NS, GW), &listeners).await;

    // HTTPRoutes intersect with an unspecified hostname listener.
    let route = (INFRA_NS, GW_ALL);
    let gw = suite
        .gateway_and_routes_must_be_accepted(GW_ALL, &[], &[route])
        .await;
    status::route_must_have_resolved_refs(&suite.cluster, route, (INFRA_NS, GW_ALL)).await;
    let cases = vec![
        ok("first.com", "/", INFRA_V2),
        ok("sub.first.com", "/", INFRA_V2),
        ok("second.com", "/", INFRA_V2),
        ok("sub.second.com", "/", INFRA_V2),
        missing("third.com", "/").namespace(INFRA_NS),
        missing("sub.third.com", "/").namespace(INFRA_NS),
    ];
    suite.expect_all(&gw, cases).await;
}
