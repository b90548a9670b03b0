//! httproute-308-redirect.go: a RequestRedirect with status 308 (Extended).

use crate::harness::roundtrip::{request, Redirect};
use crate::harness::Suite;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_308_redirect() {
    let (suite, gw) =
        Suite::same_namespace(23, "httproute-308-redirect.yaml", "308-redirect", true).await;
    let path = "/permanent";
    let redirect = Redirect {
        path: path.into(),
        ..Redirect::default()
    };
    let cases = vec![request(path).status(308).redirect(redirect)];
    suite.expect_all(&gw, cases).await;
}
