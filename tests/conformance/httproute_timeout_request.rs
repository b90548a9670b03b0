//! httproute-timeout-request.go (Extended: RequestTimeout): 500 ms, and 0s disabling it.

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_timeout_request() {
    let (suite, gw) = Suite::same_namespace(
        28,
        "httproute-timeout-request.yaml",
        "request-timeout",
        true,
    )
    .await;
    let cases = vec![
        request("/request-timeout").status(200).namespace(INFRA_NS),
        request("/request-timeout?delay=1s")
            .status(504)
            .namespace(INFRA_NS),
        request("/disable-request-timeout?delay=1s")
            .status(200)
            .namespace(INFRA_NS),
    ];
    suite.expect_all(&gw, cases).await;
}
