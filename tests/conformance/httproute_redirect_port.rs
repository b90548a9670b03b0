//! httproute-redirect-port.go (Extended: PortRedirect).

use crate::harness::roundtrip::{request, Redirect};
use crate::harness::Suite;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_redirect_port() {
    let (suite, gw) =
        Suite::same_namespace(26, "httproute-redirect-port.yaml", "redirect-port", true).await;
    let to = |host: &str| Redirect {
        host: host.into(),
        port: "8083".into(),
        ..Redirect::default()
    };
    let cases = vec![
        request("/port").status(302).redirect(to("")),
        request("/port-and-host")
            .status(302)
            .redirect(to("example.org")),
        request("/port-and-status").status(301).redirect(to("")),
        request("/port-and-host-and-status")
            .status(302)
            .redirect(to("example.org")),
    ];
    suite.expect_all(&gw, cases).await;
}
