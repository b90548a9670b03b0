//! httproute-weight.go (Core): 70/30/0 weights, judged over 500 requests.

use crate::harness::distribution::expect_weighted;
use crate::harness::roundtrip::{self, request};
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2, INFRA_V3};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_weight() {
    let (_suite, gw) =
        Suite::same_namespace(9, "httproute-weight.yaml", "weighted-backends", true).await;
    let expected = request("/").status(200).namespace(INFRA_NS);
    roundtrip::eventually(&gw, &expected, roundtrip::CONSECUTIVE_SUCCESSES).await;
    let weights = [(INFRA_V1, 0.7), (INFRA_V2, 0.3), (INFRA_V3, 0.0)];
    expect_weighted(&gw, &expected, &weights).await;
}
