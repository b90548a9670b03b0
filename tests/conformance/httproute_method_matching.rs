//! httproute-method-matching.go (Extended: MethodMatching).

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2, INFRA_V3};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_method_matching() {
    let (suite, gw) = Suite::same_namespace(
        29,
        "httproute-method-matching.yaml",
        "method-matching",
        true,
    )
    .await;
    let to = |method: &str, path: &str, backend: &str| {
        request(path).method(method).backend(backend, INFRA_NS)
    };
    let cases = vec![
        to("POST", "/", INFRA_V1),
        to("GET", "/", INFRA_V2),
        request("/").method("HEAD").status(404),
        to("GET", "/path1", INFRA_V1),
        to("PUT", "/", INFRA_V2).header("version", "one"),
        to("POST", "/path2", INFRA_V3).header("version", "two"),
        to("PATCH", "/path3", INFRA_V1),
        to("DELETE", "/path4", INFRA_V1).header("version", "three"),
        request("/").method("PUT").status(404),
        request("/path4").method("DELETE").status(404),
        to("PATCH", "/path5", INFRA_V1),
        to("PATCH", "/", INFRA_V2).header("version", "four"),
    ];
    suite.expect_all(&gw, cases).await;
}
