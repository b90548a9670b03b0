//! httproute-307-redirect.go: a RequestRedirect with status 307 (Extended).

use crate::harness::roundtrip::{request, Redirect};
use crate::harness::Suite;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_307_redirect() {
    let (suite, gw) =
        Suite::same_namespace(22, "httproute-307-redirect.yaml", "307-redirect", true).await;
    let path = "/temporary";
    let redirect = Redirect {
        path: path.into(),
        ..Redirect::default()
    };
    let cases = vec![request(path).status(307).redirect(redirect)];
    suite.expect_all(&gw, cases).await;
}
