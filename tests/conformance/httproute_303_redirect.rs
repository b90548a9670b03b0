//! httproute-303-redirect.go: a RequestRedirect with status 303 (Extended).

use crate::harness::roundtrip::{request, Redirect};
use crate::harness::Suite;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_303_redirect() {
    let (suite, gw) =
        Suite::same_namespace(21, "httproute-303-redirect.yaml", "303-redirect", true).await;
    let path = "/see-other";
    let redirect = Redirect {
        path: path.into(),
        ..Redirect::default()
    };
    let cases = vec![request(path).method("POST").status(303).redirect(redirect)];
    suite.expect_all(&gw, cases).await;
}
