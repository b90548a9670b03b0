//! Mutual TLS on a listener, through the real binary: clients identified by their certificates
//! (a SPIFFE ID in the URI SAN), routes that admit only some identities (403 otherwise,
//! counted), the identity passed upstream in a header the client cannot forge, and
//! certificates refused at the handshake — expired, from another CA, revoked by a CRL, or
//! missing where one is required — each counted with its reason.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::backend::{self, Behaviour};
use common::client::collect;
use common::tls::{Issued, IssuingCa};
use common::weir::{sample as metric, Weir};
use http::Request;
use http_body_util::Empty;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;

const SHOP_CART: &str = "spiffe://prod/ns/shop/sa/cart";
const WEB_FRONTEND: &str = "spiffe://prod/ns/web/sa/frontend";

/// GET `path` over a new TLS connection presenting `config`'s certificate; Err when the
/// handshake or the request failed (with TLS 1.3 a refused client certificate shows on the
/// first read, not at connect).
async fn get(
    addr: std::net::SocketAddr,
    config: Arc<rustls::ClientConfig>,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<common::client::Response, String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let (mut h1, conn) = http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut req = Request::get(path).header("host", "localhost");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = tokio::time::timeout(
        Duration::from_secs(5),
        h1.send_request(req.body(Empty::<Bytes>::new()).unwrap()),
    )
    .await
    .map_err(|_| "timed out".to_string())?
    .map_err(|e| format!("request: {e}"))?;
    collect(resp).await.map_err(|e| e.to_string())
}

struct Setup {
    weir: Weir,
    ca: IssuingCa,
    _upstream: backend::TestBackend,
}

/// A weir whose listener requires (or, `optional`, takes) client certificates from `ca`, with a
/// CRL revoking serial 66; route `shop` (/shop) admits `spiffe://prod/ns/shop/*` and names
/// the caller in `x-client-identity`; route `open` admits anyone.
async fn setup(mode: &str) -> Setup {
    let upstream = backend::start("stable", Behaviour::default()).await;
    let ca = IssuingCa::new("mesh CA");
    let dir = common::temp_dir("mtls");
    let server = ca.server();
    std::fs::write(dir.join("cert.pem"), &server.cert_pem).unwrap();
    std::fs::write(dir.join("key.pem"), &server.key_pem).unwrap();
    std::fs::write(dir.join("ca.pem"), &ca.pem).unwrap();
    std::fs::write(dir.join("crl.pem"), ca.crl(&[66])).unwrap();
    let config = format!(
        "listeners:\n\
         - name: mesh\n\
         \x20 address: \"127.0.0.1:0\"\n\
         \x20 tls: {{cert: cert.pem, key: key.pem, client_auth: {{ca: ca.pem, mode: {mode}, crl: [crl.pem]}}}}\n\
         admin: {{address: \"127.0.0.1:0\"}}\n\
         access_log: {{path: access.log}}\n\
         routes:\n\
         - name: shop\n\
         \x20 match: {{path_prefix: /shop}}\n\
         \x20 stable: {{addresses: [\"{up}\"]}}\n\
         \x20 client_identity: {{allow: [\"spiffe://prod/ns/shop/*\"], header: X-Client-Identity}}\n\
         - name: open\n\
         \x20 stable: {{addresses: [\"{up}\"]}}\n",
        up = upstream.addr
    );
    let path = dir.join("weir.yaml");
    std::fs::write(&path, config).unwrap();
    let weir = Weir::start_with(dir, path, &[]);
    Setup {
        weir,
        ca,
        _upstream: upstream,
    }
}

