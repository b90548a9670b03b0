//! httproute-invalid-parentref-not-matching-section-name.go (Core): a sectionName no listener
//! has: Accepted False NoMatchingParent, nothing attached.

use crate::harness::{status, Suite, INFRA_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_invalid_parentref_not_matching_section_name() {
    let suite = Suite::start(
        13,
        "httproute-invalid-parentref-not-matching-section-name.yaml",
        &["same-namespace"],
    )
    .await;
    let (route, gw) = (
        (INFRA_NS, "httproute-listener-not-matching-section-name"),
        (INFRA_NS, "same-namespace"),
    );
    status::route_must_be_refused(&suite.cluster, route, gw, "NoMatchingParent").await;
}
