//! A config file's redirect and rewrite routes, through the weir binary: an edge's HTTP → HTTPS
//! redirect with no backend at all, and a rewrite seen by a real loopback upstream, for HTTP/1
//! and HTTP/2 (h2c) clients.

mod common;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;

use common::backend::{self, Behaviour};
use common::client::{collect, get_text, h2c, H1};
use common::weir::Weir;

fn config(upstream: std::net::SocketAddr) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n\
         - name: to-https\n  match: {{hosts: [shop.example]}}\n  \
           redirect: {{scheme: https, status: 301}}\n\
         - name: api\n  match: {{hosts: [api.example], path_prefix: /api}}\n  \
           stable: {{addresses: [\"{upstream}\"]}}\n  \
           rewrite: {{hostname: internal.example, path: {{replace_prefix_match: /v2}}}}\n"
    )
}

fn get(host: &str, target: &str) -> Request<Full<Bytes>> {
    Request::get(target)
        .header("host", host)
        .body(Full::new(Bytes::new()))
        .expect("request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_routes_redirect_and_rewrite() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&config(up.addr));

    // HTTP/1: the edge's redirect, the query kept, no port (the client named none).
    let mut c = H1::connect(weir.addr).await;
    let r = c.send(get("shop.example", "/cart?item=3")).await;
    assert_eq!(r.status, 301);
    assert_eq!(r.headers["location"], "https://shop.example/cart?item=3");
    assert!(r.body.is_empty(), "{:?}", r.body);
    // The client's port is the request's own; https's is 443, left out.
    let r = c.send(get("shop.example:8080", "/")).await;
    assert_eq!(r.headers["location"], "https://shop.example/");

    // HTTP/1: the rewrite, as the upstream saw it.
    let r = c.send(get("api.example", "/api/users")).await;
    assert_eq!(r.status, 200);
    let seen = r.json();
    assert_eq!(seen["path"], "/v2/users");
    assert_eq!(seen["headers"]["host"][0], "internal.example");
    assert_eq!(seen["headers"]["x-forwarded-host"][0], "api.example");

    // HTTP/2 (h2c): the same two.
    let mut h2 = h2c::<Full<Bytes>>(weir.addr).await;
    let req = Request::get("http://shop.example/a/b")
        .body(Full::new(Bytes::new()))
        .expect("request");
    let r = collect(h2.send_request(req).await.expect("h2 redirect"))
        .await
        .expect("h2 redirect body");
    assert_eq!(r.status, 301);
    assert_eq!(r.headers["location"], "https://shop.example/a/b");
    let req = Request::get("http://api.example/api")
        .body(Full::new(Bytes::new()))
        .expect("request");
    let r = collect(h2.send_request(req).await.expect("h2 rewrite"))
        .await
        .expect("h2 rewrite body");
    let seen = r.json();
    assert_eq!(seen["path"], "/v2");
    assert_eq!(seen["headers"]["host"][0], "internal.example");

    // The redirect route has no backend and records nothing; the rewrite's requests are the
    // upstream's.
    let metrics = weir.metrics().await;
    let recorded: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("weir_request") && l.contains("route=\"to-https\""))
        .collect();
    assert!(
        recorded.is_empty(),
        "a redirect records nothing against a backend: {recorded:?}"
    );
    assert!(
        metrics.contains("weir_requests_total{route=\"api\""),
        "{metrics}"
    );
    assert_eq!(up.hits(), 2);

    // /routes shows both as in force.
    let (status, text) = get_text(weir.admin, "/routes").await;
    assert_eq!(status, 200);
    let routes: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let named = |name: &str| {
        routes["routes"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["name"] == name).cloned())
            .unwrap_or_else(|| panic!("{name} in {text}"))
    };
    let redirect = &named("to-https")["redirect"];
    assert_eq!(
        (redirect["scheme"].as_str(), redirect["status"].as_u64()),
        (Some("https"), Some(301))
    );
    let rewrite = &named("api")["rewrite"];
    assert_eq!(rewrite["path"]["replace_prefix_match"], "/v2");
}