fn valid(ca: &IssuingCa, uri: &str) -> Issued {
    ca.client(uri, 7, (2024, 2040))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identities_are_admitted_by_route_and_named_upstream() {
    let s = setup("require").await;
    let cart = s.ca.client_config(Some(&valid(&s.ca, SHOP_CART)));
    let frontend = s.ca.client_config(Some(&valid(&s.ca, WEB_FRONTEND)));

    // Admitted, and named upstream; what the client put in that header is gone.
    let r = get(
        s.weir.addr,
        cart.clone(),
        "/shop/basket",
        &[("x-client-identity", "spiffe://forged")],
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json()["headers"]["x-client-identity"],
        serde_json::json!([SHOP_CART])
    );

    // Another identity: refused on `shop` with a reason, served on `open`.
    let r = get(s.weir.addr, frontend.clone(), "/shop/basket", &[])
        .await
        .unwrap();
    assert_eq!(r.status, 403);
    assert!(r.text().contains("not allowed"), "{}", r.text());
    let r = get(
        s.weir.addr,
        frontend,
        "/home",
        &[("x-client-identity", "spiffe://forged")],
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json()["headers"]["x-client-identity"],
        serde_json::json!(["spiffe://forged"]),
        "a route without the rule leaves the header alone"
    );

    // The access log names the caller.
    let log = s.weir.dir.join("access.log");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut text = String::new();
    while std::time::Instant::now() < deadline && text.lines().count() < 3 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        text = std::fs::read_to_string(&log).unwrap_or_default();
    }
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{text}");
    // Lines from different workers' buffers come in no set order: found by what they say.
    let by = |identity: &str, status: u64| {
        lines
            .iter()
            .filter(|l| l["client_identity"] == identity && l["status"] == status)
            .count()
    };
    assert_eq!(by(SHOP_CART, 200), 1, "{text}");
    assert_eq!(by(WEB_FRONTEND, 403), 1, "{text}");
    assert_eq!(by(WEB_FRONTEND, 200), 1, "{text}");

    let metrics = s.weir.metrics().await;
    assert_eq!(
        metric(
            &metrics,
            "weir_identity_refusals_total",
            &[("listener", "mesh"), ("route", "shop")]
        ),
        1.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_certificates_are_refused_at_the_handshake_with_their_reason() {
    let s = setup("require").await;
    let other_ca = IssuingCa::new("someone else's CA");
    let cases: [(&str, Arc<rustls::ClientConfig>); 4] = [
        ("no_certificate", s.ca.client_config(None)),
        (
            "expired",
            s.ca.client_config(Some(&s.ca.client(SHOP_CART, 8, (2020, 2021)))),
        ),
        (
            "unknown_issuer",
            // Trusts weir's CA, presents a certificate weir's CA never issued.
            s.ca.client_config(Some(&valid(&other_ca, SHOP_CART))),
        ),
        (
            "revoked",
            s.ca.client_config(Some(&s.ca.client(SHOP_CART, 66, (2024, 2040)))),
        ),
    ];
    for (reason, config) in cases {
        let outcome = get(s.weir.addr, config, "/home", &[]).await;
        assert!(
            outcome.is_err(),
            "{reason}: served {:?}",
            outcome.map(|r| r.status)
        );
    }
    // A good one still is served, after all that.
    let r = get(
        s.weir.addr,
        s.ca.client_config(Some(&valid(&s.ca, SHOP_CART))),
        "/home",
        &[],
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);

    let metrics = s.weir.metrics().await;
    for reason in ["no_certificate", "expired", "unknown_issuer", "revoked"] {
        assert_eq!(
            metric(
                &metrics,
                "weir_tls_handshake_failures_total",
                &[("listener", "mesh"), ("reason", reason)]
            ),
            1.0,
            "{reason}:\n{}",
            metrics
                .lines()
                .filter(|l| l.contains("handshake"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    assert!(
        s.weir.log().contains("reason=revoked"),
        "a refused certificate is logged with its reason:\n{}",
        s.weir.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_client_auth_serves_the_anonymous_where_routes_allow() {
    let s = setup("optional").await;
    let anonymous = s.ca.client_config(None);
    let r = get(s.weir.addr, anonymous.clone(), "/home", &[])
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    let r = get(s.weir.addr, anonymous, "/shop/basket", &[])
        .await
        .unwrap();
    assert_eq!(r.status, 403);
    assert!(
        r.text().contains("needs a client certificate"),
        "{}",
        r.text()
    );
    // A certificate that is presented must still be good.
    let outcome = get(
        s.weir.addr,
        s.ca.client_config(Some(&s.ca.client(SHOP_CART, 9, (2020, 2021)))),
        "/home",
        &[],
    )
    .await;
    assert!(
        outcome.is_err(),
        "an expired certificate is refused even when optional"
    );
}

/// The other leg: an upstream that demands a client certificate (nginx's `ssl_verify_client
/// on`), reached with the one the backend's `tls` names; and an upstream known by its SPIFFE ID
/// (its certificate names no host) admitted by `identities`, another refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weir_presents_its_certificate_upstream_and_checks_the_upstreams_identity() {
    let ca = IssuingCa::new("mesh CA");
    let api = ca.workload("spiffe://prod/ns/api/sa/server");
    let upstream = backend::start(
        "api",
        Behaviour {
            tls: Some(ca.server_config_requiring_clients(&api)),
            ..Behaviour::default()
        },
    )
    .await;
    let dir = common::temp_dir("mtls-upstream");
    let weir_cert = ca.client("spiffe://prod/ns/edge/sa/weir", 11, (2024, 2040));
    std::fs::write(dir.join("ca.pem"), &ca.pem).unwrap();
    std::fs::write(dir.join("weir.pem"), &weir_cert.cert_pem).unwrap();
    std::fs::write(dir.join("weir-key.pem"), &weir_cert.key_pem).unwrap();
    let route = |name: &str, prefix: &str, tls: &str| {
        format!(
            "- name: {name}\n\
             \x20 match: {{path_prefix: {prefix}}}\n\
             \x20 stable: {{addresses: [\"{up}\"], tls: {tls}}}\n",
            up = upstream.addr
        )
    };
    let config = format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\n\
         admin: {{address: \"127.0.0.1:0\"}}\n\
         upstream_defaults: {{tls: {{cert: weir.pem, key: weir-key.pem}}}}\n\
         routes:\n{}{}{}",
        route(
            "admitted",
            "/admitted",
            "{ca: ca.pem, identities: [\"spiffe://prod/ns/api/*\"]}"
        ),
        route(
            "other-identity",
            "/other",
            "{ca: ca.pem, identities: [\"spiffe://prod/ns/billing/*\"]}"
        ),
        // No identities: the default certificate presented, and the host name checked, which
        // a workload certificate does not have.
        route(
            "by-name",
            "/by-name",
            "{ca: ca.pem, server_name: localhost}"
        ),
    );
    let path = dir.join("weir.yaml");
    std::fs::write(&path, config).unwrap();
    let weir = Weir::start_with(dir, path, &[]);
    let mut h1 = common::client::H1::connect(weir.addr).await;

    let r = h1.get("/admitted/x", &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.backend(), "api");
    let r = h1.get("/other/x", &[]).await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains("TLS"), "{}", r.text());
    let r = h1.get("/by-name/x", &[]).await;
    assert_eq!(
        r.status,
        502,
        "a workload certificate names no host: {}",
        r.text()
    );
    assert_eq!(upstream.hits(), 1, "only the admitted route reached it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_its_certificate_weir_cannot_reach_an_upstream_that_demands_one() {
    let ca = IssuingCa::new("mesh CA");
    let upstream = backend::start(
        "api",
        Behaviour {
            tls: Some(ca.server_config_requiring_clients(&ca.server())),
            ..Behaviour::default()
        },
    )
    .await;
    let dir = common::temp_dir("mtls-no-cert");
    std::fs::write(dir.join("ca.pem"), &ca.pem).unwrap();
    let config = format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\n\
         admin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n\
         - name: api\n\
         \x20 stable: {{addresses: [\"{}\"], tls: {{ca: ca.pem, server_name: localhost}}}}\n",
        upstream.addr
    );
    let path = dir.join("weir.yaml");
    std::fs::write(&path, config).unwrap();
    let weir = Weir::start_with(dir, path, &[]);
    let r = common::client::H1::connect(weir.addr)
        .await
        .get("/", &[])
        .await;
    assert!(r.status == 502, "{} {}", r.status, r.text());
    assert_eq!(upstream.hits(), 0);
}

/// Rotation: weir's certificate files are replaced and the config reloaded; the next requests
/// go out with the new certificate (a new pool, keyed by the files' contents), with no restart.
/// The upstream trusts only the new certificate's CA, so the 502 before and the 200 after say
/// which one weir presented.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_after_the_certificate_files_changed_presents_the_new_certificate() {
    let trusted = IssuingCa::new("mesh CA");
    let retired = IssuingCa::new("last year's CA");
    let upstream = backend::start(
        "api",
        Behaviour {
            tls: Some(trusted.server_config_requiring_clients(&trusted.server())),
            ..Behaviour::default()
        },
    )
    .await;
    let dir = common::temp_dir("mtls-rotate");
    let write_cert = |issued: &Issued| {
        std::fs::write(dir.join("weir.pem"), &issued.cert_pem).unwrap();
        std::fs::write(dir.join("weir-key.pem"), &issued.key_pem).unwrap();
    };
    std::fs::write(dir.join("ca.pem"), &trusted.pem).unwrap();
    write_cert(&retired.client("spiffe://prod/ns/edge/sa/weir", 1, (2024, 2040)));
    let config = |generation: u32| {
        format!(
            "# generation {generation}\n\
             listeners: [{{address: \"127.0.0.1:0\"}}]\n\
             admin: {{address: \"127.0.0.1:0\"}}\n\
             upstream_defaults: {{tls: {{cert: weir.pem, key: weir-key.pem}}}}\n\
             routes:\n\
             - name: api\n\
             \x20 stable: {{addresses: [\"{}\"], tls: {{ca: ca.pem, server_name: localhost}}}}\n",
            upstream.addr
        )
    };
    let path = dir.join("weir.yaml");
    std::fs::write(&path, config(1)).unwrap();
    let weir = Weir::start_with(dir.clone(), path, &[]).keep_dir();
    let mut h1 = common::client::H1::connect(weir.addr).await;
    assert_eq!(
        h1.get("/", &[]).await.status,
        502,
        "the retired CA's certificate"
    );

    write_cert(&trusted.client("spiffe://prod/ns/edge/sa/weir", 2, (2024, 2040)));
    weir.write_config(&config(2));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut status = 0;
    while std::time::Instant::now() < deadline {
        status = h1.get("/", &[]).await.status.as_u16();
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200, "after the reload:\n{}", weir.log());
    assert!(weir.log().contains("config reloaded"), "{}", weir.log());
    drop(weir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A real nginx that verifies its clients (`ssl_verify_client on`, OpenSSL), reached through
/// weir over HTTP/1.1 and over HTTP/2 (ALPN h2) with the certificate the backend names; nginx
/// says it verified it. A backend without a certificate gets nginx's own 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_nginx_that_verifies_clients_is_reached_over_http1_and_http2() {
    let ca = IssuingCa::new("mesh CA");
    let dir = common::temp_dir("mtls-nginx");
    let server = ca.server();
    let weir_cert = ca.client("spiffe://prod/ns/edge/sa/weir", 21, (2024, 2040));
    for (name, contents) in [
        ("ca.pem", &ca.pem),
        ("nginx.pem", &server.cert_pem),
        ("nginx-key.pem", &server.key_pem),
        ("weir.pem", &weir_cert.cert_pem),
        ("weir-key.pem", &weir_cert.key_pem),
    ] {
        std::fs::write(dir.join(name), contents).unwrap();
    }
    let d = dir.display();
    let nginx = common::nginx::Nginx::serving("", |addr| {
        format!(
            "listen {addr} ssl http2;\n\
             ssl_certificate {d}/nginx.pem; ssl_certificate_key {d}/nginx-key.pem;\n\
             ssl_verify_client on; ssl_client_certificate {d}/ca.pem;\n\
             location / {{ return 200 \"$ssl_client_verify $ssl_client_serial $server_protocol\\n\"; }}"
        )
    });
    let route = |name: &str, tls: &str, protocol: &str| {
        format!(
            "- name: {name}\n\
             \x20 match: {{path_prefix: /{name}}}\n\
             \x20 stable: {{addresses: [\"{}\"]{protocol}, tls: {{ca: ca.pem, server_name: localhost{tls}}}}}\n",
            nginx.addr
        )
    };
    let with_cert = ", cert: weir.pem, key: weir-key.pem";
    let config = format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\n\
         admin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n{}{}{}",
        route("h1", with_cert, ""),
        route("h2", with_cert, ", protocol: http2"),
        route("anonymous", "", ""),
    );
    let path = dir.join("weir.yaml");
    std::fs::write(&path, config).unwrap();
    let weir = Weir::start_with(dir, path, &[]);
    let mut h1 = common::client::H1::connect(weir.addr).await;
    for _ in 0..3 {
        let r = h1.get("/h1/x", &[]).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.text(), "SUCCESS 15 HTTP/1.1\n", "serial 21 is 0x15");
        let r = h1.get("/h2/x", &[]).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.text(), "SUCCESS 15 HTTP/2.0\n");
    }
    let r = h1.get("/anonymous/x", &[]).await;
    assert_eq!(r.status, 400, "nginx's refusal, passed on: {}", r.text());
    assert!(
        r.text().contains("No required SSL certificate was sent"),
        "{}",
        r.text()
    );
}

/// Rotation under load, on the listener: weir's certificate moves to a new CA, and the client
/// CA bundle goes from the old CA to both and then to the new one alone — each by a reload —
/// while clients keep making requests, on new connections and on kept-alive ones. No request
/// fails; after the first reload new connections meet the new certificate, and after the last
/// a client whose certificate the old CA issued is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_the_certificate_and_the_ca_under_load_fails_no_request() {
    use common::tls::client_config_trusting;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Mutex;

    let old = IssuingCa::new("last year's CA");
    let new = IssuingCa::new("this year's CA");
    let upstream = backend::start("stable", Behaviour::default()).await;
    let dir = common::temp_dir("mtls-rotate-listener");
    let write = |server: &Issued, cas: &[&IssuingCa]| {
        std::fs::write(dir.join("cert.pem"), &server.cert_pem).unwrap();
        std::fs::write(dir.join("key.pem"), &server.key_pem).unwrap();
        let bundle: String = cas.iter().map(|ca| ca.pem.as_str()).collect();
        std::fs::write(dir.join("ca.pem"), bundle).unwrap();
    };
    let config = |generation: u32| {
        format!(
            "# generation {generation}\n\
             listeners:\n\
             - address: \"127.0.0.1:0\"\n\
             \x20 tls: {{cert: cert.pem, key: key.pem, client_auth: {{ca: ca.pem}}}}\n\
             admin: {{address: \"127.0.0.1:0\"}}\n\
             routes:\n\
             - name: api\n\
             \x20 stable: {{addresses: [\"{}\"]}}\n",
            upstream.addr
        )
    };
    write(&old.server(), &[&old]);
    let path = dir.join("weir.yaml");
    std::fs::write(&path, config(1)).unwrap();
    let weir = Weir::start_with(dir.clone(), path, &[]).keep_dir();
    let addr = weir.addr;

    // The load: clients trust both CAs (as a trust bundle does through a rotation) and present
    // the certificate `current` holds when they connect; five requests a connection.
    let old_client = old.client("spiffe://prod/ns/web/sa/frontend", 31, (2024, 2040));
    let new_client = new.client("spiffe://prod/ns/web/sa/frontend", 32, (2024, 2040));
    let current = Arc::new(Mutex::new(client_config_trusting(
        &[&old, &new],
        Some(&old_client),
    )));
    let (ok, failed, stop) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(Mutex::new(Vec::<String>::new())),
        Arc::new(AtomicBool::new(false)),
    );
    let mut load = Vec::new();
    for _ in 0..4 {
        let (current, ok, failed, stop) =
            (current.clone(), ok.clone(), failed.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let until = std::time::Instant::now() + Duration::from_secs(60);
            while !stop.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                let config = current.lock().unwrap().clone();
                let connected = async {
                    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
                    let tls = tokio_rustls::TlsConnector::from(config)
                        .connect(ServerName::try_from("localhost").unwrap(), tcp)
                        .await
                        .map_err(|e| format!("handshake: {e}"))?;
                    let (h1, conn) = http1::handshake(TokioIo::new(tls))
                        .await
                        .map_err(|e| e.to_string())?;
                    tokio::spawn(conn);
                    Ok::<_, String>(h1)
                };
                let mut h1 = match connected.await {
                    Ok(h1) => h1,
                    Err(e) => {
                        failed.lock().unwrap().push(e);
                        continue;
                    }
                };
                for _ in 0..5 {
                    let req = Request::get("/").header("host", "localhost");
                    let sent = tokio::time::timeout(
                        Duration::from_secs(5),
                        h1.send_request(req.body(Empty::<Bytes>::new()).unwrap()),
                    )
                    .await;
                    match sent {
                        Ok(Ok(resp)) if resp.status() == 200 => {
                            ok.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(Ok(resp)) => failed.lock().unwrap().push(format!("{}", resp.status())),
                        Ok(Err(e)) => failed.lock().unwrap().push(format!("request: {e}")),
                        Err(_) => failed.lock().unwrap().push("timed out".into()),
                    }
                }
            }
        }));
    }
    let settle = || tokio::time::sleep(Duration::from_millis(700));
    settle().await;

    // 1. A new certificate from the new CA; both CAs' clients admitted.
    write(&new.server(), &[&old, &new]);
    weir.write_config(&config(2));
    let only_new = client_config_trusting(&[&new], Some(&old_client));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while get(addr, only_new.clone(), "/", &[]).await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the new certificate was not served within 10 s:\n{}",
            weir.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    settle().await;

    // 2. The clients move to certificates from the new CA.
    *current.lock().unwrap() = client_config_trusting(&[&old, &new], Some(&new_client));
    settle().await;

    // 3. The old CA is dropped from the bundle: its clients are refused from then on.
    write(&new.server(), &[&new]);
    weir.write_config(&config(3));
    let old_only = client_config_trusting(&[&new], Some(&old_client));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while get(addr, old_only.clone(), "/", &[]).await.is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the old CA's client was still admitted 10 s after the reload:\n{}",
            weir.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    settle().await;

    stop.store(true, Ordering::SeqCst);
    for task in load {
        task.await.unwrap();
    }
    let failed = failed.lock().unwrap().clone();
    let ok = ok.load(Ordering::SeqCst);
    assert!(
        failed.is_empty(),
        "{} of {} failed: {:?}",
        failed.len(),
        ok + failed.len() as u64,
        &failed[..failed.len().min(5)]
    );
    assert!(ok >= 100, "the load made only {ok} requests");
    assert_eq!(
        weir.log().matches("config reloaded").count(),
        2,
        "{}",
        weir.log()
    );
    drop(weir);
    let _ = std::fs::remove_dir_all(&dir);
}
