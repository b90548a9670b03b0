//! weir's own, not the suite's: a Gateway HTTPS listener's Secret rotated in place (as
//! cert-manager renews it) is served from the next handshake, with no restart and no reload —
//! the SNI store swapped whole — and the old certificate is no longer presented.

use std::time::{Duration, Instant};

use crate::harness::cluster::tls_secret;
use crate::harness::roundtrip::{capture, request};
use crate::harness::{weir_config_on, Suite, WeirSpec, INFRA_NS, INFRA_V1};

const GATEWAY: &str = "same-namespace-with-https-listener";
const SECRET: &str = "tls-validity-checks-certificate";

fn certificate() -> (String, String) {
    let c = rcgen::generate_simple_self_signed(vec!["example.org".to_string()]).expect("cert");
    (c.cert.pem(), c.key_pair.serialize_pem())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_secret_is_served_from_the_next_handshake() {
    let (old_cert, old_key) = certificate();
    let mut own = crate::harness::cluster::manifests("httproute-https-listener.yaml");
    own.push(tls_secret(SECRET, &old_cert, &old_key));
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
    let suite = Suite::start_world(41, &base, &own, &weirs).await;
    let gw = suite
        .gateway_and_routes_must_be_accepted(GATEWAY, &[], &[(INFRA_NS, "httproute-https-test")])
        .await;
    let trusting = |pem: &str| {
        request("/")
            .host("example.org")
            .tls("example.org", pem.as_bytes())
            .status(200)
            .backend(INFRA_V1, INFRA_NS)
    };
    suite.expect_all(&gw, vec![trusting(&old_cert)]).await;

    let (new_cert, new_key) = certificate();
    suite.cluster.apply(tls_secret(SECRET, &new_cert, &new_key));
    let deadline = Instant::now() + Duration::from_secs(15);
    while capture(gw.clone(), &trusting(&new_cert)).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "the new certificate not served in 15 s\n{}",
            suite.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    suite.expect_all(&gw, vec![trusting(&new_cert)]).await;
    let old = capture(gw.clone(), &trusting(&old_cert)).await;
    let err = old
        .map(|_| ())
        .expect_err("the old certificate is no longer presented");
    assert!(err.contains("TLS handshake"), "{err}");
    // The same weir process throughout: no restart.
    assert!(
        suite
            .weir(GATEWAY)
            .log()
            .matches("serving on https://")
            .count()
            == 1,
        "{}",
        suite.logs()
    );
}
