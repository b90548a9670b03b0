//! httproute-redirect-path.go (Extended: PathRedirect): prefix and full path replacement.

use crate::harness::roundtrip::{request, Redirect};
use crate::harness::Suite;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_redirect_path() {
    let (suite, gw) =
        Suite::same_namespace(25, "httproute-redirect-path.yaml", "redirect-path", true).await;
    let to = |host: &str, path: &str| Redirect {
        host: host.into(),
        path: path.into(),
        ..Redirect::default()
    };
    let cases = vec![
        request("/original-prefix/lemon")
            .status(302)
            .redirect(to("", "/replacement-prefix/lemon")),
        request("/full/path/original")
            .status(302)
            .redirect(to("", "/full-path-replacement")),
        request("/path-and-host")
            .status(302)
            .redirect(to("example.org", "/replacement-prefix")),
        request("/path-and-status")
            .status(301)
            .redirect(to("", "/replacement-prefix")),
        request("/full-path-and-host")
            .status(302)
            .redirect(to("example.org", "/replacement-full")),
        request("/full-path-and-status")
            .status(301)
            .redirect(to("", "/replacement-full")),
    ];
    suite.expect_all(&gw, cases).await;
}
