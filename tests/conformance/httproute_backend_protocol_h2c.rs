//! httproute-backend-protocol-h2c.go (Extended: SupportHTTPRouteBackendProtocolH2C): a
//! backendRef to the Service port declared `appProtocol: kubernetes.io/h2c` (infra-backend-v1's
//! 8081 -> 3001) reaches the backend; the request comes as HTTP/2 with prior knowledge. Beyond
//! the Go test, which only asks that the backend answers (its image speaks both), the echo's
//! `proto` must say weir spoke HTTP/2 to it: the appProtocol is what made it so.

use crate::harness::roundtrip::request;
use crate::harness::{Suite, INFRA_NS, INFRA_V1};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_backend_protocol_h2c() {
    let (suite, gw) = Suite::same_namespace(
        39,
        "httproute-backend-protocol-h2c.yaml",
        "backend-protocol-h2c",
        true,
    )
    .await;
    let cases = vec![request("/")
        .h2c_prior_knowledge()
        .status(200)
        .backend(INFRA_V1, INFRA_NS)
        .backend_proto("HTTP/2.0")];
    suite.expect_all(&gw, cases).await;
}
