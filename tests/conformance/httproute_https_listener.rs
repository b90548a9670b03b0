//! httproute-https-listener.go (Core): routes attached to the HTTPS listeners of the Gateway
//! `same-namespace-with-https-listener`, whose certificate is the Secret
//! `tls-validity-checks-certificate`; requests over TLS, naming each host by SNI and trusting
//! only that certificate, reach the route for their host, and a host no route has gets 404.
//!
//! The suite makes that Secret itself, at the start of a run (a self-signed certificate); so
//! does this test, for the hosts its requests name. weir's listener takes the Gateway's
//! certificates (`tls: {from_gateway: true}`), chosen by SNI from its HTTPS listeners.

use crate::harness::cluster::tls_secret;
use crate::harness::roundtrip::request;
use crate::harness::{status, weir_config_on, Suite, WeirSpec, INFRA_NS, INFRA_V1, INFRA_V2};

const GATEWAY: &str = "same-namespace-with-https-listener";
const ROUTE: &str = "httproute-https-test";
const ROUTE_NO_HOST: &str = "httproute-https-test-no-hostname";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_https_listener() {
    let certificate = rcgen::generate_simple_self_signed(
        [
            "example.org",
            "second-example.org",
            "unknown-example.org",
            "*.wildcard.org",
            "fourth-example.wildcard.org",
        ]
        .map(String::from)
        .to_vec(),
    )
    .expect("certificate");
    let cert_pem = certificate.cert.pem();
    let secret = tls_secret(
        "tls-validity-checks-certificate",
        &cert_pem,
        &certificate.key_pair.serialize_pem(),
    );
    let mut own = crate::harness::cluster::manifests("httproute-https-listener.yaml");
    own.push(secret);
    let weirs = [WeirSpec {
        label: GATEWAY.to_string(),
        namespace: INFRA_NS.to_string(),
        config: weir_config_on(
            GATEWAY,
            "{address: \"127.0.0.1:0\", tls: {from_gateway: true}}",
        ),
        gateway: true,
    }];
    let base = crate::harness::cluster::manifests("base_manifests.yaml");
    let suite = Suite::start_world(40, &base, &own, &weirs).await;
    let gw = suite
        .gateway_and_routes_must_be_accepted(
            GATEWAY,
            &[],
            &[(INFRA_NS, ROUTE), (INFRA_NS, ROUTE_NO_HOST)],
        )
        .await;
    for route in [ROUTE, ROUTE_NO_HOST] {
        status::route_must_have_resolved_refs(
            &suite.cluster,
            (INFRA_NS, route),
            (INFRA_NS, GATEWAY),
        )
        .await;
    }
    let pem = cert_pem.as_bytes();
    let cases = vec![
        request("/")
            .host("example.org")
            .tls("example.org", pem)
            .status(200)
            .backend(INFRA_V1, INFRA_NS),
        request("/")
            .host("unknown-example.org")
            .tls("unknown-example.org", pem)
            .status(404),
        request("/")
            .host("second-example.org")
            .tls("second-example.org", pem)
            .status(200)
            .backend(INFRA_V2, INFRA_NS),
    ];
    suite.expect_all(&gw, cases).await;
}
