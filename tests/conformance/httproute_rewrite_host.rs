//! httproute-rewrite-host.go (Extended: HostRewrite): URLRewrite of the Host.

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_rewrite_host() {
    let (suite, gw) =
        Suite::same_namespace(35, "httproute-rewrite-host.yaml", "rewrite-host", true).await;
    let host = "rewrite.example";
    let cases = vec![
        request("/one")
            .host(host)
            .expect_path("/one")
            .expect_host("one.example.org")
            .backend(INFRA_V1, INFRA_NS),
        request("/two")
            .host(host)
            .expect_path("/two")
            .expect_host("example.org")
            .backend(INFRA_V2, INFRA_NS),
        request("/rewrite-host-and-modify-headers")
            .host(host)
            .header("X-Header-Remove", "remove-val")
            .header("X-Header-Add-Append", "append-val-1")
            .expect_path("/rewrite-host-and-modify-headers")
            .expect_host("test.example.org")
            .expect_header("X-Header-Add", "header-val-1")
            .expect_header("X-Header-Add-Append", "append-val-1,header-val-2")
            .expect_header("X-Header-Set", "set-overwrites-values")
            .expect_absent("X-Header-Remove")
            .backend(INFRA_V2, INFRA_NS),
    ];
    suite.expect_all(&gw, cases).await;
}
