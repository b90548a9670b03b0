//! httproute-redirect-scheme.go (Extended: SchemeRedirect).

use crate::harness::roundtrip::{request, Redirect};
use crate::harness::Suite;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_redirect_scheme() {
    let (suite, gw) = Suite::same_namespace(
        27,
        "httproute-redirect-scheme.yaml",
        "redirect-scheme",
        true,
    )
    .await;
    let to = |host: &str| Redirect {
        host: host.into(),
        scheme: "https".into(),
        ..Redirect::default()
    };
    let cases = vec![
        request("/scheme").status(302).redirect(to("")),
        request("/scheme-and-host")
            .status(302)
            .redirect(to("example.org")),
        request("/scheme-and-status").status(301).redirect(to("")),
        request("/scheme-and-host-and-status")
            .status(302)
            .redirect(to("example.org")),
    ];
    suite.expect_all(&gw, cases).await;
}
