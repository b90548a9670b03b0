//! Hop-by-hop fields never cross weir, in either direction; forwarding fields are added.

mod common;

use common::backend::{self, Behaviour};
use common::client::H1;
use common::weir::Weir;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hop_by_hop_headers_are_removed_both_ways_and_xff_is_appended() {
    let up = backend::start(
        "stable",
        Behaviour {
            hop_by_hop_response: true,
            ..Default::default()
        },
    )
    .await;
    let weir = Weir::start(&format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{}\"]}}\n",
        up.addr
    ));
    let mut c = H1::connect(weir.addr).await;
    let r = c
        .get(
            "/echo",
            &[
                ("connection", "keep-alive, x-client-private"),
                ("x-client-private", "drop me"),
                ("keep-alive", "timeout=10"),
                ("proxy-connection", "keep-alive"),
                ("te", "gzip"),
                ("upgrade", "h2c"),
                ("x-forwarded-for", "203.0.113.7"),
                ("x-forwarded-proto", "https"),
                ("x-end-to-end", "kept"),
            ],
        )
        .await;
    assert_eq!(r.status, 200);
    let seen = r.json();
    let headers = seen["headers"].as_object().unwrap();
    for gone in [
        "connection",
        "x-client-private",
        "keep-alive",
        "proxy-connection",
        "te",
        "upgrade",
        "transfer-encoding",
    ] {
        assert!(
            !headers.contains_key(gone),
            "{gone} reached the upstream: {headers:?}"
        );
    }
    assert_eq!(headers["x-end-to-end"][0], "kept");
    // Appended to, never replaced: the client's claim stays first, the real peer is last.
    assert_eq!(headers["x-forwarded-for"][0], "203.0.113.7, 127.0.0.1");
    assert_eq!(
        headers["x-forwarded-proto"][0], "http",
        "the client's claim is overwritten"
    );
    assert_eq!(headers["x-forwarded-host"][0], "test.local");
    assert_eq!(headers["host"][0], "test.local", "Host passes through");

    // The upstream's hop-by-hop fields do not reach the client.
    for gone in ["x-upstream-private", "keep-alive", "proxy-connection"] {
        assert!(
            !r.headers.contains_key(gone),
            "{gone} reached the client: {:?}",
            r.headers
        );
    }
    assert_ne!(
        r.headers.get("connection").map(|v| v.as_bytes()),
        Some(&b"x-upstream-private"[..])
    );
    assert_eq!(r.backend(), "stable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_match_on_host_and_longest_path_prefix() {
    let a = backend::start("api", Behaviour::default()).await;
    let b = backend::start("api-v2", Behaviour::default()).await;
    let w = backend::start("wild", Behaviour::default()).await;
    let d = backend::start("default", Behaviour::default()).await;
    let weir = Weir::start(&format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n\
         - name: api\n  match: {{hosts: [api.example.com], path_prefix: /api}}\n  stable: {{addresses: [\"{}\"]}}\n\
         - name: api-v2\n  match: {{hosts: [api.example.com], path_prefix: /api/v2}}\n  stable: {{addresses: [\"{}\"]}}\n\
         - name: wild\n  match: {{hosts: [\"*.example.com\"]}}\n  stable: {{addresses: [\"{}\"]}}\n\
         - name: default\n  stable: {{addresses: [\"{}\"]}}\n",
        a.addr, b.addr, w.addr, d.addr
    ));
    let addr = weir.addr;
    let ask = |host: &'static str, path: &'static str| async move {
        let req = http::Request::get(path)
            .header("host", host)
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        H1::connect(addr).await.send(req).await
    };
    assert_eq!(ask("api.example.com", "/api/users").await.backend(), "api");
    assert_eq!(
        ask("API.example.com:8080", "/api/v2/users").await.backend(),
        "api-v2"
    );
    assert_eq!(ask("api.example.com", "/api").await.backend(), "api");
    // A query ends the path, whichever engine reads it.
    assert_eq!(ask("api.example.com", "/api?x=1").await.backend(), "api");
    assert_eq!(
        ask("api.example.com", "/api/v2?next=/x").await.backend(),
        "api-v2"
    );
    assert_eq!(ask("api.example.com", "/api/v2x?q").await.backend(), "api");
    assert_eq!(
        ask("api.example.com", "/apix?q=/api").await.backend(),
        "wild"
    );
    // Segment-aware: /apix is not under /api; it falls to the wildcard host.
    assert_eq!(ask("api.example.com", "/apix").await.backend(), "wild");
    assert_eq!(ask("deep.sub.example.com", "/").await.backend(), "wild");
    assert_eq!(ask("example.com", "/").await.backend(), "default");
    assert_eq!(ask("other.org", "/api").await.backend(), "default");
}
