//! httproute-request-percentage-mirror.go (Extended: RequestPercentageMirror): mirrors of 20 %,
//! 25/50 and 35 %, each counted over 500 requests.

use crate::harness::distribution::expect_mirror_percentages;
use crate::harness::roundtrip::{self, request};
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_request_percentage_mirror() {
    let (suite, gw) = Suite::same_namespace(
        33,
        "httproute-request-percentage-mirror.yaml",
        "request-percentage-mirror",
        true,
    )
    .await;
    let cases = [
        request("/percent-mirror")
            .expect_path("/percent-mirror")
            .mirrored_to(INFRA_V2, INFRA_NS, Some(20)),
        request("/percent-mirror-fraction")
            .expect_path("/percent-mirror-fraction")
            .mirrored_to(INFRA_V2, INFRA_NS, Some(50)),
        request("/percent-mirror-and-modify-headers")
            .header("X-Header-Remove", "remove-val")
            .header("X-Header-Add-Append", "append-val-1")
            .expect_path("/percent-mirror-and-modify-headers")
            .expect_header("X-Header-Add", "header-val-1")
            .expect_header("X-Header-Add-Append", "append-val-1,header-val-2")
            .expect_header("X-Header-Set", "set-overwrites-values")
            .expect_absent("X-Header-Remove")
            .mirrored_to(INFRA_V2, INFRA_NS, Some(35)),
    ];
    for case in cases {
        let case = case.backend(INFRA_V1, INFRA_NS);
        roundtrip::eventually(&gw, &case, roundtrip::CONSECUTIVE_SUCCESSES).await;
        expect_mirror_percentages(&suite, &gw, &case).await;
    }
}
