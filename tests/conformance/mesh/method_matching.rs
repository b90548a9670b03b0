//! MeshHTTPRouteMethodMatching (Extended: MeshHTTPRouteMethodMatching), modelled on the Gateway
//! test as the upstream mesh query-parameter test is on its own (two backends; the rules for a
//! third left out). In two tests, as `query_param_matching`: the requests a rule matches, and
//! those none does (404).

use super::{serving, status, ECHO, ECHO_V1, ECHO_V2, MESH_NS};
use crate::harness::roundtrip::{request, Expected};

const MANIFEST: &str = "httproute-method-matching.yaml";

fn routed() -> Vec<Expected> {
    let to = |method: &str, path: &str, backend: &str| {
        request(path).method(method).backend(backend, MESH_NS)
    };
    vec![
        to("POST", "/", ECHO_V1),
        to("GET", "/", ECHO_V2),
        to("GET", "/path1", ECHO_V1),
        to("PUT", "/", ECHO_V2).header("version", "one"),
        // ORed matches: either one alone matches.
        to("PATCH", "/path3", ECHO_V1),
        to("DELETE", "/path4", ECHO_V1).header("version", "three"),
        // Precedence: the path match wins over the method one.
        to("PATCH", "/path5", ECHO_V1),
        to("PATCH", "/", ECHO_V2),
    ]
}

fn unmatched() -> Vec<Expected> {
    vec![
        request("/").method("HEAD").status(404),
        // ANDed matches: a subset does not match.
        request("/").method("PUT").status(404),
        request("/path4").method("DELETE").status(404),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_httproute_method_matching() {
    let (suite, to) = super::start(65, &[MANIFEST], serving(&[ECHO])).await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "method-matching"), 0).await;
    suite.expect_all(&to, routed()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_httproute_method_matching_unmatched() {
    let (suite, to) = super::start(66, &[MANIFEST], serving(&[ECHO])).await;
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "method-matching"), 0).await;
    suite.expect_all(&to, unmatched()).await;
}
