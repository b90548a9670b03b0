//! httproute-invalid-parentref-section-name-not-matching-port.go (Extended:
//! HTTPRouteParentRefPort): a parentRef whose `sectionName` names a listener on another port
//! than its `port`: Accepted False NoMatchingParent, nothing attached.

use crate::harness::{status, Suite, INFRA_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_invalid_parentref_section_name_not_matching_port() {
    const GW: &str = "gateway-with-one-not-matching-port-and-section-name-route";
    let suite = Suite::start(
        81,
        "httproute-invalid-parentref-section-name-not-matching-port.yaml",
        &[GW],
    )
    .await;
    let (route, gw) = (
        (
            INFRA_NS,
            "httproute-listener-section-name-not-matching-port",
        ),
        (INFRA_NS, GW),
    );
    status::route_must_be_refused(&suite.cluster, route, gw, "NoMatchingParent").await;
}
