//! httproute-query-param-matching.go (Extended: QueryParamMatching).

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1, INFRA_V2, INFRA_V3};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_query_param_matching() {
    let (suite, gw) = Suite::same_namespace(
        30,
        "httproute-query-param-matching.yaml",
        "query-param-matching",
        true,
    )
    .await;
    let to = |path: &str, backend: &str| request(path).backend(backend, INFRA_NS);
    let cases = vec![
        to("/?animal=whale", INFRA_V1),
        to("/?animal=dolphin", INFRA_V2),
        to("/?animal=dolphin&color=blue", INFRA_V3),
        to("/?ANIMAL=Whale", INFRA_V3),
        to("/?animal=whale&otherparam=irrelevant", INFRA_V1),
        to("/?animal=dolphin&color=yellow", INFRA_V2),
        request("/?color=blue").status(404),
        request("/?animal=dog").status(404),
        request("/?animal=whaledolphin").status(404),
        request("/").status(404),
        to("/path1?animal=whale", INFRA_V1),
        to("/?animal=whale", INFRA_V2).header("version", "one"),
        to("/path2?animal=whale", INFRA_V3).header("version", "two"),
        to("/path3?animal=shark", INFRA_V1),
        to("/path4?animal=kraken", INFRA_V1).header("version", "three"),
        request("/?animal=shark").status(404),
        request("/path4?animal=kraken").status(404),
        to("/path5?animal=hydra", INFRA_V1),
        to("/?animal=hydra", INFRA_V3).header("version", "four"),
    ];
    suite.expect_all(&gw, cases).await;
}
