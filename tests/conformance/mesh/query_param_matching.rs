//! MeshHTTPRouteQueryParamMatching (Extended: MeshHTTPRouteQueryParamMatching). The upstream
//! cases, in two tests: those a rule matches, and those no rule matches, which upstream
//! expects to be answered 404 — a Service with routes attached is served by its routes only.

use super::{serving, status, ECHO, ECHO_V1, ECHO_V2, MESH_NS};
use crate::harness::roundtrip::{request, Expected};

const MANIFEST: &str = "httproute-query-param-matching.yaml";

fn routed() -> Vec<Expected> {
    let to = |path: &str, backend: &str| request(path).backend(backend, MESH_NS);
    vec![
        to("/?animal=whale", ECHO_V1),
        to("/?animal=dolphin", ECHO_V2),
        to("/?animal=whale&otherparam=irrelevant", ECHO_V1),
        to("/?animal=dolphin&color=yellow", ECHO_V2),
        to("/path1?animal=whale", ECHO_V1),
        to("/?animal=whale", ECHO_V2).header("version", "one"),
        // ORed matches: either one alone matches.
        to("/path3?animal=shark", ECHO_V1),
        to("/path4?animal=kraken", ECHO_V1).header("version", "three"),
        // Precedence: the path match wins over the query one.
        to("/path5?animal=hydra", ECHO_V1),
    ]
}

fn unmatched() -> Vec<Expected> {
    [
        "/?color=blue",
        "/?animal=dog",
        "/?animal=whaledolphin",
        "/",
        // ANDed matches: a subset does not match.
        "/?animal=shark",
        "/path4?animal=kraken",
    ]
    .into_iter()
    .map(|path| request(path).status(404))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_httproute_query_param_matching() {
    let (suite, to) = super::start(63, &[MANIFEST], serving(&[ECHO])).await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "query-param-matching"), 0).await;
    suite.expect_all(&to, routed()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_httproute_query_param_matching_unmatched() {
    let (suite, to) = super::start(64, &[MANIFEST], serving(&[ECHO])).await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "query-param-matching"), 0).await;
    suite.expect_all(&to, unmatched()).await;
}
