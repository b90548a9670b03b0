//! httproute-redirect-host-and-status.go (Core): RequestRedirect to another hostname, 302 by
//! default or the status given.

use crate::harness::roundtrip::{request, Redirect};
use crate::harness::{Suite, INFRA_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_redirect_host_and_status() {
    let (suite, gw) = Suite::same_namespace(
        24,
        "httproute-redirect-host-and-status.yaml",
        "redirect-host-and-status",
        true,
    )
    .await;
    let to = || Redirect {
        host: "example.org".into(),
        ..Redirect::default()
    };
    let cases = vec![
        request("/hostname-redirect")
            .status(302)
            .redirect(to())
            .namespace(INFRA_NS),
        request("/host-and-status")
            .status(301)
            .redirect(to())
            .namespace(INFRA_NS),
    ];
    suite.expect_all(&gw, cases).await;
}