/// The https-listener cases of httproute-redirect-port-and-scheme, on a TLS listener: the
/// request's scheme is https, so with no scheme given the Location keeps it and 443 is left
/// out; with `scheme: http` and no port, 80 is, and is left out too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_listener_redirects_by_the_spec_port_rules() {
    use common::tls::TestPki;
    use hyper::client::conn::{http1, http2};
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use rustls_pki_types::ServerName;
    use tokio::net::TcpStream;

    let pki = TestPki::new();
    let dir = common::temp_dir("redirect-tls");
    let (_, cert, key) = pki.write(&dir);
    let redirect = |path: &str, fields: &str| {
        format!(
            "- name: r{}\n  match: {{path_prefix: {path}}}\n  redirect: {{hostname: example.org{fields}}}\n",
            path.replace('/', "-")
        )
    };
    let yaml = format!(
        "listeners: [{{address: \"127.0.0.1:0\", tls: {{cert: \"{}\", key: \"{}\"}}}}]\n\
         admin: {{address: \"127.0.0.1:0\"}}\nroutes:\n{}{}{}{}",
        cert.display(),
        key.display(),
        redirect("/scheme-nil-and-port-nil", ""),
        redirect("/scheme-nil-and-port-8443", ", port: 8443"),
        redirect("/scheme-http-and-port-nil", ", scheme: http"),
        redirect("/scheme-http-and-port-8080", ", scheme: http, port: 8080"),
    );
    std::fs::write(dir.join("weir.yaml"), yaml).expect("config");
    let weir = Weir::start_with(dir.clone(), dir.join("weir.yaml"), &[]);
    let cases = [
        (
            "/scheme-nil-and-port-nil",
            "https://example.org/scheme-nil-and-port-nil",
        ),
        (
            "/scheme-nil-and-port-8443",
            "https://example.org:8443/scheme-nil-and-port-8443",
        ),
        (
            "/scheme-http-and-port-nil",
            "http://example.org/scheme-http-and-port-nil",
        ),
        (
            "/scheme-http-and-port-8080",
            "http://example.org:8080/scheme-http-and-port-8080",
        ),
    ];
    let tls = |alpn: &'static [u8]| {
        let connector = tokio_rustls::TlsConnector::from(pki.client_config(&[alpn]));
        let addr = weir.addr;
        async move {
            let tcp = TcpStream::connect(addr).await.expect("connect");
            let name = ServerName::try_from("localhost").expect("name");
            connector.connect(name, tcp).await.expect("TLS handshake")
        }
    };

    // HTTP/1.1 over TLS, Host as the conformance suite sends it (no port).
    let (mut h1, conn) = http1::handshake(TokioIo::new(tls(b"http/1.1").await))
        .await
        .expect("h1 handshake");
    tokio::spawn(conn);
    for (path, location) in cases {
        // Kept alive across redirects: the next request waits for the connection, not a new one.
        h1.ready().await.expect("h1 connection kept open");
        let r = collect(h1.send_request(get("example.org", path)).await.expect("h1"))
            .await
            .expect("h1 body");
        assert_eq!(r.status, 302, "{path}");
        assert_eq!(r.headers["location"], location, "{path}");
    }

    // HTTP/2 over TLS.
    let (mut h2, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(tls(b"h2").await))
        .await
        .expect("h2 handshake");
    tokio::spawn(conn);
    for (path, location) in cases {
        let req = Request::get(format!("https://example.org{path}"))
            .body(Full::new(Bytes::new()))
            .expect("request");
        let r = collect(h2.send_request(req).await.expect("h2"))
            .await
            .expect("h2 body");
        assert_eq!(r.status, 302, "{path}");
        assert_eq!(r.headers["location"], location, "{path}");
    }
}
