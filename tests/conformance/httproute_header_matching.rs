//! httproute-header-matching.go (Core): header matches, ANDed within a match, ORed across.

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_header_matching() {
    let (suite, gw) =
        Suite::same_namespace(4, "httproute-header-matching.yaml", "header-matching", true).await;
    let r = || request("/");
    let cases = vec![
        r().header("Version", "one").backend(INFRA_V1, INFRA_NS),
        r().header("Version", "two").backend(INFRA_V2, INFRA_NS),
        r().header("Version", "two")
            .header("Color", "orange")
            .backend(INFRA_V1, INFRA_NS),
        r().header("Version", "two")
            .header("Color", "blue")
            .backend(INFRA_V2, INFRA_NS),
        r().header("Color", "orange").status(404),
        r().header("Some-Other-Header", "one").status(404),
        r().header("Color", "blue").backend(INFRA_V1, INFRA_NS),
        r().header("Color", "green").backend(INFRA_V1, INFRA_NS),
        r().header("Color", "red").backend(INFRA_V2, INFRA_NS),
        r().header("Color", "yellow").backend(INFRA_V2, INFRA_NS),
        r().header("Color", "purple").status(404),
    ];
    suite.expect_all(&gw, cases).await;
}
