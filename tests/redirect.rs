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
